// What a group table does without least-error merging, kept to measure GroupBudget against
// (tests/rib/group_budget_test.cc, bench/group_budget_bench.cc). Not used by the daemon.
// Both see the wanted groups in arrival order and give the first `slots` distinct ones a
// slot (a group whose weights are installed already shares that slot, error 0).
#pragma once

#include <span>
#include <vector>

#include "rib/fib_update.h"

namespace bagd::rib {

struct BaselineGroup {
  std::vector<FibGroupMember> members;  // its own installed weights
  double traffic = 1;                   // prefixes (or bandwidth) it carries
};

struct BaselineFit {
  std::vector<double> error;  // per group, ShareError against its own weights
  size_t installed = 0;
  double worst = 0;
  double weighted = 0;  // traffic-weighted mean
};

// A group that does not fit goes to the first installed group with the same next hops; if
// there is none, to plain ECMP over its next hops.
BaselineFit FitFirstFit(std::span<const BaselineGroup> groups, size_t slots);
// A group that does not fit gets plain ECMP over its next hops (what an ASIC falls back to).
BaselineFit FitEcmpOverflow(std::span<const BaselineGroup> groups, size_t slots);

}  // namespace bagd::rib
