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
#include "conf/neighbor_groups.h"
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
  bool established() const override { return p_.established(); }
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
  Peer& peer() const { return p_; }

 private:
  Peer& p_;
  std::string name_;
};

Speaker::Speaker(boost::asio::io_context& io, SpeakerOptions options)
    : io_(io),
      options_(options),
      session_metrics_(options.session_metrics),
      routing_metrics_(options.routing_metrics),
      own_clock_(options.clock ? nullptr : std::make_unique<AsioClock>(io)),
      clock_(options.clock ? options.clock : own_clock_.get()) {}

Speaker::~Speaker() {
  if (pipeline_) pipeline_->set_route_observer(nullptr);  // the monitor goes first
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
  // The pipeline's posted flush watches its own lifetime; ScheduleMetrics runs after each.
  pipeline_ = std::make_unique<Pipeline>(
      local_as_, decision, *weights, *clock_, options_.fib, routing_metrics_, options_.events,
      [this](std::function<void()> task) { boost::asio::post(io_, std::move(task)); }, [this] { ScheduleMetrics(); });
  config_ = config;
  restart_neighbor_wait_ms_ = int64_t{config.fib().restart_neighbor_wait()} * 1000;
  auto networks = NetworksOf(config);
  if (!networks.ok()) return networks.status();
  pipeline_->SetNetworks(*std::move(networks));
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
  ConfigureBmp(config);
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
  auto peer = std::make_unique<Peer>(io_, *clock_, std::move(pc), session_metrics_, this, options_.events);
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
  if (mrt_tap_ != nullptr) peer->SetMrtTap(mrt_tap_);
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
  // Paths kept for a restart of it (session down, so OnSessionDown did not run) go with it;
  // every timer of ours that points at it goes with its state.
  pipeline_->RemoveNeighbor(p.rib_index);
  if (p.rib_index < refresh_.size()) refresh_[p.rib_index] = InboundRefresh{};
  if (p.rib_index < restart_.size()) restart_[p.rib_index] = PeerRestart{};
  outbound_[p.rib_index].reset();
  by_address_.erase(name);
  dynamic_.erase(name);
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
  // Our own routes (nobody is Established yet: the initial dumps carry them).
  pipeline_->StartOriginating();
  if (!pipeline_->networks().empty()) log::Info("originating %d prefixes", pipeline_->networks().size());
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
  CountDynamic();
}


void Speaker::SetOriginatedBandwidth(const std::string& source, double bps) {
  pipeline_->SetOriginatedBandwidth(source, bps);
}

void Speaker::Accept(Listener& l) {
  l.acceptor.async_accept([this, &l](const boost::system::error_code& ec, tcp::socket socket) {
    if (ec == boost::asio::error::operation_aborted) return;
    if (!ec) {
      boost::system::error_code e2;
      const auto remote = socket.remote_endpoint(e2);
      Peer* p = e2 ? nullptr : FindPeer(Canonical(remote.address()));
      if (p == nullptr && !e2 && !stopping_) {
        if (auto a = net::IpAddress::Parse(Canonical(remote.address())); a.ok()) p = AcceptDynamic(*a);
      }
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

Peer* Speaker::PeerAt(rib::PeerIndex index) const {
  // A neighbor's Outbound lives exactly as long as it (RemovePeer resets it).
  return index < outbound_.size() && outbound_[index] != nullptr ? &outbound_[index]->peer() : nullptr;
}

void Speaker::SetMrtTap(session::MrtMessageTap* tap) {
  mrt_tap_ = tap;
  for (auto& p : peers_) p->SetMrtTap(tap);
}

Peer* Speaker::FindPeer(const std::string& address) const {
  auto it = by_address_.find(address);
  return it == by_address_.end() ? nullptr : it->second;
}

void Speaker::Shutdown(const std::string& message, std::chrono::milliseconds grace, std::function<void()> done) {
  stopping_ = true;
  if (bmp_) bmp_->Stop();  // Termination (RFC 7854 §4.5), written within the grace below
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
  absl::flat_hash_map<std::string, std::string> group_of;  // configured neighbors' groups
  for (const auto& n : config_.neighbors()) {
    if (!n.group().empty()) group_of[CanonicalName(n)] = n.group();
  }
  for (const auto& p : peers_) {
    if (!filter.empty() && p->config().Name() != canonical) continue;
    out.push_back(p->Status());
    FillGracefulRestart(*p, *out.back().mutable_graceful_restart());
    if (auto g = group_of.find(p->config().Name()); g != group_of.end()) out.back().set_group(g->second);
    if (auto d = dynamic_.find(p->config().Name()); d != dynamic_.end()) {
      out.back().set_group(d->second.group);
      out.back().set_dynamic(true);
      out.back().set_listen_range(d->second.range);
    }
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
  if (HasRestartStale(*p)) SweepAllStale(*p, "shutdown", "administrative shutdown");
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
  const rib::Rib& rib = pipeline_->rib();
  p.prefixes_received = rib.paths_of(p.rib_index);
  p.prefixes_rejected = pipeline_->core().rejected_by_policy(p.rib_index);
  for (int f = 0; f < net::kFamilyCount; ++f) {
    const auto fam = static_cast<net::Family>(f);
    p.prefixes_received_by_family[f] = rib.paths_of(p.rib_index, fam);
  }
  // bagd_prefixes_received follows with the RIB gauges (RefreshRibMetrics), not per UPDATE.
}

void Speaker::RefreshRibMetrics() {
  if (session_metrics_ == nullptr && routing_metrics_ == nullptr) return;
  const rib::Rib& rib = pipeline_->rib();
  if (RoutingMetrics* m = routing_metrics_) {
    for (int f = 0; f < net::kFamilyCount; ++f) {
      const auto fam = static_cast<net::Family>(f);
      m->RibPrefixes(net::FamilyName(fam)).Set(static_cast<double>(rib.prefix_count(fam)));
      size_t paths = 0;
      for (rib::PeerIndex i = 0; i < rib.peer_count(); ++i) paths += rib.paths_of(i, fam);
      m->RibPaths(net::FamilyName(fam)).Set(static_cast<double>(paths));
    }
    m->AttributeSets().Set(static_cast<double>(pipeline_->core().store().size()));
    if (policies_) SyncPolicyMetrics(*policies_, *m, policy_hits_synced_);
    auto& runs = m->DecisionRuns();
    runs.Increment(static_cast<double>(rib.decision_runs()) - runs.Value());
    const auto& x = pipeline_->advertiser().export_stats();
    auto sync = [](prometheus::Counter& c, uint64_t v) { c.Increment(static_cast<double>(v) - c.Value()); };
    sync(m->ExportPasses(), x.passes);
    sync(m->ExportNeighborUpdates("shared"), x.reused);
    sync(m->ExportNeighborUpdates("own"), x.members - x.reused);
    update_seconds_.PublishTo(m->UpdateSeconds());
  }
  if (SessionMetrics* m = session_metrics_) {
    for (const auto& p : peers_) {
      for (int f = 0; f < net::kFamilyCount; ++f) {
        const auto fam = static_cast<net::Family>(f);
        p->series().SetPrefixes(fam, rib.paths_of(p->rib_index, fam));
      }
      if (p->rib_index >= restart_.size()) continue;
      const PeerRestart& gr = restart_[p->rib_index];
      for (int f = 0; f < net::kFamilyCount; ++f) {
        const auto fam = static_cast<net::Family>(f);
        const bool stale = pipeline_->stale_cause(p->rib_index, fam) == rib::StaleCause::kGracefulRestart;
        if (!stale && gr.restarts == 0) continue;  // a neighbor that never restarted shows nothing
        m->GracefulRestartStalePaths(p->config().Name(), net::FamilyName(fam))
            .Set(stale ? static_cast<double>(pipeline_->stale(p->rib_index, fam)->stale()) : 0.0);
      }
    }
  }
}

void Speaker::OnSessionUp(Peer& peer) {
  ResetRefresh(peer);
  RestartedPeerUp(peer);
  // After our restart, a helper (it kept our routes) gets our table once it is whole: an
  // early End-of-RIB would make it drop what we have not re-learned yet (RFC 4724 §4.1).
  const auto& n = peer.negotiated();
  const bool defer = DeferInitial(peer);
  if (defer) {
    log::Info("neighbor %s: initial advertisement deferred until bagd's tables are in (it restarted; the neighbor "
              "keeps our routes meanwhile)", peer.config().Name());
  }
  pipeline_->SessionUp(peer.rib_index, n ? n->peer_router_id : 0, defer);
  ShowPolicies(peer);
  BmpPeerUp(peer);
}

namespace {
// How long the RIB gauges may lag behind a burst of UPDATEs.
constexpr auto kMetricsDelay = std::chrono::milliseconds(2);
}  // namespace

void Speaker::OnSessionDown(Peer& peer) {
  if (stopping_) {
    // bagd exits (SIGTERM): nothing is withdrawn on the way out. The kernel keeps the routes
    // (fib.retain_on_exit) for the next run to adopt, and its R bit then says so; neighbors
    // that negotiated RFC 8538 keep bagd's routes across the Cease (a planned restart).
    return;
  }
  BmpPeerDown(peer);  // before its paths leave the Loc-RIB
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
    const bool had = HasRestartStale(peer);
    pipeline_->SessionDown(peer.rib_index);  // every path, stale or not
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
  RetireDynamicLater(peer);
}

Peer* Speaker::AcceptDynamic(const net::IpAddress& address) {
  const auto match = conf::MatchListenRange(config_, address);
  if (!match) return nullptr;
  const config::v1::NeighborGroup& group = config_.neighbor_groups(match->group);
  const size_t members = static_cast<size_t>(
      std::count_if(dynamic_.begin(), dynamic_.end(), [&](const auto& d) { return d.second.group == group.name(); }));
  const std::string name = address.ToString();
  if (members >= group.listen_limit()) {
    ++dynamic_refused_;
    if (session_metrics_) session_metrics_->DynamicNeighborsRefused(group.name()).Increment();
    log::Warning("neighbor group %s: connection from %s (listen range %s) closed: the group holds listen_limit %d "
                 "dynamic neighbors (%d refused so far)", group.name(), name, match->range, group.listen_limit(),
                 dynamic_refused_);
    return nullptr;
  }
  const config::v1::Neighbor n = conf::DynamicNeighbor(config_, match->group, address);
  config::v1::Config one;
  *one.mutable_router() = config_.router();
  *one.add_neighbors() = n;
  // BFD is not run for dynamic neighbors yet (docs/bfd.md): a group's hold_bgp_until_up
  // must not keep them waiting for a session that never starts.
  one.mutable_neighbors(0)->clear_bfd();
  auto pcs = PeerConfigs(one);
  auto lb_export = LinkBandwidthExportOf(n.link_bandwidth());
  auto policies = PoliciesOf(config_, n, *policies_);
  absl::Status st = !pcs.ok() ? pcs.status() : !lb_export.ok() ? lb_export.status() : policies.status();
  if (st.ok() && pcs->size() != 1) st = absl::InternalError("no session settings");
  absl::StatusOr<Peer*> added = st.ok() ? AddPeer(std::move(pcs->front()), *lb_export, *policies)
                                         : absl::StatusOr<Peer*>(st);
  if (!added.ok()) {
    log::Warning("neighbor group %s: connection from %s closed: %s", group.name(), name, added.status().message());
    return nullptr;
  }
  dynamic_[name] = DynamicNeighbor{group.name(), match->range};
  CountDynamic();
  *config_.add_neighbors() = n;  // the running config holds it while it lives
  ApplyLocalCapacity(config_);
  log::Info("neighbor %s: dynamic neighbor of group %s (listen range %s, %d of %d)", name, group.name(), match->range,
            members + 1, group.listen_limit());
  (*added)->Start();
  ScheduleDynamicSweep();
  return *added;
}

void Speaker::ScheduleDynamicSweep() {
  if (!dynamic_timer_) dynamic_timer_ = clock_->NewTimer();
  if (!dynamic_timer_->running()) dynamic_timer_->Start(kDynamicSweep, [this] { SweepDynamic(); });
}

void Speaker::SweepDynamic() {
  std::vector<std::string> idle;
  for (const auto& [name, d] : dynamic_) {
    const Peer* p = FindPeer(name);
    if (p != nullptr && (p->state() == fsm::State::kIdle || p->state() == fsm::State::kActive)) idle.push_back(name);
  }
  for (const std::string& name : idle) RetireDynamic(name, "no session (its connection ended before Established)");
  if (!dynamic_.empty()) ScheduleDynamicSweep();
}

std::string Speaker::CanonicalName(const config::v1::Neighbor& n) {
  auto a = net::IpAddress::Parse(n.address());
  return a.ok() ? a->ToString() : std::string();
}

absl::flat_hash_set<std::string> Speaker::Names(
    const google::protobuf::RepeatedPtrField<config::v1::Neighbor>& neighbors) {
  absl::flat_hash_set<std::string> out;
  for (const auto& n : neighbors) out.insert(CanonicalName(n));
  return out;
}

void Speaker::RetireDynamicLater(const Peer& peer) {
  if (stopping_ || !dynamic_.contains(peer.config().Name())) return;
  boost::asio::post(io_, [this, alive = lifetime_.watch(), name = peer.config().Name()] {
    if (!alive.expired()) RetireDynamic(name);
  });
}

void Speaker::RetireDynamic(const std::string& name, const char* why) {
  Peer* p = FindPeer(name);
  if (p == nullptr || !dynamic_.contains(name) || p->established() || HasRestartStale(*p) || stopping_) return;
  const std::string group = dynamic_[name].group;
  RemovePeer(name, wire::NotificationMessage{6, wire::cease::kPeerDeconfigured, {}}, absl::StrCat("dynamic neighbor: ", why));
  auto* list = config_.mutable_neighbors();
  for (int i = 0; i < list->size(); ++i) {
    if (CanonicalName(list->Get(i)) != name) continue;
    list->DeleteSubrange(i, 1);
    break;
  }
  ApplyLocalCapacity(config_);
  RefreshRibMetrics();
  CountDynamic();
  log::Info("neighbor %s: dynamic neighbor of group %s removed: %s", name, group, why);
}

void Speaker::CountDynamic() {
  if (session_metrics_ == nullptr) return;
  absl::flat_hash_map<std::string, double> count;
  for (const auto& g : config_.neighbor_groups()) {
    if (!g.listen_ranges().empty()) count[g.name()] = 0;
  }
  for (const auto& [name, d] : dynamic_) count[d.group] += 1;
  for (const auto& [group, n] : count) session_metrics_->DynamicNeighbors(group).Set(n);
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
               net::FamilyName(*eor), pipeline_->rib().paths_of(idx, *eor), after_s);
    if (routing_metrics_) routing_metrics_->EndOfRibSeconds().Observe(after_s);
    end_of_rib_.insert({idx, static_cast<int>(*eor)});
    // RFC 4724 §4.2: what the restarted peer did not announce again is gone.
    if (auto swept = pipeline_->EndOfRib(idx, *eor)) NoteSwept(peer, *eor, *swept, "end_of_rib", "End-of-RIB");
    CheckConvergence();
    return;
  }
  // bagd_update_processing_seconds times one UPDATE in kUpdateSampleEvery: two precise clock
  // reads for every UPDATE were 7 % of a table sent one prefix per UPDATE.
  if (bmp_) bmp_->BeforeIngest(idx, u);
  if (routing_metrics_ && ++updates_seen_ % kUpdateSampleEvery == 0) {
    const auto t0 = std::chrono::steady_clock::now();
    pipeline_->Ingest(idx, u);
    update_seconds_.Observe(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  } else {
    pipeline_->Ingest(idx, u);
  }
  if (bmp_) bmp_->PostPolicyUpdate(idx, u);
  RefreshCounts(peer);
}



void Speaker::ScheduleMetrics() {
  // The RIB-wide gauges (and the policy hit counters, the UPDATE histogram) follow at most
  // every few milliseconds, as the weights batch does, not with every read of UPDATEs.
  if ((session_metrics_ != nullptr || routing_metrics_ != nullptr) && !metrics_timer_->running()) {
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
  converged_ = true;
  pipeline_->InitialTablesIn();
  ReleaseDeferred("the initial tables are in");
}

}  // namespace bagd::daemon
