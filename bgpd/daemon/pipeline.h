// The routing path of the daemon, its stages wired together: RoutingCore → Advertiser →
// WeightsStage → rib::FibSink, and the one door into routing state (design.md: routing
// state changes only through the pipeline). The Speaker runs it from its sessions; the
// replay tests (tests/replay) run the same object from an event log, with recording
// Outbounds and a recording FIB, so what they check is what the daemon does.
//
// Every mutating entry point hands its changes on (to the neighbors, then the weights
// stage) before it returns, after first handing on what came before it; Ingest alone
// defers its hand-off to a task it posts (several peers' UPDATEs read together coalesce),
// unless a batch is already large. No caller flushes. The stages are read-only from outside.
//
// Owned here besides the stages: the stale paths of route refresh and graceful restart
// (one StaleTable, one slice size), this router's own routes (networks, the control API's,
// their bandwidth), and the local capacity caps.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>

#include "absl/status/statusor.h"
#include "bgpd/daemon/advertiser.h"
#include "bgpd/daemon/config_translation.h"
#include "bgpd/daemon/local_capacity.h"
#include "bgpd/daemon/reload_plan.h"
#include "bgpd/daemon/routing_core.h"
#include "bgpd/daemon/routing_metrics.h"
#include "bgpd/daemon/weights_stage.h"
#include "bgpd/session/clock.h"
#include "bgpd/session/lifetime.h"
#include "rib/stale_paths.h"

namespace bagd::daemon {

class Pipeline final : private LocalCapacityView {
 public:
  // Runs a task on the event thread after what is already queued there (the io_context's
  // post; the replay tests' queue, run after each event).
  using Post = std::function<void(std::function<void()>)>;

  // `metrics` (may be null): the weights stage's series. `events` (may be null): the weights
  // stage's WeightsEvents (WatchEvents). `flushed` (may be empty): called after each hand-off
  // (the speaker's RIB gauges follow).
  Pipeline(uint32_t local_as, const rib::DecisionConfig& decision, const rib::WeightsConfig& weights,
           session::Clock& clock, rib::FibSink* fib, RoutingMetrics* metrics, control::EventSink* events,
           Post post, std::function<void()> flushed = {});

  // Read-only views of the stages (bagctl, metrics, the explain views).
  const RoutingCore& core() const { return core_; }
  const Advertiser& advertiser() const { return advertiser_; }
  const WeightsStage& weights() const { return weights_; }
  const rib::Rib& rib() const { return core_.rib(); }
  // Every change set handed on also goes to `observer` (BMP's Loc-RIB); null: none.
  void set_route_observer(rib::RouteChangeListener* observer) { advertiser_.set_observer(observer); }
  // Each weights batch's prefixes once weighed (BMP's Loc-RIB applied bandwidth); may be empty.
  void set_weighed_observer(std::function<void(std::span<const rib::MembersView>)> f) {
    weights_.set_weighed_observer(std::move(f));
  }

  // This router's own routes' index (networks).
  rib::PeerIndex local_index() const { return local_index_; }
  // A neighbor in every stage; `out` outlives it here (RemoveNeighbor).
  rib::PeerIndex AddNeighbor(rib::PeerInfo info, const net::IpAddress& address, Outbound& out,
                             const NeighborPolicies& policies, const rib::LinkBandwidthExport& lb_export);
  // Gone for good: paths still in the RIB (kept for its restart) and their marks go, then its
  // state in every stage.
  void RemoveNeighbor(rib::PeerIndex index);

  // --- Sessions -------------------------------------------------------------------------
  // The session came up (the neighbor's BGP identifier learned): the initial dump, or none
  // yet when `defer_initial` (after our own restart, RFC 4724 §4.1: ReleaseInitial sends it).
  void SessionUp(rib::PeerIndex index, uint32_t router_id, bool defer_initial = false);
  void ReleaseInitial(rib::PeerIndex index);
  bool initial_deferred(rib::PeerIndex index) const { return advertiser_.held(index); }
  // The session ended: every path of the neighbor (stale ones too) leaves the RIB in slices,
  // each handed on before the next, then its Adj-RIB-Out goes.
  void SessionDown(rib::PeerIndex index);
  // The session ended without a NOTIFICATION and graceful restart keeps the `retain`
  // families' paths (RFC 4724 §4.2): they stay, stale, used as before; the other families'
  // paths go; its Adj-RIB-Out goes. Returns the paths kept.
  size_t SessionLostGracefully(rib::PeerIndex index, const std::array<bool, net::kFamilyCount>& retain);
  // One UPDATE (End-of-RIB excluded) into the RIB; what it announces or withdraws is no
  // longer stale.
  void Ingest(rib::PeerIndex index, const wire::UpdateMessage& update);
  // The neighbor's End-of-RIB for `family`: the table so far is handed on; what a restart
  // left stale in the family is removed (RFC 4724 §4.2).
  struct Swept {
    size_t marked = 0;   // stale when it began
    size_t removed = 0;  // still stale at the end: removed
  };
  std::optional<Swept> EndOfRib(rib::PeerIndex index, net::Family family);
  // The initial tables are in (every neighbor's End-of-RIB, or the wait ended): weights at
  // once, then the FIB is told (it may sweep what no route claimed).
  void InitialTablesIn();
  // The weights stage's batch now, not after its delay (InitialTablesIn; tests whose clock
  // stands still).
  void WeighNow();
  // New weights settings (a reload's, Apply): every route is weighed again at once when
  // `reweigh` (an operator's change, not the network's, so no hold-down).
  void ReconfigureWeights(const rib::WeightsConfig& config, bool reweigh);

  // --- Stale paths (route refresh, graceful restart) --------------------------------------
  // Every path of the neighbor in `family` is stale for `cause`; returns how many.
  size_t BeginStale(rib::PeerIndex index, net::Family family, rib::StaleCause cause);
  // The paths still stale for `cause` go, in slices; nothing when the family is not stale
  // for that cause.
  std::optional<Swept> SweepStale(rib::PeerIndex index, net::Family family, rib::StaleCause cause);
  const rib::StalePaths* stale(rib::PeerIndex index, net::Family family) const { return stale_.Find(index, family); }
  std::optional<rib::StaleCause> stale_cause(rib::PeerIndex index, net::Family family) const {
    return stale_.cause(index, family);
  }
  bool any_stale(rib::PeerIndex index) const { return stale_.any(index); }

  // --- Route refresh, soft reconfiguration -----------------------------------------------
  // Our Adj-RIB-Out for `family` to the neighbor again (RFC 2918, RFC 7313); the prefixes.
  size_t Resend(rib::PeerIndex index, net::Family family, bool enhanced);
  // The neighbor's stored routes (soft reconfiguration inbound) through its import chain
  // again; the routes evaluated (0 without stored routes).
  size_t Reimport(rib::PeerIndex index, net::Family family);

  // --- Own routes -------------------------------------------------------------------------
  // The config's networks (at start; a reload's come with Apply). Originated from
  // StartOriginating on; before it they are only kept.
  void SetNetworks(std::vector<Network> networks);
  void StartOriginating();
  // The control API's networks: AlreadyExists/FailedPrecondition for a prefix of the config's
  // networks; adding one again replaces it (true).
  absl::StatusOr<bool> AddNetwork(const Network& network);
  absl::Status DeleteNetwork(const net::Prefix& prefix);
  const std::vector<Network>& networks() const { return networks_; }
  const std::vector<Network>& api_networks() const { return api_networks_; }
  // Live capacity of a source the networks' link bandwidth follows (bits/s; 0: none up).
  void SetOriginatedBandwidth(const std::string& source, double bps);

  // --- Reload -----------------------------------------------------------------------------
  // The routing half of a reload, after the speaker's session half (neighbors removed and
  // added; `indices[i]`: the RIB index of plan.neighbors[i]). For each kept neighbor, what
  // its new settings changed: an import change is applied here from its stored routes when
  // it keeps them, else the caller asks the neighbor (needs_refresh: a ROUTE-REFRESH).
  struct Reconfigured {
    bool import_changed = false;
    bool export_changed = false;
    bool had_stored_routes = false;  // soft reconfiguration was on before
    bool needs_refresh = false;      // import changed and no stored routes to apply it from
    std::array<size_t, net::kFamilyCount> reimported{};  // stored routes evaluated again
  };
  std::vector<Reconfigured> Apply(const ReloadPlan& plan, std::span<const rib::PeerIndex> indices);

  // --- Local capacity (docs/capacity.md, "Local capacity") -------------------------------
  // Which capacity source each neighbor (by RIB index) is reached over with
  // LOCAL_CAPACITY_CAP, by name ("": none); a change re-weighs and re-exports at once.
  void SetLocalCapacitySources(const std::vector<std::string>& source_of_peer);
  // A source's live capacity (bits/s up): damped here (a drop at once, a recovery after the
  // hold-down), then the weights and the exported cumulative link bandwidth follow.
  rib::HoldDownOutcome ObserveLocalCapacity(const std::string& source, double bps);
  const LocalCapacity& local_capacity() const { return local_capacity_; }
  // Some neighbor is reached over `source` (it caps weights and exports).
  bool LocalCapacityInUse(const std::string& source) const;

 private:
  std::optional<double> CapOf(rib::PeerIndex peer) const override;
  void LocalCapacityApplied(int16_t index, double bps);
  // Hands on what the RIB has pending (the one flush; every entry point ends with it).
  void Flush();
  void ScheduleFlush();
  // `nlri` of `index` out of the RIB in slices, each handed on before the next.
  void WithdrawInSlices(rib::PeerIndex index, std::span<const net::Nlri> nlri);
  void Originate(const Network& n);

  RoutingCore core_;
  WeightsStage weights_;
  Advertiser advertiser_;
  LocalCapacity local_capacity_;
  rib::FibSink* fib_;
  Post post_;
  std::function<void()> flushed_;
  rib::LocalSourceOfPeer source_of_peer_;  // by RIB index; -1: none
  rib::PeerIndex local_index_ = 0;
  rib::StaleTable stale_;
  std::vector<Network> networks_;               // the config's
  std::vector<Network> api_networks_;           // added over the control API
  std::map<std::string, double> originated_bps_;  // by capacity source
  bool originating_ = false;
  bool flush_posted_ = false;
  // Watched by the posted flush: a Pipeline destroyed before its task ran is not touched.
  session::Lifetime lifetime_;
};

}  // namespace bagd::daemon
