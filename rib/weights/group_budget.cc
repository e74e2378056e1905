#include "rib/weights/group_budget.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>
#include <span>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "rib/weights/point_tree.h"

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
double AlignedError(std::span<const double> want, std::span<const double> got, double bound) {
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

// The groups of one update by id, when their ids are dense enough for a window (a full
// table: consecutive new ids), with a count of new prefixes per group.
template <typename W>
class UpsertWindowT {
 public:
  explicit UpsertWindowT(const std::vector<FibGroup>& groups) {
    if (groups.empty()) return;
    GroupId lo = groups.front().id, hi = lo;
    for (const FibGroup& g : groups) {
      lo = std::min(lo, g.id);
      hi = std::max(hi, g.id);
    }
    if (hi - lo > 2 * groups.size() + 1024) return;  // sparse: found in the map
    lo_ = lo;
    at_.assign(size_t{hi - lo} + 1, nullptr);
    count_.assign(at_.size(), 0);
  }
  // Group `id` of the update is `w` (its entry in the map, stable until the routes are done).
  void Set(GroupId id, W* w) {
    if (In(id)) at_[id - lo_] = w;
  }
  W* Find(GroupId id) const { return In(id) ? at_[id - lo_] : nullptr; }
  // Counts a new prefix of `id` here (false: not in the window, count it yourself).
  bool Count(GroupId id) {
    if (!In(id) || at_[id - lo_] == nullptr) return false;
    ++count_[id - lo_];
    return true;
  }
  void AddCounts() {
    for (size_t k = 0; k < at_.size(); ++k) {
      if (count_[k] != 0) at_[k]->prefixes += count_[k];
      count_[k] = 0;
    }
  }

 private:
  bool In(GroupId id) const { return id >= lo_ && id - lo_ < at_.size(); }
  GroupId lo_ = 0;
  std::vector<W*> at_;
  std::vector<uint32_t> count_;
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
        std::equal(nh.begin(), nh.end(), members.begin(), [](const net::IpAddress& a, const FibGroupMember& m) {
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

std::string GroupBudget::ContentKey(uint32_t nh_class, std::span<const uint32_t> weights) {
  std::string key(reinterpret_cast<const char*>(&nh_class), sizeof nh_class);
  key.append(reinterpret_cast<const char*>(weights.data()), weights.size_bytes());
  return key;
}

void GroupBudget::SetWeights(Wanted& w, const std::vector<FibGroupMember>& members) {
  double sum = 0;
  for (const auto& m : members) sum += m.weight;
  // Sized once and written through the pointers (a push_back per member checks its storage).
  const size_t n = members.size();
  w.weights.resize(n);
  w.share.resize(n);
  uint32_t* weights = w.weights.data();
  double* share = w.share.data();
  for (size_t k = 0; k < n; ++k) {
    weights[k] = members[k].weight;
    share[k] = sum > 0 ? members[k].weight / sum : 0;
  }
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
  const auto& own = classes_[w.nh_class].next_hops;
  const auto& theirs = classes_[s.nh_class].next_hops;
  double e = 0;
  size_t j = 0;
  for (size_t i = 0; i < own.size(); ++i) {
    while (j < theirs.size() && theirs[j] < own[i]) ++j;
    const double got = j < theirs.size() && theirs[j] == own[i] ? s.share[j] : 0;
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

void GroupBudget::SetContent(Slot& s, uint32_t nh_class, std::span<const uint32_t> weights,
                             std::span<const double> share) {
  const auto& next_hops = classes_[nh_class].next_hops;
  std::vector<FibGroupMember> members;
  members.reserve(weights.size());
  for (size_t k = 0; k < weights.size(); ++k) members.push_back(FibGroupMember{next_hops[k], weights[k]});
  if (!s.content.empty()) {
    if (auto it = by_content_.find(s.content); it != by_content_.end() && it->second == s.id) by_content_.erase(it);
  }
  // A slot's weights change in place: the neighbours known for the swaps are dropped (a new
  // slot, members still empty, is added to them by NewSlot).
  if (!s.members.empty() && (s.nh_class != nh_class || s.share.size() != share.size() ||
                             !std::equal(share.begin(), share.end(), s.share.begin()))) {
    DropNear();
  }
  if (s.nh_class != nh_class || s.members.empty()) {
    if (!s.members.empty()) std::erase(classes_[s.nh_class].slots, s.id);
    classes_[nh_class].slots.push_back(s.id);
  }
  const bool changed = s.members != members;
  s.members = std::move(members);
  s.share.assign(share.begin(), share.end());
  s.nh_class = nh_class;
  s.content = ContentKey(nh_class, weights);
  by_content_.try_emplace(s.content, s.id);
  if (changed || !s.announced) dirty_slots_.insert(s.id);
  if (changed) swap_dirty_ = true;
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
  SetContent(s, w.nh_class, w.weights, w.share);
  if (near_valid_) {
    if (near_follow_) {
      NearInsert(id);
    } else {
      DropNear();
    }
  }
  if (keep) {
    dirty_slots_.erase(id);
  } else {
    ++created_;
    assert(before_ + created_ <= config_.max_groups);
  }
  return id;
}

void GroupBudget::Adopt(const std::vector<FibGroup>& groups,
                        const std::vector<std::pair<net::Prefix, GroupId>>& routes) {
  assert(wanted_.empty() && slots_.empty());
  wanted_.reserve(groups.size());
  for (const FibGroup& g : groups) {
    Wanted& w = wanted_[g.id];
    w.id = g.id;
    SetWeights(w, g.members);
    w.nh_class = ClassOf(g.members);
    adopted_.insert(g.id);
  }
  routes_.reserve(routes.size());
  for (const auto& [p, gid] : routes) {
    auto it = wanted_.find(gid);
    if (it == wanted_.end()) continue;
    routes_[p] = Route{&it->second, gid};
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
  Place(std::move(all), now, [this](GroupId id) { return FindWanted(id); });
  adopting_ = false;
  std::vector<GroupId> retired(adopted_.begin(), adopted_.end());
  std::sort(retired.begin(), retired.end());
  freed_.insert(freed_.end(), retired.begin(), retired.end());
  adopted_.clear();
}

void GroupBudget::Assign(GroupId wid, Wanted& w, GroupId slot, double error, absl::Time now) {
  w.error = error;
  if (w.slot == slot) return;
  swap_dirty_ = true;
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
  since_floor_ = std::min(since_floor_, now);
  if (slot != 0) slots_.at(slot).users.insert(wid);
}

void GroupBudget::Unassign(GroupId wid, Wanted& w) {
  if (w.slot == 0) return;
  swap_dirty_ = true;
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
    if (near_valid_) NearErase(id);
    if (auto it = by_content_.find(s.content); it != by_content_.end() && it->second == id) by_content_.erase(it);
    std::erase(classes_[s.nh_class].slots, id);
    if (s.announced) freed_.push_back(id);
    dirty_slots_.erase(id);
    slots_.erase(id);
    swap_dirty_ = true;
  }
}

void GroupBudget::Place(std::vector<GroupId> unplaced, absl::Time now,
                        absl::FunctionRef<Wanted*(GroupId)> find) {
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
        return absl::HashOf(w->nh_class, absl::MakeConstSpan(w->weights));
      }
      bool operator()(const Wanted* a, const Wanted* b) const {
        return a->nh_class == b->nh_class && a->weights == b->weights;
      }
    };
    absl::flat_hash_map<const Wanted*, size_t, SameWeights, SameWeights> by_key;
    by_key.reserve(unplaced.size());
    for (const GroupId wid : unplaced) {
      Wanted* found = find(wid);
      if (found == nullptr || found->prefixes == 0 || found->slot != 0) continue;
      Wanted& w = *found;
      if (!by_content_.empty()) {
        if (auto s = by_content_.find(ContentKey(w.nh_class, w.weights)); s != by_content_.end()) {
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
  // The points of a class side by side (`order`), in a PointTree per class that keeps each
  // point's error against the nearest slot exact as slots are added.
  const size_t count = raw.size();
  std::vector<size_t> order(count);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) { return raw[x].cls < raw[y].cls; });
  // A big batch (a restart, a reload) picks the first three quarters of its slots among a
  // sample of its points (every stride-th of a class), the last quarter among all, so no
  // outlier the sample missed is left far off. `stride` 1: every point from the start.
  constexpr size_t kSample = 4096;
  const size_t stride = count > 2 * kSample ? count / kSample : 1;
  struct Range {
    uint32_t cls;
    size_t begin, end;  // into order
    std::optional<PointTree> tree;  // points numbered from `begin`
    bool has_slot = false;          // of its own next-hop set
  };
  std::vector<Range> ranges;
  {
    std::vector<const double*> share_of;
    std::vector<double> traffic;
    for (size_t i = 0; i < count;) {
      size_t j = i;
      while (j < count && raw[order[j]].cls == raw[order[i]].cls) ++j;
      share_of.clear();
      traffic.clear();
      for (size_t x = i; x < j; ++x) {
        share_of.push_back(raw[order[x]].first_w->share.data());
        traffic.push_back(raw[order[x]].traffic);
      }
      Range& r = ranges.emplace_back(Range{raw[order[i]].cls, i, j, std::nullopt, false});
      r.tree.emplace(classes_[r.cls].next_hops.size(), share_of, traffic, stride);
      i = j;
    }
  }
  // Slots of other classes that may serve a range (subset/superset scopes): offered at once.
  const bool cross = config_.scope != MergeScope::kSameNextHops;
  auto offer_cross = [&](const Slot& s) {
    for (Range& r : ranges) {
      if (s.nh_class == r.cls || !Compatible(r.cls, s.nh_class, false)) continue;
      for (uint32_t j = 0; j < r.tree->size(); ++j) {
        const double now_err = r.tree->error(j);
        if (now_err == 0) continue;
        if (auto e = ErrorOf(*raw[order[r.begin + j]].first_w, s, now_err)) r.tree->Offer(j, *e, s.id);
      }
      r.tree->Refresh();
    }
  };
  if (cross) {
    for (const auto& [sid, sl] : slots_) offer_cross(sl);
  }
  for (Range& r : ranges) {
    for (const GroupId sid : classes_[r.cls].slots) r.tree->AddCenter(slots_.at(sid).share.data(), sid);
    r.has_slot = !classes_[r.cls].slots.empty();
  }
  auto create = [&](Range& r, uint32_t j) {
    const GroupId sid = NewSlot(raw[order[r.begin + j]].first);
    const Slot& sl = slots_.at(sid);
    r.tree->AddCenter(sl.share.data(), sid);
    r.has_slot = true;
    if (cross) offer_cross(sl);
  };
  // 1. Every point needs a server: the classes nothing installed serves get one slot each,
  //    the biggest first, from the reserve if need be (for the point carrying most traffic).
  {
    std::vector<std::pair<double, size_t>> uncovered;  // (traffic, range)
    for (size_t ri = 0; ri < ranges.size(); ++ri) {
      if (ranges[ri].has_slot) continue;
      double t = 0;
      bool any = false;
      for (uint32_t j = 0; j < ranges[ri].tree->size(); ++j) {
        if (ranges[ri].tree->error(j) == kInf) {
          any = true;
          t += raw[order[ranges[ri].begin + j]].traffic;
        }
      }
      if (any) uncovered.emplace_back(t, ri);
    }
    std::sort(uncovered.begin(), uncovered.end(), [&](const auto& a, const auto& b) {
      return a.first != b.first ? a.first > b.first : ranges[a.second].cls < ranges[b.second].cls;
    });
    for (const auto& [t, ri] : uncovered) {
      if (HardRoom() == 0) break;
      Range& r = ranges[ri];
      uint32_t pick = PointTree::kNone;
      for (uint32_t j = 0; j < r.tree->size(); ++j) {
        if (r.tree->error(j) == kInf &&
            (pick == PointTree::kNone || raw[order[r.begin + j]].traffic > raw[order[r.begin + pick]].traffic)) {
          pick = j;
        }
      }
      if (pick != PointTree::kNone) create(r, pick);  // else a superset slot made for another class serves it
    }
  }
  // 2. Farthest first: the worst-served point gets the next slot, while the steady state
  //    has room (the reserve stays free). Ties: more traffic, then the earlier point.
  struct Entry {
    double error;
    double traffic;
    size_t i;  // into order
  };
  auto less = [](const Entry& a, const Entry& b) {
    if (a.error != b.error) return a.error < b.error;
    if (a.traffic != b.traffic) return a.traffic < b.traffic;
    return a.i > b.i;
  };
  const size_t sampled_slots = stride > 1 ? VoluntaryRoom() * 3 / 4 : 0;
  for (size_t picked = 0; VoluntaryRoom() > 0; ++picked) {
    const bool sample_only = picked < sampled_slots;
    std::optional<Entry> pick;
    Range* pick_range = nullptr;
    for (Range& r : ranges) {
      const uint32_t j = r.tree->Worst(sample_only);
      if (j == PointTree::kNone) continue;
      const Entry e{r.tree->error(j), raw[order[r.begin + j]].traffic, r.begin + j};
      if (!pick || less(*pick, e)) {
        pick = e;
        pick_range = &r;
      }
    }
    if (!pick) break;
    create(*pick_range, static_cast<uint32_t>(pick->i - pick_range->begin));
  }
  // 3. Assign. A point nothing serves: the closest installed subset of its next hops, even
  //    if the scope does not allow it (its traffic stays on its own next hops; a missing
  //    route would be worse), else unrouted.
  for (const Range& r : ranges) {
    for (uint32_t j = 0; j < r.tree->size(); ++j) {
      const Raw& p = raw[order[r.begin + j]];
      GroupId best = r.tree->best(j);
      double err = r.tree->error(j);
      bool fallback = false;
      if (best == 0) {
        const Wanted& w0 = *p.first_w;
        err = kInf;
        for (const auto& [sid, s] : slots_) {
          if (auto x = ErrorOf(w0, s, kInf, /*any_subset=*/true); x && (*x < err || (*x == err && sid < best))) {
            err = *x;
            best = sid;
          }
        }
        fallback = best != 0;
      }
      for (const auto& [wid, wp] : p.groups) {
        Wanted& w = *wp;
        if (best == 0) {
          if (!unrouted_.insert(wid).second) continue;
          notices_.push_back(absl::StrCat("next-hop group budget: ", w.prefixes,
                                          " routes are not installed: the FIB holds ", config_.max_groups,
                                          " groups and none of them uses only their next hops"));
          continue;
        }
        w.fallback = fallback;
        Assign(wid, w, best, err, now);
      }
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
  trial.share.assign(t.share.begin(), t.share.end());
  trial.nh_class = t.nh_class;
  for (const GroupId u : s.users) {
    auto e = ErrorOf(wanted_.at(u), trial, kInf);
    if (!e || *e > worst_now + 1e-12) return;
  }
  s.tmpl = pick;
  SetContent(s, t.nh_class, t.weights, t.share);
  for (const GroupId u : s.users) {
    Wanted& w = wanted_.at(u);
    w.error = *ErrorOf(w, s, kInf);
  }
}

void GroupBudget::Follow(GroupId sid, GroupId promoted, std::span<const GroupId> cands, absl::Time now) {
  // Others that the new slot serves much better follow, if their merge is old enough.
  const Slot& s = slots_.at(sid);
  for (const GroupId id : cands) {
    if (id == promoted) continue;
    Wanted& u = wanted_.at(id);
    if (u.slot == sid || u.slot == 0 || now < u.since + config_.improve_after) continue;
    if (u.nh_class != s.nh_class && config_.scope == MergeScope::kSameNextHops && !u.fallback) continue;
    if (auto e = ErrorOf(u, s, u.error); e && *e <= u.error - config_.min_gain) {
      Assign(id, u, sid, *e, now);
      u.fallback = false;
    }
  }
}

double GroupBudget::NextBest(const Wanted& w, GroupId except, const Slot* extra, double enough, GroupId* at) const {
  double best = kInf;
  GroupId where = 0;
  if (extra != nullptr) {
    if (auto e = ErrorOf(w, *extra, kInf)) best = *e;
  }
  // Of two with the same error the lower id (each error exact up to the best so far: a
  // bound just above it).
  auto consider = [&](GroupId sid, const Slot& s) {
    if (sid == except) return false;
    auto e = ErrorOf(w, s, std::nextafter(best, kInf));
    if (e && (*e < best || (*e == best && where != 0 && sid < where))) {
      best = *e;
      where = sid;
    }
    return best <= enough;
  };
  if (best > enough) {
    const Slot* from = nullptr;  // the slot it leaves, if its neighbours are known
    const std::vector<std::pair<double, GroupId>>* row = nullptr;
    if (near_valid_ && config_.scope == MergeScope::kSameNextHops && !w.fallback) {
      auto r = near_.find(except);
      auto it = slots_.find(except);
      if (r != near_.end() && it != slots_.end() && it->second.nh_class == w.nh_class) {
        from = &it->second;
        row = &r->second;
      }
    }
    if (from != nullptr) {
      // Nearest to the slot it leaves first. With e its error there, a slot at share error d
      // from that one serves it with at least (1 - e) d - e (per next hop, |s - w| >= |s - v| -
      // |v - w| and v >= (1 - e) w): none further on can do better than the best so far.
      const double e = AlignedError(w.share, from->share, kInf);
      for (const auto& [d, sid] : *row) {
        if (((1 - e) * d - e) * (1 - 1e-12) - 1e-12 > best) break;
        auto it = slots_.find(sid);
        if (it == slots_.end()) continue;  // deleted since
        if (consider(sid, it->second)) break;
      }
    } else if (config_.scope == MergeScope::kSameNextHops && !w.fallback) {
      for (const GroupId sid : classes_[w.nh_class].slots) {
        if (consider(sid, slots_.at(sid))) break;
      }
    } else {
      for (const auto& [sid, s] : slots_) {
        if (consider(sid, s)) break;
      }
    }
  }
  if (at != nullptr) *at = where;
  return best;
}

void GroupBudget::BuildNear() {
  near_.clear();
  near_gone_ = 0;
  near_.reserve(slots_.size());
  for (const auto& [id, s] : slots_) {
    auto& row = near_[id];
    for (const GroupId o : classes_[s.nh_class].slots) {
      if (o != id) row.emplace_back(AlignedError(s.share, slots_.at(o).share, kInf), o);
    }
    std::sort(row.begin(), row.end());
  }
  near_valid_ = true;
}

void GroupBudget::NearInsert(GroupId id) {
  const Slot& x = slots_.at(id);
  auto& row = near_[id];
  row.clear();
  for (const GroupId o : classes_[x.nh_class].slots) {
    if (o == id) continue;
    row.emplace_back(AlignedError(x.share, slots_.at(o).share, kInf), o);
    auto& theirs = near_.at(o);
    const std::pair<double, GroupId> entry(AlignedError(slots_.at(o).share, x.share, kInf), id);
    theirs.insert(std::lower_bound(theirs.begin(), theirs.end(), entry), entry);
  }
  std::sort(row.begin(), row.end());
}

void GroupBudget::NearErase(GroupId id) {
  // Left in the other rows (slot ids are not used again), skipped there; the rows are built
  // anew once they hold many such.
  near_.erase(id);
  if (++near_gone_ > slots_.size() / 4 + 8) DropNear();
}

void GroupBudget::DropNear() {
  near_valid_ = false;
  near_.clear();
}

bool GroupBudget::Swap(GroupId cid, Wanted& c, double bound, std::span<const GroupId> cands, absl::Time now,
                       std::optional<absl::Time>& unblock) {
  // The victim's users must each end with an error of at most `bound` (the promoted group's
  // less min_gain), below the promoted group's own: the largest error among the groups the
  // swap touches falls, so a sequence of swaps cannot go round in circles.
  const double limit = std::min(bound, std::nextafter(c.error, -kInf));
  if (!(limit >= 0)) return false;
  if (!near_valid_ && config_.scope == MergeScope::kSameNextHops) BuildNear();
  Slot own;  // the slot it would get: its own weights
  own.share.assign(c.share.begin(), c.share.end());
  own.nh_class = c.nh_class;
  std::vector<GroupId> order;
  order.reserve(slots_.size());
  for (const auto& [sid, s] : slots_) order.push_back(sid);
  std::sort(order.begin(), order.end());  // of two victims with the same cost, the lower id
  // The least cost over every slot, and over those not held down (a user moved, or the slot
  // was made, less than improve_after ago). A held one that costs less by min_gain or more is
  // waited for (rather than take a dearer one now, and move more groups for a worse result).
  GroupId victim = 0, any = 0;
  double best = kInf, best_any = kInf;
  absl::Time any_held = absl::InfinitePast();
  for (const GroupId sid : order) {
    const Slot& v = slots_.at(sid);
    // Only a cost below the best free victim's is of use (a held one below it, too).
    const double cap = best == kInf ? limit : std::min(limit, std::nextafter(best, -kInf));
    double cost = 0;
    for (const GroupId u : v.users) {
      if (u == cid) continue;  // it gets its own slot
      cost = std::max(cost, NextBest(wanted_.at(u), sid, &own, cost));
      if (cost > cap) break;
    }
    if (cost > cap) continue;
    absl::Time held = absl::InfinitePast();
    for (const GroupId u : v.users) {
      if (u != cid) held = std::max(held, wanted_.at(u).since + config_.improve_after);
    }
    if (now >= held) {
      best = cost;
      victim = sid;
    }
    if (cost < best_any) {
      best_any = cost;
      any = sid;
      any_held = held;
    }
  }
  if (any == 0) return false;
  if (any != victim && (victim == 0 || best > best_any + config_.min_gain)) {
    if (any != 0 && (!unblock || any_held < *unblock)) unblock = any_held;
    return false;
  }
  // Make-before-break: the new slot is created in the reserve, the victim's routes move,
  // then it is deleted (after the routes, at the end of the update).
  near_follow_ = true;  // the neighbour rows follow this one slot
  const GroupId sid = NewSlot(cid);
  near_follow_ = false;
  Assign(cid, c, sid, 0, now);
  c.fallback = false;
  ++promotions_;
  ++swaps_;
  std::vector<GroupId> users(slots_.at(victim).users.begin(), slots_.at(victim).users.end());
  std::sort(users.begin(), users.end());
  for (const GroupId u : users) {
    Wanted& w = wanted_.at(u);
    GroupId to = 0;
    const double e = NextBest(w, victim, nullptr, -1, &to);
    assert(to != 0 && e <= best);
    Assign(u, w, to, e, now);
  }
  Follow(sid, cid, cands, now);
  FreeEmpty();
  return true;
}

void GroupBudget::Revisit(absl::Time now) {
  const uint32_t max_swaps = HardRoom() > 0 ? config_.swaps_per_revisit : 0;
  const bool full = VoluntaryRoom() == 0;
  if (full && max_swaps == 0) return;
  // A full table where nothing changed since a revisit found no swap: only merges that
  // became old enough since are tried, unless a slot held down then may go now.
  const bool only_new = full && !swap_dirty_ && !(swap_retry_ && now >= *swap_retry_);
  struct Candidate {
    double error;
    double traffic;
    GroupId id;
  };
  // No merge old enough (e.g. the whole table was just placed): nothing to look at.
  if (now < since_floor_ + config_.improve_after) return;
  std::vector<Candidate> heap;
  std::vector<GroupId> eligible;  // every merge old enough: they may follow a new slot
  absl::Time floor = absl::InfiniteFuture();
  for (const auto& [wid, w] : wanted_) {
    if (w.slot == 0) continue;
    floor = std::min(floor, w.since);
    const absl::Time due = w.since + config_.improve_after;
    if (w.prefixes == 0 || w.error < config_.min_gain || now < due || slots_.at(w.slot).tmpl == wid) continue;
    eligible.push_back(wid);
    if (!only_new || due > swap_tried_at_) heap.push_back({w.error, Traffic(w), wid});
  }
  // (Their order does not matter: whether one follows a new slot depends on it alone.)
  // Worst first: the largest error, then more traffic, then the lower id. Re-ranked after
  // each move (a promotion's followers and a swap's moved groups change their errors).
  auto lower = [](const Candidate& a, const Candidate& b) {
    if (a.error != b.error) return a.error < b.error;
    if (a.traffic != b.traffic) return a.traffic < b.traffic;
    return a.id > b.id;
  };
  since_floor_ = floor;
  std::make_heap(heap.begin(), heap.end(), lower);
  uint32_t swaps = 0;
  bool exhausted = true;
  std::optional<absl::Time> unblock;
  absl::flat_hash_set<uint32_t> no_victim;  // next-hop sets whose worst merge found no swap
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), lower);
    Candidate c = heap.back();
    heap.pop_back();
    Wanted& w = wanted_.at(c.id);
    if (w.slot == 0 || slots_.at(w.slot).tmpl == c.id || w.error < config_.min_gain) continue;
    if (now < w.since + config_.improve_after) continue;  // moved meanwhile
    if (w.error != c.error) {
      c.error = w.error;
      heap.push_back(c);
      std::push_heap(heap.begin(), heap.end(), lower);
      continue;
    }
    if (VoluntaryRoom() > 0) {
      const GroupId sid = NewSlot(c.id);
      Assign(c.id, w, sid, 0, now);
      w.fallback = false;
      ++promotions_;
      Follow(sid, c.id, eligible, now);
      continue;
    }
    if (swaps >= max_swaps || HardRoom() == 0) {
      exhausted = false;
      break;
    }
    // A worse merge of the same next hops found no victim: a better one will not either
    // (a smaller gain allows less loss), bar rare cases a later revisit takes up.
    if (no_victim.contains(w.nh_class)) continue;
    if (Swap(c.id, w, w.error - config_.min_gain, eligible, now, unblock)) {
      ++swaps;
    } else {
      no_victim.insert(w.nh_class);
    }
  }
  FreeEmpty();
  if (VoluntaryRoom() == 0 && swaps == 0 && exhausted) {
    // Nothing more to do until something changes, a merge grows old enough or a slot held
    // down may go.
    if (only_new && swap_retry_ && (!unblock || *swap_retry_ < *unblock)) unblock = swap_retry_;
    swap_dirty_ = false;
    swap_tried_at_ = now;
    swap_retry_ = unblock;
  }
}

std::optional<absl::Time> GroupBudget::NextDue(absl::Time now) const {
  if (config_.max_groups == 0) return std::nullopt;
  // A route nothing serves may use the reserve: as soon as there is any room.
  if (!unrouted_.empty() && slots_.size() < config_.max_groups) return now;
  const uint32_t reserve = std::min(config_.reserve, config_.max_groups - 1);
  const bool full = slots_.size() + reserve >= config_.max_groups;
  // A full table improves only by swaps, which need a free slot to be made in.
  if (full && (config_.swaps_per_revisit == 0 || slots_.size() >= config_.max_groups)) return std::nullopt;
  // Full and nothing changed since a revisit found no swap: merges that grow old enough
  // after it, or when a slot held down then may go.
  const bool only_new = full && !swap_dirty_;
  std::optional<absl::Time> due;
  if (only_new && swap_retry_) due = std::max(now, *swap_retry_);
  for (const auto& [wid, w] : wanted_) {
    if (w.prefixes == 0 || w.slot == 0 || w.error < config_.min_gain) continue;
    if (slots_.at(w.slot).tmpl == wid) continue;
    const absl::Time ready = w.since + config_.improve_after;
    if (only_new && ready <= swap_tried_at_) continue;
    const absl::Time t = std::max(now, ready);
    if (!due || t < *due) due = t;
  }
  return due;
}

FibUpdate GroupBudget::Apply(const FibUpdate& wanted, absl::FunctionRef<double(GroupId)> bandwidth, absl::Time now) {
  // Adopting (the limit just turned on): the FIB holds every adopted group until this
  // update's deletes.
  before_ = adopted_.empty() ? slots_.size() : adopted_.size();
  created_ = 0;
  if (!wanted.empty()) {
    swap_dirty_ = true;
    // Kept for revisits only.
    DropNear();
  }
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
  // The groups of this update by id, for the routes below.
  UpsertWindowT<Wanted> window(wanted.group_upserts);
  for (const FibGroup& g : wanted.group_upserts) {
    auto [it, fresh] = wanted_.try_emplace(g.id);
    Wanted& w = it->second;
    window.Set(g.id, &w);
    const uint32_t cls = ClassOf(g.members);
    const uint32_t old_class = w.nh_class;
    w.id = g.id;
    SetWeights(w, g.members);
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
        SetContent(s, cls, w.weights, w.share);
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
  // The routes this update touches. routes_ gets no insertion after this loop (until the
  // next Apply): the pointers stay valid, and none is erased before the output.
  std::vector<std::pair<net::Prefix, Route*>> touched;
  touched.reserve(wanted.route_upserts.size() + wanted.route_deletes.size());
  routes_.reserve(routes_.size() + wanted.route_upserts.size());
  auto leave = [](Route& r) {
    if (r.wanted == nullptr) return;
    --r.wanted->prefixes;
    if (r.installed != 0) --r.wanted->installed_routes;
    r.wanted = nullptr;
  };
  for (const net::Prefix& p : wanted.route_deletes) {
    auto it = routes_.find(p);
    if (it == routes_.end()) continue;
    leave(it->second);
    touched.emplace_back(p, &it->second);
  }
  // A big batch's routes point at its own groups in no order, each a cold node of wanted_:
  // the groups of this update are found by id in a dense window (they are mostly
  // consecutive new ids) rather than through the map, and their new prefixes are counted
  // there and added to each group once (one write per group, not one per route).
  const auto& ups = wanted.route_upserts;
  constexpr size_t kAhead = 16;  // routes_ lookups in flight
  GroupId last_id = 0;
  Wanted* last = nullptr;  // neighbouring routes of a batch often share a group
  for (size_t i = 0; i < ups.size(); ++i) {
    if (i + kAhead < ups.size()) routes_.prefetch(ups[i + kAhead].first);
    const auto& [p, gid] = ups[i];
    Route& r = routes_[p];
    leave(r);
    if (last == nullptr || last_id != gid) {
      last_id = gid;
      last = window.Find(gid);
      if (last == nullptr) last = &wanted_.at(gid);
    }
    r.wanted = last;
    if (!window.Count(gid)) ++last->prefixes;
    if (r.installed != 0) ++last->installed_routes;
    touched.emplace_back(p, &r);
  }
  window.AddCounts();
  // 3. Groups no route wants.
  for (const GroupId gid : wanted.group_deletes) {
    auto it = wanted_.find(gid);
    if (it == wanted_.end()) continue;
    if (it->second.prefixes > 0) {
      // The registry deletes only groups no route wants; a route still on one is withdrawn
      // rather than left pointing at nothing.
      for (auto& [p, r] : routes_) {
        if (r.wanted != &it->second) continue;
        leave(r);
        touched.emplace_back(p, &r);
      }
    }
    Unassign(gid, it->second);
    moved_.erase(gid);  // no prefix left to move
    unrouted_.erase(gid);
    window.Set(gid, nullptr);
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
  Place(std::move(unplaced), now, [&](GroupId id) {
    Wanted* w = window.Find(id);
    return w != nullptr ? w : FindWanted(id);
  });
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
    for (auto& [p, r] : routes_) {
      if (r.wanted != nullptr && moved_.contains(r.wanted->id)) touched.emplace_back(p, &r);
    }
    std::sort(touched.begin() + static_cast<ptrdiff_t>(own), touched.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
  }
  out.route_upserts.reserve(touched.size());
  std::vector<net::Prefix> withdrawn;
  for (size_t i = 0; i < touched.size(); ++i) {
    // Cold entries (routes_, then their group): fetched ahead, in two steps.
    if (i + 16 < touched.size()) __builtin_prefetch(touched[i + 16].second);
    if (i + 8 < touched.size()) {
      if (const Wanted* ahead = touched[i + 8].second->wanted) __builtin_prefetch(&ahead->slot);
    }
    const auto& [p, route] = touched[i];
    Route& r = *route;
    Wanted* w = r.wanted;
    const GroupId want = w == nullptr ? 0 : w->slot;
    if (want != r.installed) {
      if (want != 0) {
        if (r.installed != 0) ++moves_;  // a route repointed by a merge decision
        out.route_upserts.emplace_back(p, want);
      } else {
        out.route_deletes.push_back(p);
      }
      if (w != nullptr) {
        if (r.installed == 0) ++w->installed_routes;
        if (want == 0) --w->installed_routes;
      }
      r.installed = want;
    }
    if (w == nullptr) withdrawn.push_back(p);
  }
  for (const net::Prefix& p : withdrawn) routes_.erase(p);
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
  t.swaps = swaps_;
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
