#include "bgpd/daemon/pipeline.h"

namespace bagd::daemon {

namespace {
// Prefixes per slice of a session-loss flush: each slice's changes go to the peers and the
// weights batch before the next, so a full table's flush never holds a full table of
// changes (~170 bytes each) at once.
constexpr size_t kFlushSlice = 65536;
}  // namespace

Pipeline::Pipeline(uint32_t local_as, const rib::DecisionConfig& decision, const rib::WeightsConfig& weights,
                   session::Clock& clock, rib::FibSink* fib, session::SessionMetrics* metrics,
                   control::EventSink* events)
    : core_(local_as, decision),
      weights_(core_.rib(), weights, clock, fib, metrics, events),
      advertiser_(core_, weights_, clock, local_as) {
  rib::PeerInfo local;
  local.local = true;
  local.name = "local";
  local.asn = local_as;
  local.source.ebgp = false;
  local_index_ = core_.AddPeer(std::move(local), std::nullopt, NeighborPolicies{});
}

rib::PeerIndex Pipeline::AddNeighbor(rib::PeerInfo info, const wire::IpAddress& address, Outbound& out,
                                     const NeighborPolicies& policies, const rib::LinkBandwidthExport& lb_export) {
  const rib::PeerIndex index = core_.AddPeer(std::move(info), address, policies);
  advertiser_.AddPeer(index, out, ExportConfig{lb_export, policies.export_});
  return index;
}

void Pipeline::RemoveNeighbor(rib::PeerIndex index) {
  advertiser_.RemovePeer(index);
  core_.RemovePeer(index);
}

void Pipeline::SessionUp(rib::PeerIndex index, uint32_t router_id) {
  rib::Rib& rib = core_.rib();
  rib::PathSource src = rib.peer(index).source;
  src.router_id = router_id;
  rib.UpdatePeerSource(index, src);
  advertiser_.SessionUp(index);  // from the RIB as it is now (Writable flushes first)
}

void Pipeline::SessionDown(rib::PeerIndex index) {
  advertiser_.Flush();  // what came before the loss goes out first
  for (std::optional<wire::Prefix> next; (next = core_.PeerDownFrom(index, next, kFlushSlice));) advertiser_.Flush();
  advertiser_.SessionDown(index);
}

void Pipeline::SessionSuspended(rib::PeerIndex index) {
  advertiser_.Flush();
  advertiser_.SessionDown(index);
}

Pipeline::Reconfigured Pipeline::ReconfigureNeighbor(rib::PeerIndex index, const NeighborPolicies& policies,
                                                     const rib::LinkBandwidthExport& lb_export) {
  Reconfigured r;
  r.had_stored_routes = core_.received(index) != nullptr;
  r.import_changed = r.had_stored_routes != policies.soft_reconfiguration_inbound;
  for (int f = 0; f < wire::kFamilyCount; ++f) {
    r.import_changed |= core_.import_chain(index, static_cast<wire::Family>(f)).fingerprint != policies.import[f].fingerprint;
  }
  // Always: the chains point into the new policy set.
  core_.SetImport(index, policies);
  r.export_changed = advertiser_.Reconfigure(index, ExportConfig{lb_export, policies.export_});
  return r;
}

}  // namespace bagd::daemon
