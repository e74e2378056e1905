#include "rib/weights/point_tree.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "absl/container/inlined_vector.h"

namespace bagd::rib {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Two doubles at a time (one SSE2 or NEON register; GCC/Clang vector extensions), for the
// two loops over next hops that dominate placing a big batch. Exact: the same operations on
// each next hop as one at a time.
using Lanes = double __attribute__((vector_size(16)));
using LaneBits = int64_t __attribute__((vector_size(16)));
Lanes LoadLanes(const double* p) {
  Lanes v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
// The larger of `acc` and `x` per lane; a NaN in x leaves acc (as the scalar loops did).
Lanes MaxLanes(Lanes acc, Lanes x) { return x > acc ? x : acc; }
Lanes AbsLanes(Lanes v) { return reinterpret_cast<Lanes>(reinterpret_cast<LaneBits>(v) & INT64_MAX); }
double MaxOf(Lanes v) { return v[0] > v[1] ? v[0] : v[1]; }

}  // namespace

struct PointTree::Box {
  explicit Box(size_t width) : lo(width), hi(width) {}
  absl::InlinedVector<double, 8> lo, hi;
};

struct PointTree::Rows {
  std::vector<double> shares;
  std::vector<uint32_t> point;
};

template <typename F>
void PointTree::WithLanes(F&& f) const {
  switch (width_ / 2) {
    case 1: return f.template operator()<1>();
    case 2: return f.template operator()<2>();
    case 3: return f.template operator()<3>();
    case 4: return f.template operator()<4>();
    default: return f.template operator()<0>();
  }
}

template <size_t L>
void PointTree::BoxOfLanes(const double* rows, size_t width, uint32_t begin, uint32_t end, Box& box) {
  if constexpr (L == 0) {
    std::fill(box.lo.begin(), box.lo.end(), kInf);
    std::fill(box.hi.begin(), box.hi.end(), -kInf);
    for (uint32_t x = begin; x < end; ++x) {
      const double* row = rows + size_t{x} * width;
      for (size_t k = 0; k < width; ++k) {
        box.lo[k] = std::min(box.lo[k], row[k]);
        box.hi[k] = std::max(box.hi[k], row[k]);
      }
    }
  } else {
    Lanes lo[L], hi[L];
    for (size_t k = 0; k < L; ++k) {
      lo[k] = Lanes{kInf, kInf};
      hi[k] = Lanes{-kInf, -kInf};
    }
    for (uint32_t x = begin; x < end; ++x) {
      const double* row = rows + size_t{x} * width;
      for (size_t k = 0; k < L; ++k) {
        const Lanes v = LoadLanes(row + 2 * k);
        lo[k] = v < lo[k] ? v : lo[k];
        hi[k] = v > hi[k] ? v : hi[k];
      }
    }
    for (size_t k = 0; k < L; ++k) {
      std::memcpy(box.lo.data() + 2 * k, &lo[k], sizeof(Lanes));
      std::memcpy(box.hi.data() + 2 * k, &hi[k], sizeof(Lanes));
    }
  }
}

void PointTree::BoxOf(const double* rows, uint32_t begin, uint32_t end, Box& box) const {
  WithLanes([&]<size_t L>() { BoxOfLanes<L>(rows, width_, begin, end, box); });
}

template <size_t L>
uint32_t PointTree::Partition(const Rows& from, Rows& spare, size_t dim, double split, uint32_t begin,
                              uint32_t end) const {
  const size_t width = L > 0 ? 2 * L : width_;
  const double* in = from.shares.data();
  double* out = spare.shares.data();
  const uint32_t* in_point = from.point.data();
  uint32_t* out_point = spare.point.data();
  uint32_t front = begin, back = end;
  for (uint32_t x = begin; x < end; ++x) {
    const double* row = in + size_t{x} * width;
    const bool left = row[dim] < split;
    const uint32_t to = left ? front : back - 1;
    double* dest = out + size_t{to} * width;
    for (size_t k = 0; k < width; k += 2) std::memcpy(dest + k, row + k, sizeof(Lanes));
    out_point[to] = in_point[x];
    front += left;
    back -= !left;
  }
  return front;
}

int32_t PointTree::Build(Rows& from, Rows& spare, const Box& box, uint32_t begin, uint32_t end) {
  const auto at = static_cast<int32_t>(nodes_.size());
  nodes_.push_back(Node{begin, end});
  const size_t at_box = inv_box_.size();
  inv_box_.resize(at_box + 2 * width_, 1);  // the padding: 1 (with a center's 1, no error)
  for (size_t k = 0; k < n_; ++k) {
    inv_box_[at_box + k] = 1 / box.lo[k];
    inv_box_[at_box + width_ + k] = 1 / box.hi[k];
  }
  auto leaf = [&](const Rows& rows) {
    for (uint32_t x = begin; x < end; ++x) {
      point_[x] = rows.point[x];
      const double* row = rows.shares.data() + size_t{x} * width_;
      double* out = point_data_.data() + size_t{x} * 2 * width_;
      for (size_t k = 0; k < n_; ++k) {
        out[k] = row[k];
        out[width_ + k] = 1 / row[k];
      }
    }
    return at;
  };
  if (end - begin <= kLeaf) return leaf(from);
  // Split the next hop whose shares differ most relatively (the error is relative).
  size_t dim = 0;
  for (size_t k = 1; k < n_; ++k) {
    if (box.hi[k] * box.lo[dim] > box.hi[dim] * box.lo[k]) dim = k;
  }
  if (box.hi[dim] == box.lo[dim]) return leaf(from);  // all alike
  // At the geometric middle of that next hop's shares (the error is relative).
  const double split = std::sqrt(box.lo[dim] * box.hi[dim]);
  uint32_t front = 0;
  WithLanes([&]<size_t L>() { front = Partition<L>(from, spare, dim, split, begin, end); });
  if (front == begin || front == end) return leaf(spare);  // the shares are too close to split
  Box left_box(width_), right_box(width_);
  BoxOf(spare.shares.data(), begin, front, left_box);
  BoxOf(spare.shares.data(), front, end, right_box);
  const int32_t left = Build(spare, from, left_box, begin, front);
  const int32_t right = Build(spare, from, right_box, front, end);
  nodes_[at].left = left;
  nodes_[at].right = right;
  return at;
}

PointTree::PointTree(size_t n, std::span<const double* const> share_of, std::span<const double> traffic,
                     size_t sample_stride)
    : n_(n), width_((n + 1) & ~size_t{1}) {
  const auto m = static_cast<uint32_t>(share_of.size());
  // The rows side by side in the caller's order, and a second buffer: each split moves
  // its points' rows from one to the other, so a node's rows are always side by side.
  // A row is padded to whole Lanes with 1 (the padding's box is [1, 1]: never split).
  Rows a{std::vector<double>(size_t{m} * width_, 1), std::vector<uint32_t>(m)};
  Rows b{std::vector<double>(size_t{m} * width_), std::vector<uint32_t>(m)};
  for (uint32_t j = 0; j < m; ++j) std::copy_n(share_of[j], n, a.shares.begin() + size_t{j} * width_);
  std::iota(a.point.begin(), a.point.end(), 0);
  point_.resize(m);
  // The points' data in tree order (a leaf's points side by side), written by Build.
  point_data_.assign(size_t{m} * 2 * width_, 1);  // the padding: share 1, inverse 1
  nodes_.reserve(2 * (m / kLeaf + 1));
  if (m > 0) {
    Box box(width_);
    BoxOf(a.shares.data(), 0, m, box);
    Build(a, b, box, 0, m);
  }
  traffic_.resize(m);
  sampled_.resize(m);
  pos_.resize(m);
  for (uint32_t x = 0; x < m; ++x) {
    const uint32_t j = point_[x];
    pos_[j] = x;
    traffic_[x] = traffic[j];
    sampled_[x] = j % sample_stride == 0;
  }
  err_.assign(m, kInf);
  best_.assign(m, 0);
  if (m > 0) Refresh(0);
}

uint32_t PointTree::Worse(uint32_t a, uint32_t b) const {
  if (a == kNone) return b;
  if (b == kNone) return a;
  if (err_[a] != err_[b]) return err_[a] > err_[b] ? a : b;
  if (traffic_[a] != traffic_[b]) return traffic_[a] > traffic_[b] ? a : b;
  return point_[a] < point_[b] ? a : b;
}

void PointTree::Summarize(Node& node) {
  if (node.left < 0) {
    // The largest errors first (branch-free), then which point has them.
    double top = 0, top_sampled = 0;
    for (uint32_t x = node.begin; x < node.end; ++x) {
      top = std::max(top, err_[x]);
      top_sampled = std::max(top_sampled, sampled_[x] ? err_[x] : 0.0);
    }
    node.max_err = top;
    node.worst = node.worst_sampled = kNone;
    for (uint32_t x = node.begin; x < node.end; ++x) {
      // Served exactly: never picked.
      if (err_[x] == top && top != 0) node.worst = Worse(node.worst, x);
      if (err_[x] == top_sampled && top_sampled != 0 && sampled_[x]) node.worst_sampled = Worse(node.worst_sampled, x);
    }
    return;
  }
  const Node& l = nodes_[node.left];
  const Node& r = nodes_[node.right];
  node.max_err = std::max(l.max_err, r.max_err);
  node.worst = Worse(l.worst, r.worst);
  node.worst_sampled = Worse(l.worst_sampled, r.worst_sampled);
}

void PointTree::Refresh(int32_t x) {
  Node& node = nodes_[x];
  if (node.left >= 0) {
    Refresh(node.left);
    Refresh(node.right);
  }
  Summarize(node);
}

template <size_t L>
double PointTree::LeastError(int32_t x, const double* c) const {
  const size_t width = L > 0 ? 2 * L : width_;
  const double* ilo = inv_box_.data() + size_t(x) * 2 * width;
  const double* ihi = ilo + width;
  const Lanes one = {1, 1};
  Lanes b = {0, 0};
  for (size_t k = 0; k < width; k += 2) {
    const Lanes ck = LoadLanes(c + k);
    b = MaxLanes(b, MaxLanes(one - ck * LoadLanes(ilo + k), ck * LoadLanes(ihi + k) - one));
  }
  return MaxOf(b) * (1 - kSlack) - kSlack;
}

template <size_t L>
bool PointTree::Add(int32_t x, const double* c, GroupId id) {
  Node& node = nodes_[x];
  if (!(node.max_err > 0)) return false;
  const double least = LeastError<L>(x, c);
  if (least >= node.max_err) return false;
  bool changed = false;
  if (node.left < 0) {
    const size_t width = L > 0 ? 2 * L : width_;
    for (uint32_t y = node.begin; y < node.end; ++y) {
      if (err_[y] <= least) continue;
      // The point's error max_k |c_k - w_k| / w_k, branch-free (cheaper than stopping early).
      const double* want = point_data_.data() + size_t{y} * 2 * width;
      const double* inv = want + width;
      Lanes lanes = {0, 0};
      for (size_t k = 0; k < width; k += 2) {
        lanes = MaxLanes(lanes, AbsLanes((LoadLanes(c + k) - LoadLanes(want + k)) * LoadLanes(inv + k)));
      }
      const double e = MaxOf(lanes);
      if (e < err_[y]) {
        err_[y] = e;
        best_[y] = id;
        changed = changed || y == node.worst || y == node.worst_sampled;
      }
    }
  } else {
    changed = Add<L>(node.left, c, id);
    changed = Add<L>(node.right, c, id) || changed;
  }
  if (changed) Summarize(node);
  return changed;
}

void PointTree::AddCenter(const double* shares, GroupId id) {
  if (nodes_.empty()) return;
  center_.assign(width_, 1);  // the padding: 1
  std::copy_n(shares, n_, center_.begin());
  WithLanes([&]<size_t L>() { Add<L>(0, center_.data(), id); });
}

}  // namespace bagd::rib
