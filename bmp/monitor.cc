#include "bmp/monitor.h"

#include <boost/asio/post.hpp>
#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_format.h"
#include "bmp/metrics.h"
#include "wire/update_packer.h"

namespace bagd::bmp {

namespace asio = boost::asio;

struct Monitor::Group {
  const wire::PathAttributes* attrs = nullptr;  // null: withdrawn
  net::Family family = net::Family::kIpv4Unicast;
  std::vector<net::Nlri> nlri;
  std::shared_ptr<const wire::PathAttributes> owned;  // what `attrs` points into, when a copy
};

struct Monitor::Feed {
  std::unique_ptr<Station> station;
  uint64_t epoch = 0;  // bumped when the station goes up or down: stale tasks do nothing
  bool syncing = false;
  bool slice_posted = false;
  // The RIB walk: the last prefix walked (nullopt: none yet); `walked` once it is done.
  std::optional<net::Prefix> cursor;
  bool walked = false;
  // Then the stored routes of neighbors with soft_reconfiguration_inbound (pre-policy).
  std::vector<std::pair<rib::PeerIndex, net::Nlri>> stored;
  size_t stored_pos = 0;
  bool stored_taken = false;
  // Between them, the Adj-RIB-Outs (RFC 8671 post-policy), neighbor by neighbor in index
  // order: the neighbor being walked and the last prefix sent of it.
  bool out_walked = true;
  std::optional<rib::PeerIndex> out_peer;
  std::optional<net::Prefix> out_cursor;
  std::unique_ptr<asio::steady_timer> stats_timer;
  std::chrono::microseconds longest_slice{0};
  uint64_t syncs_done = 0;
};

namespace {

// net/prefix_map.h's order: IPv4 first, each family in prefix order.
bool MapLess(const net::Prefix& a, const net::Prefix& b) {
  if (a.family() != b.family()) return a.family() < b.family();
  return a < b;
}

void Stamp(PerPeerHeader& h, absl::Time t) {
  const int64_t us = absl::ToUnixMicros(t);
  h.seconds = static_cast<uint32_t>(us / 1000000);
  h.microseconds = static_cast<uint32_t>(us % 1000000);
}

// The OPEN a Loc-RIB instance's Peer Up carries (RFC 9069 §5.1: fabricated, describing
// the instance): our AS and identifier, both families, 4-octet AS, and ADD-PATH both ways,
// since the multipath set goes out as one path per member with its own path identifier.
Bytes FabricatedOpen(uint32_t local_as, uint32_t router_id) {
  wire::OpenMessage open;
  open.my_as = local_as > 0xffff ? 23456 : static_cast<uint16_t>(local_as);
  open.hold_time = 0;
  open.bgp_id = router_id;
  open.capabilities.push_back(wire::MultiprotocolCap{1, 1});
  open.capabilities.push_back(wire::MultiprotocolCap{2, 1});
  open.capabilities.push_back(wire::FourOctetAsCap{local_as});
  wire::AddPathCap ap;
  ap.families = {{1, 1, wire::AddPathCap::kBoth}, {2, 1, wire::AddPathCap::kBoth}};
  open.capabilities.push_back(ap);
  auto bytes = wire::EncodeMessage(open, wire::CodecContext{});
  return bytes.ok() ? *std::move(bytes) : Bytes{};
}

}  // namespace

Monitor::Monitor(asio::io_context& io, const rib::Rib& rib, MonitorOptions options, BmpMetrics* metrics)
    : io_(io), rib_(rib), options_(std::move(options)), metrics_(metrics) {}

Monitor::~Monitor() { token_.reset(); }

bool Monitor::Covered(const Feed& f, const net::Prefix& p) {
  if (!f.syncing || f.walked) return true;
  return f.cursor && !MapLess(*f.cursor, p);
}

void Monitor::Recompute() {
  wants_ = Views{};
  for (const auto& f : feeds_) {
    const Views& v = f->station->config().views;
    wants_.pre_policy |= v.pre_policy;
    wants_.post_policy |= v.post_policy;
    wants_.loc_rib |= v.loc_rib;
    wants_.adj_rib_out_pre |= v.adj_rib_out_pre;
    wants_.adj_rib_out_post |= v.adj_rib_out_post;
  }
}

void Monitor::Configure(const std::vector<StationConfig>& stations) {
  std::erase_if(retired_, [](const auto& s) { return s->state() == Station::State::kStopped; });
  std::vector<std::unique_ptr<Feed>> kept;
  for (auto& f : feeds_) {
    const bool stays = std::find(stations.begin(), stations.end(), f->station->config()) != stations.end();
    if (stays) {
      kept.push_back(std::move(f));
      continue;
    }
    // Removed (or changed): told so, then closed once that is written. Its callbacks point
    // at the feed, which goes now.
    f->station->ClearCallbacks();
    f->station->Stop(EncodeTermination(TerminationReason::kPermanentAdminClose, "station removed from bagd's configuration"));
    retired_.push_back(std::move(f->station));
  }
  feeds_ = std::move(kept);
  for (const StationConfig& c : stations) {
    const bool have = std::any_of(feeds_.begin(), feeds_.end(), [&](const auto& f) { return f->station->config() == c; });
    if (have) continue;
    auto feed = std::make_unique<Feed>();
    Feed* raw = feed.get();
    Station::Callbacks cb;
    cb.up = [this, raw] { StationUp(*raw); };
    cb.down = [this, raw] { StationDown(*raw); };
    cb.drained = [this, raw] { ScheduleSlice(*raw); };
    feed->station = std::make_unique<Station>(io_, c, std::move(cb), metrics_);
    feeds_.push_back(std::move(feed));
    raw->station->Start();
  }
  Recompute();
}

void Monitor::Stop() {
  for (auto& f : feeds_) {
    f->epoch = ++epochs_;
    if (f->stats_timer) f->stats_timer->cancel();
    f->station->Stop(EncodeTermination(TerminationReason::kAdminClose, "bagd is stopping"));
  }
}

PerPeerHeader Monitor::Header(const PeerSession& s, uint8_t flags, absl::Time t) const {
  PerPeerHeader h;
  h.type = PeerType::kGlobal;
  h.flags = flags;
  h.address = s.address;
  h.as = s.as;
  h.bgp_id = s.bgp_id;
  Stamp(h, t);
  return h;
}

PerPeerHeader Monitor::LocRibHeader(absl::Time t) const {
  PerPeerHeader h;
  h.type = PeerType::kLocRib;
  h.as = options_.local_as;
  h.bgp_id = options_.router_id;
  Stamp(h, t);
  return h;
}

wire::CodecContext Monitor::PostContext(const PeerSession& s) const {
  wire::CodecContext ctx;
  ctx.four_octet_as = true;  // the RIB holds 4-octet AS paths; A stays clear
  ctx.extended_message = s.extended_message;
  ctx.add_path = s.add_path;  // as the Peer Up's received OPEN says
  return ctx;
}

wire::CodecContext Monitor::OutContext(const PeerSession& s) const {
  wire::CodecContext ctx;
  ctx.four_octet_as = true;  // the RIB and the Adj-RIB-Out hold 4-octet AS paths; A stays clear
  ctx.extended_message = s.extended_message;
  return ctx;
}

uint8_t Monitor::SessionFlags(const Views& v) {
  const bool in = v.pre_policy || v.post_policy || v.loc_rib;
  return !in && (v.adj_rib_out_pre || v.adj_rib_out_post) ? peer_flag::kAdjRibOut : 0;
}

wire::CodecContext Monitor::LocRibContext() const {
  wire::CodecContext ctx;
  ctx.four_octet_as = true;
  ctx.add_path = {true, true};
  return ctx;
}

Bytes Monitor::PeerUpMessage(const PeerSession& s, uint8_t flags) const {
  return EncodePeerUp(Header(s, flags, s.up_since), s.local_address, s.local_port, s.remote_port, s.sent_open,
                      s.received_open);
}

Bytes Monitor::LocRibPeerUp() const {
  const Bytes open = FabricatedOpen(options_.local_as, options_.router_id);
  const InfoTlv name{info_type::kTableName, "global"};  // RFC 9069 §5.1: the default instance
  return EncodePeerUp(LocRibHeader(options_.now()), std::nullopt, 0, 0, open, open, std::span(&name, 1));
}

size_t Monitor::AppendGroups(Bytes& out, const PerPeerHeader& h, const wire::CodecContext& ctx,
                             const std::vector<Group>& groups) const {
  size_t n = 0;
  for (const Group& g : groups) {
    if (g.nlri.empty()) continue;
    auto updates = g.attrs ? wire::PackAnnouncements(*g.attrs, g.family, g.nlri, ctx)
                           : wire::PackWithdrawals(g.family, g.nlri, ctx);
    if (!updates.ok()) continue;  // cannot happen for what the RIB holds; never stops routing
    for (const Bytes& u : *updates) {
      AppendRouteMonitoring(out, h, u);
      ++n;
    }
  }
  return n;
}

void Monitor::SendTo(Feed& f, const Bytes& messages, size_t count) {
  if (count == 0 || !f.station->up()) return;
  if (f.station->Send(messages)) f.station->CountMessages(count);
}

// --- Stations ---------------------------------------------------------------------------

void Monitor::StationUp(Feed& f) {
  f.epoch = ++epochs_;  // unique across feeds: a task for a removed feed never matches a new one
  if (options_.log) {
    options_.log(false, absl::StrFormat("bmp station %s: connected (connection %d): Initiation, %d Peer Ups, then the tables",
                                        f.station->name(), f.station->counters().connects, peers_.size()));
  }
  const Views& v = f.station->config().views;
  Bytes out = EncodeInitiation(options_.sys_name, options_.sys_descr);
  size_t n = 1;
  if (v.loc_rib) {
    const Bytes up = LocRibPeerUp();
    out.insert(out.end(), up.begin(), up.end());
    ++n;
  }
  for (const auto& [index, s] : peers_) {
    const Bytes up = PeerUpMessage(s, SessionFlags(v));
    out.insert(out.end(), up.begin(), up.end());
    ++n;
  }
  SendTo(f, out, n);
  f.syncing = true;
  f.walked = !(v.post_policy || v.loc_rib || v.adj_rib_out_pre);
  f.out_walked = !v.adj_rib_out_post;
  f.out_peer.reset();
  f.out_cursor.reset();
  f.cursor.reset();
  f.stored.clear();
  f.stored_pos = 0;
  f.stored_taken = !v.pre_policy;
  f.slice_posted = false;
  ScheduleSlice(f);
  ScheduleStatistics(f);
}

void Monitor::StationDown(Feed& f) {
  f.epoch = ++epochs_;  // unique across feeds: a task for a removed feed never matches a new one
  if (options_.log) {
    options_.log(true, absl::StrFormat("bmp station %s: lost%s: %s; reconnecting with backoff, then a full re-sync",
                                       f.station->name(), f.syncing ? " during the initial tables" : "",
                                       f.station->last_error()));
  }
  f.syncing = false;
  f.slice_posted = false;
  f.stored.clear();
  f.stored.shrink_to_fit();
  if (f.stats_timer) f.stats_timer->cancel();
}

void Monitor::ScheduleSlice(Feed& f) {
  if (!f.syncing || f.slice_posted) return;
  f.slice_posted = true;
  asio::post(io_, [this, fp = &f, alive = std::weak_ptr<char>(token_), epoch = f.epoch] {
    if (alive.expired()) return;
    // The feed may be gone (a reload removed the station): look it up, never trust fp.
    for (auto& f : feeds_) {
      if (f.get() != fp) continue;
      if (f->epoch != epoch) return;
      f->slice_posted = false;
      RunSlice(*f);
      return;
    }
  });
}

void Monitor::RunSlice(Feed& f) {
  const auto t0 = std::chrono::steady_clock::now();
  RunSliceBody(f);
  const auto took = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0);
  f.longest_slice = std::max(f.longest_slice, took);
}

void Monitor::RunSliceBody(Feed& f) {
  if (!f.syncing || !f.station->up()) return;
  if (!f.station->below_low_water()) {
    f.station->WantDrained();  // resumes from the write completion that drains it
    return;
  }
  const Views& v = f.station->config().views;
  const auto start = std::chrono::steady_clock::now();
  const absl::Time now = options_.now();
  if (!f.walked) {
    // Group by (neighbor, attribute set, family) so a slice's prefixes pack together.
    struct Key {
      rib::PeerIndex peer;
      const rib::InternedAttributes* attrs;
      net::Family family;
      bool operator==(const Key&) const = default;
    };
    struct KeyHash {
      size_t operator()(const Key& k) const {
        return absl::HashOf(k.peer, reinterpret_cast<uintptr_t>(k.attrs), static_cast<int>(k.family));
      }
    };
    absl::flat_hash_map<Key, size_t, KeyHash> post_index, pre_out_index;
    absl::flat_hash_map<std::pair<const wire::PathAttributes*, int>, size_t> loc_index;
    AppliedCopies copies;
    std::vector<Group> post_groups, loc_groups, pre_out_groups;
    std::vector<rib::PeerIndex> post_peer, pre_out_peer;
    size_t prefixes = 0;
    bool more = false;
    Bytes out;
    size_t n = 0;
    // A slice stops at `slice_prefixes`, at the time budget, or when what it encoded would
    // take the buffer past half its bound (a slice never overflows a station by itself).
    const size_t byte_room = f.station->config().max_buffer_bytes / 2;
    auto encode = [&] {
      for (size_t i = 0; i < post_groups.size(); ++i) {
        const PeerSession& s = peers_.at(post_peer[i]);
        std::vector<Group> one{std::move(post_groups[i])};
        n += AppendGroups(out, Header(s, peer_flag::kPostPolicy, now), PostContext(s), one);
      }
      n += AppendGroups(out, LocRibHeader(now), LocRibContext(), loc_groups);
      for (size_t i = 0; i < pre_out_groups.size(); ++i) {
        const PeerSession& s = peers_.at(pre_out_peer[i]);
        std::vector<Group> one{std::move(pre_out_groups[i])};
        n += AppendGroups(out, Header(s, peer_flag::kAdjRibOut, now), OutContext(s), one);
      }
      post_groups.clear();
      post_peer.clear();
      loc_groups.clear();
      copies.clear();
      pre_out_groups.clear();
      pre_out_peer.clear();
      post_index.clear();
      loc_index.clear();
      pre_out_index.clear();
    };
    rib_.ForEachAfter(f.cursor, [&](const net::Prefix& prefix, const rib::Destination& d) {
      if (prefixes > 0 && prefixes % 64 == 0) {
        encode();
        if (f.station->buffered() + out.size() >= byte_room ||
            std::chrono::steady_clock::now() - start > options_.slice_budget) {
          more = true;
          return false;
        }
      }
      if (prefixes >= options_.slice_prefixes) {
        more = true;
        return false;
      }
      ++prefixes;
      f.cursor = prefix;
      const net::Family fam = prefix.family();
      if (v.post_policy) {
        for (const rib::Path& p : d.paths()) {
          if (!peers_.contains(p.peer)) continue;
          const Key k{p.peer, p.attrs.get(), fam};
          auto [it, added] = post_index.try_emplace(k, post_groups.size());
          if (added) {
            post_groups.push_back(Group{&p.attrs->attrs, fam, {}, nullptr});
            post_peer.push_back(p.peer);
          }
          post_groups[it->second].nlri.push_back(net::Nlri{prefix, p.path_id});
        }
      }
      if (v.loc_rib) {
        d.ForEachMultipath([&](const rib::Path& p) { AddLocRibMember(prefix, p, copies, loc_index, loc_groups); });
      }
      if (v.adj_rib_out_pre && d.best() >= 0 && options_.export_candidate) {
        // RFC 8671 pre-policy: the best path as the Loc-RIB has it, to each neighbor it is
        // eligible for before export policy.
        const rib::Path& best = d.paths()[d.best()];
        for (const auto& [index, s] : peers_) {
          if (!options_.export_candidate(index, prefix, best)) continue;
          const Key k{index, best.attrs.get(), fam};
          auto [it, added] = pre_out_index.try_emplace(k, pre_out_groups.size());
          if (added) {
            pre_out_groups.push_back(Group{&best.attrs->attrs, fam, {}, nullptr});
            pre_out_peer.push_back(index);
          }
          pre_out_groups[it->second].nlri.push_back(net::Nlri{prefix, 0});
        }
      }
      return true;
    });
    encode();
    SendTo(f, out, n);
    if (!more) {
      f.walked = true;
    }
  } else if (!f.out_walked) {
    Bytes out;
    const size_t n = WalkAdjRibOut(f, out, now);
    SendTo(f, out, n);
  } else if (!f.stored_taken || f.stored_pos < f.stored.size()) {
    if (!f.stored_taken) {
      // Pre-policy: the stored routes of the neighbors that keep them (sorted once; each is
      // read again from the store when sent, so a route changed since goes out as it is now).
      f.stored_taken = true;
      if (options_.stored) {
        for (const auto& [index, s] : peers_) {
          const rib::AdjRibIn* in = options_.stored(index);
          if (in == nullptr) continue;
          for (int fi = 0; fi < net::kFamilyCount; ++fi) {
            in->ForEachIn(static_cast<net::Family>(fi), [&](const net::Nlri& nlri, const rib::AttrRef&) {
              f.stored.emplace_back(index, nlri);
            });
          }
        }
        std::sort(f.stored.begin(), f.stored.end(), [](const auto& a, const auto& b) {
          if (a.first != b.first) return a.first < b.first;
          if (a.second.prefix != b.second.prefix) return MapLess(a.second.prefix, b.second.prefix);
          return a.second.path_id < b.second.path_id;
        });
      }
    }
    Bytes out;
    size_t n = 0;
    const size_t end = std::min(f.stored.size(), f.stored_pos + options_.slice_prefixes);
    while (f.stored_pos < end) {
      // One neighbor's run, grouped by attribute set.
      const rib::PeerIndex peer = f.stored[f.stored_pos].first;
      auto sit = peers_.find(peer);
      const rib::AdjRibIn* in = options_.stored ? options_.stored(peer) : nullptr;
      absl::flat_hash_map<std::pair<const rib::InternedAttributes*, int>, size_t> index;
      std::vector<Group> groups;
      for (; f.stored_pos < end && f.stored[f.stored_pos].first == peer; ++f.stored_pos) {
        if (sit == peers_.end() || in == nullptr) continue;
        const net::Nlri& nlri = f.stored[f.stored_pos].second;
        const rib::AttrRef* a = in->Find(nlri);
        if (a == nullptr) continue;  // withdrawn since: the raw withdrawal went out live
        const net::Family fam = nlri.prefix.family();
        auto [it, added] = index.try_emplace({a->get(), static_cast<int>(fam)}, groups.size());
        if (added) groups.push_back(Group{&(*a)->attrs, fam, {}, nullptr});
        groups[it->second].nlri.push_back(nlri);
      }
      if (sit == peers_.end() || groups.empty()) continue;
      const PeerSession& s = sit->second;
      wire::CodecContext ctx = PostContext(s);
      ctx.four_octet_as = s.four_octet_as;  // as the neighbor sends them
      n += AppendGroups(out, Header(s, s.four_octet_as ? 0 : peer_flag::kTwoOctetAs, now), ctx, groups);
    }
    SendTo(f, out, n);
  }
  if (f.walked && f.out_walked && f.stored_taken && f.stored_pos >= f.stored.size()) {
    FinishSync(f);
    return;
  }
  if (metrics_) metrics_->Buffered(f.station->name(), f.station->buffered());
  ScheduleSlice(f);
}

void Monitor::FinishSync(Feed& f) {
  f.syncing = false;
  ++f.syncs_done;
  if (options_.log) {
    options_.log(false, absl::StrFormat("bmp station %s: tables sent (%d messages so far, longest task %.1f ms)",
                                        f.station->name(), f.station->counters().messages,
                                        static_cast<double>(f.longest_slice.count()) / 1000.0));
  }
  f.stored.clear();
  f.stored.shrink_to_fit();
  // RFC 7854 §5: End-of-RIB after the initial table of each peer and family.
  const Views& v = f.station->config().views;
  const absl::Time now = options_.now();
  Bytes out;
  size_t n = 0;
  for (int fi = 0; fi < net::kFamilyCount; ++fi) {
    const auto fam = static_cast<net::Family>(fi);
    const wire::UpdateMessage eor = wire::UpdateMessage::MakeEndOfRib(fam);
    if (v.post_policy) {
      for (const auto& [index, s] : peers_) {
        if (!s.families[fi]) continue;
        auto bytes = wire::EncodeMessage(eor, PostContext(s));
        if (!bytes.ok()) continue;
        AppendRouteMonitoring(out, Header(s, peer_flag::kPostPolicy, now), *bytes);
        ++n;
      }
    }
    for (const uint8_t flags : {peer_flag::kAdjRibOut, uint8_t(peer_flag::kAdjRibOut | peer_flag::kPostPolicy)}) {
      if (!(flags & peer_flag::kPostPolicy ? v.adj_rib_out_post : v.adj_rib_out_pre)) continue;
      for (const auto& [index, s] : peers_) {
        if (!s.families[fi]) continue;
        auto bytes = wire::EncodeMessage(eor, OutContext(s));
        if (!bytes.ok()) continue;
        AppendRouteMonitoring(out, Header(s, flags, now), *bytes);
        ++n;
      }
    }
    if (v.loc_rib) {
      auto bytes = wire::EncodeMessage(eor, LocRibContext());
      if (!bytes.ok()) continue;
      AppendRouteMonitoring(out, LocRibHeader(now), *bytes);
      ++n;
    }
  }
  SendTo(f, out, n);
}

std::shared_ptr<const wire::PathAttributes> Monitor::LocRibAttributes(const net::Prefix& prefix, const rib::Path& p,
                                                                       AppliedCopies& copies) const {
  std::optional<double> bps = options_.applied_bps ? options_.applied_bps(prefix, p) : std::nullopt;
  // Not owned: the RIB's interned set outlives the call (an aliasing pointer, no count).
  if (!bps) return std::shared_ptr<const wire::PathAttributes>(std::shared_ptr<void>(), &p.attrs->attrs);
  const wire::ExtendedCommunity ec = AppliedBandwidthCommunity(options_.local_as, *bps);
  auto [it, added] = copies.try_emplace(std::pair(p.attrs.get(), ec.raw));
  if (added) {
    auto a = std::make_shared<wire::PathAttributes>(p.attrs->attrs);
    a->extended_communities.push_back(ec);
    it->second = std::move(a);
  }
  return it->second;
}

void Monitor::AddLocRibMember(const net::Prefix& prefix, const rib::Path& p, AppliedCopies& copies,
                              absl::flat_hash_map<std::pair<const wire::PathAttributes*, int>, size_t>& index,
                              std::vector<Group>& groups) const {
  const net::Family fam = prefix.family();
  std::shared_ptr<const wire::PathAttributes> a = LocRibAttributes(prefix, p, copies);
  auto [it, added] = index.try_emplace(std::pair(a.get(), static_cast<int>(fam)), groups.size());
  if (added) groups.push_back(Group{a.get(), fam, {}, a});
  groups[it->second].nlri.push_back(net::Nlri{prefix, LocRibPathId(p)});
}

void Monitor::AppliedChanged(std::span<const net::Prefix> prefixes) {
  if (!wants_.loc_rib || prefixes.empty()) return;
  bool any = false;
  for (const auto& f : feeds_) any |= f->station->config().views.loc_rib && f->station->up();
  if (!any) return;
  // Every member of each prefix as it is now, with what the weights stage applies to it: a
  // member that stayed is sent again when its share moved with the set.
  AppliedCopies copies;
  absl::flat_hash_map<std::pair<const wire::PathAttributes*, int>, size_t> index;
  std::vector<Group> groups;
  for (const net::Prefix& prefix : prefixes) {
    const rib::Destination* d = rib_.Find(prefix);
    if (d == nullptr || d->best() < 0) continue;  // gone: withdrawn at the change
    d->ForEachMultipath([&](const rib::Path& p) { AddLocRibMember(prefix, p, copies, index, groups); });
  }
  Distribute(&Views::loc_rib, LocRibHeader(options_.now()), LocRibContext(), groups);
}

size_t Monitor::WalkAdjRibOut(Feed& f, Bytes& out, absl::Time now) {
  size_t n = 0;
  size_t prefixes = 0;
  auto it = f.out_peer ? peers_.lower_bound(*f.out_peer) : peers_.begin();
  if (it != peers_.end() && f.out_peer && it->first != *f.out_peer) f.out_cursor.reset();  // that neighbor went down
  while (it != peers_.end()) {
    const PeerSession& s = it->second;
    // Read afresh each slice: the neighbor's table may have gone since the last one.
    const rib::AdjRibOut* adj = options_.adj_rib_out ? options_.adj_rib_out(it->first) : nullptr;
    bool more = false;
    if (adj != nullptr) {
      absl::flat_hash_map<std::pair<const rib::InternedAttributes*, int>, size_t> index_of;
      std::vector<Group> groups;
      adj->ForEachAfter(f.out_cursor, [&](const net::Prefix& prefix, const rib::AdjRibOut::Entry& e) {
        if (prefixes >= options_.slice_prefixes) {
          more = true;
          return false;
        }
        f.out_cursor = prefix;
        const rib::AttrRef& a = adj->attrs(e);
        if (!a) return true;  // not given attributes yet: not sent
        ++prefixes;
        const net::Family fam = prefix.family();
        auto [g, added] = index_of.try_emplace({a.get(), static_cast<int>(fam)}, groups.size());
        if (added) groups.push_back(Group{&a->attrs, fam, {}, nullptr});
        groups[g->second].nlri.push_back(net::Nlri{prefix, 0});
        return true;
      });
      n += AppendGroups(out, Header(s, peer_flag::kAdjRibOut | peer_flag::kPostPolicy, now), OutContext(s), groups);
    }
    if (more) {
      f.out_peer = it->first;
      return n;
    }
    ++it;
    f.out_cursor.reset();
    if (it != peers_.end()) f.out_peer = it->first;
  }
  f.out_walked = true;
  return n;
}

// --- Sessions ---------------------------------------------------------------------------

void Monitor::PeerUp(PeerSession session) {
  const rib::PeerIndex index = session.index;
  duplicate_withdraws_[index] = 0;
  auto& s = peers_[index] = std::move(session);
  for (auto& f : feeds_) SendTo(*f, PeerUpMessage(s, SessionFlags(f->station->config().views)), 1);
}

void Monitor::PeerDown(rib::PeerIndex index, const bmp::PeerDown& down) {
  auto it = peers_.find(index);
  if (it == peers_.end()) return;
  auto message = [&](uint8_t flags) {
    const PerPeerHeader h = Header(it->second, flags, options_.now());
    switch (down.reason) {
      case PeerDownReason::kLocalNotification:
      case PeerDownReason::kRemoteNotification:
        return EncodePeerDown(h, down.reason, down.notification);
      case PeerDownReason::kLocalNoNotification:
        return EncodePeerDownFsmEvent(h, down.fsm_event);
      default:
        return EncodePeerDown(h, down.reason);
    }
  };
  for (auto& f : feeds_) SendTo(*f, message(SessionFlags(f->station->config().views)), 1);
  peers_.erase(it);
  duplicate_withdraws_.erase(index);
}

void Monitor::PrePolicyUpdate(rib::PeerIndex index, ByteSpan update) {
  if (!wants_.pre_policy) return;
  auto it = peers_.find(index);
  if (it == peers_.end()) return;
  const PeerSession& s = it->second;
  Bytes out;
  AppendRouteMonitoring(out, Header(s, s.four_octet_as ? 0 : peer_flag::kTwoOctetAs, options_.now()), update);
  for (auto& f : feeds_) {
    if (f->station->config().views.pre_policy) SendTo(*f, out, 1);
  }
}

void Monitor::BeforeIngest(rib::PeerIndex index, const wire::UpdateMessage& u) {
  if (feeds_.empty()) return;
  auto it = duplicate_withdraws_.find(index);
  if (it == duplicate_withdraws_.end()) return;
  auto count = [&](std::span<const net::Nlri> nlri) {
    for (const net::Nlri& n : nlri) {
      const rib::Destination* d = rib_.Find(n.prefix);
      bool have = false;
      if (d != nullptr) {
        for (const rib::Path& p : d->paths()) have |= p.peer == index && p.path_id == n.path_id;
      }
      if (!have) ++it->second;
    }
  };
  count(u.withdrawn);
  if (u.attrs.mp_unreach) count(u.attrs.mp_unreach->withdrawn);
}

void Monitor::PostPolicyUpdate(rib::PeerIndex index, const wire::UpdateMessage& u) {
  if (!wants_.post_policy) return;
  auto sit = peers_.find(index);
  if (sit == peers_.end()) return;
  const PeerSession& s = sit->second;
  // The UPDATE's prefixes as the RIB holds them from this neighbor now: an announced path
  // that import policy (or loop detection, next-hop checks) kept out is withdrawn here.
  std::vector<Group> groups;
  absl::flat_hash_map<std::pair<const rib::InternedAttributes*, int>, size_t> index_of;
  Group withdrawn[net::kFamilyCount];
  for (int fi = 0; fi < net::kFamilyCount; ++fi) withdrawn[fi].family = static_cast<net::Family>(fi);
  auto withdraw = [&](const net::Nlri& n) { withdrawn[static_cast<int>(n.prefix.family())].nlri.push_back(n); };
  auto look = [&](const net::Nlri& n) {
    const rib::Destination* d = rib_.Find(n.prefix);
    if (d != nullptr) {
      for (const rib::Path& p : d->paths()) {
        if (p.peer != index || p.path_id != n.path_id) continue;
        const net::Family fam = n.prefix.family();
        auto [it, added] = index_of.try_emplace({p.attrs.get(), static_cast<int>(fam)}, groups.size());
        if (added) groups.push_back(Group{&p.attrs->attrs, fam, {}, nullptr});
        groups[it->second].nlri.push_back(n);
        return;
      }
    }
    withdraw(n);
  };
  for (const net::Nlri& n : u.withdrawn) withdraw(n);
  if (u.attrs.mp_unreach) for (const net::Nlri& n : u.attrs.mp_unreach->withdrawn) withdraw(n);
  for (const net::Nlri& n : u.nlri) look(n);
  if (u.attrs.mp_reach) for (const net::Nlri& n : u.attrs.mp_reach->nlri) look(n);
  for (auto& w : withdrawn) groups.push_back(std::move(w));

  Distribute(&Views::post_policy, Header(s, peer_flag::kPostPolicy, options_.now()), PostContext(s), groups);
}

void Monitor::Distribute(bool Views::*view, const PerPeerHeader& h, const wire::CodecContext& ctx,
                         const std::vector<Group>& groups) {
  Bytes all;
  size_t all_n = 0;
  bool built = false;
  for (auto& f : feeds_) {
    if (!(f->station->config().views.*view) || !f->station->up()) continue;
    if (!f->syncing || f->walked) {
      if (!built) {
        all_n = AppendGroups(all, h, ctx, groups);
        built = true;
      }
      SendTo(*f, all, all_n);
      continue;
    }
    // Mid-walk: only what the walk has passed; the rest is read when it gets there.
    std::vector<Group> part = groups;
    for (Group& g : part) std::erase_if(g.nlri, [&](const net::Nlri& n) { return !Covered(*f, n.prefix); });
    Bytes out;
    const size_t n = AppendGroups(out, h, ctx, part);
    SendTo(*f, out, n);
  }
}

void Monitor::AdjRibOutUpdate(rib::PeerIndex index, ByteSpan update) {
  if (!wants_.adj_rib_out_post) return;
  auto it = peers_.find(index);
  if (it == peers_.end()) return;
  const PeerSession& s = it->second;
  // As sent: the neighbor's encoding (2-octet AS paths on a session without RFC 6793: A).
  uint8_t flags = peer_flag::kAdjRibOut | peer_flag::kPostPolicy;
  if (!s.four_octet_as) flags |= peer_flag::kTwoOctetAs;
  Bytes out;
  AppendRouteMonitoring(out, Header(s, flags, options_.now()), update);
  // Sent at once even while a station walks the tables: the walk reads each Adj-RIB-Out as
  // it is when it gets there, never older than what went out live before.
  for (auto& f : feeds_) {
    if (f->station->config().views.adj_rib_out_post) SendTo(*f, out, 1);
  }
}

void Monitor::PreOutChanges(std::span<const rib::RouteChange> changes) {
  if (!options_.export_candidate) return;
  const absl::Time now = options_.now();
  for (const auto& [index, s] : peers_) {
    // Per neighbor: the best path if it is eligible now, a withdrawal if it was and is not.
    std::vector<Group> groups;
    absl::flat_hash_map<std::pair<const rib::InternedAttributes*, int>, size_t> index_of;
    Group withdrawn[net::kFamilyCount];
    for (int fi = 0; fi < net::kFamilyCount; ++fi) withdrawn[fi].family = static_cast<net::Family>(fi);
    for (const rib::RouteChange& c : changes) {
      const net::Family fam = c.prefix.family();
      const rib::Path* now_best = c.new_multipath.empty() ? nullptr : &c.new_multipath.front();
      const rib::Path* was_best = c.old_multipath.empty() ? nullptr : &c.old_multipath.front();
      const bool now_in = now_best != nullptr && options_.export_candidate(index, c.prefix, *now_best);
      const bool was_in = was_best != nullptr && options_.export_candidate(index, c.prefix, *was_best);
      if (now_in) {
        if (was_in && was_best->attrs.get() == now_best->attrs.get()) continue;  // the same for this neighbor
        auto [it, added] = index_of.try_emplace({now_best->attrs.get(), static_cast<int>(fam)}, groups.size());
        if (added) groups.push_back(Group{&now_best->attrs->attrs, fam, {}, nullptr});
        groups[it->second].nlri.push_back(net::Nlri{c.prefix, 0});
      } else if (was_in) {
        withdrawn[static_cast<int>(fam)].nlri.push_back(net::Nlri{c.prefix, 0});
      }
    }
    for (auto& w : withdrawn) groups.push_back(std::move(w));
    bool any = false;
    for (const Group& g : groups) any |= !g.nlri.empty();
    if (any) Distribute(&Views::adj_rib_out_pre, Header(s, peer_flag::kAdjRibOut, now), OutContext(s), groups);
  }
}

void Monitor::OnRouteChanges(std::span<const rib::RouteChange> changes) {
  if (changes.empty()) return;
  if (wants_.adj_rib_out_pre) {
    bool up = false;
    for (const auto& f : feeds_) up |= f->station->config().views.adj_rib_out_pre && f->station->up();
    if (up) PreOutChanges(changes);
  }
  if (!wants_.loc_rib) return;
  bool any = false;
  for (const auto& f : feeds_) any |= f->station->config().views.loc_rib && f->station->up();
  if (!any) return;
  // Each member of the new multipath set, announced with its own path identifier (ADD-PATH in
  // the instance's fabricated OPEN); members that left are withdrawn. Unchanged members
  // (same neighbor, path id and attribute set) are not sent again.
  std::vector<Group> groups;
  absl::flat_hash_map<std::pair<const rib::InternedAttributes*, int>, size_t> index_of;
  Group withdrawn[net::kFamilyCount];
  for (int fi = 0; fi < net::kFamilyCount; ++fi) withdrawn[fi].family = static_cast<net::Family>(fi);
  // With the applied bandwidth, the members are announced once the weights stage has weighed
  // them (AppliedChanged, after its batch); only the withdrawals go now.
  const bool deferred = static_cast<bool>(options_.applied_bps);
  for (const rib::RouteChange& c : changes) {
    const net::Family fam = c.prefix.family();
    for (const rib::Path& p : c.new_multipath) {
      if (deferred) break;
      if (std::find(c.old_multipath.begin(), c.old_multipath.end(), p) != c.old_multipath.end()) continue;
      auto [it, added] = index_of.try_emplace({p.attrs.get(), static_cast<int>(fam)}, groups.size());
      if (added) groups.push_back(Group{&p.attrs->attrs, fam, {}, nullptr});
      groups[it->second].nlri.push_back(net::Nlri{c.prefix, LocRibPathId(p)});
    }
    for (const rib::Path& p : c.old_multipath) {
      const uint32_t id = LocRibPathId(p);
      const bool stays = std::any_of(c.new_multipath.begin(), c.new_multipath.end(),
                                     [&](const rib::Path& q) { return LocRibPathId(q) == id; });
      if (!stays) withdrawn[static_cast<int>(fam)].nlri.push_back(net::Nlri{c.prefix, id});
    }
  }
  // Withdrawals first: a member replaced under the same id is announced after.
  std::vector<Group> ordered;
  for (auto& w : withdrawn) ordered.push_back(std::move(w));
  for (auto& g : groups) ordered.push_back(std::move(g));
  Distribute(&Views::loc_rib, LocRibHeader(options_.now()), LocRibContext(), ordered);
}

// --- Statistics -------------------------------------------------------------------------

void Monitor::ScheduleStatistics(Feed& f) {
  const uint32_t interval = f.station->config().statistics_interval_s;
  if (interval == 0) return;
  if (!f.stats_timer) f.stats_timer = std::make_unique<asio::steady_timer>(io_);
  f.stats_timer->expires_after(std::chrono::seconds(interval));
  f.stats_timer->async_wait([this, fp = &f, alive = std::weak_ptr<char>(token_), epoch = f.epoch](boost::system::error_code ec) {
    if (ec || alive.expired()) return;
    for (auto& f : feeds_) {
      if (f.get() != fp || f->epoch != epoch) continue;
      ReportStatistics(*f);
      ScheduleStatistics(*f);
      return;
    }
  });
}

void Monitor::ReportStatistics() {
  for (auto& f : feeds_) ReportStatistics(*f);
}

void Monitor::ReportStatistics(Feed& f) {
  if (!f.station->up()) return;
  const absl::Time now = options_.now();
  Bytes out;
  size_t n = 0;
  for (const auto& [index, s] : peers_) {
    std::vector<Stat> stats;
    const PeerCounters c = options_.counters ? options_.counters(index) : PeerCounters{};
    stats.push_back(Stat::Counter(stat_type::kRejectedPrefixes, static_cast<uint32_t>(c.rejected_prefixes)));
    auto dw = duplicate_withdraws_.find(index);
    stats.push_back(Stat::Counter(stat_type::kDuplicateWithdraws,
                                  static_cast<uint32_t>(dw == duplicate_withdraws_.end() ? 0 : dw->second)));
    stats.push_back(Stat::Gauge(stat_type::kAdjRibInRoutes, rib_.paths_of(index)));
    for (int fi = 0; fi < net::kFamilyCount; ++fi) {
      if (!s.families[fi]) continue;
      const auto fam = static_cast<net::Family>(fi);
      stats.push_back(Stat::AfiGauge(stat_type::kAdjRibInRoutesPerAfi, static_cast<uint16_t>(net::FamilyAfi(fam)), 1,
                                     rib_.paths_of(index, fam)));
    }
    const Views& v = f.station->config().views;
    if (v.adj_rib_out_post && options_.adj_rib_out) {
      // RFC 8671 §6.2: routes in the post-policy Adj-RIB-Out (what the neighbor was sent).
      const rib::AdjRibOut* adj = options_.adj_rib_out(index);
      stats.push_back(Stat::Gauge(stat_type::kAdjRibOutPostRoutes, adj ? adj->size() : 0));
    }
    const Bytes m = EncodeStatisticsReport(Header(s, SessionFlags(v), now), stats);
    out.insert(out.end(), m.begin(), m.end());
    ++n;
  }
  if (f.station->config().views.loc_rib) {
    // RFC 9069 §6: the Loc-RIB instance's own counts.
    std::vector<Stat> stats;
    stats.push_back(Stat::Gauge(stat_type::kLocRibRoutes, rib_.prefix_count()));
    for (int fi = 0; fi < net::kFamilyCount; ++fi) {
      const auto fam = static_cast<net::Family>(fi);
      stats.push_back(Stat::AfiGauge(stat_type::kLocRibRoutesPerAfi, static_cast<uint16_t>(net::FamilyAfi(fam)), 1,
                                     rib_.prefix_count(fam)));
    }
    const Bytes m = EncodeStatisticsReport(LocRibHeader(now), stats);
    out.insert(out.end(), m.begin(), m.end());
    ++n;
  }
  SendTo(f, out, n);
}

std::vector<StationStatus> Monitor::Status() const {
  std::vector<StationStatus> out;
  for (const auto& f : feeds_) {
    StationStatus s;
    s.name = f->station->name();
    s.state = f->station->state();
    s.views = f->station->config().views;
    s.syncing = f->syncing;
    s.buffered = f->station->buffered();
    s.counters = f->station->counters();
    s.last_error = f->station->last_error();
    s.longest_slice = f->longest_slice;
    s.syncs_done = f->syncs_done;
    s.up_since = f->station->up_since();
    s.max_buffer_bytes = f->station->config().max_buffer_bytes;
    s.statistics_interval_s = f->station->config().statistics_interval_s;
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace bagd::bmp
