#include "bgpd/daemon/advertiser.h"

#include <algorithm>
#include <iterator>
#include <memory>

#include "absl/container/flat_hash_map.h"
#include "absl/container/node_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
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

  // f(const rib::AttrRef&, size_t prefixes, absl::StatusOr<std::vector<wire::Bytes>>) for each
  // set in first-seen order.
  template <typename F>
  void Pack(const wire::CodecContext& ctx, F&& f) const {
    for (const auto& [ref, nlri] : groups_) {
      f(ref, nlri.size(), wire::PackAnnouncements(ref->attrs, nlri.front().prefix.family(), nlri, ctx));
    }
  }
  // Appends the UPDATEs for `to` to `messages`; a set that cannot be encoded is logged and
  // the others still go out.
  void PackFor(const Outbound& to, std::vector<wire::Bytes>& messages) const {
    Pack(to.EncodeContext(), [&](const rib::AttrRef&, size_t prefixes, absl::StatusOr<std::vector<wire::Bytes>> packed) {
      if (!packed.ok()) return CannotAdvertise(to, prefixes, packed.status());
      std::move(packed->begin(), packed->end(), std::back_inserter(messages));
    });
  }
  static void CannotAdvertise(const Outbound& to, size_t prefixes, const absl::Status& status) {
    log::Error("neighbor %s: cannot advertise %d prefixes: %s", to.name(), prefixes, status.ToString());
  }

 private:
  std::vector<std::pair<rib::AttrRef, std::vector<net::Nlri>>> groups_;
  absl::flat_hash_map<const rib::InternedAttributes*, size_t> group_of_;
  size_t last_ = SIZE_MAX;
  size_t prefixes_ = 0;
};

const rib::AttrRef kNoAttrs;

void AppendWithdrawals(const std::array<std::vector<net::Nlri>, net::kFamilyCount>& withdraw,
                       const wire::CodecContext& ctx, std::vector<wire::Bytes>& messages) {
  for (int f = 0; f < net::kFamilyCount; ++f) {
    if (withdraw[f].empty()) continue;
    auto packed = wire::PackWithdrawals(static_cast<net::Family>(f), withdraw[f], ctx);
    if (packed.ok()) std::move(packed->begin(), packed->end(), std::back_inserter(messages));
  }
}

}  // namespace

// One change set's export for a group of neighbors with the same ExportKey, as its first
// member sees it with split horizon left out, and what a member in step with it does.
struct Advertiser::ExportPass {
  enum class Step : uint8_t { kNone, kAnnounce, kWithdraw };
  std::optional<net::IpAddress> rep_local;  // the first member's address
  std::array<bool, net::kFamilyCount> none{};  // the group gets nothing of this family
  bool none_at_all = true;
  // Per change: the group's export of its new and old multipath sets (null: none), and the
  // step of a member whose Adj-RIB-Out is in step (it had old_ref, and nothing holds it back).
  std::vector<rib::AttrRef> new_ref, old_ref;
  std::vector<Step> step;
  // Exports whose next hop is rep_local by next-hop-self: each member has its own.
  absl::flat_hash_set<const rib::InternedAttributes*> self;
  AnnouncementGroups announce;
  std::array<std::vector<net::Nlri>, net::kFamilyCount> withdraw;
  // The UPDATEs of the steps, packed for the first member in step and copied for the others.
  bool packed = false;
  std::vector<wire::Bytes> withdrawals;
  struct Announcements {
    rib::AttrRef ref;
    size_t prefixes = 0;
    absl::StatusOr<std::vector<wire::Bytes>> messages;
  };
  std::vector<Announcements> announcements;
};

Advertiser::Advertiser(RoutingCore& core, rib::RouteChangeListener& next, session::Clock& clock, uint32_t local_as,
                       const LocalCapacityView* local)
    : core_(core), next_(next), clock_(clock), local_as_(local_as), local_(local) {}

void Advertiser::AddPeer(rib::PeerIndex index, Outbound& out, ExportConfig config) {
  if (peers_.size() <= index) peers_.resize(index + 1);
  peers_[index] = PeerState{};
  peers_[index].out = &out;
  peers_[index].config_key = ConfigKey(config);
  peers_[index].config = std::move(config);
}

std::string Advertiser::ConfigKey(const ExportConfig& config) {
  const rib::LinkBandwidthExport& lb = config.link_bandwidth;
  std::string key = absl::StrFormat("lb %d %a %a %d %a %d;", static_cast<int>(lb.mode), lb.fixed_bps, lb.reference_bps,
                                    lb.transitive, lb.readvertise_threshold_percent,
                                    absl::ToInt64Milliseconds(lb.readvertise_interval));
  for (const PolicyChain& c : config.chains) absl::StrAppend(&key, c.fingerprint.size(), ":", c.fingerprint, ";");
  return key;
}

std::string Advertiser::ExportKey(const PeerState& p) const {
  const Outbound& out = *p.out;
  const wire::CodecContext ctx = out.EncodeContext();
  const auto local = out.LocalAddress();
  std::string key = absl::StrFormat("%d %d %d %d %d %d %d|", out.ebgp(), ctx.four_octet_as, ctx.extended_message,
                                    ctx.ebgp, ctx.confederation_peer, local ? (local->is_v4() ? 4 : 6) : 0,
                                    out.advertisement_interval_s());
  for (int f = 0; f < net::kFamilyCount; ++f) {
    key.push_back(out.family_negotiated(static_cast<net::Family>(f)) ? 'y' : 'n');
    key.push_back(ctx.add_path[f] ? 'y' : 'n');
  }
  key.append(p.config_key);
  return key;
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
    AdvertisePacedToAll(changes);
    next_.OnRouteChanges(changes);
    if (observer_) observer_->OnRouteChanges(changes);
    rib.Recycle(std::move(changes));
  }
  flushing_ = false;
}

void Advertiser::AdvertisePacedToAll(std::span<const rib::RouteChange> changes) {
  std::vector<PeerState*> sending;
  for (PeerState& p : peers_) {
    if (Sending(p)) sending.push_back(&p);
  }
  AdvertisePaced(sending, changes);
}

std::vector<Advertiser::PeerState*> Advertiser::SendNow(std::span<PeerState* const> members,
                                                        std::span<const net::Prefix> prefixes,
                                                        std::span<const rib::RouteChange> changes) {
  std::vector<PeerState*> now;
  for (PeerState* p : members) {
    if (p->out->advertisement_interval_s() > 0 && Sending(*p) && p->pacing.running) {
      for (const auto& prefix : prefixes) p->pacing.pending.insert(prefix);
      for (const auto& c : changes) p->pacing.pending.insert(c.prefix);
    } else {
      now.push_back(p);
    }
  }
  return now;
}

void Advertiser::StartIntervals(std::span<PeerState* const> sent) {
  for (PeerState* p : sent) {
    if (const uint32_t mrai = p->out->advertisement_interval_s(); mrai > 0 && Sending(*p)) StartInterval(*p, mrai);
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
  p->config_key = ConfigKey(config);
  p->config = std::move(config);
  if (changed && Sending(*p)) AdvertisePaced(*p, Everything());
  return changed;
}

void Advertiser::LocalCapacityChanged() {
  Flush();
  AdvertisePacedToAll(Everything());
}

std::optional<wire::PathAttributes> Advertiser::ExportAttributes(rib::PeerIndex to_index, const net::Prefix& prefix,
                                                                 std::span<const rib::Path> multipath) const {
  if (to_index >= peers_.size() || peers_[to_index].out == nullptr) return std::nullopt;
  return Export(peers_[to_index], to_index, prefix, multipath, nullptr);
}

std::optional<wire::PathAttributes> Advertiser::Export(const PeerState& state, std::optional<rib::PeerIndex> to_index,
                                                       const net::Prefix& prefix, std::span<const rib::Path> multipath,
                                                       bool* self) const {
  if (multipath.empty()) return std::nullopt;
  const Outbound& to = *state.out;
  const net::Family family = prefix.family();
  const rib::Path& best = multipath.front();
  const rib::Rib& rib = core_.rib();
  // 1. Protocol rules.
  if (to_index && best.peer == *to_index) return std::nullopt;  // never back to where it came from
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
    if (self != nullptr) *self = true;
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
  if (!Sending(state)) return;
  PeerState* const one[] = {&state};
  AdvertiseTogether(one, changes);
}

void Advertiser::AdvertiseTogether(std::span<PeerState* const> members, std::span<const rib::RouteChange> changes) {
  // One pass per distinct export, made when its first member comes; members in index order.
  absl::flat_hash_map<std::string, std::unique_ptr<ExportPass>> passes;
  for (PeerState* member : members) {
    if (!Sending(*member)) continue;  // an earlier member's send may have ended a session
    auto [it, fresh] = passes.try_emplace(members.size() == 1 ? std::string()
                                          : shared_export_ ? ExportKey(*member)
                                                           : absl::StrCat(member - peers_.data()));
    if (fresh) {
      ++stats_.passes;
      it->second = std::make_unique<ExportPass>();
      ExportPass& pass = *it->second;
      const PeerState& rep = *member;
      pass.rep_local = rep.out->LocalAddress();
      for (int f = 0; f < net::kFamilyCount; ++f) {
        // A family this group gets nothing of (export rejects everything, RFC 8212's default
        // toward an eBGP neighbor without policy, or a family not negotiated): none at once,
        // without the memo's comparisons; a batch with nothing to withdraw either is not walked.
        pass.none[f] = rep.config.chains[f].rejects_everything() || !rep.out->family_negotiated(static_cast<net::Family>(f));
        pass.none_at_all &= pass.none[f];
      }
      pass.new_ref.resize(changes.size());
      pass.old_ref.resize(changes.size());
      pass.step.assign(changes.size(), ExportPass::Step::kNone);
      if (!pass.none_at_all) {
        // What goes out depends only on the family and the multipath set's paths (their peers
        // and interned attributes), and on the prefix when an export policy tests it. A batch's
        // prefixes share a handful of sets: each distinct one is exported and interned once.
        bool per_prefix = false;
        for (const PolicyChain& c : rep.config.chains) per_prefix |= c.depends_on_prefix;
        absl::flat_hash_map<std::string, rib::AttrRef> exports;
        std::string key;
        // One-entry memos in front of the map: neighbouring prefixes usually share their sets.
        struct Memo {
          const rib::PathSet* set = nullptr;
          net::Family family = net::Family::kIpv4Unicast;
          rib::AttrRef ref;
        };
        Memo old_memo, new_memo;
        auto intern = [&](const net::Prefix& prefix, const rib::PathSet& set) -> rib::AttrRef {
          bool self = false;
          auto exported = Export(rep, std::nullopt, prefix, set, &self);
          if (!exported) return {};
          rib::AttrRef ref = core_.store().Intern(*std::move(exported));
          if (self) pass.self.insert(ref.get());
          return ref;
        };
        auto export_of = [&](const net::Prefix& prefix, const rib::PathSet& set, Memo& m) -> rib::AttrRef {
          const net::Family family = prefix.family();
          if (set.empty() || pass.none[static_cast<int>(family)]) return {};
          if (per_prefix) return intern(prefix, set);
          if (m.set != nullptr && m.family == family && *m.set == set) return m.ref;
          key.assign(1, static_cast<char>(family));
          for (const rib::Path& p : set) {
            const rib::InternedAttributes* a = p.attrs.get();
            key.append(reinterpret_cast<const char*>(&p.peer), sizeof p.peer);
            key.append(reinterpret_cast<const char*>(&a), sizeof a);
          }
          auto [e, fresh_set] = exports.try_emplace(key);
          if (fresh_set) e->second = intern(prefix, set);
          m = Memo{&set, family, e->second};
          return e->second;
        };
        for (size_t i = 0; i < changes.size(); ++i) {
          const rib::RouteChange& c = changes[i];
          pass.new_ref[i] = export_of(c.prefix, c.new_multipath, new_memo);
          if (!c.old_multipath.empty()) pass.old_ref[i] = export_of(c.prefix, c.old_multipath, old_memo);
          if (pass.new_ref[i]) {
            if (c.old_multipath.empty() || !(pass.new_ref[i] == pass.old_ref[i])) {
              pass.step[i] = ExportPass::Step::kAnnounce;
              pass.announce.Add(pass.new_ref[i], c.prefix);
            }
          } else if (pass.old_ref[i]) {
            pass.step[i] = ExportPass::Step::kWithdraw;
            pass.withdraw[static_cast<int>(c.prefix.family())].push_back(net::Nlri{c.prefix, 0});
          }
        }
      }
    }
    AdvertiseMember(*member, changes, *it->second);
  }
}

void Advertiser::AdvertiseMember(PeerState& state, std::span<const rib::RouteChange> changes, ExportPass& pass) {
  using Step = ExportPass::Step;
  Outbound& to = *state.out;
  const rib::PeerIndex index = static_cast<rib::PeerIndex>(&state - peers_.data());
  auto& out = state.adj_out;
  if (pass.none_at_all && out.empty()) return to.Advertised(0);
  ++stats_.members;
  BandwidthExport& lbx = state.lb;
  const absl::Time now = Now();
  // The group's exports as this member's: the same, but for next-hop-self its own address.
  const auto local = to.LocalAddress();
  const bool rewrite = local != pass.rep_local;
  // References into `mine` stay valid: node_hash_map.
  absl::node_hash_map<const rib::InternedAttributes*, rib::AttrRef> mine;
  absl::flat_hash_map<const rib::InternedAttributes*, const rib::InternedAttributes*> origin;
  bool collided = false;  // two of the group's exports are one of this member's
  // Two one-entry memos: the loop asks for a change's new and old export in turn.
  struct Memo {
    const rib::InternedAttributes* group = nullptr;
    const rib::AttrRef* mine = nullptr;
  };
  Memo memo[2];
  auto member_ref = [&](const rib::AttrRef& g, int which = 0) -> const rib::AttrRef& {
    if (!g || !rewrite) return g;
    Memo& m = memo[which];
    if (g.get() == m.group) return *m.mine;
    auto [it, fresh] = mine.try_emplace(g.get());
    if (fresh) {
      if (pass.self.contains(g.get())) {
        wire::PathAttributes a = g->attrs;
        if (a.mp_reach) {
          a.mp_reach->next_hop = *local;
        } else {
          a.next_hop = *local;
        }
        it->second = core_.store().Intern(std::move(a));
      } else {
        it->second = g;
      }
      auto [o, first] = origin.try_emplace(it->second.get(), g.get());
      collided |= !first && o->second != g.get();
    }
    m = Memo{g.get(), &it->second};
    return it->second;
  };
  // This member's own announcements and withdrawals, kept from the first change where it is
  // not in step with the group (until then they are the group's).
  bool own = false;
  AnnouncementGroups announce;
  std::array<std::vector<net::Nlri>, net::kFamilyCount> withdraw;
  auto record = [&](Step step, size_t i) {
    const net::Prefix& prefix = changes[i].prefix;
    if (step == Step::kAnnounce) announce.Add(member_ref(pass.new_ref[i]), prefix);
    if (step == Step::kWithdraw) withdraw[static_cast<int>(prefix.family())].push_back(net::Nlri{prefix, 0});
  };
  auto go_own = [&](size_t upto) {
    own = true;
    for (size_t j = 0; j < upto; ++j) record(pass.step[j], j);
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
  for (size_t i = 0; i < changes.size(); ++i) {
    const rib::RouteChange& c = changes[i];
    // Split horizon: never back to where the best path came from.
    const bool back_new = !c.new_multipath.empty() && c.new_multipath.front().peer == index;
    const bool back_old = !c.old_multipath.empty() && c.old_multipath.front().peer == index;
    Step step = Step::kNone;
    // What this peer should get did not move (another peer's path joined the multipath
    // set, say): the Adj-RIB-Out is left as it is, not even looked up.
    if (!c.old_multipath.empty() && back_new == back_old &&
        (back_new || pass.new_ref[i] == pass.old_ref[i])) {
      if (!own && pass.step[i] != Step::kNone) go_own(i);
      continue;
    }
    const rib::AttrRef& ref = back_new ? kNoAttrs : member_ref(pass.new_ref[i]);
    if (!c.old_multipath.empty() && ref == (back_old ? kNoAttrs : member_ref(pass.old_ref[i], 1))) {
      step = Step::kNone;
    } else if (ref) {
      auto [cur, added] = out.TryEmplace(c.prefix);
      bool send = true;
      if (!added) {
        const rib::AttrRef& sent = out.attrs(*cur);
        if (sent == ref) {
          send = false;
        } else {
          // Only the bandwidth changed: re-advertisement damping decides (threshold, interval).
          const auto& old_lb = sent->link_bandwidth.chosen;  // interned: SelectedLinkBandwidth() of the set
          const auto& new_lb = ref->link_bandwidth.chosen;
          if (old_lb && new_lb && !(*old_lb == *new_lb) && only_lb_differs(sent, ref)) {
            const auto d = lbx.damping.Check(cur->readvertisement, old_lb->bits_per_second(),
                                             new_lb->bits_per_second(), now, state.config.link_bandwidth);
            if (d.verdict == rib::BandwidthReadvertisement::Verdict::kSuppress) {
              send = false;
            } else if (d.verdict == rib::BandwidthReadvertisement::Verdict::kDefer) {
              lbx.damping.Defer(cur->readvertisement, c.prefix);
              if (d.not_before < lbx.timer_at) {
                if (!lbx.timer) lbx.timer = clock_.NewTimer();
                lbx.timer_at = d.not_before;
                lbx.timer->Start(absl::ToChronoMilliseconds(d.not_before - now) + std::chrono::milliseconds(1),
                                 [this, index] { FlushDeferredBandwidth(index); });
              }
              send = false;
            } else {
              lbx.damping.Sent(out, *cur, now);
            }
          }
        }
      }
      if (send) {
        out.SetAttrs(*cur, ref);
        step = Step::kAnnounce;
      }
    } else if (out.Erase(c.prefix)) {
      step = Step::kWithdraw;
    }
    if (!own && (step != pass.step[i] || collided)) go_own(i);
    if (own) record(step, i);
  }
  if (!own && collided) go_own(changes.size());
  const wire::CodecContext ctx = to.EncodeContext();
  std::vector<wire::Bytes> messages;
  // In step with the group: its UPDATEs, with this member's next hop where it is ours.
  auto copy_group = [&]() -> bool {
    if (pass.packed) {
      ++stats_.reused;
    } else {
      pass.packed = true;
      AppendWithdrawals(pass.withdraw, ctx, pass.withdrawals);
      pass.announce.Pack(ctx, [&](const rib::AttrRef& ref, size_t prefixes,
                                  absl::StatusOr<std::vector<wire::Bytes>> packed) {
        pass.announcements.push_back({ref, prefixes, std::move(packed)});
      });
    }
    messages = pass.withdrawals;
    for (const auto& a : pass.announcements) {
      if (!a.messages.ok()) {
        AnnouncementGroups::CannotAdvertise(to, a.prefixes, a.messages.status());
        continue;
      }
      const bool patch = !(member_ref(a.ref) == a.ref);
      for (const wire::Bytes& m : *a.messages) {
        messages.push_back(m);
        if (patch && !wire::RewriteNextHop(messages.back(), *local).ok()) return false;
      }
    }
    return true;
  };
  if (own || !copy_group()) {
    if (!own) go_own(changes.size());
    messages.clear();
    AppendWithdrawals(withdraw, ctx, messages);
    announce.PackFor(to, messages);
  }
  if (!messages.empty()) to.SendUpdates(std::move(messages));
  to.Advertised(out.size());
}

void Advertiser::AdvertisePaced(PeerState& p, std::span<const rib::RouteChange> changes) {
  PeerState* const one[] = {&p};
  AdvertisePaced(one, changes);
}

void Advertiser::AdvertisePaced(std::span<PeerState* const> members, std::span<const rib::RouteChange> changes) {
  // Within its advertisement interval a neighbor collects the prefixes; the others get them
  // now, and their interval starts.
  const std::vector<PeerState*> now = SendNow(members, {}, changes);
  AdvertiseTogether(now, changes);
  StartIntervals(now);
}

void Advertiser::StartInterval(PeerState& p, uint32_t mrai) {
  if (!p.pacing.timer) p.pacing.timer = clock_.NewTimer();
  p.pacing.running = true;
  const rib::PeerIndex index = static_cast<rib::PeerIndex>(&p - peers_.data());
  p.pacing.timer->Start(std::chrono::seconds(mrai), [this, index] { FlushPaced(index); });
}

void Advertiser::AdvertisePacedInSlices(std::span<PeerState* const> members, std::span<const net::Prefix> prefixes) {
  const std::vector<PeerState*> now = SendNow(members, prefixes, {});
  // As AdvertisePaced, with each slice's current state taken and sent before the next: a
  // bandwidth change over the whole table would otherwise hold a change (~170 bytes) per
  // prefix at once.
  for (size_t i = 0; i < prefixes.size(); i += kAdvertiseSlice) {
    const auto slice = CurrentState(prefixes.subspan(i, std::min(kAdvertiseSlice, prefixes.size() - i)));
    AdvertiseTogether(now, slice);
  }
  StartIntervals(now);
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
  // The members of its group whose deferral ends at the same moment come along (their timers
  // are due now too): those with the same deferred prefixes get them in one export pass.
  const absl::Time at = p->lb.timer_at;
  std::vector<PeerState*> due = {p};
  if (shared_export_ && Sending(*p)) {
    const std::string key = ExportKey(*p);
    for (PeerState& q : peers_) {
      if (&q == p || !Sending(q) || q.lb.timer_at != at || !q.lb.timer || ExportKey(q) != key) continue;
      q.lb.timer->Stop();
      due.push_back(&q);
    }
  }
  std::vector<std::pair<std::vector<net::Prefix>, std::vector<PeerState*>>> by_prefixes;
  for (PeerState* q : due) {
    q->lb.timer_at = absl::InfiniteFuture();
    std::vector<net::Prefix> deferred = q->lb.damping.TakeDeferred(q->adj_out);
    if (deferred.empty() || !Sending(*q)) continue;
    auto same = std::find_if(by_prefixes.begin(), by_prefixes.end(), [&](const auto& b) { return b.first == deferred; });
    if (same == by_prefixes.end()) {
      by_prefixes.emplace_back(std::move(deferred), std::vector<PeerState*>{q});
    } else {
      same->second.push_back(q);
    }
  }
  for (auto& [prefixes, members] : by_prefixes) {
    std::sort(members.begin(), members.end());  // index order
    AdvertisePacedInSlices(members, prefixes);
  }
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
