#include "rib/weights/quantize_baselines.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

namespace bagd::rib {
namespace {

double Sum(std::span<const double> v) { return std::accumulate(v.begin(), v.end(), 0.0); }

}  // namespace

QuantizedWeights QuantizeNaive(std::span<const double> bandwidths, const QuantizeLimits& limits) {
  const double factor = limits.budget > 0 ? limits.budget / Sum(bandwidths)
                                          : limits.max_weight / *std::max_element(bandwidths.begin(), bandwidths.end());
  std::vector<uint32_t> w;
  for (double b : bandwidths) {
    w.push_back(static_cast<uint32_t>(std::clamp(std::round(b * factor), 1.0, static_cast<double>(limits.max_weight))));
  }
  return FinishQuantized(bandwidths, std::move(w));
}

QuantizedWeights QuantizeFbossGreedy(std::span<const double> bandwidths, const QuantizeLimits& limits) {
  const size_t n = bandwidths.size();
  // FBOSS gets integer weights (Gbit/s: 100G is 100). Ours are real bandwidths, so they are
  // made integers first at 1/1000 of the smallest member: round(b_i / b_min * 1000).
  const double b_min = *std::min_element(bandwidths.begin(), bandwidths.end());
  std::vector<uint64_t> in;
  for (double b : bandwidths) in.push_back(static_cast<uint64_t>(std::llround(b / b_min * 1000)));
  const uint64_t total = std::accumulate(in.begin(), in.end(), uint64_t{0});
  const uint64_t in_max = *std::max_element(in.begin(), in.end());
  const uint64_t width =
      limits.budget > 0 ? limits.budget : std::max<uint64_t>(n, uint64_t{limits.max_weight} * total / in_max);
  if (total <= width) {  // fits: FBOSS leaves the weights alone
    return FinishQuantized(bandwidths, std::vector<uint32_t>(in.begin(), in.end()));
  }

  // Scale down to the width, rounding up; the ideal shares are those of the integer inputs.
  std::vector<double> ideal(n);
  std::vector<int64_t> w(n);
  int64_t sum = 0;
  const double factor = static_cast<double>(width) / static_cast<double>(total);
  for (size_t i = 0; i < n; ++i) {
    ideal[i] = static_cast<double>(in[i]) / static_cast<double>(total);
    w[i] = static_cast<int64_t>(std::ceil(static_cast<double>(in[i]) * factor));
    sum += w[i];
  }
  // The largest over-share (signed: (share - ideal) / ideal) over every member, and the
  // member that has it among those that can still lose a unit (last one on ties, as FBOSS).
  struct Worst {
    double error;
    int index;  // -1: every member is at 1
  };
  auto worst = [&](const std::vector<int64_t>& v, int64_t s) {
    Worst r{-std::numeric_limits<double>::infinity(), -1};
    double best_movable = -std::numeric_limits<double>::infinity();
    for (size_t i = 0; i < n; ++i) {
      const double e = (static_cast<double>(v[i]) / static_cast<double>(s) - ideal[i]) / ideal[i];
      r.error = std::max(r.error, e);
      if (v[i] > 1 && e >= best_movable) {
        best_movable = e;
        r.index = static_cast<int>(i);
      }
    }
    return r;
  };
  // Until it fits, take a unit from the member most over its share.
  while (sum > static_cast<int64_t>(width)) {
    const Worst x = worst(w, sum);
    if (x.index < 0) break;  // more members than the width
    --w[x.index];
    --sum;
  }
  // Then keep taking units while the error is above ucmp_max_error, keeping any vector
  // that is no worse than the best so far, down to all ones.
  constexpr double kUcmpMaxError = 0.05;
  double best = worst(w, sum).error;
  std::vector<int64_t> cur = w;
  while (best > kUcmpMaxError) {
    const Worst x = worst(cur, sum);
    if (x.index < 0) break;
    --cur[x.index];
    --sum;
    const double e = worst(cur, sum).error;
    if (e <= best) {
      best = e;
      w = cur;
    }
  }
  return FinishQuantized(bandwidths, std::vector<uint32_t>(w.begin(), w.end()));
}

QuantizedWeights QuantizeExhaustive(std::span<const double> bandwidths, const QuantizeLimits& limits) {
  const size_t n = bandwidths.size();
  assert(n >= 1 && n <= 6);
  assert(limits.budget >= 1 && limits.budget <= 64);
  if (n > limits.budget) return FinishQuantized(bandwidths, std::vector<uint32_t>(n, 1));
  const double total = Sum(bandwidths);
  std::vector<double> share;
  for (double b : bandwidths) share.push_back(b / total);
  const uint32_t max_w = limits.max_weight;

  double best = std::numeric_limits<double>::infinity();
  std::vector<uint32_t> best_w, w(n);
  uint32_t T = 0;
  // Member i gets every weight that leaves at least 1 for each later member; the last one
  // gets what is left of T.
  auto visit = [&](auto&& self, size_t i, uint32_t used, double worst) -> void {
    auto error = [&](uint32_t x) { return std::abs(static_cast<double>(x) / T - share[i]) / share[i]; };
    if (i + 1 == n) {
      const uint32_t x = T - used;
      if (x < 1 || x > max_w) return;
      const double e = std::max(worst, error(x));
      if (e < best * (1 - 1e-12)) {
        best = e;
        w[i] = x;
        best_w = w;
      }
      return;
    }
    const uint32_t room = T - used - static_cast<uint32_t>(n - 1 - i);
    for (uint32_t x = 1; x <= std::min(room, max_w); ++x) {
      const double e = std::max(worst, error(x));
      if (e >= best * (1 - 1e-12)) continue;  // nothing below this can beat the best
      w[i] = x;
      self(self, i + 1, used + x, e);
    }
  };
  for (T = static_cast<uint32_t>(n); T <= limits.budget && T <= n * uint64_t{max_w}; ++T) visit(visit, 0, 0, 0.0);
  return FinishQuantized(bandwidths, std::move(best_w));
}

QuantizedWeights QuantizeWcmpAlgorithm1(std::span<const double> bandwidths, const QuantizeLimits& limits,
                                        double theta_max) {
  const size_t n = bandwidths.size();
  const double total_b = Sum(bandwidths);
  const uint64_t cap = limits.budget > 0 ? limits.budget : n * uint64_t{limits.max_weight};
  // delta(w) = max_i (w_i / b_i) * sum(b) / sum(w).
  std::vector<uint32_t> w(n, 1);
  uint64_t sum = n;
  auto delta_of = [&](double max_ratio, uint64_t s) { return max_ratio * total_b / static_cast<double>(s); };
  double max_ratio = 0;
  for (size_t i = 0; i < n; ++i) max_ratio = std::max(max_ratio, 1 / bandwidths[i]);
  std::vector<double> deltas{delta_of(max_ratio, sum)};
  std::vector<size_t> steps;  // member incremented at each step
  while (deltas.back() > theta_max && sum < cap) {
    // The member whose own oversubscription after the increment, (w_j + 1) / b_j, is the
    // smallest (first one on ties), as FabricEval's _choose_port_to_update does.
    size_t pick = n;
    double pick_ratio = std::numeric_limits<double>::infinity();
    for (size_t j = 0; j < n; ++j) {
      const double r = (w[j] + 1) / bandwidths[j];
      if (w[j] < limits.max_weight && r < pick_ratio) {
        pick_ratio = r;
        pick = j;
      }
    }
    if (pick == n) break;  // every member at max_weight
    ++w[pick];
    ++sum;
    steps.push_back(pick);
    max_ratio = std::max(max_ratio, pick_ratio);
    deltas.push_back(delta_of(max_ratio, sum));
  }
  if (deltas.back() > theta_max) {
    // Out of room before theta_max: the smallest theta on the 0.001 grid that some prefix
    // of the sequence meets, and the first prefix that meets it.
    const double min_delta = *std::min_element(deltas.begin(), deltas.end());
    const double theta =
        std::max(min_delta, theta_max + 0.001 * std::ceil((min_delta - theta_max) / 0.001 - 1e-9));
    const size_t t = std::find_if(deltas.begin(), deltas.end(), [&](double d) { return d <= theta; }) - deltas.begin();
    std::fill(w.begin(), w.end(), 1);
    for (size_t k = 0; k < t && k < steps.size(); ++k) ++w[steps[k]];
  }
  return FinishQuantized(bandwidths, std::move(w));
}

}  // namespace bagd::rib
