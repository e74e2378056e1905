// Hold-down damping of one next-hop-group member's bandwidth (docs/damping.md).
//
// A member's capacity going down is applied after `decrease_delay` (default 0: shed load at
// once); going up is applied only after `increase_hold_down` without a further change; a
// change smaller than `min_change_percent` of the applied value is not applied at all. Each
// recovery (an increase that starts a wait) adds 1 to a penalty that halves every
// `half_life`; the increase hold-down doubles for every penalty point above 1, up to
// `max_hold_down`. So one link that keeps flapping keeps its lower weight longer and longer,
// instead of rippling churn through the domain.
//
// A new path settles first: for `new_path_settle` after it joins, a member follows what it
// advertises upward at once, as long as it has not gone down since it joined. Its first
// values are then the sender's own tables coming in (the cumulative bandwidth of a BAG router
// whose sessions are still coming up grows in steps), not capacity coming back; the first
// decrease ends the settling, so a path that flaps while it settles is damped as any other.
//
// This is not RFC 2439 route-flap damping: it never suppresses a path, it only decides
// which bandwidth the weights are computed from. Pure: time is an argument.
#pragma once

#include <cstdint>

#include "absl/time/time.h"

namespace bagd::rib {

struct DampingConfig {
  absl::Duration decrease_delay = absl::ZeroDuration();
  absl::Duration increase_hold_down = absl::Seconds(30);
  double min_change_percent = 5;
  absl::Duration max_hold_down = absl::Seconds(600);
  absl::Duration half_life = absl::Seconds(300);
  // How long a new member's increases apply at once (0: never; docs/damping.md, "A new
  // path settles").
  absl::Duration new_path_settle = absl::Seconds(10);
};

enum class HoldDownState : uint8_t {
  kStable,           // applied == what the member advertises (or within min_change_percent)
  kPendingIncrease,  // a larger bandwidth waits for `due`
  kPendingDecrease,  // a smaller bandwidth waits for `due` (decrease_delay > 0)
};
const char* HoldDownStateName(HoldDownState s);  // "stable", "pending-increase", ...

// What one new bandwidth value did.
enum class HoldDownOutcome : uint8_t {
  kUnchanged,   // same value as before
  kApplied,     // in effect now
  kHeld,        // waits (pending increase or decrease)
  kSuppressed,  // smaller than min_change_percent: never applied
  kCancelled,   // back to the applied value: the pending change is dropped
};

class MemberHoldDown {
 public:
  MemberHoldDown() = default;
  // A member that joins a group is used at once with its bandwidth. `settling_since`: when
  // it joined, if it may settle (its increases apply at once for new_path_settle after
  // that); InfinitePast: it may not (its next hop flapped, or it is not new).
  explicit MemberHoldDown(double bps, absl::Time settling_since = absl::InfinitePast())
      : applied_(bps), target_(bps), settling_since_(settling_since) {}

  // The member now advertises `bps` (>= 0).
  HoldDownOutcome Observe(double bps, absl::Time now, const DampingConfig& config);
  // Applies a pending change whose time has come; true if `applied()` changed.
  bool Expire(absl::Time now);
  // Applies the pending change at once (no live member may be kept out of its group).
  bool ApplyNow();
  // A reload: a pending change keeps its start but is timed by the new config.
  void Reconfigure(const DampingConfig& old_config, const DampingConfig& config);

  double applied() const { return applied_; }
  double target() const { return target_; }
  HoldDownState state() const { return state_; }
  absl::Time due() const { return due_; }  // meaningful when pending
  double Penalty(absl::Time now, const DampingConfig& config) const;
  // How long an increase observed now would be held.
  absl::Duration IncreaseHoldDown(absl::Time now, const DampingConfig& config) const;
  // Whether an increase observed now would apply at once: the member is new and has not gone
  // down since it joined (docs/damping.md, "A new path settles").
  bool Settling(absl::Time now, const DampingConfig& config) const {
    return settling_since_ != absl::InfinitePast() && now - settling_since_ < config.new_path_settle;
  }
  absl::Time settling_since() const { return settling_since_; }
  // A change of unit (weighed at the LAG's capacity before, at its own value now): the
  // member starts at `bps` and keeps its settling.
  void Restart(double bps) { *this = MemberHoldDown(bps, settling_since_); }

 private:
  double applied_ = 0;
  double target_ = 0;
  HoldDownState state_ = HoldDownState::kStable;
  absl::Time since_ = absl::InfinitePast();  // when the pending change was observed
  absl::Time due_ = absl::InfiniteFuture();
  double penalty_ = 0;
  absl::Time penalty_at_ = absl::InfinitePast();
  // When the member joined, while it may settle; InfinitePast once it went down (or never).
  absl::Time settling_since_ = absl::InfinitePast();
};

}  // namespace bagd::rib
