// How close each way of turning bandwidths into integer weights gets to the bandwidth
// shares, on the same 1000 random next-hop groups (fixed seed), for hardware ECMP tables
// of 64..512 entries per group and for kernel nexthop groups (16-bit and 8-bit weights,
// no sum limit); and how long Quantize takes per group. Prints markdown for
// docs/weights-quantization.md. No arguments, no Google Benchmark: the quality numbers are
// deterministic, the times are per group the fastest of 3 calls.
//
//   build-q/bench/wcmp_quality
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "rib/weights/quantize.h"
#include "rib/weights/quantize_baselines.h"

using namespace bagd::rib;

namespace {

constexpr double kGbps = 1e9 / 8;  // link bandwidth communities carry bytes per second
constexpr uint64_t kSeed = 20261129;
constexpr int kGroups = 1000;

// The test groups (see the distribution in docs/weights-quantization.md):
// - 40 % mixed link speeds: each member 10/25/40/100/200/400/800G; one in four is a LAG of
//   8 links with 1..7 of them up (k/8 of its speed, e.g. 7/8 of 400G);
// - 30 % one speed with degraded LAGs: every member the same speed, three in ten at k/8;
// - 30 % arbitrary values: uniform in [1e8, 1e11] bytes/s (0.8..800 Gb/s), as a
//   measured or policy-set bandwidth would be.
// Member count uniform in 2..32.
std::vector<std::vector<double>> MakeGroups(std::mt19937_64& rng, int count, int min_n, int max_n) {
  static constexpr double kSpeeds[] = {10, 25, 40, 100, 200, 400, 800};
  auto uniform_int = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  std::vector<std::vector<double>> groups;
  for (int g = 0; g < count; ++g) {
    const int n = uniform_int(min_n, max_n);
    const int kind = uniform_int(0, 9);
    const double one_speed = kSpeeds[uniform_int(0, 6)] * kGbps;
    std::vector<double> b;
    for (int i = 0; i < n; ++i) {
      if (kind < 4) {
        double v = kSpeeds[uniform_int(0, 6)] * kGbps;
        if (uniform_int(0, 3) == 0) v = v * uniform_int(1, 7) / 8;
        b.push_back(v);
      } else if (kind < 7) {
        b.push_back(uniform_int(0, 9) < 3 ? one_speed * uniform_int(1, 7) / 8 : one_speed);
      } else {
        b.push_back(std::uniform_real_distribution<double>(1e8, 1e11)(rng));
      }
    }
    groups.push_back(std::move(b));
  }
  return groups;
}

struct Algorithm {
  const char* name;
  std::function<QuantizedWeights(const std::vector<double>&, const QuantizeLimits&)> run;
};

void QualityTable(const std::vector<std::vector<double>>& groups, const std::vector<QuantizeLimits>& limits_list,
                  const std::vector<Algorithm>& algorithms) {
  std::printf("| limits | algorithm | max error: worst | median | mean | groups > 5 %% | mean L1 | mean δ | mean Σw "
              "| Σw > budget |\n");
  std::printf("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (const QuantizeLimits& limits : limits_list) {
    for (const Algorithm& a : algorithms) {
      double worst = 0, sum_err = 0, sum_l1 = 0, sum_delta = 0, sum_w = 0;
      int over = 0, above5 = 0;
      std::vector<double> errors;
      for (const auto& b : groups) {
        const QuantizedWeights q = a.run(b, limits);
        const uint64_t w = std::accumulate(q.weights.begin(), q.weights.end(), uint64_t{0});
        worst = std::max(worst, q.max_error);
        errors.push_back(q.max_error);
        sum_err += q.max_error;
        above5 += q.max_error > 0.05;
        sum_l1 += L1Error(b, q.weights);
        sum_delta += Oversubscription(b, q.weights);
        sum_w += static_cast<double>(w);
        over += limits.budget > 0 && w > limits.budget;
      }
      const double n = static_cast<double>(groups.size());
      std::sort(errors.begin(), errors.end());
      std::string lim = limits.budget > 0 ? "budget " + std::to_string(limits.budget)
                                          : "no budget, w ≤ " + std::to_string(limits.max_weight);
      std::printf("| %s | %s | %.2f %% | %.3f %% | %.3f %% | %d | %.5f | %.4f | %.1f | %s |\n", lim.c_str(), a.name,
                  100 * worst, 100 * errors[errors.size() / 2], 100 * sum_err / n, above5, sum_l1 / n, sum_delta / n,
                  sum_w / n,
                  limits.budget > 0 ? std::to_string(over).c_str() : "–");
    }
  }
}

struct Timing {
  double median_us, p99_us, max_us;
  uint64_t max_work;
  int exact, goal, limit_hits;
};

// Each group's time is the fastest of 3 calls: the machine is shared, and a call that
// was preempted says nothing about Quantize.
Timing TimeQuantize(const std::vector<std::vector<double>>& groups, const QuantizeLimits& limits) {
  std::vector<double> us;
  Timing t{};
  for (const auto& b : groups) {
    QuantizeStats stats;
    double fastest = 1e300;
    for (int rep = 0; rep < 3; ++rep) {
      const auto start = std::chrono::steady_clock::now();
      const QuantizedWeights q = Quantize(b, limits, &stats);
      const auto end = std::chrono::steady_clock::now();
      if (q.weights.empty()) std::abort();  // keep the call
      fastest = std::min(fastest, std::chrono::duration<double, std::micro>(end - start).count());
    }
    us.push_back(fastest);
    t.max_work = std::max(t.max_work, stats.work);
    t.exact += stats.exact_ratio;
    t.goal += stats.goal_met;
    t.limit_hits += stats.work_limit;
  }
  std::sort(us.begin(), us.end());
  t.median_us = us[us.size() / 2];
  t.p99_us = us[us.size() * 99 / 100];
  t.max_us = us.back();
  return t;
}

void TimingRow(const char* what, const std::vector<std::vector<double>>& groups, const QuantizeLimits& limits) {
  const Timing t = TimeQuantize(groups, limits);
  std::printf("| %s | %zu | %.1f | %.1f | %.1f | %llu | %d | %d | %d |\n", what, groups.size(), t.median_us, t.p99_us,
              t.max_us, static_cast<unsigned long long>(t.max_work), t.exact, t.goal, t.limit_hits);
}

}  // namespace

int main() {
  std::mt19937_64 rng(kSeed);
  const auto groups = MakeGroups(rng, kGroups, 2, 32);

  const std::vector<Algorithm> with_budget = {
      {"naive rounding", [](const auto& b, const auto& l) { return QuantizeNaive(b, l); }},
      {"FBOSS greedy", [](const auto& b, const auto& l) { return QuantizeFbossGreedy(b, l); }},
      {"WCMP Alg. 1 (θ from 1.002)", [](const auto& b, const auto& l) { return QuantizeWcmpAlgorithm1(b, l, 1.002); }},
      {"**bagd Quantize**", [](const auto& b, const auto& l) { return Quantize(b, l); }},
  };
  std::printf("## Quality, %d groups (seed %llu), hardware tables (max_weight 65535)\n\n", kGroups,
              static_cast<unsigned long long>(kSeed));
  QualityTable(groups, {{65535, 64}, {65535, 128}, {65535, 256}, {65535, 512}}, with_budget);

  const std::vector<Algorithm> without_budget = {
      {"naive (largest = max_weight)", [](const auto& b, const auto& l) { return QuantizeNaive(b, l); }},
      {"FBOSS greedy", [](const auto& b, const auto& l) { return QuantizeFbossGreedy(b, l); }},
      {"**bagd Quantize**", [](const auto& b, const auto& l) { return Quantize(b, l); }},
  };
  std::printf("\n## Quality, same groups, kernel nexthop groups (no budget)\n\n");
  QualityTable(groups, {{65535, 0}, {255, 0}}, without_budget);

  // Time: the same groups, then the hard cases at 64 members.
  std::printf("\n## Time of Quantize per group\n\n");
  std::printf("| groups | count | median µs | p99 µs | max µs | max work | exact ratio | 0.1 %% goal met "
              "| work limit hit |\n");
  std::printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (uint32_t budget : {64u, 512u}) {
    const std::string what = "test groups, budget " + std::to_string(budget);
    TimingRow(what.c_str(), groups, {65535, budget});
  }
  TimingRow("test groups, no budget, 16-bit", groups, {65535, 0});
  TimingRow("test groups, no budget, 8-bit", groups, {255, 0});

  // 64 members, arbitrary values over a growing spread (log-uniform over d decades): the
  // search is longest when no sum reaches 0.1 % and many members are small.
  auto uniform = [&](double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); };
  for (double decades : {0.002, 0.3, 1.0, 3.0, 5.0}) {
    std::vector<std::vector<double>> hard;
    for (int g = 0; g < 200; ++g) {
      std::vector<double> b(64);
      for (double& x : b) x = 1e11 * std::pow(10.0, -uniform(0, decades));
      hard.push_back(std::move(b));
    }
    char what[96];
    std::snprintf(what, sizeof what, "n=64, log-uniform over %g decades, no budget, 16-bit", decades);
    TimingRow(what, hard, {65535, 0});
    std::snprintf(what, sizeof what, "n=64, log-uniform over %g decades, no budget, 8-bit", decades);
    TimingRow(what, hard, {255, 0});
    std::snprintf(what, sizeof what, "n=64, log-uniform over %g decades, budget 4096", decades);
    TimingRow(what, hard, {65535, 4096});
  }
  // Half the members at ~400G, half a thousand times smaller: 0.1 % is out of reach.
  {
    std::vector<std::vector<double>> hard;
    for (int g = 0; g < 200; ++g) {
      std::vector<double> b;
      for (int i = 0; i < 32; ++i) b.push_back(uniform(1e11, 1.1e11));
      for (int i = 0; i < 32; ++i) b.push_back(uniform(1e8, 1.1e8));
      hard.push_back(std::move(b));
    }
    TimingRow("n=64, 32 at ~800G + 32 at ~0.8G, no budget, 16-bit", hard, {65535, 0});
  }
  return 0;
}
