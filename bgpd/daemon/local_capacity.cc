#include "bgpd/daemon/local_capacity.h"

#include <algorithm>

namespace bagd::daemon {

LocalCapacity::LocalCapacity(session::Clock& clock, AppliedFn applied)
    : clock_(clock), applied_(std::move(applied)), timer_(clock.NewTimer()) {}

int16_t LocalCapacity::Add(const std::string& name) {
  if (const int16_t i = IndexOf(name); i >= 0) return i;
  names_.push_back(name);
  sources_.emplace_back();
  return static_cast<int16_t>(names_.size() - 1);
}

int16_t LocalCapacity::IndexOf(const std::string& name) const {
  auto it = std::find(names_.begin(), names_.end(), name);
  return it == names_.end() ? int16_t{-1} : static_cast<int16_t>(it - names_.begin());
}

rib::HoldDownOutcome LocalCapacity::Observe(const std::string& name, double bps, const rib::DampingConfig& damping) {
  const int16_t index = Add(name);
  Source& s = sources_[index];
  if (!s.known) {
    s.known = true;
    s.hold = rib::MemberHoldDown(bps);
    applied_(index, bps);
    return rib::HoldDownOutcome::kApplied;
  }
  const double before = s.hold.applied();
  const rib::HoldDownOutcome o = s.hold.Observe(bps, Now(), damping);
  if (s.hold.applied() != before) applied_(index, s.hold.applied());
  Arm();
  return o;
}

std::optional<double> LocalCapacity::Applied(int16_t index) const {
  if (index < 0 || static_cast<size_t>(index) >= sources_.size() || !sources_[index].known) return std::nullopt;
  return sources_[index].hold.applied();
}

std::optional<double> LocalCapacity::Observed(int16_t index) const {
  if (index < 0 || static_cast<size_t>(index) >= sources_.size() || !sources_[index].known) return std::nullopt;
  return sources_[index].hold.target();
}

void LocalCapacity::Reconfigure(const rib::DampingConfig& old_damping, const rib::DampingConfig& damping) {
  for (Source& s : sources_) s.hold.Reconfigure(old_damping, damping);
  Expire();
}

void LocalCapacity::Expire() {
  const absl::Time now = Now();
  for (size_t i = 0; i < sources_.size(); ++i) {
    if (sources_[i].known && sources_[i].hold.Expire(now)) applied_(static_cast<int16_t>(i), sources_[i].hold.applied());
  }
  Arm();
}

void LocalCapacity::Arm() {
  std::optional<absl::Time> due;
  for (const Source& s : sources_) {
    if (s.known && s.hold.state() != rib::HoldDownState::kStable && (!due || s.hold.due() < *due)) due = s.hold.due();
  }
  if (!due) {
    timer_->Stop();
    return;
  }
  // Rounded up to the clock's millisecond: never before the due time (as the weights stage).
  const absl::Duration wait = std::max(*due - Now(), absl::ZeroDuration());
  timer_->Start(absl::ToChronoMilliseconds(absl::Ceil(wait, absl::Milliseconds(1))), [this] { Expire(); });
}

}  // namespace bagd::daemon
