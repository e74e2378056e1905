// The local capacity damper (bgpd/daemon/local_capacity.h) on a ManualClock: the same rules
// as a group member's bandwidth: a drop applies at once, a recovery after the increase
// hold-down of stability, a change below min_change_percent never; a flapping LAG waits
// longer each time. No sleeps: time is advanced by hand.
#include <catch2/catch.hpp>

#include <vector>

#include "bgpd/daemon/bfd_stage.h"
#include "bgpd/daemon/local_capacity.h"
#include "conf/config_loader.h"
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

namespace bagd::daemon {
namespace {

// Micro-BFD (RFC 7130): what a member session's transition makes of the member (pure), and
// the sessions a config asks for: one per member, the LAG-level addresses, the profile's timers.
TEST_CASE("micro-BFD: a member's liveness after each transition", "[daemon][micro_bfd]") {
  using fib::BfdLiveness;
  using bfd::State;
  auto t = [](State from, State to, bool remote_admin_down = false) {
    bfd::Transition x;
    x.from = from;
    x.to = to;
    x.remote_admin_down = remote_admin_down;
    return x;
  };
  CHECK(NextLiveness(BfdLiveness::kUnknown, t(State::kDown, State::kInit)) == BfdLiveness::kUnknown);
  CHECK(NextLiveness(BfdLiveness::kUnknown, t(State::kInit, State::kUp)) == BfdLiveness::kUp);
  CHECK(NextLiveness(BfdLiveness::kUnknown, t(State::kDown, State::kUp)) == BfdLiveness::kUp);
  // Init -> Down (it never came Up): nothing learnt.
  CHECK(NextLiveness(BfdLiveness::kUnknown, t(State::kInit, State::kDown)) == BfdLiveness::kUnknown);
  CHECK(NextLiveness(BfdLiveness::kFailed, t(State::kInit, State::kDown)) == BfdLiveness::kFailed);
  // Up -> Down: a failure, unless the far end said AdminDown (RFC 5882 §3.2).
  CHECK(NextLiveness(BfdLiveness::kUp, t(State::kUp, State::kDown)) == BfdLiveness::kFailed);
  CHECK(NextLiveness(BfdLiveness::kUp, t(State::kUp, State::kDown, true)) == BfdLiveness::kAdminDown);
  CHECK(NextLiveness(BfdLiveness::kAdminDown, t(State::kDown, State::kInit)) == BfdLiveness::kAdminDown);
  // Our own AdminDown (the session removed): not the far end's doing.
  CHECK(NextLiveness(BfdLiveness::kUp, t(State::kUp, State::kAdminDown)) == BfdLiveness::kUp);
  CHECK(NextLiveness(BfdLiveness::kFailed, t(State::kDown, State::kUp)) == BfdLiveness::kUp);
}

TEST_CASE("micro-BFD: one session per member from the capacity source", "[daemon][micro_bfd]") {
  auto loaded = conf::ParseConfig(R"(router { asn: 65000 router_id: "10.255.0.1" ebgp_requires_policy: false }
bfd_profiles { name: "fast" min_tx: 50 min_rx: 50 multiplier: 4 }
capacity_sources { name: "lag1" members: ["eth1", "eth2"]
  micro_bfd { local_address: "10.9.0.1" neighbor_address: "10.9.0.2" profile: "fast" min_rx: 100 } }
capacity_sources { name: "lag2" members: ["eth3"] }
neighbors { address: "10.9.0.2" remote_as: 65002 bfd {} }
)",
                                  "t.textproto");
  REQUIRE(loaded.ok());
  const auto specs = MicroBfdSessionSpecs(loaded.config);
  REQUIRE(specs.size() == 2);
  for (size_t i = 0; i < 2; ++i) {
    CHECK(specs[i].peer.ToString() == "10.9.0.2");
    REQUIRE(specs[i].local);
    CHECK(specs[i].local->ToString() == "10.9.0.1");
    CHECK(specs[i].capacity_source == "lag1");
    CHECK(specs[i].transport() == bfd::Transport::kMicro);
    CHECK_FALSE(specs[i].multihop);
    CHECK(specs[i].config.desired_min_tx_us == 50'000);
    CHECK(specs[i].config.required_min_rx_us == 100'000);
    CHECK(specs[i].config.detect_mult == 4);
  }
  CHECK(specs[0].interface == "eth1");
  CHECK(specs[1].interface == "eth2");
  // The neighbor's own BFD session to the same address is a different one.
  const auto bgp = BfdSessionSpecs(loaded.config);
  REQUIRE(bgp.size() == 1);
  CHECK(bgp[0].transport() == bfd::Transport::kSingleHop);
}

}  // namespace
}  // namespace bagd::daemon
