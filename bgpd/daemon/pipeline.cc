#include "bgpd/daemon/pipeline.h"

#include <algorithm>
#include <cstdlib>
#include <string_view>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"

namespace bagd::daemon {

namespace {
// Paths per slice when many leave at once (a session lost, stale paths swept, a family
// without graceful restart): each slice's changes go to the peers and the weights batch
// before the next, so a full table's removal never holds a full table of changes (~170
// bytes each) at once.
constexpr size_t kSlice = 8192;
// Changes that make an UPDATE batch worth handing on at once (a packed UPDATE holds ~1000);
// fewer wait for the posted flush, after the UPDATEs already read.
constexpr size_t kFlushChanges = 256;
}  // namespace

Pipeline::Pipeline(uint32_t local_as, const rib::DecisionConfig& decision, const rib::WeightsConfig& weights,
                   session::Clock& clock, rib::FibSink* fib, RoutingMetrics* metrics,
                   control::EventSink* events, Post post, std::function<void()> flushed)
    : core_(local_as, decision),
      weights_(core_.rib(), weights, clock, fib, metrics, events),
      advertiser_(core_, weights_, clock, local_as, this),
      local_capacity_(clock, [this](int16_t index, double bps) { LocalCapacityApplied(index, bps); }),
      fib_(fib),
      post_(std::move(post)),
      flushed_(std::move(flushed)) {
  rib::PeerInfo local;
  local.local = true;
  local.name = "local";
  local.asn = local_as;
  local.source.ebgp = false;
  local_index_ = core_.AddPeer(std::move(local), std::nullopt, NeighborPolicies{});
  // BAGD_UPDATE_GROUPS=0: every neighbor exported to alone, for side-by-side benchmarks of the
  // same binary (docs/benchmarks.md). Same UPDATEs either way; not a setting.
  if (const char* groups = std::getenv("BAGD_UPDATE_GROUPS"); groups != nullptr && std::string_view(groups) == "0") {
    advertiser_.set_shared_export(false);
  }
}

void Pipeline::Flush() {
  flush_posted_ = false;
  advertiser_.Flush();
  if (flushed_) flushed_();
}

void Pipeline::ScheduleFlush() {
  // Once the UPDATEs already read (from every peer) are in: a prefix that several peers
  // announce within one read goes out to the others once, with its final multipath set.
  if (flush_posted_) return;
  flush_posted_ = true;
  post_([this, alive = lifetime_.watch()] {
    if (!alive.expired() && flush_posted_) Flush();
  });
}

rib::PeerIndex Pipeline::AddNeighbor(rib::PeerInfo info, const net::IpAddress& address, Outbound& out,
                                     const NeighborPolicies& policies, const rib::LinkBandwidthExport& lb_export) {
  Flush();
  const rib::PeerIndex index = core_.AddPeer(std::move(info), address, policies);
  advertiser_.AddPeer(index, out, ExportConfig{lb_export, policies.export_});
  return index;
}

void Pipeline::RemoveNeighbor(rib::PeerIndex index) {
  if (core_.rib().paths_of(index) > 0 || stale_.any(index)) SessionDown(index);
  Flush();
  stale_.Clear(index);
  advertiser_.RemovePeer(index);
  core_.RemovePeer(index);
}

void Pipeline::SessionUp(rib::PeerIndex index, uint32_t router_id, bool defer_initial) {
  Flush();
  rib::Rib& rib = core_.rib();
  rib::PathSource src = rib.peer(index).source;
  src.router_id = router_id;
  rib.UpdatePeerSource(index, src);
  advertiser_.SessionUp(index, defer_initial);
}

void Pipeline::ReleaseInitial(rib::PeerIndex index) {
  Flush();
  advertiser_.ReleaseHeld(index);
}

void Pipeline::SessionDown(rib::PeerIndex index) {
  Flush();  // what came before the loss goes out first
  stale_.Clear(index);
  for (std::optional<net::Prefix> next; (next = core_.PeerDownFrom(index, next, kSlice));) Flush();
  advertiser_.SessionDown(index);  // after the last slice is handed on (Writable)
}

size_t Pipeline::SessionLostGracefully(rib::PeerIndex index, const std::array<bool, net::kFamilyCount>& retain) {
  Flush();
  size_t kept = 0;
  for (int f = 0; f < net::kFamilyCount; ++f) {
    const auto family = static_cast<net::Family>(f);
    std::vector<net::Nlri> paths = core_.rib().PathsOf(index, family);
    if (retain[f]) {
      // Every path of the family, also those announced again after an earlier restart whose
      // End-of-RIB never came: they are all the peer's previous state now.
      kept += stale_.Begin(index, family, rib::StaleCause::kGracefulRestart, std::move(paths)).marked();
    } else {
      stale_.Clear(index, family);
      WithdrawInSlices(index, paths);
    }
  }
  advertiser_.SessionDown(index);
  return kept;
}

void Pipeline::Ingest(rib::PeerIndex index, const wire::UpdateMessage& u) {
  if (stale_.any(index)) {
    // Announced again: no longer stale. Withdrawn: gone from the RIB now, nothing to sweep.
    auto refreshed = [&](const std::vector<net::Nlri>& nlri) {
      for (const net::Nlri& n : nlri) stale_.Refreshed(index, n);
    };
    refreshed(u.nlri);
    refreshed(u.withdrawn);
    if (u.attrs.mp_reach) refreshed(u.attrs.mp_reach->nlri);
    if (u.attrs.mp_unreach) refreshed(u.attrs.mp_unreach->withdrawn);
  }
  core_.Ingest(index, u);
  // A packed UPDATE's changes go out at once, in the order they came (no sort needed);
  // small UPDATEs (one prefix each, or a few) are coalesced over what was already read.
  if (core_.rib().pending_changes() >= kFlushChanges) {
    Flush();
  } else {
    ScheduleFlush();
  }
}

std::optional<Pipeline::Swept> Pipeline::EndOfRib(rib::PeerIndex index, net::Family family) {
  Flush();  // the table so far, before convergence releases the FIB
  return SweepStale(index, family, rib::StaleCause::kGracefulRestart);
}

void Pipeline::InitialTablesIn() {
  WeighNow();  // weights first, so the FIB sees the whole table at once
  if (fib_ != nullptr) fib_->InitialTablesIn();
}

void Pipeline::WeighNow() {
  Flush();
  weights_.RunNow();
}

void Pipeline::ReconfigureWeights(const rib::WeightsConfig& config, bool reweigh) {
  Flush();
  weights_.Reconfigure(config, reweigh);
  Flush();
}

size_t Pipeline::BeginStale(rib::PeerIndex index, net::Family family, rib::StaleCause cause) {
  Flush();
  return stale_.Begin(index, family, cause, core_.rib().PathsOf(index, family)).marked();
}

std::optional<Pipeline::Swept> Pipeline::SweepStale(rib::PeerIndex index, net::Family family, rib::StaleCause cause) {
  Flush();  // what came before goes out first
  rib::StalePaths* stale = stale_.Find(index, family, cause);
  if (stale == nullptr) return std::nullopt;
  Swept s;
  s.marked = stale->marked();
  const size_t before = core_.rib().paths_of(index, family);
  // In slices, as a session loss: a full table gone stale never makes one change set.
  for (auto slice = stale->TakeStale(kSlice); !slice.empty(); slice = stale->TakeStale(kSlice)) {
    core_.Withdraw(index, slice);
    Flush();
  }
  s.removed = before - core_.rib().paths_of(index, family);
  stale_.Clear(index, family);
  return s;
}

void Pipeline::WithdrawInSlices(rib::PeerIndex index, std::span<const net::Nlri> nlri) {
  for (size_t at = 0; at < nlri.size(); at += kSlice) {
    core_.Withdraw(index, nlri.subspan(at, std::min(kSlice, nlri.size() - at)));
    Flush();
  }
}

size_t Pipeline::Resend(rib::PeerIndex index, net::Family family, bool enhanced) {
  Flush();
  return advertiser_.Resend(index, family, enhanced);
}

size_t Pipeline::Reimport(rib::PeerIndex index, net::Family family) {
  Flush();
  const size_t n = core_.Reimport(index, family);
  Flush();
  return n;
}

// --- Own routes ---------------------------------------------------------------------------

void Pipeline::Originate(const Network& n) {
  std::optional<double> bps = n.link_bandwidth_bps;
  if (!n.capacity_source.empty()) {
    auto it = originated_bps_.find(n.capacity_source);
    bps = it == originated_bps_.end() ? std::nullopt : std::optional<double>(it->second);
  }
  core_.Originate(local_index_, n.nlri, bps);
}

void Pipeline::SetNetworks(std::vector<Network> networks) {
  Flush();
  networks_ = std::move(networks);
  if (!originating_) return;
  for (const Network& n : networks_) Originate(n);
  Flush();
}

void Pipeline::StartOriginating() {
  if (originating_) return;
  originating_ = true;
  // Our own routes: ORIGIN IGP, empty AS_PATH; the next hop is set per peer on export. A
  // configured link bandwidth rides along as the community our neighbors see.
  Flush();
  for (const Network& n : networks_) Originate(n);
  for (const Network& n : api_networks_) Originate(n);
  Flush();
}

absl::StatusOr<bool> Pipeline::AddNetwork(const Network& network) {
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
  if (originating_) {
    Flush();
    Originate(network);
    Flush();
  }
  return replaced;
}

absl::Status Pipeline::DeleteNetwork(const net::Prefix& prefix) {
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
  if (originating_) {
    Flush();
    core_.WithdrawOwn(local_index_, nlri);
    Flush();
  }
  return absl::OkStatus();
}

void Pipeline::SetOriginatedBandwidth(const std::string& source, double bps) {
  auto [it, fresh] = originated_bps_.try_emplace(source, bps);
  if (!fresh && it->second == bps) return;
  it->second = bps;
  if (!originating_) return;
  Flush();
  for (const Network& n : networks_) {
    if (n.capacity_source == source) Originate(n);
  }
  Flush();
}

// --- Reload -------------------------------------------------------------------------------

std::vector<Pipeline::Reconfigured> Pipeline::Apply(const ReloadPlan& plan, std::span<const rib::PeerIndex> indices) {
  Flush();  // what came before the reload goes out under the old config
  std::vector<Reconfigured> out(plan.neighbors.size());
  // Kept neighbors: the new chains (always: they point into the new policy set) and export
  // settings. A changed import chain re-evaluates what the neighbor sent, from its stored
  // routes when it keeps them; a changed export side is exported again and only the
  // differences go out.
  for (size_t i = 0; i < plan.neighbors.size() && i < indices.size(); ++i) {
    const NeighborPlan& n = plan.neighbors[i];
    if (n.kind != NeighborPlan::Kind::kKept) continue;
    const rib::PeerIndex index = indices[i];
    Reconfigured& r = out[i];
    r.had_stored_routes = core_.received(index) != nullptr;
    r.import_changed = r.had_stored_routes != n.policies.soft_reconfiguration_inbound;
    for (int f = 0; f < net::kFamilyCount; ++f) {
      r.import_changed |=
          core_.import_chain(index, static_cast<net::Family>(f)).fingerprint != n.policies.import[f].fingerprint;
    }
    core_.SetImport(index, n.policies);
    r.export_changed = advertiser_.Reconfigure(index, ExportConfig{n.lb_export, n.policies.export_});
    if (!r.import_changed) continue;
    // Stored routes still kept under the new settings: applied from them, else asked for.
    r.needs_refresh = !r.had_stored_routes || core_.received(index) == nullptr;
    if (r.needs_refresh) continue;
    for (int f = 0; f < net::kFamilyCount; ++f) r.reimported[f] = Reimport(index, static_cast<net::Family>(f));
  }
  Flush();

  // Own routes: the new list is originated, what left it is withdrawn.
  api_networks_ = plan.api_networks;
  if (originating_) {
    for (const net::Nlri& nlri : plan.withdrawn) core_.WithdrawOwn(local_index_, nlri);
  }
  networks_ = plan.networks;
  if (originating_) {
    for (const Network& n : networks_) Originate(n);  // the RIB ignores an unchanged one
  }
  Flush();

  // Local capacity: which neighbors are capped by which source (re-weighed at once if that
  // changed), and the sources' pending recoveries timed by the new damping.
  local_capacity_.Reconfigure(weights_.groups().config().damping, plan.weights.damping);
  std::vector<std::string> by_peer;
  for (size_t i = 0; i < plan.neighbors.size() && i < indices.size(); ++i) {
    if (plan.neighbors[i].local_capacity_source.empty()) continue;
    if (by_peer.size() <= indices[i]) by_peer.resize(size_t{indices[i]} + 1);
    by_peer[indices[i]] = plan.neighbors[i].local_capacity_source;
  }
  SetLocalCapacitySources(by_peer);
  // New policy or limits: every route is weighed again, at once.
  ReconfigureWeights(plan.weights, plan.reweigh);
  return out;
}

// --- Local capacity -----------------------------------------------------------------------

void Pipeline::SetLocalCapacitySources(const std::vector<std::string>& source_of_peer) {
  Flush();
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
  Flush();
}

rib::HoldDownOutcome Pipeline::ObserveLocalCapacity(const std::string& source, double bps) {
  Flush();
  if (local_capacity_.IndexOf(source) < 0) {
    local_capacity_.Add(source);
    weights_.SetLocalSources(local_capacity_.names(), source_of_peer_);
  }
  const rib::HoldDownOutcome o = local_capacity_.Observe(source, bps, weights_.groups().config().damping);
  Flush();
  return o;
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
