// The local capacity damper (bgpd/daemon/local_capacity.h) on a ManualClock: the same rules
// as a group member's bandwidth: a drop applies at once, a recovery after the increase
// hold-down of stability, a change below min_change_percent never; a flapping LAG waits
// longer each time. No sleeps: time is advanced by hand.
#include <catch2/catch.hpp>

#include <vector>

#include "bgpd/daemon/local_capacity.h"
#include "bgpd/session/clock.h"

namespace bagd::daemon {
namespace {

struct Applied {
  int16_t index;
  double bps;
  int64_t at_ms;
  bool operator==(const Applied&) const = default;
};

TEST_CASE("local capacity: a drop at once, a recovery after the hold-down", "[daemon][local-capacity]") {
  session::ManualClock clock;
  std::vector<Applied> seen;
  LocalCapacity lc(clock, [&](int16_t i, double bps) { seen.push_back({i, bps, clock.SteadyMs()}); });
  CHECK(lc.Add("lag1") == 0);
  CHECK(lc.Add("lag2") == 1);
  CHECK(lc.Add("lag1") == 0);
  rib::DampingConfig d;  // 30 s hold-down, 5 %
  CHECK(lc.IndexOf("lag2") == 1);
  CHECK(lc.IndexOf("nope") == -1);
  CHECK_FALSE(lc.Applied(0));

  // The first value is applied at once.
  CHECK(lc.Observe("lag1", 8e11, d) == rib::HoldDownOutcome::kApplied);
  REQUIRE(seen == std::vector<Applied>{{0, 8e11, 0}});
  CHECK(lc.Observe("lag3", 1e11, d) == rib::HoldDownOutcome::kApplied);  // a new source: added
  CHECK(lc.IndexOf("lag3") == 2);
  seen.pop_back();

  clock.Advance(1000);
  CHECK(lc.Observe("lag1", 6e11, d) == rib::HoldDownOutcome::kApplied);  // a member down
  CHECK(seen.back() == Applied{0, 6e11, 1000});
  CHECK(*lc.Applied(0) == 6e11);

  clock.Advance(1000);
  CHECK(lc.Observe("lag1", 8e11, d) == rib::HoldDownOutcome::kHeld);  // back: held
  CHECK(*lc.Applied(0) == 6e11);
  CHECK(*lc.Observed(0) == 8e11);
  clock.Advance(29'999);
  CHECK(seen.size() == 2);
  clock.Advance(1);
  CHECK(seen.back() == Applied{0, 8e11, 32'000});

  SECTION("a change below min_change_percent is never applied") {
    CHECK(lc.Observe("lag1", 7.8e11, d) == rib::HoldDownOutcome::kSuppressed);
    clock.Advance(60'000);
    CHECK(seen.size() == 3);
    CHECK(*lc.Applied(0) == 8e11);
  }
  SECTION("a flap during the hold-down restarts it; a second cycle waits longer") {
    CHECK(lc.Observe("lag1", 6e11, d) == rib::HoldDownOutcome::kApplied);
    CHECK(lc.Observe("lag1", 8e11, d) == rib::HoldDownOutcome::kHeld);
    clock.Advance(30'000);
    CHECK(*lc.Applied(0) == 6e11);  // penalty ~2: the hold-down doubled
    clock.Advance(30'000);
    CHECK(*lc.Applied(0) == 8e11);
  }
  SECTION("indexes are stable: adding a source keeps the others' state") {
    CHECK(lc.Add("lag0") == 3);
    CHECK(*lc.Applied(0) == 8e11);
    CHECK_FALSE(lc.Applied(3));
  }
  SECTION("a reload with a shorter hold-down times a pending recovery by it") {
    CHECK(lc.Observe("lag1", 6e11, d) == rib::HoldDownOutcome::kApplied);
    clock.Advance(100'000'000);  // the penalty decays
    CHECK(lc.Observe("lag1", 8e11, d) == rib::HoldDownOutcome::kHeld);
    rib::DampingConfig shorter = d;
    shorter.increase_hold_down = absl::Seconds(3);
    lc.Reconfigure(d, shorter);
    clock.Advance(3000);
    CHECK(*lc.Applied(0) == 8e11);
  }
}

}  // namespace
}  // namespace bagd::daemon
