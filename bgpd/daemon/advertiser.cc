#include "bgpd/daemon/advertiser.h"

#include <algorithm>
#include <iterator>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "bgpd/session/log.h"
#include "wire/update_packer.h"

namespace bagd::daemon {

namespace {

// RFC 1997 well-known communities.
constexpr uint32_t kNoExport = 0xFFFFFF01;
constexpr uint32_t kNoAdvertise = 0xFFFFFF02;
constexpr uint32_t kNoExportSubconfed = 0xFFFFFF03;

// True if `a` and `b` differ at most in their link-bandwidth communities.
bool SameExceptLinkBandwidth(const wire::PathAttributes& a, const wire::PathAttributes& b) {
  wire::PathAttributes x = a, y = b;
  x.ReplaceLinkBandwidth(std::nullopt);
  y.ReplaceLinkBandwidth(std::nullopt);
  return x == y;
}

std::optional<net::IpAddress> NextHopOf(const wire::PathAttributes& a) {
  if (a.mp_reach) return a.mp_reach->next_hop;
  return a.next_hop;
}

void SetNextHop(wire::PathAttributes& a, net::Family family, const net::IpAddress& nh) {
  if (family == net::Family::kIpv4Unicast) {
    a.next_hop = nh;
    a.mp_reach.reset();
  } else {
    a.next_hop.reset();
    a.mp_reach = wire::MpReach{family, nh, std::nullopt, {}};
  }
}

// Prefixes to announce grouped by exported attribute set, in first-seen order: each set is
// encoded once and its prefixes packed together.
class AnnouncementGroups {
 public:
  void Add(const rib::AttrRef& ref, const net::Prefix& prefix) {
    if (last_ == SIZE_MAX || groups_[last_].first != ref) {
      auto [g, fresh] = group_of_.try_emplace(ref.get(), groups_.size());
      if (fresh) groups_.emplace_back(ref, std::vector<net::Nlri>{});
      last_ = g->second;
    }
    groups_[last_].second.push_back(net::Nlri{prefix, 0});
    ++prefixes_;
  }
  size_t prefixes() const { return prefixes_; }

  // Appends the UPDATEs for `to` to `messages`; a set that cannot be encoded is logged and
  // the others still go out.
  void PackFor(const Outbound& to, std::vector<wire::Bytes>& messages) const {
    const wire::CodecContext ctx = to.EncodeContext();
    for (const auto& [ref, nlri] : groups_) {
      auto packed = wire::PackAnnouncements(ref->attrs, nlri.front().prefix.family(), nlri, ctx);
      if (!packed.ok()) {
        log::Error("neighbor %s: cannot advertise %d prefixes: %s", to.name(), nlri.size(), packed.status().ToString());
        continue;
      }
      std::move(packed->begin(), packed->end(), std::back_inserter(messages));
    }
  }

 private:
  std::vector<std::pair<rib::AttrRef, std::vector<net::Nlri>>> groups_;
  absl::flat_hash_map<const rib::InternedAttributes*, size_t> group_of_;
  size_t last_ = SIZE_MAX;
  size_t prefixes_ = 0;
};

}  // namespace

Advertiser::Advertiser(RoutingCore& core, rib::RouteChangeListener& next, session::Clock& clock, uint32_t local_as,
                       const LocalCapacityView* local)
    : core_(core), next_(next), clock_(clock), local_as_(local_as), local_(local) {}

void Advertiser::AddPeer(rib::PeerIndex index, Outbound& out, ExportConfig config) {
  if (peers_.size() <= index) peers_.resize(index + 1);
  peers_[index] = PeerState{};
  peers_[index].out = &out;
  peers_[index].config = std::move(config);
}

void Advertiser::RemovePeer(rib::PeerIndex index) {
  if (index < peers_.size()) peers_[index] = PeerState{};  // its timers stop with it
}

const rib::AdjRibOut* Advertiser::advertised(rib::PeerIndex index) const {
  if (index >= peers_.size() || peers_[index].out == nullptr) return nullptr;
  return &peers_[index].adj_out;
}

const ExportConfig* Advertiser::export_config(rib::PeerIndex index) const {
  if (index >= peers_.size() || peers_[index].out == nullptr) return nullptr;
  return &peers_[index].config;
}

Advertiser::PeerState* Advertiser::Writable(rib::PeerIndex index) {
  Flush();
  if (index >= peers_.size() || peers_[index].out == nullptr) return nullptr;
  return &peers_[index];
}

void Advertiser::Flush() {
  if (flushing_) return;  // a write during the flush itself works from the changes in hand
  flushing_ = true;
  rib::Rib& rib = core_.rib();
  if (rib.pending_changes() > 0) {
    std::vector<rib::RouteChange> changes = rib.TakeChanges();
    Propagate(changes);
    next_.OnRouteChanges(changes);
    if (observer_) observer_->OnRouteChanges(changes);
    rib.Recycle(std::move(changes));
  }
  flushing_ = false;
}

void Advertiser::Propagate(std::span<const rib::RouteChange> changes) {
  if (changes.empty()) return;
  for (PeerState& p : peers_) {
    if (p.out != nullptr) AdvertisePaced(p, changes);
  }
}

bool Advertiser::Reconfigure(rib::PeerIndex index, ExportConfig config) {
  PeerState* p = Writable(index);
  if (p == nullptr) return false;
  const rib::LinkBandwidthExport& a = p->config.link_bandwidth;
  const rib::LinkBandwidthExport& b = config.link_bandwidth;
  bool changed = a.mode != b.mode || a.fixed_bps != b.fixed_bps || a.reference_bps != b.reference_bps ||
                 a.transitive != b.transitive;
  for (int f = 0; f < net::kFamilyCount; ++f) changed |= p->config.chains[f].fingerprint != config.chains[f].fingerprint;
  p->config = std::move(config);
  if (changed && Sending(*p)) AdvertisePaced(*p, Everything());
  return changed;
}

void Advertiser::LocalCapacityChanged() {
  for (size_t i = 0; i < peers_.size(); ++i) {
    PeerState* p = Writable(static_cast<rib::PeerIndex>(i));
    if (p != nullptr && Sending(*p)) AdvertisePaced(*p, Everything());
  }
}

std::optional<wire::PathAttributes> Advertiser::ExportAttributes(rib::PeerIndex to_index, const net::Prefix& prefix,
                                                                 std::span<const rib::Path> multipath) const {
  if (multipath.empty() || to_index >= peers_.size() || peers_[to_index].out == nullptr) return std::nullopt;
  const PeerState& state = peers_[to_index];
  const Outbound& to = *state.out;
  const net::Family family = prefix.family();
  const rib::Path& best = multipath.front();
  const rib::Rib& rib = core_.rib();
  // 1. Protocol rules.
  if (best.peer == to_index) return std::nullopt;  // never back to where it came from
  const rib::PeerInfo& from = rib.peer(best.peer);
  const bool to_ebgp = to.ebgp();
  if (!from.local && !from.source.ebgp && !to_ebgp) return std::nullopt;  // RFC 4271 §9.1.1: no iBGP to iBGP
  if (!to.family_negotiated(family)) return std::nullopt;
  const wire::PathAttributes& received = best.attrs->attrs;
  for (uint32_t c : received.communities) {
    if (c == kNoAdvertise) return std::nullopt;
    if ((c == kNoExport || c == kNoExportSubconfed) && to_ebgp) return std::nullopt;
  }
  // 2. Export policy.
  const PolicyChain& chain = state.config.chains[static_cast<int>(family)];
  policy::PolicyResult result;
  if (!chain.passes_everything()) {
    if (chain.rejects_everything()) return std::nullopt;
    policy::RouteContext route;
    route.prefix = prefix;
    route.attributes = &received;
    if (!from.local) route.neighbor = from.source.address;
    route.source = from.local ? policy::RouteSource::kLocal
                              : (from.source.ebgp ? policy::RouteSource::kEbgp : policy::RouteSource::kIbgp);
    result = policy::EvaluateChain(chain.policies, route, chain.default_verdict);
    if (result.verdict != policy::Verdict::kAccept) return std::nullopt;
  }
  // A next hop the policy set explicitly is kept; next-hop-self (eBGP, our own routes, or
  // the policy's `next_hop { self }`) is written below.
  const bool policy_next_hop = result.modified && NextHopOf(*result.modified) != NextHopOf(received);
  // Likewise a link bandwidth the policy set, drained or removed (compared before the
  // rewrite, which drops non-transitive communities toward eBGP).
  const bool policy_set_lb = result.deferred.link_bandwidth == policy::LinkBandwidthExport::kNone && result.modified &&
                             !(received.SelectedLinkBandwidth().chosen == result.modified->SelectedLinkBandwidth().chosen);
  wire::PathAttributes a = result.modified ? *std::move(result.modified) : received;
  // 3. Wire rewrite.
  a.mp_unreach.reset();
  bool next_hop_self = result.deferred.next_hop_self;
  if (to_ebgp) {
    // Our AS in front (RFC 4271 §5.1.2), next hop self (§5.1.3), MED not passed to another
    // AS (§5.1.4), LOCAL_PREF and route-reflection attributes internal only.
    wire::AsPath path = a.as_path.value_or(wire::AsPath{});
    if (!path.segments.empty() && path.segments.front().type == wire::AsSegmentType::kSequence &&
        path.segments.front().asns.size() < 255) {
      path.segments.front().asns.insert(path.segments.front().asns.begin(), local_as_);
    } else {
      path.segments.insert(path.segments.begin(), wire::AsPathSegment{wire::AsSegmentType::kSequence, {local_as_}});
    }
    a.as_path = std::move(path);
    a.med.reset();
    a.local_pref.reset();
    a.originator_id.reset();
    a.cluster_list.clear();
    std::erase_if(a.extended_communities, [](const wire::ExtendedCommunity& ec) { return !ec.transitive(); });
    std::erase_if(a.unknown, [](const wire::UnknownAttribute& u) { return !(u.flags & wire::attr_flag::kTransitive); });
    next_hop_self = true;
  } else if (from.local) {
    next_hop_self = true;  // our own route to an iBGP peer
  } else {
    // eBGP-learned to iBGP: next hop unchanged, LOCAL_PREF present (RFC 4271 §5.1.5).
    if (!a.local_pref) a.local_pref = 100;
    std::erase_if(a.unknown, [](const wire::UnknownAttribute& u) { return !(u.flags & wire::attr_flag::kTransitive); });
  }
  if (policy_next_hop) {
    const auto nh = NextHopOf(a);
    if (!nh || nh->is_v4() != (family == net::Family::kIpv4Unicast)) return std::nullopt;
    SetNextHop(a, family, *nh);
  } else if (next_hop_self) {
    const auto local = to.LocalAddress();
    // An IPv4 route needs an IPv4 next hop (no RFC 8950 export yet), IPv6 an IPv6 one.
    if (!local || local->is_v4() != (family == net::Family::kIpv4Unicast)) return std::nullopt;
    SetNextHop(a, family, *local);
  }
  // Link bandwidth: replaced, never appended (RFC 10005 §7.1). A policy's cumulative or
  // num-multipaths action wins over the neighbor's mode; one that set, drained or removed
  // the value is passed as it left it.
  if (policy_set_lb) return a;
  rib::LinkBandwidthExport lb = state.config.link_bandwidth;
  switch (result.deferred.link_bandwidth) {
    case policy::LinkBandwidthExport::kCumulative:
      lb.mode = rib::LinkBandwidthExportMode::kCumulative;
      break;
    case policy::LinkBandwidthExport::kNumMultipaths:
      lb.mode = rib::LinkBandwidthExportMode::kNumMultipaths;
      lb.reference_bps = result.deferred.reference_bits_per_second;
      break;
    case policy::LinkBandwidthExport::kNone:
      break;
  }
  if (result.deferred.link_bandwidth != policy::LinkBandwidthExport::kNone) {
    lb.transitive = result.deferred.link_bandwidth_transitive;
  }
  const bool next_hop_unchanged = !to_ebgp && !from.local && !next_hop_self && !policy_next_hop;
  absl::InlinedVector<std::optional<wire::LinkBandwidth>, 8> lbs;  // per prefix and peer: no heap
  for (const rib::Path& p : multipath) {
    std::optional<wire::LinkBandwidth> chosen = p.attrs->link_bandwidth.chosen;
    // When traffic comes to us (we are the next hop), it leaves over our own LAG: count the
    // path at no more than the LAG's capacity (a path without LB counts at the capacity).
    if (local_ != nullptr && !next_hop_unchanged) {
      if (const auto cap = local_->CapOf(p.peer); cap && (!chosen || *cap < chosen->bits_per_second())) {
        chosen = wire::LinkBandwidth::FromBitsPerSecond(local_as_, *cap, !chosen || chosen->transitive());
      }
    }
    lbs.push_back(chosen);
  }
  a.ReplaceLinkBandwidth(rib::ExportLinkBandwidth(lb, lbs, next_hop_unchanged, local_as_));
  return a;
}

void Advertiser::Advertise(PeerState& state, std::span<const rib::RouteChange> changes) {
  Outbound& to = *state.out;
  if (!Sending(state)) return;
  const rib::PeerIndex index = static_cast<rib::PeerIndex>(&state - peers_.data());
  auto& out = state.adj_out;
  AnnouncementGroups announce;
  std::vector<net::Nlri> withdraw[net::kFamilyCount];
  BandwidthExport& lbx = state.lb;
  const absl::Time now = Now();
  // What goes out depends only on the family and the multipath set's paths (their peers and
  // interned attributes) — and on the prefix, when an export policy tests it. A batch's
  // prefixes share a handful of sets: each distinct one is exported and interned once (a
  // null AttrRef: not exported to this peer).
  bool per_prefix = false;
  for (const PolicyChain& c : state.config.chains) per_prefix |= c.depends_on_prefix;
  // A family this peer gets nothing of (export rejects everything, RFC 8212's default toward
  // an eBGP neighbor without policy, or a family not negotiated): export_of says none at once,
  // without the memo's comparisons; a batch with nothing to withdraw either is not walked.
  std::array<bool, net::kFamilyCount> none{};
  bool none_at_all = true;
  for (int f = 0; f < net::kFamilyCount; ++f) {
    none[f] = state.config.chains[f].rejects_everything() || !to.family_negotiated(static_cast<net::Family>(f));
    none_at_all &= none[f];
  }
  if (none_at_all && out.empty()) return to.Advertised(0);
  absl::flat_hash_map<std::string, rib::AttrRef> exports;
  std::string key;
  // One-entry memos in front of the map: neighbouring prefixes usually share their sets.
  struct Memo {
    const rib::PathSet* set = nullptr;
    net::Family family = net::Family::kIpv4Unicast;
    rib::AttrRef ref;
  };
  Memo old_memo, new_memo;
  auto export_of = [&](const net::Prefix& prefix, const rib::PathSet& set, Memo& m) -> rib::AttrRef {
    const net::Family family = prefix.family();
    if (set.empty() || none[static_cast<int>(family)]) return {};
    if (per_prefix) {
      auto exported = ExportAttributes(index, prefix, set);
      return exported ? core_.store().Intern(*std::move(exported)) : rib::AttrRef{};
    }
    if (m.set != nullptr && m.family == family && *m.set == set) return m.ref;
    key.assign(1, static_cast<char>(family));
    for (const rib::Path& p : set) {
      const rib::InternedAttributes* a = p.attrs.get();
      key.append(reinterpret_cast<const char*>(&p.peer), sizeof p.peer);
      key.append(reinterpret_cast<const char*>(&a), sizeof a);
    }
    auto [it, fresh] = exports.try_emplace(key);
    if (fresh) {
      if (auto exported = ExportAttributes(index, prefix, set)) it->second = core_.store().Intern(*std::move(exported));
    }
    m = Memo{&set, family, it->second};
    return it->second;
  };
  // SameExceptLinkBandwidth copies both sets: once per pair of sets, not per prefix (a
  // neighbor's table coming in moves every prefix from one cumulative bandwidth to the next).
  // The memo holds its references: a set it names cannot be freed and its address reused.
  rib::AttrRef same_from, same_to;
  bool same = false;
  auto only_lb_differs = [&](const rib::AttrRef& from, const rib::AttrRef& to) {
    if (!(from == same_from) || !(to == same_to)) {
      same_from = from;
      same_to = to;
      same = SameExceptLinkBandwidth(from->attrs, to->attrs);
    }
    return same;
  };
  for (const auto& c : changes) {
    const net::Family family = c.prefix.family();
    const rib::AttrRef ref = export_of(c.prefix, c.new_multipath, new_memo);
    // What this peer should get did not move (another peer's path joined the multipath
    // set, say): the Adj-RIB-Out is left as it is, not even looked up.
    if (!c.old_multipath.empty() && ref == export_of(c.prefix, c.old_multipath, old_memo)) continue;
    if (ref) {
      auto [cur, added] = out.TryEmplace(c.prefix);
      if (!added) {
        const rib::AttrRef& sent = out.attrs(*cur);
        if (sent == ref) continue;
        // Only the bandwidth changed: re-advertisement damping decides (threshold, interval).
        const auto& old_lb = sent->link_bandwidth.chosen;  // interned: SelectedLinkBandwidth() of the set
        const auto& new_lb = ref->link_bandwidth.chosen;
        if (old_lb && new_lb && !(*old_lb == *new_lb) && only_lb_differs(sent, ref)) {
          const auto d = lbx.damping.Check(cur->readvertisement, old_lb->bits_per_second(), new_lb->bits_per_second(),
                                           now, state.config.link_bandwidth);
          if (d.verdict == rib::BandwidthReadvertisement::Verdict::kSuppress) continue;
          if (d.verdict == rib::BandwidthReadvertisement::Verdict::kDefer) {
            lbx.damping.Defer(cur->readvertisement, c.prefix);
            if (d.not_before < lbx.timer_at) {
              if (!lbx.timer) lbx.timer = clock_.NewTimer();
              lbx.timer_at = d.not_before;
              lbx.timer->Start(absl::ToChronoMilliseconds(d.not_before - now) + std::chrono::milliseconds(1),
                               [this, index] { FlushDeferredBandwidth(index); });
            }
            continue;
          }
          lbx.damping.Sent(out, *cur, now);
        }
      }
      out.SetAttrs(*cur, ref);
      announce.Add(ref, c.prefix);
    } else if (out.Erase(c.prefix)) {
      withdraw[static_cast<int>(family)].push_back(net::Nlri{c.prefix, 0});
    }
  }
  const wire::CodecContext ctx = to.EncodeContext();
  std::vector<wire::Bytes> messages;
  for (int f = 0; f < net::kFamilyCount; ++f) {
    if (withdraw[f].empty()) continue;
    auto packed = wire::PackWithdrawals(static_cast<net::Family>(f), withdraw[f], ctx);
    if (packed.ok()) std::move(packed->begin(), packed->end(), std::back_inserter(messages));
  }
  announce.PackFor(to, messages);
  if (!messages.empty()) to.SendUpdates(std::move(messages));
  to.Advertised(out.size());
}

void Advertiser::AdvertisePaced(PeerState& p, std::span<const rib::RouteChange> changes) {
  const uint32_t mrai = p.out->advertisement_interval_s();
  if (mrai == 0 || !Sending(p)) return Advertise(p, changes);
  if (p.pacing.running) {
    for (const auto& c : changes) p.pacing.pending.insert(c.prefix);
    return;
  }
  // Nothing sent within the interval: send now and start it.
  Advertise(p, changes);
  StartInterval(p, mrai);
}

void Advertiser::StartInterval(PeerState& p, uint32_t mrai) {
  if (!p.pacing.timer) p.pacing.timer = clock_.NewTimer();
  p.pacing.running = true;
  const rib::PeerIndex index = static_cast<rib::PeerIndex>(&p - peers_.data());
  p.pacing.timer->Start(std::chrono::seconds(mrai), [this, index] { FlushPaced(index); });
}

void Advertiser::AdvertisePacedInSlices(PeerState& p, std::span<const net::Prefix> prefixes) {
  const uint32_t mrai = p.out->advertisement_interval_s();
  const bool paced = mrai > 0 && Sending(p);
  if (paced && p.pacing.running) {
    for (const auto& prefix : prefixes) p.pacing.pending.insert(prefix);
    return;
  }
  // As AdvertisePaced, with each slice's current state taken and sent before the next: a
  // bandwidth change over the whole table would otherwise hold a change (~170 bytes) per
  // prefix at once.
  for (size_t i = 0; i < prefixes.size(); i += kAdvertiseSlice) {
    Advertise(p, CurrentState(prefixes.subspan(i, std::min(kAdvertiseSlice, prefixes.size() - i))));
  }
  if (paced) StartInterval(p, mrai);
}

void Advertiser::FlushPaced(rib::PeerIndex index) {
  PeerState* p = Writable(index);
  if (p == nullptr) return;
  p->pacing.running = false;
  if (p->pacing.pending.empty()) return;
  // Each waiting prefix once, in its state now.
  std::vector<rib::RouteChange> now = CurrentState(p->pacing.pending);
  p->pacing.pending.clear();
  AdvertisePaced(*p, now);
}

void Advertiser::FlushDeferredBandwidth(rib::PeerIndex index) {
  PeerState* p = Writable(index);
  if (p == nullptr) return;
  p->lb.timer_at = absl::InfiniteFuture();
  const std::vector<net::Prefix> deferred = p->lb.damping.TakeDeferred(p->adj_out);
  if (deferred.empty() || !Sending(*p)) return;
  AdvertisePacedInSlices(*p, deferred);
}

std::vector<rib::RouteChange> Advertiser::CurrentState(const absl::flat_hash_set<net::Prefix>& prefixes) const {
  // Table order: the same UPDATEs for the same state, whatever the set's order.
  std::vector<net::Prefix> sorted(prefixes.begin(), prefixes.end());
  std::sort(sorted.begin(), sorted.end(), net::InTableOrder);
  return CurrentState(sorted);
}

std::vector<rib::RouteChange> Advertiser::CurrentState(std::span<const net::Prefix> in_table_order) const {
  const rib::Rib& rib = core_.rib();
  std::vector<rib::RouteChange> out;
  out.reserve(in_table_order.size());
  for (const auto& prefix : in_table_order) {  // in order: the RIB's cursor makes each lookup O(1)
    rib::RouteChange c{prefix, {}, {}};
    if (const rib::Destination* d = rib.Find(prefix)) c.new_multipath = rib.MultipathOf(*d);
    out.push_back(std::move(c));
  }
  return out;
}

std::vector<rib::RouteChange> Advertiser::Everything() const {
  const rib::Rib& rib = core_.rib();
  std::vector<rib::RouteChange> all;
  all.reserve(rib.prefix_count());
  rib.ForEach([&](const net::Prefix& prefix, const rib::Destination& d) {
    all.push_back(rib::RouteChange{prefix, {}, d.best() >= 0 ? rib.MultipathOf(d) : rib::PathSet{}});
  });
  return all;
}

void Advertiser::SessionUp(rib::PeerIndex index, bool hold) {
  PeerState* p = Writable(index);
  if (p == nullptr) return;
  p->adj_out.clear();
  p->lb.damping.Clear();
  p->held = hold;
  if (!hold) SendInitial(*p);
}

void Advertiser::ReleaseHeld(rib::PeerIndex index) {
  PeerState* p = Writable(index);
  if (p == nullptr || !p->held) return;
  p->held = false;
  SendInitial(*p);
}

bool Advertiser::held(rib::PeerIndex index) const {
  return index < peers_.size() && peers_[index].out != nullptr && peers_[index].held;
}

void Advertiser::SendInitial(PeerState& p) {
  std::vector<rib::RouteChange> all = Everything();
  std::erase_if(all, [](const rib::RouteChange& c) { return c.new_multipath.empty(); });
  Advertise(p, all);
  log::Info("neighbor %s: initial advertisement: %d prefixes", p.out->name(), p.adj_out.size());
}

void Advertiser::SessionDown(rib::PeerIndex index) {
  PeerState* p = Writable(index);
  if (p == nullptr) return;
  p->adj_out.clear();
  p->held = false;
  p->lb.damping.Clear();
  p->lb.timer_at = absl::InfiniteFuture();
  if (p->lb.timer) p->lb.timer->Stop();
  p->pacing.pending.clear();
  p->pacing.running = false;
  if (p->pacing.timer) p->pacing.timer->Stop();
  p->out->Advertised(0);
}

size_t Advertiser::Resend(rib::PeerIndex index, net::Family family, bool enhanced) {
  PeerState* p = Writable(index);
  if (p == nullptr || !Sending(*p)) return 0;
  Outbound& to = *p->out;
  // The answer goes out at once, whatever the advertisement interval (MRAI paces changes,
  // RFC 4271 §9.2.1.1; this is the state the peer already has). Prefixes waiting for the
  // interval to end (and bandwidth changes held by re-advertisement damping) are not in the
  // Adj-RIB-Out yet: they stay waiting and go out when their time comes, so the peer sees
  // exactly the sequence it would have seen without the refresh.
  // RFC 7313 §4: BoRR first and EoRR last, so the peer can drop what we no longer send. Our
  // End-of-RIB went out right after the initial table, so no BoRR precedes it (§4, with
  // Graceful Restart).
  if (enhanced) to.SendRouteRefresh(wire::RouteRefreshMessage::Make(family, wire::route_refresh_subtype::kBorr));
  AnnouncementGroups announce;
  p->adj_out.ForEachIn(family, [&](const net::Prefix& prefix, const rib::AdjRibOut::Entry& e) {
    announce.Add(p->adj_out.attrs(e), prefix);
  });
  std::vector<wire::Bytes> messages;
  announce.PackFor(to, messages);
  if (!messages.empty()) to.SendUpdates(std::move(messages));
  if (enhanced) to.SendRouteRefresh(wire::RouteRefreshMessage::Make(family, wire::route_refresh_subtype::kEorr));
  return announce.prefixes();
}

}  // namespace bagd::daemon
