// The next-hop-group count budget (rib/weights/group_budget.h): never over the limit,
// including at every make-before-break step; every prefix routed; a next hop a prefix does
// not have never carries its traffic; the worst share error no worse than first-fit. Random
// inputs with fixed seeds, plus a few worked cases.
#include <catch2/catch.hpp>

#include <array>
#include <map>
#include <random>
#include <set>

#include "absl/strings/str_cat.h"
#include "rib/weights/group_budget.h"
#include "rib/weights/group_budget_baselines.h"
#include "rib/weights/nexthop_group_registry.h"

namespace bagd::rib {
namespace {

net::IpAddress Nh(int i) { return *net::IpAddress::Parse(absl::StrCat("10.0.0.", i)); }
net::Prefix P(int i) { return *net::Prefix::Parse(absl::StrCat("10.", 100 + i / 65536, ".", (i / 256) % 256, ".", i % 256, "/32")); }

using Members = std::vector<FibGroupMember>;

Members Group(std::initializer_list<std::pair<int, uint32_t>> m) {
  Members out;
  for (const auto& [nh, w] : m) out.push_back(FibGroupMember{Nh(nh), w});
  return out;
}

std::string Key(const Members& m) {
  std::string k;
  for (const auto& x : m) absl::StrAppend(&k, x.next_hop.ToString(), "*", x.weight, " ");
  return k;
}

// What the registry hands on without a budget: one group per distinct weighted set,
// refcounted by prefixes, updates batched as NextHopGroupRegistry::TakeFibUpdate does.
class WantedModel {
 public:
  void Set(const net::Prefix& p, const Members& m) {
    GroupId id;
    if (auto it = by_key_.find(Key(m)); it != by_key_.end()) {
      id = it->second;
    } else {
      id = next_++;
      by_key_[Key(m)] = id;
      groups_[id] = {m, 0};
      dirty_groups_.insert(id);
    }
    auto r = routes_.find(p);
    if (r != routes_.end()) {
      if (r->second == id) return;
      Unref(r->second);
    }
    ++groups_[id].second;
    routes_[p] = id;
    dirty_routes_[p] = id;
  }
  void Withdraw(const net::Prefix& p) {
    auto r = routes_.find(p);
    if (r == routes_.end()) return;
    Unref(r->second);
    routes_.erase(r);
    dirty_routes_[p] = 0;
  }
  // Every prefix of group `id` moves to `m` together: the registry re-keys it in place.
  bool Reweigh(GroupId id, const Members& m) {
    if (!groups_.contains(id) || by_key_.contains(Key(m))) return false;
    by_key_.erase(Key(groups_[id].first));
    by_key_[Key(m)] = id;
    groups_[id].first = m;
    dirty_groups_.insert(id);
    return true;
  }
  FibUpdate Take() {
    FibUpdate u;
    for (GroupId id : dirty_groups_) {
      if (groups_.contains(id)) {
        u.group_upserts.push_back(FibGroup{id, groups_[id].first});
        announced_.insert(id);
      }
    }
    for (const auto& [p, id] : dirty_routes_) {
      if (id == 0) {
        u.route_deletes.push_back(p);
      } else {
        u.route_upserts.emplace_back(p, id);
      }
    }
    u.group_deletes = deleted_;
    dirty_groups_.clear();
    dirty_routes_.clear();
    deleted_.clear();
    return u;
  }
  const std::map<net::Prefix, GroupId>& routes() const { return routes_; }
  const Members& members(GroupId id) const { return groups_.at(id).first; }
  std::vector<GroupId> ids() const {
    std::vector<GroupId> v;
    for (const auto& [id, g] : groups_) v.push_back(id);
    return v;
  }

 private:
  void Unref(GroupId id) {
    if (--groups_[id].second > 0) return;
    by_key_.erase(Key(groups_[id].first));
    groups_.erase(id);
    dirty_groups_.erase(id);
    if (announced_.erase(id)) deleted_.push_back(id);
  }
  GroupId next_ = 1;
  std::map<std::string, GroupId> by_key_;
  std::map<GroupId, std::pair<Members, uint32_t>> groups_;
  std::map<net::Prefix, GroupId> routes_;
  std::set<GroupId> dirty_groups_, announced_;
  std::map<net::Prefix, GroupId> dirty_routes_;
  std::vector<GroupId> deleted_;
};

// The FIB, applying an update make-before-break step by step and counting its groups.
class FibModel {
 public:
  explicit FibModel(size_t limit) : limit_(limit) {}
  std::string Apply(const FibUpdate& u) {
    std::string err;
    for (const FibGroup& g : u.group_upserts) {
      groups_[g.id] = g.members;
      peak_ = std::max(peak_, groups_.size());
      if (groups_.size() > limit_) err += absl::StrCat("group ", g.id, " makes ", groups_.size(), " > ", limit_, "; ");
    }
    for (const auto& [p, id] : u.route_upserts) {
      if (!groups_.contains(id)) err += absl::StrCat(p.ToString(), " -> unknown group ", id, "; ");
      routes_[p] = id;
    }
    for (const auto& p : u.route_deletes) {
      if (routes_.erase(p) == 0) err += absl::StrCat("delete of unknown route ", p.ToString(), "; ");
    }
    std::set<GroupId> used;
    for (const auto& [p, id] : routes_) used.insert(id);
    for (GroupId id : u.group_deletes) {
      if (used.contains(id)) err += absl::StrCat("group ", id, " deleted in use; ");
      if (groups_.erase(id) == 0) err += absl::StrCat("delete of unknown group ", id, "; ");
    }
    return err;
  }
  const Members* Of(const net::Prefix& p) const {
    auto r = routes_.find(p);
    return r == routes_.end() ? nullptr : &groups_.at(r->second);
  }
  size_t groups() const { return groups_.size(); }
  size_t peak() const { return peak_; }

 private:
  size_t limit_;
  size_t peak_ = 0;
  std::map<GroupId, Members> groups_;
  std::map<net::Prefix, GroupId> routes_;
};

double One(GroupId) { return 1.0; }

// Drives a budget from a WantedModel into a FibModel and checks the invariants each step.
struct Harness {
  explicit Harness(GroupBudgetConfig c) : budget(c), fib(c.max_groups) {}
  void Step(absl::Time now) {
    const FibUpdate u = budget.Apply(wanted.Take(), One, now);
    const std::string err = fib.Apply(u);
    INFO(err);
    REQUIRE(err.empty());
    Check();
  }
  void Check() {
    const GroupBudgetTotals t = budget.Totals();
    CHECK(t.installed <= budget.config().max_groups);
    CHECK(fib.groups() == t.installed);
    for (const auto& [p, id] : wanted.routes()) {
      const Members* got = fib.Of(p);
      if (got == nullptr) {
        INFO(p.ToString() << " is not routed");
        CHECK(t.unrouted_prefixes > 0);
        continue;
      }
      // Never a next hop the prefix does not have.
      const Members& own = wanted.members(id);
      for (const auto& m : *got) {
        const bool has = std::any_of(own.begin(), own.end(), [&](const auto& o) { return o.next_hop == m.next_hop; });
        INFO(p.ToString() << " wants " << Key(own) << " got " << Key(*got));
        CHECK(has);
      }
      const auto s = budget.Serving(id);
      REQUIRE(s.has_value());
      CHECK(s->error == Approx(ShareError(own, *got)).margin(1e-12));
    }
  }
  WantedModel wanted;
  GroupBudget budget;
  FibModel fib;
};

// A random weighted group over one of `sets` next-hop sets of a pool of 6.
Members RandomGroup(std::mt19937& rng, int sets) {
  static const std::vector<std::vector<int>> kSets = {{1, 2, 3, 4}, {1, 2}, {3, 4, 5, 6}, {1, 2, 3, 4, 5, 6}, {2, 5}};
  const auto& set = kSets[rng() % std::min<size_t>(sets, kSets.size())];
  Members m;
  for (int nh : set) m.push_back(FibGroupMember{Nh(nh), static_cast<uint32_t>(1 + rng() % 12)});
  uint32_t g = 0;
  for (const auto& x : m) g = std::gcd(g, x.weight);
  for (auto& x : m) x.weight /= g;
  return m;
}

TEST_CASE("group budget: random churn never exceeds the limit at any make-before-break step", "[weights][budget]") {
  for (const uint32_t seed : {1u, 2u, 3u, 42u, 1234u}) {
    for (const uint32_t limit : {6u, 16u, 64u}) {
      DYNAMIC_SECTION("seed " << seed << " limit " << limit) {
        std::mt19937 rng(seed);
        GroupBudgetConfig c;
        c.max_groups = limit;
        c.reserve = 2;
        c.improve_after = absl::Seconds(30);
        Harness h(c);
        absl::Time now = absl::FromUnixSeconds(1'800'000'000);
        int merged_rounds = 0;
        for (int round = 0; round < 60; ++round) {
          const int ops = 1 + static_cast<int>(rng() % (round == 0 ? 400 : 40));
          for (int k = 0; k < ops; ++k) {
            const int what = static_cast<int>(rng() % 10);
            const net::Prefix p = P(static_cast<int>(rng() % 300));
            if (what < 6) {
              h.wanted.Set(p, RandomGroup(rng, 4));
            } else if (what < 8) {
              h.wanted.Withdraw(p);
            } else {
              // A reweight (or a member set change) of a whole group, in place.
              const auto ids = h.wanted.ids();
              if (!ids.empty()) h.wanted.Reweigh(ids[rng() % ids.size()], RandomGroup(rng, 4));
            }
          }
          h.Step(now);
          now += absl::Seconds(static_cast<int>(rng() % 40));
          CHECK(h.budget.Totals().unrouted_prefixes == 0);  // 4 next-hop sets always fit
          CHECK(h.fib.peak() <= limit);
          merged_rounds += h.budget.Totals().merged > 0;
        }
        // The inputs want more groups than the limit most of the time: merging is exercised.
        CHECK(merged_rounds > 30);
        CHECK(h.budget.Totals().route_moves > 0);
      }
    }
  }
}

TEST_CASE("group budget: a member loss under every group reweighs in place, no route moves", "[weights][budget]") {
  std::mt19937 rng(7);
  GroupBudgetConfig c;
  c.max_groups = 8;
  Harness h(c);
  const absl::Time now = absl::FromUnixSeconds(1'800'000'000);
  for (int i = 0; i < 200; ++i) h.wanted.Set(P(i), RandomGroup(rng, 1));
  h.Step(now);
  REQUIRE(h.budget.Totals().installed == 6);  // 8 - reserve 2
  REQUIRE(h.budget.Totals().merged > 0);
  // Next hop 1 loses capacity in every group: each group re-keyed in place.
  for (GroupId id : h.wanted.ids()) {
    Members m = h.wanted.members(id);
    m[0].weight = std::max<uint32_t>(1, m[0].weight / 2) ;
    for (auto& x : m) x.weight *= 2;
    m[0].weight = m[0].weight / 2 + 1;
    h.wanted.Reweigh(id, m);
  }
  const FibUpdate u = h.budget.Apply(h.wanted.Take(), One, now + absl::Seconds(1));
  REQUIRE(h.fib.Apply(u).empty());
  h.Check();
  CHECK(u.group_upserts.size() <= 6);  // at most one in-place replace per installed group
  CHECK(u.group_deletes.empty());
  CHECK(u.route_upserts.empty());
}

TEST_CASE("group budget: least-error merge picks the closest shares", "[weights][budget]") {
  GroupBudgetConfig c;
  c.max_groups = 4;
  c.reserve = 2;  // two slots in steady state
  Harness h(c);
  const absl::Time now = absl::FromUnixSeconds(1'800'000'000);
  h.wanted.Set(P(1), Group({{1, 1}, {2, 1}}));   // 50:50
  h.wanted.Set(P(2), Group({{1, 9}, {2, 1}}));   // 90:10
  h.wanted.Set(P(3), Group({{1, 11}, {2, 9}}));  // 55:45, closest to 50:50
  h.Step(now);
  CHECK(h.budget.Totals().installed == 2);
  const GroupBudgetTotals t = h.budget.Totals();
  CHECK(t.merged == 1);
  // 55:45 served by 50:50: member 2 gets 50 % instead of 45 %.
  CHECK(t.worst_error == Approx((0.5 - 0.45) / 0.45));
  CHECK(Key(*h.fib.Of(P(3))) == Key(Group({{1, 1}, {2, 1}})));
}

TEST_CASE("group budget: a batch big enough to be sampled still serves every group by its nearest slot",
          "[weights][budget]") {
  // Over 8192 distinct groups at once: the first slots are picked among a sample, the rest
  // among all; either way every merged group must end up on the installed group with the
  // least error for it (the placement's errors are exact, not estimates).
  std::mt19937 rng(99);
  GroupBudgetConfig c;
  c.max_groups = 32;
  Harness h(c);
  std::map<std::string, Members> groups;
  for (int i = 0; i < 9000; ++i) {
    Members m;
    for (int nh = 1; nh <= 6; ++nh) m.push_back(FibGroupMember{Nh(nh), static_cast<uint32_t>(1 + rng() % 30)});
    uint32_t g = 0;
    for (const auto& x : m) g = std::gcd(g, x.weight);
    for (auto& x : m) x.weight /= g;
    h.wanted.Set(P(i), m);
    groups.emplace(Key(m), m);
  }
  REQUIRE(groups.size() > 8192);
  h.Step(absl::FromUnixSeconds(1'800'000'000));
  const std::vector<FibGroup> slots = h.budget.Slots();
  CHECK(slots.size() == c.max_groups - c.reserve);
  size_t checked = 0;
  for (const GroupId id : h.wanted.ids()) {
    const Members& own = h.wanted.members(id);
    double nearest = 1e300;
    for (const FibGroup& s : slots) nearest = std::min(nearest, ShareError(own, s.members));
    const auto serving = h.budget.Serving(id);
    REQUIRE(serving.has_value());
    INFO(Key(own));
    CHECK(serving->error == Approx(nearest).margin(1e-12));
    ++checked;
  }
  CHECK(checked == groups.size());
}

TEST_CASE("group budget: groups wider than 8 next hops are served by their nearest slot", "[weights][budget]") {
  // Rows of more than 8 next hops take the point tree's run-time-width path (L = 0); odd
  // widths are padded. Three next-hop sets (9, 11 and 12 next hops) share the budget, in a
  // batch small enough to search every point and in one big enough to be sampled.
  for (const int count : {1500, 9000}) {
    DYNAMIC_SECTION(count << " prefixes") {
      std::mt19937 rng(static_cast<uint32_t>(count));
      GroupBudgetConfig c;
      c.max_groups = 40;
      Harness h(c);
      std::map<std::string, Members> groups;
      std::vector<BaselineGroup> order;
      std::map<std::string, double> traffic;
      for (int i = 0; i < count; ++i) {
        const int width = std::array{9, 11, 12}[rng() % 3];
        Members m;
        for (int nh = 1; nh <= width; ++nh) m.push_back(FibGroupMember{Nh(nh), static_cast<uint32_t>(1 + rng() % 8)});
        uint32_t g = 0;
        for (const auto& x : m) g = std::gcd(g, x.weight);
        for (auto& x : m) x.weight /= g;
        h.wanted.Set(P(i), m);
        traffic[Key(m)] += 1;
        if (groups.emplace(Key(m), m).second) order.push_back(BaselineGroup{m, 0});
      }
      for (auto& g : order) g.traffic = traffic[Key(g.members)];
      REQUIRE(groups.size() > c.max_groups);
      h.Step(absl::FromUnixSeconds(1'800'000'000));  // the harness checks limit, routes, next hops, errors
      const std::vector<FibGroup> slots = h.budget.Slots();
      CHECK(slots.size() == c.max_groups - c.reserve);
      std::set<size_t> widths;
      for (const FibGroup& s : slots) widths.insert(s.members.size());
      CHECK(widths == std::set<size_t>{9, 11, 12});  // every next-hop set has its own slots
      for (const GroupId id : h.wanted.ids()) {
        const Members& own = h.wanted.members(id);
        double nearest = 1e300;  // among the slots over its own next hops (the default scope)
        for (const FibGroup& s : slots) {
          if (s.members.size() == own.size()) nearest = std::min(nearest, ShareError(own, s.members));
        }
        const auto serving = h.budget.Serving(id);
        REQUIRE(serving.has_value());
        INFO(Key(own));
        CHECK(serving->error < 1e300);
        CHECK(serving->error == Approx(nearest).margin(1e-12));
      }
      const BaselineFit ff = FitFirstFit(order, c.max_groups - c.reserve);
      INFO("least-error " << h.budget.Totals().worst_error << " first-fit " << ff.worst);
      CHECK(h.budget.Totals().worst_error < ff.worst);
    }
  }
}

TEST_CASE("group budget: a group deleted while a route still wants it withdraws the route", "[weights][budget]") {
  // Not what the registry sends (it deletes a group only when no route wants it), but an
  // update that does must not leave a route pointing at nothing.
  GroupBudgetConfig c;
  c.max_groups = 4;
  GroupBudget b(c);
  FibModel fib(c.max_groups);
  const absl::Time now = absl::FromUnixSeconds(1'800'000'000);
  FibUpdate u;
  u.group_upserts.push_back(FibGroup{1, Group({{1, 1}, {2, 1}})});
  u.group_upserts.push_back(FibGroup{2, Group({{1, 3}, {2, 1}})});
  u.route_upserts.emplace_back(P(1), 1);
  u.route_upserts.emplace_back(P(2), 2);
  REQUIRE(fib.Apply(b.Apply(u, One, now)).empty());
  REQUIRE(fib.Of(P(2)) != nullptr);
  FibUpdate bad;
  bad.group_deletes.push_back(2);
  const FibUpdate out = b.Apply(bad, One, now + absl::Seconds(1));
  CHECK(fib.Apply(out).empty());
  CHECK(fib.Of(P(2)) == nullptr);
  CHECK(fib.Of(P(1)) != nullptr);
  CHECK(b.InstalledSlot(P(2)) == 0);
  CHECK(b.Totals().wanted == 1);
  CHECK(!b.Serving(2).has_value());
}

TEST_CASE("group budget: a slot whose template leaves copies its remaining user", "[weights][budget]") {
  GroupBudgetConfig c;
  c.max_groups = 4;
  c.reserve = 2;
  Harness h(c);
  const absl::Time now = absl::FromUnixSeconds(1'800'000'000);
  h.wanted.Set(P(1), Group({{1, 1}, {2, 1}}));  // 50:50
  h.wanted.Set(P(2), Group({{1, 9}, {2, 1}}));  // 90:10, farthest: a slot
  h.wanted.Set(P(3), Group({{1, 3}, {2, 1}}));  // 75:25: on 90:10 (error 0.6, 1.0 on 50:50)
  h.Step(now);
  REQUIRE(h.budget.Totals().merged == 1);
  CHECK(h.budget.Totals().worst_error == Approx((0.25 - 0.1) / 0.25));
  h.wanted.Withdraw(P(2));
  const FibUpdate u = h.budget.Apply(h.wanted.Take(), One, now + absl::Seconds(1));
  REQUIRE(h.fib.Apply(u).empty());
  h.Check();
  // One in-place replace, no route moves.
  CHECK(u.group_upserts.size() == 1);
  CHECK(u.route_upserts.empty());
  CHECK(h.budget.Totals().merged == 0);
}

TEST_CASE("group budget: a freed slot is taken back after the hold-down, not at once", "[weights][budget]") {
  GroupBudgetConfig c;
  c.max_groups = 4;
  c.reserve = 2;
  c.improve_after = absl::Seconds(30);
  Harness h(c);
  const absl::Time now = absl::FromUnixSeconds(1'800'000'000);
  h.wanted.Set(P(1), Group({{1, 1}, {2, 1}}));   // 50:50
  h.wanted.Set(P(2), Group({{1, 9}, {2, 1}}));   // 90:10
  h.wanted.Set(P(3), Group({{1, 11}, {2, 9}}));  // 55:45, merged into 50:50 (error 0.11)
  h.Step(now);
  REQUIRE(h.budget.Totals().merged == 1);
  h.wanted.Withdraw(P(2));  // frees 90:10's slot (deleted in this update, usable after it)
  h.Step(now + absl::Seconds(1));
  CHECK(h.budget.Totals().installed == 1);
  CHECK(h.budget.Totals().merged == 1);
  const auto due = h.budget.NextDue(now + absl::Seconds(1));
  REQUIRE(due.has_value());
  CHECK(*due == now + absl::Seconds(30));
  h.Step(now + absl::Seconds(10));
  CHECK(h.budget.Totals().merged == 1);
  h.Step(now + absl::Seconds(30));
  CHECK(h.budget.Totals().merged == 0);
  CHECK(h.budget.Totals().promotions == 1);
  CHECK_FALSE(h.budget.NextDue(now + absl::Seconds(30)).has_value());
}

TEST_CASE("group budget: a small gain is not worth a move", "[weights][budget]") {
  GroupBudgetConfig c;
  c.max_groups = 4;
  c.reserve = 2;
  c.min_gain = 0.2;
  Harness h(c);
  const absl::Time now = absl::FromUnixSeconds(1'800'000'000);
  h.wanted.Set(P(1), Group({{1, 1}, {2, 1}}));
  h.wanted.Set(P(2), Group({{1, 9}, {2, 1}}));
  h.wanted.Set(P(3), Group({{1, 11}, {2, 9}}));  // error 0.11 < min_gain
  h.Step(now);
  h.wanted.Withdraw(P(2));
  h.Step(now + absl::Seconds(1));
  CHECK_FALSE(h.budget.NextDue(now + absl::Seconds(1)).has_value());
  h.Step(now + absl::Seconds(100));
  CHECK(h.budget.Totals().merged == 1);
  CHECK(h.budget.Totals().promotions == 0);
}

TEST_CASE("group budget: a template changing next hops moves, the slot stays for the others", "[weights][budget]") {
  GroupBudgetConfig c;
  c.max_groups = 3;
  c.reserve = 1;
  Harness h(c);
  const absl::Time now = absl::FromUnixSeconds(1'800'000'000);
  h.wanted.Set(P(1), Group({{1, 1}, {2, 1}}));
  h.wanted.Set(P(2), Group({{1, 2}, {2, 1}}));
  h.wanted.Set(P(3), Group({{1, 3}, {2, 2}}));
  h.Step(now);
  REQUIRE(h.budget.Totals().installed == 2);
  // Whichever group is a template gains next hop 3: its merged users must not follow.
  for (GroupId id : h.wanted.ids()) {
    const auto s = h.budget.Serving(id);
    if (s && !s->merged) {
      Members m = h.wanted.members(id);
      m.push_back(FibGroupMember{Nh(3), 1});
      h.wanted.Reweigh(id, m);
    }
  }
  h.Step(now + absl::Seconds(1));  // Check(): nobody routed to next hop 3 without having it
  CHECK(h.fib.peak() <= 3);
}

TEST_CASE("group budget: more next-hop sets than slots, subset scope", "[weights][budget]") {
  GroupBudgetConfig c;
  c.max_groups = 2;
  c.reserve = 1;
  c.scope = MergeScope::kSubset;
  Harness h(c);
  const absl::Time now = absl::FromUnixSeconds(1'800'000'000);
  h.wanted.Set(P(1), Group({{1, 1}, {2, 1}, {3, 2}}));  // most prefixes
  h.wanted.Set(P(2), Group({{1, 1}, {2, 1}, {3, 2}}));
  h.wanted.Set(P(3), Group({{1, 1}, {2, 1}}));
  h.Step(now);
  // Two classes, two slots (one from the reserve): both routed.
  CHECK(h.budget.Totals().unrouted_prefixes == 0);
  // A third class with no installed subset and no room: the subset fallback, or unrouted.
  h.wanted.Set(P(4), Group({{5, 1}, {6, 1}}));
  h.Step(now + absl::Seconds(1));
  h.wanted.Set(P(5), Group({{1, 1}}));  // a subset of every other set: served by nothing smaller
  h.Step(now + absl::Seconds(2));
  CHECK(h.fib.peak() <= 2);
}

TEST_CASE("group budget: a route with nothing to serve it waits for a slot, then is installed", "[weights][budget]") {
  GroupBudgetConfig c;
  c.max_groups = 3;
  c.reserve = 1;
  Harness h(c);
  const absl::Time now = absl::FromUnixSeconds(1'800'000'000);
  h.wanted.Set(P(1), Group({{1, 1}, {2, 1}}));
  h.wanted.Set(P(2), Group({{3, 1}, {4, 1}}));
  h.wanted.Set(P(3), Group({{5, 1}, {6, 1}}));
  h.Step(now);
  CHECK(h.budget.Totals().installed == 3);  // three next-hop sets: one slot each, the reserve too
  CHECK(h.budget.Totals().unrouted_prefixes == 0);
  h.wanted.Set(P(4), Group({{7, 1}, {8, 1}}));  // a fourth: the table is full, no subset of 7, 8
  h.Step(now + absl::Seconds(1));
  CHECK(h.budget.Totals().unrouted_prefixes == 1);
  CHECK(h.fib.Of(P(4)) == nullptr);
  CHECK_FALSE(h.budget.TakeNotices().empty());
  h.wanted.Withdraw(P(2));  // frees a slot, deleted at the end of this update
  h.Step(now + absl::Seconds(2));
  INFO("installed " << h.budget.Totals().installed << " unrouted " << h.budget.Totals().unrouted_prefixes);
  REQUIRE(h.budget.NextDue(now + absl::Seconds(2)).has_value());  // due at once
  h.Step(now + absl::Seconds(2));
  CHECK(h.budget.Totals().unrouted_prefixes == 0);
  REQUIRE(h.fib.Of(P(4)) != nullptr);
  CHECK(Key(*h.fib.Of(P(4))) == Key(Group({{7, 1}, {8, 1}})));
  CHECK(h.fib.peak() <= 3);
}

TEST_CASE("group budget: worst error no worse than first-fit on the same input", "[weights][budget]") {
  for (const uint32_t seed : {11u, 12u, 13u, 14u, 15u, 16u}) {
    for (const uint32_t limit : {8u, 24u, 64u}) {
      DYNAMIC_SECTION("seed " << seed << " limit " << limit) {
        std::mt19937 rng(seed);
        GroupBudgetConfig c;
        c.max_groups = limit;
        Harness h(c);
        std::vector<BaselineGroup> order;  // wanted groups in the order they appear
        std::set<std::string> seen;
        std::map<std::string, double> traffic;
        for (int i = 0; i < 2000; ++i) {
          const Members m = RandomGroup(rng, 3);
          h.wanted.Set(P(i), m);
          traffic[Key(m)] += 1;
          if (seen.insert(Key(m)).second) order.push_back(BaselineGroup{m, 0});
        }
        for (auto& g : order) g.traffic = traffic[Key(g.members)];
        h.Step(absl::FromUnixSeconds(1'800'000'000));
        const BaselineFit ff = FitFirstFit(order, limit - c.reserve);
        const GroupBudgetTotals t = h.budget.Totals();
        INFO("least-error " << t.worst_error << " first-fit " << ff.worst);
        CHECK(t.installed <= limit - c.reserve);
        CHECK(t.worst_error <= ff.worst + 1e-12);
        CHECK(t.worst_error < ff.worst);  // these inputs leave first-fit far off
      }
    }
  }
}

TEST_CASE("group budget: a lower limit merges down with deletes only", "[weights][budget]") {
  std::mt19937 rng(5);
  GroupBudgetConfig c;
  c.max_groups = 32;
  Harness h(c);
  const absl::Time now = absl::FromUnixSeconds(1'800'000'000);
  for (int i = 0; i < 500; ++i) h.wanted.Set(P(i), RandomGroup(rng, 3));
  h.Step(now);
  REQUIRE(h.budget.Totals().installed == 30);
  c.max_groups = 10;
  h.budget.Reconfigure(c);
  const FibUpdate u = h.budget.Apply(h.wanted.Take(), One, now + absl::Seconds(1));
  CHECK(u.group_upserts.empty());
  REQUIRE(h.fib.Apply(u).empty());
  h.Check();
  CHECK(h.budget.Totals().installed == 8);
}

}  // namespace
}  // namespace bagd::rib

namespace bagd::rib {
namespace {

MemberInput Lb(int nh, double gbps) {
  return MemberInput{Nh(nh), wire::LinkBandwidth::FromBitsPerSecond(65000 + nh, gbps * 1e9, true)};
}

TEST_CASE("group budget through the registry: random bandwidths, hold-down and revisits", "[weights][budget]") {
  for (const uint32_t seed : {21u, 22u, 23u}) {
    DYNAMIC_SECTION("seed " << seed) {
      std::mt19937 rng(seed);
      WeightsConfig c;
      c.budget.max_groups = 12;
      c.budget.reserve = 2;
      c.budget.improve_after = c.damping.increase_hold_down;
      NextHopGroupRegistry registry(c);
      FibModel fib(c.budget.max_groups);
      std::map<net::Prefix, std::vector<MemberInput>> table;
      absl::Time now = absl::FromUnixSeconds(1'800'000'000);
      for (int round = 0; round < 80; ++round) {
        std::map<net::Prefix, PrefixMembers> changed;  // each prefix once, the last change wins
        const int n = round == 0 ? 300 : 1 + static_cast<int>(rng() % 30);
        for (int k = 0; k < n; ++k) {
          const net::Prefix p = P(static_cast<int>(rng() % 300));
          PrefixMembers pm{p, {}};
          if (rng() % 8 != 0) {
            const int width = 2 + static_cast<int>(rng() % 3);  // next hops 1..width
            for (int nh = 1; nh <= width; ++nh) pm.members.push_back(Lb(nh, static_cast<double>(1 + rng() % 8)));
          }
          table[p] = std::vector<MemberInput>(pm.members.begin(), pm.members.end());
          changed[p] = std::move(pm);
        }
        std::vector<PrefixMembers> batch;
        for (auto& [p, pm] : changed) batch.push_back(std::move(pm));
        registry.Update(batch, now);
        auto step = [&] {
          const std::string err = fib.Apply(registry.TakeFibUpdate());
          INFO(err);
          REQUIRE(err.empty());
        };
        step();
        // Time passes through every due time (hold-downs and merge revisits), as the stage's timer does.
        const absl::Time end = now + absl::Seconds(static_cast<int>(rng() % 50));
        while (auto due = registry.NextDue()) {
          if (*due > end) break;
          now = std::max(now, *due);
          registry.Expire(now);
          // An early reweight's check, one slice per wake-up as the stage runs it.
          if (auto slice = registry.TakeCheckSlice(now, 64)) {
            std::vector<PrefixMembers> read;
            for (const net::Prefix& p : slice->prefixes) {
              const auto it = table.find(p);
              read.push_back(PrefixMembers{p, {}});
              if (it != table.end()) read.back().members.assign(it->second.begin(), it->second.end());
            }
            std::vector<MembersView> views;
            for (const PrefixMembers& pm : read) views.push_back(MembersView{pm.prefix, pm.members});
            registry.Check(slice->group, views, now);
          }
          step();
        }
        now = end;
        const GroupBudgetTotals t = registry.budget()->Totals();
        CHECK(fib.peak() <= c.budget.max_groups);
        CHECK(t.installed <= c.budget.max_groups);
        // Every route that has next hops is routed, over its own next hops only (3 sets, 12 slots).
        for (const auto& [p, members] : table) {
          const Members* got = fib.Of(p);
          if (members.empty()) {
            CHECK(got == nullptr);
            continue;
          }
          REQUIRE(got != nullptr);
          CHECK(got->size() == members.size());
          const NextHopGroup* g = registry.GroupOf(p);
          REQUIRE(g != nullptr);
          const auto s = registry.budget()->Serving(g->id);
          REQUIRE(s.has_value());
          std::vector<FibGroupMember> own;
          for (const auto& m : g->members) own.push_back(FibGroupMember{m.next_hop, m.weight});
          CHECK(s->error == Approx(ShareError(own, *got)).margin(1e-12));
        }
      }
      CHECK(registry.budget()->Totals().merged > 0);
    }
  }
}

}  // namespace
}  // namespace bagd::rib

namespace bagd::rib {
namespace {

TEST_CASE("group budget: turned on over the exact groups, it keeps the best in place and creates none",
          "[weights][budget][reload]") {
  for (const uint32_t seed : {5u, 77u}) {
    for (const uint32_t limit : {8u, 32u, 1000u}) {
      DYNAMIC_SECTION("seed " << seed << " limit " << limit) {
        std::mt19937 rng(seed);
        WantedModel wanted;
        for (int i = 0; i < 400; ++i) wanted.Set(P(i), RandomGroup(rng, 4));
        // No limit yet: the FIB holds every exact group.
        FibModel exact(SIZE_MAX);
        const FibUpdate first = wanted.Take();
        REQUIRE(exact.Apply(first).empty());
        const size_t held = exact.groups();
        REQUIRE(held > 8);
        GroupBudgetConfig c;
        c.max_groups = limit;
        c.reserve = 2;
        const absl::Time now = absl::FromUnixSeconds(1'800'000'000);
        GroupBudget on(c);
        std::vector<std::pair<net::Prefix, GroupId>> routes(wanted.routes().begin(), wanted.routes().end());
        on.Adopt(first.group_upserts, routes);
        const FibUpdate u = on.Apply(FibUpdate{}, One, now);
        // Nothing created: only in-place writes (none: same weights), route moves, deletes.
        CHECK(u.group_upserts.empty());
        for (const auto& [p, id] : u.route_upserts) CHECK(id < GroupBudget::kFirstSlotId);
        // Applied on the FIB that holds them all, it never goes above what it held.
        FibModel fib = exact;
        const std::string err = fib.Apply(u);
        INFO(err);
        CHECK(err.empty());
        CHECK(fib.peak() <= held);
        const GroupBudgetTotals t = on.Totals();
        CHECK(fib.groups() == t.installed);
        CHECK(t.installed <= std::max<size_t>(limit - c.reserve, 0));
        CHECK(t.unrouted_prefixes == 0);
        if (held <= limit - c.reserve) CHECK(u.empty());  // it all fits: nothing changes
        // Every prefix routed, over its own next hops, with the error the budget reports.
        for (const auto& [p, id] : wanted.routes()) {
          const Members* got = fib.Of(p);
          REQUIRE(got != nullptr);
          const Members& own = wanted.members(id);
          for (const auto& m : *got) {
            CHECK(std::any_of(own.begin(), own.end(), [&](const auto& o) { return o.next_hop == m.next_hop; }));
          }
          CHECK(on.Serving(id)->error == Approx(ShareError(own, *got)).margin(1e-12));
        }
        // As good as placing the same table from nothing.
        GroupBudget fresh(c);
        fresh.Apply(first, One, now);
        CHECK(t.worst_error == Approx(fresh.Totals().worst_error).margin(1e-12));
        CHECK(t.weighted_error == Approx(fresh.Totals().weighted_error).margin(1e-12));
        CHECK(t.installed == fresh.Totals().installed);
        // And it goes on as usual: churn after the switch stays under the limit.
        FibModel capped = fib;
        for (int round = 0; round < 10; ++round) {
          for (int k = 0; k < 30; ++k) wanted.Set(P(static_cast<int>(rng() % 500)), RandomGroup(rng, 4));
          const FibUpdate next = on.Apply(wanted.Take(), One, now + absl::Seconds(round));
          const std::string e2 = capped.Apply(next);
          INFO(e2);
          CHECK(e2.empty());
          CHECK(capped.groups() == on.Totals().installed);
          CHECK(capped.peak() <= std::max<size_t>(held, limit));
          CHECK(on.Totals().unrouted_prefixes == 0);
        }
      }
    }
  }
}

}  // namespace
}  // namespace bagd::rib

// Issue 40, part 5: the result must not depend on the order in which the wanted groups
// arrive. A full table moves slots between next-hop sets by make-before-break swaps.
namespace bagd::rib {
namespace {

// 200 prefixes, each with its own bandwidth per next hop (peer): the first 180 over next
// hops 1, 2 and 3, the last 20 over 1 and 2 (the report: three ExaBGP peers).
struct ArrivalTable {
  std::vector<std::vector<std::pair<int, uint32_t>>> members;  // per prefix: (next hop, bandwidth)
};

ArrivalTable MakeArrivalTable(uint32_t seed) {
  std::mt19937 rng(seed);
  ArrivalTable t;
  for (int i = 0; i < 200; ++i) {
    std::vector<std::pair<int, uint32_t>> m;
    const int width = i < 180 ? 3 : 2;
    for (int nh = 1; nh <= width; ++nh) m.emplace_back(nh, 1 + static_cast<uint32_t>(rng() % 10));
    t.members.push_back(std::move(m));
  }
  return t;
}

// Prefix i's members over the next hops that are up (`up[nh]`), weights reduced by their gcd
// (as the registry's quantizer gives the smallest integer weights for a ratio).
Members MembersUp(const ArrivalTable& t, int i, const std::array<bool, 4>& up) {
  Members m;
  for (const auto& [nh, bw] : t.members[i]) {
    if (up[nh]) m.push_back(FibGroupMember{Nh(nh), bw});
  }
  uint32_t g = 0;
  for (const auto& x : m) g = std::gcd(g, x.weight);
  for (auto& x : m) x.weight /= g;
  return m;
}

// Time passes through every due time of the budget up to `end` (as the weights stage's
// timer does), each one an update; never more than `max_steps` updates at one instant.
void RunRevisits(Harness& h, absl::Time& now, absl::Time end) {
  int same_instant = 0;
  absl::Time last = now;
  while (auto due = h.budget.NextDue(now)) {
    if (*due > end) break;
    now = std::max(now, *due);
    same_instant = now == last ? same_instant + 1 : 0;
    last = now;
    REQUIRE(same_instant < 100);  // no busy loop
    h.Step(now);
  }
  now = end;
}

// The same wanted groups placed at once on an empty table.
GroupBudgetTotals FreshPlacement(const WantedModel& wanted, const GroupBudgetConfig& c, absl::Time now) {
  FibUpdate u;
  for (const GroupId id : wanted.ids()) u.group_upserts.push_back(FibGroup{id, wanted.members(id)});
  for (const auto& [p, id] : wanted.routes()) u.route_upserts.emplace_back(p, id);
  GroupBudget fresh(c);
  fresh.Apply(u, One, now);
  return fresh.Totals();
}

TEST_CASE("group budget: peers up one at a time end as well as a fresh placement (issue 40 report)",
          "[weights][budget][swap]") {
  const ArrivalTable t = MakeArrivalTable(40);
  for (const std::array<int, 3> order : {std::array{1, 2, 3}, std::array{3, 2, 1}, std::array{2, 3, 1}}) {
    DYNAMIC_SECTION("peers up in order " << order[0] << order[1] << order[2]) {
      GroupBudgetConfig c;
      c.max_groups = 12;
      Harness h(c);
      absl::Time now = absl::FromUnixSeconds(1'800'000'000);
      std::array<bool, 4> up{};
      for (const int peer : order) {
        up[peer] = true;
        for (int i = 0; i < 200; ++i) {
          const Members m = MembersUp(t, i, up);
          if (m.empty()) {
            h.wanted.Withdraw(P(i));
          } else {
            h.wanted.Set(P(i), m);
          }
        }
        h.Step(now);
        RunRevisits(h, now, now + absl::Seconds(5));  // the next peer comes up 5 s later
      }
      RunRevisits(h, now, now + absl::Minutes(10));
      const GroupBudgetTotals got = h.budget.Totals();
      const GroupBudgetTotals fresh = FreshPlacement(h.wanted, c, now);
      std::vector<BaselineGroup> by_prefix;
      std::set<GroupId> seen;
      for (const auto& [p, id] : h.wanted.routes()) {
        if (seen.insert(id).second) by_prefix.push_back(BaselineGroup{h.wanted.members(id), 1});
      }
      const BaselineFit ff = FitFirstFit(by_prefix, c.max_groups - c.reserve);
      INFO("after revisits " << got.worst_error << " fresh " << fresh.worst_error << " first-fit " << ff.worst
                             << " promotions " << got.promotions);
      CHECK(h.fib.peak() <= c.max_groups);
      CHECK(got.installed <= c.max_groups - c.reserve);
      CHECK(got.worst_error <= 1.25 * fresh.worst_error + 1e-9);
      CHECK(got.worst_error * 2 <= ff.worst);
    }
  }
}

}  // namespace
}  // namespace bagd::rib

namespace bagd::rib {
namespace {

// A full table of 5 (1 kept free, 4 in steady state) whose slots all went to next hops 1, 2
// while only they were up; then three groups over 1, 2, 3 arrive, far apart. They get one
// slot (the reserve, then a cheap merge of two close 1, 2 groups gives it back); the other
// two are served by it with error 233 %.
struct SwapFixture {
  explicit SwapFixture(GroupBudgetConfig c) : h(c) {}
  void Arrive() {
    // 10:11, 11:10, 1:1 and 9:11.
    h.wanted.Set(P(1), Group({{1, 10}, {2, 11}}));
    h.wanted.Set(P(2), Group({{1, 11}, {2, 10}}));
    h.wanted.Set(P(3), Group({{1, 1}, {2, 1}}));
    h.wanted.Set(P(4), Group({{1, 9}, {2, 11}}));
    h.Step(t0);
    REQUIRE(h.budget.Totals().installed == 4);
    REQUIRE(h.budget.Totals().merged == 0);
    h.wanted.Set(P(11), Group({{1, 1}, {2, 1}, {3, 1}}));
    h.wanted.Set(P(12), Group({{1, 1}, {2, 1}, {3, 8}}));
    h.wanted.Set(P(13), Group({{1, 8}, {2, 1}, {3, 1}}));
    h.Step(t1);
    REQUIRE(h.budget.Totals().installed == 4);
    REQUIRE(ThreeHopSlots() == 1);
    REQUIRE(h.budget.Totals().worst_error == Approx((1.0 / 3 - 0.1) / 0.1));
  }
  size_t ThreeHopSlots() const {
    size_t n = 0;
    for (const FibGroup& s : h.budget.Slots()) n += s.members.size() == 3;
    return n;
  }
  // One update at `now`, applied to the FIB; returns it.
  FibUpdate Step(absl::Time now) {
    const FibUpdate u = h.budget.Apply(h.wanted.Take(), One, now);
    const std::string err = h.fib.Apply(u);
    INFO(err);
    REQUIRE(err.empty());
    h.Check();
    return u;
  }
  Harness h;
  const absl::Time t0 = absl::FromUnixSeconds(1'800'000'000);
  const absl::Time t1 = t0 + absl::Seconds(60);
};

TEST_CASE("group budget swap: a full table gives a slot to the worst merge, make-before-break", "[weights][budget][swap]") {
  GroupBudgetConfig c;
  c.max_groups = 5;
  c.reserve = 1;
  SwapFixture f(c);
  f.Arrive();
  // Held down: the merges are revisited 30 s after they were made, not before.
  const auto due = f.h.budget.NextDue(f.t1);
  REQUIRE(due.has_value());
  CHECK(*due == f.t1 + absl::Seconds(30));
  f.Step(f.t1 + absl::Seconds(10));
  CHECK(f.ThreeHopSlots() == 1);
  CHECK(f.h.budget.Totals().swaps == 0);
  // Then a swap: the worst merge gets a slot made in the reserve (one create: the FIB holds
  // 5 groups at the peak), the routes of the cheapest victim (a 1, 2 group that a close one
  // serves within 5.5 %) move, then the victim is deleted.
  absl::Time now = f.t1 + absl::Seconds(30);
  FibUpdate u = f.Step(now);
  CHECK(u.group_upserts.size() == 1);
  CHECK(u.group_deletes.size() == 1);
  CHECK(f.h.fib.peak() == c.max_groups);
  CHECK(f.h.budget.Totals().swaps == 1);
  CHECK(f.h.budget.Totals().installed == 4);
  CHECK(f.ThreeHopSlots() == 2);
  // The next revisit is at once; its victim would be the slot the first one's routes just
  // moved to: it is held down for 30 s (a dearer victim, the other slot over 1, 2, 3 at
  // 140 %, is not taken instead), and the revisit after it is due then.
  REQUIRE(f.h.budget.NextDue(now) == std::optional<absl::Time>(now));
  CHECK(f.Step(now).empty());
  REQUIRE(f.h.budget.NextDue(now) == std::optional<absl::Time>(now + absl::Seconds(30)));
  CHECK(f.Step(now + absl::Seconds(29)).empty());
  now += absl::Seconds(30);
  u = f.Step(now);
  CHECK(u.group_upserts.size() == 1);
  CHECK(u.group_deletes.size() == 1);
  CHECK(f.h.fib.peak() == c.max_groups);
  CHECK(f.h.budget.Totals().swaps == 2);
  // Every group over 1, 2, 3 has its own slot; the four over 1, 2 share one.
  CHECK(f.ThreeHopSlots() == 3);
  const GroupBudgetTotals t = f.h.budget.Totals();
  CHECK(t.worst_error < 0.2);
  CHECK(t.promotions == 2);
  // Nothing left worth a swap: one more revisit finds none (but for a victim held down until
  // now + 30 s), the one then none either, and none is due after it.
  CHECK(f.Step(now).empty());
  CHECK(f.h.budget.NextDue(now) == std::optional<absl::Time>(now + absl::Seconds(30)));
  now += absl::Seconds(30);
  CHECK(f.Step(now).empty());
  CHECK_FALSE(f.h.budget.NextDue(now).has_value());
  CHECK(f.Step(now + absl::Minutes(5)).empty());
  // The slot over 1, 2 is 11:10's (10:11 gets 10 % too much on next hop 1, 9:11 15.5 %); a
  // fresh placement centres it on 1:1 (10 %). No swap gains 5 % there: 15.5 % against 10 %.
  CHECK(t.worst_error == Approx(0.155));
  CHECK(FreshPlacement(f.h.wanted, c, now).worst_error == Approx(0.1));
}

TEST_CASE("group budget swap: not for less than min_gain, and a new min_gain is tried at once", "[weights][budget][swap]") {
  GroupBudgetConfig c;
  c.max_groups = 5;
  c.reserve = 1;
  c.min_gain = 2.3;  // the worst merge (233 %) would gain 233 %, its victim lose ~10 %: < 230 % less
  SwapFixture f(c);
  f.Arrive();
  absl::Time now = f.t1 + absl::Seconds(30);
  REQUIRE(f.h.budget.NextDue(f.t1) == std::optional<absl::Time>(now));
  CHECK(f.Step(now).empty());
  CHECK(f.h.budget.Totals().swaps == 0);
  // Tried and nothing changed since: no revisit is due (no busy loop on a full table).
  CHECK_FALSE(f.h.budget.NextDue(now).has_value());
  now += absl::Seconds(1);
  c.min_gain = 0.05;
  f.h.budget.Reconfigure(c);
  REQUIRE(f.h.budget.NextDue(now) == std::optional<absl::Time>(now));
  f.Step(now);
  CHECK(f.h.budget.Totals().swaps == 1);
  CHECK(f.ThreeHopSlots() == 2);
}

TEST_CASE("group budget swap: at most swaps_per_revisit per update, none with 0", "[weights][budget][swap]") {
  for (const uint32_t per : {0u, 1u, 2u}) {
    DYNAMIC_SECTION("swaps_per_revisit " << per) {
      // 8 groups, 2 kept free: room for two creates per update. Six groups over next hops
      // 1, 2 in three close pairs take the six slots; then 1:1:1, 1:1:8 and 8:1:1 arrive and
      // get one slot (the pair 1:1, 21:20 merges to give the reserve back).
      GroupBudgetConfig c;
      c.max_groups = 8;
      c.reserve = 2;
      c.swaps_per_revisit = per;
      Harness h(c);
      const absl::Time t0 = absl::FromUnixSeconds(1'800'000'000);
      h.wanted.Set(P(1), Group({{1, 1}, {2, 1}}));
      h.wanted.Set(P(2), Group({{1, 21}, {2, 20}}));
      h.wanted.Set(P(3), Group({{1, 1}, {2, 9}}));
      h.wanted.Set(P(4), Group({{1, 1}, {2, 8}}));
      h.wanted.Set(P(5), Group({{1, 9}, {2, 1}}));
      h.wanted.Set(P(6), Group({{1, 8}, {2, 1}}));
      h.Step(t0);
      REQUIRE(h.budget.Totals().merged == 0);
      h.wanted.Set(P(11), Group({{1, 1}, {2, 1}, {3, 1}}));
      h.wanted.Set(P(12), Group({{1, 1}, {2, 1}, {3, 8}}));
      h.wanted.Set(P(13), Group({{1, 8}, {2, 1}, {3, 1}}));
      const absl::Time t1 = t0 + absl::Seconds(60);
      h.Step(t1);
      auto three_hop_slots = [&] {
        size_t n = 0;
        for (const FibGroup& s : h.budget.Slots()) n += s.members.size() == 3;
        return n;
      };
      REQUIRE(three_hop_slots() == 1);
      REQUIRE(h.budget.Totals().installed == 6);
      // Two swaps are worth making, each taking one of the pairs' slots (error 10-11 %).
      absl::Time now = t1 + absl::Seconds(30);
      const FibUpdate u = h.budget.Apply(h.wanted.Take(), One, now);
      REQUIRE(h.fib.Apply(u).empty());
      h.Check();
      CHECK(h.budget.Totals().swaps == per);
      CHECK(u.group_upserts.size() == per);
      CHECK(u.group_deletes.size() == per);
      CHECK(h.fib.peak() <= c.max_groups);
      if (per == 0) {
        CHECK_FALSE(h.budget.NextDue(now).has_value());
        h.Step(now + absl::Minutes(10));
        CHECK(three_hop_slots() == 1);
      } else {
        if (per == 1) CHECK(h.budget.NextDue(now) == std::optional<absl::Time>(now));  // the next at once
        RunRevisits(h, now, now + absl::Minutes(10));
        CHECK(three_hop_slots() == 3);
        CHECK(h.budget.Totals().swaps == 2);
        CHECK(h.budget.Totals().worst_error < 0.12);
      }
    }
  }
}

TEST_CASE("group budget: revisit candidates are re-ranked after each promotion", "[weights][budget][swap]") {
  // Shares of next hop 1: X 0.025, Y 0.033 (25 % off on X's weights), Z 0.9. X, Y, Z arrive
  // when the four slots are taken: on 1:3 (X 900 %, Y 650 %), Z on 2:1 (233 %). Two slots free
  // up: X gets one and Y follows it (25 %); the second must go to Z (233 %), not to Y.
  GroupBudgetConfig c;
  c.max_groups = 6;
  c.reserve = 2;
  Harness h(c);
  const absl::Time t0 = absl::FromUnixSeconds(1'800'000'000);
  h.wanted.Set(P(1), Group({{1, 1}, {2, 1}}));
  h.wanted.Set(P(2), Group({{1, 1}, {2, 2}}));
  h.wanted.Set(P(3), Group({{1, 2}, {2, 1}}));
  h.wanted.Set(P(4), Group({{1, 1}, {2, 3}}));
  h.Step(t0);
  REQUIRE(h.budget.Totals().installed == 4);
  h.wanted.Set(P(5), Group({{1, 1}, {2, 39}}));  // X
  h.wanted.Set(P(6), Group({{1, 1}, {2, 29}}));  // Y
  h.wanted.Set(P(7), Group({{1, 9}, {2, 1}}));   // Z
  h.Step(t0 + absl::Seconds(1));
  REQUIRE(h.budget.Totals().merged == 3);
  h.wanted.Withdraw(P(1));
  h.wanted.Withdraw(P(2));
  h.Step(t0 + absl::Seconds(2));
  REQUIRE(h.budget.Totals().installed == 2);
  h.Step(t0 + absl::Seconds(31));
  const GroupId z = h.wanted.routes().at(P(7));
  const GroupId y = h.wanted.routes().at(P(6));
  CHECK_FALSE(h.budget.Serving(z)->merged);
  CHECK(h.budget.Serving(y)->merged);
  CHECK(h.budget.Serving(y)->error == Approx((1.0 / 30 - 1.0 / 40) / (1.0 / 30)));
  CHECK(h.budget.Totals().promotions == 2);
}

// The wanted groups of the report, arriving in random orders: every (prefix, peer)
// announcement shuffled, in random batches, time passing between them.
TEST_CASE("group budget: random arrival orders end within 1.25x of a fresh placement", "[weights][budget][swap]") {
  const ArrivalTable t = MakeArrivalTable(40);
  for (const uint32_t limit : {8u, 12u, 32u, 512u}) {
    double worst_ratio = 0;
    for (uint32_t seed = 1; seed <= 50; ++seed) {
      {
        INFO("limit " << limit << " seed " << seed);
        std::mt19937 rng(seed * 7919 + limit);
        GroupBudgetConfig c;
        c.max_groups = limit;
        Harness h(c);
        absl::Time now = absl::FromUnixSeconds(1'800'000'000);
        std::vector<std::pair<int, int>> events;  // (prefix, next hop)
        for (int i = 0; i < 200; ++i) {
          for (const auto& [nh, bw] : t.members[i]) events.emplace_back(i, nh);
        }
        std::shuffle(events.begin(), events.end(), rng);
        std::vector<std::array<bool, 4>> up(200);
        for (size_t k = 0; k < events.size();) {
          const size_t batch = 1 + rng() % 60;
          for (size_t e = k; e < std::min(events.size(), k + batch); ++e) {
            const auto [i, nh] = events[e];
            up[i][nh] = true;
            h.wanted.Set(P(i), MembersUp(t, i, up[i]));
          }
          k += batch;
          h.Step(now);
          RunRevisits(h, now, now + absl::Seconds(static_cast<int>(rng() % 40)));
        }
        RunRevisits(h, now, now + absl::Minutes(30));
        CHECK(h.fib.peak() <= limit);
        const GroupBudgetTotals got = h.budget.Totals();
        const GroupBudgetTotals fresh = FreshPlacement(h.wanted, c, now);
        INFO("after revisits " << got.worst_error << " fresh " << fresh.worst_error << " swaps " << got.swaps);
        CHECK(got.installed <= limit - c.reserve);
        CHECK(got.unrouted_prefixes == 0);
        CHECK(got.worst_error <= 1.25 * fresh.worst_error + 1e-9);
        if (fresh.worst_error > 0) worst_ratio = std::max(worst_ratio, got.worst_error / fresh.worst_error);
      }
    }
    WARN("limit " << limit << ": worst error after revisits / fresh placement, largest over 50 orders: " << worst_ratio);
  }
}

}  // namespace
}  // namespace bagd::rib
