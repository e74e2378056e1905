// The reconciler's group cap (ReconcilerOptions::max_groups, issue 18): never more groups in
// the backend than the cap after any single operation, make-before-break steps included;
// deletes that free a slot before the creates that need one; a move with no room written in
// place into the object its routes leave; what still does not fit refused, counted and
// created when a slot frees, never a route dropped. The recording backend behaves as a
// full ASIC table (a create past its limit fails) and is checked after every operation.
#include <catch2/catch.hpp>

#include <map>
#include <random>

#include "absl/strings/str_cat.h"
#include "fib_sync/reconciler.h"
#include "fib_sync/recording_backend.h"

namespace bagd::fib {
namespace {

net::IpAddress A(const std::string& s) { return *net::IpAddress::Parse(s); }
net::Prefix P(const std::string& s) { return *net::Prefix::Parse(s); }

rib::FibGroup G(rib::GroupId id, std::vector<std::pair<std::string, uint32_t>> members) {
  rib::FibGroup g{id, {}};
  for (const auto& [nh, w] : members) g.members.push_back({A(nh), w});
  return g;
}

// A backend with a group table of `cap`, and a reconciler capped at the same.
struct Capped {
  explicit Capped(uint32_t cap) : r(b, Options(cap)) {
    SetCap(cap);
    b.set_after_each([this](const FibOp& op, const FibState& s) {
      INFO("after " << Describe(op));
      // A create never takes the count past the cap (after a lower cap the count may stand
      // above it until deletes bring it down).
      if (s.groups.size() > held) CHECK(s.groups.size() <= limit);
      held = s.groups.size();
      // Every route's group exists (make-before-break).
      for (const auto& [p, g] : s.routes) CHECK(s.groups.contains(g));
    });
  }
  // The backend's table and the reconciler's cap (a reload).
  void SetCap(uint32_t cap) {
    limit = cap;
    b.set_capabilities(FibCapabilities{.max_groups = cap});
    r.SetMaxGroups(cap);
  }
  static ReconcilerOptions Options(uint32_t cap) {
    ReconcilerOptions o;
    o.max_groups = cap;
    return o;
  }
  // The members the backend gives `prefix`, as next hop addresses and weights.
  std::vector<std::pair<std::string, uint32_t>> RouteMembers(const std::string& prefix) const {
    std::vector<std::pair<std::string, uint32_t>> out;
    auto it = b.state().routes.find(P(prefix));
    if (it == b.state().routes.end()) return out;
    for (const auto& [nh, w] : b.state().groups.at(it->second)) out.emplace_back(b.state().nexthops.at(nh).ToString(), w);
    std::sort(out.begin(), out.end());
    return out;
  }
  RecordingBackend b;
  Reconciler r;
  uint32_t limit = 0;
  size_t held = 0;  // groups after the previous operation
};

TEST_CASE("cap: creates beyond the cap are refused, counted, and made when a slot frees", "[fib][reconciler][cap]") {
  Capped c(3);
  REQUIRE(c.r.Start().ok());
  rib::FibUpdate u;
  for (rib::GroupId id = 1; id <= 5; ++id) {
    u.group_upserts.push_back(G(id, {{"10.0.0.1", 1}, {"10.0.0.2", id}}));
    u.route_upserts.emplace_back(P(absl::StrCat("10.", id, ".0.0/24")), id);
  }
  c.r.Update(u);
  FlushResult f = c.r.Flush();
  CHECK(f.failed == 0);  // nothing sent that the backend refused: the reconciler kept count
  CHECK(f.groups_refused == 2);
  CHECK(c.b.state().groups.size() == 3);
  CHECK(c.b.state().routes.size() == 3);
  CHECK(c.r.refused_groups() == 2);
  CHECK(c.r.waiting_routes() == 2);
  CHECK(c.r.stats().groups_refused == 2);
  REQUIRE(f.errors.size() == 2);
  CHECK(f.errors[0] ==
        "next-hop group 4 not created: the FIB holds 3 groups and its limit is 3 (fib.max_groups or the backend's); "
        "its routes stay on the group they have (new ones wait uninstalled) and it is created as soon as a group is "
        "deleted");
  CHECK(c.r.dirty());
  // A retry with no room: still refused, not counted again, not said again.
  f = c.r.Flush();
  CHECK(f.groups_refused == 2);
  CHECK(f.errors.empty());
  CHECK(c.r.stats().groups_refused == 2);
  // Group 1 goes with its route: in the same flush, its slot goes to group 4.
  rib::FibUpdate del;
  del.route_deletes.push_back(P("10.1.0.0/24"));
  del.group_deletes.push_back(1);
  c.r.Update(del);
  f = c.r.Flush();
  CHECK(f.failed == 0);
  CHECK(c.r.refused_groups() == 1);
  CHECK(c.r.waiting_routes() == 1);
  CHECK(c.RouteMembers("10.4.0.0/24") == std::vector<std::pair<std::string, uint32_t>>{{"10.0.0.1", 1}, {"10.0.0.2", 4}});
  CHECK(c.RouteMembers("10.5.0.0/24").empty());
  // The cap raised (a reload): the last one goes in.
  c.SetCap(4);
  f = c.r.Flush();
  CHECK(c.r.refused_groups() == 0);
  CHECK(c.r.waiting_routes() == 0);
  CHECK_FALSE(c.r.dirty());
  CHECK(c.b.state().routes.size() == 4);
  CHECK(c.b.peak_groups() == 4);
}

TEST_CASE("cap: a delete that frees a slot goes before the create that needs it", "[fib][reconciler][cap]") {
  Capped c(2);
  REQUIRE(c.r.Start().ok());
  rib::FibUpdate u;
  u.group_upserts = {G(1, {{"10.0.0.1", 1}}), G(2, {{"10.0.0.2", 1}})};
  u.route_upserts = {{P("10.1.0.0/24"), 1}, {P("10.2.0.0/24"), 2}};
  c.r.Update(u);
  c.r.Flush();
  REQUIRE(c.b.state().groups.size() == 2);
  c.b.ClearLog();
  // 10.2/24 withdrawn, its group goes; a new prefix with a new group comes: the make-before-
  // break order (create first) would need 3 groups. One flush does it in 2.
  rib::FibUpdate next;
  next.group_upserts = {G(3, {{"10.0.0.3", 1}})};
  next.route_upserts = {{P("10.3.0.0/24"), 3}};
  next.route_deletes = {P("10.2.0.0/24")};
  next.group_deletes = {2};
  c.r.Update(next);
  const FlushResult f = c.r.Flush();
  CHECK(f.failed == 0);
  CHECK(f.groups_refused == 0);
  CHECK(c.r.stats().groups_refused == 0);  // made in the same flush: not a refusal
  CHECK(c.b.peak_groups() == 2);
  CHECK(c.RouteMembers("10.3.0.0/24") == std::vector<std::pair<std::string, uint32_t>>{{"10.0.0.3", 1}});
  CHECK(c.RouteMembers("10.1.0.0/24") == std::vector<std::pair<std::string, uint32_t>>{{"10.0.0.1", 1}});
  CHECK_FALSE(c.r.dirty());
  // The order: route delete, group delete, then the create and its route.
  std::vector<std::string> ops;
  for (const FibOp& op : c.b.log()) {
    if (!std::holds_alternative<NexthopOp>(op)) ops.push_back(Describe(op));
  }
  REQUIRE(ops.size() == 4);
  CHECK(ops[0] == "delete route 10.2.0.0/24");
  CHECK(ops[1].rfind("delete group ", 0) == 0);
  CHECK(ops[2].rfind("group ", 0) == 0);
  CHECK(ops[3].rfind("route 10.3.0.0/24 -> group ", 0) == 0);
}

TEST_CASE("cap: a move with no room is written in place into the group its routes leave", "[fib][reconciler][cap]") {
  Capped c(2);
  REQUIRE(c.r.Start().ok());
  rib::FibUpdate u;
  u.group_upserts = {G(1, {{"10.0.0.1", 1}, {"10.0.0.2", 1}}), G(2, {{"10.0.0.1", 1}})};
  u.route_upserts = {{P("10.1.0.0/24"), 1}, {P("10.1.1.0/24"), 1}, {P("10.2.0.0/24"), 2}};
  c.r.Update(u);
  c.r.Flush();
  const ObjectId old = *c.r.GroupObject(1);
  c.b.ClearLog();
  // Both routes of group 1 move to a new group 3 (1:3), group 1 goes: the table is full.
  rib::FibUpdate move;
  move.group_upserts = {G(3, {{"10.0.0.1", 1}, {"10.0.0.2", 3}})};
  move.route_upserts = {{P("10.1.0.0/24"), 3}, {P("10.1.1.0/24"), 3}};
  move.group_deletes = {1};
  c.r.Update(move);
  const FlushResult f = c.r.Flush();
  CHECK(f.failed == 0);
  CHECK(f.groups_refused == 0);
  CHECK(f.groups_rebound == 1);
  CHECK(c.r.stats().groups_rebound == 1);
  CHECK(c.r.GroupObject(3) == old);  // the same object, replaced in place
  CHECK_FALSE(c.r.GroupObject(1));
  REQUIRE(c.b.log().size() == 1);    // one group replace, no route operation
  CHECK(Describe(c.b.log()[0]).rfind(absl::StrCat("group ", old, " = "), 0) == 0);
  CHECK(c.RouteMembers("10.1.1.0/24") == std::vector<std::pair<std::string, uint32_t>>{{"10.0.0.1", 1}, {"10.0.0.2", 3}});
  CHECK(c.b.state().groups.size() == 2);
  CHECK_FALSE(c.r.dirty());
  // Not when the group's routes go different ways: then it is refused and the routes stay.
  rib::FibUpdate split;
  split.group_upserts = {G(4, {{"10.0.0.2", 1}})};
  split.route_upserts = {{P("10.1.0.0/24"), 4}, {P("10.1.1.0/24"), 2}};
  split.group_deletes = {3};
  c.r.Update(split);
  FlushResult s = c.r.Flush();
  // 10.1.1/24 moves to group 2 (installed); 10.1/24 waits on group 3's object for group 4.
  // Once 10.1.1/24 has moved, group 3's object has only 10.1/24, which wants 4: the next
  // round of the same flush rebinds it.
  CHECK(s.groups_refused == 0);
  CHECK(s.groups_rebound == 1);
  CHECK(c.RouteMembers("10.1.1.0/24") == std::vector<std::pair<std::string, uint32_t>>{{"10.0.0.1", 1}});
  CHECK(c.RouteMembers("10.1.0.0/24") == std::vector<std::pair<std::string, uint32_t>>{{"10.0.0.2", 1}});
  CHECK_FALSE(c.r.dirty());
}

TEST_CASE("cap: a previous run's groups count, and are taken over in place", "[fib][reconciler][cap]") {
  Capped c(2);
  {
    Reconciler before(c.b);
    REQUIRE(before.Start().ok());
    rib::FibUpdate u;
    u.group_upserts = {G(1, {{"10.0.0.1", 1}, {"10.0.0.2", 1}}), G(2, {{"10.0.0.2", 1}})};
    u.route_upserts = {{P("10.1.0.0/24"), 1}, {P("10.2.0.0/24"), 2}, {P("10.9.0.0/24"), 2}};
    before.Update(u);
    before.Flush();
  }
  REQUIRE(c.b.state().groups.size() == 2);
  REQUIRE(c.r.Start().ok());
  // The new run decides other weights for 10.1/24 and keeps group 2 as it was (claimed by
  // content); 10.9/24 is not announced again.
  rib::FibUpdate u;
  u.group_upserts = {G(7, {{"10.0.0.1", 1}, {"10.0.0.2", 2}}), G(8, {{"10.0.0.2", 1}})};
  u.route_upserts = {{P("10.1.0.0/24"), 7}, {P("10.2.0.0/24"), 8}};
  c.r.Update(u);
  FlushResult f = c.r.Flush();
  CHECK(f.failed == 0);
  CHECK(f.groups_rebound == 1);  // 7 into the old 1:1 object, whose only route wants it
  CHECK(c.RouteMembers("10.1.0.0/24") == std::vector<std::pair<std::string, uint32_t>>{{"10.0.0.1", 1}, {"10.0.0.2", 2}});
  c.r.Sweep();
  f = c.r.Flush();
  CHECK(f.failed == 0);
  CHECK(c.b.state().routes.size() == 2);
  CHECK(c.b.state().groups.size() == 2);
  CHECK(c.b.peak_groups() == 2);
  CHECK_FALSE(c.r.dirty());
}

TEST_CASE("cap: a lower cap (reload) creates nothing until the count is under it", "[fib][reconciler][cap]") {
  Capped c(4);
  REQUIRE(c.r.Start().ok());
  rib::FibUpdate u;
  for (rib::GroupId id = 1; id <= 4; ++id) {
    u.group_upserts.push_back(G(id, {{absl::StrCat("10.0.0.", id), 1}}));
    u.route_upserts.emplace_back(P(absl::StrCat("10.", id, ".0.0/24")), id);
  }
  c.r.Update(u);
  c.r.Flush();
  c.r.SetMaxGroups(2);  // the backend's table stays 4: the reconciler's cap is what holds
  c.limit = 2;
  rib::FibUpdate add;
  add.group_upserts = {G(5, {{"10.0.0.5", 1}})};
  add.route_upserts = {{P("10.5.0.0/24"), 5}};
  c.r.Update(add);
  CHECK(c.r.Flush().groups_refused == 1);
  CHECK(c.b.state().groups.size() == 4);
  // Two groups go: 3 left, still over 2: nothing created.
  rib::FibUpdate del;
  del.route_deletes = {P("10.1.0.0/24"), P("10.2.0.0/24")};
  del.group_deletes = {1, 2};
  c.r.Update(del);
  c.r.Flush();
  CHECK(c.b.state().groups.size() == 2);
  CHECK(c.r.refused_groups() == 1);
  // One more: room.
  rib::FibUpdate del2;
  del2.route_deletes = {P("10.3.0.0/24")};
  del2.group_deletes = {3};
  c.r.Update(del2);
  c.r.Flush();
  CHECK(c.b.state().groups.size() == 2);
  CHECK(c.r.refused_groups() == 0);
  CHECK(c.RouteMembers("10.5.0.0/24") == std::vector<std::pair<std::string, uint32_t>>{{"10.0.0.5", 1}});
}

TEST_CASE("cap: random updates never exceed the cap and never drop an installed route", "[fib][reconciler][cap]") {
  // The desired state changes at random (groups re-keyed, routes moved, groups added and
  // removed) with at most `cap` groups wanted at once. After every operation: at most `cap`
  // groups. After every flush: a route that was installed and is still wanted is installed
  // (on its new group, or still on its old one while the new one waits). Given room for
  // old and new at once (a second pass with a doubled cap) everything converges.
  for (const uint32_t cap : {3u, 6u}) {
    std::mt19937 rng(1234 + cap);
    Capped c(cap);
    REQUIRE(c.r.Start().ok());
    std::map<rib::GroupId, rib::FibGroup> groups;  // desired
    std::map<std::string, rib::GroupId> routes;
    rib::GroupId next = 1;
    for (int step = 0; step < 300; ++step) {
      INFO("cap " << cap << " step " << step);
      rib::FibUpdate u;
      const int what = std::uniform_int_distribution<int>(0, 3)(rng);
      auto members = [&] {
        std::vector<std::pair<std::string, uint32_t>> m;
        for (int n = 1; n <= 4; ++n) {
          if (std::uniform_int_distribution<int>(0, 1)(rng)) {
            m.emplace_back(absl::StrCat("10.0.0.", n), std::uniform_int_distribution<uint32_t>(1, 4)(rng));
          }
        }
        if (m.empty()) m.emplace_back("10.0.0.1", 1);
        return m;
      };
      if (what == 0 || groups.empty()) {
        if (groups.size() >= cap) continue;
        const rib::GroupId id = next++;
        groups[id] = G(id, members());
        u.group_upserts.push_back(groups[id]);
        for (int k = 0; k < 3; ++k) {
          const std::string p = absl::StrCat("10.", std::uniform_int_distribution<int>(1, 20)(rng), ".0.0/24");
          routes[p] = id;
          u.route_upserts.emplace_back(P(p), id);
        }
      } else if (what == 1) {  // re-key in place
        auto it = std::next(groups.begin(), std::uniform_int_distribution<size_t>(0, groups.size() - 1)(rng));
        it->second = G(it->first, members());
        u.group_upserts.push_back(it->second);
      } else if (what == 2 && !routes.empty()) {  // a route moves to another group
        auto it = std::next(routes.begin(), std::uniform_int_distribution<size_t>(0, routes.size() - 1)(rng));
        auto g = std::next(groups.begin(), std::uniform_int_distribution<size_t>(0, groups.size() - 1)(rng));
        it->second = g->first;
        u.route_upserts.emplace_back(P(it->first), g->first);
      } else if (!routes.empty()) {  // a route goes
        auto it = std::next(routes.begin(), std::uniform_int_distribution<size_t>(0, routes.size() - 1)(rng));
        u.route_deletes.push_back(P(it->first));
        routes.erase(it);
      }
      // Groups no route wants go (as the registry does).
      for (auto it = groups.begin(); it != groups.end();) {
        bool used = false;
        for (const auto& [p, g] : routes) used |= g == it->first;
        if (used) {
          ++it;
        } else {
          u.group_deletes.push_back(it->first);
          it = groups.erase(it);
        }
      }
      std::set<std::string> installed_before;
      for (const auto& [p, g] : routes) {
        if (c.b.state().routes.contains(P(p))) installed_before.insert(p);
      }
      c.r.Update(u);
      c.r.Flush();
      for (const std::string& p : installed_before) CHECK(c.b.state().routes.contains(P(p)));
      CHECK(c.b.state().groups.size() <= cap);
    }
    // Room for make-before-break of everything: it converges.
    c.SetCap(2 * cap);
    c.r.Flush();
    CHECK_FALSE(c.r.dirty());
    for (const auto& [p, g] : routes) {
      std::vector<std::pair<std::string, uint32_t>> want;
      for (const auto& m : groups.at(g).members) want.emplace_back(m.next_hop.ToString(), m.weight);
      CHECK(c.RouteMembers(p) == want);
    }
    CHECK(c.b.state().groups.size() == groups.size());
  }
}

}  // namespace
}  // namespace bagd::fib
