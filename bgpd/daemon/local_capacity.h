// Local capacity as a weight input (docs/capacity.md, "Local capacity"): the live capacity
// of our own LAGs (capacity sources), damped per source with the same hold-down as a
// next-hop-group member's bandwidth (a drop at once, a recovery after
// damping.increase_hold_down of stability, a change below min_change_percent never), then
// handed to whoever caps with it: the weights stage (member bandwidth = min(advertised,
// local)) and the advertiser (cumulative link bandwidth from the capped values).
//
// Message-driven and time-injected: raw capacity observations in (from the capacity stage,
// or a scenario file), applied values out through the callback; the hold-down runs on the
// injected Clock, so tests advance a ManualClock instead of sleeping.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bgpd/session/clock.h"
#include "rib/weights/hold_down.h"

namespace bagd::daemon {

class LocalCapacity {
 public:
  // `index` (see Add) now has `bps` applied.
  using AppliedFn = std::function<void(int16_t index, double bps)>;
  LocalCapacity(session::Clock& clock, AppliedFn applied);

  // The index of `name`, added if new. Indexes never change: a neighbor moved to another
  // source by a reload, or back, finds its value and damping state where they were.
  int16_t Add(const std::string& name);
  // The index of `name`, or -1.
  int16_t IndexOf(const std::string& name) const;
  const std::vector<std::string>& names() const { return names_; }

  // The source now has `bps` up (the sum of its members' speeds). The first value of a
  // source is applied at once (nothing was weighed with it yet). A new name is added.
  rib::HoldDownOutcome Observe(const std::string& name, double bps, const rib::DampingConfig& damping);
  // The applied (damped) capacity of a source; nullopt before its first observation.
  std::optional<double> Applied(int16_t index) const;
  // The last raw value observed, for display.
  std::optional<double> Observed(int16_t index) const;
  // A reload's new damping: pending recoveries are timed by it.
  void Reconfigure(const rib::DampingConfig& old_damping, const rib::DampingConfig& damping);

 private:
  struct Source {
    rib::MemberHoldDown hold;
    bool known = false;
  };
  void Arm();
  void Expire();
  absl::Time Now() const { return absl::FromUnixMillis(clock_.WallMs()); }

  session::Clock& clock_;
  AppliedFn applied_;
  std::vector<std::string> names_;
  std::vector<Source> sources_;  // parallel to names_
  std::unique_ptr<session::Timer> timer_;
};

}  // namespace bagd::daemon
