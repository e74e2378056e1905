// The BGP speaker: every configured neighbor, the listening sockets, and the operations
// the control API offers. Runs on one io_context thread; the public methods other than
// the constructor must be called on that thread (ControlAdapter posts to it).
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "bgpd/control/control.pb.h"
#include "bgpd/session/metrics.h"
#include "bgpd/session/peer.h"
#include "bgpd/session/clock.h"
#include "bgpd/session/log.h"
#include "conf/bagd.pb.h"
#include "rib/rib.h"
#include "rib/stale_paths.h"
#include "rib/weights/link_bandwidth_export.h"
#include "rib/weights/nexthop_group_registry.h"

namespace bagd::daemon {

using session::Clock;
using session::Timer;
using session::AsioClock;
using session::Peer;
using session::PeerConfig;
using session::RouteSink;
using session::SessionMetrics;
using session::Lifetime;


// The config, turned into what the sessions need (defaults applied by conf/).
absl::StatusOr<std::vector<PeerConfig>> PeerConfigs(const config::v1::Config& config);
// The weights stage's settings (link bandwidth policy per family, FIB limits, damping).
// `backend_max_weight` applies when the config leaves fib.max_weight at 0.
absl::StatusOr<rib::WeightsConfig> WeightsConfigOf(const config::v1::Config& config,
                                                   uint32_t backend_max_weight = 65535);
// A neighbor's maximum prefixes per family (index wire::Family; limit 0: none).
std::array<rib::PrefixLimitConfig, wire::kFamilyCount> PrefixLimitsOf(const config::v1::Neighbor& n);
// A neighbor's link-bandwidth export settings.
absl::StatusOr<rib::LinkBandwidthExport> LinkBandwidthExportOf(const config::v1::NeighborLinkBandwidth& n);

class Speaker : public RouteSink {
 public:
  // `clock`: the sessions' time and timers; null: the io_context's steady clock.
  Speaker(boost::asio::io_context& io, SessionMetrics* metrics, Clock* clock = nullptr);
  ~Speaker();

  // Opens the listeners and creates the neighbors. Errors (a port in use, a bad address)
  // are returned; nothing is started then.
  absl::Status Configure(const config::v1::Config& config);
  void Start();
  // SIGHUP: applies what can change without touching a session (damping, link bandwidth
  // policy and export, FIB limits) and says what else changed and needs a restart. An
  // error leaves the running config as it was.
  absl::Status Reload(const config::v1::Config& config);
  // Where FIB updates go (fib_sync/); without one they are computed and dropped.
  void SetFibSink(std::function<void(const rib::FibUpdate&)> sink) { fib_sink_ = std::move(sink); }
  // Live capacity: the link bandwidth of the networks originated for `source` (bits/s; 0:
  // the source has no capacity up). Before Start it is the starting value.
  void SetOriginatedBandwidth(const std::string& source, double bps);
  // Called once, when every neighbor that is Established has sent End-of-RIB for each family
  // it negotiated (RFC 4724) and every other one (not administratively down) has had
  // fib.restart_neighbor_wait seconds to come up: the initial tables are in.
  void OnInitialConvergence(std::function<void()> f) { on_converged_ = std::move(f); }
  // Which FIB object a next-hop group is (for bagctl), when there is a FIB stage.
  void SetFibObjectResolver(std::function<std::optional<uint32_t>(rib::GroupId)> f) { fib_object_ = std::move(f); }
  const std::function<std::optional<uint32_t>(rib::GroupId)>& fib_object() const { return fib_object_; }
  // The largest weight the FIB backend takes (before Configure).
  void SetFibMaxWeight(uint32_t w) { fib_max_weight_ = w; }
  // Cease / Administrative Shutdown to every neighbor, then `done` once the NOTIFICATIONs
  // are flushed (or after `grace`).
  void Shutdown(const std::string& message, std::chrono::milliseconds grace, std::function<void()> done);

  std::vector<control::v1::NeighborStatus> ListNeighbors(const std::string& address_filter) const;
  absl::Status ShutdownNeighbor(const std::string& address, const std::string& message);
  absl::Status EnableNeighbor(const std::string& address);
  // `bagctl neighbor ADDRESS clear [soft [in|out]]` (control.proto ClearNeighbor): a hard
  // reset, ROUTE-REFRESH requests to the neighbor, and/or our Adj-RIB-Out re-sent to it.
  absl::StatusOr<control::v1::ClearNeighborResponse> ClearNeighbor(const std::string& address,
                                                                   control::v1::ClearNeighborRequest::Mode mode);

  size_t neighbor_count() const { return peers_.size(); }
  const rib::Rib& rib() const { return *rib_; }
  const rib::AttributeStore& attribute_store() const { return store_; }
  const rib::NextHopGroupRegistry& groups() const { return *groups_; }

  // RouteSink: the routes of every session flow through here.
  void OnSessionUp(Peer& peer) override;
  void OnSessionDown(Peer& peer) override;
  void OnUpdate(Peer& peer, const wire::UpdateMessage& update) override;
  void OnRouteRefresh(Peer& peer, const wire::RouteRefreshMessage& message) override;

  // What `to` gets for a best path learned from `from` (RFC 4271 §9.1.3, §5.1): nothing
  // back to its source, nothing iBGP to iBGP; to eBGP: own AS prepended, next hop self,
  // MED/LOCAL_PREF/non-transitive attributes removed.
  // `multipath`: the prefix's multipath set, best first (its link bandwidth is exported per
  // the neighbor's link_bandwidth settings).
  std::optional<wire::PathAttributes> ExportAttributes(const Peer& to, std::span<const rib::Path> multipath,
                                                       wire::Family family) const;

 private:
  // Sends `to` what changed, packing every prefix of one attribute set together.
  void Advertise(Peer& to, const std::vector<rib::RouteChange>& changes);
  // Advertise now, or collect until the peer's advertisement interval ends.
  void AdvertisePaced(Peer& to, const std::vector<rib::RouteChange>& changes);
  void FlushPaced(Peer& to);
  void Propagate(const std::vector<rib::RouteChange>& changes);
  // Everything that follows a RIB change: advertisement and the weights stage.
  void OnRibChanges(const std::vector<rib::RouteChange>& changes);
  // The RIB's changes so far to the peers and the weights stage: at once, or posted to run
  // after the UPDATEs already read (several peers' announcements of a prefix coalesce).
  void FlushRibChanges();
  void ScheduleRibFlush();
  // The weights stage: a burst of changes is batched (kWeightsBatchDelay), so a peer
  // re-announcing many prefixes with a new bandwidth moves their group once.
  void QueueWeights(const std::vector<rib::RouteChange>& changes);
  void RunWeights();
  void FlushFib();  // hands the registry's FIB update on and re-arms the hold-down timer
  void RefreshWeightMetrics();
  // Re-sends prefixes whose bandwidth change waited for the re-advertisement interval.
  void FlushDeferredBandwidth(Peer& to);
  std::vector<rib::RouteChange> CurrentState(const absl::flat_hash_set<wire::Prefix>& prefixes) const;
  void RefreshCounts(Peer& p);
  // Route refresh (RFC 2918, RFC 7313). Our Adj-RIB-Out for `family` sent to `to` again
  // (within BoRR/EoRR when `enhanced`); returns the number of prefixes.
  size_t ResendAdjRibOut(Peer& to, wire::Family family, bool enhanced);
  // The peer's BoRR: its paths in `family` are stale until it announces them again.
  void BeginStale(Peer& peer, wire::Family family);
  // Its EoRR (or the stale timeout): the paths still stale are removed.
  void EndStale(Peer& peer, wire::Family family, bool timed_out);
  // An UPDATE from a peer in a refresh: the paths it announces are not stale.
  void NoteRefreshed(const Peer& peer, const wire::UpdateMessage& update);
  // A session began or ended: no refresh in progress, no End-of-RIB seen.
  void ResetRefresh(Peer& peer);
  void ShowRefreshing(Peer& peer);  // the families in NeighborStatus.route_refresh.refreshing
  void RefreshRibMetrics();
  struct Listener;
  void Accept(Listener& l);
  absl::Status ApplyGtsmToListeners();
  // A neighbor's Peer, its RIB index and its per-peer state (Configure, Reload).
  absl::StatusOr<Peer*> AddPeer(PeerConfig config, const rib::LinkBandwidthExport& lb_export);
  // Cease to it, its routes withdrawn, then gone (Reload).
  void RemovePeer(const std::string& name, const wire::NotificationMessage& cease, const std::string& why);

 public:
  // The neighbor with this canonical address, or null (tests and the session fuzzer hand
  // connections to it with Peer::Accept).
  Peer* FindPeer(const std::string& address) const;

 private:

  boost::asio::io_context& io_;
  SessionMetrics* metrics_;
  std::unique_ptr<Clock> own_clock_;  // when none was given
  Clock* clock_;
  std::vector<std::unique_ptr<Listener>> listeners_;
  std::vector<std::unique_ptr<Peer>> peers_;
  absl::flat_hash_map<std::string, Peer*> by_address_;  // canonical address text
  std::unique_ptr<boost::asio::steady_timer> shutdown_timer_;
  uint32_t local_as_ = 0;
  rib::AttributeStore store_;  // declared before the RIB and Adj-RIB-Out that hold references
  std::unique_ptr<rib::Rib> rib_;
  // Adj-RIB-Out: per peer (by rib index), what we advertised for each prefix.
  std::vector<rib::PrefixMap<rib::AttrRef>> adj_out_;
  // MRAI: per peer (by rib index), prefixes waiting for the interval to end, and its timer.
  struct Pacing {
    absl::flat_hash_set<wire::Prefix> pending;
    std::unique_ptr<Timer> timer;
    bool running = false;
  };
  std::vector<Pacing> pacing_;
  // Route refresh from the peer's side, per peer (by rib index): the paths it is re-sending
  // (BoRR received, no EoRR yet) with their stale timeout, and End-of-RIB seen this session
  // (RFC 7313 §4 with Graceful Restart: no BoRR before it).
  struct InboundRefresh {
    std::array<std::optional<rib::StalePaths>, wire::kFamilyCount> stale;
    std::array<std::unique_ptr<Timer>, wire::kFamilyCount> timeout;
  };
  std::vector<InboundRefresh> refresh_;
  InboundRefresh& RefreshOf(const Peer& peer);  // sized on first use, as pacing_
  rib::PeerIndex local_index_ = 0;  // this router's own routes (config networks)
  struct Network {
    wire::Nlri nlri;
    std::optional<double> link_bandwidth_bps;
    std::string capacity_source;  // the link bandwidth follows this source's live capacity
  };
  void Originate(const Network& n);
  static absl::StatusOr<std::vector<Network>> NetworksOf(const config::v1::Config& config);
  std::map<std::string, double> originated_bps_;  // by capacity source
  bool started_ = false;
  std::vector<Network> networks_;

  // Weights and next-hop groups.
  std::unique_ptr<rib::NextHopGroupRegistry> groups_;
  std::vector<wire::Prefix> weights_pending_;  // changed since the last batch, may repeat
  rib::MembersBatch weights_batch_;
  std::vector<size_t> weights_runs_;           // where each sorted run of weights_pending_ starts
  std::unique_ptr<Timer> weights_timer_;
  bool weights_scheduled_ = false;
  bool rib_flush_posted_ = false;
  std::unique_ptr<Timer> hold_timer_;
  std::function<void(const rib::FibUpdate&)> fib_sink_;
  uint32_t fib_max_weight_ = 65535;
  std::function<void()> on_converged_;
  absl::flat_hash_set<std::pair<rib::PeerIndex, int>> end_of_rib_;  // (peer, family) seen
  // Checked on End-of-RIB, on session loss, and once restart_neighbor_wait after Start.
  void CheckConvergence();
  int64_t started_ms_ = 0;                // clock_->SteadyMs() at Start
  bool stopping_ = false;                 // Shutdown() was called
  int64_t restart_neighbor_wait_ms_ = 10000;
  std::unique_ptr<Timer> convergence_timer_;
  std::function<std::optional<uint32_t>(rib::GroupId)> fib_object_;
  // Per peer (by rib index): link-bandwidth export and its re-advertisement damping.
  struct BandwidthExport {
    rib::LinkBandwidthExport config;
    rib::BandwidthReadvertisement damping;
    absl::flat_hash_set<wire::Prefix> deferred;
    std::unique_ptr<Timer> timer;
    absl::Time timer_at = absl::InfiniteFuture();
  };
  std::vector<BandwidthExport> lb_export_;
  config::v1::Config config_;  // the running config
  // Watched by handlers posted with a raw `this`; declared last, so it expires first.
  Lifetime lifetime_;
};

}  // namespace bagd::daemon
