// The speaker's side of BMP (docs/bmp.md): the monitor built from the config, the sessions
// handed to it at Established and when they end, the raw UPDATEs (pre-policy) through the
// Peers' BmpTap. The monitor itself is bmp/monitor.h.
#include <unistd.h>

#include <array>

#include "bgpd/daemon/speaker.h"
#include "bgpd/version.h"

namespace bagd::daemon {

namespace {

net::IpAddress FromAsio(const boost::asio::ip::address& a) {
  if (a.is_v4()) return net::IpAddress::V4(a.to_v4().to_uint());
  const auto b = a.to_v6().to_bytes();
  return net::IpAddress::V6Bytes(b.data());
}

std::string HostName() {
  std::array<char, 256> name{};
  if (gethostname(name.data(), name.size() - 1) != 0) return "bagd";
  return std::string(name.data());
}

std::vector<bmp::StationConfig> StationsOf(const config::v1::Config& config) {
  std::vector<bmp::StationConfig> out;
  for (const auto& st : config.bmp().station()) {
    auto address = net::IpAddress::Parse(st.address());
    if (!address.ok()) continue;  // the validator reported it
    bmp::StationConfig c;
    c.address = *address;
    c.port = static_cast<uint16_t>(st.port() ? st.port() : 1790);
    for (int v : st.views()) {
      switch (v) {
        case config::v1::BMP_PRE_POLICY: c.views.pre_policy = true; break;
        case config::v1::BMP_POST_POLICY: c.views.post_policy = true; break;
        case config::v1::BMP_LOC_RIB: c.views.loc_rib = true; break;
        case config::v1::BMP_ADJ_RIB_OUT_PRE: c.views.adj_rib_out_pre = true; break;
        case config::v1::BMP_ADJ_RIB_OUT_POST: c.views.adj_rib_out_post = true; break;
        default: break;
      }
    }
    if (st.views_size() == 0) c.views.pre_policy = c.views.post_policy = c.views.loc_rib = true;
    c.statistics_interval_s = st.statistics_interval();
    c.max_buffer_bytes = size_t{st.max_buffer_mib() ? st.max_buffer_mib() : 64} << 20;
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace

session::BmpTap* Speaker::bmp_tap() {
  return bmp_ && (bmp_->wants_pre_policy() || bmp_->wants_adj_rib_out_post()) ? bmp_pre_policy_.get() : nullptr;
}

void Speaker::ConfigureBmp(const config::v1::Config& config) {
  const std::vector<bmp::StationConfig> stations = StationsOf(config);
  if (!bmp_) {
    if (stations.empty()) return;  // nothing is built until a station is configured
    if (session_metrics_ != nullptr) bmp_metrics_ = std::make_unique<bmp::BmpMetrics>(session_metrics_->registry());
    bmp::MonitorOptions o;
    o.sys_name = config.bmp().sys_name().empty() ? HostName() : config.bmp().sys_name();
    o.sys_descr = VersionLine("bagd") + ", a BGP daemon for AI-fabric routers (link-bandwidth weighted ECMP)";
    o.local_as = local_as_;
    if (auto id = net::IpAddress::Parse(config.router().router_id()); id.ok() && id->is_v4()) o.router_id = id->v4();
    o.counters = [this](rib::PeerIndex index) {
      bmp::PeerCounters c;
      if (const Peer* p = PeerAt(index)) c.rejected_prefixes = p->prefixes_rejected;
      return c;
    };
    o.log = [](bool warning, const std::string& line) {
      if (warning) {
        log::Warning("%s", line);
      } else {
        log::Info("%s", line);
      }
    };
    o.stored = [this](rib::PeerIndex index) { return pipeline_->core().received(index); };
    // RFC 8671 post-policy, the initial table: what the advertiser has sent the neighbor.
    o.adj_rib_out = [this](rib::PeerIndex index) { return pipeline_->advertiser().advertised(index); };
    o.export_candidate = [this](rib::PeerIndex to, const net::Prefix& prefix, const rib::Path& best) {
      return ExportCandidate(to, prefix, best);
    };
    // Loc-RIB: each member with the bandwidth its weight is computed from (after hold-down
    // and local capacity caps), announced after the weights stage's batch has weighed it.
    o.applied_bps = [this](const net::Prefix& prefix, const rib::Path& p) -> std::optional<double> {
      const rib::NextHopGroup* g = groups().GroupOf(prefix);
      if (g == nullptr) return std::nullopt;
      for (const auto& m : g->members) {
        if (m.next_hop == p.attrs->next_hop) return m.effective;
      }
      return std::nullopt;
    };
    bmp_ = std::make_unique<bmp::Monitor>(io_, pipeline_->rib(), std::move(o), bmp_metrics_.get());
    bmp_pre_policy_ = std::make_unique<BmpPrePolicy>(*bmp_);
    pipeline_->set_route_observer(bmp_.get());
    pipeline_->set_weighed_observer([this](std::span<const rib::MembersView> batch) {
      if (!bmp_ || !bmp_->wants_loc_rib()) return;
      std::vector<net::Prefix> prefixes;
      prefixes.reserve(batch.size());
      for (const rib::MembersView& m : batch) prefixes.push_back(m.prefix);
      bmp_->AppliedChanged(prefixes);
    });
    // Sessions already up (a reload that adds the first station).
    for (const auto& p : peers_) {
      if (p->established()) BmpPeerUp(*p);
    }
  }
  bmp_->Configure(stations);
  for (const auto& s : bmp_->Status()) log::Info("bmp station %s: configured", s.name);
}

void Speaker::BmpPeerUp(const Peer& peer) {
  if (!bmp_) return;
  const auto& n = peer.negotiated();
  if (!n) return;
  const session::BmpSessionFacts& f = peer.bmp_facts();
  bmp::PeerSession s;
  s.index = peer.rib_index;
  s.address = peer.config().address;
  s.as = n->peer_as;
  s.bgp_id = n->peer_router_id;
  if (!f.local.address().is_unspecified()) s.local_address = FromAsio(f.local.address());
  s.local_port = f.local.port();
  s.remote_port = f.remote.port();
  s.sent_open = f.sent_open;
  s.received_open = f.received_open;
  s.four_octet_as = n->four_octet_as;
  s.extended_message = n->extended_message;
  s.add_path = n->add_path_receive;
  s.families = n->families;
  s.up_since = absl::FromUnixMillis(peer.established_since_ms());
  bmp_->PeerUp(std::move(s));
}

void Speaker::BmpPeerDown(const Peer& peer) {
  if (!bmp_) return;
  const session::BmpSessionFacts& f = peer.bmp_facts();
  bmp::PeerDown d;
  d.reason = static_cast<bmp::PeerDownReason>(f.down_reason);
  d.notification = f.down_notification;
  bmp_->PeerDown(peer.rib_index, d);
}

// RFC 8671 pre-policy Adj-RIB-Out: the routes eligible for the neighbor before export
// policy. These are the protocol rules the advertiser applies first (advertiser.h, step 1:
// RFC 4271 §9.1.1 and §9.1.3, RFC 1997); they are repeated here rather than shared so the
// advertiser is not touched while its export path is being restructured (a shared pure
// function is the follow-up).
bool Speaker::ExportCandidate(rib::PeerIndex to, const net::Prefix& prefix, const rib::Path& best) const {
  constexpr uint32_t kNoExport = 0xFFFFFF01, kNoAdvertise = 0xFFFFFF02, kNoExportSubconfed = 0xFFFFFF03;
  if (best.peer == to) return false;  // never back to where it came from
  const Peer* p = PeerAt(to);
  if (p == nullptr || !p->established()) return false;
  const auto& n = p->negotiated();
  if (!n || !n->families[static_cast<int>(prefix.family())]) return false;
  const rib::PeerInfo& from = pipeline_->rib().peer(best.peer);
  const bool to_ebgp = p->config().ebgp();
  if (!from.local && !from.source.ebgp && !to_ebgp) return false;  // no iBGP to iBGP
  for (uint32_t c : best.attrs->attrs.communities) {
    if (c == kNoAdvertise) return false;
    if ((c == kNoExport || c == kNoExportSubconfed) && to_ebgp) return false;
  }
  return true;
}

std::vector<bmp::StationStatus> Speaker::BmpStations() const {
  return bmp_ ? bmp_->Status() : std::vector<bmp::StationStatus>{};
}

}  // namespace bagd::daemon
