// The group budget's point tree (group_budget.cc, GroupBudget::Place): farthest first
// (Gonzalez's k-center heuristic) over the points of one next-hop set, a point being one
// wanted group's shares and a center one slot's. Every point keeps its error against the
// nearest center so far, exactly, as centers are added, and the tree answers which point is
// served worst. The points sit in a k-d tree whose nodes keep their points' bounding box,
// their largest error and their worst-served point; adding a center enters only the nodes
// holding a point it may serve better (the least error the center can have anywhere in the
// box is below the box's largest error), so a center costs about the points it comes to
// serve, not every point. The loops over next hops run two doubles at a time (SIMD with
// GCC/Clang vector extensions), exactly as one at a time. See docs/benchmarks.md (PointTree).
//
// Points are numbered 0..size()-1 by the caller; ties between points go to more traffic,
// then the lower number; ties between centers to the one added first.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "rib/fib_update.h"

namespace bagd::rib {

class PointTree {
 public:
  static constexpr uint32_t kNone = UINT32_MAX;

  // `n` next hops; `share_of[j]`: point j's n shares; `traffic[j]` what it carries. Points j
  // with j % sample_stride == 0 are the sample (Worst(true)).
  PointTree(size_t n, std::span<const double* const> share_of, std::span<const double> traffic, size_t sample_stride);

  size_t size() const { return point_.size(); }
  double error(uint32_t j) const { return err_[pos_[j]]; }
  GroupId best(uint32_t j) const { return best_[pos_[j]]; }

  // Center `id` with `shares`: every point it serves better than its nearest so far takes it.
  void AddCenter(const double* shares, GroupId id);
  // Point j is served by `id` with error `e` (a center the tree cannot search: another next-hop
  // set); if better than what it has. Refresh() afterwards.
  void Offer(uint32_t j, double e, GroupId id) {
    const uint32_t x = pos_[j];
    if (e < err_[x]) {
      err_[x] = e;
      best_[x] = id;
    }
  }
  void Refresh() {
    if (!nodes_.empty()) Refresh(0);
  }
  // The point served worst (kNone if every one is served exactly), among the sample or all.
  uint32_t Worst(bool sample_only) const {
    if (nodes_.empty()) return kNone;
    const uint32_t x = sample_only ? nodes_[0].worst_sampled : nodes_[0].worst;
    return x == kNone ? kNone : point_[x];
  }

 private:
  static constexpr uint32_t kLeaf = 32;
  // The least error is computed a little differently from a point's error: this much slack
  // keeps it a true lower bound under rounding.
  static constexpr double kSlack = 1e-12;
  struct Node {
    uint32_t begin, end;  // tree positions
    int32_t left = -1, right = -1;
    double max_err = std::numeric_limits<double>::infinity();
    uint32_t worst = kNone, worst_sampled = kNone;  // tree positions
  };
  // The bounding box of some points' shares, per next hop (padded to whole Lanes).
  struct Box;
  // Points' shares (width_ each) and numbers, by position.
  struct Rows;

  // Calls f.template operator()<L>() with the rows' Lanes L when up to 8 next hops (the loops
  // over them then have a fixed length, unrolled), else with L = 0 (width_ / 2 at run time).
  template <typename F>
  void WithLanes(F&& f) const;
  // The box of rows [begin, end) (width_ doubles each, side by side). Up to 8 next hops the
  // bounds are L Lanes held in registers across the rows (a bound kept in memory waits on
  // its own store at every row).
  // L = 0 (over 8 next hops): one next hop at a time.
  template <size_t L>
  static void BoxOfLanes(const double* rows, size_t width, uint32_t begin, uint32_t end, Box& box);
  void BoxOf(const double* rows, uint32_t begin, uint32_t end, Box& box) const;
  // Moves rows [begin, end) of `from` into `spare`: those below `split` on next hop `dim`
  // from the front, the others from the back, without a branch on the side. Returns where
  // the back ones start. L: the rows' Lanes, if fixed (0: width_ / 2).
  template <size_t L>
  uint32_t Partition(const Rows& from, Rows& spare, size_t dim, double split, uint32_t begin, uint32_t end) const;
  // The subtree over tree positions [begin, end), whose points' box is `box` and whose rows
  // are in `from` there; `spare` is free there. A split moves the rows into `spare`, the
  // left child's from the front and the right child's from the back, without a branch on
  // the side (the order within a node does not matter: every tie is broken by point
  // number), then takes each child's box from its rows, side by side. A leaf writes its
  // points' data.
  int32_t Build(Rows& from, Rows& spare, const Box& box, uint32_t begin, uint32_t end);

  // Which of two points (tree positions, kNone: none) is served worse.
  uint32_t Worse(uint32_t a, uint32_t b) const;
  void Summarize(Node& node);
  void Refresh(int32_t x);

  // The least error `c` can have on any point in node x's box: per next hop, a share p in
  // [lo, hi] is off by |c - p| / p >= 1 - c / lo (c below lo) or c / hi - 1 (c above hi).
  // L: the rows' Lanes, if fixed (0: width_ / 2).
  template <size_t L>
  double LeastError(int32_t x, const double* c) const;
  // Whether the summary of node x (its largest error, its worst-served points) changed: a
  // point's error only falls, so a leaf's summary changes only if one of its worst points
  // took the center, and a parent's only if a child's did.
  template <size_t L>
  bool Add(int32_t x, const double* c, GroupId id);

  size_t n_;
  size_t width_;  // n_ rounded up to whole Lanes: the rows below are padded to it
  std::vector<uint32_t> point_;  // by tree position: the caller's number
  std::vector<uint32_t> pos_;    // by the caller's number: tree position
  std::vector<Node> nodes_;
  std::vector<double> inv_box_;  // per node: 1 / lo[width], 1 / hi[width]
  std::vector<double> point_data_;   // by tree position: width shares, then their width inverses
  std::vector<double> center_;       // the center being added, padded
  std::vector<double> traffic_, err_;  // by tree position
  std::vector<uint8_t> sampled_;  // by tree position: in the sample
  std::vector<GroupId> best_;
};

}  // namespace bagd::rib
