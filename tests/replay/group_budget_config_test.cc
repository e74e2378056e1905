// The group budget's settings as the daemon takes them from the config and the backend
// (bgpd/daemon/config_translation.h WeightsConfigOf): the smaller limit wins, 0 on either
// side means "not known there"; the reserve never swallows a small backend limit.
#include <catch2/catch.hpp>

#include "bgpd/daemon/config_translation.h"
#include "bgpd/daemon/rib_view.h"
#include "rib/attribute_store.h"
#include "rib/rib.h"

namespace bagd::daemon {
namespace {

rib::GroupBudgetConfig BudgetOf(uint32_t config_limit, uint32_t backend_limit, int reserve = -1) {
  config::v1::Config c;
  c.mutable_fib()->set_max_groups(config_limit);
  if (reserve >= 0) c.mutable_fib()->set_group_reserve(static_cast<uint32_t>(reserve));
  auto w = WeightsConfigOf(c, 65535, backend_limit);
  REQUIRE(w.ok());
  return w->budget;
}

TEST_CASE("group budget: the effective limit is the smaller of config and backend", "[daemon][budget]") {
  CHECK(BudgetOf(0, 0).max_groups == 0);        // kernel, nothing configured: no budget
  CHECK(BudgetOf(512, 0).max_groups == 512);    // kernel: the config's
  CHECK(BudgetOf(0, 4096).max_groups == 4096);  // SONiC, nothing configured: the switch's
  CHECK(BudgetOf(512, 4096).max_groups == 512);
  CHECK(BudgetOf(8192, 4096).max_groups == 4096);
  CHECK(BudgetOf(512, 0).reserve == 2);
  CHECK(BudgetOf(512, 0, 5).reserve == 5);
  CHECK(BudgetOf(0, 2).reserve == 1);  // a backend limit of 2 with the default reserve: 1 left for routes
}

TEST_CASE("group budget: scope, weight and the damping it borrows", "[daemon][budget]") {
  config::v1::Config c;
  c.mutable_fib()->set_max_groups(64);
  c.mutable_fib()->set_group_merge(config::v1::Fib::GROUP_MERGE_SUBSET);
  c.mutable_fib()->set_group_merge_weight(config::v1::Fib::GROUP_MERGE_WEIGHT_BANDWIDTH);
  c.mutable_damping()->set_increase_hold_down(45);
  c.mutable_damping()->set_min_change_percent(10);
  auto w = WeightsConfigOf(c);
  REQUIRE(w.ok());
  CHECK(w->budget.scope == rib::MergeScope::kSubset);
  CHECK(w->budget.weight_by == rib::MergeWeight::kBandwidth);
  CHECK(w->budget.improve_after == absl::Seconds(45));
  CHECK(w->budget.min_gain == Approx(0.10));
}

TEST_CASE("group budget: swaps per revisit from fib.group_swaps_per_revisit", "[daemon][budget][swap]") {
  config::v1::Config c;
  c.mutable_fib()->set_max_groups(64);
  auto w = WeightsConfigOf(c);
  REQUIRE(w.ok());
  CHECK(w->budget.swaps_per_revisit == 2);  // the default
  c.mutable_fib()->set_group_swaps_per_revisit(0);
  w = WeightsConfigOf(c);
  REQUIRE(w.ok());
  CHECK(w->budget.swaps_per_revisit == 0);  // no swaps
  c.mutable_fib()->set_group_swaps_per_revisit(7);
  w = WeightsConfigOf(c);
  REQUIRE(w.ok());
  CHECK(w->budget.swaps_per_revisit == 7);
}

TEST_CASE("group budget: show nexthop-groups says how a merged group is served", "[daemon][budget]") {
  rib::DecisionConfig decision;
  decision.maximum_paths_ebgp = 8;
  decision.as_path_multipath_relax = true;
  rib::AttributeStore store;  // outlives the RIB, which holds its attribute sets
  rib::Rib rib(65000, decision);
  std::vector<rib::PeerIndex> peers;
  for (int i = 1; i <= 2; ++i) {
    rib::PeerInfo info;
    info.source.address = *net::IpAddress::Parse(absl::StrCat("10.0.0.", i));
    info.source.ebgp = true;
    info.source.router_id = static_cast<uint32_t>(i);
    info.asn = 65000 + static_cast<uint32_t>(i);
    peers.push_back(rib.AddPeer(info));
  }
  // 1:1, 1:8 and 5:4 (Gbit/s per next hop) for three prefixes; two slots in steady state.
  const std::vector<std::tuple<const char*, double, double>> routes = {
      {"10.1.0.0/24", 4, 4}, {"10.2.0.0/24", 1, 8}, {"10.4.0.0/24", 5, 4}};
  for (const auto& [prefix, a, b] : routes) {
    for (int i = 0; i < 2; ++i) {
      wire::PathAttributes attrs;
      attrs.origin = wire::Origin::kIgp;
      attrs.as_path = wire::AsPath{{{wire::AsSegmentType::kSequence, {65001u + static_cast<uint32_t>(i)}}}};
      attrs.next_hop = *net::IpAddress::Parse(absl::StrCat("10.0.0.", i + 1));
      attrs.extended_communities.push_back(
          wire::LinkBandwidth::FromBitsPerSecond(65001 + i, (i == 0 ? a : b) * 1e9, true).ToExtendedCommunity());
      const net::Nlri n{*net::Prefix::Parse(prefix), 0};
      rib.Announce(peers[i], std::span<const net::Nlri>(&n, 1), store.Intern(attrs));
    }
  }
  rib::WeightsConfig c;
  c.budget.max_groups = 3;
  c.budget.reserve = 1;
  rib::NextHopGroupRegistry groups(c);
  std::vector<rib::PrefixMembers> batch;
  for (const auto& ch : rib.TakeChanges()) batch.push_back(rib::MembersOf(rib, ch.prefix));
  const absl::Time now = absl::FromUnixSeconds(1'800'000'000);
  groups.Update(batch, now);
  groups.TakeFibUpdate();

  control::v1::ListNextHopGroupsRequest one;
  one.set_prefix("10.4.0.0/24");
  auto r = ListNextHopGroups(rib, groups, one, now, [](rib::GroupId id) { return std::optional<uint32_t>(id + 7); });
  REQUIRE(r.ok());
  REQUIRE(r->groups_size() == 1);
  const auto& g = r->groups(0);
  // 5:4 is closer to 1:1 (b 50 % instead of 44.4 %) than to 1:8.
  CHECK(g.merged());
  CHECK(g.merge_error() == Approx(0.125));
  CHECK(g.served_as() == groups.GroupOf(*net::Prefix::Parse("10.1.0.0/24"))->id);
  CHECK(g.served_by() != g.id());
  CHECK(g.fib_object() == g.served_by() + 7);  // the object of the group that serves it
  REQUIRE(g.served_members_size() == 2);
  CHECK(g.served_members(0).weight() == 1);
  CHECK(g.served_members(1).weight() == 1);
  CHECK(g.members(0).weight() == 5);  // its own weights are still shown
  CHECK(r->budget().max_groups() == 3);
  CHECK(r->budget().installed() == 2);
  CHECK(r->budget().wanted() == 3);
  CHECK(r->budget().merged() == 1);
  CHECK(r->budget().worst_error() == Approx(0.125));

  control::v1::ListNextHopGroupsRequest own;
  own.set_prefix("10.2.0.0/24");
  auto r2 = ListNextHopGroups(rib, groups, own, now);
  REQUIRE(r2.ok());
  CHECK_FALSE(r2->groups(0).merged());
  CHECK(r2->groups(0).merge_error() == 0);

  // Without a budget none of it is set.
  rib::NextHopGroupRegistry plain{rib::WeightsConfig{}};
  plain.Update(batch, now);
  auto r3 = ListNextHopGroups(rib, plain, one, now);
  REQUIRE(r3.ok());
  CHECK_FALSE(r3->has_budget());
  CHECK(r3->groups(0).served_by() == 0);
}

}  // namespace
}  // namespace bagd::daemon
