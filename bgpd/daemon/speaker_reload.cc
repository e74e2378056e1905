// The session half of a reload (SIGHUP) and the control API's networks. What changes is
// decided by PlanReload (reload_plan.h) before anything changes; the speaker stops, creates
// and updates sessions, then hands the routing half to Pipeline::Apply.
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "bgpd/daemon/reload_plan.h"
#include "bgpd/daemon/speaker.h"
#include "bgpd/session/log.h"
#include "conf/neighbor_groups.h"

namespace bagd::daemon {

using namespace session;  // the session layer's types (Peer, Clock, log)

absl::Status Speaker::Reload(const config::v1::Config& config, std::vector<std::string>* needs_restart) {
  // Everything is checked before anything changes: an error keeps the running config whole.
  // The sessions as they run (a password_file's key as read when the session began).
  std::vector<PeerConfig> running;
  for (const auto& p : peers_) running.push_back(p->config());
  // Dynamic neighbors are planned like configured ones: made again from the next config's
  // groups, a group's change applies to them as to its configured members.
  const config::v1::Config next = WithDynamicNeighbors(config);
  const auto dynamic_before = dynamic_;
  auto planned = PlanReload(config_, next, pipeline_->api_networks(), options_.fib_max_weight,
                            options_.fib_max_groups, running);
  if (!planned.ok()) return planned.status();
  const ReloadPlan& plan = *planned;

  // Sessions first. Removed neighbors: Cease / Peer De-configured, their routes withdrawn.
  for (const std::string& name : plan.removed) {
    log::Info("config reload: neighbor %s removed from the configuration: Cease / Peer De-configured", name);
    RemovePeer(name, wire::NotificationMessage{6, wire::cease::kPeerDeconfigured, {}}, "removed from the configuration");
  }
  std::vector<rib::PeerIndex> indices(plan.neighbors.size());
  std::vector<Peer*> to_start;
  for (size_t i = 0; i < plan.neighbors.size(); ++i) {
    const NeighborPlan& n = plan.neighbors[i];
    if (n.kind == NeighborPlan::Kind::kReset) {
      // RFC 4486 §4: Other Configuration Change. Only this session; its routes go and come
      // back with the new session.
      const std::string what = n.changed_fields.empty() ? "router defaults" : absl::StrJoin(n.changed_fields, ", ");
      log::Info("config reload: neighbor %s: %s changed: the session restarts (Cease / Other Configuration Change)",
                n.name, what);
      RemovePeer(n.name, wire::NotificationMessage{6, wire::cease::kOtherConfigurationChange, {}},
                 absl::StrCat("configuration changed: ", what));
    }
    if (n.kind != NeighborPlan::Kind::kKept) {
      auto fresh = AddPeer(n.peer, n.lb_export, n.policies);
      if (!fresh.ok()) return fresh.status();
      to_start.push_back(*fresh);
      indices[i] = (*fresh)->rib_index;
      if (n.kind == NeighborPlan::Kind::kAdded) log::Info("config reload: neighbor %s added", n.name);
      continue;
    }
    Peer* p = FindPeer(n.name);
    indices[i] = p->rib_index;
    if (!n.changed_fields.empty()) {
      log::Info("config reload: neighbor %s: %s applied, the session stays", n.name, absl::StrJoin(n.changed_fields, ", "));
    }
    p->ApplyInPlace(n.peer);
    if (p->admin_down() && HasRestartStale(*p)) SweepAllStale(*p, "shutdown", "administrative shutdown");
  }
  if (auto st = ApplyGtsmToListeners(); !st.ok()) log::Warning("config reload: %s", st.ToString());
  for (const net::Prefix& prefix : plan.api_replaced) {
    log::Info("config reload: network %s is in the file now; the one added over the control API is replaced",
              prefix.ToString());
  }

  // Then the routing half: policies, link-bandwidth export, networks, local capacity, weights.
  const std::vector<Pipeline::Reconfigured> done = pipeline_->Apply(plan, indices);
  for (size_t i = 0; i < plan.neighbors.size(); ++i) {
    if (plan.neighbors[i].kind != NeighborPlan::Kind::kKept) continue;
    Peer* p = FindPeer(plan.neighbors[i].name);
    if (done[i].import_changed && p->established()) {
      log::Info("config reload: neighbor %s: import policy changed: %s", p->config().Name(), ReapplyImport(*p, done[i]));
    }
    if (done[i].export_changed && p->established()) {
      log::Info("config reload: neighbor %s: export policy or link bandwidth changed: routes exported again, only the "
                "differences sent", p->config().Name());
    }
    ShowPolicies(*p);
  }
  // Every chain now points into the new set; the old one goes, its last hits counted.
  if (routing_metrics_ && policies_) SyncPolicyMetrics(*policies_, *routing_metrics_, policy_hits_synced_);
  policy_hits_synced_.Reloaded();
  policies_ = plan.policies;
  config_ = plan.running;
  ConfigureBmp(config_);
  for (Peer* p : to_start) p->Start();
  // A dynamic neighbor is one of its group while it is in the next config's ranges; one that
  // is configured now is a configured neighbor; one whose session restarts here goes (its
  // peer connects again and joins the group afresh). (RemovePeer forgot the ones reset.)
  dynamic_.clear();
  const absl::flat_hash_set<std::string> kept = Names(config_.neighbors()), configured = Names(config.neighbors());
  for (const auto& [name, was] : dynamic_before) {
    const auto address = net::IpAddress::Parse(name);
    const auto match = address.ok() ? conf::MatchListenRange(config_, *address) : std::nullopt;
    if (configured.contains(name) || !kept.contains(name) || !match) continue;
    dynamic_[name] = DynamicNeighbor{config_.neighbor_groups(match->group).name(), match->range};
    if (Peer* p = FindPeer(name); p != nullptr && !p->established()) RetireDynamicLater(*p);
  }
  CountDynamic();
  RefreshRibMetrics();
  log::Info("config reloaded: %d neighbors added, %d removed, %d restarted, %d changed in place; policies, "
            "damping, link bandwidth, networks, maximum prefixes and FIB limits applied",
            plan.added(), plan.removed.size(), plan.reset(), plan.updated());
  for (const std::string& r : plan.needs_restart) {
    log::Warning("config reload: %s changed: needs a restart of bagd; not applied", r);
  }
  if (needs_restart != nullptr) *needs_restart = plan.needs_restart;
  return absl::OkStatus();
}

config::v1::Config Speaker::WithDynamicNeighbors(const config::v1::Config& next) const {
  config::v1::Config out = next;
  const absl::flat_hash_set<std::string> configured = Names(next.neighbors());
  absl::flat_hash_map<int, uint32_t> members;  // by group index in `next`
  for (const auto& p : peers_) {  // in the order they came
    const std::string& name = p->config().Name();
    if (!dynamic_.contains(name) || configured.contains(name)) continue;
    const net::IpAddress address = p->config().address;
    const auto match = conf::MatchListenRange(next, address);
    if (!match || members[match->group] >= next.neighbor_groups(match->group).listen_limit()) continue;
    ++members[match->group];
    *out.add_neighbors() = conf::DynamicNeighbor(next, match->group, address);
  }
  return out;
}

std::string Speaker::ReapplyImport(Peer& peer, const Pipeline::Reconfigured& r) {
  const auto& n = peer.negotiated();
  std::vector<std::string> done;
  for (int f = 0; f < net::kFamilyCount; ++f) {
    if (!n || !n->families[f]) continue;
    const auto family = static_cast<net::Family>(f);
    if (!r.needs_refresh) {
      // Soft reconfiguration inbound: the pipeline applied it from the routes as received.
      done.push_back(absl::StrCat(net::FamilyName(family), ": ", r.reimported[f], " stored routes evaluated again"));
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

absl::StatusOr<bool> Speaker::AddNetwork(const Network& network) {
  auto replaced = pipeline_->AddNetwork(network);
  if (!replaced.ok()) return replaced.status();
  log::Info("control API: originating %s%s%s", network.nlri.prefix.ToString(),
            network.link_bandwidth_bps ? absl::StrCat(" with link bandwidth ", *network.link_bandwidth_bps / 1e9, " Gbit/s")
                                       : std::string(),
            *replaced ? " (replacing the one added before)" : "");
  return replaced;
}

absl::Status Speaker::DeleteNetwork(const net::Prefix& prefix) {
  if (auto st = pipeline_->DeleteNetwork(prefix); !st.ok()) return st;
  log::Info("control API: withdrawing %s", prefix.ToString());
  return absl::OkStatus();
}

}  // namespace bagd::daemon
