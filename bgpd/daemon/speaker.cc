#include "bgpd/daemon/speaker.h"

#include <chrono>
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
#include "wire/update_packer.h"
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

std::string Canonical(const boost::asio::ip::address& a) {
  if (a.is_v6() && a.to_v6().is_v4_mapped()) {
    return boost::asio::ip::make_address_v4(boost::asio::ip::v4_mapped, a.to_v6()).to_string();
  }
  return a.to_string();
}

}  // namespace

// The advertiser's view of a Peer.
class Speaker::PeerOutbound final : public Outbound {
 public:
  explicit PeerOutbound(Peer& p) : p_(p), name_(p.config().Name()) {}
  const std::string& name() const override { return name_; }
  // Held: after our restart, the initial advertisement waits (Speaker::ReleaseDeferred).
  bool established() const override { return p_.established() && !held; }
  bool held = false;
  bool ebgp() const override { return p_.config().ebgp(); }
  bool family_negotiated(net::Family f) const override {
    const auto& n = p_.negotiated();
    return n && n->families[static_cast<int>(f)];
  }
  wire::CodecContext EncodeContext() const override { return p_.EncodeContext(); }
  std::optional<net::IpAddress> LocalAddress() const override { return p_.LocalAddress(); }
  uint32_t advertisement_interval_s() const override { return p_.config().advertisement_interval_s; }
  void SendUpdates(std::vector<wire::Bytes> messages) override {
    p_.series().UpdatesPacked(messages.size());
    p_.SendUpdates(std::move(messages));
  }
  void SendRouteRefresh(const wire::RouteRefreshMessage& m) override { p_.SendRouteRefresh(m); }
  void Advertised(size_t prefixes) override {
    p_.prefixes_sent = prefixes;
    p_.series().SetPrefixesSent(prefixes);
  }

 private:
  Peer& p_;
  std::string name_;
};

Speaker::Speaker(boost::asio::io_context& io, SpeakerOptions options)
    : io_(io),
      options_(options),
      metrics_(options.metrics),
      own_clock_(options.clock ? nullptr : std::make_unique<AsioClock>(io)),
      clock_(options.clock ? options.clock : own_clock_.get()) {}

Speaker::~Speaker() {
  // The advertiser holds the PeerOutbounds, which hold the Peers: the stages go first.
  pipeline_.reset();
}

absl::Status Speaker::Configure(const config::v1::Config& config) {
  auto peers = PeerConfigs(config);
  if (!peers.ok()) return peers.status();
  auto policies = policy::PolicySet::Compile(config);
  if (!policies.ok()) return policies.status();
  policies_ = std::make_shared<const policy::PolicySet>(*std::move(policies));
  std::vector<NeighborPolicies> chains;
  for (const auto& n : config.neighbors()) {
    auto c = PoliciesOf(config, n, *policies_);
    if (!c.ok()) return c.status();
    chains.push_back(*std::move(c));
  }
  local_as_ = config.router().asn();
  const rib::DecisionConfig decision = DecisionConfigOf(config);
  auto weights = WeightsConfigOf(config, options_.fib_max_weight, options_.fib_max_groups);
  if (!weights.ok()) return weights.status();
  metrics_timer_ = clock_->NewTimer();
  pipeline_ = std::make_unique<Pipeline>(local_as_, decision, *weights, *clock_, options_.fib, metrics_, options_.events);
  config_ = config;
  restart_neighbor_wait_ms_ = int64_t{config.fib().restart_neighbor_wait()} * 1000;
  local_index_ = pipeline_->local_index();
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
    if (auto added = AddPeer(std::move(pc), *lb_export, chains[i]); !added.ok()) return added.status();
  }
  ApplyLocalCapacity(config);
  if (auto st = ApplyGtsmToListeners(); !st.ok()) return st;
  return absl::OkStatus();
}

void Speaker::ApplyLocalCapacity(const config::v1::Config& config) {
  std::vector<std::string> by_peer;
  for (const auto& n : config.neighbors()) {
    if (n.local_capacity_source().empty() || n.local_capacity() == config::v1::LOCAL_CAPACITY_IGNORE) continue;
    auto a = net::IpAddress::Parse(n.address());
    Peer* p = a.ok() ? FindPeer(a->ToString()) : nullptr;
    if (p == nullptr) continue;
    if (by_peer.size() <= p->rib_index) by_peer.resize(p->rib_index + 1);
    by_peer[p->rib_index] = n.local_capacity_source();
  }
  pipeline_->SetLocalCapacitySources(by_peer);
}

rib::HoldDownOutcome Speaker::ObserveLocalCapacity(const std::string& source, double bps) {
  const rib::HoldDownOutcome o = pipeline_->ObserveLocalCapacity(source, bps);
  if (!pipeline_->LocalCapacityInUse(source)) return o;  // only for `networks`: the capacity line says it
  if (o == rib::HoldDownOutcome::kApplied) {
    log::Info("local capacity %s: %s: the weights of the next hops over it follow", source,
              wire::FormatBitsPerSecond(bps));
  } else if (o == rib::HoldDownOutcome::kHeld) {
    log::Info("local capacity %s: %s: held until the hold-down ends", source, wire::FormatBitsPerSecond(bps));
  } else if (o == rib::HoldDownOutcome::kSuppressed) {
    log::Info("local capacity %s: %s: below min_change_percent, the weights stay", source,
              wire::FormatBitsPerSecond(bps));
  }
  return o;
}

absl::StatusOr<Peer*> Speaker::AddPeer(PeerConfig pc, const rib::LinkBandwidthExport& lb_export,
                                       const NeighborPolicies& policies) {
  // TCP-MD5 keys go on every listener of the peer's family (RFC 2385: the kernel checks SYNs).
  if (!pc.password.empty()) {
    for (auto& l : listeners_) {
      if (l->endpoint.address().is_v6() != pc.address.is_v6()) continue;
      if (auto st = SetTcpMd5(l->acceptor.native_handle(), pc.address, pc.password); !st.ok()) {
        return absl::InternalError(absl::StrCat("neighbor ", pc.Name(), ": TCP-MD5 on the listener: ", st.ToString()));
      }
    }
  }
  auto peer = std::make_unique<Peer>(io_, *clock_, std::move(pc), metrics_, this, options_.events);
  rib::PeerInfo info;
  info.source.ebgp = peer->config().ebgp();
  info.source.address = peer->config().address;
  info.asn = peer->config().fsm.local.remote_as;
  info.name = peer->config().Name();
  // A new index even for a neighbor that was here before (removed, or reset by a reload):
  // the RIB keeps an index's paths apart, and a few unused indices cost nothing.
  auto out = std::make_unique<PeerOutbound>(*peer);
  peer->rib_index = pipeline_->AddNeighbor(std::move(info), peer->config().address, *out, policies, lb_export);
  if (outbound_.size() <= peer->rib_index) outbound_.resize(peer->rib_index + 1);
  outbound_[peer->rib_index] = std::move(out);
  Peer* added = peer.get();
  by_address_[peer->config().Name()] = added;
  peers_.push_back(std::move(peer));
  ShowPolicies(*added);
  return added;
}

void Speaker::RemovePeer(const std::string& name, const wire::NotificationMessage& cease, const std::string& why) {
  auto it = std::find_if(peers_.begin(), peers_.end(), [&](const auto& p) { return p->config().Name() == name; });
  if (it == peers_.end()) return;
  Peer& p = **it;
  // The Cease goes out on its connection, which drains by itself; the session loss withdraws
  // the neighbor's routes and clears its state in the advertiser (OnSessionDown).
  p.Stop(cease, why, /*flush=*/true);  // RFC 8538 §5: Peer De-configured as a Hard Reset
  if (!p.config().password.empty()) {
    for (auto& l : listeners_) {
      if (l->endpoint.address().is_v6() != p.config().address.is_v6()) continue;
      (void)SetTcpMd5(l->acceptor.native_handle(), p.config().address, "");  // the key goes with it
    }
  }
  // Paths kept for a restart of it (session down, so OnSessionDown did not run) go too.
  if (p.rib_index < restart_.size() && restart_[p.rib_index].any()) pipeline_->SessionDown(p.rib_index);
  // Every timer of ours that points at it goes with its state.
  pipeline_->RemoveNeighbor(p.rib_index);
  if (p.rib_index < refresh_.size()) refresh_[p.rib_index] = InboundRefresh{};
  if (p.rib_index < restart_.size()) restart_[p.rib_index] = PeerRestart{};
  outbound_[p.rib_index].reset();
  by_address_.erase(name);
  // Its handlers watch its Lifetime: whatever of it is still queued touches nothing.
  peers_.erase(it);
}

std::optional<rib::PeerIndex> Speaker::RibIndexOf(const std::string& canonical_address) const {
  const Peer* p = FindPeer(canonical_address);
  if (p == nullptr) return std::nullopt;
  return p->rib_index;
}

void Speaker::ShowPolicies(Peer& peer) {
  // RFC 8212 §3: say it where an operator looks, when it is the reason nothing flows.
  std::vector<std::string> notes;
  for (int f = 0; f < net::kFamilyCount; ++f) {
    if (!peer.config().fsm.local.families[f]) continue;
    const char* family = net::FamilyName(static_cast<net::Family>(f));
    if (pipeline_->core().import_chain(peer.rib_index, static_cast<net::Family>(f)).rejects_everything()) {
      notes.push_back(absl::StrCat(family, ": no import policy and default_import REJECT (RFC 8212): no route from this "
                                   "neighbor is accepted"));
    }
    const ExportConfig* ex = pipeline_->advertiser().export_config(peer.rib_index);
    if (ex != nullptr && ex->chains[f].rejects_everything()) {
      notes.push_back(absl::StrCat(family, ": no export policy and default_export REJECT (RFC 8212): nothing is "
                                   "advertised to this neighbor"));
    }
  }
  peer.set_policy_notes(notes);
  if (peer.established()) {  // at session up (and a reload while up): the log says why
    for (const std::string& note : notes) log::Warning("neighbor %s: %s", peer.config().Name(), note);
  }
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
  if (!networks_.empty() || !api_networks_.empty()) {
    // Our own routes: ORIGIN IGP, empty AS_PATH; the next hop is set per peer on export.
    // A configured link bandwidth rides along as the community our neighbors see (their
    // export settings decide its form).
    for (const Network& n : networks_) Originate(n);
    for (const Network& n : api_networks_) Originate(n);
    // Nobody is Established yet: the initial dumps carry them; the weights stage gets them.
    pipeline_->advertiser().Flush();
    log::Info("originating %d prefixes", networks_.size());
  }
  started_ = true;
  started_ms_ = clock_->SteadyMs();
  if (options_.fib != nullptr && options_.restart.restarting) {
    // RFC 4724 §4.1's Selection_Deferral_Timer: the FIB's own bound on the wait.
    deferral_timer_ = clock_->NewTimer();
    deferral_timer_->Start(std::chrono::seconds(config_.fib().restart_hold_time()),
                           [this] { ReleaseDeferred("fib.restart_hold_time passed"); });
    log::Info("graceful restart: bagd restarted with its forwarding state in the kernel (ipv4-unicast %s, "
              "ipv6-unicast %s): R set in OPENs until the initial tables are in",
              options_.restart.forwarding_preserved[0] ? "kept" : "none", options_.restart.forwarding_preserved[1] ? "kept" : "none");
  }
  if (options_.fib != nullptr) {
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
  std::optional<double> bps = n.link_bandwidth_bps;
  if (!n.capacity_source.empty()) {
    auto it = originated_bps_.find(n.capacity_source);
    bps = it == originated_bps_.end() ? std::nullopt : std::optional<double>(it->second);
  }
  pipeline_->core().Originate(local_index_, n.nlri, bps);
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
  if (auto a = net::IpAddress::Parse(filter); a.ok()) canonical = a->ToString();
  for (const auto& p : peers_) {
    if (!filter.empty() && p->config().Name() != canonical) continue;
    out.push_back(p->Status());
    FillGracefulRestart(*p, *out.back().mutable_graceful_restart());
  }
  return out;
}

absl::Status Speaker::ShutdownNeighbor(const std::string& address, const std::string& message) {
  auto a = net::IpAddress::Parse(address);
  if (!a.ok()) return a.status();
  Peer* p = FindPeer(a->ToString());
  if (p == nullptr) return absl::NotFoundError(absl::StrCat("no neighbor ", address, " is configured"));
  if (message.size() > 255) return absl::InvalidArgumentError("shutdown message longer than 255 octets (RFC 9003)");
  p->Shutdown(message);
  // Down by the operator: a restart's stale paths are not waited for any longer.
  if (RestartOf(*p).any()) SweepAllStale(*p, "shutdown", "administrative shutdown");
  return absl::OkStatus();
}

absl::Status Speaker::EnableNeighbor(const std::string& address) {
  auto a = net::IpAddress::Parse(address);
  if (!a.ok()) return a.status();
  Peer* p = FindPeer(a->ToString());
  if (p == nullptr) return absl::NotFoundError(absl::StrCat("no neighbor ", address, " is configured"));
  p->Enable();
  return absl::OkStatus();
}

void Speaker::RefreshCounts(Peer& p) {
  const rib::Rib& rib = pipeline_->core().rib();
  p.prefixes_received = rib.paths_of(p.rib_index);
  p.prefixes_rejected = pipeline_->core().rejected_by_policy(p.rib_index);
  for (int f = 0; f < net::kFamilyCount; ++f) {
    const auto fam = static_cast<net::Family>(f);
    p.prefixes_received_by_family[f] = rib.paths_of(p.rib_index, fam);
  }
  // bagd_prefixes_received follows with the RIB gauges (RefreshRibMetrics), not per UPDATE.
}

void Speaker::RefreshRibMetrics() {
  if (!metrics_) return;
  const rib::Rib& rib = pipeline_->core().rib();
  for (int f = 0; f < net::kFamilyCount; ++f) {
    const auto fam = static_cast<net::Family>(f);
    metrics_->RibPrefixes(net::FamilyName(fam)).Set(static_cast<double>(rib.prefix_count(fam)));
    size_t paths = 0;
    for (rib::PeerIndex i = 0; i < rib.peer_count(); ++i) paths += rib.paths_of(i, fam);
    metrics_->RibPaths(net::FamilyName(fam)).Set(static_cast<double>(paths));
  }
  metrics_->AttributeSets().Set(static_cast<double>(pipeline_->core().store().size()));
  if (policies_) SyncPolicyMetrics(*policies_, *metrics_, policy_hits_synced_);
  for (const auto& p : peers_) {
    for (int f = 0; f < net::kFamilyCount; ++f) {
      const auto fam = static_cast<net::Family>(f);
      p->series().SetPrefixes(fam, rib.paths_of(p->rib_index, fam));
    }
    if (p->rib_index >= restart_.size()) continue;
    const PeerRestart& gr = restart_[p->rib_index];
    for (int f = 0; f < net::kFamilyCount; ++f) {
      if (!gr.stale[f] && gr.restarts == 0) continue;  // a neighbor that never restarted shows nothing
      metrics_->GracefulRestartStalePaths(p->config().Name(), net::FamilyName(static_cast<net::Family>(f)))
          .Set(gr.stale[f] ? static_cast<double>(gr.stale[f]->stale()) : 0.0);
    }
  }
  auto& runs = metrics_->DecisionRuns();
  runs.Increment(static_cast<double>(rib.decision_runs()) - runs.Value());
  update_seconds_.PublishTo(metrics_->UpdateSeconds());
}

void Speaker::OnSessionUp(Peer& peer) {
  ResetRefresh(peer);
  RestartedPeerUp(peer);
  // After our restart, a helper (it kept our routes) gets our table once it is whole: an
  // early End-of-RIB would make it drop what we have not re-learned yet (RFC 4724 §4.1).
  const auto& n = peer.negotiated();
  PeerOutbound& out = *outbound_[peer.rib_index];
  // A peer that sent the capability is a helper for the families we listed (its own list
  // is about its forwarding state, not ours); one without it drops our routes anyway.
  const fsm::LocalSettings& local = peer.config().fsm.local;
  bool listed = false;
  for (int f = 0; f < net::kFamilyCount; ++f) listed |= n && n->families[f] && local.graceful_restart_families[f];
  out.held = Restarting() && n && n->peer_graceful_restart.offered && local.graceful_restart_time > 0 && listed;
  if (out.held) {
    log::Info("neighbor %s: initial advertisement deferred until bagd's tables are in (it restarted; the neighbor "
              "keeps our routes meanwhile)", peer.config().Name());
  }
  pipeline_->SessionUp(peer.rib_index, n ? n->peer_router_id : 0);
  ShowPolicies(peer);
}

namespace {
// How long the RIB gauges may lag behind a burst of UPDATEs.
constexpr auto kMetricsDelay = std::chrono::milliseconds(2);
// A refresh's stale paths are withdrawn in slices, as a session loss (pipeline.cc).
constexpr size_t kFlushSlice = 65536;
// Changes that make a batch worth sending on its own (a packed UPDATE holds ~1000).
constexpr size_t kFlushChanges = 256;
}  // namespace

void Speaker::OnSessionDown(Peer& peer) {
  outbound_[peer.rib_index]->held = false;
  if (stopping_) {
    // bagd exits (SIGTERM): nothing is withdrawn on the way out. The kernel keeps the routes
    // (fib.retain_on_exit) for the next run to adopt, and its R bit then says so; neighbors
    // that negotiated RFC 8538 keep bagd's routes across the Cease (a planned restart).
    return;
  }
  // RFC 4724 §4.2: a peer that negotiated graceful restart and dropped without a
  // NOTIFICATION is restarting: its paths stay, stale, in the families it listed.
  const auto& n = peer.negotiated();
  std::array<bool, net::kFamilyCount> retain{};
  bool keep = false;
  if (n && peer.last_down_graceful() && !stopping_) {
    retain = n->graceful_restart_retain;
    keep = std::any_of(retain.begin(), retain.end(), [](bool b) { return b; });
  }
  if (keep) {
    KeepStale(peer, retain, n->peer_graceful_restart.restart_time);
  } else {
    PeerRestart& gr = RestartOf(peer);
    const bool had = gr.any();
    pipeline_->SessionDown(peer.rib_index);  // every path, stale or not
    for (auto& st : gr.stale) st.reset();
    if (gr.restart_timer) gr.restart_timer->Stop();
    if (gr.stale_timer) gr.stale_timer->Stop();
    gr.restarting = false;
    if (had) log::Info("neighbor %s: session ended during its graceful restart: its stale paths are gone too", peer.config().Name());
  }
  ResetRefresh(peer);
  RefreshCounts(peer);
  RefreshRibMetrics();
  // Its End-of-RIB counted for the session that ended; a new session sends its own.
  for (int f = 0; f < net::kFamilyCount; ++f) end_of_rib_.erase({peer.rib_index, f});
  CheckConvergence();  // it may have been the one the others waited for
}

void Speaker::OnUpdate(Peer& peer, const wire::UpdateMessage& u) {
  const rib::PeerIndex idx = peer.rib_index;
  if (auto eor = u.EndOfRib()) {
    // RFC 4724: the peer's initial table is complete.
    const int64_t now = clock_->WallMs();
    const double after_s = static_cast<double>(now - peer.established_since_ms()) / 1000.0;
    log::Event(log::Level::kInfo,
               {{"neighbor", peer.config().Name()}, {"event", "end-of-rib"}, {"family", net::FamilyName(*eor)}},
               "neighbor %s: End-of-RIB %s: %d paths, %.3fs after Established", peer.config().Name(),
               net::FamilyName(*eor), pipeline_->core().rib().paths_of(idx, *eor), after_s);
    if (metrics_) metrics_->EndOfRibSeconds().Observe(after_s);
    end_of_rib_.insert({idx, static_cast<int>(*eor)});
    FlushRibChanges();  // the table so far, before convergence releases the FIB
    // RFC 4724 §4.2: what the restarted peer did not announce again is gone.
    if (RestartOf(peer).stale[static_cast<int>(*eor)]) {
      SweepStale(peer, *eor, "end_of_rib", "End-of-RIB");
    }
    CheckConvergence();
    return;
  }
  NoteRefreshed(peer, u);
  NoteGracefulRefresh(peer, u);
  // bagd_update_processing_seconds times one UPDATE in kUpdateSampleEvery: two precise clock
  // reads for every UPDATE were 7 % of a table sent one prefix per UPDATE.
  if (metrics_ && ++updates_seen_ % kUpdateSampleEvery == 0) {
    const auto t0 = std::chrono::steady_clock::now();
    pipeline_->core().Ingest(idx, u);
    update_seconds_.Observe(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  } else {
    pipeline_->core().Ingest(idx, u);
  }
  RefreshCounts(peer);
  // A packed UPDATE's changes go out at once, in the order they came (no sort needed);
  // small UPDATEs (one prefix each, or a few) are coalesced over what was already read.
  if (pipeline_->core().rib().pending_changes() >= kFlushChanges) {
    pipeline_->advertiser().Flush();
    ScheduleMetrics();
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
  pipeline_->advertiser().Flush();
  ScheduleMetrics();
}

void Speaker::ScheduleMetrics() {
  // The RIB-wide gauges (and the policy hit counters, the UPDATE histogram) follow at most
  // every few milliseconds, as the weights batch does, not with every read of UPDATEs.
  if (metrics_ != nullptr && !metrics_timer_->running()) {
    metrics_timer_->Start(kMetricsDelay, [this] { RefreshRibMetrics(); });
  }
}

void Speaker::CheckConvergence() {
  // Shutting down, every neighbor goes admin down: that is no convergence, and the FIB
  // must not sweep what the next run will claim.
  if (options_.fib == nullptr || converged_ || stopping_) return;
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
    for (int f = 0; f < net::kFamilyCount; ++f) {
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
  converged_ = true;
  pipeline_->advertiser().Flush();
  pipeline_->weights().RunNow();
  options_.fib->InitialTablesIn();
  ReleaseDeferred("the initial tables are in");
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

absl::Status Speaker::Reload(const config::v1::Config& config, std::vector<std::string>* needs_restart) {
  // Everything is checked before anything changes: an error keeps the running config whole.
  auto weights = WeightsConfigOf(config, options_.fib_max_weight, options_.fib_max_groups);
  if (!weights.ok()) return weights.status();
  auto compiled = policy::PolicySet::Compile(config);
  if (!compiled.ok()) return compiled.status();
  auto policies = std::make_shared<const policy::PolicySet>(*std::move(compiled));
  std::vector<NeighborPolicies> chains;
  for (const auto& n : config.neighbors()) {
    auto c = PoliciesOf(config, n, *policies);
    if (!c.ok()) return c.status();
    chains.push_back(*std::move(c));
  }
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
    if (f == "max_weight" || f == "group_budget" || f == "max_groups" || f == "group_reserve" ||
        f == "group_merge" || f == "group_merge_weight") {
      continue;  // applied below, in place (max_groups to or from 0 too: the registry adopts or releases)
    }
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

  FlushRibChanges();  // what came before the reload goes out under the old config
  // Neighbors, matched by address (the list's order means nothing).
  absl::flat_hash_map<std::string, int> old_at, new_at;
  for (int i = 0; i < config_.neighbors_size(); ++i) {
    if (auto a = net::IpAddress::Parse(config_.neighbors(i).address()); a.ok()) old_at[a->ToString()] = i;
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
      auto fresh = AddPeer(pc, exports[i], chains[i]);
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
      auto fresh = AddPeer(pc, exports[i], chains[i]);
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
    if (p->admin_down() && RestartOf(*p).any()) SweepAllStale(*p, "shutdown", "administrative shutdown");
    // The new chains (always: they point into the new policy set) and export settings. A
    // changed import chain re-evaluates what the neighbor sent, without a reset; a changed
    // export side is exported again and only the differences go out.
    const Pipeline::Reconfigured r = pipeline_->ReconfigureNeighbor(p->rib_index, chains[i], exports[i]);
    if (r.import_changed && p->established()) {
      log::Info("config reload: neighbor %s: import policy changed: %s", name, ReapplyImport(*p, r.had_stored_routes));
    }
    if (r.export_changed && p->established()) {
      log::Info("config reload: neighbor %s: export policy or link bandwidth changed: routes exported again, only the "
                "differences sent", name);
    }
    ShowPolicies(*p);
  }
  if (auto st = ApplyGtsmToListeners(); !st.ok()) log::Warning("config reload: %s", st.ToString());

  // Our own networks: the new list is originated, what left it is withdrawn.
  {
    absl::flat_hash_set<net::Prefix> keep;
    for (const Network& n : *networks) keep.insert(n.nlri.prefix);
    // A prefix the file now has is the file's: the control API's entry for it goes.
    std::erase_if(api_networks_, [&](const Network& n) {
      if (!keep.contains(n.nlri.prefix)) return false;
      log::Info("config reload: network %s is in the file now; the one added over the control API is replaced",
                n.nlri.prefix.ToString());
      return true;
    });
    for (const Network& n : api_networks_) keep.insert(n.nlri.prefix);
    for (const Network& n : networks_) {
      if (!keep.contains(n.nlri.prefix)) pipeline_->core().WithdrawOwn(local_index_, n.nlri);
    }
    networks_ = *networks;
    for (const Network& n : networks_) Originate(n);  // the RIB ignores an unchanged one
  }

  // Damping, link-bandwidth policy and FIB limits: groups and sessions stay.
  const bool refeed = ReweighOnReload(config_, config);
  FlushRibChanges();
  // Local capacity: which neighbors are capped by which source (re-weighed at once if that
  // changed), and the sources' pending recoveries timed by the new damping.
  pipeline_->ReconfigureLocalCapacity(pipeline_->weights().groups().config().damping, weights->damping);
  ApplyLocalCapacity(config);
  // New policy or limits: every route is weighed again, at once (an operator's change, not
  // the network's, so no hold-down).
  pipeline_->weights().Reconfigure(*weights, refeed);
  // Every chain now points into the new set; the old one goes, its last hits counted.
  if (metrics_ && policies_) SyncPolicyMetrics(*policies_, *metrics_, policy_hits_synced_);
  policy_hits_synced_.Reloaded();
  policies_ = std::move(policies);
  // The running config is the new one, but for what needs a restart.
  config::v1::Config running = config;
  *running.mutable_router()->mutable_listen() = config_.router().listen();
  running.mutable_router()->set_log_level(config_.router().log_level());
  *running.mutable_multipath() = config_.multipath();
  {
    const uint32_t max_weight = config.fib().max_weight(), budget = config.fib().group_budget();
    const config::v1::Fib next = config.fib();
    *running.mutable_fib() = config_.fib();
    running.mutable_fib()->set_max_weight(max_weight);
    running.mutable_fib()->set_group_budget(budget);
    running.mutable_fib()->set_max_groups(next.max_groups());
    if (next.has_group_reserve()) {
      running.mutable_fib()->set_group_reserve(next.group_reserve());
    } else {
      running.mutable_fib()->clear_group_reserve();
    }
    running.mutable_fib()->set_group_merge(next.group_merge());
    running.mutable_fib()->set_group_merge_weight(next.group_merge_weight());
  }
  *running.mutable_capacity_sources() = config_.capacity_sources();
  config_ = std::move(running);
  for (Peer* p : to_start) p->Start();
  RefreshRibMetrics();
  log::Info("config reloaded: %d neighbors added, %d removed, %d restarted, %d changed in place; policies, "
            "damping, link bandwidth, networks, maximum prefixes and FIB limits applied",
            added.size(), removed.size(), reset.size(), updated.size());
  for (const std::string& r : restart) log::Warning("config reload: %s changed: needs a restart of bagd; not applied", r);
  if (needs_restart != nullptr) *needs_restart = restart;
  return absl::OkStatus();
}

absl::StatusOr<bool> Speaker::AddNetwork(const Network& network) {
  const net::Prefix& prefix = network.nlri.prefix;
  for (const Network& n : networks_) {
    if (n.nlri.prefix == prefix) {
      return absl::AlreadyExistsError(absl::StrCat(prefix.ToString(),
                                                   " is in the configuration's networks: change it there (and reload)"));
    }
  }
  auto it = std::find_if(api_networks_.begin(), api_networks_.end(),
                         [&](const Network& n) { return n.nlri.prefix == prefix; });
  const bool replaced = it != api_networks_.end();
  if (replaced) {
    *it = network;
  } else {
    api_networks_.push_back(network);
  }
  log::Info("control API: originating %s%s%s", prefix.ToString(),
            network.link_bandwidth_bps ? absl::StrCat(" with link bandwidth ", *network.link_bandwidth_bps / 1e9, " Gbit/s")
                                       : std::string(),
            replaced ? " (replacing the one added before)" : "");
  if (started_) {
    Originate(network);
    FlushRibChanges();
  }
  return replaced;
}

absl::Status Speaker::DeleteNetwork(const net::Prefix& prefix) {
  auto it = std::find_if(api_networks_.begin(), api_networks_.end(),
                         [&](const Network& n) { return n.nlri.prefix == prefix; });
  if (it == api_networks_.end()) {
    for (const Network& n : networks_) {
      if (n.nlri.prefix == prefix) {
        return absl::FailedPreconditionError(absl::StrCat(
            prefix.ToString(), " is in the configuration's networks: remove it from the file (and reload)"));
      }
    }
    return absl::NotFoundError(absl::StrCat("no network ", prefix.ToString(), " was added over the control API"));
  }
  const net::Nlri nlri = it->nlri;
  api_networks_.erase(it);
  log::Info("control API: withdrawing %s", prefix.ToString());
  if (started_) {
    pipeline_->core().WithdrawOwn(local_index_, nlri);
    FlushRibChanges();
  }
  return absl::OkStatus();
}


std::string Speaker::ReapplyImport(Peer& peer, bool had_stored) {
  const rib::PeerIndex idx = peer.rib_index;
  const auto& n = peer.negotiated();
  std::vector<std::string> done;
  for (int f = 0; f < net::kFamilyCount; ++f) {
    if (!n || !n->families[f]) continue;
    const auto family = static_cast<net::Family>(f);
    if (had_stored && pipeline_->core().received(idx) != nullptr) {
      // Soft reconfiguration inbound: from the routes as received, no word to the neighbor.
      const size_t evaluated = pipeline_->core().Reimport(idx, family);
      FlushRibChanges();
      done.push_back(absl::StrCat(net::FamilyName(family), ": ", evaluated, " stored routes evaluated again"));
    } else if (n->route_refresh) {
      RequestRefresh(peer, family);
      done.push_back(absl::StrCat(net::FamilyName(family), ": route refresh requested"));
    } else {
      done.push_back(absl::StrCat(net::FamilyName(family),
                                  ": applies to routes received from now on (no route refresh, no "
                                  "soft_reconfiguration_inbound; `bagctl neighbor ",
                                  peer.config().Name(), " clear` applies it to all)"));
    }
  }
  RefreshCounts(peer);
  return done.empty() ? "no family negotiated" : absl::StrJoin(done, "; ");
}


// --- Route refresh (RFC 2918, RFC 7313) ---------------------------------------------------

namespace {
// RFC 7313 §4.2 leaves how long to wait for an EoRR to the implementation. FRR removes the
// stale paths after its stale-path time, 360 s by default; so does bagd.
constexpr auto kStaleRefreshTimeout = std::chrono::seconds(360);
}  // namespace

Speaker::InboundRefresh& Speaker::RefreshOf(const Peer& peer) {
  if (refresh_.size() <= peer.rib_index) refresh_.resize(std::max(size_t{pipeline_->core().rib().peer_count()}, size_t{peer.rib_index} + 1));
  return refresh_[peer.rib_index];
}

void Speaker::OnRouteRefresh(Peer& peer, const wire::RouteRefreshMessage& m) {
  if (!peer.negotiated()) return;
  InboundRefresh& in = RefreshOf(peer);
  fsm::InboundRefreshState state;
  for (int f = 0; f < net::kFamilyCount; ++f) {
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
                net::FamilyName(a.family), sent, a.enhanced ? " between BoRR and EoRR" : "");
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

void Speaker::RequestRefresh(Peer& peer, net::Family family) {
  peer.SendRouteRefresh(wire::RouteRefreshMessage::Make(family));
  control::v1::RouteRefreshStatus& st = peer.refresh_status();
  st.set_requests_sent(st.requests_sent() + 1);
}

size_t Speaker::ResendAdjRibOut(Peer& to, net::Family family, bool enhanced) {
  const size_t sent = pipeline_->advertiser().Resend(to.rib_index, family, enhanced);
  control::v1::RouteRefreshStatus& st = to.refresh_status();
  st.set_adj_rib_out_resends(st.adj_rib_out_resends() + 1);
  st.set_prefixes_resent(st.prefixes_resent() + sent);
  return sent;
}

void Speaker::BeginStale(Peer& peer, net::Family family) {
  InboundRefresh& in = RefreshOf(peer);
  const int f = static_cast<int>(family);
  // RFC 7313 §4.2: every path of the peer in the family is stale; each one it announces
  // again is not (NoteRefreshed). A BoRR during a refresh starts it over.
  in.stale[f].emplace(pipeline_->core().rib().PathsOf(peer.rib_index, family));
  if (!in.timeout[f]) in.timeout[f] = clock_->NewTimer();
  // `this` and the peer outlive the timer (it is the speaker's, destroyed with it).
  in.timeout[f]->Start(kStaleRefreshTimeout, [this, p = &peer, family] { EndStale(*p, family, /*timed_out=*/true); });
  ShowRefreshing(peer);
  log::Info("neighbor %s: BoRR %s: the neighbor re-sends its routes; %d paths stale until announced again "
            "(removed at EoRR, or in %d s without one)",
            peer.config().Name(), net::FamilyName(family), in.stale[f]->marked(), kStaleRefreshTimeout.count());
}

void Speaker::NoteRefreshed(const Peer& peer, const wire::UpdateMessage& u) {
  if (refresh_.size() <= peer.rib_index) return;
  InboundRefresh& in = refresh_[peer.rib_index];
  // Per UPDATE on the ingest path: nothing to walk unless the peer is re-sending a family.
  if (std::none_of(in.stale.begin(), in.stale.end(), [](const auto& s) { return s.has_value(); })) return;
  auto refreshed = [&](const std::vector<net::Nlri>& nlri) {
    for (const net::Nlri& n : nlri) {
      if (auto& stale = in.stale[static_cast<int>(n.prefix.family())]) stale->Refreshed(n);
    }
  };
  refreshed(u.nlri);
  if (u.attrs.mp_reach) refreshed(u.attrs.mp_reach->nlri);
}

void Speaker::EndStale(Peer& peer, net::Family family, bool timed_out) {
  InboundRefresh& in = RefreshOf(peer);
  const int f = static_cast<int>(family);
  if (!in.stale[f]) return;
  in.timeout[f]->Stop();
  FlushRibChanges();  // what came before goes out first (as in OnSessionDown)
  rib::StalePaths& stale = *in.stale[f];
  const size_t marked = stale.marked();
  const size_t before = pipeline_->core().rib().paths_of(peer.rib_index, family);
  // In slices, as a session loss: a full table gone stale never makes one change set.
  for (auto slice = stale.TakeStale(kFlushSlice); !slice.empty(); slice = stale.TakeStale(kFlushSlice)) {
    pipeline_->core().Withdraw(peer.rib_index, slice);
    FlushRibChanges();
  }
  const size_t removed = before - pipeline_->core().rib().paths_of(peer.rib_index, family);
  in.stale[f].reset();
  control::v1::RouteRefreshStatus& st = peer.refresh_status();
  st.set_stale_paths_removed(st.stale_paths_removed() + removed);
  if (timed_out) st.set_refreshes_timed_out(st.refreshes_timed_out() + 1);
  ShowRefreshing(peer);
  RefreshCounts(peer);
  RefreshRibMetrics();
  if (timed_out) {
    log::Warning("neighbor %s: no EoRR for %s within %d s of its BoRR: %d stale paths removed (of %d)",
                 peer.config().Name(), net::FamilyName(family), kStaleRefreshTimeout.count(), removed, marked);
  } else {
    log::Info("neighbor %s: EoRR %s: refresh complete, %d stale paths removed (of %d marked at BoRR)",
              peer.config().Name(), net::FamilyName(family), removed, marked);
  }
}

void Speaker::ResetRefresh(Peer& peer) {
  InboundRefresh& in = RefreshOf(peer);
  for (int f = 0; f < net::kFamilyCount; ++f) {
    if (in.timeout[f]) in.timeout[f]->Stop();
    in.stale[f].reset();
  }
  ShowRefreshing(peer);
}

void Speaker::ShowRefreshing(Peer& peer) {
  control::v1::RouteRefreshStatus& st = peer.refresh_status();
  st.clear_refreshing();
  const InboundRefresh& in = RefreshOf(peer);
  for (int f = 0; f < net::kFamilyCount; ++f) {
    if (in.stale[f]) st.add_refreshing(net::FamilyName(static_cast<net::Family>(f)));
  }
}

absl::StatusOr<control::v1::ClearNeighborResponse> Speaker::ClearNeighbor(
    const std::string& address, control::v1::ClearNeighborRequest::Mode mode) {
  using Request = control::v1::ClearNeighborRequest;
  auto a = net::IpAddress::Parse(address);
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
  for (int f = 0; f < net::kFamilyCount; ++f) {
    if (!n.families[f] || !in) continue;
    const auto family = static_cast<net::Family>(f);
    RequestRefresh(*p, family);
    r.add_refresh_requested(net::FamilyName(family));
    log::Info("neighbor %s: soft reset in: route refresh request sent for %s", name, net::FamilyName(family));
  }
  for (int f = 0; f < net::kFamilyCount; ++f) {
    if (!n.families[f] || !out) continue;
    const auto family = static_cast<net::Family>(f);
    const size_t sent = ResendAdjRibOut(*p, family, n.enhanced_route_refresh);
    r.add_resent(net::FamilyName(family));
    r.set_prefixes_resent(r.prefixes_resent() + sent);
    log::Info("neighbor %s: soft reset out: Adj-RIB-Out re-sent for %s, %d prefixes%s", name,
              net::FamilyName(family), sent, n.enhanced_route_refresh ? " between BoRR and EoRR" : "");
  }
  r.set_enhanced(out && n.enhanced_route_refresh);
  return r;
}

}  // namespace bagd::daemon

namespace bagd::daemon {

// --- Graceful restart (RFC 4724) -----------------------------------------------------------

Speaker::PeerRestart& Speaker::RestartOf(const Peer& peer) {
  if (restart_.size() <= peer.rib_index) restart_.resize(size_t{peer.rib_index} + 1);
  return restart_[peer.rib_index];
}

bool Speaker::Restarting() const {
  return options_.fib != nullptr && options_.restart.restarting && !converged_ && !deferral_over_;
}

fsm::RestartState Speaker::RestartStateFor(const Peer& peer) const {
  (void)peer;
  fsm::RestartState r;
  // R only while bagd is still restarting (its tables not in yet): a later session reset is
  // not a restart of bagd. F as the FIB found it at start: the kernel kept bagd's routes.
  r.restarting = Restarting();
  r.forwarding_preserved = options_.fib != nullptr ? options_.restart.forwarding_preserved
                                                   : std::array<bool, net::kFamilyCount>{};
  return r;
}

bool Speaker::DefersEndOfRib(const Peer& peer) const {
  return peer.rib_index < outbound_.size() && outbound_[peer.rib_index] && outbound_[peer.rib_index]->held;
}

void Speaker::ReleaseDeferred(const char* why) {
  if (deferral_over_) return;
  deferral_over_ = true;
  if (deferral_timer_) deferral_timer_->Stop();
  FlushRibChanges();
  for (auto& p : peers_) {
    PeerOutbound* out = p->rib_index < outbound_.size() ? outbound_[p->rib_index].get() : nullptr;
    if (out == nullptr || !out->held) continue;
    out->held = false;
    if (!p->established()) continue;
    pipeline_->advertiser().SessionUp(p->rib_index);  // the whole table now, then End-of-RIB
    p->SendEndOfRib();
    log::Info("neighbor %s: deferred initial advertisement sent (%s), then End-of-RIB", p->config().Name(), why);
  }
}

void Speaker::KeepStale(Peer& peer, const std::array<bool, net::kFamilyCount>& retain, uint16_t restart_time_s) {
  PeerRestart& gr = RestartOf(peer);
  const rib::PeerIndex idx = peer.rib_index;
  const std::string& name = peer.config().Name();
  FlushRibChanges();
  std::vector<std::string> kept;
  size_t marked = 0;
  for (int f = 0; f < net::kFamilyCount; ++f) {
    const auto family = static_cast<net::Family>(f);
    std::vector<net::Nlri> paths = pipeline_->core().rib().PathsOf(idx, family);
    if (retain[f]) {
      // Every path of the family, also those announced again after an earlier restart whose
      // End-of-RIB never came: they are all the peer's previous state now.
      gr.stale[f].emplace(std::move(paths));
      marked += gr.stale[f]->marked();
      kept.push_back(net::FamilyName(family));
      continue;
    }
    gr.stale[f].reset();
    // A family without graceful restart: its paths go now, in slices.
    for (size_t at = 0; at < paths.size(); at += kFlushSlice) {
      const size_t n = std::min(kFlushSlice, paths.size() - at);
      pipeline_->core().Withdraw(idx, std::span<const net::Nlri>(paths.data() + at, n));
      FlushRibChanges();
    }
  }
  pipeline_->SessionSuspended(idx);
  gr.restarting = true;
  ++gr.restarts;
  if (!gr.restart_timer) gr.restart_timer = clock_->NewTimer();
  if (!gr.stale_timer) gr.stale_timer = clock_->NewTimer();
  gr.stale_timer->Stop();
  gr.deadline_ms = clock_->WallMs() + int64_t{restart_time_s} * 1000;
  // The timer is the speaker's (destroyed with it, or reset by RemovePeer with the peer).
  gr.restart_timer->Start(std::chrono::seconds(restart_time_s), [this, p = &peer, restart_time_s] {
    RestartOf(*p).timers_expired++;
    SweepAllStale(*p, "restart_timer",
                  absl::StrCat("the session was not back within its restart time (", restart_time_s, " s)"));
    RestartOf(*p).restarting = false;
  });
  if (metrics_) metrics_->GracefulRestartEvents(name, "restart").Increment();
  log::Warning("neighbor %s: session lost without a NOTIFICATION: graceful restart (RFC 4724), %d paths kept as "
               "stale in %s for up to %d s; the FIB is unchanged",
               name, marked, absl::StrJoin(kept, ", "), restart_time_s);
}

void Speaker::SweepStale(Peer& peer, net::Family family, const char* event, const std::string& why) {
  PeerRestart& gr = RestartOf(peer);
  const int f = static_cast<int>(family);
  if (!gr.stale[f]) return;
  FlushRibChanges();
  rib::StalePaths& stale = *gr.stale[f];
  const size_t before = pipeline_->core().rib().paths_of(peer.rib_index, family);
  for (auto slice = stale.TakeStale(kFlushSlice); !slice.empty(); slice = stale.TakeStale(kFlushSlice)) {
    pipeline_->core().Withdraw(peer.rib_index, slice);
    FlushRibChanges();
  }
  const size_t removed = before - pipeline_->core().rib().paths_of(peer.rib_index, family);
  const size_t marked = stale.marked();
  gr.stale[f].reset();
  gr.removed += removed;
  if (!gr.any()) {
    if (gr.stale_timer) gr.stale_timer->Stop();
    if (gr.restart_timer) gr.restart_timer->Stop();
  }
  if (metrics_) metrics_->GracefulRestartEvents(peer.config().Name(), event).Increment();
  RefreshCounts(peer);
  RefreshRibMetrics();
  log::Info("neighbor %s: graceful restart %s: %s: %d stale paths removed (of %d kept)", peer.config().Name(),
            net::FamilyName(family), why, removed, marked);
}

void Speaker::SweepAllStale(Peer& peer, const char* event, const std::string& why) {
  for (int f = 0; f < net::kFamilyCount; ++f) SweepStale(peer, static_cast<net::Family>(f), event, why);
}

void Speaker::RestartedPeerUp(Peer& peer) {
  PeerRestart& gr = RestartOf(peer);
  if (!gr.any()) return;
  gr.restarting = false;
  if (gr.restart_timer) gr.restart_timer->Stop();
  const fsm::Negotiated& n = *peer.negotiated();
  const fsm::PeerGracefulRestart& offer = n.peer_graceful_restart;
  // RFC 4724 §4.2: a family that the new capability lacks, or lists without F (its
  // forwarding state is gone), has its stale paths removed at once.
  for (int f = 0; f < net::kFamilyCount; ++f) {
    if (!gr.stale[f]) continue;
    const auto family = static_cast<net::Family>(f);
    if (!offer.offered) {
      SweepStale(peer, family, "forwarding_not_preserved", "its new OPEN has no Graceful Restart capability");
    } else if (!n.families[f] || !offer.families[f]) {
      SweepStale(peer, family, "forwarding_not_preserved", "its new Graceful Restart capability lacks the family");
    } else if (!offer.forwarding_preserved[f]) {
      SweepStale(peer, family, "forwarding_not_preserved", "its new OPEN says its forwarding state was not kept (F bit 0)");
    }
  }
  if (!gr.any()) return;
  // RFC 4724 §4.2 lets the upper bound be configured: stale_routes_time from now.
  const uint32_t t = peer.config().stale_routes_time_s;
  gr.deadline_ms = clock_->WallMs() + int64_t{t} * 1000;
  gr.stale_timer->Start(std::chrono::seconds(t), [this, p = &peer, t] {
    RestartOf(*p).timers_expired++;
    SweepAllStale(*p, "stale_timer", absl::StrCat("no End-of-RIB within stale_routes_time (", t, " s)"));
  });
  log::Info("neighbor %s: back after its restart: stale paths replaced as it announces them, the rest removed at its "
            "End-of-RIB (or in %d s)", peer.config().Name(), t);
}

void Speaker::NoteGracefulRefresh(const Peer& peer, const wire::UpdateMessage& u) {
  if (restart_.size() <= peer.rib_index) return;
  PeerRestart& gr = restart_[peer.rib_index];
  if (!gr.any()) return;  // per UPDATE: nothing to do unless the peer has stale paths
  auto mark = [&](const std::vector<net::Nlri>& nlri) {
    for (const net::Nlri& n : nlri) {
      if (auto& stale = gr.stale[static_cast<int>(n.prefix.family())]) stale->Refreshed(n);
    }
  };
  // Announced again: no longer stale. Withdrawn: gone from the RIB now, nothing to sweep.
  mark(u.nlri);
  mark(u.withdrawn);
  if (u.attrs.mp_reach) mark(u.attrs.mp_reach->nlri);
  if (u.attrs.mp_unreach) mark(u.attrs.mp_unreach->withdrawn);
}

void Speaker::FillGracefulRestart(const Peer& peer, control::v1::GracefulRestartStatus& out) const {
  const fsm::LocalSettings& local = peer.config().fsm.local;
  out.set_enabled(local.graceful_restart && local.graceful_restart_time > 0);
  out.set_restart_time(local.graceful_restart_time);
  out.set_stale_routes_time(peer.config().stale_routes_time_s);
  const fsm::RestartState r = RestartStateFor(peer);
  for (int f = 0; f < net::kFamilyCount; ++f) {
    const char* name = net::FamilyName(static_cast<net::Family>(f));
    if (out.enabled() && local.families[f] && local.graceful_restart_families[f]) {
      out.add_families(name);
      if (r.forwarding_preserved[f]) out.add_forwarding_preserved_sent(name);
    }
  }
  out.set_restart_state_sent(r.restarting && out.families_size() > 0);
  if (const auto& n = peer.negotiated(); n && peer.established()) {
    const fsm::PeerGracefulRestart& o = n->peer_graceful_restart;
    out.set_peer_offered(o.offered);
    out.set_peer_restart_state(o.restart_state);
    out.set_peer_notification(o.notification);
    out.set_peer_restart_time(o.restart_time);
    for (int f = 0; f < net::kFamilyCount; ++f) {
      const char* name = net::FamilyName(static_cast<net::Family>(f));
      if (o.families[f]) out.add_peer_families(name);
      if (o.families[f] && o.forwarding_preserved[f]) out.add_peer_forwarding_preserved(name);
      if (n->graceful_restart_retain[f]) out.add_retained(name);
    }
  }
  if (peer.rib_index < outbound_.size() && outbound_[peer.rib_index]) {
    out.set_initial_advertisement_deferred(outbound_[peer.rib_index]->held);
  }
  if (peer.rib_index >= restart_.size()) return;
  const PeerRestart& gr = restart_[peer.rib_index];
  out.set_restarts(gr.restarts);
  out.set_stale_paths_removed(gr.removed);
  out.set_timers_expired(gr.timers_expired);
  if (!gr.any()) return;
  out.set_phase(gr.restarting ? "restarting" : "stale");
  out.set_deadline_unix_ms(gr.deadline_ms);
  uint64_t stale = 0;
  for (int f = 0; f < net::kFamilyCount; ++f) {
    if (!gr.stale[f]) continue;
    stale += gr.stale[f]->stale();
    out.add_stale_families(net::FamilyName(static_cast<net::Family>(f)));
  }
  out.set_stale_paths(stale);
}

}  // namespace bagd::daemon
