// Integer weights for a weighted-ECMP next-hop group (design.md rule 6): the members'
// bandwidths become small integers whose shares are as close as the FIB allows to the
// bandwidth shares. Pure: no I/O, no clock, no allocation beyond the result and scratch.
//
// The FIB limits what it can hold: Linux nexthop groups take weights 1..255 before 6.12 and
// 1..65535 from 6.12; a switch ASIC spreads a group over a fixed number of ECMP table
// entries (64, 128, 256, 512), so the weights of one group must sum to at most that.
//
// Quality is the worst member's relative error: a member that gets 5 % more than its share
// of the traffic is 5 % more likely to congest, whatever the others get. That is the metric
// FBOSS uses for its `ucmp_max_error`, and what Quantize minimises exactly (see
// docs/weights-quantization.md for the algorithm and its cost).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace bagd::rib {

struct QuantizeLimits {
  // Per member: 65535 (kernel 16-bit nexthop weights), 255 (8-bit), any value >= 1.
  uint32_t max_weight = 65535;
  // Most the weights of one group may add up to (hardware ECMP table entries per group:
  // 64, 128, 256, 512); 0: no budget, only max_weight bounds the weights.
  uint32_t budget = 0;
};

struct QuantizedWeights {
  std::vector<uint32_t> weights;  // same order as the input, each >= 1, divided by their GCD
  double max_error = 0;           // MaxRelativeError of `weights`
};

// `bandwidths`: one per member, each > 0 and finite (callers leave drained members out);
// at least one. Anything else is a bug in the caller (assert).
//
// Returns the weights that minimise the largest relative error of a member's share,
// subject to 1 <= w_i <= max_weight and, with a budget, sum(w) <= budget:
// - Exact ratios first: bandwidths that are integers (bytes/s such as 1.25e10 for 100G)
//   are divided by their GCD; if that fits the limits it is the answer, error 0
//   (100G:100G:400G -> 1:1:4; 1000:999 stays 1000:999 with 16-bit weights).
// - With a budget: the optimum over every sum T <= budget; among equal errors (within
//   1e-12 relative) the smallest sum wins.
// - Without a budget: the smallest sum whose error is <= 0.1 % (kMaxErrorGoal), so
//   weights stay small when they can; if no sum reaches 0.1 %, the optimum over every sum
//   the max_weight allows. (With 8-bit weights and a ratio they cannot express, that
//   optimum may load many members to spare one tiny member: see the docs on L1.)
// - More members than the budget cannot fit: the result is all ones (sum n > budget) with
//   its error; the caller decides whether to install it or fall back.
QuantizedWeights Quantize(std::span<const double> bandwidths, const QuantizeLimits& limits);

// The no-budget search stops at the first sum whose max relative error is at most this.
inline constexpr double kMaxErrorGoal = 1e-3;

// How Quantize got its answer (for benchmarks and debugging).
struct QuantizeStats {
  bool exact_ratio = false;  // the bandwidths' own integer ratio fit the limits
  bool goal_met = false;     // no budget: the first sum within kMaxErrorGoal
  bool work_limit = false;   // the search stopped at kQuantizeWorkLimit: best found, not proven best
  uint64_t work = 0;         // member-steps spent (see kQuantizeWorkLimit)
};
QuantizedWeights Quantize(std::span<const double> bandwidths, const QuantizeLimits& limits, QuantizeStats* stats);

// A safety limit on the search, in member-steps (one member looked at for one sum or one
// interval of sums; 6-10 ns each on a 2-vCPU EPYC VM, so 3-5 ms). The hardest inputs
// measured (docs/weights-quantization.md) need about half of it; reaching it returns the
// best weights found so far instead of the proven optimum, and sets work_limit.
inline constexpr uint64_t kQuantizeWorkLimit = uint64_t{1} << 19;

// What every quantizer (Quantize and the baselines in quantize_baselines.h) returns for
// weights `w` of `bandwidths`: `w` divided by their GCD, with its MaxRelativeError.
QuantizedWeights FinishQuantized(std::span<const double> bandwidths, std::vector<uint32_t> w);

// Scores of a weight vector against the bandwidths it stands for (same length, weights >= 1).
// s_i = b_i / sum(b) is the ideal share, p_i = w_i / sum(w) the share the FIB gives.
// max_i |p_i - s_i| / s_i
double MaxRelativeError(std::span<const double> bandwidths, std::span<const uint32_t> weights);
// sum_i |p_i - s_i|
double L1Error(std::span<const double> bandwidths, std::span<const uint32_t> weights);
// Oversubscription delta of the WCMP paper (Zhou et al., EuroSys'14, eq. 2): max p_i / s_i,
// how much more traffic than its fair share the most loaded member carries (1 = perfect).
double Oversubscription(std::span<const double> bandwidths, std::span<const uint32_t> weights);

}  // namespace bagd::rib
