// bagctl numbers the decision steps it is told by name; the names and their order are
// rib/decision.h's. This keeps the two from drifting apart.
#include <catch2/catch.hpp>

#include "rib/decision.h"
#include "tools/bagctl/route_render.h"

TEST_CASE("bagctl route render: decision step numbers are the RIB's", "[control][render][routes]") {
  using bagd::rib::DecisionStep;
  for (int n = 1; n <= static_cast<int>(DecisionStep::kPathId); ++n) {
    const char* name = bagd::rib::DecisionStepName(static_cast<DecisionStep>(n));
    INFO(name);
    CHECK(bagd::bagctl::DecisionStepNumber(name) == n);
  }
  CHECK(bagd::bagctl::DecisionStepNumber(bagd::rib::DecisionStepName(DecisionStep::kNone)) == 0);
}
