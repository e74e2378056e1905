// Other ways to turn bandwidths into integer weights, kept to measure Quantize against
// (tests/rib/quantize_test.cc, bench/wcmp_quality.cc). Not used by the daemon.
// Each takes the same inputs as Quantize and returns weights divided by their GCD with
// their MaxRelativeError.
#pragma once

#include <span>

#include "rib/weights/quantize.h"

namespace bagd::rib {

// Scale so the weights add up to about the budget (without one: so the largest member gets
// max_weight, as FRR >= 10 does with 255), round to nearest, clamp to [1, max_weight].
// The sum may end up above the budget: rounding and the clamp to 1 add up.
QuantizedWeights QuantizeNaive(std::span<const double> bandwidths, const QuantizeLimits& limits);

// FBOSS "optimized UCMP" (fboss/agent/state/RouteNextHopEntry.cpp, normalize(), with
// --optimized_ucmp and ucmp_max_error 0.05); ecmp_width is the budget, or without one the
// largest sum at which the largest member fits max_weight. With a budget, max_weight is
// ignored, as FBOSS does. One change: a weight never goes below 1 (FBOSS drops a next hop
// whose weight reaches 0); with more members than the budget the sum stays above it.
QuantizedWeights QuantizeFbossGreedy(std::span<const double> bandwidths, const QuantizeLimits& limits);

// Every weight vector with 1 <= w_i <= max_weight and sum <= budget, smallest sum first;
// the first one with the smallest max relative error (1e-12 relative) wins. Subtrees
// that already have a member worse than the best found are skipped, which cannot change
// the answer. For tests: n <= 6 and 1 <= budget <= 64 only (asserted).
QuantizedWeights QuantizeExhaustive(std::span<const double> bandwidths, const QuantizeLimits& limits);

// WCMP (Zhou et al., EuroSys'14) Algorithm 1 as FabricEval implements it
// (localTE/group_reduction.py): start from ECMP (all ones) and add 1 to the member whose
// own oversubscription after the increment is smallest, until the group's oversubscription
// delta <= theta_max. When the
// budget (or max_weight) runs out first, theta is raised in steps of 0.001 until a prefix
// of the same sequence fits, as the paper's Algorithm 4 (TableFitting) does for a table.
// The paper's TableFitting starts at theta_max = 1.002.
QuantizedWeights QuantizeWcmpAlgorithm1(std::span<const double> bandwidths, const QuantizeLimits& limits,
                                        double theta_max);

}  // namespace bagd::rib
