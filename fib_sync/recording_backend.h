// A FIB backend that only remembers: the state it would hold and every operation, checked
// for make-before-break order (a route's group exists, a group's next hops exist, nothing
// in use is deleted). Used by tests and by `bagd --dry-run`. Failures can be injected.
#pragma once

#include <functional>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "fib_sync/fib_backend.h"

namespace bagd::fib {

class RecordingBackend : public FibBackend {
 public:
  FibCapabilities Capabilities() const override { return caps_; }
  std::vector<absl::Status> Apply(std::span<const FibOp> ops) override;
  absl::StatusOr<FibState> Dump() override { return state_; }

  void set_capabilities(const FibCapabilities& c) { caps_ = c; }
  // As a switch whose group table is full: a group create past `caps.max_groups` fails
  // (RESOURCE_EXHAUSTED). The most groups held after any one operation is kept.
  size_t peak_groups() const { return peak_groups_; }
  // Called after every operation that succeeded (tests assert on the state at each step).
  void set_after_each(std::function<void(const FibOp&, const FibState&)> f) { after_each_ = std::move(f); }
  // Return a status other than OK to make an operation fail.
  void set_fault(std::function<absl::Status(const FibOp&)> fault) { fault_ = std::move(fault); }
  // As the kernel on link loss: the next hop goes, and out of every group.
  void DeleteNexthopBehindOurBack(ObjectId id);
  const FibState& state() const { return state_; }
  FibState& mutable_state() { return state_; }
  // As another protocol's route (an operator's `ip route replace`): it takes `prefix` from
  // bagd's route. An exclusive create there fails (ALREADY_EXISTS); a replace overwrites it,
  // which bagd must never do (counted in foreign_overwritten()).
  void HoldByOtherProtocol(const net::Prefix& prefix);
  void ReleaseOtherProtocol(const net::Prefix& prefix) { foreign_routes_.erase(prefix); }
  size_t foreign_overwritten() const { return foreign_overwritten_; }
  const std::vector<FibOp>& log() const { return log_; }
  void ClearLog() { log_.clear(); }

 private:
  absl::Status ApplyOne(const FibOp& op);
  FibCapabilities caps_;
  FibState state_;
  std::vector<FibOp> log_;
  std::function<absl::Status(const FibOp&)> fault_;
  std::function<void(const FibOp&, const FibState&)> after_each_;
  size_t peak_groups_ = 0;
  absl::flat_hash_set<net::Prefix> foreign_routes_;
  size_t foreign_overwritten_ = 0;
};

}  // namespace bagd::fib
