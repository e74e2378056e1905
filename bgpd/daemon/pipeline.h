// The routing path of the daemon, its stages wired together: RoutingCore → Advertiser →
// WeightsStage → rib::FibSink. The Speaker runs it from its sessions; the replay tests
// (tests/replay) run the same object from an event log, with recording Outbounds and a
// recording FIB, so what they check is what the daemon does.
#pragma once

#include <memory>
#include <optional>

#include "bgpd/daemon/advertiser.h"
#include "bgpd/daemon/config_translation.h"
#include "bgpd/daemon/local_capacity.h"
#include "bgpd/daemon/routing_core.h"
#include "bgpd/daemon/weights_stage.h"
#include "bgpd/session/clock.h"
#include "bgpd/session/metrics.h"

namespace bagd::daemon {

class Pipeline final : private LocalCapacityView {
 public:
  // `events` (may be null): the weights stage's WeightsEvents (WatchEvents).
  Pipeline(uint32_t local_as, const rib::DecisionConfig& decision, const rib::WeightsConfig& weights,
           session::Clock& clock, rib::FibSink* fib, session::SessionMetrics* metrics,
           control::EventSink* events = nullptr);

  RoutingCore& core() { return core_; }
  const RoutingCore& core() const { return core_; }
  Advertiser& advertiser() { return advertiser_; }
  const Advertiser& advertiser() const { return advertiser_; }
  WeightsStage& weights() { return weights_; }
  const WeightsStage& weights() const { return weights_; }
  const rib::Rib& rib() const { return core_.rib(); }

  // This router's own routes' index (config networks).
  rib::PeerIndex local_index() const { return local_index_; }
  // A neighbor in every stage; `out` outlives it here (RemoveNeighbor).
  rib::PeerIndex AddNeighbor(rib::PeerInfo info, const net::IpAddress& address, Outbound& out,
                             const NeighborPolicies& policies, const rib::LinkBandwidthExport& lb_export);
  void RemoveNeighbor(rib::PeerIndex index);

  // The session came up (the neighbor's BGP identifier learned): the initial dump.
  void SessionUp(rib::PeerIndex index, uint32_t router_id);
  // The session ended: the neighbor's paths leave the RIB in slices, each handed on before
  // the next, then its Adj-RIB-Out goes.
  void SessionDown(rib::PeerIndex index);
  // The session ended but the neighbor's paths stay (graceful restart, RFC 4724 §4.2: they
  // are stale, used as before): only its Adj-RIB-Out goes.
  void SessionSuspended(rib::PeerIndex index);
  // One UPDATE (End-of-RIB excluded) into the RIB; Flush() hands its changes on (the
  // Speaker coalesces several UPDATEs before it does).
  void Ingest(rib::PeerIndex index, const wire::UpdateMessage& update) { core_.Ingest(index, update); }
  void Flush() { advertiser_.Flush(); }

  // A reload's new settings for one neighbor: what changed (the caller re-evaluates imports,
  // which may need the session: a ROUTE-REFRESH).
  struct Reconfigured {
    bool import_changed = false;
    bool export_changed = false;
    bool had_stored_routes = false;  // soft reconfiguration was on before
  };
  Reconfigured ReconfigureNeighbor(rib::PeerIndex index, const NeighborPolicies& policies,
                                   const rib::LinkBandwidthExport& lb_export);

  // Local capacity (docs/capacity.md, "Local capacity"). Which capacity source each
  // neighbor (by RIB index) is reached over with LOCAL_CAPACITY_CAP, by name ("": none);
  // a change (config, reload) re-weighs and re-exports at once, no session touched.
  void SetLocalCapacitySources(const std::vector<std::string>& source_of_peer);
  // A source's live capacity (bits/s up), from the capacity stage: damped here (a drop at
  // once, a recovery after the hold-down), then the weights and the exported cumulative
  // link bandwidth follow.
  rib::HoldDownOutcome ObserveLocalCapacity(const std::string& source, double bps);
  const LocalCapacity& local_capacity() const { return local_capacity_; }
  // Some neighbor is reached over `source` (it caps weights and exports).
  bool LocalCapacityInUse(const std::string& source) const;
  // The damping changed (reload): the sources' pending recoveries follow the new timers.
  void ReconfigureLocalCapacity(const rib::DampingConfig& old_damping, const rib::DampingConfig& damping) {
    local_capacity_.Reconfigure(old_damping, damping);
  }

 private:
  std::optional<double> CapOf(rib::PeerIndex peer) const override;
  void LocalCapacityApplied(int16_t index, double bps);

  RoutingCore core_;
  WeightsStage weights_;
  Advertiser advertiser_;
  LocalCapacity local_capacity_;
  rib::LocalSourceOfPeer source_of_peer_;  // by RIB index; -1: none
  rib::PeerIndex local_index_ = 0;
};

}  // namespace bagd::daemon
