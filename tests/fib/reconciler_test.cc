// The FIB reconciler against the recording backend: make-before-break order, one group
// operation per reweight, retries, adoption after a restart (no churn), sweep, link loss.
#include <catch2/catch.hpp>
#include <algorithm>

#include "fib_sync/reconciler.h"
#include "fib_sync/recording_backend.h"
#include "tests/fib/reconciler_test_support.h"

namespace bagd::fib {
namespace {

using testing::A;
using testing::Group;
using testing::P;

TEST_CASE("install in make-before-break order", "[fib][reconciler]") {
  RecordingBackend b;
  Reconciler r(b);
  REQUIRE(r.Start().ok());
  r.Update(Group(1, {{"10.0.0.1", 1}, {"10.0.0.2", 3}}, {"10.1.0.0/24", "10.2.0.0/24"}));
  const FlushResult f = r.Flush();
  CHECK(f.failed == 0);
  CHECK(f.nexthop_ops == 2);
  CHECK(f.group_ops == 1);
  CHECK(f.route_ops == 2);
  // next hops, then the group, then the routes
  REQUIRE(b.log().size() == 5);
  CHECK(b.log()[0].index() == 0);
  CHECK(b.log()[1].index() == 0);
  CHECK(b.log()[2].index() == 1);
  CHECK(b.log()[3].index() == 2);
  const auto gid = r.GroupObject(1);
  REQUIRE(gid);
  CHECK(*gid >= ReconcilerOptions{}.id_base);
  CHECK(b.state().routes.at(P("10.1.0.0/24")) == *gid);
  CHECK_FALSE(r.dirty());
  CHECK(r.Flush().applied == 0);  // nothing left to do
}

TEST_CASE("a reweight is one group replace and no route operation", "[fib][reconciler]") {
  RecordingBackend b;
  Reconciler r(b);
  REQUIRE(r.Start().ok());
  rib::FibUpdate u = Group(1, {{"10.0.0.1", 1}, {"10.0.0.2", 1}});
  for (int i = 0; i < 1000; ++i) {
    const std::string p = "10." + std::to_string(100 + i / 256) + "." + std::to_string(i % 256) + ".0/24";
    u.route_upserts.emplace_back(P(p.c_str()), 1);
  }
  r.Update(u);
  r.Flush();
  b.ClearLog();
  r.Update(Group(1, {{"10.0.0.1", 1}, {"10.0.0.2", 4}}));
  const FlushResult f = r.Flush();
  CHECK(f.group_ops == 1);
  CHECK(f.route_ops == 0);
  CHECK(f.nexthop_ops == 0);
  REQUIRE(b.log().size() == 1);
  CHECK(b.state().groups.at(*r.GroupObject(1)).back().second == 4);
}

TEST_CASE("moving routes and deleting what is unused", "[fib][reconciler]") {
  RecordingBackend b;
  Reconciler r(b);
  REQUIRE(r.Start().ok());
  r.Update(Group(1, {{"10.0.0.1", 1}, {"10.0.0.2", 1}}, {"10.1.0.0/24"}));
  r.Flush();
  const ObjectId g1 = *r.GroupObject(1);
  // The route moves to a new group over 10.0.0.3; group 1 goes with its 10.0.0.1 next hop.
  rib::FibUpdate u = Group(2, {{"10.0.0.2", 1}, {"10.0.0.3", 1}}, {"10.1.0.0/24"});
  u.group_deletes.push_back(1);
  r.Update(u);
  b.ClearLog();
  const FlushResult f = r.Flush();
  CHECK(f.failed == 0);
  const ObjectId g2 = *r.GroupObject(2);
  CHECK(b.state().routes.at(P("10.1.0.0/24")) == g2);
  CHECK_FALSE(b.state().groups.contains(g1));
  CHECK(b.state().nexthops.size() == 2);  // 10.0.0.2 (kept) and 10.0.0.3
  // order: create 10.0.0.3, group 2, repoint the route, delete group 1, delete 10.0.0.1
  REQUIRE(b.log().size() == 5);
  CHECK(std::get<NexthopOp>(b.log()[0]).gateway == A("10.0.0.3"));
  CHECK(std::get<GroupOp>(b.log()[1]).id == g2);
  CHECK(std::get<RouteOp>(b.log()[2]).group == g2);
  CHECK(std::get<GroupOp>(b.log()[3]).remove);
  CHECK(std::get<NexthopOp>(b.log()[4]).remove);
  // withdrawing the route and the group removes everything
  rib::FibUpdate gone;
  gone.route_deletes.push_back(P("10.1.0.0/24"));
  gone.group_deletes.push_back(2);
  r.Update(gone);
  r.Flush();
  CHECK(b.state().routes.empty());
  CHECK(b.state().groups.empty());
  CHECK(b.state().nexthops.empty());
}

TEST_CASE("route operations go to the backend in chunks, every upsert before the first delete",
          "[fib][reconciler]") {
  // A backend that remembers the size of each Apply call.
  struct ChunkCounting : RecordingBackend {
    std::vector<size_t> calls;
    std::vector<absl::Status> Apply(std::span<const FibOp> ops) override {
      calls.push_back(ops.size());
      return RecordingBackend::Apply(ops);
    }
  };
  ChunkCounting b;
  ReconcilerOptions opt;
  opt.route_chunk = 3;
  Reconciler r(b, opt);
  REQUIRE(r.Start().ok());
  auto prefix = [](int i) { return P(("10." + std::to_string(i / 256) + "." + std::to_string(i % 256) + ".0/24").c_str()); };
  rib::FibUpdate u = Group(1, {{"10.0.0.1", 1}});
  for (int i = 0; i < 20; ++i) u.route_upserts.emplace_back(prefix(i), 1);
  r.Update(u);
  // Route 7 fails once: it stays dirty, the others are installed.
  int fail = 1;
  b.set_fault([&](const FibOp& op) {
    const auto* ro = std::get_if<RouteOp>(&op);
    if (ro && ro->prefix == prefix(7) && fail-- > 0) return absl::UnavailableError("busy");
    return absl::OkStatus();
  });
  const FlushResult f = r.Flush();
  CHECK(f.failed == 1);
  CHECK(f.route_ops == 20);  // 19 applied and the failed one
  CHECK(b.state().routes.size() == 19);
  for (size_t n : b.calls) CHECK(n <= 3);
  CHECK(r.dirty());
  r.Flush();
  CHECK(b.state().routes.size() == 20);
  CHECK_FALSE(r.dirty());

  // Half of them move to group 2, the other half go: every upsert before the first delete.
  rib::FibUpdate v = Group(2, {{"10.0.0.2", 1}});
  for (int i = 0; i < 10; ++i) v.route_upserts.emplace_back(prefix(i), 2);
  for (int i = 10; i < 20; ++i) v.route_deletes.push_back(prefix(i));
  v.group_deletes.push_back(1);
  r.Update(v);
  b.ClearLog();
  b.calls.clear();
  CHECK(r.Flush().failed == 0);
  for (size_t n : b.calls) CHECK(n <= 3);
  bool deleting = false;
  size_t upserts = 0, deletes = 0;
  std::vector<net::Prefix> order[2];  // upserts, deletes: each in table order
  for (const FibOp& op : b.log()) {
    const auto* ro = std::get_if<RouteOp>(&op);
    if (ro == nullptr) continue;
    order[ro->remove].push_back(ro->prefix);
    if (ro->remove) {
      deleting = true;
      ++deletes;
    } else {
      CHECK_FALSE(deleting);
      ++upserts;
    }
  }
  for (const auto& o : order) CHECK(std::is_sorted(o.begin(), o.end(), net::InTableOrder));
  CHECK(upserts == 10);
  CHECK(deletes == 10);
  CHECK(b.state().routes.size() == 10);
  for (const auto& [p, g] : b.state().routes) CHECK(g == *r.GroupObject(2));
  CHECK(b.state().groups.size() == 1);
  CHECK_FALSE(r.dirty());

  // Dirty routes that need nothing (already where they should be) do not cut the chunks:
  // four moves among ten unchanged routes go in full chunks of 3, not one call each.
  rib::FibUpdate w = Group(3, {{"10.0.0.3", 1}});
  for (int i = 0; i < 10; ++i) w.route_upserts.emplace_back(prefix(i), i % 3 == 0 ? 3 : 2);
  r.Update(w);
  b.calls.clear();
  CHECK(r.Flush().failed == 0);
  std::vector<size_t> route_calls;
  for (size_t n : b.calls) route_calls.push_back(n);
  CHECK(std::count(route_calls.begin(), route_calls.end(), size_t{3}) >= 1);  // the four moves: 3 + 1
  size_t moved = 0;
  for (const auto& [p, g] : b.state().routes) moved += g == *r.GroupObject(3);
  CHECK(moved == 4);
  CHECK_FALSE(r.dirty());
}

TEST_CASE("a group that goes with all its routes is one delete where the backend removes its routes",
          "[fib][reconciler]") {
  RecordingBackend b;
  FibCapabilities caps;
  caps.group_delete_removes_routes = true;  // as the kernel
  b.set_capabilities(caps);
  Reconciler r(b);
  REQUIRE(r.Start().ok());
  auto prefix = [](int i) { return P(("10." + std::to_string(i / 256) + "." + std::to_string(i % 256) + ".0/24").c_str()); };
  constexpr int kBig = 5000, kSmall = 100;
  rib::FibUpdate u = Group(1, {{"10.0.0.1", 1}});
  for (int i = 0; i < kBig; ++i) u.route_upserts.emplace_back(prefix(i), 1);
  rib::FibUpdate small = Group(2, {{"10.0.0.2", 1}});
  for (int i = kBig; i < kBig + kSmall; ++i) small.route_upserts.emplace_back(prefix(i), 2);
  r.Update(u);
  r.Update(small);
  REQUIRE(r.Flush().failed == 0);
  REQUIRE(b.state().routes.size() == kBig + kSmall);
  const ObjectId g1 = *r.GroupObject(1), g2 = *r.GroupObject(2);

  SECTION("every route of a large group goes: one group delete, no route delete") {
    rib::FibUpdate gone;
    for (int i = 0; i < kBig; ++i) gone.route_deletes.push_back(prefix(i));
    gone.group_deletes.push_back(1);
    r.Update(gone);
    b.ClearLog();
    const FlushResult f = r.Flush();
    CHECK(f.failed == 0);
    CHECK(f.route_ops == 0);
    CHECK(f.routes_removed_with_group == kBig);
    CHECK(r.stats().routes_removed_with_group == kBig);
    CHECK(b.state().routes.size() == kSmall);
    CHECK_FALSE(b.state().groups.contains(g1));
    CHECK(b.state().groups.contains(g2));
    CHECK(b.state().nexthops.size() == 1);  // 10.0.0.1 went after its group
    CHECK(r.confirmed_routes().size() == kSmall);
    CHECK_FALSE(r.dirty());
    size_t group_deletes = 0;
    for (const FibOp& op : b.log()) group_deletes += std::holds_alternative<GroupOp>(op) && std::get<GroupOp>(op).remove;
    CHECK(group_deletes == 1);
  }
  SECTION("a small group's routes are deleted one by one") {
    rib::FibUpdate gone;
    for (int i = kBig; i < kBig + kSmall; ++i) gone.route_deletes.push_back(prefix(i));
    gone.group_deletes.push_back(2);
    r.Update(gone);
    const FlushResult f = r.Flush();
    CHECK(f.route_ops == kSmall);
    CHECK(f.routes_removed_with_group == 0);
    CHECK(b.state().routes.size() == kBig);
  }
  SECTION("one route of the group stays (its move fails): every other route is deleted on its own") {
    rib::FibUpdate gone = Group(3, {{"10.0.0.3", 1}}, {});
    gone.route_upserts.emplace_back(prefix(0), 3);
    for (int i = 1; i < kBig; ++i) gone.route_deletes.push_back(prefix(i));
    gone.group_deletes.push_back(1);
    b.set_fault([&](const FibOp& op) {
      const auto* ro = std::get_if<RouteOp>(&op);
      return ro && !ro->remove && ro->prefix == prefix(0) ? absl::UnavailableError("busy") : absl::OkStatus();
    });
    r.Update(gone);
    const FlushResult f = r.Flush();
    CHECK(f.routes_removed_with_group == 0);
    CHECK(b.state().routes.at(prefix(0)) == g1);  // still on its old group, which stays
    CHECK(b.state().groups.contains(g1));
    CHECK(b.state().routes.size() == kSmall + 1);
    b.set_fault(nullptr);
    r.Flush();
    CHECK(b.state().routes.at(prefix(0)) == *r.GroupObject(3));
    CHECK_FALSE(b.state().groups.contains(g1));
  }
  SECTION("the group delete fails: the routes stay and go at the next flush") {
    int fail = 1;
    b.set_fault([&](const FibOp& op) {
      const auto* go = std::get_if<GroupOp>(&op);
      return go && go->remove && fail-- > 0 ? absl::UnavailableError("busy") : absl::OkStatus();
    });
    rib::FibUpdate gone;
    for (int i = 0; i < kBig; ++i) gone.route_deletes.push_back(prefix(i));
    gone.group_deletes.push_back(1);
    r.Update(gone);
    CHECK(r.Flush().failed == 1);
    CHECK(b.state().routes.size() == kBig + kSmall);
    CHECK(r.dirty());
    const FlushResult f = r.Flush();
    CHECK(f.failed == 0);
    CHECK(f.routes_removed_with_group == kBig);
    CHECK(b.state().routes.size() == kSmall);
    CHECK_FALSE(r.dirty());
  }
}

TEST_CASE("failed operations are retried", "[fib][reconciler]") {
  RecordingBackend b;
  Reconciler r(b);
  REQUIRE(r.Start().ok());
  bool fail = true;
  b.set_fault([&](const FibOp& op) {
    if (fail && std::holds_alternative<NexthopOp>(op) && std::get<NexthopOp>(op).gateway == A("10.0.0.2")) {
      return absl::UnavailableError("Network is down");
    }
    return absl::OkStatus();
  });
  r.Update(Group(1, {{"10.0.0.1", 1}, {"10.0.0.2", 2}}, {"10.1.0.0/24"}));
  FlushResult f = r.Flush();
  CHECK(f.failed == 1);
  REQUIRE(f.errors.size() == 1);
  CHECK(f.errors[0].find("Network is down") != std::string::npos);
  // The group went in with the member that could be created; the route follows.
  const ObjectId g = *r.GroupObject(1);
  CHECK(b.state().groups.at(g).size() == 1);
  CHECK(b.state().routes.contains(P("10.1.0.0/24")));
  CHECK(r.dirty());
  fail = false;
  r.OnEvent(FibEvent::Of(FibEvent::Kind::kLinkUp, 0));
  f = r.Flush();
  CHECK(f.failed == 0);
  CHECK(b.state().groups.at(g).size() == 2);
  CHECK_FALSE(r.dirty());
}

TEST_CASE("a restart with the same state changes nothing, leftovers are swept", "[fib][reconciler]") {
  RecordingBackend b;
  {
    Reconciler before(b);
    REQUIRE(before.Start().ok());
    before.Update(Group(1, {{"10.0.0.1", 1}, {"10.0.0.2", 3}}, {"10.1.0.0/24", "10.2.0.0/24"}));
    before.Update(Group(2, {{"10.0.0.3", 1}}, {"10.3.0.0/24"}));
    before.Flush();
  }
  const FibState old = b.state();
  b.ClearLog();
  Reconciler after(b);
  REQUIRE(after.Start().ok());
  CHECK(after.stale_count() == 3 + 2 + 3);
  // The new run learns the same group 1 (under another registry id) but not group 2.
  after.Update(Group(7, {{"10.0.0.2", 3}, {"10.0.0.1", 1}}, {"10.1.0.0/24", "10.2.0.0/24"}));
  FlushResult f = after.Flush();
  CHECK(f.applied == 0);
  CHECK(b.log().empty());
  CHECK(after.stats().adopted == 3);  // two next hops and the group
  CHECK(b.state().groups == old.groups);
  after.Sweep();
  f = after.Flush();
  CHECK(f.failed == 0);
  CHECK(f.route_ops == 1);  // 10.3.0.0/24
  CHECK(f.group_ops == 1);
  CHECK(f.nexthop_ops == 1);
  CHECK(b.state().routes.size() == 2);
  CHECK(b.state().nexthops.size() == 2);
}

TEST_CASE("a restart claims objects by the converged state, not by the first partial sets", "[fib][reconciler]") {
  // Issue 12 defect 1: BIRD (10.0.0.1, 1G) came back before FRR (10.0.0.2, 3G). The first
  // multipath set the new run saw was {BIRD}, and its group claimed... whatever matched
  // then; once FRR was back the same registry group was re-keyed to {BIRD*1, FRR*3}, which
  // the kernel held already under another id: a new group and a repointed route.
  RecordingBackend b;
  {
    Reconciler before(b);
    REQUIRE(before.Start().ok());
    before.Update(Group(1, {{"10.0.0.1", 1}, {"10.0.0.2", 3}}, {"10.1.0.0/24", "10.2.0.0/24"}));
    before.Update(Group(2, {{"10.0.0.1", 1}}, {"10.3.0.0/24"}));  // a prefix only BIRD has
    before.Flush();
  }
  const FibState old = b.state();
  b.ClearLog();
  Reconciler after(b);
  REQUIRE(after.Start().ok());
  // Before convergence (the FIB stage holds flushes): partial state, then the final one.
  after.Update(Group(5, {{"10.0.0.1", 1}}, {"10.1.0.0/24", "10.2.0.0/24", "10.3.0.0/24"}));
  after.Update(Group(5, {{"10.0.0.1", 1}, {"10.0.0.2", 3}}));  // re-keyed in place: FRR joined
  rib::FibUpdate move = Group(6, {{"10.0.0.1", 1}}, {"10.3.0.0/24"});
  after.Update(move);
  const FlushResult f = after.Flush();
  CHECK(f.applied == 0);
  CHECK(b.log().empty());
  CHECK(b.state().groups == old.groups);
  CHECK(b.state().routes == old.routes);
  CHECK(after.GroupObject(5) == old.routes.at(P("10.1.0.0/24")));
  CHECK(after.GroupObject(6) == old.routes.at(P("10.3.0.0/24")));
  CHECK(after.stale_count() == 0);
}

TEST_CASE("ids others use are never taken", "[fib][reconciler]") {
  RecordingBackend b;
  b.mutable_state().foreign_ids = {ReconcilerOptions{}.id_base, ReconcilerOptions{}.id_base + 1};
  Reconciler r(b);
  REQUIRE(r.Start().ok());
  r.Update(Group(1, {{"10.0.0.1", 1}}, {"10.1.0.0/24"}));
  r.Flush();
  for (const auto& [id, gw] : b.state().nexthops) CHECK(id >= ReconcilerOptions{}.id_base + 2);
  CHECK(*r.GroupObject(1) >= ReconcilerOptions{}.id_base + 2);
}

TEST_CASE("link loss: the next hop is re-created and its group made whole", "[fib][reconciler]") {
  RecordingBackend b;
  Reconciler r(b);
  REQUIRE(r.Start().ok());
  b.SetEventHandler([&](const FibEvent& e) { r.OnEvent(e); });
  r.Update(Group(1, {{"10.0.0.1", 1}, {"10.0.0.2", 2}}, {"10.1.0.0/24"}));
  r.Flush();
  const ObjectId g = *r.GroupObject(1);
  ObjectId nh2 = 0;
  for (const auto& [id, gw] : b.state().nexthops) {
    if (gw == A("10.0.0.2")) nh2 = id;
  }
  b.DeleteNexthopBehindOurBack(nh2);
  CHECK(b.state().groups.at(g).size() == 1);
  CHECK(r.resync_wanted());
  REQUIRE(r.Resync().ok());
  r.Flush();
  CHECK(b.state().groups.at(g).size() == 2);
  CHECK(b.state().nexthops.size() == 2);
  CHECK_FALSE(r.dirty());

  // Every member gone: the backend drops the group and its route; a resync puts all back.
  for (const auto& [id, gw] : std::map<ObjectId, net::IpAddress>(b.state().nexthops)) b.DeleteNexthopBehindOurBack(id);
  CHECK(b.state().routes.empty());
  REQUIRE(r.Resync().ok());
  r.Flush();
  CHECK(b.state().routes.at(P("10.1.0.0/24")) == g);
  CHECK(b.state().groups.at(g).size() == 2);
  CHECK(r.stats().resyncs == 2);
}

}  // namespace
}  // namespace bagd::fib
