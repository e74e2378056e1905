#include "bgpd/daemon/pipeline.h"

#include <algorithm>

namespace bagd::daemon {

namespace {
// Prefixes per slice of a session-loss flush: each slice's changes go to the peers and the
// weights batch before the next, so a full table's flush never holds a full table of
// changes (~170 bytes each) at once.
constexpr size_t kFlushSlice = 8192;
}  // namespace

Pipeline::Pipeline(uint32_t local_as, const rib::DecisionConfig& decision, const rib::WeightsConfig& weights,
                   session::Clock& clock, rib::FibSink* fib, session::SessionMetrics* metrics,
                   control::EventSink* events)
    : core_(local_as, decision),
      weights_(core_.rib(), weights, clock, fib, metrics, events),
      advertiser_(core_, weights_, clock, local_as),
      local_capacity_(clock, [this](int16_t index, double bps) { LocalCapacityApplied(index, bps); }) {
  advertiser_.SetLocalCapacity(this);
  rib::PeerInfo local;
  local.local = true;
  local.name = "local";
  local.asn = local_as;
  local.source.ebgp = false;
  local_index_ = core_.AddPeer(std::move(local), std::nullopt, NeighborPolicies{});
}

rib::PeerIndex Pipeline::AddNeighbor(rib::PeerInfo info, const net::IpAddress& address, Outbound& out,
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
  for (std::optional<net::Prefix> next; (next = core_.PeerDownFrom(index, next, kFlushSlice));) advertiser_.Flush();
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
  for (int f = 0; f < net::kFamilyCount; ++f) {
    r.import_changed |= core_.import_chain(index, static_cast<net::Family>(f)).fingerprint != policies.import[f].fingerprint;
  }
  // Always: the chains point into the new policy set.
  core_.SetImport(index, policies);
  r.export_changed = advertiser_.Reconfigure(index, ExportConfig{lb_export, policies.export_});
  return r;
}

void Pipeline::SetLocalCapacitySources(const std::vector<std::string>& source_of_peer) {
  rib::LocalSourceOfPeer by_peer(source_of_peer.size(), -1);
  for (size_t i = 0; i < source_of_peer.size(); ++i) {
    if (!source_of_peer[i].empty()) by_peer[i] = local_capacity_.Add(source_of_peer[i]);
  }
  while (!by_peer.empty() && by_peer.back() < 0) by_peer.pop_back();
  const bool changed = by_peer != source_of_peer_;
  source_of_peer_ = by_peer;
  weights_.SetLocalSources(local_capacity_.names(), std::move(by_peer));
  for (int16_t i = 0; i < static_cast<int16_t>(local_capacity_.names().size()); ++i) {
    if (const auto bps = local_capacity_.Applied(i)) weights_.SetLocalCapacity(i, *bps);
  }
  if (changed) advertiser_.LocalCapacityChanged();
}

rib::HoldDownOutcome Pipeline::ObserveLocalCapacity(const std::string& source, double bps) {
  if (local_capacity_.IndexOf(source) < 0) {
    local_capacity_.Add(source);
    weights_.SetLocalSources(local_capacity_.names(), source_of_peer_);
  }
  return local_capacity_.Observe(source, bps, weights_.groups().config().damping);
}

void Pipeline::LocalCapacityApplied(int16_t index, double bps) {
  weights_.SetLocalCapacity(index, bps);
  // Only a source some neighbor is reached over changes what is exported (a source that
  // only feeds `networks` does not re-export the table).
  if (std::find(source_of_peer_.begin(), source_of_peer_.end(), index) != source_of_peer_.end()) {
    advertiser_.LocalCapacityChanged();
  }
}

bool Pipeline::LocalCapacityInUse(const std::string& source) const {
  const int16_t index = local_capacity_.IndexOf(source);
  return index >= 0 && std::find(source_of_peer_.begin(), source_of_peer_.end(), index) != source_of_peer_.end();
}

std::optional<double> Pipeline::CapOf(rib::PeerIndex peer) const {
  return local_capacity_.Applied(rib::LocalSourceOf(source_of_peer_, peer));
}

}  // namespace bagd::daemon
