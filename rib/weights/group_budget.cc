#include "rib/weights/group_budget.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>

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
  const size_t used = before_ + created_;
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
  const GroupId id = next_slot_++;
  Slot& s = slots_[id];
  s.id = id;
  s.tmpl = tmpl;
  const Wanted& w = wanted_.at(tmpl);
  SetContent(s, w.members, w.share, w.nh_class);
  ++created_;
  assert(before_ + created_ <= config_.max_groups);
  return id;
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
  moved_.insert(wid);
  unrouted_.erase(wid);
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
  moved_.insert(wid);
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
  std::vector<Point> pts;
  absl::flat_hash_map<std::string, size_t> by_key;
  for (const GroupId wid : unplaced) {
    auto it = wanted_.find(wid);
    if (it == wanted_.end() || it->second.prefixes == 0 || it->second.slot != 0) continue;
    Wanted& w = it->second;
    const std::string key = ContentKey(w.nh_class, w.members);
    if (auto s = by_content_.find(key); s != by_content_.end()) {
      Assign(wid, w, s->second, 0, now);  // the very weights are installed already
      continue;
    }
    auto [p, fresh] = by_key.try_emplace(key, pts.size());
    if (fresh) pts.push_back(Point{{}, 0, kInf, 0});
    pts[p->second].groups.push_back(wid);
    pts[p->second].traffic += Traffic(w);
  }
  if (pts.empty()) return;
  // Points by class; the classes a slot of each class may serve.
  absl::flat_hash_map<uint32_t, std::vector<size_t>> of_class;
  for (size_t i = 0; i < pts.size(); ++i) of_class[wanted_.at(pts[i].groups[0]).nh_class].push_back(i);
  const bool cross = config_.scope != MergeScope::kSameNextHops;
  auto offer = [&](size_t i, const Slot& s) {
    Point& p = pts[i];
    if (p.error == 0) return;
    if (auto e = ErrorOf(wanted_.at(p.groups[0]), s, p.error); e && *e < p.error) {
      p.error = *e;
      p.best = s.id;
    }
  };
  auto offer_all = [&](const Slot& s) {
    if (!cross) {
      if (auto c = of_class.find(s.nh_class); c != of_class.end()) {
        for (const size_t i : c->second) offer(i, s);
      }
      return;
    }
    for (size_t i = 0; i < pts.size(); ++i) offer(i, s);
  };
  // What is installed already.
  for (auto& [cls, idx] : of_class) {
    std::vector<uint32_t> classes{cls};
    if (cross) {
      classes.clear();
      for (uint32_t c = 0; c < classes_.size(); ++c) {
        if (Compatible(cls, c, false)) classes.push_back(c);
      }
    }
    for (const uint32_t c : classes) {
      for (const GroupId sid : classes_[c].slots) {
        const Slot& s = slots_.at(sid);
        for (const size_t i : idx) offer(i, s);
      }
    }
  }
  auto create = [&](size_t i) {
    const GroupId sid = NewSlot(pts[i].groups[0]);
    offer_all(slots_.at(sid));
  };
  // 1. Every point needs a server: the classes nothing installed serves get one slot each,
  //    the biggest first, from the reserve if need be (for the point carrying most traffic).
  {
    std::vector<std::pair<double, uint32_t>> uncovered;  // (traffic, class)
    for (const auto& [cls, idx] : of_class) {
      double t = 0;
      bool any = false;
      for (const size_t i : idx) {
        if (pts[i].error == kInf) {
          any = true;
          t += pts[i].traffic;
        }
      }
      if (any) uncovered.emplace_back(t, cls);
    }
    std::sort(uncovered.begin(), uncovered.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first > b.first : a.second < b.second;
    });
    for (const auto& [t, cls] : uncovered) {
      if (HardRoom() == 0) break;
      size_t pick = SIZE_MAX;
      for (const size_t i : of_class[cls]) {
        if (pts[i].error == kInf && (pick == SIZE_MAX || pts[i].traffic > pts[pick].traffic)) pick = i;
      }
      if (pick != SIZE_MAX) create(pick);  // nothing left uncovered in it otherwise (a superset served it)
    }
  }
  // 2. Farthest first: the worst-served point gets the next slot, while the steady state
  //    has room (the reserve stays free).
  while (VoluntaryRoom() > 0) {
    size_t pick = SIZE_MAX;
    for (size_t i = 0; i < pts.size(); ++i) {
      const Point& p = pts[i];
      if (p.error <= 0) continue;
      if (pick == SIZE_MAX || p.error > pts[pick].error ||
          (p.error == pts[pick].error && p.traffic > pts[pick].traffic)) {
        pick = i;
      }
    }
    if (pick == SIZE_MAX) break;
    create(pick);
  }
  // 3. Assign. A point nothing serves: the closest installed subset of its next hops, even
  //    if the scope does not allow it (its traffic stays on its own next hops; a missing
  //    route would be worse), else unrouted.
  for (Point& p : pts) {
    bool fallback = false;
    if (p.best == 0) {
      const Wanted& w0 = wanted_.at(p.groups[0]);
      double best = kInf;
      for (const auto& [sid, s] : slots_) {
        if (auto e = ErrorOf(w0, s, best, /*any_subset=*/true); e && (*e < best || (*e == best && sid < p.best))) {
          best = *e;
          p.best = sid;
        }
      }
      p.error = best;
      fallback = p.best != 0;
    }
    for (const GroupId wid : p.groups) {
      Wanted& w = wanted_.at(wid);
      if (p.best == 0) {
        if (!unrouted_.insert(wid).second) continue;
        notices_.push_back(absl::StrCat("next-hop group budget: ", w.prefixes,
                                        " routes are not installed: the FIB holds ", config_.max_groups,
                                        " groups and none of them uses only their next hops"));
        continue;
      }
      w.fallback = fallback;
      Assign(wid, w, p.best, p.error, now);
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
          if (auto e = ErrorOf(w, s, best); e && (*e < best || (*e == best && sid < to))) {
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
  const uint32_t reserve = std::min(config_.reserve, config_.max_groups - 1);
  if (slots_.size() + reserve >= config_.max_groups) return std::nullopt;  // no room to improve
  if (!unrouted_.empty()) return now;
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
  before_ = slots_.size();
  created_ = 0;
  moved_.clear();
  dirty_slots_.clear();
  freed_.clear();
  maybe_empty_.clear();
  slot_lost_template_.clear();
  std::vector<GroupId> unplaced;
  std::vector<GroupId> touched_slots;
  std::vector<GroupId> touched_wanted;
  // 1. Groups: new ones wait for a slot; a template's slot follows its weights in place.
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
  for (const wire::Prefix& p : wanted.route_deletes) {
    auto it = routes_.find(p);
    if (it == routes_.end()) continue;
    if (it->second.wanted != 0) --wanted_.at(it->second.wanted).prefixes;
    it->second.wanted = 0;
    touched.push_back(p);
  }
  for (const auto& [p, gid] : wanted.route_upserts) {
    Route& r = routes_[p];
    if (r.wanted != 0) --wanted_.at(r.wanted).prefixes;
    r.wanted = gid;
    ++wanted_.at(gid).prefixes;
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
  assert(peak_ <= config_.max_groups);
  if (!moved_.empty()) {
    for (const auto& [p, r] : routes_) {
      if (r.wanted != 0 && moved_.contains(r.wanted)) touched.push_back(p);
    }
  }
  std::sort(touched.begin(), touched.end());
  touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
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
