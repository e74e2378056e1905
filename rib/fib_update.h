// What the routing core asks of the FIB: next-hop groups with integer weights, and routes
// that point at a group. The FIB sync stage (fib_sync/) applies it make-before-break: group
// upserts, route upserts, route deletes, then group deletes, in this order.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "net/ip_prefix.h"

namespace bagd::rib {

using GroupId = uint32_t;

struct FibGroupMember {
  net::IpAddress next_hop;
  uint32_t weight = 1;
  friend bool operator==(const FibGroupMember&, const FibGroupMember&) = default;
};

struct FibGroup {
  GroupId id = 0;
  std::vector<FibGroupMember> members;  // sorted by next hop; weights divided by their GCD
  friend bool operator==(const FibGroup&, const FibGroup&) = default;
};

struct FibUpdate {
  std::vector<FibGroup> group_upserts;  // new groups, or new weights/members under the same id
  std::vector<std::pair<net::Prefix, GroupId>> route_upserts;
  std::vector<net::Prefix> route_deletes;
  std::vector<GroupId> group_deletes;  // no route uses them any more
  bool empty() const {
    return group_upserts.empty() && route_upserts.empty() && route_deletes.empty() && group_deletes.empty();
  }
  size_t operations() const {
    return group_upserts.size() + route_upserts.size() + route_deletes.size() + group_deletes.size();
  }
};

// What a FIB that counts its groups did with its cap (fib_sync/reconciler.h), for bagctl.
struct FibGroupCap {
  uint32_t limit = 0;            // the cap (0: none)
  uint64_t groups = 0;           // groups the FIB holds now
  uint64_t refused_total = 0;    // group creates refused for want of room, since start
  uint64_t refused_now = 0;      // groups waiting for room now
  uint64_t waiting_routes = 0;   // routes waiting for them (on their old group, or not installed)
  uint64_t rebound_total = 0;    // groups written in place into the object their routes left
};

// What the FIB sync repaired that others changed, and the conflicts it leaves alone
// (fib_sync/reconciler.h, docs/fib.md "Repair and audit"), for bagctl.
struct FibRepairStatus {
  uint64_t repairs[3][3] = {};  // [route, group, nexthop][deleted, changed, audit]
  uint64_t held_now = 0;        // repairs waiting for the backoff of an object changed again and again
  uint64_t held_total = 0;
  uint64_t audits = 0;
  uint64_t stale_answers = 0;   // answers to an operation that was not its object's latest
  uint64_t conflicts_total = 0;
  std::vector<net::Prefix> conflicts;  // held by another protocol's route now (at most 100)
  uint64_t conflicts_now = 0;
  uint32_t audit_interval_s = 0;  // 0: no periodic audit
};

// The contract between the next-hop-group registry (through the daemon's weights stage) and
// fib_sync/: each FibUpdate in order, applied make-before-break (above). The daemon's FIB
// stage implements it; tests record it.
class FibSink {
 public:
  virtual ~FibSink() = default;
  virtual void Apply(const FibUpdate& update) = 0;
  // Which backend object a group is, for bagctl (none: not written yet, or no backend ids).
  virtual std::optional<uint32_t> ObjectOf(GroupId) const { return std::nullopt; }
  // Every neighbor's initial table is in (End-of-RIB, docs/fib.md): a sink that holds writes
  // after a restart may write and sweep now. Called once.
  virtual void InitialTablesIn() {}
  // The most groups the FIB may hold (the group budget's effective fib.max_groups; 0: none),
  // at start and at every reload: a FIB that counts its groups enforces it too.
  virtual void SetGroupLimit(uint32_t /*max_groups*/) {}
  // What that cap did; none when the sink does not count.
  virtual std::optional<FibGroupCap> GroupCap() const { return std::nullopt; }
  // What the FIB sync repaired and the conflicts it leaves alone; none without a backend.
  virtual std::optional<FibRepairStatus> RepairStatus() const { return std::nullopt; }
};

}  // namespace bagd::rib
