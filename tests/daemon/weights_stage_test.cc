// The weights stage (bgpd/daemon/weights_stage.h) between a real RIB and a recording FIB, on
// a ManualClock: a full table going at a session loss is taken through the registry in
// slices as it comes (checked by how many routes the registry still has before the batch
// timer), and the routes end as one batch would leave them: every gone prefix's route
// deleted, the prefixes that keep a path on the group of what is left. The FIB still gets
// it as one update (a group and all its routes: one kernel pass), also when a hold-down
// falls due before the batch.
#include <catch2/catch.hpp>

#include <set>

#include "bgpd/daemon/weights_stage.h"
#include "tests/rib/rib_test_support.h"
#include "tests/scenario/recording_fib.h"

namespace bagd::daemon {
namespace {

using rib::test::AttrsBuilder;
using rib::test::Peer;

net::Nlri Nlri(uint32_t i) {
  const uint8_t b[4] = {10, static_cast<uint8_t>(i >> 16), static_cast<uint8_t>(i >> 8), static_cast<uint8_t>(i)};
  return net::Nlri{net::Prefix::Make(net::Afi::kIpv4, b, 32), 0};
}

rib::AttrRef WithBandwidth(rib::AttributeStore& store, uint32_t asn, const char* next_hop, double gbps) {
  AttrsBuilder b = AttrsBuilder().Path({asn}).NextHop(next_hop);
  b.a.extended_communities.push_back(wire::LinkBandwidth::FromBitsPerSecond(asn, gbps * 1e9, true).ToExtendedCommunity());
  return b.In(store);
}

// The increases here come right after the members join and are to be held: a new path's first
// increases would settle (damping.new_path_settle, docs/damping.md).
rib::WeightsConfig NoSettle() {
  rib::WeightsConfig c;
  c.damping.new_path_settle = absl::ZeroDuration();
  return c;
}

struct Rig {
  Rig() : rib(65000, rib::DecisionConfig{.maximum_paths_ebgp = 4, .as_path_multipath_relax = true}),
          stage(rib, NoSettle(), clock, &fib, nullptr) {
    p1 = rib.AddPeer(Peer("10.0.1.2", 1, 65001));
    p2 = rib.AddPeer(Peer("10.0.2.2", 2, 65002));
  }
  // Announces prefixes [from, to) from `peer`, in UPDATEs of 1000.
  void Announce(rib::PeerIndex peer, uint32_t from, uint32_t to, const rib::AttrRef& attrs) {
    std::vector<net::Nlri> nlri;
    for (uint32_t i = from; i < to; ++i) {
      nlri.push_back(Nlri(i));
      if (nlri.size() == 1000 || i + 1 == to) {
        rib.Announce(peer, nlri, attrs);
        nlri.clear();
      }
    }
    Hand();
  }
  void Hand() { stage.OnRouteChanges(rib.TakeChanges()); }
  // The session loss as the pipeline runs it: the RIB in slices, each change set handed on.
  void SessionLoss(rib::PeerIndex peer) {
    for (std::optional<net::Prefix> next; (next = rib.PeerDownFrom(peer, next, 16384));) Hand();
    Hand();
  }
  session::ManualClock clock;
  rib::AttributeStore store;
  rib::Rib rib;
  test::RecordingFib fib;  // the FIB as the stage's updates leave it
  WeightsStage stage;
  rib::PeerIndex p1 = 0, p2 = 0;
};

}  // namespace

TEST_CASE("weights stage: a full table going is taken in slices, and every route is deleted", "[daemon][weights]") {
  Rig rig;
  constexpr uint32_t kPrefixes = 150000;
  rig.Announce(rig.p1, 0, kPrefixes, WithBandwidth(rig.store, 65001, "10.0.1.2", 100));
  rig.stage.RunNow();
  REQUIRE(rig.fib.routes().size() == kPrefixes);
  REQUIRE(rig.fib.groups().size() == 1);
  rig.fib.TakeRouteOpsPerUpdate();

  rig.SessionLoss(rig.p1);
  // Before the batch timer: the registry took the gone prefixes in slices as they came
  // (at most one slice's worth is left for the batch); the FIB has heard nothing yet.
  CHECK(rig.stage.groups().route_count() < 65536);
  CHECK(rig.stage.groups().route_count() > 0);
  CHECK(rig.fib.TakeRouteOpsPerUpdate().empty());
  rig.clock.Advance(10);  // the batch timer: the rest, and one FIB update with it all
  CHECK(rig.fib.routes().empty());
  CHECK(rig.fib.groups().empty());
  CHECK(rig.stage.groups().route_count() == 0);
  CHECK(rig.stage.groups().group_count() == 0);
  const std::vector<size_t> ops = rig.fib.TakeRouteOpsPerUpdate();
  REQUIRE(ops.size() == 1);
  CHECK(ops[0] == kPrefixes);  // each route deleted once, with its group
}

TEST_CASE("weights stage: at a session loss, gone prefixes in slices and the others on what is left",
          "[daemon][weights]") {
  Rig rig;
  // 0..49999 from both neighbors (one group of two members), 50000..149999 from the first
  // only; the first goes: the shared prefixes keep the second, the others go.
  rig.Announce(rig.p1, 0, 150000, WithBandwidth(rig.store, 65001, "10.0.1.2", 100));
  rig.Announce(rig.p2, 0, 50000, WithBandwidth(rig.store, 65002, "10.0.2.2", 40));
  rig.stage.RunNow();
  REQUIRE(rig.fib.routes().size() == 150000);
  REQUIRE(rig.fib.groups().size() == 2);
  rib::GroupId shared = rig.fib.routes().at(Nlri(0).prefix);
  REQUIRE(rig.fib.groups().at(shared).size() == 2);

  rig.SessionLoss(rig.p1);
  // The 100k gone prefixes went through in slices before the timer; the shared ones wait.
  CHECK(rig.stage.groups().route_count() <= 150000 - 65536);
  CHECK(rig.stage.groups().route_count() >= 50000);
  rig.clock.Advance(10);
  CHECK(rig.fib.routes().size() == 50000);
  CHECK(rig.fib.groups().size() == 1);
  CHECK(rig.stage.groups().route_count() == 50000);
  std::set<rib::GroupId> used;
  for (const auto& [p, id] : rig.fib.routes()) used.insert(id);
  REQUIRE(used.size() == 1);
  const auto& members = rig.fib.groups().at(*used.begin());
  REQUIRE(members.size() == 1);
  CHECK(members[0].next_hop == *net::IpAddress::Parse("10.0.2.2"));
  // The shared group followed its prefixes in place (one batch would have done the same):
  // the same id, no route moved for them.
  CHECK(*used.begin() == shared);
}

TEST_CASE("weights stage: a prefix that comes back before its slice waits for the batch", "[daemon][weights]") {
  Rig rig;
  rig.Announce(rig.p1, 0, 70000, WithBandwidth(rig.store, 65001, "10.0.1.2", 100));
  rig.stage.RunNow();
  // The whole table goes in one change set except prefix 0, which is back (from the second
  // neighbor) by the time the slice runs: it is not taken as gone.
  std::vector<net::Nlri> all;
  for (uint32_t i = 0; i < 70000; ++i) all.push_back(Nlri(i));
  rig.rib.Withdraw(rig.p1, all);
  std::vector<rib::RouteChange> changes = rig.rib.TakeChanges();
  const net::Nlri back[] = {Nlri(0)};
  rig.rib.Announce(rig.p2, back, WithBandwidth(rig.store, 65002, "10.0.2.2", 40));
  const rib::GroupId before = rig.fib.routes().at(Nlri(0).prefix);
  rig.fib.TakeRouteOpsPerUpdate();
  rig.stage.OnRouteChanges(changes);
  // The slice ran: only prefix 0 is left, on the group it had, and the FIB heard nothing yet.
  CHECK(rig.stage.groups().route_count() == 1);
  CHECK(rig.fib.TakeRouteOpsPerUpdate().empty());
  CHECK(rig.fib.routes().at(Nlri(0).prefix) == before);
  // The batch takes prefix 0 from the slice's queue (its own change set is not handed on).
  rig.clock.Advance(10);
  REQUIRE(rig.fib.routes().size() == 1);
  const auto& members = rig.fib.groups().at(rig.fib.routes().begin()->second);
  REQUIRE(members.size() == 1);
  CHECK(members[0].next_hop == *net::IpAddress::Parse("10.0.2.2"));
}

TEST_CASE("weights stage: a hold-down due before the batch publishes the gone slices with it, in one update",
          "[daemon][weights]") {
  Rig rig;
  const net::Nlri other[] = {Nlri(200000)};
  rig.Announce(rig.p1, 0, 70000, WithBandwidth(rig.store, 65001, "10.0.1.2", 100));
  rig.rib.Announce(rig.p2, other, WithBandwidth(rig.store, 65002, "10.0.2.2", 40));
  rig.Hand();
  rig.stage.RunNow();
  // The other prefix's bandwidth goes up: an increase, held down (30 s by default).
  rig.rib.Announce(rig.p2, other, WithBandwidth(rig.store, 65002, "10.0.2.2", 80));
  rig.Hand();
  rig.clock.Advance(10);
  const std::optional<int64_t> due = rig.clock.NextDueMs();
  REQUIRE(due.has_value());
  rig.clock.Advance(*due - rig.clock.SteadyMs() - 1);  // 1 ms before the hold-down ends
  rig.fib.TakeRouteOpsPerUpdate();
  // The first neighbor goes: a slice goes through the registry, the batch waits 2 ms, and the
  // hold-down falls due first.
  rig.SessionLoss(rig.p1);
  REQUIRE(rig.stage.groups().route_count() < 70000);
  rig.clock.Advance(1);
  const std::vector<size_t> ops = rig.fib.TakeRouteOpsPerUpdate();
  REQUIRE_FALSE(ops.empty());
  CHECK(ops[0] == 70000);  // every delete in one update, with the group
  rig.clock.Advance(10);
  REQUIRE(rig.fib.routes().size() == 1);
  const auto& members = rig.fib.groups().at(rig.fib.routes().begin()->second);
  REQUIRE(members.size() == 1);
  CHECK(members[0].next_hop == *net::IpAddress::Parse("10.0.2.2"));
}

}  // namespace bagd::daemon
