#include "bgpd/daemon/speaker.h"

#include <boost/asio/ip/v6_only.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <fstream>
#include <sstream>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "bgpd/fsm/route_refresh.h"
#include "bgpd/session/log.h"
#include "bgpd/session/socket_options.h"
#include "bgpd/wire/update_packer.h"
#include "conf/config_defaults.h"
#include "conf/rate_text.h"

namespace bagd::daemon {

using namespace session;  // the session layer's types (Peer, Clock, log)

using boost::asio::ip::tcp;

struct Speaker::Listener {
  explicit Listener(boost::asio::io_context& io) : acceptor(io) {}
  tcp::acceptor acceptor;
  tcp::endpoint endpoint;
};

namespace {

absl::StatusOr<uint32_t> RouterId(const std::string& text) {
  auto a = wire::IpAddress::Parse(text);
  if (!a.ok() || !a->is_v4()) return absl::InvalidArgumentError(absl::StrCat("router_id '", text, "' is not an IPv4 address"));
  return a->v4();
}

std::string Canonical(const boost::asio::ip::address& a) {
  if (a.is_v6() && a.to_v6().is_v4_mapped()) {
    return boost::asio::ip::make_address_v4(boost::asio::ip::v4_mapped, a.to_v6()).to_string();
  }
  return a.to_string();
}

}  // namespace

std::array<rib::PrefixLimitConfig, wire::kFamilyCount> PrefixLimitsOf(const config::v1::Neighbor& n) {
  std::array<rib::PrefixLimitConfig, wire::kFamilyCount> out{};
  for (const auto& m : n.max_prefixes()) {
    const wire::Family family =
        m.family() == config::v1::IPV6_UNICAST ? wire::Family::kIpv6Unicast : wire::Family::kIpv4Unicast;
    rib::PrefixLimitConfig& limit = out[static_cast<int>(family)];
    limit.limit = m.limit();
    limit.warning_threshold_percent = m.has_warning_threshold_percent() ? m.warning_threshold_percent() : conf::kDefaultPrefixWarningPercent;
    limit.warning_only = m.warning_only();
    limit.restart_interval_s = m.restart_interval();
  }
  return out;
}

absl::StatusOr<std::vector<PeerConfig>> PeerConfigs(const config::v1::Config& config) {
  std::vector<PeerConfig> out;
  const auto& router = config.router();
  auto rid = RouterId(router.router_id());
  if (!rid.ok()) return rid.status();
  for (const auto& n : config.neighbors()) {
    PeerConfig p;
    auto addr = wire::IpAddress::Parse(n.address());
    if (!addr.ok()) return addr.status();
    p.address = *addr;
    p.port = static_cast<uint16_t>(n.port() ? n.port() : conf::kBgpPort);
    if (!n.local_address().empty()) {
      auto la = wire::IpAddress::Parse(n.local_address());
      if (!la.ok()) return la.status();
      p.local_address = *la;
    }
    p.description = n.description();
    p.password = n.password();
    if (!n.password_file().empty()) {
      std::ifstream in(n.password_file());
      if (!in) return absl::NotFoundError(absl::StrCat("cannot read password_file ", n.password_file()));
      std::getline(in, p.password);
    }
    p.ttl_security = static_cast<int>(n.ttl_security());
    p.ebgp_multihop = static_cast<int>(n.ebgp_multihop());
    p.shutdown = n.shutdown();
    p.advertisement_interval_s = n.advertisement_interval();
    p.shutdown_message = n.shutdown_message();
    p.max_prefixes = PrefixLimitsOf(n);
    auto& f = p.fsm;
    f.passive = n.passive();
    f.local.local_as = router.asn();
    f.local.remote_as = n.remote_as();
    f.local.router_id = *rid;
    const auto& t = n.timers();
    f.local.hold_time = static_cast<uint16_t>(
        t.has_hold_time() ? t.hold_time() : (router.has_hold_time() ? router.hold_time() : conf::kDefaultHoldTime));
    f.local.keepalive = static_cast<uint16_t>(
        t.has_keepalive() ? t.keepalive() : (router.has_keepalive() ? router.keepalive() : 0));
    const uint32_t retry = t.connect_retry() ? t.connect_retry() : router.connect_retry();
    if (retry) f.connect_retry_s = retry;
    f.local.families = {false, false};
    for (int af : n.address_families()) {
      if (af == config::v1::IPV4_UNICAST) f.local.families[0] = true;
      if (af == config::v1::IPV6_UNICAST) f.local.families[1] = true;
    }
    if (n.address_families().empty()) f.local.families[0] = true;
    // End-of-RIB from every peer (the FIB waits for it after a restart): the Graceful Restart
    // capability without families asks for it and for nothing else.
    f.local.graceful_restart = true;
    f.local.graceful_restart_time = 0;
    char host[256] = {};
    if (gethostname(host, sizeof host - 1) == 0) f.local.hostname = host;
    out.push_back(std::move(p));
  }
  return out;
}

namespace {

namespace v1 = config::v1;

absl::StatusOr<double> Rate(const std::string& field, const std::string& text) {
  auto r = conf::ParseRate(text);
  if (!r.ok()) return absl::InvalidArgumentError(absl::StrCat(field, ": ", r.status().message()));
  return *r;
}

}  // namespace

absl::StatusOr<rib::WeightsConfig> WeightsConfigOf(const config::v1::Config& config, uint32_t backend_max_weight) {
  rib::WeightsConfig w;
  const v1::LinkBandwidth& lb = config.link_bandwidth();
  auto policy_of = [&](v1::LinkBandwidth::Mode mode, v1::LinkBandwidth::Missing missing,
                       const std::string& default_bandwidth) -> absl::StatusOr<rib::BandwidthPolicy> {
    rib::BandwidthPolicy p;
    p.use_link_bandwidth = mode != v1::LinkBandwidth::MODE_IGNORE;
    switch (missing) {
      case v1::LinkBandwidth::MISSING_SKIP: p.missing = rib::MissingBandwidth::kSkip; break;
      case v1::LinkBandwidth::MISSING_DEFAULT_WEIGHT: p.missing = rib::MissingBandwidth::kDefaultWeight; break;
      default: p.missing = rib::MissingBandwidth::kEqualCost; break;
    }
    if (!default_bandwidth.empty()) {
      auto r = Rate("link_bandwidth.default_bandwidth", default_bandwidth);
      if (!r.ok()) return r.status();
      p.default_bps = *r;
    }
    if (p.missing == rib::MissingBandwidth::kDefaultWeight && p.default_bps <= 0) {
      return absl::InvalidArgumentError("link_bandwidth: MISSING_DEFAULT_WEIGHT needs a default_bandwidth above 0");
    }
    return p;
  };
  auto global = policy_of(lb.mode(), lb.missing(), lb.default_bandwidth());
  if (!global.ok()) return global.status();
  w.policy = {*global, *global};
  for (const v1::FamilyLinkBandwidth& f : lb.families()) {
    const int index = f.family() == v1::IPV6_UNICAST ? 1 : 0;
    auto p = policy_of(f.mode() != v1::LinkBandwidth::MODE_UNSPECIFIED ? f.mode() : lb.mode(),
                       f.missing() != v1::LinkBandwidth::MISSING_UNSPECIFIED ? f.missing() : lb.missing(),
                       !f.default_bandwidth().empty() ? f.default_bandwidth() : lb.default_bandwidth());
    if (!p.ok()) return p.status();
    w.policy[index] = *p;
  }
  const v1::Fib& fib = config.fib();
  w.limits.max_weight = fib.max_weight() ? std::min(fib.max_weight(), backend_max_weight) : backend_max_weight;
  w.limits.budget = fib.group_budget();
  const v1::Damping& d = config.damping();
  w.damping.decrease_delay = absl::Seconds(d.has_decrease_delay() ? d.decrease_delay() : conf::kDefaultDecreaseDelay);
  w.damping.increase_hold_down = absl::Seconds(d.has_increase_hold_down() ? d.increase_hold_down() : conf::kDefaultIncreaseHoldDown);
  w.damping.min_change_percent = d.has_min_change_percent() ? d.min_change_percent() : conf::kDefaultMinChangePercent;
  w.damping.max_hold_down = absl::Seconds(d.has_max_hold_down() ? d.max_hold_down() : conf::kDefaultMaxHoldDown);
  w.damping.half_life = absl::Seconds(d.has_half_life() ? d.half_life() : conf::kDefaultHalfLife);
  return w;
}

absl::StatusOr<rib::LinkBandwidthExport> LinkBandwidthExportOf(const config::v1::NeighborLinkBandwidth& n) {
  rib::LinkBandwidthExport e;
  using M = rib::LinkBandwidthExportMode;
  switch (n.mode()) {
    case v1::NeighborLinkBandwidth::EXPORT_NONE: e.mode = M::kNone; break;
    case v1::NeighborLinkBandwidth::EXPORT_PASS: e.mode = M::kPass; break;
    case v1::NeighborLinkBandwidth::EXPORT_FIXED: e.mode = M::kFixed; break;
    case v1::NeighborLinkBandwidth::EXPORT_CUMULATIVE: e.mode = M::kCumulative; break;
    case v1::NeighborLinkBandwidth::EXPORT_NUM_MULTIPATHS: e.mode = M::kNumMultipaths; break;
    default: e.mode = M::kAuto; break;
  }
  if (!n.rate().empty()) {
    auto r = Rate("link_bandwidth.rate", n.rate());
    if (!r.ok()) return r.status();
    e.fixed_bps = *r;
  }
  if (!n.reference().empty()) {
    auto r = Rate("link_bandwidth.reference", n.reference());
    if (!r.ok()) return r.status();
    e.reference_bps = *r;
  }
  e.transitive = n.encoding() != v1::NeighborLinkBandwidth::ENCODING_NON_TRANSITIVE;
  e.readvertise_threshold_percent = n.has_readvertise_threshold_percent() ? n.readvertise_threshold_percent()
                                                                         : conf::kDefaultReadvertiseThresholdPercent;
  e.readvertise_interval = absl::Seconds(n.has_readvertise_interval() ? n.readvertise_interval() : conf::kDefaultReadvertiseInterval);
  return e;
}

Speaker::Speaker(boost::asio::io_context& io, SessionMetrics* metrics, Clock* clock)
    : io_(io),
      metrics_(metrics),
      own_clock_(clock ? nullptr : std::make_unique<AsioClock>(io)),
      clock_(clock ? clock : own_clock_.get()) {}
Speaker::~Speaker() = default;

absl::Status Speaker::Configure(const config::v1::Config& config) {
  auto peers = PeerConfigs(config);
  if (!peers.ok()) return peers.status();
  local_as_ = config.router().asn();
  rib::DecisionConfig decision;
  decision.maximum_paths_ebgp = std::max<uint32_t>(1, config.multipath().maximum_paths_ebgp());
  decision.maximum_paths_ibgp = std::max<uint32_t>(1, config.multipath().maximum_paths_ibgp());
  decision.as_path_multipath_relax = config.multipath().as_path_relax();
  rib_ = std::make_unique<rib::Rib>(local_as_, decision);
  auto weights = WeightsConfigOf(config, fib_max_weight_);
  if (!weights.ok()) return weights.status();
  groups_ = std::make_unique<rib::NextHopGroupRegistry>(*weights);
  groups_->set_fib_tracking(static_cast<bool>(fib_sink_));
  weights_timer_ = clock_->NewTimer();
  hold_timer_ = clock_->NewTimer();
  config_ = config;
  restart_neighbor_wait_ms_ = int64_t{config.fib().restart_neighbor_wait()} * 1000;
  {
    rib::PeerInfo local;
    local.local = true;
    local.name = "local";
    local.asn = local_as_;
    local.source.ebgp = false;
    local_index_ = rib_->AddPeer(std::move(local));
    adj_out_.emplace_back();  // keeps adj_out_ indexed by rib index
    lb_export_.emplace_back();
  }
  auto networks = NetworksOf(config);
  if (!networks.ok()) return networks.status();
  networks_ = *std::move(networks);
  std::vector<std::pair<std::string, uint16_t>> listen;
  for (const auto& l : config.router().listen()) {
    listen.emplace_back(l.address(), static_cast<uint16_t>(l.port() ? l.port() : conf::kBgpPort));
  }
  if (listen.empty()) listen = {{"0.0.0.0", 179}, {"::", 179}};
  for (const auto& [address, port] : listen) {
    boost::system::error_code ec;
    const auto a = boost::asio::ip::make_address(address, ec);
    if (ec) return absl::InvalidArgumentError(absl::StrCat("listen address '", address, "': ", ec.message()));
    auto l = std::make_unique<Listener>(io_);
    l->endpoint = tcp::endpoint(a, port);
    l->acceptor.open(l->endpoint.protocol(), ec);
    if (!ec) l->acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
    if (!ec && a.is_v6()) l->acceptor.set_option(boost::asio::ip::v6_only(true), ec);
    if (!ec) l->acceptor.bind(l->endpoint, ec);
    if (!ec) l->acceptor.listen(128, ec);
    if (ec) {
      return absl::UnavailableError(absl::StrCat("cannot listen on [", address, "]:", port, ": ", ec.message()));
    }
    listeners_.push_back(std::move(l));
  }
  for (size_t i = 0; i < peers->size(); ++i) {
    PeerConfig& pc = (*peers)[i];
    auto lb_export = LinkBandwidthExportOf(config.neighbors(static_cast<int>(i)).link_bandwidth());
    if (!lb_export.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("neighbor ", pc.Name(), ": ", lb_export.status().message()));
    }
    if (auto added = AddPeer(std::move(pc), *lb_export); !added.ok()) return added.status();
  }
  if (auto st = ApplyGtsmToListeners(); !st.ok()) return st;
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Speaker::Network>> Speaker::NetworksOf(const config::v1::Config& config) {
  std::vector<Network> out;
  for (const auto& n : config.networks()) {
    auto p = wire::Prefix::Parse(n.prefix());
    if (!p.ok()) return absl::InvalidArgumentError(absl::StrCat("network '", n.prefix(), "': ", p.status().message()));
    Network net{wire::Nlri{*p, 0}, std::nullopt, n.capacity_source()};
    if (!n.link_bandwidth().empty()) {
      auto r = Rate(absl::StrCat("network ", n.prefix(), ": link_bandwidth"), n.link_bandwidth());
      if (!r.ok()) return r.status();
      net.link_bandwidth_bps = *r;
    }
    out.push_back(net);
  }
  return out;
}

absl::StatusOr<Peer*> Speaker::AddPeer(PeerConfig pc, const rib::LinkBandwidthExport& lb_export) {
  // TCP-MD5 keys go on every listener of the peer's family (RFC 2385: the kernel checks SYNs).
  if (!pc.password.empty()) {
    for (auto& l : listeners_) {
      if (l->endpoint.address().is_v6() != pc.address.is_v6()) continue;
      if (auto st = SetTcpMd5(l->acceptor.native_handle(), pc.address, pc.password); !st.ok()) {
        return absl::InternalError(absl::StrCat("neighbor ", pc.Name(), ": TCP-MD5 on the listener: ", st.ToString()));
      }
    }
  }
  auto peer = std::make_unique<Peer>(io_, *clock_, std::move(pc), metrics_, this);
  rib::PeerInfo info;
  info.source.ebgp = peer->config().ebgp();
  info.source.address = peer->config().address;
  info.asn = peer->config().fsm.local.remote_as;
  info.name = peer->config().Name();
  // A new index even for a neighbor that was here before (removed, or reset by a reload):
  // the RIB keeps an index's paths apart, and a few unused indices cost nothing.
  peer->rib_index = rib_->AddPeer(std::move(info));
  adj_out_.resize(peer->rib_index + 1);
  lb_export_.resize(peer->rib_index + 1);
  lb_export_[peer->rib_index].config = lb_export;
  Peer* added = peer.get();
  by_address_[peer->config().Name()] = added;
  peers_.push_back(std::move(peer));
  return added;
}

void Speaker::RemovePeer(const std::string& name, const wire::NotificationMessage& cease, const std::string& why) {
  auto it = std::find_if(peers_.begin(), peers_.end(), [&](const auto& p) { return p->config().Name() == name; });
  if (it == peers_.end()) return;
  Peer& p = **it;
  // The Cease goes out on its connection, which drains by itself; the session loss withdraws
  // the neighbor's routes and stops every timer of ours that points at it (OnSessionDown).
  p.Stop(cease, why);
  if (!p.config().password.empty()) {
    for (auto& l : listeners_) {
      if (l->endpoint.address().is_v6() != p.config().address.is_v6()) continue;
      (void)SetTcpMd5(l->acceptor.native_handle(), p.config().address, "");  // the key goes with it
    }
  }
  // Every timer of ours that points at it goes with its state (OnSessionDown stopped them
  // if it was up; a neighbor that never was has none running, but no timer may outlive it).
  if (p.rib_index < pacing_.size()) pacing_[p.rib_index] = Pacing{};
  if (p.rib_index < refresh_.size()) refresh_[p.rib_index] = InboundRefresh{};
  lb_export_[p.rib_index] = BandwidthExport{};
  by_address_.erase(name);
  // Its handlers watch its Lifetime: whatever of it is still queued touches nothing.
  peers_.erase(it);
}

absl::Status Speaker::ApplyGtsmToListeners() {
  // GTSM (RFC 5082 §3): a connection from a neighbor with ttl_security must not get a
  // single octet in below its minimum TTL. IP_MINTTL on the accepted socket comes too late
  // for what the peer wrote right after connecting, so each listener keeps the SYN
  // (Peer::Accept checks its TTL before reading) and, when every neighbor of its family
  // uses GTSM, drops SYNs below the smallest minimum in the kernel.
  for (auto& l : listeners_) {
    const bool v6 = l->endpoint.address().is_v6();
    bool any = false, all = true;
    int min_ttl = 255;
    for (const auto& p : peers_) {
      if (p->config().address.is_v6() != v6) continue;
      if (p->config().ttl_security > 0) {
        any = true;
        min_ttl = std::min(min_ttl, 256 - p->config().ttl_security);
      } else {
        all = false;
      }
    }
    const std::string where = absl::StrCat("[", l->endpoint.address().to_string(), "]:", l->endpoint.port());
    // 0 (any TTL) unless every neighbor of the family uses GTSM; set every time, since a
    // reload may have added a neighbor without it or removed the last one with it.
    if (auto st = SetMinTtl(l->acceptor.native_handle(), v6, any && all ? min_ttl : 0); !st.ok()) {
      return absl::InternalError(absl::StrCat("GTSM on the listener ", where, ": ", st.ToString()));
    }
    if (!any) continue;
    if (auto st = EnableSavedSyn(l->acceptor.native_handle()); !st.ok()) {
      // Not fatal: Peer::Accept falls back to refusing connections with early bytes.
      log::Warning("listener %s: %s; GTSM neighbors' connections are checked after accept()", where, st.ToString());
    }
    if (all) {
      log::Info("listener %s: every %s neighbor uses GTSM: SYNs with TTL below %d are dropped", where,
                v6 ? "IPv6" : "IPv4", min_ttl);
    }
  }
  return absl::OkStatus();
}

void Speaker::Start() {
  if (!networks_.empty()) {
    // Our own routes: ORIGIN IGP, empty AS_PATH; the next hop is set per peer on export.
    // A configured link bandwidth rides along as the community our neighbors see (their
    // export settings decide its form).
    for (const Network& n : networks_) Originate(n);
    rib_->TakeChanges();  // nobody is Established yet; the initial dumps carry them
    log::Info("originating %d prefixes", networks_.size());
  }
  started_ = true;
  started_ms_ = clock_->SteadyMs();
  if (on_converged_) {
    convergence_timer_ = clock_->NewTimer();
    convergence_timer_->Start(std::chrono::milliseconds(restart_neighbor_wait_ms_), [this] { CheckConvergence(); });
  }
  for (auto& l : listeners_) {
    log::Info("listening on %s", absl::StrCat("[", l->endpoint.address().to_string(), "]:", l->endpoint.port()));
    Accept(*l);
  }
  for (auto& p : peers_) p->Start();
}

void Speaker::Originate(const Network& n) {
  wire::PathAttributes a;
  a.origin = wire::Origin::kIgp;
  a.as_path = wire::AsPath{};
  a.local_pref = 100;
  std::optional<double> bps = n.link_bandwidth_bps;
  if (!n.capacity_source.empty()) {
    auto it = originated_bps_.find(n.capacity_source);
    bps = it == originated_bps_.end() ? std::nullopt : std::optional<double>(it->second);
  }
  if (bps) {
    a.extended_communities.push_back(wire::LinkBandwidth::FromBitsPerSecond(local_as_, *bps, true).ToExtendedCommunity());
  }
  rib_->Announce(local_index_, std::span(&n.nlri, 1), store_.Intern(a));
}

void Speaker::SetOriginatedBandwidth(const std::string& source, double bps) {
  auto [it, fresh] = originated_bps_.try_emplace(source, bps);
  if (!fresh && it->second == bps) return;
  it->second = bps;
  if (!started_) return;
  for (const Network& n : networks_) {
    if (n.capacity_source == source) Originate(n);
  }
  FlushRibChanges();
  RefreshRibMetrics();
}

void Speaker::Accept(Listener& l) {
  l.acceptor.async_accept([this, &l](const boost::system::error_code& ec, tcp::socket socket) {
    if (ec == boost::asio::error::operation_aborted) return;
    if (!ec) {
      boost::system::error_code e2;
      const auto remote = socket.remote_endpoint(e2);
      Peer* p = e2 ? nullptr : FindPeer(Canonical(remote.address()));
      if (p == nullptr) {
        // Not a configured neighbor: close without a word (no NOTIFICATION to strangers).
        log::Debug("connection from unknown address %s closed", e2 ? "?" : remote.address().to_string());
        socket.close(e2);
      } else {
        p->Accept(std::move(socket));
      }
    } else {
      log::Warning("accept on %s failed: %s", l.endpoint.address().to_string(), ec.message());
    }
    Accept(l);
  });
}

Peer* Speaker::FindPeer(const std::string& address) const {
  auto it = by_address_.find(address);
  return it == by_address_.end() ? nullptr : it->second;
}

void Speaker::Shutdown(const std::string& message, std::chrono::milliseconds grace, std::function<void()> done) {
  stopping_ = true;
  for (auto& l : listeners_) {
    boost::system::error_code ec;
    l->acceptor.close(ec);
  }
  const auto cease = wire::NotificationMessage::Shutdown(wire::cease::kAdministrativeShutdown, message);
  for (auto& p : peers_) p->Stop(cease, absl::StrCat("bagd shutting down: ", message));
  // The NOTIFICATIONs are queued on their connections, which flush and close by themselves;
  // give them a moment before the io_context stops.
  shutdown_timer_ = std::make_unique<boost::asio::steady_timer>(io_, grace);
  shutdown_timer_->async_wait([done = std::move(done)](const boost::system::error_code&) { done(); });
}

std::vector<control::v1::NeighborStatus> Speaker::ListNeighbors(const std::string& filter) const {
  std::vector<control::v1::NeighborStatus> out;
  std::string canonical = filter;
  if (auto a = wire::IpAddress::Parse(filter); a.ok()) canonical = a->ToString();
  for (const auto& p : peers_) {
    if (!filter.empty() && p->config().Name() != canonical) continue;
    out.push_back(p->Status());
  }
  return out;
}

absl::Status Speaker::ShutdownNeighbor(const std::string& address, const std::string& message) {
  auto a = wire::IpAddress::Parse(address);
  if (!a.ok()) return a.status();
  Peer* p = FindPeer(a->ToString());
  if (p == nullptr) return absl::NotFoundError(absl::StrCat("no neighbor ", address, " is configured"));
  if (message.size() > 255) return absl::InvalidArgumentError("shutdown message longer than 255 octets (RFC 9003)");
  p->Shutdown(message);
  return absl::OkStatus();
}

absl::Status Speaker::EnableNeighbor(const std::string& address) {
  auto a = wire::IpAddress::Parse(address);
  if (!a.ok()) return a.status();
  Peer* p = FindPeer(a->ToString());
  if (p == nullptr) return absl::NotFoundError(absl::StrCat("no neighbor ", address, " is configured"));
  p->Enable();
  return absl::OkStatus();
}

}  // namespace bagd::daemon

namespace bagd::daemon {

void Speaker::RefreshCounts(Peer& p) {
  p.prefixes_received = rib_->paths_of(p.rib_index);
  p.prefixes_sent = adj_out_[p.rib_index].size();
  for (int f = 0; f < wire::kFamilyCount; ++f) {
    const auto fam = static_cast<wire::Family>(f);
    p.prefixes_received_by_family[f] = rib_->paths_of(p.rib_index, fam);
    p.series().SetPrefixes(fam, p.prefixes_received_by_family[f]);
  }
  p.series().SetPrefixesSent(p.prefixes_sent);
}

void Speaker::RefreshRibMetrics() {
  if (!metrics_) return;
  for (int f = 0; f < wire::kFamilyCount; ++f) {
    const auto fam = static_cast<wire::Family>(f);
    metrics_->RibPrefixes(wire::FamilyName(fam)).Set(static_cast<double>(rib_->prefix_count(fam)));
    size_t paths = 0;
    for (rib::PeerIndex i = 0; i < rib_->peer_count(); ++i) paths += rib_->paths_of(i, fam);
    metrics_->RibPaths(wire::FamilyName(fam)).Set(static_cast<double>(paths));
  }
  metrics_->AttributeSets().Set(static_cast<double>(store_.size()));
  auto& runs = metrics_->DecisionRuns();
  runs.Increment(static_cast<double>(rib_->decision_runs()) - runs.Value());
}

namespace {

// True if `a` and `b` differ at most in their link-bandwidth communities.
bool SameExceptLinkBandwidth(const wire::PathAttributes& a, const wire::PathAttributes& b) {
  wire::PathAttributes x = a, y = b;
  x.ReplaceLinkBandwidth(std::nullopt);
  y.ReplaceLinkBandwidth(std::nullopt);
  return x == y;
}

}  // namespace

std::optional<wire::PathAttributes> Speaker::ExportAttributes(const Peer& to, std::span<const rib::Path> multipath,
                                                              wire::Family family) const {
  if (multipath.empty()) return std::nullopt;
  const rib::Path& best = multipath.front();
  if (best.peer == to.rib_index) return std::nullopt;  // never back to where it came from
  const rib::PeerInfo& from = rib_->peer(best.peer);
  const bool to_ebgp = to.config().ebgp();
  if (!from.local && !from.source.ebgp && !to_ebgp) return std::nullopt;  // RFC 4271 §9.1.3: no iBGP to iBGP
  const auto& n = to.negotiated();
  if (!n || !n->families[static_cast<int>(family)]) return std::nullopt;
  wire::PathAttributes a = best.attrs->attrs;
  a.mp_unreach.reset();
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
    const auto local = to.LocalAddress();
    if (!local) return std::nullopt;
    if (family == wire::Family::kIpv4Unicast) {
      if (!local->is_v4()) return std::nullopt;  // an IPv4 next hop is needed (no RFC 8950 export yet)
      a.next_hop = *local;
      a.mp_reach.reset();
    } else {
      if (!local->is_v6()) return std::nullopt;
      a.next_hop.reset();
      a.mp_reach = wire::MpReach{family, *local, std::nullopt, {}};
    }
  } else if (from.local) {
    // Our own route to an iBGP peer: next hop self.
    const auto local = to.LocalAddress();
    if (!local || local->is_v4() != (family == wire::Family::kIpv4Unicast)) return std::nullopt;
    if (family == wire::Family::kIpv4Unicast) {
      a.next_hop = *local;
      a.mp_reach.reset();
    } else {
      a.next_hop.reset();
      a.mp_reach = wire::MpReach{family, *local, std::nullopt, {}};
    }
  } else {
    // eBGP-learned to iBGP: next hop unchanged, LOCAL_PREF present (RFC 4271 §5.1.5).
    if (!a.local_pref) a.local_pref = 100;
    std::erase_if(a.unknown, [](const wire::UnknownAttribute& u) { return !(u.flags & wire::attr_flag::kTransitive); });
  }
  // Link bandwidth: replaced, never appended (RFC 10005 §7.1).
  const bool next_hop_unchanged = !to_ebgp && !from.local;
  absl::InlinedVector<std::optional<wire::LinkBandwidth>, 8> lbs;  // per prefix and peer: no heap
  for (const rib::Path& p : multipath) lbs.push_back(p.attrs->link_bandwidth.chosen);
  a.ReplaceLinkBandwidth(rib::ExportLinkBandwidth(lb_export_[to.rib_index].config, lbs, next_hop_unchanged, local_as_));
  return a;
}

namespace {

// Prefixes to announce grouped by exported attribute set, in first-seen order: each set is
// encoded once and its prefixes packed together.
class AnnouncementGroups {
 public:
  void Add(const rib::AttrRef& ref, const wire::Prefix& prefix) {
    if (last_ == SIZE_MAX || groups_[last_].first != ref) {
      auto [g, fresh] = group_of_.try_emplace(ref.get(), groups_.size());
      if (fresh) groups_.emplace_back(ref, std::vector<wire::Nlri>{});
      last_ = g->second;
    }
    groups_[last_].second.push_back(wire::Nlri{prefix, 0});
    ++prefixes_;
  }
  size_t prefixes() const { return prefixes_; }

  // Appends the UPDATEs for `to` to `messages`; a set that cannot be encoded is logged and
  // the others still go out.
  void PackFor(const Peer& to, std::vector<wire::Bytes>& messages) const {
    const wire::CodecContext ctx = to.EncodeContext();
    for (const auto& [ref, nlri] : groups_) {
      auto packed = wire::PackAnnouncements(ref->attrs, nlri.front().prefix.family(), nlri, ctx);
      if (!packed.ok()) {
        log::Error("neighbor %s: cannot advertise %d prefixes: %s", to.config().Name(), nlri.size(),
                   packed.status().ToString());
        continue;
      }
      std::move(packed->begin(), packed->end(), std::back_inserter(messages));
    }
  }

 private:
  std::vector<std::pair<rib::AttrRef, std::vector<wire::Nlri>>> groups_;
  absl::flat_hash_map<const rib::InternedAttributes*, size_t> group_of_;
  size_t last_ = SIZE_MAX;
  size_t prefixes_ = 0;
};

void SendPacked(Peer& to, std::vector<wire::Bytes> messages) {
  if (!messages.empty()) to.series().UpdatesPacked(messages.size());
  to.SendUpdates(std::move(messages));
}

}  // namespace

void Speaker::Advertise(Peer& to, const std::vector<rib::RouteChange>& changes) {
  if (!to.established()) return;
  auto& out = adj_out_[to.rib_index];
  AnnouncementGroups announce;
  std::vector<wire::Nlri> withdraw[wire::kFamilyCount];
  BandwidthExport& lbx = lb_export_[to.rib_index];
  const absl::Time now = absl::Now();
  // What goes out depends only on the family and the multipath set's paths (their peers and
  // interned attributes), and a batch's prefixes share a handful of those: each distinct set
  // is exported and interned once (a null AttrRef: not exported to this peer).
  absl::flat_hash_map<std::string, rib::AttrRef> exports;
  std::string key;
  // One-entry memos in front of the map: neighbouring prefixes usually share their sets.
  struct Memo {
    const rib::PathSet* set = nullptr;
    wire::Family family = wire::Family::kIpv4Unicast;
    rib::AttrRef ref;
  };
  Memo old_memo, new_memo;
  auto export_of = [&](const rib::PathSet& set, wire::Family family, Memo& m) -> rib::AttrRef {
    if (set.empty()) return {};
    if (m.set != nullptr && m.family == family && *m.set == set) return m.ref;
    key.assign(1, static_cast<char>(family));
    for (const rib::Path& p : set) {
      const rib::InternedAttributes* a = p.attrs.get();
      key.append(reinterpret_cast<const char*>(&p.peer), sizeof p.peer);
      key.append(reinterpret_cast<const char*>(&a), sizeof a);
    }
    auto [it, fresh] = exports.try_emplace(key);
    if (fresh) {
      if (auto exported = ExportAttributes(to, set, family)) it->second = store_.Intern(*std::move(exported));
    }
    m = Memo{&set, family, it->second};
    return it->second;
  };
  for (const auto& c : changes) {
    const wire::Family family = c.prefix.family();
    const rib::AttrRef ref = export_of(c.new_multipath, family, new_memo);
    // What this peer should get did not move (another peer's path joined the multipath
    // set, say): the Adj-RIB-Out is left as it is, not even looked up.
    if (!c.old_multipath.empty() && ref == export_of(c.old_multipath, family, old_memo)) continue;
    if (ref) {
      auto [cur, added] = out.TryEmplace(c.prefix);
      if (!added) {
        if (*cur == ref) continue;
        // Only the bandwidth changed: re-advertisement damping decides (threshold, interval).
        const auto old_lb = (*cur)->attrs.SelectedLinkBandwidth().chosen;
        const auto new_lb = ref->attrs.SelectedLinkBandwidth().chosen;
        if (old_lb && new_lb && !(*old_lb == *new_lb) && SameExceptLinkBandwidth((*cur)->attrs, ref->attrs)) {
          const auto d = lbx.damping.Check(c.prefix, old_lb->bits_per_second(), new_lb->bits_per_second(), now, lbx.config);
          if (d.verdict == rib::BandwidthReadvertisement::Verdict::kSuppress) continue;
          if (d.verdict == rib::BandwidthReadvertisement::Verdict::kDefer) {
            lbx.deferred.insert(c.prefix);
            if (d.not_before < lbx.timer_at) {
              if (!lbx.timer) lbx.timer = clock_->NewTimer();
              lbx.timer_at = d.not_before;
              lbx.timer->Start(absl::ToChronoMilliseconds(d.not_before - now) + std::chrono::milliseconds(1),
                               [this, peer = &to] { FlushDeferredBandwidth(*peer); });
            }
            continue;
          }
          lbx.damping.Sent(c.prefix, now);
        }
      }
      *cur = ref;
      announce.Add(ref, c.prefix);
    } else if (out.Erase(c.prefix)) {
      withdraw[static_cast<int>(family)].push_back(wire::Nlri{c.prefix, 0});
    }
  }
  const wire::CodecContext ctx = to.EncodeContext();
  std::vector<wire::Bytes> messages;
  for (int f = 0; f < wire::kFamilyCount; ++f) {
    if (withdraw[f].empty()) continue;
    auto packed = wire::PackWithdrawals(static_cast<wire::Family>(f), withdraw[f], ctx);
    if (packed.ok()) std::move(packed->begin(), packed->end(), std::back_inserter(messages));
  }
  announce.PackFor(to, messages);
  SendPacked(to, std::move(messages));
  RefreshCounts(to);
}

void Speaker::Propagate(const std::vector<rib::RouteChange>& changes) {
  if (changes.empty()) return;
  for (auto& p : peers_) AdvertisePaced(*p, changes);
}

void Speaker::AdvertisePaced(Peer& to, const std::vector<rib::RouteChange>& changes) {
  const uint32_t mrai = to.config().advertisement_interval_s;
  if (mrai == 0 || !to.established()) return Advertise(to, changes);
  if (pacing_.size() < adj_out_.size()) pacing_.resize(adj_out_.size());
  Pacing& p = pacing_[to.rib_index];
  if (!p.running) {
    // Nothing sent within the interval: send now and start it.
    Advertise(to, changes);
  } else {
    for (const auto& c : changes) p.pending.insert(c.prefix);
    return;
  }
  if (!p.timer) p.timer = clock_->NewTimer();
  p.running = true;
  p.timer->Start(std::chrono::seconds(mrai), [this, peer = &to] { FlushPaced(*peer); });
}

void Speaker::FlushPaced(Peer& to) {
  // The Adj-RIB-Out is written from the RIB as it is now: changes not yet sent go first, or
  // their flush would compare against sets this peer never got (Advertise skips a change
  // whose export did not move).
  FlushRibChanges();
  Pacing& p = pacing_[to.rib_index];
  p.running = false;
  if (p.pending.empty()) return;
  // Each waiting prefix once, in its state now.
  std::vector<rib::RouteChange> now;
  for (const auto& prefix : p.pending) {
    rib::RouteChange c{prefix, {}, {}};
    if (const rib::Destination* d = rib_->Find(prefix)) c.new_multipath = rib_->MultipathOf(*d);
    now.push_back(std::move(c));
  }
  p.pending.clear();
  AdvertisePaced(to, now);
}

std::vector<rib::RouteChange> Speaker::CurrentState(const absl::flat_hash_set<wire::Prefix>& prefixes) const {
  std::vector<rib::RouteChange> out;
  out.reserve(prefixes.size());
  for (const auto& prefix : prefixes) {
    rib::RouteChange c{prefix, {}, {}};
    if (const rib::Destination* d = rib_->Find(prefix)) c.new_multipath = rib_->MultipathOf(*d);
    out.push_back(std::move(c));
  }
  return out;
}

void Speaker::FlushDeferredBandwidth(Peer& to) {
  FlushRibChanges();  // as in FlushPaced
  BandwidthExport& lbx = lb_export_[to.rib_index];
  lbx.timer_at = absl::InfiniteFuture();
  if (lbx.deferred.empty() || !to.established()) {
    lbx.deferred.clear();
    return;
  }
  std::vector<rib::RouteChange> now = CurrentState(lbx.deferred);
  lbx.deferred.clear();
  AdvertisePaced(to, now);
}

void Speaker::OnSessionUp(Peer& peer) {
  FlushRibChanges();  // as in FlushPaced: the dump is the RIB now
  ResetRefresh(peer);
  rib::PathSource src = rib_->peer(peer.rib_index).source;
  if (peer.negotiated()) src.router_id = peer.negotiated()->peer_router_id;
  rib_->UpdatePeerSource(peer.rib_index, src);
  adj_out_[peer.rib_index].clear();
  // The initial dump: every best path, as a change from nothing.
  std::vector<rib::RouteChange> all;
  all.reserve(rib_->prefix_count());
  rib_->ForEach([&](const wire::Prefix& prefix, const rib::Destination& d) {
    if (d.best() >= 0) all.push_back(rib::RouteChange{prefix, {}, rib_->MultipathOf(d)});
  });
  Advertise(peer, all);
  log::Info("neighbor %s: initial advertisement: %d prefixes", peer.config().Name(), adj_out_[peer.rib_index].size());
}

namespace {
// Prefixes per slice of a session-loss flush: each slice's changes go to the peers and the
// weights batch before the next, so a full table's flush never holds a full table of
// changes (~170 bytes each) at once.
constexpr size_t kFlushSlice = 65536;
}  // namespace

void Speaker::OnSessionDown(Peer& peer) {
  FlushRibChanges();  // what came before the loss goes out first
  for (std::optional<wire::Prefix> next; (next = rib_->PeerDownFrom(peer.rib_index, next, kFlushSlice));) {
    FlushRibChanges();
  }
  adj_out_[peer.rib_index].clear();
  ResetRefresh(peer);
  {
    BandwidthExport& lbx = lb_export_[peer.rib_index];
    lbx.damping.Clear();
    lbx.deferred.clear();
    lbx.timer_at = absl::InfiniteFuture();
    if (lbx.timer) lbx.timer->Stop();
  }
  if (peer.rib_index < pacing_.size()) {
    Pacing& p = pacing_[peer.rib_index];
    p.pending.clear();
    p.running = false;
    if (p.timer) p.timer->Stop();
  }
  RefreshCounts(peer);
  FlushRibChanges();
  RefreshRibMetrics();
  // Its End-of-RIB counted for the session that ended; a new session sends its own.
  for (int f = 0; f < wire::kFamilyCount; ++f) end_of_rib_.erase({peer.rib_index, f});
  CheckConvergence();  // it may have been the one the others waited for
}

namespace {
// Changes that make a batch worth sending on its own (a packed UPDATE holds ~1000).
constexpr size_t kFlushChanges = 256;
}  // namespace

void Speaker::OnUpdate(Peer& peer, const wire::UpdateMessage& u) {
  const rib::PeerIndex idx = peer.rib_index;
  if (auto eor = u.EndOfRib()) {
    // RFC 4724: the peer's initial table is complete.
    const int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::system_clock::now().time_since_epoch()).count();
    log::Info("neighbor %s: End-of-RIB %s: %d paths, %.3fs after Established", peer.config().Name(),
              wire::FamilyName(*eor), rib_->paths_of(idx, *eor), (now - peer.established_since_ms()) / 1000.0);
    end_of_rib_.insert({idx, static_cast<int>(*eor)});
    FlushRibChanges();  // the table so far, before convergence releases the FIB
    CheckConvergence();
    return;
  }
  NoteRefreshed(peer, u);
  rib_->ApplyUpdate(idx, u, store_);
  RefreshCounts(peer);
  // The RIB-wide gauges follow with the weights batch (RunWeights), not every UPDATE.
  // A packed UPDATE's changes go out at once, in the order they came (no sort needed);
  // small UPDATEs (one prefix each, or a few) are coalesced over what was already read.
  if (rib_->pending_changes() >= kFlushChanges) {
    FlushRibChanges();
  } else {
    ScheduleRibFlush();
  }
}

void Speaker::ScheduleRibFlush() {
  // Once the UPDATEs already read (from every peer) are in: a prefix that several peers
  // announce within one read goes out to the others once, with its final multipath set.
  if (rib_flush_posted_) return;
  rib_flush_posted_ = true;
  // The handler may outlive the speaker (a test's io_context runs on after it): it watches
  // the speaker's Lifetime.
  boost::asio::post(io_, [this, alive = lifetime_.watch()] {
    if (!alive.expired()) FlushRibChanges();
  });
}

void Speaker::FlushRibChanges() {
  rib_flush_posted_ = false;
  std::vector<rib::RouteChange> changes = rib_->TakeChanges();
  OnRibChanges(changes);
  rib_->Recycle(std::move(changes));
}

}  // namespace bagd::daemon

namespace bagd::daemon {

namespace {
// A burst of UPDATEs (a peer re-announcing its routes with a new bandwidth) arrives within
// microseconds; one batch makes it one group operation instead of a route move per message.
constexpr auto kWeightsBatchDelay = std::chrono::milliseconds(2);
}  // namespace

void Speaker::OnRibChanges(const std::vector<rib::RouteChange>& changes) {
  Propagate(changes);
  QueueWeights(changes);
}

void Speaker::QueueWeights(const std::vector<rib::RouteChange>& changes) {
  if (changes.empty() || !groups_) return;
  // Each change set is in table order: the batch is a list of sorted runs, merged later. A
  // set that continues the previous run in order extends it.
  if (weights_pending_.empty() || rib::InTableOrder(changes.front().prefix, weights_pending_.back())) {
    weights_runs_.push_back(weights_pending_.size());
  }
  for (const auto& c : changes) weights_pending_.push_back(c.prefix);
  if (weights_scheduled_) return;
  weights_scheduled_ = true;
  weights_timer_->Start(kWeightsBatchDelay, [this] {
    weights_scheduled_ = false;
    RunWeights();
  });
}

void Speaker::RunWeights() {
  // Each changed prefix once, in table order (deterministic group ids for the same input;
  // in-order RIB lookups): the sorted runs merged pairwise, n log(runs) instead of a sort.
  auto& v = weights_pending_;
  std::vector<size_t>& runs = weights_runs_;
  runs.push_back(v.size());
  if (runs.size() > 64) {  // many short runs: a sort is cheaper than the merge passes
    std::sort(v.begin(), v.end(), rib::InTableOrder);
    runs.clear();
  }
  while (runs.size() > 2) {
    std::vector<size_t> merged;
    for (size_t i = 0; i + 1 < runs.size(); i += 2) {
      merged.push_back(runs[i]);
      if (i + 2 < runs.size()) {
        std::inplace_merge(v.begin() + static_cast<ptrdiff_t>(runs[i]), v.begin() + static_cast<ptrdiff_t>(runs[i + 1]),
                           v.begin() + static_cast<ptrdiff_t>(runs[i + 2]), rib::InTableOrder);
      }  // else an odd run out, to the end: merged in the next pass
    }
    merged.push_back(v.size());
    runs = std::move(merged);
  }
  runs.clear();
  v.erase(std::unique(v.begin(), v.end()), v.end());
  // The batch's storage is kept between batches: fresh pages for every batch cost more
  // than the work on them.
  rib::MembersBatch& batch = weights_batch_;
  for (const wire::Prefix& prefix : weights_pending_) batch.Add(*rib_, prefix);
  weights_pending_.clear();
  if (weights_pending_.capacity() > 262144) weights_pending_.shrink_to_fit();
  if (weights_runs_.capacity() > 4096) weights_runs_.shrink_to_fit();
  groups_->Update(batch.View(), absl::Now());
  batch.Clear();
  FlushFib();
  RefreshRibMetrics();
}

void Speaker::FlushFib() {
  for (const std::string& n : groups_->TakeNotices()) log::Warning("%s", n);
  const rib::FibUpdate u = groups_->TakeFibUpdate();
  if (!u.empty()) {
    log::Debug("fib: %d group upserts, %d route upserts, %d route deletes, %d group deletes", u.group_upserts.size(),
               u.route_upserts.size(), u.route_deletes.size(), u.group_deletes.size());
    for (const rib::FibGroup& g : u.group_upserts) {
      std::string members;
      for (const auto& m : g.members) absl::StrAppend(&members, members.empty() ? "" : " ", m.next_hop.ToString(), "*", m.weight);
      log::Debug("fib: group %d = %s", g.id, members);
    }
    if (fib_sink_) fib_sink_(u);
  }
  RefreshWeightMetrics();
  if (auto due = groups_->NextDue()) {
    const absl::Duration wait = std::max(*due - absl::Now(), absl::ZeroDuration());
    hold_timer_->Start(absl::ToChronoMilliseconds(wait) + std::chrono::milliseconds(1), [this] {
      groups_->Expire(absl::Now());
      FlushFib();
    });
  } else {
    hold_timer_->Stop();
  }
}

void Speaker::CheckConvergence() {
  // Shutting down, every neighbor goes admin down: that is no convergence, and the FIB
  // must not sweep what the next run will claim.
  if (!on_converged_ || stopping_) return;
  // RFC 4724 §4.2's rule for the stale routes of a restarting peer, applied to our own
  // restart: the tables are in once every neighbor that is up has said so (End-of-RIB for
  // each negotiated family). A neighbor that is not Established holds it only for the first
  // restart_neighbor_wait seconds; a down one must not freeze the FIB for the others.
  const bool waited = clock_->SteadyMs() - started_ms_ >= restart_neighbor_wait_ms_;
  size_t not_up = 0;
  for (const auto& p : peers_) {
    if (p->admin_down() || p->prefix_limit_down()) continue;
    const auto& n = p->negotiated();
    if (!p->established() || !n) {
      if (!waited) return;
      ++not_up;
      continue;
    }
    for (int f = 0; f < wire::kFamilyCount; ++f) {
      if (n->families[f] && !end_of_rib_.contains({p->rib_index, f})) return;
    }
  }
  if (not_up == 0) {
    log::Info("every neighbor sent End-of-RIB: the initial tables are in");
  } else {
    log::Info("every Established neighbor sent End-of-RIB (%d %s not Established %.0fs after start and not waited for, "
              "fib.restart_neighbor_wait): the initial tables are in",
              not_up, not_up == 1 ? "neighbor is" : "neighbors are", restart_neighbor_wait_ms_ / 1000.0);
  }
  // Weights first, so the FIB sees the whole table at once.
  if (weights_scheduled_) {
    weights_timer_->Stop();
    weights_scheduled_ = false;
    RunWeights();
  }
  auto f = std::move(on_converged_);
  on_converged_ = nullptr;
  f();
}

void Speaker::RefreshWeightMetrics() {
  if (!metrics_) return;
  const rib::WeightCounters& c = groups_->counters();
  metrics_->NextHopGroups().Set(static_cast<double>(groups_->group_count()));
  metrics_->QuantizationMaxError().Set(groups_->max_error());
  auto sync = [](prometheus::Counter& counter, uint64_t value) {
    const double delta = static_cast<double>(value) - counter.Value();
    if (delta > 0) counter.Increment(delta);
  };
  sync(metrics_->WeightChanges("applied"), c.applied);
  sync(metrics_->WeightChanges("held"), c.held);
  sync(metrics_->WeightChanges("suppressed"), c.suppressed);
  sync(metrics_->FibOperations("group"), c.group_updates);
  sync(metrics_->FibOperations("route"), c.route_updates);
}

namespace {

// The names of the fields that differ between two messages of one type ("timers",
// "password"): one field at a time swapped into empty messages and compared.
std::vector<std::string> ChangedFields(const google::protobuf::Message& a, const google::protobuf::Message& b) {
  std::vector<std::string> out;
  const google::protobuf::Descriptor* d = a.GetDescriptor();
  for (int i = 0; i < d->field_count(); ++i) {
    const google::protobuf::FieldDescriptor* f = d->field(i);
    std::unique_ptr<google::protobuf::Message> x(a.New()), y(b.New()), ca(a.New()), cb(b.New());
    ca->CopyFrom(a);
    cb->CopyFrom(b);
    a.GetReflection()->SwapFields(ca.get(), x.get(), {f});
    b.GetReflection()->SwapFields(cb.get(), y.get(), {f});
    if (x->SerializeAsString() != y->SerializeAsString()) out.push_back(f->name());
  }
  return out;
}

}  // namespace

absl::Status Speaker::Reload(const config::v1::Config& config) {
  // Everything is checked before anything changes: an error keeps the running config whole.
  auto weights = WeightsConfigOf(config, fib_max_weight_);
  if (!weights.ok()) return weights.status();
  if (config.router().asn() != config_.router().asn() || config.router().router_id() != config_.router().router_id()) {
    return absl::FailedPreconditionError(
        "router.asn and router.router_id cannot change while bagd runs (every session and route depends on them): "
        "restart bagd to apply them; the running configuration is kept");
  }
  auto next = PeerConfigs(config);
  if (!next.ok()) return next.status();
  std::vector<rib::LinkBandwidthExport> exports;
  for (int i = 0; i < config.neighbors_size(); ++i) {
    auto e = LinkBandwidthExportOf(config.neighbors(i).link_bandwidth());
    if (!e.ok()) return absl::InvalidArgumentError(absl::StrCat("neighbor ", (*next)[i].Name(), ": ", e.status().message()));
    exports.push_back(*e);
  }
  auto networks = NetworksOf(config);
  if (!networks.ok()) return networks.status();

  // What cannot change while running, field by field; the running values stay.
  std::vector<std::string> restart;
  for (const std::string& f : ChangedFields(config_.router(), config.router())) {
    if (f == "listen") restart.push_back("router.listen (the listening sockets)");
    if (f == "log_level") restart.push_back("router.log_level");
  }
  for (const std::string& f : ChangedFields(config_.multipath(), config.multipath())) {
    restart.push_back(absl::StrCat("multipath.", f, " (the decision process)"));
  }
  for (const std::string& f : ChangedFields(config_.fib(), config.fib())) {
    if (f == "max_weight" || f == "group_budget") continue;  // applied below
    restart.push_back(f == "restart_hold_time" || f == "restart_neighbor_wait" || f == "retain_on_exit"
                          ? absl::StrCat("fib.", f, " (used at start and exit)")
                          : absl::StrCat("fib.", f));
  }
  {
    std::string a, b;
    for (const auto& c : config_.capacity_sources()) a += c.SerializeAsString();
    for (const auto& c : config.capacity_sources()) b += c.SerializeAsString();
    if (a != b) restart.push_back("capacity_sources");
  }

  FlushRibChanges();  // as in FlushPaced: what follows works from the RIB as it is now
  // Neighbors, matched by address (the list's order means nothing).
  absl::flat_hash_map<std::string, int> old_at, new_at;
  for (int i = 0; i < config_.neighbors_size(); ++i) {
    if (auto a = wire::IpAddress::Parse(config_.neighbors(i).address()); a.ok()) old_at[a->ToString()] = i;
  }
  for (int i = 0; i < config.neighbors_size(); ++i) new_at[(*next)[i].Name()] = i;
  std::vector<std::string> removed, added, reset, updated;
  std::vector<std::string> names;
  for (const auto& p : peers_) names.push_back(p->config().Name());
  for (const std::string& name : names) {
    if (new_at.contains(name)) continue;
    log::Info("config reload: neighbor %s removed from the configuration: Cease / Peer De-configured", name);
    RemovePeer(name, wire::NotificationMessage{6, wire::cease::kPeerDeconfigured, {}}, "removed from the configuration");
    removed.push_back(name);
  }
  std::vector<Peer*> to_start;
  for (int i = 0; i < config.neighbors_size(); ++i) {
    PeerConfig& pc = (*next)[i];
    const std::string name = pc.Name();
    Peer* p = FindPeer(name);
    if (p == nullptr) {
      auto fresh = AddPeer(pc, exports[i]);
      if (!fresh.ok()) return fresh.status();
      to_start.push_back(*fresh);
      added.push_back(name);
      log::Info("config reload: neighbor %s added", name);
      continue;
    }
    const config::v1::Neighbor& before = config_.neighbors(old_at.at(name));
    const std::vector<std::string> fields = ChangedFields(before, config.neighbors(i));
    if (!PeerConfig::SameSession(p->config(), pc)) {
      // RFC 4486 §4: Other Configuration Change. Only this session; its routes go and come
      // back with the new session.
      const std::string what = fields.empty() ? "router defaults" : absl::StrJoin(fields, ", ");
      log::Info("config reload: neighbor %s: %s changed: the session restarts (Cease / Other Configuration Change)",
                name, what);
      RemovePeer(name, wire::NotificationMessage{6, wire::cease::kOtherConfigurationChange, {}},
                 absl::StrCat("configuration changed: ", what));
      auto fresh = AddPeer(pc, exports[i]);
      if (!fresh.ok()) return fresh.status();
      to_start.push_back(*fresh);
      reset.push_back(name);
      continue;
    }
    if (!fields.empty()) {
      log::Info("config reload: neighbor %s: %s applied, the session stays", name, absl::StrJoin(fields, ", "));
      updated.push_back(name);
    }
    p->ApplyInPlace(pc);
    // Link-bandwidth export: what the neighbor should have now, bandwidth damping included.
    BandwidthExport& lbx = lb_export_[p->rib_index];
    const rib::LinkBandwidthExport& e = exports[i];
    const bool changed = lbx.config.mode != e.mode || lbx.config.fixed_bps != e.fixed_bps ||
                         lbx.config.reference_bps != e.reference_bps || lbx.config.transitive != e.transitive;
    lbx.config = e;
    if (changed && p->established()) {
      absl::flat_hash_set<wire::Prefix> all;
      rib_->ForEach([&](const wire::Prefix& prefix, const rib::Destination&) { all.insert(prefix); });
      AdvertisePaced(*p, CurrentState(all));
    }
  }
  if (auto st = ApplyGtsmToListeners(); !st.ok()) log::Warning("config reload: %s", st.ToString());

  // Our own networks: the new list is originated, what left it is withdrawn.
  {
    absl::flat_hash_set<wire::Prefix> keep;
    for (const Network& n : *networks) keep.insert(n.nlri.prefix);
    for (const Network& n : networks_) {
      if (!keep.contains(n.nlri.prefix)) rib_->Withdraw(local_index_, std::span(&n.nlri, 1));
    }
    networks_ = *networks;
    for (const Network& n : networks_) Originate(n);  // the RIB ignores an unchanged one
  }

  // Damping, link-bandwidth policy and FIB limits: groups and sessions stay.
  const bool refeed = config.link_bandwidth().SerializeAsString() != config_.link_bandwidth().SerializeAsString() ||
                      config.fib().max_weight() != config_.fib().max_weight() ||
                      config.fib().group_budget() != config_.fib().group_budget();
  FlushRibChanges();
  groups_->Reconfigure(*weights, absl::Now());
  if (refeed) {
    // New policy or limits: every route is weighed again, at once (an operator's change,
    // not the network's, so no hold-down).
    rib::MembersBatch all;
    rib_->ForEach([&](const wire::Prefix& prefix, const rib::Destination&) { all.Add(*rib_, prefix); });
    groups_->Update(all.View(), absl::Now(), /*immediate=*/true);
  }
  FlushFib();
  // The running config is the new one, but for what needs a restart.
  config::v1::Config running = config;
  *running.mutable_router()->mutable_listen() = config_.router().listen();
  running.mutable_router()->set_log_level(config_.router().log_level());
  *running.mutable_multipath() = config_.multipath();
  {
    const uint32_t max_weight = config.fib().max_weight(), budget = config.fib().group_budget();
    *running.mutable_fib() = config_.fib();
    running.mutable_fib()->set_max_weight(max_weight);
    running.mutable_fib()->set_group_budget(budget);
  }
  *running.mutable_capacity_sources() = config_.capacity_sources();
  config_ = std::move(running);
  for (Peer* p : to_start) p->Start();
  RefreshRibMetrics();
  log::Info("config reloaded: %d neighbors added, %d removed, %d restarted, %d changed in place; damping, link "
            "bandwidth, networks, maximum prefixes and FIB limits applied",
            added.size(), removed.size(), reset.size(), updated.size());
  for (const std::string& r : restart) log::Warning("config reload: %s changed: needs a restart of bagd; not applied", r);
  return absl::OkStatus();
}

}  // namespace bagd::daemon

namespace bagd::daemon {

// --- Route refresh (RFC 2918, RFC 7313) ---------------------------------------------------

namespace {
// RFC 7313 §4.2 leaves how long to wait for an EoRR to the implementation. FRR removes the
// stale paths after its stale-path time, 360 s by default; so does bagd.
constexpr auto kStaleRefreshTimeout = std::chrono::seconds(360);
}  // namespace

Speaker::InboundRefresh& Speaker::RefreshOf(const Peer& peer) {
  if (refresh_.size() <= peer.rib_index) refresh_.resize(std::max(adj_out_.size(), size_t{peer.rib_index} + 1));
  return refresh_[peer.rib_index];
}

void Speaker::OnRouteRefresh(Peer& peer, const wire::RouteRefreshMessage& m) {
  if (!peer.negotiated()) return;
  InboundRefresh& in = RefreshOf(peer);
  fsm::InboundRefreshState state;
  for (int f = 0; f < wire::kFamilyCount; ++f) {
    state.end_of_rib[f] = end_of_rib_.contains({peer.rib_index, f});
    state.refreshing[f] = in.stale[f].has_value();
  }
  const fsm::RefreshAction a = fsm::ClassifyRouteRefresh(peer.config().fsm.local, *peer.negotiated(), m, state);
  control::v1::RouteRefreshStatus& st = peer.refresh_status();
  const std::string& name = peer.config().Name();
  switch (a.type) {
    case fsm::RefreshActionType::kIgnore:
      st.set_ignored(st.ignored() + 1);
      log::Warning("neighbor %s: ROUTE-REFRESH %s (AFI %d, SAFI %d) ignored: %s", name,
                   wire::RouteRefreshSubtypeName(m.subtype), m.afi, m.safi, a.reason);
      return;
    case fsm::RefreshActionType::kResend: {
      st.set_requests_received(st.requests_received() + 1);
      if (!a.reason.empty()) log::Info("neighbor %s: route refresh request: %s", name, a.reason);
      const size_t sent = ResendAdjRibOut(peer, a.family, a.enhanced);
      log::Info("neighbor %s: route refresh request for %s: Adj-RIB-Out re-sent, %d prefixes%s", name,
                wire::FamilyName(a.family), sent, a.enhanced ? " between BoRR and EoRR" : "");
      return;
    }
    case fsm::RefreshActionType::kBeginStale:
      st.set_borr_received(st.borr_received() + 1);
      if (!a.reason.empty()) log::Info("neighbor %s: %s", name, a.reason);
      return BeginStale(peer, a.family);
    case fsm::RefreshActionType::kEndStale:
      st.set_eorr_received(st.eorr_received() + 1);
      return EndStale(peer, a.family, /*timed_out=*/false);
  }
}

size_t Speaker::ResendAdjRibOut(Peer& to, wire::Family family, bool enhanced) {
  // From the Adj-RIB-Out as it is now: the RIB's changes not handed on yet go out first (as
  // in FlushPaced), so the answer does not lag behind what the peer would get next anyway.
  FlushRibChanges();
  if (!to.established()) return 0;
  // The answer goes out at once, whatever the advertisement interval (MRAI paces changes,
  // RFC 4271 §9.2.1.1; this is the state the peer already has). Prefixes waiting for the
  // interval to end (and bandwidth changes held by re-advertisement damping) are not in the
  // Adj-RIB-Out yet: they stay waiting and go out when their time comes, so the peer sees
  // exactly the sequence it would have seen without the refresh. The interval's timer is
  // left as it is.
  // RFC 7313 §4: BoRR first and EoRR last, so the peer can drop what we no longer send. Our
  // End-of-RIB went out right after the initial table, so no BoRR precedes it (§4, with
  // Graceful Restart).
  if (enhanced) to.SendRouteRefresh(wire::RouteRefreshMessage::Make(family, wire::route_refresh_subtype::kBorr));
  AnnouncementGroups announce;
  adj_out_[to.rib_index].ForEachIn(family, [&](const wire::Prefix& prefix, const rib::AttrRef& ref) {
    announce.Add(ref, prefix);
  });
  std::vector<wire::Bytes> messages;
  announce.PackFor(to, messages);
  SendPacked(to, std::move(messages));
  if (enhanced) to.SendRouteRefresh(wire::RouteRefreshMessage::Make(family, wire::route_refresh_subtype::kEorr));
  control::v1::RouteRefreshStatus& st = to.refresh_status();
  st.set_adj_rib_out_resends(st.adj_rib_out_resends() + 1);
  st.set_prefixes_resent(st.prefixes_resent() + announce.prefixes());
  return announce.prefixes();
}

void Speaker::BeginStale(Peer& peer, wire::Family family) {
  InboundRefresh& in = RefreshOf(peer);
  const int f = static_cast<int>(family);
  // RFC 7313 §4.2: every path of the peer in the family is stale; each one it announces
  // again is not (NoteRefreshed). A BoRR during a refresh starts it over.
  in.stale[f].emplace(rib_->PathsOf(peer.rib_index, family));
  if (!in.timeout[f]) in.timeout[f] = clock_->NewTimer();
  // `this` and the peer outlive the timer (it is the speaker's, destroyed with it).
  in.timeout[f]->Start(kStaleRefreshTimeout, [this, p = &peer, family] { EndStale(*p, family, /*timed_out=*/true); });
  ShowRefreshing(peer);
  log::Info("neighbor %s: BoRR %s: the neighbor re-sends its routes; %d paths stale until announced again "
            "(removed at EoRR, or in %d s without one)",
            peer.config().Name(), wire::FamilyName(family), in.stale[f]->marked(), kStaleRefreshTimeout.count());
}

void Speaker::NoteRefreshed(const Peer& peer, const wire::UpdateMessage& u) {
  if (refresh_.size() <= peer.rib_index) return;
  InboundRefresh& in = refresh_[peer.rib_index];
  // Per UPDATE on the ingest path: nothing to walk unless the peer is re-sending a family.
  if (std::none_of(in.stale.begin(), in.stale.end(), [](const auto& s) { return s.has_value(); })) return;
  auto refreshed = [&](const std::vector<wire::Nlri>& nlri) {
    for (const wire::Nlri& n : nlri) {
      if (auto& stale = in.stale[static_cast<int>(n.prefix.family())]) stale->Refreshed(n);
    }
  };
  refreshed(u.nlri);
  if (u.attrs.mp_reach) refreshed(u.attrs.mp_reach->nlri);
}

void Speaker::EndStale(Peer& peer, wire::Family family, bool timed_out) {
  InboundRefresh& in = RefreshOf(peer);
  const int f = static_cast<int>(family);
  if (!in.stale[f]) return;
  in.timeout[f]->Stop();
  FlushRibChanges();  // what came before goes out first (as in OnSessionDown)
  rib::StalePaths& stale = *in.stale[f];
  const size_t marked = stale.marked();
  const size_t before = rib_->paths_of(peer.rib_index, family);
  // In slices, as a session loss: a full table gone stale never makes one change set.
  for (auto slice = stale.TakeStale(kFlushSlice); !slice.empty(); slice = stale.TakeStale(kFlushSlice)) {
    rib_->Withdraw(peer.rib_index, slice);
    FlushRibChanges();
  }
  const size_t removed = before - rib_->paths_of(peer.rib_index, family);
  in.stale[f].reset();
  control::v1::RouteRefreshStatus& st = peer.refresh_status();
  st.set_stale_paths_removed(st.stale_paths_removed() + removed);
  if (timed_out) st.set_refreshes_timed_out(st.refreshes_timed_out() + 1);
  ShowRefreshing(peer);
  RefreshCounts(peer);
  RefreshRibMetrics();
  if (timed_out) {
    log::Warning("neighbor %s: no EoRR for %s within %d s of its BoRR: %d stale paths removed (of %d)",
                 peer.config().Name(), wire::FamilyName(family), kStaleRefreshTimeout.count(), removed, marked);
  } else {
    log::Info("neighbor %s: EoRR %s: refresh complete, %d stale paths removed (of %d marked at BoRR)",
              peer.config().Name(), wire::FamilyName(family), removed, marked);
  }
}

void Speaker::ResetRefresh(Peer& peer) {
  InboundRefresh& in = RefreshOf(peer);
  for (int f = 0; f < wire::kFamilyCount; ++f) {
    if (in.timeout[f]) in.timeout[f]->Stop();
    in.stale[f].reset();
  }
  ShowRefreshing(peer);
}

void Speaker::ShowRefreshing(Peer& peer) {
  control::v1::RouteRefreshStatus& st = peer.refresh_status();
  st.clear_refreshing();
  const InboundRefresh& in = RefreshOf(peer);
  for (int f = 0; f < wire::kFamilyCount; ++f) {
    if (in.stale[f]) st.add_refreshing(wire::FamilyName(static_cast<wire::Family>(f)));
  }
}

absl::StatusOr<control::v1::ClearNeighborResponse> Speaker::ClearNeighbor(
    const std::string& address, control::v1::ClearNeighborRequest::Mode mode) {
  using Request = control::v1::ClearNeighborRequest;
  auto a = wire::IpAddress::Parse(address);
  if (!a.ok()) return a.status();
  Peer* p = FindPeer(a->ToString());
  if (p == nullptr) return absl::NotFoundError(absl::StrCat("no neighbor ", address, " is configured"));
  const bool hard = mode == Request::MODE_HARD;
  if (!p->established() || !p->negotiated()) {
    std::string state = fsm::StateName(p->state());
    if (p->admin_down()) absl::StrAppend(&state, ", administratively down");
    if (p->prefix_limit_down()) absl::StrAppend(&state, ", down after exceeding its maximum prefixes");
    return absl::FailedPreconditionError(absl::StrCat("neighbor ", address, " is not Established (", state,
                                                      "): there is no session to ", hard ? "reset" : "refresh"));
  }
  control::v1::ClearNeighborResponse r;
  const std::string& name = p->config().Name();
  if (hard) {
    log::Warning("neighbor %s: administrative reset requested: Cease / Administrative Reset, then a restart", name);
    p->Reset();
    return r;
  }
  const fsm::Negotiated n = *p->negotiated();  // a copy: the re-sends below run RIB work
  const bool in = mode == Request::MODE_SOFT_IN || mode == Request::MODE_SOFT;
  const bool out = mode == Request::MODE_SOFT_OUT || mode == Request::MODE_SOFT;
  if (in && !n.route_refresh) {
    // Nothing is done, not even the outbound half: the operator asked for both.
    return absl::FailedPreconditionError(absl::StrCat(
        "neighbor ", address, " did not offer route refresh (RFC 2918) in its OPEN, so it cannot be asked to re-send "
        "its routes; nothing was done (`bagctl neighbor ", address, " clear` resets the session instead)"));
  }
  for (int f = 0; f < wire::kFamilyCount; ++f) {
    if (!n.families[f] || !in) continue;
    const auto family = static_cast<wire::Family>(f);
    p->SendRouteRefresh(wire::RouteRefreshMessage::Make(family));
    control::v1::RouteRefreshStatus& st = p->refresh_status();
    st.set_requests_sent(st.requests_sent() + 1);
    r.add_refresh_requested(wire::FamilyName(family));
    log::Info("neighbor %s: soft reset in: route refresh request sent for %s", name, wire::FamilyName(family));
  }
  for (int f = 0; f < wire::kFamilyCount; ++f) {
    if (!n.families[f] || !out) continue;
    const auto family = static_cast<wire::Family>(f);
    const size_t sent = ResendAdjRibOut(*p, family, n.enhanced_route_refresh);
    r.add_resent(wire::FamilyName(family));
    r.set_prefixes_resent(r.prefixes_resent() + sent);
    log::Info("neighbor %s: soft reset out: Adj-RIB-Out re-sent for %s, %d prefixes%s", name,
              wire::FamilyName(family), sent, n.enhanced_route_refresh ? " between BoRR and EoRR" : "");
  }
  r.set_enhanced(out && n.enhanced_route_refresh);
  return r;
}

}  // namespace bagd::daemon
