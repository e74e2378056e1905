#include "rib/weights/group_budget.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>
#include <numeric>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"

namespace bagd::rib {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

enum Relation : uint8_t { kEqual, kSlotSubset, kSlotSuperset, kUnrelated };

std::vector<double> SharesOf(const std::vector<FibGroupMember>& members) {
  double sum = 0;
  for (const auto& m : members) sum += m.weight;
  std::vector<double> out;
  out.reserve(members.size());
  for (const auto& m : members) out.push_back(sum > 0 ? m.weight / sum : 0);
  return out;
}

// Largest relative error of `got` against `want` (same next hops, in order); stops as soon
// as it reaches `bound` (the caller only wants to know it is no better than that).
double AlignedError(const std::vector<double>& want, const std::vector<double>& got, double bound) {
  double e = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double d = std::abs(got[i] - want[i]) / want[i];
    if (d > e) {
      e = d;
      if (e >= bound) return e;
    }
  }
  return e;
}

// Centers (n shares each, at `shares + c * n`) in a k-d tree whose nodes keep the bounding
// box of their centers: the nearest center of a point under the share error
// max_k |c_k - w_k| / w_k, by branch and bound. A box whose nearest corner is already as
// far off as the best center found is not entered, on any of the n next hops (a window on
// one next hop's share alone still held ~40 % of the centers).
class CenterTree {
 public:
  CenterTree(const double* shares, size_t n, uint32_t first, uint32_t end) : shares_(shares), n_(n) {
    ids_.resize(end - first);
    std::iota(ids_.begin(), ids_.end(), first);
    nodes_.reserve(2 * ids_.size() / kLeaf + 2);
    if (!ids_.empty()) Build(0, static_cast<uint32_t>(ids_.size()));
  }

  // Improves `err` and `best` (a center index) with the centers at or past `skip_below`
  // (those before it were compared already). Ties keep the earlier center.
  void Nearest(const double* want, const double* inv, uint32_t skip_below, double& err, uint32_t& best) const {
    if (!nodes_.empty()) Search(0, want, inv, skip_below, err, best);
  }

 private:
  static constexpr uint32_t kLeaf = 1;
  struct Node {
    uint32_t begin, end;  // into ids_
    int32_t left = -1, right = -1;
  };

  int32_t Build(uint32_t begin, uint32_t end) {
    const auto at = static_cast<int32_t>(nodes_.size());
    nodes_.push_back(Node{begin, end});
    const size_t box = box_.size();
    box_.resize(box + 2 * n_);
    double* lo = box_.data() + box;
    double* hi = lo + n_;
    for (size_t k = 0; k < n_; ++k) {
      lo[k] = kInf;
      hi[k] = -kInf;
    }
    for (uint32_t x = begin; x < end; ++x) {
      const double* c = shares_ + size_t{ids_[x]} * n_;
      for (size_t k = 0; k < n_; ++k) {
        lo[k] = std::min(lo[k], c[k]);
        hi[k] = std::max(hi[k], c[k]);
      }
    }
    if (end - begin <= kLeaf) return at;
    // Split where the shares differ most relatively (the error is relative: a small share
    // spread thin matters as much as a large one spread wide).
    size_t dim = 0;
    for (size_t k = 1; k < n_; ++k) {
      if (hi[k] * lo[dim] > hi[dim] * lo[k]) dim = k;
    }
    if (hi[dim] == lo[dim]) return at;  // all alike: a leaf
    const uint32_t mid = begin + (end - begin) / 2;
    std::nth_element(ids_.begin() + begin, ids_.begin() + mid, ids_.begin() + end, [&](uint32_t a, uint32_t b) {
      const double x = shares_[size_t{a} * n_ + dim], y = shares_[size_t{b} * n_ + dim];
      return x != y ? x < y : a < b;
    });
    const int32_t left = Build(begin, mid);
    const int32_t right = Build(mid, end);
    nodes_[at].left = left;
    nodes_[at].right = right;
    return at;
  }

  // Branch-free loops over the next hops (a handful): cheaper than stopping early.
  double Error(const double* got, const double* want, const double* inv) const {
    double e = 0;
    for (size_t k = 0; k < n_; ++k) {
      const double d = (got[k] - want[k]) * inv[k];
      const double a = d < 0 ? -d : d;
      e = a > e ? a : e;
    }
    return e;
  }
  // The least error any center in node `x`'s box can have.
  double Bound(int32_t x, const double* want, const double* inv) const {
    const double* lo = box_.data() + size_t(x) * 2 * n_;
    const double* hi = lo + n_;
    // Two running maxima: the next hops' terms do not wait on each other.
    double b0 = 0, b1 = 0;
    size_t k = 0;
    for (; k + 1 < n_; k += 2) {
      const double below0 = (lo[k] - want[k]) * inv[k], above0 = (want[k] - hi[k]) * inv[k];
      const double below1 = (lo[k + 1] - want[k + 1]) * inv[k + 1], above1 = (want[k + 1] - hi[k + 1]) * inv[k + 1];
      const double d0 = below0 > above0 ? below0 : above0, d1 = below1 > above1 ? below1 : above1;
      b0 = d0 > b0 ? d0 : b0;
      b1 = d1 > b1 ? d1 : b1;
    }
    if (k < n_) {
      const double below = (lo[k] - want[k]) * inv[k], above = (want[k] - hi[k]) * inv[k];
      const double d = below > above ? below : above;
      b0 = d > b0 ? d : b0;
    }
    return b0 > b1 ? b0 : b1;
  }

  void Search(int32_t x, const double* want, const double* inv, uint32_t skip_below, double& err,
              uint32_t& best) const {
    const Node& node = nodes_[x];
    if (node.left < 0) {
      for (uint32_t y = node.begin; y < node.end; ++y) {
        const uint32_t c = ids_[y];
        if (c < skip_below) continue;
        const double e = Error(shares_ + size_t{c} * n_, want, inv);
        if (e < err || (e == err && c < best)) {
          err = e;
          best = c;
        }
      }
      return;
    }
    const double bl = Bound(node.left, want, inv), br = Bound(node.right, want, inv);
    const bool left_first = bl <= br;
    const int32_t first = left_first ? node.left : node.right, second = left_first ? node.right : node.left;
    if ((left_first ? bl : br) <= err) Search(first, want, inv, skip_below, err, best);
    if ((left_first ? br : bl) <= err) Search(second, want, inv, skip_below, err, best);
  }

  const double* shares_;
  size_t n_;
  std::vector<uint32_t> ids_;
  std::vector<Node> nodes_;
  std::vector<double> box_;  // per node: lo[n], hi[n]
};

}  // namespace

double ShareError(const std::vector<FibGroupMember>& own, const std::vector<FibGroupMember>& served) {
  const std::vector<double> want = SharesOf(own), got = SharesOf(served);
  double e = 0;
  size_t j = 0;
  for (size_t i = 0; i < own.size(); ++i) {
    while (j < served.size() && served[j].next_hop < own[i].next_hop) ++j;
    const double p = j < served.size() && served[j].next_hop == own[i].next_hop ? got[j] : 0;
    e = std::max(e, std::abs(p - want[i]) / want[i]);
  }
  return e;
}

const char* MergeScopeName(MergeScope s) {
  switch (s) {
    case MergeScope::kSameNextHops: return "same-next-hops";
    case MergeScope::kSubset: return "subset";
    case MergeScope::kSuperset: return "superset";
  }
  return "?";
}

uint32_t GroupBudget::ClassOf(const std::vector<FibGroupMember>& members) {
  // Neighbouring groups of a batch mostly have the same next hops.
  if (last_class_ < classes_.size()) {
    const auto& nh = classes_[last_class_].next_hops;
    if (nh.size() == members.size() &&
        std::equal(nh.begin(), nh.end(), members.begin(), [](const wire::IpAddress& a, const FibGroupMember& m) {
          return a == m.next_hop;
        })) {
      return last_class_;
    }
  }
  std::string key;
  for (const auto& m : members) {
    key.push_back(static_cast<char>(m.next_hop.size()));
    key.append(reinterpret_cast<const char*>(m.next_hop.bytes()), m.next_hop.size());
  }
  auto [it, fresh] = class_index_.try_emplace(key, static_cast<uint32_t>(classes_.size()));
  if (fresh) {
    NhClass c;
    for (const auto& m : members) c.next_hops.push_back(m.next_hop);
    classes_.push_back(std::move(c));
  }
  last_class_ = it->second;
  return it->second;
}

std::string GroupBudget::ContentKey(uint32_t nh_class, const std::vector<FibGroupMember>& members) {
  std::string key(reinterpret_cast<const char*>(&nh_class), sizeof nh_class);
  for (const auto& m : members) key.append(reinterpret_cast<const char*>(&m.weight), sizeof m.weight);
  return key;
}

bool GroupBudget::Compatible(uint32_t wanted_class, uint32_t slot_class, bool any_subset) const {
  if (wanted_class == slot_class) return true;
  const uint64_t k = (uint64_t{wanted_class} << 32) | slot_class;
  auto it = relation_.find(k);
  if (it == relation_.end()) {
    const auto& w = classes_[wanted_class].next_hops;
    const auto& s = classes_[slot_class].next_hops;
    Relation r = kUnrelated;
    if (std::includes(w.begin(), w.end(), s.begin(), s.end())) {
      r = kSlotSubset;
    } else if (std::includes(s.begin(), s.end(), w.begin(), w.end())) {
      r = kSlotSuperset;
    }
    it = relation_.emplace(k, r).first;
  }
  switch (it->second) {
    case kEqual: return true;
    case kSlotSubset: return any_subset || config_.scope != MergeScope::kSameNextHops;
    case kSlotSuperset: return config_.scope == MergeScope::kSuperset;
    default: return false;
  }
}

std::optional<double> GroupBudget::ErrorOf(const Wanted& w, const Slot& s, double bound, bool any_subset) const {
  if (w.nh_class == s.nh_class) return AlignedError(w.share, s.share, bound);
  if (!Compatible(w.nh_class, s.nh_class, any_subset || w.fallback)) return std::nullopt;
  // Next hops both sorted: a member the slot lacks gets nothing (error 1); one the slot
  // has in excess (superset) takes traffic, which shows as the others' shortfall.
  double e = 0;
  size_t j = 0;
  for (size_t i = 0; i < w.members.size(); ++i) {
    while (j < s.members.size() && s.members[j].next_hop < w.members[i].next_hop) ++j;
    const double got = j < s.members.size() && s.members[j].next_hop == w.members[i].next_hop ? s.share[j] : 0;
    e = std::max(e, std::abs(got - w.share[i]) / w.share[i]);
  }
  return e;
}

double GroupBudget::Traffic(const Wanted& w) const {
  return static_cast<double>(w.prefixes) * (config_.weight_by == MergeWeight::kBandwidth ? w.bw : 1.0);
}

size_t GroupBudget::HardRoom() const {
  // Keeping an adopted group creates nothing: only the kept ones count.
  const size_t used = adopting_ ? slots_.size() : before_ + created_;
  return used >= config_.max_groups ? 0 : config_.max_groups - used;
}

size_t GroupBudget::VoluntaryRoom() const {
  const uint32_t reserve = std::min(config_.reserve, config_.max_groups > 0 ? config_.max_groups - 1 : 0);
  const size_t steady = config_.max_groups - reserve;
  const size_t room = slots_.size() >= steady ? 0 : steady - slots_.size();
  return std::min(room, HardRoom());
}

void GroupBudget::SetContent(Slot& s, const std::vector<FibGroupMember>& members, const std::vector<double>& share,
                             uint32_t nh_class) {
  if (!s.content.empty()) {
    if (auto it = by_content_.find(s.content); it != by_content_.end() && it->second == s.id) by_content_.erase(it);
  }
  if (s.nh_class != nh_class || s.members.empty()) {
    if (!s.members.empty()) std::erase(classes_[s.nh_class].slots, s.id);
    classes_[nh_class].slots.push_back(s.id);
  }
  const bool changed = s.members != members;
  s.members = members;
  s.share = share;
  s.nh_class = nh_class;
  s.content = ContentKey(nh_class, members);
  by_content_.try_emplace(s.content, s.id);
  if (changed || !s.announced) dirty_slots_.insert(s.id);
}

GroupId GroupBudget::NewSlot(GroupId tmpl) {
  // Adopting: the exact group is in the FIB already, with these members; it stays, in place.
  const bool keep = adopting_ && adopted_.erase(tmpl) > 0;
  const GroupId id = keep ? tmpl : next_slot_++;
  Slot& s = slots_[id];
  s.id = id;
  s.tmpl = tmpl;
  s.announced = keep;
  const Wanted& w = wanted_.at(tmpl);
  SetContent(s, w.members, w.share, w.nh_class);
  if (keep) {
    dirty_slots_.erase(id);
  } else {
    ++created_;
    assert(before_ + created_ <= config_.max_groups);
  }
  return id;
}

void GroupBudget::Adopt(const std::vector<FibGroup>& groups,
                        const std::vector<std::pair<wire::Prefix, GroupId>>& routes) {
  assert(wanted_.empty() && slots_.empty());
  wanted_.reserve(groups.size());
  for (const FibGroup& g : groups) {
    Wanted& w = wanted_[g.id];
    w.members = g.members;
    w.share = SharesOf(g.members);
    w.nh_class = ClassOf(g.members);
    adopted_.insert(g.id);
  }
  routes_.reserve(routes.size());
  for (const auto& [p, gid] : routes) {
    auto it = wanted_.find(gid);
    if (it == wanted_.end()) continue;
    routes_[p] = Route{gid, gid};
    ++it->second.prefixes;
    ++it->second.installed_routes;
  }
}

void GroupBudget::PlaceAdopted(absl::FunctionRef<double(GroupId)> bandwidth, absl::Time now) {
  // Every wanted group is placed as on a fresh table, but a slot is one of the adopted
  // groups kept in place; the routes of the others move onto the kept ones (all of them are
  // looked at), and the others are deleted after the routes.
  std::vector<GroupId> all;
  all.reserve(wanted_.size());
  for (auto& [id, w] : wanted_) {
    w.bw = bandwidth(id);
    all.push_back(id);
    if (w.installed_routes > 0) moved_.insert(id);
  }
  adopting_ = true;
  Place(std::move(all), now);
  adopting_ = false;
  std::vector<GroupId> retired(adopted_.begin(), adopted_.end());
  std::sort(retired.begin(), retired.end());
  freed_.insert(freed_.end(), retired.begin(), retired.end());
  adopted_.clear();
}

void GroupBudget::Assign(GroupId wid, Wanted& w, GroupId slot, double error, absl::Time now) {
  w.error = error;
  if (w.slot == slot) return;
  if (w.slot != 0) {
    Slot& old = slots_.at(w.slot);
    old.users.erase(wid);
    if (old.tmpl == wid) {
      old.tmpl = 0;  // its weights stay; a same-class user may adopt it
      slot_lost_template_.insert(old.id);
    }
    maybe_empty_.insert(old.id);
  }
  // Its routes in the FIB must follow; those of a group that was unrouted get installed now
  // (they are not in this update unless they changed).
  const bool was_unrouted = unrouted_.erase(wid) > 0;
  if (w.installed_routes > 0 || was_unrouted) moved_.insert(wid);
  w.slot = slot;
  w.since = now;
  if (slot != 0) slots_.at(slot).users.insert(wid);
}

void GroupBudget::Unassign(GroupId wid, Wanted& w) {
  if (w.slot == 0) return;
  Slot& old = slots_.at(w.slot);
  old.users.erase(wid);
  if (old.tmpl == wid) {
    old.tmpl = 0;
    slot_lost_template_.insert(old.id);
  }
  maybe_empty_.insert(old.id);
  if (w.installed_routes > 0) moved_.insert(wid);
  w.slot = 0;
  w.fallback = false;
}

void GroupBudget::RefreshUsers(Slot& s, std::vector<GroupId>& unplaced) {
  std::vector<GroupId> lost;
  for (const GroupId u : s.users) {
    Wanted& w = wanted_.at(u);
    if (auto e = ErrorOf(w, s, kInf)) {
      w.error = *e;
    } else {
      lost.push_back(u);
    }
  }
  std::sort(lost.begin(), lost.end());
  for (const GroupId u : lost) {
    Unassign(u, wanted_.at(u));
    unplaced.push_back(u);
  }
}

void GroupBudget::FreeEmpty() {
  std::vector<GroupId> empty;
  for (const GroupId id : maybe_empty_) {
    auto it = slots_.find(id);
    if (it != slots_.end() && it->second.users.empty()) empty.push_back(id);
  }
  maybe_empty_.clear();
  std::sort(empty.begin(), empty.end());
  for (const GroupId id : empty) {
    Slot& s = slots_.at(id);
    if (auto it = by_content_.find(s.content); it != by_content_.end() && it->second == id) by_content_.erase(it);
    std::erase(classes_[s.nh_class].slots, id);
    if (s.announced) freed_.push_back(id);
    dirty_slots_.erase(id);
    slots_.erase(id);
  }
}

void GroupBudget::Place(std::vector<GroupId> unplaced, absl::Time now) {
  std::sort(unplaced.begin(), unplaced.end());
  unplaced.erase(std::unique(unplaced.begin(), unplaced.end()), unplaced.end());
  // Wanted groups with the same weights are one point.
  // (wanted_ does not change shape in Place: its entries stay where they are.)
  struct Raw {
    uint32_t cls;
    GroupId first;  // the wanted group whose shares stand for the point
    Wanted* first_w;
    double traffic;
    absl::InlinedVector<std::pair<GroupId, Wanted*>, 1> groups;  // usually one: no allocation
  };
  std::vector<Raw> raw;
  raw.reserve(unplaced.size());
  {
    // Keyed by the wanted group itself, hashed and compared by its class and weights (no
    // key string per group: wanted_ does not change shape in this loop).
    struct SameWeights {
      using is_transparent = void;
      size_t operator()(const Wanted* w) const {
        size_t h = absl::HashOf(w->nh_class);
        for (const auto& m : w->members) h = absl::HashOf(h, m.weight);
        return h;
      }
      bool operator()(const Wanted* a, const Wanted* b) const {
        if (a->nh_class != b->nh_class || a->members.size() != b->members.size()) return false;
        for (size_t k = 0; k < a->members.size(); ++k) {
          if (a->members[k].weight != b->members[k].weight) return false;
        }
        return true;
      }
    };
    absl::flat_hash_map<const Wanted*, size_t, SameWeights, SameWeights> by_key;
    by_key.reserve(unplaced.size());
    for (const GroupId wid : unplaced) {
      auto it = wanted_.find(wid);
      if (it == wanted_.end() || it->second.prefixes == 0 || it->second.slot != 0) continue;
      Wanted& w = it->second;
      if (!by_content_.empty()) {
        if (auto s = by_content_.find(ContentKey(w.nh_class, w.members)); s != by_content_.end()) {
          Assign(wid, w, s->second, 0, now);  // the very weights are installed already
          continue;
        }
      }
      auto [p, fresh] = by_key.try_emplace(&w, raw.size());
      if (fresh) raw.push_back(Raw{w.nh_class, wid, &w, 0, {}});
      raw[p->second].groups.emplace_back(wid, &w);
      raw[p->second].traffic += Traffic(w);
    }
  }
  if (raw.empty()) return;
  // The points of a class side by side, their shares (and inverses) in one array: the
  // loops below must not chase a hash map per point. Farthest first, lazily: a point's error
  // is brought up to date against the slots added since it was last looked at only when it
  // comes to the top of its class's heap (errors only go down, so a stale entry is an upper
  // bound and the point on top once up to date is the worst served: the same choice as
  // updating every point for every slot, at a fraction of the work).
  struct Range {
    uint32_t cls;
    size_t begin, end;
    size_t n;    // next hops
    std::vector<GroupId> centers;       // slots of this class, in the order they came
    std::vector<double> center_shares;  // n per center
  };
  const size_t count = raw.size();
  std::vector<const std::vector<double>*> share_of(count);
  for (size_t x = 0; x < count; ++x) share_of[x] = &raw[x].first_w->share;
  std::vector<size_t> order(count);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) { return raw[x].cls < raw[y].cls; });
  std::vector<Range> ranges;
  for (size_t i = 0; i < count;) {
    size_t j = i;
    while (j < count && raw[order[j]].cls == raw[order[i]].cls) ++j;
    Range r;
    r.cls = raw[order[i]].cls;
    r.begin = i;
    r.end = j;
    r.n = classes_[r.cls].next_hops.size();
    for (const GroupId sid : classes_[r.cls].slots) {
      r.centers.push_back(sid);
      const Slot& sl = slots_.at(sid);
      r.center_shares.insert(r.center_shares.end(), sl.share.begin(), sl.share.end());
    }
    ranges.push_back(std::move(r));
    i = j;
  }
  std::vector<size_t> off(count);
  std::vector<double> shares, inv, err(count, kInf), traffic(count);
  std::vector<GroupId> best(count, 0);
  std::vector<uint32_t> seen(count, 0);  // centers of its class it was compared with
  shares.reserve(count * 8);
  inv.reserve(count * 8);
  for (size_t i = 0; i < count; ++i) {
    const std::vector<double>& sh = *share_of[order[i]];
    off[i] = shares.size();
    shares.insert(shares.end(), sh.begin(), sh.end());
    for (const double v : sh) inv.push_back(1 / v);
    traffic[i] = raw[order[i]].traffic;
  }
  // The error of point i against center c of range r; infinity if it is `limit` or more.
  auto error_to = [&](const Range& r, size_t i, size_t c, double limit) {
    const double* want = shares.data() + off[i];
    const double* iv = inv.data() + off[i];
    const double* got = r.center_shares.data() + c * r.n;
    double e = 0;
    for (size_t k = 0; k < r.n; ++k) {
      e = std::max(e, std::abs(got[k] - want[k]) * iv[k]);
      if (e >= limit) return kInf;
    }
    return e;
  };
  auto refresh = [&](Range& r, size_t i) {
    for (size_t c = seen[i]; c < r.centers.size(); ++c) {
      const double e = error_to(r, i, c, err[i]);
      if (e < err[i]) {
        err[i] = e;
        best[i] = r.centers[c];
      }
    }
    seen[i] = static_cast<uint32_t>(r.centers.size());
  };
  struct Entry {
    double error;
    double traffic;
    size_t i;
  };
  auto less = [](const Entry& a, const Entry& b) {
    if (a.error != b.error) return a.error < b.error;
    if (a.traffic != b.traffic) return a.traffic < b.traffic;
    return a.i > b.i;
  };
  std::vector<std::vector<Entry>> heaps(ranges.size());
  // A big batch (a restart, a reload) first picks slots among a sample of its points, then
  // brings every point up to date at once (catch_up: a nearest-center search in a k-d tree), and picks
  // the last quarter of the slots among all points, so no outlier the sample missed is left
  // far off. `stride` 1: every point from the start.
  constexpr size_t kSample = 4096;
  const size_t stride = count > 2 * kSample ? count / kSample : 1;
  auto build_heaps = [&](size_t step) {
    for (size_t ri = 0; ri < ranges.size(); ++ri) {
      auto& h = heaps[ri];
      h.clear();
      for (size_t i = ranges[ri].begin; i < ranges[ri].end; ++i) {
        if ((i - ranges[ri].begin) % step == 0 && err[i] > 0) h.push_back(Entry{err[i], traffic[i], i});
      }
      std::make_heap(h.begin(), h.end(), less);
    }
  };
  build_heaps(stride);
  // The worst-served point of range ri, up to date; nullptr if every point is served exactly.
  auto top = [&](size_t ri) -> const Entry* {
    auto& h = heaps[ri];
    while (!h.empty()) {
      const Entry e = h.front();
      if (seen[e.i] == ranges[ri].centers.size() && e.error == err[e.i]) return err[e.i] > 0 ? &h.front() : nullptr;
      std::pop_heap(h.begin(), h.end(), less);
      h.pop_back();
      refresh(ranges[ri], e.i);
      if (err[e.i] > 0) {
        h.push_back(Entry{err[e.i], traffic[e.i], e.i});
        std::push_heap(h.begin(), h.end(), less);
      }
    }
    return nullptr;
  };
  const bool cross = config_.scope != MergeScope::kSameNextHops;
  // Slots of other classes that may serve a range (subset/superset scopes): offered at once.
  auto offer_cross = [&](const Slot& s) {
    for (Range& r : ranges) {
      if (s.nh_class == r.cls || !Compatible(r.cls, s.nh_class, false)) continue;
      for (size_t i = r.begin; i < r.end; ++i) {
        if (err[i] == 0) continue;
        if (auto e = ErrorOf(*raw[order[i]].first_w, s, err[i]); e && *e < err[i]) {
          err[i] = *e;
          best[i] = s.id;
        }
      }
    }
  };
  if (cross) {
    for (const auto& [sid, sl] : slots_) offer_cross(sl);
  }
  auto create = [&](size_t ri, size_t i) {
    const GroupId sid = NewSlot(raw[order[i]].first);
    const Slot& sl = slots_.at(sid);
    Range& r = ranges[ri];
    r.centers.push_back(sid);
    r.center_shares.insert(r.center_shares.end(), sl.share.begin(), sl.share.end());
    if (cross) offer_cross(sl);
  };
  // 1. Every point needs a server: the classes nothing installed serves get one slot each,
  //    the biggest first, from the reserve if need be (for the point carrying most traffic).
  {
    std::vector<std::pair<double, size_t>> uncovered;  // (traffic, range)
    for (size_t ri = 0; ri < ranges.size(); ++ri) {
      if (!ranges[ri].centers.empty()) continue;
      double t = 0;
      bool any = false;
      for (size_t i = ranges[ri].begin; i < ranges[ri].end; ++i) {
        if (err[i] == kInf) {
          any = true;
          t += traffic[i];
        }
      }
      if (any) uncovered.emplace_back(t, ri);
    }
    std::sort(uncovered.begin(), uncovered.end(), [&](const auto& a, const auto& b) {
      return a.first != b.first ? a.first > b.first : ranges[a.second].cls < ranges[b.second].cls;
    });
    for (const auto& [t, ri] : uncovered) {
      if (HardRoom() == 0) break;
      size_t pick = SIZE_MAX;
      for (size_t i = ranges[ri].begin; i < ranges[ri].end; ++i) {
        if (err[i] == kInf && (pick == SIZE_MAX || traffic[i] > traffic[pick])) pick = i;
      }
      if (pick != SIZE_MAX) create(ri, pick);  // else a superset slot made for another class serves it
    }
  }
  // 2. Farthest first: the worst-served point gets the next slot, while the steady state
  //    has room (the reserve stays free).
  // Every point against the centers it has not seen: the nearest of them found in a k-d tree
  // over those centers (CenterTree: a box no closer than the best error found is skipped).
  // `from`: per range, the first center some point has not seen (the older ones every point has).
  std::vector<size_t> from(ranges.size(), 0);
  auto catch_up = [&] {
    for (size_t ri = 0; ri < ranges.size(); ++ri) {
      Range& r = ranges[ri];
      const size_t nc = r.centers.size();
      if (nc <= from[ri]) continue;
      const CenterTree tree(r.center_shares.data(), r.n, static_cast<uint32_t>(from[ri]), static_cast<uint32_t>(nc));
      from[ri] = nc;
      for (size_t i = r.begin; i < r.end; ++i) {
        if (seen[i] == nc || err[i] == 0) continue;
        uint32_t c = UINT32_MAX;
        double e = err[i];
        tree.Nearest(shares.data() + off[i], inv.data() + off[i], seen[i], e, c);
        if (c != UINT32_MAX && e < err[i]) {
          err[i] = e;
          best[i] = r.centers[c];
        }
        seen[i] = static_cast<uint32_t>(nc);
      }
    }
  };
  const size_t sampled_slots = stride > 1 ? VoluntaryRoom() * 3 / 4 : 0;
  for (size_t picked = 0; VoluntaryRoom() > 0; ++picked) {
    if (stride > 1 && picked == sampled_slots) {
      catch_up();
      build_heaps(1);
    }
    const Entry* pick = nullptr;
    size_t pick_range = 0;
    for (size_t ri = 0; ri < ranges.size(); ++ri) {
      const Entry* t = top(ri);
      if (t != nullptr && (pick == nullptr || less(*pick, *t))) {
        pick = t;
        pick_range = ri;
      }
    }
    if (pick == nullptr) break;
    create(pick_range, pick->i);
  }
  catch_up();
  // 3. Assign. A point nothing serves: the closest installed subset of its next hops, even
  //    if the scope does not allow it (its traffic stays on its own next hops; a missing
  //    route would be worse), else unrouted.
  for (size_t i = 0; i < count; ++i) {
    const Raw& p = raw[order[i]];
    bool fallback = false;
    if (best[i] == 0) {
      const Wanted& w0 = *p.first_w;
      double e = kInf;
      for (const auto& [sid, s] : slots_) {
        if (auto x = ErrorOf(w0, s, kInf, /*any_subset=*/true); x && (*x < e || (*x == e && sid < best[i]))) {
          e = *x;
          best[i] = sid;
        }
      }
      err[i] = e;
      fallback = best[i] != 0;
    }
    for (const auto& [wid, wp] : p.groups) {
      Wanted& w = *wp;
      if (best[i] == 0) {
        if (!unrouted_.insert(wid).second) continue;
        notices_.push_back(absl::StrCat("next-hop group budget: ", w.prefixes,
                                        " routes are not installed: the FIB holds ", config_.max_groups,
                                        " groups and none of them uses only their next hops"));
        continue;
      }
      w.fallback = fallback;
      Assign(wid, w, best[i], err[i], now);
    }
  }
}

void GroupBudget::Shrink(absl::Time now) {
  // Over the steady state: merge a slot into the others, until it fits. Deletes and route
  // moves only. The victim is the one whose users lose least (the largest error they get
  // elsewhere), among the few slots carrying least traffic (looking at all would be
  // quadratic in the slots).
  const uint32_t reserve = std::min(config_.reserve, config_.max_groups > 0 ? config_.max_groups - 1 : 0);
  const size_t steady = config_.max_groups - reserve;
  constexpr size_t kCandidates = 8;
  absl::flat_hash_set<GroupId> stuck;  // a user has nowhere else to go
  while (slots_.size() > steady) {
    std::vector<std::pair<double, GroupId>> light;
    for (const auto& [sid, s] : slots_) {
      if (stuck.contains(sid)) continue;
      double t = 0;
      for (const GroupId u : s.users) t += Traffic(wanted_.at(u));
      light.emplace_back(t, sid);
    }
    if (light.empty()) break;
    const size_t n = std::min(kCandidates, light.size());
    std::partial_sort(light.begin(), light.begin() + static_cast<ptrdiff_t>(n), light.end());
    GroupId victim = 0;
    double victim_cost = kInf;
    std::vector<std::pair<GroupId, std::pair<GroupId, double>>> victim_plan;
    for (size_t c = 0; c < n; ++c) {
      const GroupId cand = light[c].second;
      std::vector<GroupId> users(slots_.at(cand).users.begin(), slots_.at(cand).users.end());
      std::sort(users.begin(), users.end());
      std::vector<std::pair<GroupId, std::pair<GroupId, double>>> plan;
      double cost = 0;
      for (const GroupId u : users) {
        const Wanted& w = wanted_.at(u);
        GroupId to = 0;
        double best = kInf;
        for (const auto& [sid, s] : slots_) {
          if (sid == cand) continue;
          if (auto e = ErrorOf(w, s, kInf); e && (*e < best || (*e == best && sid < to))) {
            best = *e;
            to = sid;
          }
        }
        if (to == 0) {
          cost = kInf;
          break;
        }
        cost = std::max(cost, best);
        plan.push_back({u, {to, best}});
      }
      if (cost == kInf) {
        stuck.insert(cand);
        continue;
      }
      if (cost < victim_cost) {
        victim_cost = cost;
        victim = cand;
        victim_plan = std::move(plan);
      }
    }
    if (victim == 0) continue;  // all candidates stuck: try the next lightest
    for (const auto& [u, where] : victim_plan) Assign(u, wanted_.at(u), where.first, where.second, now);
    FreeEmpty();
  }
}

void GroupBudget::Retemplate(Slot& s) {
  // Its template left (withdrawn, or moved): the slot copies the user carrying most traffic
  // over the same next hops, if that makes no user's error worse than the worst now; else
  // it keeps its weights.
  GroupId pick = 0;
  double most = -1;
  double worst_now = 0;
  for (const GroupId u : s.users) {
    const Wanted& w = wanted_.at(u);
    worst_now = std::max(worst_now, w.error);
    if (w.nh_class == s.nh_class && (Traffic(w) > most || (Traffic(w) == most && u < pick))) {
      most = Traffic(w);
      pick = u;
    }
  }
  if (pick == 0) return;
  const Wanted& t = wanted_.at(pick);
  Slot trial;
  trial.members = t.members;
  trial.share = t.share;
  trial.nh_class = t.nh_class;
  for (const GroupId u : s.users) {
    auto e = ErrorOf(wanted_.at(u), trial, kInf);
    if (!e || *e > worst_now + 1e-12) return;
  }
  s.tmpl = pick;
  SetContent(s, t.members, t.share, t.nh_class);
  for (const GroupId u : s.users) {
    Wanted& w = wanted_.at(u);
    w.error = *ErrorOf(w, s, kInf);
  }
}

void GroupBudget::Revisit(absl::Time now) {
  if (VoluntaryRoom() == 0) return;
  struct Candidate {
    double error;
    double traffic;
    GroupId id;
  };
  std::vector<Candidate> cands;
  for (const auto& [wid, w] : wanted_) {
    if (w.prefixes == 0 || w.slot == 0) continue;
    const Slot& s = slots_.at(w.slot);
    if (s.tmpl == wid || w.error < config_.min_gain || now < w.since + config_.improve_after) continue;
    cands.push_back({w.error, Traffic(w), wid});
  }
  std::sort(cands.begin(), cands.end(), [](const Candidate& a, const Candidate& b) {
    if (a.error != b.error) return a.error > b.error;
    if (a.traffic != b.traffic) return a.traffic > b.traffic;
    return a.id < b.id;
  });
  for (const Candidate& c : cands) {
    if (VoluntaryRoom() == 0) break;
    Wanted& w = wanted_.at(c.id);
    if (w.error < config_.min_gain) continue;  // moved to a promoted slot meanwhile
    const GroupId sid = NewSlot(c.id);
    Assign(c.id, w, sid, 0, now);
    w.fallback = false;
    ++promotions_;
    // Others that the new slot serves much better follow, if their merge is old enough.
    const Slot& s = slots_.at(sid);
    for (const Candidate& o : cands) {
      if (o.id == c.id) continue;
      Wanted& u = wanted_.at(o.id);
      if (u.slot == sid || now < u.since + config_.improve_after) continue;
      if (auto e = ErrorOf(u, s, u.error); e && *e <= u.error - config_.min_gain) {
        Assign(o.id, u, sid, *e, now);
        u.fallback = false;
      }
    }
  }
  FreeEmpty();
}

std::optional<absl::Time> GroupBudget::NextDue(absl::Time now) const {
  if (config_.max_groups == 0) return std::nullopt;
  // A route nothing serves may use the reserve: as soon as there is any room.
  if (!unrouted_.empty() && slots_.size() < config_.max_groups) return now;
  const uint32_t reserve = std::min(config_.reserve, config_.max_groups - 1);
  if (slots_.size() + reserve >= config_.max_groups) return std::nullopt;  // no room to improve
  std::optional<absl::Time> due;
  for (const auto& [wid, w] : wanted_) {
    if (w.prefixes == 0 || w.slot == 0 || w.error < config_.min_gain) continue;
    if (slots_.at(w.slot).tmpl == wid) continue;
    const absl::Time t = std::max(now, w.since + config_.improve_after);
    if (!due || t < *due) due = t;
  }
  return due;
}

FibUpdate GroupBudget::Apply(const FibUpdate& wanted, absl::FunctionRef<double(GroupId)> bandwidth, absl::Time now) {
  // Adopting (the limit just turned on): the FIB holds every adopted group until this
  // update's deletes.
  before_ = adopted_.empty() ? slots_.size() : adopted_.size();
  created_ = 0;
  moved_.clear();
  dirty_slots_.clear();
  freed_.clear();
  maybe_empty_.clear();
  slot_lost_template_.clear();
  if (!adopted_.empty()) PlaceAdopted(bandwidth, now);
  std::vector<GroupId> unplaced;
  std::vector<GroupId> touched_slots;
  std::vector<GroupId> touched_wanted;
  // 1. Groups: new ones wait for a slot; a template's slot follows its weights in place.
  wanted_.reserve(wanted_.size() + wanted.group_upserts.size());
  unplaced.reserve(wanted.group_upserts.size());
  for (const FibGroup& g : wanted.group_upserts) {
    auto [it, fresh] = wanted_.try_emplace(g.id);
    Wanted& w = it->second;
    const uint32_t cls = ClassOf(g.members);
    const uint32_t old_class = w.nh_class;
    w.members = g.members;
    w.share = SharesOf(g.members);
    w.nh_class = cls;
    w.bw = bandwidth(g.id);
    if (fresh || w.slot == 0) {
      unplaced.push_back(g.id);
      continue;
    }
    Slot& s = slots_.at(w.slot);
    if (s.tmpl == 0 && cls == s.nh_class) s.tmpl = g.id;  // adopt a slot whose template left
    if (s.tmpl == g.id) {
      if (cls == old_class || s.users.size() == 1) {
        SetContent(s, w.members, w.share, cls);
        touched_slots.push_back(s.id);
      } else {
        // Its next hops changed under groups that still share the slot: the slot keeps its
        // weights for them; this group moves (make-before-break: the reserve has room).
        Unassign(g.id, w);
        unplaced.push_back(g.id);
        touched_slots.push_back(s.id);
      }
    } else {
      touched_wanted.push_back(g.id);
    }
  }
  // 2. Routes.
  std::vector<wire::Prefix> touched;
  touched.reserve(wanted.route_upserts.size() + wanted.route_deletes.size());
  routes_.reserve(routes_.size() + wanted.route_upserts.size());
  for (const wire::Prefix& p : wanted.route_deletes) {
    auto it = routes_.find(p);
    if (it == routes_.end()) continue;
    if (it->second.wanted != 0) {
      Wanted& w = wanted_.at(it->second.wanted);
      --w.prefixes;
      if (it->second.installed != 0) --w.installed_routes;
    }
    it->second.wanted = 0;
    touched.push_back(p);
  }
  for (const auto& [p, gid] : wanted.route_upserts) {
    Route& r = routes_[p];
    if (r.wanted != 0) {
      Wanted& w = wanted_.at(r.wanted);
      --w.prefixes;
      if (r.installed != 0) --w.installed_routes;
    }
    r.wanted = gid;
    Wanted& w = wanted_.at(gid);
    ++w.prefixes;
    if (r.installed != 0) ++w.installed_routes;
    touched.push_back(p);
  }
  // 3. Groups no route wants.
  for (const GroupId gid : wanted.group_deletes) {
    auto it = wanted_.find(gid);
    if (it == wanted_.end()) continue;
    Unassign(gid, it->second);
    moved_.erase(gid);  // no prefix left to move
    unrouted_.erase(gid);
    wanted_.erase(it);
  }
  // 4. What changed under the merged groups: errors, and whether they may stay.
  for (const GroupId sid : touched_slots) {
    if (auto s = slots_.find(sid); s != slots_.end()) RefreshUsers(s->second, unplaced);
  }
  for (const GroupId wid : touched_wanted) {
    auto it = wanted_.find(wid);
    if (it == wanted_.end() || it->second.slot == 0) continue;
    Wanted& w = it->second;
    if (auto e = ErrorOf(w, slots_.at(w.slot), kInf)) {
      w.error = *e;
    } else {
      Unassign(wid, w);
      unplaced.push_back(wid);
    }
  }
  FreeEmpty();
  {
    std::vector<GroupId> lost(slot_lost_template_.begin(), slot_lost_template_.end());
    std::sort(lost.begin(), lost.end());
    for (const GroupId sid : lost) {
      if (auto it = slots_.find(sid); it != slots_.end() && it->second.tmpl == 0) Retemplate(it->second);
    }
    slot_lost_template_.clear();
  }
  // 5. A lower limit: merge down. 6. Place what has no slot. 7. Revisit old merges.
  for (const GroupId wid : unrouted_) unplaced.push_back(wid);  // tried again each time
  Place(std::move(unplaced), now);
  FreeEmpty();
  // Over the steady state (a lower limit, or the reserve taken by groups nothing else could
  // serve): merge the least used slots into others, so the next move has room again.
  Shrink(now);
  Revisit(now);

  // Output, make-before-break: slots, routes, then slots no route uses.
  FibUpdate out;
  std::vector<GroupId> dirty(dirty_slots_.begin(), dirty_slots_.end());
  std::sort(dirty.begin(), dirty.end());
  size_t creates = 0;
  for (const GroupId id : dirty) {
    auto it = slots_.find(id);
    if (it == slots_.end()) continue;
    if (!it->second.announced) ++creates;
    it->second.announced = true;
    out.group_upserts.push_back(FibGroup{id, it->second.members});
  }
  peak_ = before_ + creates;
  // Nothing is created beyond the limit (the FIB may hold more only after a lower limit, and
  // then this update only deletes).
  assert(creates == 0 || peak_ <= config_.max_groups);
  // The update's own prefixes (each once: the registry has a prefix as an upsert or a
  // delete), then those of the groups that moved, sorted.
  if (!moved_.empty()) {
    const size_t own = touched.size();
    for (const auto& [p, r] : routes_) {
      if (r.wanted != 0 && moved_.contains(r.wanted)) touched.push_back(p);
    }
    std::sort(touched.begin() + static_cast<ptrdiff_t>(own), touched.end());
  }
  for (const wire::Prefix& p : touched) {
    auto it = routes_.find(p);
    if (it == routes_.end()) continue;
    Route& r = it->second;
    const GroupId want = r.wanted == 0 ? 0 : wanted_.at(r.wanted).slot;
    if (want != r.installed) {
      if (want != 0) {
        if (r.installed != 0 && r.wanted != 0) ++moves_;  // a route repointed by a merge decision
        out.route_upserts.emplace_back(p, want);
      } else {
        out.route_deletes.push_back(p);
      }
      if (r.wanted != 0) {
        Wanted& w = wanted_.at(r.wanted);
        if (r.installed == 0) ++w.installed_routes;
        if (want == 0) --w.installed_routes;
      }
      r.installed = want;
    }
    if (r.wanted == 0) routes_.erase(it);
  }
  out.group_deletes = std::move(freed_);
  freed_.clear();
  moved_.clear();
  dirty_slots_.clear();
  return out;
}

std::optional<GroupServing> GroupBudget::Serving(GroupId wanted) const {
  auto it = wanted_.find(wanted);
  if (it == wanted_.end()) return std::nullopt;
  GroupServing s;
  s.slot = it->second.slot;
  s.error = it->second.error;
  if (s.slot != 0) {
    s.template_id = slots_.at(s.slot).tmpl;
    s.merged = s.template_id != wanted;
  }
  return s;
}

GroupBudgetTotals GroupBudget::Totals() const {
  GroupBudgetTotals t;
  t.installed = slots_.size();
  t.route_moves = moves_;
  t.promotions = promotions_;
  t.peak = peak_;
  double traffic = 0, weighted = 0;
  for (const auto& [wid, w] : wanted_) {
    if (w.prefixes == 0) continue;
    ++t.wanted;
    if (w.slot == 0) {
      t.unrouted_prefixes += w.prefixes;
      continue;
    }
    const double tr = Traffic(w);
    traffic += tr;
    if (slots_.at(w.slot).tmpl != wid) {
      ++t.merged;
      t.merged_prefixes += w.prefixes;
      t.worst_error = std::max(t.worst_error, w.error);
      weighted += tr * w.error;
    }
  }
  t.weighted_error = traffic > 0 ? weighted / traffic : 0;
  return t;
}

std::vector<FibGroup> GroupBudget::Slots() const {
  std::vector<FibGroup> out;
  for (const auto& [id, s] : slots_) out.push_back(FibGroup{id, s.members});
  std::sort(out.begin(), out.end(), [](const FibGroup& a, const FibGroup& b) { return a.id < b.id; });
  return out;
}

}  // namespace bagd::rib
