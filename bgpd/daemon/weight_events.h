// WeightsEvent for WatchEvents (control.proto): what each FIB update did to the next-hop
// groups' weights, and why. The weights stage hands every FibUpdate it gives the FIB to
// Report() with what it was doing (a batch of route changes, a hold-down expiry, a reload);
// the reporter compares each group upserted with what it last saw of that group (its
// members' weights and bandwidths) to name the cause: a member left or joined, a member's
// link bandwidth changed, a held change came due, the budget moved weights.
//
// Keeps one small entry per group in the FIB (next hops, weights, bandwidths). On the io
// thread; pure but for the sink.
#pragma once

#include <cstdint>

#include "absl/container/flat_hash_map.h"
#include "bgpd/control/event_hub.h"
#include "rib/fib_update.h"
#include "rib/weights/nexthop_group_registry.h"

namespace bagd::daemon {

class WeightEventReporter {
 public:
  // What the weights stage was doing when it produced the update.
  // kLocalCapacity: the applied capacity of one of our own LAGs (local_capacity_source) changed.
  enum class Context { kRouteChanges, kHoldDownExpiry, kEarlyCheck, kReload, kLocalCapacity };

  explicit WeightEventReporter(control::EventSink* sink) : sink_(sink) {}

  void Report(const rib::FibUpdate& update, const rib::NextHopGroupRegistry& groups, Context context,
              int64_t now_unix_ms);

 private:
  struct Member {
    net::IpAddress next_hop;
    uint32_t weight = 0;
    double bps = 0;
    double applied_bps = 0;
  };
  control::EventSink* sink_;
  absl::flat_hash_map<rib::GroupId, std::vector<Member>> last_;  // by group, members by next hop
};

}  // namespace bagd::daemon
