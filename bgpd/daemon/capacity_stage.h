// Live capacity (docs/capacity.md): watches the member interfaces of each configured capacity
// source, sums the speeds of those that are up, and feeds the result, damped like a group
// member's bandwidth (a decrease at once, an increase after the hold-down), into the link
// bandwidth of the prefixes bagd originates for that source. This is how a degraded LAG
// becomes a smaller weight upstream. Runs on the io_context thread.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <map>
#include <memory>

#include "absl/status/statusor.h"
#include "conf/bagd.pb.h"
#include "fib_sync/capacity.h"
#include "fib_sync/link_watcher.h"
#include "rib/weights/hold_down.h"
#include "rib/weights/nexthop_group_registry.h"

namespace bagd::daemon {

absl::StatusOr<std::vector<fib::CapacitySourceSpec>> CapacitySources(const config::v1::Config& config);

// What the capacity stage feeds: the Speaker, which hands both on to the pipeline.
class CapacityInput {
 public:
  virtual ~CapacityInput() = default;
  // The damping in force (reloadable): the stage's own hold-down follows it.
  virtual const rib::DampingConfig& damping() const = 0;
  // A source's live capacity (bits/s up) as a weight input, damped by the receiver.
  virtual rib::HoldDownOutcome ObserveLocalCapacity(const std::string& source, double bps) = 0;
  // A source's capacity after the stage's hold-down: the link bandwidth of the networks
  // originated for it.
  virtual void SetOriginatedBandwidth(const std::string& source, double bps) = 0;
};

class CapacityStage {
 public:
  CapacityStage(boost::asio::io_context& io, CapacityInput& input, std::vector<fib::CapacitySourceSpec> sources);
  ~CapacityStage();
  // Reads every link and sets the starting capacities (no hold-down: nothing was advertised yet).
  absl::Status Start();

  // Micro-BFD (RFC 7130, docs/bfd.md), from the BFD stage on this thread: which members of
  // `source` run a session (empty: none), and each session's liveness as it changes. A member
  // whose session failed counts as down, as if its carrier were: the capacity drops at once,
  // and its return goes through the hold-down as any increase does.
  void SetMicroBfd(const std::string& source, const std::vector<std::string>& members, bool require_up);
  void SetMemberLiveness(const std::string& source, const std::string& member, fib::BfdLiveness liveness);
  fib::BfdLiveness MemberLiveness(const std::string& source, const std::string& member) const {
    return tracker_.Liveness(source, member);
  }
  // Whether `member` counts in `source`'s capacity now (before the hold-down).
  bool MemberCounted(const std::string& source, const std::string& member) const;

 private:
  void OnLink(const fib::LinkState& link, bool deleted);
  void WaitLinks();
  void Observe(const std::string& source);
  void Arm();
  void Publish(const std::string& source);

  boost::asio::io_context& io_;
  CapacityInput& input_;
  fib::CapacityTracker tracker_;
  std::unique_ptr<fib::LinkWatcher> watcher_;
  std::unique_ptr<boost::asio::posix::stream_descriptor> events_;
  boost::asio::steady_timer timer_;
  std::map<std::string, rib::MemberHoldDown> hold_;
  bool started_ = false;
};

}  // namespace bagd::daemon
