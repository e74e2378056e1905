// Weight quantization (rib/weights/quantize.h): exact ratios, the FIB's limits, and
// property tests against brute force (small groups) and against the FBOSS greedy, naive
// rounding and WCMP Algorithm 1 (any size): Quantize must never lose to any of them.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <utility>
#include <vector>

#include "rib/weights/quantize.h"
#include "rib/weights/quantize_baselines.h"

using namespace bagd::rib;

namespace {

constexpr double kGbps = 1e9 / 8;  // link bandwidth communities carry bytes per second

uint64_t SumOf(const std::vector<uint32_t>& w) { return std::accumulate(w.begin(), w.end(), uint64_t{0}); }

uint64_t GcdOf(const std::vector<uint32_t>& w) {
  uint64_t g = 0;
  for (uint32_t x : w) g = std::gcd(g, uint64_t{x});
  return g;
}

// Everything Quantize promises about any result.
void CheckWellFormed(const std::vector<double>& b, const QuantizeLimits& limits, const QuantizedWeights& q) {
  REQUIRE(q.weights.size() == b.size());
  for (uint32_t w : q.weights) {
    REQUIRE(w >= 1);
    REQUIRE(w <= limits.max_weight);
  }
  REQUIRE(GcdOf(q.weights) == 1);
  if (limits.budget > 0 && b.size() <= limits.budget) REQUIRE(SumOf(q.weights) <= limits.budget);
  REQUIRE(q.max_error == Approx(MaxRelativeError(b, q.weights)).margin(1e-12));
}

// Groups as they come from the network: link speeds, LAGs with members down (k/8 of the
// speed), and arbitrary values in [1e8, 1e11] bytes/s.
class GroupGenerator {
 public:
  explicit GroupGenerator(uint64_t seed) : rng_(seed) {}

  std::vector<double> Make(size_t n) {
    static constexpr double kSpeeds[] = {10, 25, 40, 100, 200, 400, 800};
    std::vector<double> b;
    const int kind = Uniform(0, 2);
    for (size_t i = 0; i < n; ++i) {
      if (kind == 0) {
        b.push_back(std::uniform_real_distribution<double>(1e8, 1e11)(rng_));
      } else {
        double v = kSpeeds[Uniform(0, 6)] * kGbps;
        if (kind == 2 && Uniform(0, 3) == 0) v = v * Uniform(1, 7) / 8;  // a degraded LAG
        b.push_back(v);
      }
    }
    return b;
  }

  int Uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  std::mt19937_64& rng() { return rng_; }

 private:
  std::mt19937_64 rng_;
};

}  // namespace

TEST_CASE("Quantize: exact ratios come out exact and reduced", "[quantize]") {
  const QuantizeLimits kernel16;  // 65535, no budget

  SECTION("100G, 100G, 400G -> 1:1:4") {
    const std::vector<double> b{100 * kGbps, 100 * kGbps, 400 * kGbps};
    QuantizeStats stats;
    const QuantizedWeights q = Quantize(b, kernel16, &stats);
    CHECK(q.weights == std::vector<uint32_t>{1, 1, 4});
    CHECK(q.max_error == 0);
    CHECK(stats.exact_ratio);
    // Within a 64-entry table as well.
    CHECK(Quantize(b, {.max_weight = 65535, .budget = 64}).weights == std::vector<uint32_t>{1, 1, 4});
  }
  SECTION("10G, 25G, 40G, 100G -> 2:5:8:20") {
    const std::vector<double> b{10 * kGbps, 25 * kGbps, 40 * kGbps, 100 * kGbps};
    const QuantizedWeights q = Quantize(b, kernel16);
    CHECK(q.weights == std::vector<uint32_t>{2, 5, 8, 20});
    CHECK(q.max_error == 0);
  }
  SECTION("a degraded LAG: 7/8 of 400G next to 400G -> 7:8") {
    const std::vector<double> b{400 * kGbps * 7 / 8, 400 * kGbps};
    CHECK(Quantize(b, kernel16).weights == std::vector<uint32_t>{7, 8});
  }
  SECTION("a single member -> 1") {
    for (double v : {1.0, 3.7e9, 5e10, 1e-3}) {
      const std::vector<double> b{v};
      const QuantizedWeights q = Quantize(b, kernel16);
      CHECK(q.weights == std::vector<uint32_t>{1});
      CHECK(q.max_error == 0);
      CHECK(Quantize(b, {.max_weight = 255, .budget = 64}).weights == std::vector<uint32_t>{1});
    }
  }
  SECTION("equal members -> all ones, integral or not") {
    for (double v : {1.25e10, 1.5, 0.1}) {
      const std::vector<double> b(5, v);
      const QuantizedWeights q = Quantize(b, kernel16);
      CHECK(q.weights == std::vector<uint32_t>(5, 1));
      CHECK(q.max_error == Approx(0).margin(1e-15));
      CHECK(Quantize(b, {.max_weight = 255, .budget = 128}).weights == std::vector<uint32_t>(5, 1));
    }
  }
  SECTION("an exact ratio of non-integral values is found by the search") {
    const std::vector<double> b{1.5, 2.5};
    CHECK(Quantize(b, kernel16).weights == std::vector<uint32_t>{3, 5});
    CHECK(Quantize(b, {.max_weight = 255, .budget = 8}).weights == std::vector<uint32_t>{3, 5});
    CHECK(Quantize(b, kernel16).max_error == Approx(0).margin(1e-15));
  }
  SECTION("without a budget, the first sum within 0.1 % wins over a larger exact one") {
    const std::vector<double> b{1000, 999.5};  // exactly 2000:1999, but 1:1 is within 0.025 %
    const QuantizedWeights q = Quantize(b, kernel16);
    CHECK(q.weights == std::vector<uint32_t>{1, 1});
    CHECK(q.max_error == Approx(0.25 / 999.5));
    // With a budget the optimum counts, whatever the sum.
    CHECK(Quantize(b, {.max_weight = 65535, .budget = 4000}).weights == std::vector<uint32_t>{2000, 1999});
  }
  SECTION("1000:999 stays exact with 16-bit weights (why the kernel widened them)") {
    const std::vector<double> b{1000, 999};
    const QuantizedWeights q = Quantize(b, kernel16);
    CHECK(q.weights == std::vector<uint32_t>{1000, 999});
    CHECK(q.max_error == 0);
    // With 8-bit weights it cannot be exact; 1:1 is within 0.05 %, the smallest sum that
    // meets the 0.1 % goal.
    const QuantizedWeights q8 = Quantize(b, {.max_weight = 255});
    CHECK(q8.weights == std::vector<uint32_t>{1, 1});
    CHECK(q8.max_error == Approx(0.5 / 999));  // the 999 member: 1/2 instead of 999/1999
  }
}

TEST_CASE("Quantize: the FIB's limits", "[quantize]") {
  SECTION("8-bit weights and a 1:1000 ratio: 1:255, with the error it has") {
    const std::vector<double> b{1e8, 1e11};
    const QuantizeLimits limits{.max_weight = 255};
    const QuantizedWeights q = Quantize(b, limits);
    CheckWellFormed(b, limits, q);
    // The small member cannot get less than 1/256 of the traffic; its share is 1/1001.
    CHECK(q.weights == std::vector<uint32_t>{1, 255});
    CHECK(q.max_error == Approx(1001.0 / 256 - 1));
  }
  SECTION("budget 64 with 7 members") {
    const std::vector<double> b{400 * kGbps, 400 * kGbps * 7 / 8, 100 * kGbps, 100 * kGbps,
                                40 * kGbps,  25 * kGbps,          1.7e9};
    const QuantizeLimits limits{.max_weight = 65535, .budget = 64};
    const QuantizedWeights q = Quantize(b, limits);
    CheckWellFormed(b, limits, q);
    CHECK(SumOf(q.weights) <= 64);
    CHECK(q.max_error <= QuantizeFbossGreedy(b, limits).max_error);
    CHECK(q.max_error <= QuantizeWcmpAlgorithm1(b, limits, 1.002).max_error);
  }
  SECTION("more members than the budget: all ones, and its error") {
    const std::vector<double> b{1e9, 2e9, 3e9, 4e9, 5e9};
    const QuantizedWeights q = Quantize(b, {.max_weight = 65535, .budget = 4});
    CHECK(q.weights == std::vector<uint32_t>(5, 1));
    CHECK(q.max_error == Approx(MaxRelativeError(b, q.weights)));
    CHECK(q.max_error == Approx((0.2 - 1.0 / 15) / (1.0 / 15)));  // the 1e9 member gets 1/5, not 1/15
  }
  SECTION("exactly as many members as the budget: all ones") {
    const std::vector<double> b{1e9, 2e9, 3e9, 4e9};
    CHECK(Quantize(b, {.max_weight = 65535, .budget = 4}).weights == std::vector<uint32_t>(4, 1));
  }
  SECTION("max_weight 1 leaves only ECMP") {
    const std::vector<double> b{1e9, 7e9, 3.3e9};
    const QuantizedWeights q = Quantize(b, {.max_weight = 1});
    CHECK(q.weights == std::vector<uint32_t>(3, 1));
  }
  SECTION("an exact ratio over the budget is not used") {
    const std::vector<double> b{10 * kGbps, 25 * kGbps, 40 * kGbps, 100 * kGbps};  // 2:5:8:20, sum 35
    const QuantizeLimits limits{.max_weight = 65535, .budget = 32};
    const QuantizedWeights q = Quantize(b, limits);
    CheckWellFormed(b, limits, q);
    CHECK(q.max_error > 0);
    CHECK(q.max_error == Approx(QuantizeExhaustive(b, limits).max_error).margin(1e-12));
  }
}

TEST_CASE("Quantize: the error measures", "[quantize]") {
  const std::vector<double> b{1, 3};
  const std::vector<uint32_t> ecmp{1, 1};  // shares 1/2, 1/2 instead of 1/4, 3/4
  CHECK(MaxRelativeError(b, ecmp) == Approx(1.0));
  CHECK(L1Error(b, ecmp) == Approx(0.5));
  CHECK(Oversubscription(b, ecmp) == Approx(2.0));
  const std::vector<uint32_t> exact{2, 6};
  CHECK(MaxRelativeError(b, exact) == Approx(0).margin(1e-15));
  CHECK(L1Error(b, exact) == Approx(0).margin(1e-15));
  CHECK(Oversubscription(b, exact) == Approx(1.0));
}

TEST_CASE("Baselines behave as their sources describe", "[quantize]") {
  const std::vector<double> b{100 * kGbps, 100 * kGbps, 400 * kGbps};
  const QuantizeLimits table64{.max_weight = 65535, .budget = 64};
  // FBOSS: 1000:1000:4000 scaled by 64/6000 rounding up is 11:11:43 (65); one unit off the
  // member most over its share (the last of the two 11s) gives 11:10:43, max error 6.25 %
  // under but only +3.1 % over, below ucmp_max_error, so it stops.
  CHECK(QuantizeFbossGreedy(b, table64).weights == std::vector<uint32_t>{11, 10, 43});
  // Naive rounding to a sum of 64: 10.67, 10.67, 42.67 -> 11, 11, 43 (65, over the budget).
  CHECK(QuantizeNaive(b, table64).weights == std::vector<uint32_t>{11, 11, 43});
  // WCMP Algorithm 1 reaches delta 1 at 1:1:4.
  const QuantizedWeights wcmp = QuantizeWcmpAlgorithm1(b, table64, 1.002);
  CHECK(wcmp.weights == std::vector<uint32_t>{1, 1, 4});
  CHECK(Oversubscription(b, wcmp.weights) == Approx(1.0));
  // The brute force agrees with the exact ratio.
  CHECK(QuantizeExhaustive(b, table64).weights == std::vector<uint32_t>{1, 1, 4});
}

TEST_CASE("Quantize equals brute force on small groups", "[quantize]") {
  GroupGenerator gen(20261129);
  int compared = 0, with_small_max_weight = 0, over_budget = 0;
  for (int round = 0; round < 3000; ++round) {
    const size_t n = gen.Uniform(1, 6);
    QuantizeLimits limits{.max_weight = 65535, .budget = static_cast<uint32_t>(gen.Uniform(2, 64))};
    if (gen.Uniform(0, 4) == 0) {
      limits.max_weight = gen.Uniform(1, 16);
      ++with_small_max_weight;
    }
    const std::vector<double> b = gen.Make(n);
    const QuantizedWeights q = Quantize(b, limits);
    const QuantizedWeights ex = QuantizeExhaustive(b, limits);
    INFO("round " << round << " n " << n << " budget " << limits.budget << " max_weight " << limits.max_weight);
    CheckWellFormed(b, limits, q);
    REQUIRE(q.max_error == Approx(ex.max_error).margin(1e-9));
    if (n > limits.budget) {
      ++over_budget;
      REQUIRE(q.weights == std::vector<uint32_t>(n, 1));
    } else {
      REQUIRE(SumOf(q.weights) <= limits.budget);
      // Among equally good vectors both take the one with the smallest sum.
      REQUIRE(SumOf(q.weights) == SumOf(ex.weights));
    }
    ++compared;
  }
  CHECK(compared == 3000);
  CHECK(with_small_max_weight > 300);
  CHECK(over_budget > 0);
}

TEST_CASE("Without a budget: the optimum when 0.1 % is out of reach, else the smallest sum that reaches it",
          "[quantize]") {
  GroupGenerator gen(7);
  int optimum_cases = 0, goal_cases = 0;
  for (int round = 0; round < 2000; ++round) {
    // max_weight * n <= 64: brute force over every sum covers everything the max_weight allows.
    const size_t n = gen.Uniform(1, 6);
    const QuantizeLimits limits{.max_weight = static_cast<uint32_t>(gen.Uniform(1, static_cast<int>(64 / n)))};
    const std::vector<double> b = gen.Make(n);
    const QuantizedWeights q = Quantize(b, limits);
    const QuantizedWeights ex = QuantizeExhaustive(b, {.max_weight = limits.max_weight, .budget = 64});
    INFO("round " << round << " n " << n << " max_weight " << limits.max_weight);
    CheckWellFormed(b, limits, q);
    if (ex.max_error > kMaxErrorGoal) {
      ++optimum_cases;
      REQUIRE(q.max_error == Approx(ex.max_error).margin(1e-9));
      REQUIRE(SumOf(q.weights) == SumOf(ex.weights));
    } else {
      ++goal_cases;
      REQUIRE(q.max_error <= kMaxErrorGoal * (1 + 1e-9));
      // No smaller sum reaches the goal.
      const uint64_t sum = SumOf(q.weights);
      if (sum > n) {
        const QuantizeLimits smaller{.max_weight = limits.max_weight, .budget = static_cast<uint32_t>(sum - 1)};
        REQUIRE(QuantizeExhaustive(b, smaller).max_error > kMaxErrorGoal);
      }
    }
  }
  CHECK(optimum_cases > 100);
  CHECK(goal_cases > 100);
}

TEST_CASE("Without a budget, 16-bit weights reach 0.1 % when the ratios allow it", "[quantize]") {
  GroupGenerator gen(99);
  for (int round = 0; round < 300; ++round) {
    const size_t n = gen.Uniform(2, 64);
    std::vector<double> b;
    // Largest / smallest <= 10: the smallest member can have 6553 units, its rounding error
    // alone is under 0.01 %.
    for (size_t i = 0; i < n; ++i) b.push_back(std::uniform_real_distribution<double>(1e10, 1e11)(gen.rng()));
    const QuantizeLimits limits;
    QuantizeStats stats;
    const QuantizedWeights q = Quantize(b, limits, &stats);
    INFO("round " << round << " n " << n);
    CheckWellFormed(b, limits, q);
    REQUIRE(q.max_error <= kMaxErrorGoal);
    REQUIRE(stats.goal_met);
    // And no smaller sum does (the budgeted search is the exact optimum below that sum).
    const uint64_t sum = SumOf(q.weights);
    if (sum > n) {
      REQUIRE(Quantize(b, {.max_weight = 65535, .budget = static_cast<uint32_t>(sum - 1)}).max_error > kMaxErrorGoal);
    }
  }
}

TEST_CASE("Without a budget, larger max_weight: Quantize equals brute force over every vector", "[quantize]") {
  // Every vector in [1, max_weight]^n, independent of any search over sums.
  auto brute = [](const std::vector<double>& b, uint32_t max_w) {
    const size_t n = b.size();
    const double total = std::accumulate(b.begin(), b.end(), 0.0);
    std::vector<uint32_t> w(n, 1), best_w;
    double best = 1e300;
    uint64_t best_sum = 0;
    for (;;) {
      const uint64_t sum = SumOf(w);
      double e = 0;
      for (size_t i = 0; i < n; ++i) e = std::max(e, std::abs(double(w[i]) / sum - b[i] / total) / (b[i] / total));
      if (e < best * (1 - 1e-12) || (e <= best * (1 + 1e-12) && sum < best_sum)) {
        best = std::min(best, e);
        best_sum = sum;
        best_w = w;
      }
      size_t i = 0;
      while (i < n && w[i] == max_w) w[i++] = 1;
      if (i == n) break;
      ++w[i];
    }
    return std::pair(best, best_sum);
  };
  GroupGenerator gen(31337);
  int compared = 0;
  for (int round = 0; round < 400; ++round) {
    const size_t n = gen.Uniform(2, 3);
    const uint32_t max_w = n == 2 ? gen.Uniform(20, 400) : gen.Uniform(10, 45);
    std::vector<double> b = gen.Make(n);
    // Wide ratios, so that 0.1 % is out of reach and the optimum is what counts.
    b[0] *= std::uniform_real_distribution<double>(0.001, 0.05)(gen.rng());
    const QuantizedWeights q = Quantize(b, {.max_weight = max_w});
    INFO("round " << round << " n " << n << " max_weight " << max_w);
    CheckWellFormed(b, {.max_weight = max_w}, q);
    const auto [best, best_sum] = brute(b, max_w);
    if (best > kMaxErrorGoal) {
      ++compared;
      REQUIRE(q.max_error == Approx(best).margin(1e-9));
      REQUIRE(SumOf(q.weights) == best_sum);
    } else {
      REQUIRE(q.max_error <= kMaxErrorGoal * (1 + 1e-9));
    }
  }
  CHECK(compared > 300);
}

TEST_CASE("Quantize is never worse than the FBOSS greedy, naive rounding or WCMP Algorithm 1", "[quantize]") {
  GroupGenerator gen(4242);
  int groups = 0, strictly_better_than_fboss = 0;
  for (uint32_t budget : {64u, 128u, 256u, 512u}) {
    for (int round = 0; round < 300; ++round) {
      const size_t n = gen.Uniform(1, 64);
      const QuantizeLimits limits{.max_weight = 65535, .budget = budget};
      const std::vector<double> b = gen.Make(n);
      QuantizeStats stats;
      const QuantizedWeights q = Quantize(b, limits, &stats);
      REQUIRE_FALSE(stats.work_limit);  // the optimum was proven, not just the best found
      const QuantizedWeights fboss = QuantizeFbossGreedy(b, limits);
      const QuantizedWeights naive = QuantizeNaive(b, limits);
      const QuantizedWeights wcmp = QuantizeWcmpAlgorithm1(b, limits, 1.002);
      INFO("budget " << budget << " round " << round << " n " << n);
      CheckWellFormed(b, limits, q);
      REQUIRE(SumOf(fboss.weights) <= budget);
      REQUIRE(q.max_error <= fboss.max_error + 1e-12);
      REQUIRE(q.max_error <= wcmp.max_error + 1e-12);
      if (SumOf(naive.weights) <= budget) REQUIRE(q.max_error <= naive.max_error + 1e-12);
      if (q.max_error < fboss.max_error - 1e-9) ++strictly_better_than_fboss;
      ++groups;
    }
  }
  CHECK(groups == 1200);
  CHECK(strictly_better_than_fboss > 100);
}

TEST_CASE("Without a budget Quantize meets 0.1 % or beats the FBOSS greedy", "[quantize]") {
  GroupGenerator gen(17);
  for (uint32_t max_weight : {255u, 65535u}) {
    for (int round = 0; round < 300; ++round) {
      const size_t n = gen.Uniform(1, 24);
      const QuantizeLimits limits{.max_weight = max_weight};
      const std::vector<double> b = gen.Make(n);
      QuantizeStats stats;
      const QuantizedWeights q = Quantize(b, limits, &stats);
      INFO("max_weight " << max_weight << " round " << round << " n " << n);
      REQUIRE_FALSE(stats.work_limit);
      CheckWellFormed(b, limits, q);
      const double fboss = QuantizeFbossGreedy(b, limits).max_error;
      const double naive = QuantizeNaive(b, limits).max_error;
      if (q.max_error > kMaxErrorGoal * (1 + 1e-12)) {
        // The goal was out of reach, so this is the optimum over every sum.
        REQUIRE(q.max_error <= fboss + 1e-12);
        REQUIRE(q.max_error <= naive + 1e-12);
      } else {
        REQUIRE(q.max_error <= std::max(fboss, kMaxErrorGoal) + 1e-12);
      }
    }
  }
}
