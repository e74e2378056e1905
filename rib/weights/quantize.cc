#include "rib/weights/quantize.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>
#include <queue>
#include <utility>

namespace bagd::rib {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// Errors this close (relative) are equal: the smaller sum wins.
constexpr double kTieTolerance = 1e-12;
// The sieve below skips sums that cannot win; its windows are widened by this much so
// rounding in the window arithmetic never skips a sum that could.
constexpr double kSieveSlack = 1e-9;
constexpr uint64_t kNone = std::numeric_limits<uint64_t>::max();

// Bandwidths that are whole numbers (bytes/s always are in practice: LB communities carry
// float32 values such as 1.25e10) have an exact integer ratio; if it fits, nothing beats it.
bool ExactRatio(std::span<const double> bandwidths, const QuantizeLimits& limits, std::vector<uint32_t>* out) {
  std::vector<uint64_t> v;
  v.reserve(bandwidths.size());
  uint64_t g = 0;
  for (double b : bandwidths) {
    if (!(b < 0x1p64) || b != std::floor(b)) return false;
    v.push_back(static_cast<uint64_t>(b));
    g = std::gcd(g, v.back());
  }
  uint64_t sum = 0;
  for (uint64_t& x : v) {
    x /= g;
    if (x > limits.max_weight) return false;
    sum += x;  // n * 2^32 at most: no overflow
  }
  if (limits.budget > 0 && sum > limits.budget) return false;
  out->assign(v.begin(), v.end());
  return true;
}

// The search over the sum T of the weights. For one T the best vector is found greedily
// (Evaluate); the sums are searched by branch and bound over intervals of T (Bound), which
// discards whole ranges of sums that cannot beat the best error found so far.
class SumSearch {
 public:
  SumSearch(std::span<const double> bandwidths, uint32_t max_weight)
      : n_(bandwidths.size()), max_w_(max_weight), share_(n_), order_(n_), w_(n_), x_(n_) {
    const double total = std::accumulate(bandwidths.begin(), bandwidths.end(), 0.0);
    for (size_t i = 0; i < n_; ++i) share_[i] = bandwidths[i] / total;
    std::iota(order_.begin(), order_.end(), 0);
    std::stable_sort(order_.begin(), order_.end(), [&](size_t a, size_t b) { return share_[a] < share_[b]; });
    s_max_ = share_[order_.back()];
  }

  const std::vector<uint32_t>& weights() const { return w_; }
  uint64_t work() const { return work_; }
  bool out_of_work() const { return work_ > kQuantizeWorkLimit; }

  // Sums outside [lo, hi] cannot have every member within theta of its share, by
  // counting alone (weights as real numbers): above hi the members cannot take T units
  // without one of them exceeding (1 + theta) * s_i * T or max_weight; below lo the members
  // stuck at weight 1 (or at (1 - theta) * s_i * T) already add up to more than T.
  // This is what keeps the search short when max_weight or weight 1 binds.
  struct Range {
    uint64_t lo, hi;
  };
  Range SumsWithin(double theta, uint64_t cap) const {
    const double th = theta * (1 + kSieveSlack);
    double hi = std::min(static_cast<double>(cap), std::floor(UpperRoot(1 + th) * (1 + kSieveSlack)) + 1);
    // The smallest member at weight 1 is over its share by more than theta below this.
    const double below_one = std::ceil(1 / (share_[order_[0]] * (1 + th)) * (1 - kSieveSlack)) - 1;
    double lo = std::max(static_cast<double>(n_), below_one);
    if (th < 1) {
      // The largest member, even at max_weight, is short by more than theta above this.
      hi = std::min(hi, std::floor(max_w_ / (s_max_ * (1 - th))) + 1);
      lo = std::max(lo, std::ceil(LowerRoot(1 - th) * (1 - kSieveSlack)) - 1);
    }
    return {static_cast<uint64_t>(lo), static_cast<uint64_t>(std::max(hi, 0.0))};
  }

  // The largest sum (at most cap) at which the largest member's ideal weight fits max_weight.
  uint64_t LargestFitting(uint64_t cap) const {
    const double t = std::floor(max_w_ / s_max_);
    return t >= static_cast<double>(cap) ? cap : static_cast<uint64_t>(t);
  }

  // A lower bound on the error at every sum in [lo, hi]; a value above cutoff when no
  // sum there can be within cutoff. Two arguments, both valid for the whole interval:
  // - one member alone: as T runs over the interval its ideal weight s_i*T runs over
  //   [x1, x2]; if no allowed integer lies in there, the closest it gets is at an end;
  // - counting: every weight must lie within cutoff of its ideal, and those limits grow
  //   with T, so the most the members can take is their upper limits at hi, the least
  //   their lower limits at lo; T must fit in between.
  double Bound(uint64_t lo, uint64_t hi, double cutoff) const {
    work_ += n_;
    const double t1 = static_cast<double>(lo), t2 = static_cast<double>(hi);
    const double bar = cutoff * (1 + kSieveSlack), k_up = 1 + bar, k_down = 1 - bar;
    double bound = 0, most = 0, least = 0;
    for (size_t i : order_) {  // smallest shares first: they are usually the ones that bind
      const double x1 = share_[i] * t1, x2 = share_[i] * t2;
      double b = 0;
      if (x2 < 1) {
        b = (1 - x2) / x2;  // weight 1, over its share
      } else if (x1 > max_w_) {
        b = (x1 - max_w_) / x1;  // max_weight, short of its share
      } else if (const double a = std::floor(x2); a < x1 && a < max_w_) {
        b = std::min((x1 - a) / x1, (a + 1 - x2) / x2);  // between a and a + 1 throughout
      }
      bound = std::max(bound, b);
      if (bound > bar) return bound;
      most += std::min<double>(max_w_, std::floor(x2 * k_up));
      least += std::max(1.0, std::ceil(x1 * k_down));
    }
    if (most < t1 || least > t2) return kInf;
    return bound;
  }

  // The first sum from T up to hi at which every member on its own can be within theta of
  // its share (some integer a in [1, max_weight] has |a - s_i*T| <= theta*s_i*T); kNone if
  // there is none. Each member's such sums come in windows around a / s_i; the walk jumps
  // to the next window of whichever member fails, smallest shares (narrowest windows)
  // first. For the first sum within the 0.1 % goal this is much cheaper than Bound.
  uint64_t NextUp(uint64_t T, double theta, uint64_t hi) const {
    const double th = theta * (1 + kSieveSlack);
    for (;;) {
      if (T > hi) return kNone;
      uint64_t moved = MemberNextUp(order_.back(), T, th);  // where max_weight binds
      for (size_t k = 0; moved == T && k + 1 < n_; ++k) {
        const double x = share_[order_[k]] * static_cast<double>(T);
        if (2 * th * x >= 1 && x * (1 + th) >= 1) break;  // this and every larger share pass
        moved = MemberNextUp(order_[k], T, th);
      }
      if (moved == T || moved == kNone) return moved;
      T = moved;
    }
  }

  // The smallest max relative error of any weight vector summing to T (left in weights()),
  // or, when that cannot be <= cutoff, some value > cutoff (the search stops early).
  //
  // Start from each member's own best weight, round(s_i*T) clamped to [1, max_weight]; its
  // error f_i(w) = |w - s_i*T| / (s_i*T) is convex in w with that weight as minimum. The
  // sum is then off by D; every vector summing to T must move the members D units in
  // total away from their minima, and a member's k-th unit costs at least as much as its
  // (k-1)-th. Taking the D cheapest units one at a time (a heap) therefore ends with the
  // smallest possible maximum: the greedy is exact for minimax of separable convex
  // functions under one sum constraint. (The exhaustive property test checks it.)
  double Evaluate(uint64_t T, double cutoff) {
    work_ += n_;
    const double t = static_cast<double>(T);
    int64_t excess = -static_cast<int64_t>(T);
    double worst = 0;
    for (size_t i : order_) {  // smallest shares first: they have the largest errors
      const double x = share_[i] * t;
      x_[i] = x;
      const double r = std::nearbyint(x);
      const uint32_t w = r < 1 ? 1 : (r > max_w_ ? max_w_ : static_cast<uint32_t>(r));
      w_[i] = w;
      excess += w;
      worst = std::max(worst, std::abs(w - x) / x);
      if (worst > cutoff) return worst;
    }
    if (excess == 0) return worst;
    if (cutoff < kInf) {
      // Enough units within cutoff to move? (Cheaper than finding out by moving them.)
      const double bar = cutoff * (1 + kSieveSlack);
      double room = 0;
      for (size_t i = 0; i < n_; ++i) {
        room += excess > 0 ? w_[i] - std::max(1.0, std::ceil(x_[i] * (1 - bar)))
                           : std::min<double>(max_w_, std::floor(x_[i] * (1 + bar))) - w_[i];
      }
      if (room < std::abs(static_cast<double>(excess))) return kInf;
    }
    const int step = excess > 0 ? -1 : 1;
    auto movable = [&](size_t i) { return step < 0 ? w_[i] > 1 : w_[i] < max_w_; };
    auto cost = [&](size_t i) { return std::abs(static_cast<double>(w_[i]) + step - x_[i]) / x_[i]; };
    int64_t left = std::abs(excess);
    if (left > static_cast<int64_t>(2 * n_)) {
      // Many units to move (max_weight or weight 1 binds for many members): move at once
      // every unit that costs at most some c, with c found by bisection so that no more
      // than `left` units cost that little. Those are among the cheapest `left` units
      // whichever order the greedy would take them in; the heap below places the rest.
      auto units = [&](size_t i, double c) -> int64_t {  // units of member i costing <= c
        const double k = step > 0 ? std::floor(x_[i] * (1 + c)) - w_[i] : w_[i] - std::ceil(x_[i] * (1 - c));
        const double room = step > 0 ? max_w_ - w_[i] : w_[i] - 1.0;
        return static_cast<int64_t>(std::clamp(k, 0.0, room));
      };
      auto count = [&](double c) {
        work_ += n_;
        int64_t total = 0;
        for (size_t i = 0; i < n_; ++i) total += units(i, c);
        return total;
      };
      double lo = 0, hi = 1;
      while (count(hi) <= left && hi < 1e300) hi *= 2;
      for (int iter = 0; iter < 200 && left - count(lo) > static_cast<int64_t>(n_); ++iter) {
        const double mid = lo + (hi - lo) / 2;
        if (mid <= lo || mid >= hi) break;
        (count(mid) <= left ? lo : hi) = mid;
      }
      for (size_t i = 0; i < n_; ++i) {
        const int64_t k = units(i, lo);
        if (k == 0) continue;
        w_[i] = static_cast<uint32_t>(w_[i] + step * k);
        left -= k;
        worst = std::max(worst, std::abs(w_[i] - x_[i]) / x_[i]);  // its last unit's cost
      }
      if (worst > cutoff) return worst;
    }
    heap_.clear();
    for (size_t i = 0; i < n_; ++i) {
      if (movable(i)) heap_.emplace_back(cost(i), i);
    }
    std::make_heap(heap_.begin(), heap_.end(), std::greater<>());
    for (; left > 0; --left) {
      if (heap_.empty()) return kInf;  // T outside [n, n*max_weight]
      std::pop_heap(heap_.begin(), heap_.end(), std::greater<>());
      const auto [c, i] = heap_.back();
      heap_.pop_back();
      worst = std::max(worst, c);
      if (worst > cutoff) return worst;
      w_[i] += step;
      if (movable(i)) {
        heap_.emplace_back(cost(i), i);
        std::push_heap(heap_.begin(), heap_.end(), std::greater<>());
      }
    }
    return worst;
  }

 private:
  // The largest T with sum_i min(max_weight, s_i * T * k) >= T. The sum is concave in T
  // (members hit max_weight one after the other, largest share first), so it is above T
  // on one interval starting at 0; walk the pieces to where it crosses.
  double UpperRoot(double k) const {
    double clamped = 0, free_share = 1;
    for (auto it = order_.rbegin(); it != order_.rend(); ++it) {
      const double slope = k * free_share - 1;
      if (slope < 0) {
        const double root = clamped * max_w_ / -slope;
        if (root <= max_w_ / (share_[*it] * k)) return root;
      }
      clamped += 1;
      free_share = std::max(0.0, free_share - share_[*it]);
    }
    return clamped * max_w_;
  }

  // The smallest T with T >= sum_i max(1, s_i * T * k), k < 1: members leave weight 1 one
  // after the other, largest share first.
  double LowerRoot(double k) const {
    double at_one = static_cast<double>(n_), free_share = 0;
    for (auto it = order_.rbegin(); it != order_.rend(); ++it) {
      const double root = at_one / (1 - k * free_share);
      if (root <= 1 / (share_[*it] * k)) return root;
      at_one -= 1;
      free_share += share_[*it];
    }
    return 0;
  }

  // T if member i alone can be within th at T, else the first sum after T where it can.
  uint64_t MemberNextUp(size_t i, uint64_t T, double th) const {
    ++work_;
    const double s = share_[i];
    const double x = s * static_cast<double>(T);
    const double lo = x * (1 - th), hi = x * (1 + th);
    if (std::max(1.0, std::ceil(lo)) <= std::min<double>(max_w_, std::floor(hi))) return T;
    if (lo > max_w_) return kNone;  // above max_weight, and only getting further
    // The window lies between two integers; it reaches the upper one, a, at T = a/(s(1+th)).
    const double t = std::floor((std::floor(hi) + 1) / (s * (1 + th)));
    if (t >= 0x1p64) return kNone;
    return std::max(static_cast<uint64_t>(t), T + 1);
  }

  size_t n_;
  uint32_t max_w_;
  double s_max_ = 0;
  std::vector<double> share_;
  std::vector<size_t> order_;  // members by share, smallest first
  std::vector<uint32_t> w_;
  std::vector<double> x_;
  std::vector<std::pair<double, size_t>> heap_;
  mutable uint64_t work_ = 0;
};

}  // namespace

QuantizedWeights Quantize(std::span<const double> bandwidths, const QuantizeLimits& limits) {
  return Quantize(bandwidths, limits, nullptr);
}

QuantizedWeights Quantize(std::span<const double> bandwidths, const QuantizeLimits& limits, QuantizeStats* stats) {
  QuantizeStats ignored;
  if (stats == nullptr) stats = &ignored;
  *stats = QuantizeStats{};
  assert(!bandwidths.empty());
  assert(limits.max_weight >= 1);
  for ([[maybe_unused]] double b : bandwidths) assert(b > 0 && std::isfinite(b));
  const uint64_t n = bandwidths.size();
  const uint64_t max_w = limits.max_weight;

  // More members than table entries: nothing fits. All ones is the closest to fitting.
  if (limits.budget > 0 && n > limits.budget) return FinishQuantized(bandwidths, std::vector<uint32_t>(n, 1));

  std::vector<uint32_t> exact;
  if (ExactRatio(bandwidths, limits, &exact)) {
    stats->exact_ratio = true;
    QuantizedWeights q;
    q.weights = std::move(exact);
    q.max_error = 0;  // proportional by construction
    return q;
  }

  SumSearch search(bandwidths, limits.max_weight);
  uint64_t cap = n * max_w;  // every member at max_weight
  if (limits.budget > 0) cap = std::min<uint64_t>(cap, limits.budget);

  struct Interval {
    uint64_t lo, hi;
    double bound;
    bool operator>(const Interval& o) const { return bound > o.bound; }
  };
  constexpr uint64_t kLeaf = 128;  // intervals this short: sieve and evaluate every sum

  if (limits.budget == 0) {
    // The smallest sum that is good enough: small weights keep kernel groups and their
    // display readable, and 0.1 % is far below what flow hashing resolves anyway.
    const double goal = kMaxErrorGoal * (1 + kTieTolerance);
    const auto [lo, hi] = search.SumsWithin(goal, cap);
    for (uint64_t T = lo; !search.out_of_work() && (T = search.NextUp(T, goal, hi)) != kNone; ++T) {
      if (search.Evaluate(T, goal) <= goal) {
        stats->goal_met = true;
        stats->work = search.work();
        return FinishQuantized(bandwidths, search.weights());
      }
    }
  }

  // The optimum over every sum in [n, cap]. Two seeds give a first bound: the largest sum
  // at which the largest member's ideal weight fits max_weight, and the sum where the
  // counting bound of SumsWithin is lowest (where members stuck at max_weight and at 1
  // balance; found by bisection on theta, the admissible sums being an interval that
  // grows with theta). Then branch and bound, most promising interval first.
  double best = kInf;
  uint64_t best_sum = 0;
  std::vector<uint32_t> best_w;
  auto consider = [&](uint64_t T) {
    const double e = search.Evaluate(T, best * (1 + kTieTolerance));
    // Better, or as good with a smaller sum.
    if (e < best * (1 - kTieTolerance) || (e <= best * (1 + kTieTolerance) && T < best_sum)) {
      best = std::min(best, e);
      best_sum = T;
      best_w = search.weights();
    }
  };
  consider(std::clamp(search.LargestFitting(cap), n, cap));
  {
    double a = 0, b = best;
    for (int i = 0; i < 48; ++i) {
      const double mid = (a + b) / 2;
      const auto r = search.SumsWithin(mid, cap);
      (r.lo <= r.hi ? b : a) = mid;
    }
    const auto r = search.SumsWithin(b, cap);
    if (r.lo <= r.hi) consider(std::clamp(r.lo + (r.hi - r.lo) / 2, n, cap));
  }
  std::priority_queue<Interval, std::vector<Interval>, std::greater<>> queue;
  queue.push({n, cap, 0});
  while (!queue.empty() && !search.out_of_work()) {
    const Interval iv = queue.top();
    queue.pop();
    const double cutoff = best * (1 + kTieTolerance);
    if (iv.bound > cutoff * (1 + kSieveSlack)) break;  // and so is every other
    if (iv.hi - iv.lo < kLeaf) {
      for (uint64_t T = iv.lo; (T = search.NextUp(T, best * (1 + kTieTolerance), iv.hi)) != kNone; ++T) {
        consider(T);
      }
      continue;
    }
    const uint64_t mid = iv.lo + (iv.hi - iv.lo) / 2;
    for (const auto& [lo, hi] : {std::pair{iv.lo, mid}, std::pair{mid + 1, iv.hi}}) {
      const double bound = search.Bound(lo, hi, cutoff);
      if (bound <= cutoff * (1 + kSieveSlack)) queue.push({lo, hi, bound});
    }
  }
  stats->work = search.work();
  stats->work_limit = search.out_of_work();
  return FinishQuantized(bandwidths, std::move(best_w));
}

QuantizedWeights FinishQuantized(std::span<const double> bandwidths, std::vector<uint32_t> w) {
  uint64_t g = 0;
  for (uint32_t x : w) g = std::gcd(g, uint64_t{x});
  if (g > 1) {
    for (uint32_t& x : w) x = static_cast<uint32_t>(x / g);
  }
  QuantizedWeights q;
  q.max_error = MaxRelativeError(bandwidths, w);
  q.weights = std::move(w);
  return q;
}

double MaxRelativeError(std::span<const double> bandwidths, std::span<const uint32_t> weights) {
  assert(bandwidths.size() == weights.size());
  const double tb = std::accumulate(bandwidths.begin(), bandwidths.end(), 0.0);
  const double tw = static_cast<double>(std::accumulate(weights.begin(), weights.end(), uint64_t{0}));
  double worst = 0;
  for (size_t i = 0; i < weights.size(); ++i) {
    const double s = bandwidths[i] / tb;
    worst = std::max(worst, std::abs(weights[i] / tw - s) / s);
  }
  return worst;
}

double L1Error(std::span<const double> bandwidths, std::span<const uint32_t> weights) {
  assert(bandwidths.size() == weights.size());
  const double tb = std::accumulate(bandwidths.begin(), bandwidths.end(), 0.0);
  const double tw = static_cast<double>(std::accumulate(weights.begin(), weights.end(), uint64_t{0}));
  double sum = 0;
  for (size_t i = 0; i < weights.size(); ++i) sum += std::abs(weights[i] / tw - bandwidths[i] / tb);
  return sum;
}

double Oversubscription(std::span<const double> bandwidths, std::span<const uint32_t> weights) {
  assert(bandwidths.size() == weights.size());
  const double tb = std::accumulate(bandwidths.begin(), bandwidths.end(), 0.0);
  const double tw = static_cast<double>(std::accumulate(weights.begin(), weights.end(), uint64_t{0}));
  double worst = 0;
  for (size_t i = 0; i < weights.size(); ++i) worst = std::max(worst, (weights[i] * tb) / (bandwidths[i] * tw));
  return worst;
}

}  // namespace bagd::rib
