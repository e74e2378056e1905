#include "rib/weights/hold_down.h"

#include <algorithm>
#include <cmath>

namespace bagd::rib {

const char* HoldDownStateName(HoldDownState s) {
  switch (s) {
    case HoldDownState::kStable: return "stable";
    case HoldDownState::kPendingIncrease: return "pending-increase";
    case HoldDownState::kPendingDecrease: return "pending-decrease";
  }
  return "?";
}

double MemberHoldDown::Penalty(absl::Time now, const DampingConfig& config) const {
  if (penalty_ <= 0 || penalty_at_ == absl::InfinitePast()) return 0;
  if (config.half_life <= absl::ZeroDuration()) return 0;
  const double halves = absl::FDivDuration(std::max(now - penalty_at_, absl::ZeroDuration()), config.half_life);
  return penalty_ * std::exp2(-halves);
}

absl::Duration MemberHoldDown::IncreaseHoldDown(absl::Time now, const DampingConfig& config) const {
  // The change being judged is already counted in the penalty: the first change in a quiet
  // period (penalty about 1) is held for increase_hold_down, each further point doubles it.
  const double p = Penalty(now, config);
  const double doublings = std::clamp(p - 1.0, 0.0, 30.0);
  const absl::Duration held = config.increase_hold_down * std::exp2(doublings);
  return std::min(held, std::max(config.max_hold_down, config.increase_hold_down));
}

HoldDownOutcome MemberHoldDown::Observe(double bps, absl::Time now, const DampingConfig& config) {
  if (bps == target_) return HoldDownOutcome::kUnchanged;
  target_ = bps;
  // Within min_change_percent of what is applied: nothing to do (and a pending change back
  // to about the applied value is dropped). A change from or to 0 is never small.
  const double base = applied_;
  if (bps == base) {
    // Back to what is installed: a pending change is dropped, nothing else happens.
    const bool was_pending = state_ != HoldDownState::kStable;
    state_ = HoldDownState::kStable;
    due_ = absl::InfiniteFuture();
    return was_pending ? HoldDownOutcome::kCancelled : HoldDownOutcome::kUnchanged;
  }
  if (Settling(now, config)) {
    if (bps > base) {
      // A new path's tables coming in at its sender (a cumulative bandwidth growing while
      // the sender's own sessions come up): its first value, not a recovery. No penalty.
      applied_ = bps;
      state_ = HoldDownState::kStable;
      due_ = absl::InfiniteFuture();
      return HoldDownOutcome::kApplied;
    }
    settling_since_ = absl::InfinitePast();  // it went down: from now on a change like any other
  } else {
    settling_since_ = absl::InfinitePast();  // the window is over (a reload may not reopen it)
  }
  if (base > 0 && bps > 0 && std::abs(bps - base) * 100.0 < config.min_change_percent * base) {
    state_ = HoldDownState::kStable;
    due_ = absl::InfiniteFuture();
    return HoldDownOutcome::kSuppressed;
  }
  if (bps < applied_) {
    if (config.decrease_delay <= absl::ZeroDuration()) {
      applied_ = bps;
      state_ = HoldDownState::kStable;
      return HoldDownOutcome::kApplied;
    }
    // Overload protection: a decrease keeps the deadline of the first one, it is not pushed
    // back by further changes.
    if (state_ != HoldDownState::kPendingDecrease) {
      state_ = HoldDownState::kPendingDecrease;
      since_ = now;
      due_ = now + config.decrease_delay;
    }
    return HoldDownOutcome::kHeld;
  }
  // An increase waits for a stable period; every change restarts it. Each recovery (an
  // increase that starts a wait) is one flap cycle: it adds 1 to the penalty, so a member
  // that keeps going down and up waits longer each time; a member coming back in several
  // steps within one wait is one cycle.
  if (state_ != HoldDownState::kPendingIncrease) {
    penalty_ = Penalty(now, config) + 1.0;
    penalty_at_ = now;
  }
  state_ = HoldDownState::kPendingIncrease;
  since_ = now;
  due_ = now + IncreaseHoldDown(now, config);
  return HoldDownOutcome::kHeld;
}

bool MemberHoldDown::Expire(absl::Time now) {
  if (state_ == HoldDownState::kStable || now < due_) return false;
  return ApplyNow();
}

bool MemberHoldDown::ApplyNow() {
  if (state_ == HoldDownState::kStable) return false;
  state_ = HoldDownState::kStable;
  due_ = absl::InfiniteFuture();
  const bool changed = applied_ != target_;
  applied_ = target_;
  return changed;
}

void MemberHoldDown::Reconfigure(const DampingConfig& old_config, const DampingConfig& config) {
  if (state_ == HoldDownState::kPendingDecrease) {
    due_ = since_ + config.decrease_delay;
  } else if (state_ == HoldDownState::kPendingIncrease) {
    // The hold-down that was chosen, scaled to the new base (the penalty is unchanged).
    const absl::Duration old_hold = due_ - since_;
    const double factor = old_config.increase_hold_down > absl::ZeroDuration()
                              ? absl::FDivDuration(old_hold, old_config.increase_hold_down)
                              : 1.0;
    due_ = since_ + std::min(config.increase_hold_down * factor,
                             std::max(config.max_hold_down, config.increase_hold_down));
  }
}

}  // namespace bagd::rib
