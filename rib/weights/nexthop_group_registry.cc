#include "rib/weights/nexthop_group_registry.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"

namespace bagd::rib {
namespace {

// The canonical key: family, then per member its address and the bandwidth it advertises
// (after the missing-LB policy), exactly. Not the quantized weight: prefixes whose members
// advertise 1G:1G and 2G:2G, or one next hop at 1G and at 4G, would share a group whose
// members' damping state holds only one of those values, and a prefix leaving it (a member
// joining it alone) would start from a bandwidth it never advertised (issue 12 defect 2).
std::string KeyOf(net::Family family, const ResolvedBandwidths& r) {
  std::string key;
  key.reserve(1 + r.members.size() * 25);
  key.push_back(static_cast<char>(family));
  for (const MemberBandwidth& m : r.members) {
    const net::IpAddress& a = m.next_hop;
    key.push_back(static_cast<char>(a.size()));
    key.append(reinterpret_cast<const char*>(a.bytes()), a.size());
    key.append(reinterpret_cast<const char*>(&m.bps), sizeof m.bps);
    if (m.local_source >= 0) {  // capped by a local link: not the same member as uncapped
      key.push_back('L');
      key.append(reinterpret_cast<const char*>(&m.local_source), sizeof m.local_source);
    }
  }
  return key;
}

// Same family and the same members with the same link-bandwidth bits, in the same order.
bool SameMembers(std::span<const MemberInput> a, std::span<const MemberInput> b) {
  if (a.size() != b.size()) return false;
  for (size_t k = 0; k < a.size(); ++k) {
    const MemberInput& x = a[k];
    const MemberInput& y = b[k];
    if (!(x.next_hop == y.next_hop) || x.link_bandwidth.has_value() != y.link_bandwidth.has_value() ||
        x.local_source != y.local_source) {
      return false;
    }
    if (x.link_bandwidth && x.link_bandwidth->ToExtendedCommunity().raw != y.link_bandwidth->ToExtendedCommunity().raw) {
      return false;
    }
  }
  return true;
}

NextHopGroup::Member NewMember(const MemberBandwidth& m, absl::Time settling_since) {
  NextHopGroup::Member out{m.next_hop, m.bps, m.source, m.link_bandwidth, MemberHoldDown(m.bps, settling_since)};
  out.local_source = m.local_source;
  return out;
}

// f(const Path&) for each path of `prefix` that is a member: in its multipath set and not
// this router's own (as MembersOf, without building a PathSet).
template <typename F>
void ForEachMemberPath(const Rib& rib, const net::Prefix& prefix, F&& f) {
  if (const Destination* d = rib.Find(prefix)) {
    d->ForEachMultipath([&](const Path& p) {
      if (!rib.peer(p.peer).local) f(p);
    });
  }
}

}  // namespace

bool HasMembers(const Rib& rib, const net::Prefix& prefix) {
  bool any = false;
  ForEachMemberPath(rib, prefix, [&](const Path&) { any = true; });
  return any;
}

void MembersBatch::Add(const Rib& rib, const net::Prefix& prefix, const LocalSourceOfPeer& local) {
  size_t n = 0;
  ForEachMemberPath(rib, prefix, [&](const Path& p) {
    scratch_[n++] = MemberInput{p.attrs->next_hop, p.attrs->link_bandwidth.chosen, LocalSourceOf(local, p.peer)};
  });
  const std::span<const MemberInput> members(scratch_, n);
  if (!where_.empty()) {
    const auto [first, count] = where_.back();
    if (views_.back().prefix.family() == prefix.family() &&
        SameMembers(std::span<const MemberInput>(pool_.data() + first, count), members)) {
      views_.push_back(MembersView{prefix, {}});
      where_.emplace_back(first, count);
      return;
    }
  }
  views_.push_back(MembersView{prefix, {}});
  where_.emplace_back(static_cast<uint32_t>(pool_.size()), static_cast<uint32_t>(n));
  pool_.insert(pool_.end(), members.begin(), members.end());
}

std::span<const MembersView> MembersBatch::View() {
  for (size_t i = 0; i < views_.size(); ++i) {
    views_[i].members = std::span<const MemberInput>(pool_.data() + where_[i].first, where_[i].second);
  }
  return views_;
}

void MembersBatch::Clear() {
  const bool big = views_.capacity() > 65536;
  views_.clear();
  where_.clear();
  pool_.clear();
  if (big) {
    views_.shrink_to_fit();
    where_.shrink_to_fit();
    pool_.shrink_to_fit();
  }
}

PrefixMembers MembersOf(const Rib& rib, const net::Prefix& prefix, const LocalSourceOfPeer& local) {
  PrefixMembers pm{prefix, {}};
  if (const Destination* d = rib.Find(prefix)) {
    for (const Path& p : rib.MultipathOf(*d)) {
      if (rib.peer(p.peer).local) continue;
      pm.members.push_back(MemberInput{p.attrs->next_hop, p.attrs->link_bandwidth.chosen, LocalSourceOf(local, p.peer)});
    }
  }
  return pm;
}

std::vector<uint32_t> NextHopGroupRegistry::TargetWeights(const ResolvedBandwidths& r) {
  std::vector<double> positive;
  for (const auto& m : r.members) {
    if (m.bps > 0) positive.push_back(m.bps);
  }
  std::vector<uint32_t> weights(r.members.size(), 0);
  if (positive.empty()) return weights;
  auto it = quantized_.find(positive);
  if (it == quantized_.end()) {
    if (quantized_.size() > 4096) quantized_.clear();
    it = quantized_.emplace(positive, Quantize(positive, config_.limits).weights).first;
  }
  size_t k = 0;
  for (size_t i = 0; i < r.members.size(); ++i) {
    if (r.members[i].bps > 0) weights[i] = it->second[k++];
  }
  return weights;
}

NextHopGroupRegistry::Target NextHopGroupRegistry::Resolve(const MembersView& p) {
  Target t;
  t.family = p.prefix.family();
  if (p.members.empty()) return t;
  t.resolved = ResolveBandwidths(p.members, config_.policy[static_cast<int>(t.family)]);
  t.weights = TargetWeights(t.resolved);
  t.key = KeyOf(t.family, t.resolved);
  return t;
}

void NextHopGroupRegistry::Count(HoldDownOutcome o) {
  switch (o) {
    case HoldDownOutcome::kApplied: ++counters_.applied; break;
    case HoldDownOutcome::kHeld: ++counters_.held; break;
    case HoldDownOutcome::kSuppressed: ++counters_.suppressed; break;
    case HoldDownOutcome::kUnchanged:
    case HoldDownOutcome::kCancelled: break;
  }
}

NextHopGroup& NextHopGroupRegistry::NewGroup(net::Family family, const std::string& key) {
  const GroupId id = next_id_++;
  NextHopGroup& g = groups_[id];
  g.id = id;
  g.family = family;
  g.key = key;
  by_key_[key] = id;
  return g;
}

NextHopGroup& NextHopGroupRegistry::Create(const Target& t, const std::vector<NextHopGroup::Member>* parent,
                                           absl::Time now, bool immediate) {
  NextHopGroup& g = NewGroup(t.family, t.key);
  const GroupId id = g.id;
  if (parent) {
    // Split off `parent`: shared members keep their damping state, so moving to a new
    // group is no way around a hold-down.
    g.members = *parent;
    Rekey(g, t, now, immediate);
    return g;
  }
  for (size_t i = 0; i < t.resolved.members.size(); ++i) {
    const MemberBandwidth& m = t.resolved.members[i];
    g.members.push_back(Join(m, now));
  }
  g.key_weights = t.weights;
  g.all_drained = t.resolved.all_drained;
  if (g.all_drained) {
    notices_.push_back(absl::StrCat("next-hop group ", id, ": every member advertises 0 bandwidth; using equal weights"));
  }
  Reweigh(g);
  return g;
}

void NextHopGroupRegistry::Rekey(NextHopGroup& g, const Target& t, absl::Time now, bool immediate) {
  std::vector<NextHopGroup::Member> members;
  members.reserve(t.resolved.members.size());
  for (const MemberBandwidth& m : t.resolved.members) {
    auto old = std::find_if(g.members.begin(), g.members.end(),
                            [&](const NextHopGroup::Member& o) { return o.next_hop == m.next_hop; });
    if (old == g.members.end()) {
      // A next hop that joins is used at once; one that left is gone at once (below).
      members.push_back(Join(m, now));
      continue;
    }
    NextHopGroup::Member kept = *old;
    if ((kept.source == BandwidthSource::kLocalLink) != (m.source == BandwidthSource::kLocalLink)) {
      // Weighed at its LAG before and at a value of its own now, or the other way round: a
      // change of unit, not of capacity (the LAG's capacity has a hold-down of its own), so
      // it starts at the new value, as a member that joins.
      kept.hold.Restart(m.bps);
    }
    const HoldDownOutcome o = kept.hold.Observe(m.bps, now, config_.damping);
    if (immediate && o == HoldDownOutcome::kHeld) {
      kept.hold.ApplyNow();
      Count(HoldDownOutcome::kApplied);
    } else {
      Count(o);
    }
    kept.bps = m.bps;
    kept.source = m.source;
    kept.link_bandwidth = m.link_bandwidth;
    kept.local_source = m.local_source;
    members.push_back(std::move(kept));
  }
  for (const NextHopGroup::Member& o : g.members) {
    if (std::none_of(members.begin(), members.end(), [&](const auto& m) { return m.next_hop == o.next_hop; })) {
      Lost(o.next_hop, now);
    }
  }
  g.members = std::move(members);
  g.key_weights = t.weights;
  if (t.resolved.all_drained && !g.all_drained) {
    notices_.push_back(absl::StrCat("next-hop group ", g.id, ": every member advertises 0 bandwidth; using equal weights"));
  }
  g.all_drained = t.resolved.all_drained;
  if (g.key != t.key) {
    if (auto k = by_key_.find(g.key); k != by_key_.end() && k->second == g.id) by_key_.erase(k);
    g.key = t.key;
    by_key_[t.key] = g.id;
  }
  Reweigh(g);
}

NextHopGroup::Member NextHopGroupRegistry::Join(const MemberBandwidth& m, absl::Time now) {
  absl::Time settling_since = now;
  if (auto l = losses_.find(m.next_hop); l != losses_.end()) {
    const DampingConfig& d = config_.damping;
    const double halves =
        d.half_life > absl::ZeroDuration() ? absl::FDivDuration(std::max(now - l->second.at, absl::ZeroDuration()), d.half_life) : 64;
    if (l->second.penalty * std::exp2(-halves) > kFlappedPenalty) settling_since = absl::InfinitePast();
    l->second.joined_since = true;
  }
  return NewMember(m, settling_since);
}

void NextHopGroupRegistry::Lost(const net::IpAddress& next_hop, absl::Time now) {
  auto [l, fresh] = losses_.try_emplace(next_hop);
  Loss& loss = l->second;
  if (!fresh && !loss.joined_since) return;  // the same loss (a session's prefixes, in slices)
  const DampingConfig& d = config_.damping;
  const double halves = fresh || d.half_life <= absl::ZeroDuration()
                            ? 64
                            : absl::FDivDuration(std::max(now - loss.at, absl::ZeroDuration()), d.half_life);
  loss.penalty = loss.penalty * std::exp2(-halves) + 1.0;
  loss.at = now;
  loss.joined_since = false;
  if (losses_.size() > 4096) {  // long-forgotten losses go (a penalty below 1/16)
    absl::erase_if(losses_, [&](const auto& e) {
      return d.half_life <= absl::ZeroDuration() ||
             e.second.penalty * std::exp2(-absl::FDivDuration(now - e.second.at, d.half_life)) < 1.0 / 16;
    });
  }
}

void NextHopGroupRegistry::Effective(NextHopGroup::Member& m) const {
  const double applied = m.hold.applied();
  m.effective = applied;
  m.local_capped = false;
  const LocalLink* local = local_link(m.local_source);
  if (local == nullptr || !local->known) return;
  if (m.source == BandwidthSource::kLocalLink) {
    m.effective = local->bps;
    m.local_capped = true;
  } else if ((m.source == BandwidthSource::kCommunity || m.source == BandwidthSource::kDefault) &&
             local->bps < applied) {
    m.effective = local->bps;
    m.local_capped = true;
  }
}

void NextHopGroupRegistry::Reweigh(NextHopGroup& g) {
  for (auto& m : g.members) Effective(m);
  // Damping never keeps every live next hop out: if nothing is applied, apply all.
  const bool any = std::any_of(g.members.begin(), g.members.end(), [](const auto& m) { return m.effective > 0; });
  if (!any) {
    for (auto& m : g.members) {
      if (m.hold.ApplyNow()) ++counters_.applied;
      Effective(m);
    }
  }
  if (std::none_of(g.members.begin(), g.members.end(), [](const auto& m) { return m.effective > 0; })) {
    // Every member's local link is down (or unknown yet): the local capacity gives no
    // proportions, so it is not used rather than blackhole the prefix (the kernel drops a
    // next hop whose interface is down on its own).
    for (auto& m : g.members) {
      m.effective = m.hold.applied() > 0 ? m.hold.applied() : 1.0;
      m.local_capped = false;
    }
  }
  std::vector<double> applied;
  double total = 0;
  for (const auto& m : g.members) {
    if (m.effective > 0) {
      applied.push_back(m.effective);
      total += m.effective;
    }
  }
  std::vector<FibGroupMember> installed;
  g.max_error = 0;
  if (!applied.empty()) {
    const QuantizedWeights q = Quantize(applied, config_.limits);
    uint64_t sum = 0;
    for (uint32_t w : q.weights) sum += w;
    size_t k = 0;
    for (auto& m : g.members) {
      if (m.effective <= 0) {
        m.weight = 0;
        m.share = 0;
        m.error = 0;
        continue;
      }
      m.weight = q.weights[k++];
      m.share = m.effective / total;
      m.error = std::abs(static_cast<double>(m.weight) / static_cast<double>(sum) - m.share) / m.share;
      g.max_error = std::max(g.max_error, m.error);
      installed.push_back(FibGroupMember{m.next_hop, m.weight});
    }
  }
  if (installed != g.installed || !g.announced) {
    g.installed = std::move(installed);
    if (track_fib_) dirty_groups_.insert(g.id);
  }
}

void NextHopGroupRegistry::Attach(const net::Prefix& prefix, NextHopGroup& g) {
  ++g.prefixes;
  *route_group_.TryEmplace(prefix).first = g.id;
  if (track_fib_) *dirty_routes_.TryEmplace(prefix).first = g.id;
}

void NextHopGroupRegistry::Unroute(const net::Prefix& prefix) {
  // A prefix that had no group has no route to delete.
  if (route_group_.Erase(prefix) && track_fib_) *dirty_routes_.TryEmplace(prefix).first = 0;
}

void NextHopGroupRegistry::Detach(NextHopGroup& g) {
  if (--g.prefixes > 0) return;
  const GroupId id = g.id;
  if (auto b = by_key_.find(g.key); b != by_key_.end() && b->second == id) by_key_.erase(b);
  dirty_groups_.erase(id);
  if (g.announced && track_fib_) deleted_groups_.push_back(id);
  groups_.erase(id);
}

void NextHopGroupRegistry::Update(std::span<const PrefixMembers> changes, absl::Time now, bool immediate) {
  std::vector<MembersView> views;
  views.reserve(changes.size());
  for (const PrefixMembers& pm : changes) views.push_back(MembersView{pm.prefix, pm.members});
  Update(views, now, immediate);
}

void NextHopGroupRegistry::Update(std::span<const MembersView> changes, absl::Time now, bool immediate) {
  UpdateImpl(changes, now, immediate, /*check=*/false);
}

void NextHopGroupRegistry::Check(GroupId group, std::span<const MembersView> members, absl::Time now) {
  now_ = std::max(now_, now);
  counters_.early_checked += members.size();
  auto g = groups_.find(group);
  if (g != groups_.end() && g->second.follow && !g->second.follow->counted) {
    CountSlice(g->second, members);
    if (g->second.follow->walk_done) EndCount(g->second);
    return;
  }
  UpdateImpl(members, now, /*immediate=*/false, /*check=*/true);
  g = groups_.find(group);
  if (g != groups_.end() && g->second.follow && g->second.follow->walk_done) g->second.follow.reset();
}

void NextHopGroupRegistry::CountSlice(NextHopGroup& g, std::span<const MembersView> members) {
  std::vector<Target> unique;
  std::vector<uint32_t> target_of;
  ResolveTargets(members, unique, target_of);
  NextHopGroup::Follow& f = *g.follow;
  for (size_t i = 0; i < members.size(); ++i) {
    const Target& t = unique[target_of[i]];
    if (t.key.empty()) continue;  // withdrawn meanwhile: its own change is on its way
    const GroupId* now_in = route_group_.Find(members[i].prefix);
    if (now_in == nullptr || *now_in != g.id) continue;
    if (t.key == g.key) {
      // The prefixes that showed the followed key, kept while they may be the fewer: they
      // are the ones to move if the group goes back.
      if (++f.same <= g.prefixes / 2) {
        f.followers.push_back(members[i].prefix);
      } else {
        f.followers = {};  // the majority: a revert will not happen
      }
    } else if (t.key == f.before_key) {
      ++f.at_before;
    } else {
      ++f.elsewhere;
    }
  }
}

void NextHopGroupRegistry::EndCount(NextHopGroup& g) {
  NextHopGroup::Follow& f = *g.follow;
  f.counted = true;
  f.walk_done = false;  // a moving walk, if one is needed, starts at the top of the table
  f.cursor.reset();
  if (f.at_before + f.elsewhere == 0) {  // every prefix showed the key it follows (the LAG case)
    g.follow.reset();
    return;
  }
  // Most prefixes kept the old key (a peer that re-announced some of them), and the
  // re-announcement is over (no batch showed the new key since the count began): the group
  // goes back in place to what it was, and the prefixes that changed move to a group of their
  // own, with the state the group had while it followed them. Fewer route moves, and the
  // prefixes that never changed never leave their group.
  const auto taken = by_key_.find(f.before_key);
  bool revert = f.at_before > f.same && f.touched < f.walk_started && f.followers.size() == f.same &&
                (taken == by_key_.end() || taken->second == g.id);
  if (revert) {  // and some prefix stays in the group (the others may have gone since)
    const size_t in_group = std::count_if(f.followers.begin(), f.followers.end(), [&](const net::Prefix& p) {
      const GroupId* in = route_group_.Find(p);
      return in != nullptr && *in == g.id;
    });
    revert = in_group > 0 && in_group < g.prefixes;
  }
  if (revert) {
    // The group goes back to what it was, and the changed prefixes' group takes the followed
    // state as it is, members, damping and all.
    const std::string followed_key = std::exchange(g.key, std::move(f.before_key));
    by_key_[g.key] = g.id;
    NextHopGroup& to = NewGroup(g.family, followed_key);  // by_key_: the followed key is its now
    to.members = std::exchange(g.members, std::move(f.before));
    to.key_weights = std::exchange(g.key_weights, std::move(f.before_key_weights));
    to.all_drained = std::exchange(g.all_drained, f.before_all_drained);
    f.before = to.members;  // the other side now: restored if every prefix goes to its key
    f.before_key = to.key;
    f.reverted = true;
    ++counters_.early_reverted;
    Reweigh(to);
    Reweigh(g);
    for (const net::Prefix& p : f.followers) {
      const GroupId* in = route_group_.Find(p);
      if (in == nullptr || *in != g.id) continue;  // it moved on since
      Attach(p, to);
      Detach(g);
      ++counters_.early_moved;
    }
  }
  f.followers = {};  // (their memory too)
  if (f.reverted && f.elsewhere == 0) g.follow.reset();  // nothing left for a moving walk
}

std::optional<CheckSlice> NextHopGroupRegistry::TakeCheckSlice(absl::Time now, size_t max) {
  now_ = std::max(now_, now);
  NextHopGroup* g = nullptr;
  for (auto& [id, group] : groups_) {
    if (group.follow && (group.follow->walking || group.follow->due(config_.early.check_delay) <= now) &&
        (g == nullptr || id < g->id)) {
      g = &group;
    }
  }
  if (g == nullptr) return std::nullopt;
  NextHopGroup::Follow& f = *g->follow;
  if (!f.walking) f.walk_started = now_;  // monotonic: compared with `touched`
  f.walking = true;
  CheckSlice out{g->id, {}};
  max = std::max<size_t>(max, 1);
  size_t scanned = 0;
  bool ended = true;
  // In table order from where the last slice ended; a slice reads at most 8 x max entries,
  // so a group with few of the table's prefixes does not hold the loop either.
  route_group_.ForEachAfter(f.cursor, [&](const net::Prefix& p, GroupId id) {
    f.cursor = p;
    if (id == g->id) out.prefixes.push_back(p);
    if (out.prefixes.size() >= max || ++scanned >= 8 * max) {
      ended = false;
      return false;
    }
    return true;
  });
  if (ended) f.walk_done = true;
  return out;
}

namespace {
// Same family, next hops and local links as the group: only bandwidths differ.
bool SameNextHops(const NextHopGroup& g, net::Family family, const ResolvedBandwidths& r) {
  if (g.family != family || g.members.size() != r.members.size()) return false;
  for (size_t i = 0; i < r.members.size(); ++i) {
    if (!(g.members[i].next_hop == r.members[i].next_hop) || g.members[i].local_source != r.members[i].local_source) {
      return false;
    }
  }
  return true;
}
}  // namespace

void NextHopGroupRegistry::MaybeFollow(NextHopGroup& g, std::span<const size_t> moves,
                                       std::span<const uint32_t> target_of, std::span<const Target> unique,
                                       absl::Time now, bool immediate) {
  // The key most of the moving prefixes want among those with the group's next hops (the
  // same local links) and no group of their own yet; ties to the first in table order.
  absl::flat_hash_map<uint32_t, size_t> votes;
  uint32_t best = 0;
  size_t best_votes = 0;
  for (const size_t i : moves) {
    const uint32_t ti = target_of[i];
    const Target& t = unique[ti];
    if (t.key.empty() || t.key == g.key) continue;
    auto [v, fresh] = votes.try_emplace(ti, 0);
    if (fresh) {
      const auto e = by_key_.find(t.key);
      if (!SameNextHops(g, t.family, t.resolved) || (e != by_key_.end() && e->second != g.id)) {
        v->second = std::numeric_limits<size_t>::max();  // not a candidate
        continue;
      }
    }
    if (v->second == std::numeric_limits<size_t>::max()) continue;
    if (++v->second > best_votes) {
      best_votes = v->second;
      best = ti;
    }
  }
  if (best_votes == 0) return;
  if (g.follow && g.follow->reverted) g.follow.reset();  // a new round from what it is now
  if (!g.follow) {
    g.follow.emplace();
    g.follow->before = g.members;
    g.follow->before_key = g.key;
    g.follow->before_key_weights = g.key_weights;
    g.follow->before_all_drained = g.all_drained;
    g.follow->since = now;
  }
  NextHopGroup::Follow& f = *g.follow;
  f.touched = now_;
  f.walking = false;  // a walk that had started begins again: every prefix is to be checked anew
  f.walk_done = false;
  f.cursor.reset();
  f.counted = false;
  f.same = f.at_before = f.elsewhere = 0;
  f.followers.clear();
  ++f.follows;
  ++counters_.early_reweights;
  Rekey(g, unique[best], now, immediate);
}

void NextHopGroupRegistry::ResolveTargets(std::span<const MembersView> changes, std::vector<Target>& unique,
                                          std::vector<uint32_t>& target_of) {
  target_of.assign(changes.size(), 0);
  absl::flat_hash_map<std::string, uint32_t> by_signature;
  std::string sig;
  for (size_t i = 0; i < changes.size(); ++i) {
    const MembersView& pm = changes[i];
    // Neighbouring prefixes usually have the same members: no signature needed.
    if (i > 0 && changes[i - 1].prefix.family() == pm.prefix.family() &&
        ((changes[i - 1].members.data() == pm.members.data() && changes[i - 1].members.size() == pm.members.size()) ||
         SameMembers(changes[i - 1].members, pm.members))) {
      target_of[i] = target_of[i - 1];
      continue;
    }
    sig.assign(1, static_cast<char>(pm.prefix.family()));
    for (const MemberInput& m : pm.members) {
      sig.append(reinterpret_cast<const char*>(m.next_hop.bytes()), m.next_hop.size());
      const uint64_t lb = m.link_bandwidth ? m.link_bandwidth->ToExtendedCommunity().raw : 0;
      sig.push_back(m.link_bandwidth ? 1 : 0);
      sig.append(reinterpret_cast<const char*>(&lb), sizeof lb);
      sig.append(reinterpret_cast<const char*>(&m.local_source), sizeof m.local_source);
    }
    auto [it, fresh] = by_signature.try_emplace(sig, static_cast<uint32_t>(unique.size()));
    if (fresh) unique.push_back(Resolve(pm));
    target_of[i] = it->second;
  }
}

void NextHopGroupRegistry::UpdateImpl(std::span<const MembersView> changes, absl::Time now, bool immediate,
                                      bool check) {
  now_ = std::max(now_, now);
  // The prefixes of a burst mostly share their members (a peer re-announcing its routes with
  // a new bandwidth): resolve each distinct member set once.
  std::vector<Target> unique;
  std::vector<uint32_t> target_of;
  ResolveTargets(changes, unique, target_of);
  // Changes by the group their prefix uses now (0: none yet).
  absl::flat_hash_map<GroupId, std::vector<size_t>> by_old;
  std::vector<size_t>* last_old = nullptr;
  GroupId last_old_id = 0;
  for (size_t i = 0; i < changes.size(); ++i) {
    const GroupId* g = route_group_.Find(changes[i].prefix);
    const GroupId old_id = g == nullptr ? 0 : *g;
    if (last_old == nullptr || old_id != last_old_id) {
      last_old = &by_old[old_id];
      last_old_id = old_id;
    }
    last_old->push_back(i);
  }
  auto target = [&](size_t i) -> const Target& { return unique[target_of[i]]; };
  std::vector<GroupId> old_ids;
  for (const auto& [id, v] : by_old) old_ids.push_back(id);
  std::sort(old_ids.begin(), old_ids.end());  // deterministic ids for the same input

  for (const GroupId old_id : old_ids) {
    const std::vector<size_t>& moves = by_old[old_id];
    NextHopGroup* g = nullptr;
    if (old_id != 0) g = &groups_.at(old_id);
    if (g && moves.size() == g->prefixes) {
      // Every prefix of the group changed. If those that keep a path all want the same key,
      // and no other group has it, the group follows them in place: one FIB operation; the
      // prefixes left with no path leave it (as the session-loss slices decide).
      const auto kept = std::find_if(moves.begin(), moves.end(), [&](size_t i) { return !target(i).key.empty(); });
      const bool any_kept = kept != moves.end();
      const std::string& key = any_kept ? target(*kept).key : g->key;
      const bool same = any_kept && std::all_of(moves.begin(), moves.end(), [&](size_t i) {
        return target_of[i] == target_of[*kept] || target(i).key == key || target(i).key.empty();
      });
      const auto existing = same ? by_key_.find(key) : by_key_.end();
      if (same && (existing == by_key_.end() || existing->second == g->id)) {
        for (const size_t i : moves) {
          if (!target(i).key.empty()) continue;
          Unroute(changes[i].prefix);
          Detach(*g);  // never its last prefix: one keeps a path
        }
        // Back to the key it had before it followed early (the prefixes that showed the new
        // bandwidths went): the state it had then, as if it never followed.
        if (g->follow && key == g->follow->before_key) g->members = g->follow->before;
        Rekey(*g, target(*kept), now, immediate);
        g->follow.reset();  // every prefix of it showed its key: nothing left to check
        continue;
      }
    }
    if (g && !check && config_.early.enabled && moves.size() < g->prefixes) {
      MaybeFollow(*g, moves, target_of, unique, now, immediate);
    }
    // A group that followed early: a prefix that leaves it starts from the state the group
    // had before (its own bandwidths did not change with the group's).
    const std::vector<NextHopGroup::Member>* parent = nullptr;
    std::vector<NextHopGroup::Member> parent_copy;  // the group may go while its prefixes leave
    // The group each target goes to, found once per old group (a key lookup hashes a string).
    absl::flat_hash_map<uint32_t, GroupId> to_of_target;
    NextHopGroup* last_to = nullptr;
    GroupId last_to_id = 0;
    uint32_t last_target = 0;
    for (const size_t i : moves) {
      const net::Prefix& prefix = changes[i].prefix;
      const Target& t = target(i);
      if (g && !t.key.empty() && g->key == t.key) {  // same group
        // (now_, not now: the wall clock may step back; the revert compares these stamps)
        if (g->follow && !check) g->follow->touched = now_;
        continue;
      }
      if (g && parent == nullptr) {
        parent_copy = g->follow && !g->follow->reverted ? g->follow->before : g->members;
        parent = &parent_copy;
      }
      if (check) ++counters_.early_moved;
      // Into the group for the new key (found, or split off the old one).
      NextHopGroup* to = nullptr;
      if (!t.key.empty() && last_to != nullptr && last_target == target_of[i] && groups_.contains(last_to_id)) {
        to = last_to;  // the previous prefix's target: the same group
      } else if (!t.key.empty()) {
        auto [cached, fresh] = to_of_target.try_emplace(target_of[i], 0);
        if (!fresh) {
          if (auto c = groups_.find(cached->second); c != groups_.end()) to = &c->second;
        }
        if (to == nullptr) {
          if (auto e = by_key_.find(t.key); e != by_key_.end()) {
            to = &groups_.at(e->second);
          } else {
            to = &Create(t, parent, now, immediate);
          }
          cached->second = to->id;
        }
        last_to = to;
        last_to_id = to->id;
        last_target = target_of[i];
      }
      if (to) {
        Attach(prefix, *to);
        // A prefix that joins a group following early shows its new key as well: the
        // re-announcement goes on (no revert for a count that did not see it).
        if (to->follow && !check) to->follow->touched = now_;
      } else {
        Unroute(prefix);
        if (g) {
          for (const NextHopGroup::Member& m : g->members) Lost(m.next_hop, now);
        }
      }
      if (g) {
        Detach(*g);
        if (!groups_.contains(old_id)) g = nullptr;
      }
    }
  }
}

void NextHopGroupRegistry::Expire(absl::Time now) {
  now_ = std::max(now_, now);
  for (auto& [id, g] : groups_) {
    bool changed = false;
    for (auto& m : g.members) {
      if (m.hold.Expire(now)) {
        changed = true;
        ++counters_.applied;
      }
    }
    if (changed) Reweigh(g);
  }
}

std::optional<absl::Time> NextHopGroupRegistry::NextDue() const {
  std::optional<absl::Time> due;
  for (const auto& [id, g] : groups_) {
    for (const auto& m : g.members) {
      if (m.hold.state() != HoldDownState::kStable && (!due || m.hold.due() < *due)) due = m.hold.due();
    }
    if (g.follow) {
      // A check under way goes on at once (the next slice), else at its due time.
      const absl::Time check = g.follow->walking ? now_ : g.follow->due(config_.early.check_delay);
      if (!due || check < *due) due = check;
    }
  }
  if (budget_ && track_fib_) {
    if (auto b = budget_->NextDue(now_); b && (!due || *b < *due)) due = b;
  }
  return due;
}

FibUpdate NextHopGroupRegistry::TakeFibUpdate() {
  FibUpdate u;
  std::vector<GroupId> dirty(dirty_groups_.begin(), dirty_groups_.end());
  std::sort(dirty.begin(), dirty.end());
  for (const GroupId id : dirty) {
    NextHopGroup& g = groups_.at(id);
    g.announced = true;
    u.group_upserts.push_back(FibGroup{id, g.installed});
  }
  dirty_groups_.clear();
  size_t deletes = 0;
  dirty_routes_.ForEach([&](const net::Prefix&, GroupId id) { deletes += id == 0; });
  u.route_deletes.reserve(deletes);  // exactly: a full table's deletes are a million prefixes
  u.route_upserts.reserve(dirty_routes_.size() - deletes);
  dirty_routes_.ForEach([&](const net::Prefix& prefix, GroupId id) {
    if (id == 0) {
      u.route_deletes.push_back(prefix);
    } else {
      u.route_upserts.emplace_back(prefix, id);
    }
  });
  dirty_routes_.clear();
  std::sort(u.route_upserts.begin(), u.route_upserts.end());
  std::sort(u.route_deletes.begin(), u.route_deletes.end());
  u.group_deletes = std::move(deleted_groups_);
  deleted_groups_.clear();
  if (budget_ && track_fib_) {
    // The exact groups become the installed ones: merged where the FIB has no room.
    const MergeWeight by = budget_->config().weight_by;
    u = budget_->Apply(
        u,
        [&](GroupId id) {
          if (by != MergeWeight::kBandwidth) return 1.0;
          const NextHopGroup* g = Find(id);
          double bps = 0;
          if (g) {
            for (const auto& m : g->members) bps += m.effective;
          }
          return bps > 0 ? bps : 1.0;
        },
        now_);
    for (std::string& n : budget_->TakeNotices()) notices_.push_back(std::move(n));
  }
  counters_.group_updates += u.group_upserts.size();
  counters_.route_updates += u.route_upserts.size() + u.route_deletes.size();
  return u;
}

void NextHopGroupRegistry::Reconfigure(const WeightsConfig& config, absl::Time now) {
  now_ = std::max(now_, now);
  const WeightsConfig old = config_;
  config_ = config;
  if (old.budget.max_groups == 0 && config.budget.max_groups != 0) {
    // The limit turns on: the FIB holds every exact group (the weights stage hands each
    // update on before a reload). The budget adopts them as they are; its next update keeps
    // the best as slots in place and merges the rest into them (deletes and route moves only).
    budget_.emplace(config_.budget);
    if (track_fib_) {
      // What the FIB has is what the last FibUpdate said: nothing may be pending.
      assert(dirty_groups_.empty() && dirty_routes_.empty() && deleted_groups_.empty());
      std::vector<FibGroup> groups;
      for (const auto& [id, g] : groups_) {
        if (g.announced) groups.push_back(FibGroup{id, g.installed});
      }
      std::vector<std::pair<net::Prefix, GroupId>> routes;
      route_group_.ForEach([&](const net::Prefix& p, GroupId id) { routes.emplace_back(p, id); });
      budget_->Adopt(groups, routes);
    }
    notices_.push_back(absl::StrCat("next-hop group budget on: at most ", config_.budget.max_groups,
                                    " groups in the FIB; the exact groups are merged into it in place"));
  } else if (old.budget.max_groups != 0 && config.budget.max_groups == 0) {
    // The limit turns off: every route gets its own exact group again, made before the
    // slots are deleted; a route already on a slot with its own id and weights stays.
    if (budget_ && track_fib_) {
      absl::flat_hash_map<GroupId, std::vector<FibGroupMember>> slots;
      for (FibGroup& s : budget_->Slots()) slots.emplace(s.id, std::move(s.members));
      for (const auto& [id, g] : groups_) {
        auto s = slots.find(id);
        if (s == slots.end() || s->second != g.installed) dirty_groups_.insert(id);
      }
      route_group_.ForEach([&](const net::Prefix& p, GroupId id) {
        if (budget_->InstalledSlot(p) != id) {
          auto [dirty, fresh] = dirty_routes_.TryEmplace(p);
          if (fresh) *dirty = id;
        }
      });
      for (const auto& [id, members] : slots) {
        if (!groups_.contains(id)) deleted_groups_.push_back(id);
      }
      std::sort(deleted_groups_.begin(), deleted_groups_.end());
    }
    budget_.reset();
    notices_.push_back("next-hop group budget off: every route gets its own group again");
  } else if (budget_) {
    budget_->Reconfigure(config_.budget);
  }
  quantized_.clear();
  for (auto& [id, g] : groups_) {
    for (auto& m : g.members) m.hold.Reconfigure(old.damping, config_.damping);
    // The state an early reweight may go back to (or hand to the prefixes that leave) is
    // under the new timers too.
    if (g.follow) {
      for (auto& m : g.follow->before) m.hold.Reconfigure(old.damping, config_.damping);
    }
  }
  // Held changes may be due under the new timers; limits may change the weights.
  for (auto& [id, g] : groups_) {
    for (auto& m : g.members) {
      if (m.hold.Expire(now)) ++counters_.applied;
    }
    Reweigh(g);
  }
}

std::vector<std::string> NextHopGroupRegistry::TakeNotices() { return std::exchange(notices_, {}); }

void NextHopGroupRegistry::SetLocalSources(std::vector<std::string> names) {
  std::vector<LocalLink> links(names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    links[i].name = std::move(names[i]);
    // A source that keeps its name keeps its capacity.
    for (const LocalLink& old : local_) {
      if (old.name == links[i].name) links[i] = old;
    }
  }
  local_ = std::move(links);
  // A source renumbered (not the daemon's way: it only adds) weighs its members anew.
  for (auto& [id, g] : groups_) Reweigh(g);
}

void NextHopGroupRegistry::SetLocalCapacity(int16_t index, double bps) {
  if (index < 0 || static_cast<size_t>(index) >= local_.size()) return;
  LocalLink& l = local_[index];
  if (l.known && l.bps == bps) return;
  l.bps = bps;
  l.known = true;
  for (auto& [id, g] : groups_) {
    if (std::any_of(g.members.begin(), g.members.end(), [&](const auto& m) { return m.local_source == index; })) {
      Reweigh(g);
    }
  }
}

size_t NextHopGroupRegistry::local_capped_members() const {
  size_t n = 0;
  for (const auto& [id, g] : groups_) {
    for (const auto& m : g.members) n += m.local_capped;
  }
  return n;
}

const NextHopGroup* NextHopGroupRegistry::GroupOf(const net::Prefix& prefix) const {
  const GroupId* id = route_group_.Find(prefix);
  return id == nullptr ? nullptr : Find(*id);
}

const NextHopGroup* NextHopGroupRegistry::Find(GroupId id) const {
  auto it = groups_.find(id);
  return it == groups_.end() ? nullptr : &it->second;
}

std::vector<const NextHopGroup*> NextHopGroupRegistry::Groups() const {
  std::vector<const NextHopGroup*> out;
  out.reserve(groups_.size());
  for (const auto& [id, g] : groups_) out.push_back(&g);
  std::sort(out.begin(), out.end(), [](const NextHopGroup* a, const NextHopGroup* b) { return a->id < b->id; });
  return out;
}

double NextHopGroupRegistry::max_error() const {
  double e = 0;
  for (const auto& [id, g] : groups_) e = std::max(e, g.max_error);
  return e;
}

}  // namespace bagd::rib
