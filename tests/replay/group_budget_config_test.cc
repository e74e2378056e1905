// The group budget's settings as the daemon takes them from the config and the backend
// (bgpd/daemon/config_translation.h WeightsConfigOf): the smaller limit wins, 0 on either
// side means "not known there"; the reserve never swallows a small backend limit.
#include <catch2/catch.hpp>

#include "bgpd/daemon/config_translation.h"

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

}  // namespace
}  // namespace bagd::daemon
