// The BGP speaker: the daemon's middle, wired from its stages (docs/architecture.md):
//
//   sessions (listeners, Peers) ─UPDATE─► RoutingCore (intern, import policy, RIB)
//        ▲                                    │ change sets, taken only by
//        └──── UPDATE bytes ◄── Advertiser ◄──┘ (protocol rules, export policy, rewrite,
//                                   │            Adj-RIB-Out, MRAI)
//                                   └─► WeightsStage (groups, hold-down) ─► rib::FibSink
//
// The speaker keeps the sessions: listeners and Peers, the session half of a reload, the
// RFC decisions and timers of graceful restart and route refresh, End-of-RIB and the
// initial convergence, the control operations and metrics. Routing state changes only
// through the Pipeline's entry points (pipeline.h); the speaker reads the stages through
// its const accessors. Its methods live in speaker.cc (sessions, UPDATEs, convergence),
// speaker_restart.cc (graceful restart and route refresh) and speaker_reload.cc (reload,
// the control API's networks).
// Runs on one io_context thread; the public methods other than the constructor must be
// called on that thread (ControlAdapter posts to it).
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <algorithm>
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
#include "bgpd/daemon/advertiser.h"
#include "bgpd/daemon/capacity_stage.h"
#include "bgpd/daemon/pipeline.h"
#include "bgpd/daemon/policy_view.h"
#include "bgpd/daemon/config_translation.h"
#include "bgpd/daemon/routing_core.h"
#include "bgpd/daemon/routing_metrics.h"
#include "bgpd/daemon/weights_stage.h"
#include "bmp/metrics.h"
#include "bmp/monitor.h"
#include "policy/policy.h"
#include "rib/fib_update.h"

namespace bagd::daemon {

using session::AsioClock;
using session::Clock;
using session::Lifetime;
using session::Peer;
using session::PeerConfig;
using session::RouteSink;
using session::SessionMetrics;
using session::Timer;

// What the speaker is built with (main.cc, the tests).
struct SpeakerOptions {
  // The sessions' series (the Peers, graceful restart) and the routing path's (the RIB
  // gauges, the pipeline's weights stage); either may be null (none of those).
  SessionMetrics* session_metrics = nullptr;
  RoutingMetrics* routing_metrics = nullptr;
  // The sessions' and stages' time and timers; null: the io_context's steady clock.
  Clock* clock = nullptr;
  // Where the weights stage's FIB updates go (fib_sync/); null: computed and dropped. Told
  // once when the initial tables are in (every Established neighbor's End-of-RIB, the
  // others waited fib.restart_neighbor_wait seconds).
  rib::FibSink* fib = nullptr;
  // The largest weight the FIB backend takes (fib.max_weight at 0 means this).
  uint32_t fib_max_weight = 65535;
  // The most next-hop groups the backend holds (FibCapabilities.max_groups; 0: unknown).
  uint32_t fib_max_groups = 0;
  // bagd's own restart (RFC 4724 §4.1), from the FIB stage at start (main.cc): `restarting`
  // when the backend held bagd's objects of a previous run; forwarding_preserved per family
  // when it held routes of that family. R and F of the Graceful Restart capability.
  fsm::RestartState restart;
  // WatchEvents (control.proto): the neighbors' state changes and the weights stage's weight
  // changes are published here; null: none.
  control::EventSink* events = nullptr;
};

class Speaker : public RouteSink, public NeighborRibs, public CapacityInput {
 public:
  Speaker(boost::asio::io_context& io, SpeakerOptions options = {});
  ~Speaker();

  // Opens the listeners and creates the neighbors. Errors (a port in use, a bad address)
  // are returned; nothing is started then.
  absl::Status Configure(const config::v1::Config& config);
  void Start();
  // SIGHUP: applies what can change without touching a session (policies, damping, link
  // bandwidth policy and export, FIB limits, networks, neighbors added and removed) and
  // says what else changed and needs a restart. An error leaves the running config as it was.
  // `needs_restart` (may be null) receives what changed but waits for a restart.
  absl::Status Reload(const config::v1::Config& config, std::vector<std::string>* needs_restart = nullptr);
  // The control API's networks (AddNetwork / DeleteNetwork): originated like `networks`,
  // kept across reloads until deleted. AlreadyExists for a prefix of the configuration's
  // networks; adding one again replaces its link bandwidth (returns true then).
  absl::StatusOr<bool> AddNetwork(const Network& network);
  absl::Status DeleteNetwork(const net::Prefix& prefix);
  // Live capacity: the link bandwidth of the networks originated for `source` (bits/s; 0:
  // the source has no capacity up). Before Start it is the starting value.
  void SetOriginatedBandwidth(const std::string& source, double bps) override;
  // Live capacity of a source as a weight input (docs/capacity.md, "Local capacity"): the
  // neighbors reached over it (local_capacity_source) have their members capped at it,
  // after its own hold-down. The raw value (bits/s up); returns what the hold-down did.
  rib::HoldDownOutcome ObserveLocalCapacity(const std::string& source, double bps) override;
  const rib::DampingConfig& damping() const override { return pipeline_->weights().groups().config().damping; }
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
  const config::v1::Config& config() const { return config_; }  // the running one
  const rib::Rib& rib() const { return pipeline_->rib(); }
  const rib::AttributeStore& attribute_store() const { return pipeline_->core().store(); }
  const rib::NextHopGroupRegistry& groups() const { return pipeline_->weights().groups(); }
  // Which FIB object a next-hop group is (bagctl), when there is a FIB stage.
  std::optional<uint32_t> FibObjectOf(rib::GroupId g) const {
    return options_.fib != nullptr ? options_.fib->ObjectOf(g) : std::nullopt;
  }
  // What the FIB stage's own group cap did (bagctl), when there is one.
  std::optional<rib::FibGroupCap> FibGroupCap() const {
    return options_.fib != nullptr ? options_.fib->GroupCap() : std::nullopt;
  }
  // What the FIB stage repaired and the conflicts it leaves alone (bagctl).
  std::optional<rib::FibRepairStatus> FibRepairStatus() const {
    return options_.fib != nullptr ? options_.fib->RepairStatus() : std::nullopt;
  }
  // The explain views (bagctl show routes --neighbor, policy test).
  const policy::PolicySet* policies() const override { return policies_.get(); }
  std::optional<rib::PeerIndex> RibIndexOf(const std::string& canonical_address) const override;
  const rib::AdjRibIn* ReceivedRoutes(rib::PeerIndex index) const override { return pipeline_->core().received(index); }
  const rib::AdjRibOut* AdvertisedRoutes(rib::PeerIndex index) const override {
    return pipeline_->advertiser().advertised(index);
  }

  // RouteSink: the routes of every session flow through here.
  void OnSessionUp(Peer& peer) override;
  void OnSessionDown(Peer& peer) override;
  void OnUpdate(Peer& peer, const wire::UpdateMessage& update) override;
  void OnRouteRefresh(Peer& peer, const wire::RouteRefreshMessage& message) override;
  fsm::RestartState RestartStateFor(const Peer& peer) const override;
  bool DefersEndOfRib(const Peer& peer) const override;
  session::BmpTap* bmp_tap() override;
  // BMP (speaker_bmp.cc, docs/bmp.md): the stations' state, for bagctl and tests; empty
  // without stations.
  std::vector<bmp::StationStatus> BmpStations() const;

  // What `to` gets for `multipath` (best first) of `prefix`: the advertiser's steps 1-3.
  std::optional<wire::PathAttributes> ExportAttributes(const Peer& to, const net::Prefix& prefix,
                                                       std::span<const rib::Path> multipath) const {
    return pipeline_->advertiser().ExportAttributes(to.rib_index, prefix, multipath);
  }

  // The neighbor with this canonical address, or null (tests and the session fuzzer hand
  // connections to it with Peer::Accept).
  Peer* FindPeer(const std::string& address) const;
  // The neighbor whose paths carry RIB index `index` (null: removed, or a local source).
  const Peer* PeerForRibIndex(rib::PeerIndex index) const { return PeerAt(index); }
  // Every neighbor's received messages go to `tap` too (the MRT updates log, docs/mrt.md),
  // the ones a reload adds included; null: none.
  void SetMrtTap(session::MrtMessageTap* tap);

 private:
  class PeerOutbound;
  void ScheduleMetrics();  // RefreshRibMetrics within kMetricsDelay
  void RefreshCounts(Peer& p);
  void RefreshRibMetrics();
  // The neighbor at a RIB index, or null (gone): what the timers look up.
  Peer* PeerAt(rib::PeerIndex index) const;

  // Route refresh (RFC 2918, RFC 7313), speaker_restart.cc. A ROUTE-REFRESH request to
  // `peer`, counted in its status.
  void RequestRefresh(Peer& peer, net::Family family);
  // Our Adj-RIB-Out for `family` to `to` again, counted in its status.
  size_t ResendAdjRibOut(Peer& to, net::Family family, bool enhanced);
  // The peer's BoRR: its paths in `family` are stale (the pipeline's) until its EoRR or
  // the timeout; then what is still stale goes.
  void BeginRefresh(Peer& peer, net::Family family);
  void EndRefresh(Peer& peer, net::Family family, bool timed_out);
  // A session began or ended: no refresh in progress.
  void ResetRefresh(Peer& peer);
  void ShowRefreshing(Peer& peer);  // the families in NeighborStatus.route_refresh.refreshing
  struct InboundRefresh {
    std::array<std::unique_ptr<Timer>, net::kFamilyCount> timeout;
  };
  std::vector<InboundRefresh> refresh_;  // by rib index
  InboundRefresh& RefreshOf(const Peer& peer);

  // Graceful restart, helper role (RFC 4724 §4.2), per peer: the timers and counters; its
  // stale paths are the pipeline's (StaleCause::kGracefulRestart).
  struct PeerRestart {
    std::unique_ptr<Timer> restart_timer;  // session down: the peer's restart time
    std::unique_ptr<Timer> stale_timer;    // session back: stale_routes_time
    bool restarting = false;               // session down, paths kept
    int64_t deadline_ms = 0;               // wall clock, for bagctl
    uint64_t restarts = 0, removed = 0, timers_expired = 0;
  };
  std::vector<PeerRestart> restart_;
  PeerRestart& RestartOf(const Peer& peer);  // sized on first use
  // Some family of the peer is stale for its restart.
  bool HasRestartStale(const Peer& peer) const;
  // The session dropped without a NOTIFICATION: keep the paths of `retain` families as
  // stale for `restart_time_s`, withdraw the others.
  void KeepStale(Peer& peer, const std::array<bool, net::kFamilyCount>& retain, uint16_t restart_time_s);
  // The stale paths of `family` still stale go (End-of-RIB, a timer, the new OPEN lacking F).
  void SweepStale(Peer& peer, net::Family family, const char* event, const std::string& why);
  void SweepAllStale(Peer& peer, const char* event, const std::string& why);
  // What a sweep removed: counted, logged, the timers stopped when nothing is stale.
  void NoteSwept(Peer& peer, net::Family family, const Pipeline::Swept& swept, const char* event,
                 const std::string& why);
  // Session back: the new OPEN decides which stale families stay until End-of-RIB.
  void RestartedPeerUp(Peer& peer);
  void FillGracefulRestart(const Peer& peer, control::v1::GracefulRestartStatus& out) const;
  // Restarting-speaker role (RFC 4724 §4.1): after our restart the initial advertisement to
  // a helper waits for our tables (convergence, or fib.restart_hold_time), then End-of-RIB.
  bool Restarting() const;
  bool DeferInitial(const Peer& peer) const;
  void ReleaseDeferred(const char* why);
  bool deferral_over_ = false;
  std::unique_ptr<Timer> deferral_timer_;

  // RFC 8212 and the chains in force, for logs and NeighborStatus.
  void ShowPolicies(Peer& peer);
  struct Listener;
  void Accept(Listener& l);
  absl::Status ApplyGtsmToListeners();
  // A neighbor's Peer, its RIB index and its per-peer state in every stage (Configure, Reload).
  absl::StatusOr<Peer*> AddPeer(PeerConfig config, const rib::LinkBandwidthExport& lb_export,
                                const NeighborPolicies& policies);
  // Cease to it, its routes withdrawn, then gone (Reload).
  void RemovePeer(const std::string& name, const wire::NotificationMessage& cease, const std::string& why);
  // Reload: an import change the pipeline could not apply from stored routes is asked of
  // the neighbor; returns what was done, for the log.
  std::string ReapplyImport(Peer& peer, const Pipeline::Reconfigured& r);
  // Which capacity source each neighbor is reached over, to the pipeline (Configure; a
  // reload's comes with its plan).
  void ApplyLocalCapacity(const config::v1::Config& config);
  // Checked on End-of-RIB, on session loss, and once restart_neighbor_wait after Start.
  void CheckConvergence();

  // Dynamic neighbors (docs/config.md, "Neighbor groups"): a connection from an address that
  // is no configured neighbor joins the group whose listen range holds it, unless the group
  // holds listen_limit dynamic neighbors already; null: closed.
  Peer* AcceptDynamic(const net::IpAddress& address);
  // A config neighbor's address as Peer names it (canonical text); "" when it does not parse.
  static std::string CanonicalName(const config::v1::Neighbor& n);
  // The canonical addresses of `neighbors`.
  static absl::flat_hash_set<std::string> Names(const google::protobuf::RepeatedPtrField<config::v1::Neighbor>& neighbors);
  // A dynamic neighbor whose session is down and holds no stale paths of a restart goes
  // (posted: never from inside its own Peer's call).
  void RetireDynamicLater(const Peer& peer);
  void RetireDynamic(const std::string& name, const char* why = "its session ended");
  void CountDynamic();  // bagd_dynamic_neighbors{group}
  // A dynamic neighbor whose connection failed before Established never sees OnSessionDown:
  // every kDynamicSweep while there are dynamic neighbors, one without a connection (Idle or
  // Active) goes, so a scan of the range cannot fill the group.
  void ScheduleDynamicSweep();
  void SweepDynamic();
  static constexpr std::chrono::seconds kDynamicSweep{5};
  std::unique_ptr<Timer> dynamic_timer_;
  // Reload: `next` with the dynamic neighbors that stay (their group's range still holds
  // them, within its limit, and no configured neighbor has their address), made from the
  // next config's groups.
  config::v1::Config WithDynamicNeighbors(const config::v1::Config& next) const;
  struct DynamicNeighbor {
    std::string group;
    std::string range;
  };
  absl::flat_hash_map<std::string, DynamicNeighbor> dynamic_;  // by canonical address
  uint64_t dynamic_refused_ = 0;  // connections beyond a group's listen_limit

  boost::asio::io_context& io_;
  SpeakerOptions options_;
  SessionMetrics* session_metrics_;
  RoutingMetrics* routing_metrics_;
  std::unique_ptr<Clock> own_clock_;  // when none was given
  Clock* clock_;
  std::vector<std::unique_ptr<Listener>> listeners_;
  uint32_t local_as_ = 0;
  std::shared_ptr<const policy::PolicySet> policies_;  // the chains below point into it
  PolicyHitsSynced policy_hits_synced_;  // what the Prometheus hit counters have of it
  std::vector<std::unique_ptr<Peer>> peers_;
  std::vector<std::unique_ptr<PeerOutbound>> outbound_;  // one per peer, the advertiser's view of it
  // The routing path. Declared after what its stages refer to (the Outbounds, the Peers
  // behind them), so it is destroyed before them.
  std::unique_ptr<Pipeline> pipeline_;
  absl::flat_hash_map<std::string, Peer*> by_address_;  // canonical address text
  std::unique_ptr<boost::asio::steady_timer> shutdown_timer_;
  bool converged_ = false;
  absl::flat_hash_set<std::pair<rib::PeerIndex, int>> end_of_rib_;  // (peer, family) seen
  int64_t started_ms_ = 0;                // clock_->SteadyMs() at Start
  bool stopping_ = false;                 // Shutdown() was called
  int64_t restart_neighbor_wait_ms_ = 10000;
  std::unique_ptr<Timer> convergence_timer_;
  std::unique_ptr<Timer> metrics_timer_;  // RefreshRibMetrics after the pipeline hands changes on
  // bagd_update_processing_seconds, counted here and published with the RIB gauges: one
  // UPDATE in kUpdateSampleEvery is timed (the first is the 16th).
  static constexpr uint64_t kUpdateSampleEvery = 16;
  uint64_t updates_seen_ = 0;
  LocalHistogram update_seconds_{UpdateSecondsBuckets()};
  config::v1::Config config_;  // the running config
  session::MrtMessageTap* mrt_tap_ = nullptr;
  // BMP (speaker_bmp.cc): the monitor reads the pipeline's RIB, so it is declared after it
  // (destroyed first).
  // The Peers' tap: an UPDATE as received goes to the monitor's pre-policy view.
  class BmpPrePolicy final : public session::BmpTap {
   public:
    explicit BmpPrePolicy(bmp::Monitor& monitor) : monitor_(monitor) {}
    void OnUpdateReceived(const Peer& peer, wire::ByteSpan update) override {
      monitor_.PrePolicyUpdate(peer.rib_index, update);
    }
    void OnUpdatesSent(const Peer& peer, std::span<const wire::Bytes> updates) override {
      for (const wire::Bytes& u : updates) monitor_.AdjRibOutUpdate(peer.rib_index, u);
    }

   private:
    bmp::Monitor& monitor_;
  };
  void ConfigureBmp(const config::v1::Config& config);
  void BmpPeerUp(const Peer& peer);
  void BmpPeerDown(const Peer& peer);
  bool ExportCandidate(rib::PeerIndex to, const net::Prefix& prefix, const rib::Path& best) const;
  std::unique_ptr<bmp::BmpMetrics> bmp_metrics_;
  std::unique_ptr<bmp::Monitor> bmp_;
  std::unique_ptr<BmpPrePolicy> bmp_pre_policy_;
  // Watched by handlers posted with a raw `this`; declared last, so it expires first.
  Lifetime lifetime_;
};

}  // namespace bagd::daemon
