#include "bgpd/session/metrics.h"

#include <algorithm>

namespace bagd::session {

SessionMetrics::SessionMetrics(std::shared_ptr<prometheus::Registry> registry)
    : registry_(std::move(registry)),
      state_(prometheus::BuildGauge()
                 .Name("bagd_neighbor_state")
                 .Help("BGP FSM state: 0 Idle, 1 Connect, 2 Active, 3 OpenSent, 4 OpenConfirm, 5 Established")
                 .Register(*registry_)),
      transitions_(prometheus::BuildCounter()
                       .Name("bagd_neighbor_transitions_total")
                       .Help("FSM state changes, by the state entered")
                       .Register(*registry_)),
      received_(prometheus::BuildCounter()
                    .Name("bagd_messages_received_total")
                    .Help("BGP messages received, by type")
                    .Register(*registry_)),
      sent_(prometheus::BuildCounter().Name("bagd_messages_sent_total").Help("BGP messages sent, by type").Register(*registry_)),
      notif_sent_(prometheus::BuildCounter()
                      .Name("bagd_notifications_sent_total")
                      .Help("NOTIFICATIONs sent, by code and subcode")
                      .Register(*registry_)),
      notif_received_(prometheus::BuildCounter()
                          .Name("bagd_notifications_received_total")
                          .Help("NOTIFICATIONs received, by code and subcode")
                          .Register(*registry_)),
      bytes_in_(prometheus::BuildCounter().Name("bagd_bytes_received_total").Help("Octets received").Register(*registry_)),
      bytes_out_(prometheus::BuildCounter().Name("bagd_bytes_sent_total").Help("Octets sent").Register(*registry_)),
      prefixes_(prometheus::BuildGauge()
                    .Name("bagd_prefixes_received")
                    .Help("Paths in the RIB received from the neighbor, by family")
                    .Register(*registry_)),
      prefixes_sent_(prometheus::BuildGauge().Name("bagd_prefixes_sent").Help("Prefixes advertised to the neighbor").Register(*registry_)),
      rib_prefixes_(prometheus::BuildGauge().Name("bagd_rib_prefixes").Help("Prefixes in the RIB").Register(*registry_)),
      rib_paths_(prometheus::BuildGauge().Name("bagd_rib_paths").Help("Paths in the RIB").Register(*registry_)),
      attribute_sets_(prometheus::BuildGauge()
                          .Name("bagd_rib_attribute_sets")
                          .Help("Distinct interned path attribute sets")
                          .Register(*registry_)),
      decision_runs_(prometheus::BuildCounter()
                         .Name("bagd_decision_runs_total")
                         .Help("Best-path and multipath selections run")
                         .Register(*registry_)),
      updates_packed_(prometheus::BuildCounter()
                          .Name("bagd_updates_packed_total")
                          .Help("UPDATE messages built for the neighbor")
                          .Register(*registry_)),
      nexthop_groups_(prometheus::BuildGauge()
                          .Name("bagd_nexthop_groups")
                          .Help("Weighted next-hop groups in use")
                          .Register(*registry_)),
      weight_changes_(prometheus::BuildCounter()
                          .Name("bagd_weight_changes_total")
                          .Help("Next-hop-group member bandwidth changes by hold-down outcome")
                          .Register(*registry_)),
      quantization_error_(prometheus::BuildGauge()
                              .Name("bagd_weight_quantization_max_error_ratio")
                              .Help("Largest relative share error of any group's installed weights")
                              .Register(*registry_)),
      local_capacity_(prometheus::BuildGauge()
                          .Name("bagd_local_capacity_bps")
                          .Help("A local capacity source's capacity as the weights use it (after its hold-down)")
                          .Register(*registry_)),
      local_capacity_capped_(prometheus::BuildGauge()
                                 .Name("bagd_local_capacity_capped_members")
                                 .Help("Next-hop-group members weighed at their local link's capacity")
                                 .Register(*registry_)),
      fib_operations_(prometheus::BuildCounter()
                          .Name("bagd_fib_operations_total")
                          .Help("Group and route operations handed to the FIB")
                          .Register(*registry_)),
      early_reweight_(prometheus::BuildCounter()
                          .Name("bagd_early_reweight_total")
                          .Help("Early reweight: groups that followed, prefixes checked, moved, groups reverted")
                          .Register(*registry_)),
      prefix_limit_(prometheus::BuildGauge()
                        .Name("bagd_neighbor_prefix_limit")
                        .Help("Maximum prefixes (paths) the neighbor may hold in the family")
                        .Register(*registry_)),
      prefix_limit_state_(prometheus::BuildGauge()
                              .Name("bagd_neighbor_prefix_limit_state")
                              .Help("Prefix count against the maximum: 0 below the warning threshold, 1 at or "
                                    "above it, 2 above the limit")
                              .Register(*registry_)),
      prefix_limit_events_(prometheus::BuildCounter()
                               .Name("bagd_neighbor_prefix_limit_events_total")
                               .Help("Maximum-prefix events: warning (threshold reached), exceeded (limit passed)")
                               .Register(*registry_)),
      policy_hits_(prometheus::BuildCounter()
                       .Name("bagd_policy_statement_hits_total")
                       .Help("Routes whose conditions all held at the policy statement (counted on across reloads)")
                       .Register(*registry_)),
      fib_failures_(prometheus::BuildCounter()
                        .Name("bagd_fib_failures_total")
                        .Help("FIB backend operations that failed (they are retried)")
                        .Register(*registry_)),
      fib_retries_(prometheus::BuildCounter()
                       .Name("bagd_fib_retries_total")
                       .Help("Retry passes over FIB operations that failed")
                       .Register(*registry_)),
      fib_resyncs_(prometheus::BuildCounter()
                       .Name("bagd_fib_resyncs_total")
                       .Help("Full comparisons of bagd's FIB state with the backend (notifications were lost)")
                       .Register(*registry_)),
      fib_pending_(prometheus::BuildGauge()
                       .Name("bagd_fib_pending_operations")
                       .Help("FIB operations not yet confirmed by the backend")
                       .Register(*registry_)),
      fib_apply_(prometheus::BuildHistogram()
                     .Name("bagd_fib_apply_seconds")
                     .Help("Time of one write of pending operations to the FIB backend")
                     .Register(*registry_)),
      update_seconds_(prometheus::BuildHistogram()
                          .Name("bagd_update_processing_seconds")
                          .Help("Time from a decoded UPDATE to its paths in the RIB (import policy included), every 16th UPDATE")
                          .Register(*registry_)),
      end_of_rib_(prometheus::BuildHistogram()
                      .Name("bagd_end_of_rib_seconds")
                      .Help("Time from Established to the neighbor's End-of-RIB, per family")
                      .Register(*registry_)),
      build_info_(prometheus::BuildGauge()
                      .Name("bagd_build_info")
                      .Help("1, with the version and the git commit of the build as labels")
                      .Register(*registry_)) {
  // Present from start, at 0 (a rate() over a series that appears late misses its start).
  for (const char* f : {"ipv4-unicast", "ipv6-unicast"}) {
    RibPrefixes(f);
    RibPaths(f);
  }
  AttributeSets();
  DecisionRuns();
  NextHopGroups();
  QuantizationMaxError();
  for (const char* o : {"applied", "held", "suppressed"}) WeightChanges(o);
  for (const char* k : {"group", "route"}) FibOperations(k);
  for (const char* e : {"followed", "checked", "moved", "reverted"}) EarlyReweight(e);
  FibFailures();
  FibRetries();
  FibResyncs();
  for (const char* o : {"route", "group", "nexthop"}) {
    for (const char* c : {"deleted", "changed", "audit"}) FibRepairs(o, c);
  }
  FibRepairsHeld();
  FibConflicts();
  FibAudits();
  FibAuditSeconds();
  FibPending();
  FibApplySeconds();
  UpdateSeconds();
  EndOfRibSeconds();
}

prometheus::Histogram& SessionMetrics::FibApplySeconds() {
  static const prometheus::Histogram::BucketBoundaries kBuckets{0.0001, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10};
  return fib_apply_.Add({}, kBuckets);
}
prometheus::Histogram& SessionMetrics::UpdateSeconds() { return update_seconds_.Add({}, UpdateSecondsBuckets()); }
prometheus::Histogram& SessionMetrics::EndOfRibSeconds() {
  static const prometheus::Histogram::BucketBoundaries kBuckets{0.1, 0.5, 1, 2, 5, 10, 30, 60, 120, 300};
  return end_of_rib_.Add({}, kBuckets);
}
void SessionMetrics::SetBuildInfo(const std::string& version, const std::string& git) {
  build_info_.Add({{"version", version}, {"git", git}}).Set(1);
}

const std::vector<double>& UpdateSecondsBuckets() {
  static const std::vector<double> kBuckets{1e-6, 2e-6, 5e-6, 1e-5, 2e-5, 5e-5, 1e-4, 1e-3, 1e-2, 1e-1};
  return kBuckets;
}

void LocalHistogram::PublishTo(prometheus::Histogram& h) {
  if (!any_) return;
  h.ObserveMultiple(counts_, sum_);
  std::fill(counts_.begin(), counts_.end(), 0.0);
  sum_ = 0;
  any_ = false;
}

prometheus::Counter& SessionMetrics::PolicyHits(const std::string& policy, const std::string& statement) {
  return policy_hits_.Add({{"policy", policy}, {"statement", statement}});
}

prometheus::Gauge& SessionMetrics::PrefixLimit(const std::string& n, const std::string& family) {
  return prefix_limit_.Add({{"neighbor", n}, {"family", family}});
}
prometheus::Gauge& SessionMetrics::PrefixLimitState(const std::string& n, const std::string& family) {
  return prefix_limit_state_.Add({{"neighbor", n}, {"family", family}});
}
prometheus::Counter& SessionMetrics::PrefixLimitEvents(const std::string& n, const std::string& family,
                                                       const std::string& event) {
  return prefix_limit_events_.Add({{"neighbor", n}, {"family", family}, {"event", event}});
}

prometheus::Gauge& SessionMetrics::State(const std::string& n) { return state_.Add({{"neighbor", n}}); }
prometheus::Counter& SessionMetrics::Transition(const std::string& n, const std::string& to) {
  return transitions_.Add({{"neighbor", n}, {"to", to}});
}
prometheus::Counter& SessionMetrics::Received(const std::string& n, const std::string& type) {
  return received_.Add({{"neighbor", n}, {"type", type}});
}
prometheus::Counter& SessionMetrics::Sent(const std::string& n, const std::string& type) {
  return sent_.Add({{"neighbor", n}, {"type", type}});
}
prometheus::Counter& SessionMetrics::NotificationSent(const std::string& n, int code, int subcode) {
  return notif_sent_.Add({{"neighbor", n}, {"code", std::to_string(code)}, {"subcode", std::to_string(subcode)}});
}
prometheus::Counter& SessionMetrics::NotificationReceived(const std::string& n, int code, int subcode) {
  return notif_received_.Add({{"neighbor", n}, {"code", std::to_string(code)}, {"subcode", std::to_string(subcode)}});
}
prometheus::Counter& SessionMetrics::BytesIn(const std::string& n) { return bytes_in_.Add({{"neighbor", n}}); }
prometheus::Counter& SessionMetrics::BytesOut(const std::string& n) { return bytes_out_.Add({{"neighbor", n}}); }
prometheus::Gauge& SessionMetrics::Prefixes(const std::string& n, const std::string& family) {
  return prefixes_.Add({{"neighbor", n}, {"family", family}});
}

prometheus::Gauge& SessionMetrics::PrefixesSent(const std::string& n) { return prefixes_sent_.Add({{"neighbor", n}}); }
prometheus::Gauge& SessionMetrics::RibPrefixes(const std::string& f) { return rib_prefixes_.Add({{"family", f}}); }
prometheus::Gauge& SessionMetrics::RibPaths(const std::string& f) { return rib_paths_.Add({{"family", f}}); }
prometheus::Gauge& SessionMetrics::AttributeSets() { return attribute_sets_.Add({}); }
prometheus::Counter& SessionMetrics::DecisionRuns() { return decision_runs_.Add({}); }
prometheus::Counter& SessionMetrics::UpdatesPacked(const std::string& n) { return updates_packed_.Add({{"neighbor", n}}); }
prometheus::Gauge& SessionMetrics::NextHopGroups() { return nexthop_groups_.Add({}); }
prometheus::Counter& SessionMetrics::WeightChanges(const std::string& outcome) {
  return weight_changes_.Add({{"outcome", outcome}});
}
prometheus::Gauge& SessionMetrics::QuantizationMaxError() { return quantization_error_.Add({}); }
prometheus::Gauge& SessionMetrics::LocalCapacity(const std::string& source) {
  return local_capacity_.Add({{"source", source}});
}
prometheus::Gauge& SessionMetrics::LocalCapacityCappedMembers() { return local_capacity_capped_.Add({}); }
prometheus::Counter& SessionMetrics::FibOperations(const std::string& kind) { return fib_operations_.Add({{"kind", kind}}); }
prometheus::Counter& SessionMetrics::EarlyReweight(const std::string& event) {
  return early_reweight_.Add({{"event", event}});
}
prometheus::Gauge& SessionMetrics::GroupBudget(const std::string& what) {
  auto& f = group_budget_[what];
  if (f == nullptr) {
    f = &prometheus::BuildGauge()
             .Name("bagd_nexthop_groups_" + what)
             .Help("Next-hop-group budget (fib.max_groups): " + what)
             .Register(*registry_);
  }
  return f->Add({});
}
prometheus::Counter& SessionMetrics::GroupBudgetSwaps() {
  if (group_budget_swaps_ == nullptr) {
    group_budget_swaps_ = &prometheus::BuildCounter()
                               .Name("bagd_nexthop_groups_swaps_total")
                               .Help("Slots the group budget moved between next-hop sets with the table full (swaps)")
                               .Register(*registry_);
  }
  return group_budget_swaps_->Add({});
}

prometheus::Counter& SessionMetrics::GroupBudgetRouteMoves() {
  if (group_budget_moves_ == nullptr) {
    group_budget_moves_ = &prometheus::BuildCounter()
                               .Name("bagd_nexthop_groups_route_moves_total")
                               .Help("Installed routes repointed to another next-hop group by the group budget")
                               .Register(*registry_);
  }
  return group_budget_moves_->Add({});
}

const char* MessageTypeLabel(uint8_t type) {
  switch (type) {
    case 1: return "open";
    case 2: return "update";
    case 3: return "notification";
    case 4: return "keepalive";
    case 5: return "route_refresh";
  }
  return "unknown";
}

void NeighborSeries::Declare(const std::array<bool, net::kFamilyCount>& families) {
  if (!m_) return;
  for (uint8_t type = 1; type <= 5; ++type) {
    if (!received_[type]) received_[type] = &m_->Received(neighbor_, MessageTypeLabel(type));
    if (!sent_[type]) sent_[type] = &m_->Sent(neighbor_, MessageTypeLabel(type));
  }
  if (!bytes_in_) bytes_in_ = &m_->BytesIn(neighbor_);
  if (!bytes_out_) bytes_out_ = &m_->BytesOut(neighbor_);
  for (int f = 0; f < net::kFamilyCount; ++f) {
    if (families[f] && !prefixes_[f]) prefixes_[f] = &m_->Prefixes(neighbor_, net::FamilyName(static_cast<net::Family>(f)));
  }
  if (!prefixes_sent_) prefixes_sent_ = &m_->PrefixesSent(neighbor_);
  if (!updates_packed_) updates_packed_ = &m_->UpdatesPacked(neighbor_);
}

void NeighborSeries::Received(uint8_t type, size_t bytes) {
  if (!m_) return;
  auto& c = received_[Slot(type)];
  if (!c) c = &m_->Received(neighbor_, MessageTypeLabel(type));
  if (!bytes_in_) bytes_in_ = &m_->BytesIn(neighbor_);
  c->Increment();
  bytes_in_->Increment(static_cast<double>(bytes));
}

void NeighborSeries::Sent(uint8_t type, size_t bytes) {
  if (!m_) return;
  auto& c = sent_[Slot(type)];
  if (!c) c = &m_->Sent(neighbor_, MessageTypeLabel(type));
  if (!bytes_out_) bytes_out_ = &m_->BytesOut(neighbor_);
  c->Increment();
  bytes_out_->Increment(static_cast<double>(bytes));
}

void NeighborSeries::SetPrefixes(net::Family family, size_t paths) {
  if (!m_) return;
  auto& g = prefixes_[static_cast<int>(family)];
  if (!g) g = &m_->Prefixes(neighbor_, net::FamilyName(family));
  g->Set(static_cast<double>(paths));
}

void NeighborSeries::SetPrefixesSent(size_t prefixes) {
  if (!m_) return;
  if (!prefixes_sent_) prefixes_sent_ = &m_->PrefixesSent(neighbor_);
  prefixes_sent_->Set(static_cast<double>(prefixes));
}

void NeighborSeries::UpdatesPacked(size_t messages) {
  if (!m_) return;
  if (!updates_packed_) updates_packed_ = &m_->UpdatesPacked(neighbor_);
  updates_packed_->Increment(static_cast<double>(messages));
}

// --- Graceful restart (RFC 4724) ------------------------------------------------------

prometheus::Gauge& SessionMetrics::GracefulRestartStalePaths(const std::string& n, const std::string& family) {
  if (gr_stale_paths_ == nullptr) {
    gr_stale_paths_ = &prometheus::BuildGauge()
                           .Name("bagd_neighbor_graceful_restart_stale_paths")
                           .Help("Paths of a restarting neighbor kept as stale (RFC 4724 helper), per family")
                           .Register(*registry_);
  }
  return gr_stale_paths_->Add({{"neighbor", n}, {"family", family}});
}

prometheus::Counter& SessionMetrics::GracefulRestartEvents(const std::string& n, const std::string& event) {
  if (gr_events_ == nullptr) {
    gr_events_ = &prometheus::BuildCounter()
                      .Name("bagd_neighbor_graceful_restart_events_total")
                      .Help("Graceful restart of a neighbor: restart (paths kept), end_of_rib, restart_timer, "
                            "stale_timer, forwarding_not_preserved (stale paths removed)")
                      .Register(*registry_);
  }
  return gr_events_->Add({{"neighbor", n}, {"event", event}});
}

prometheus::Counter& SessionMetrics::FibGroupsRefused() {
  if (fib_groups_refused_ == nullptr) {
    fib_groups_refused_ = &prometheus::BuildCounter()
                               .Name("bagd_fib_groups_refused_total")
                               .Help("Next-hop group creates the FIB sync refused: the FIB held its limit of groups "
                                     "(fib.max_groups or the backend's); created once a group is deleted")
                               .Register(*registry_);
  }
  return fib_groups_refused_->Add({});
}

prometheus::Counter& SessionMetrics::FibRoutesRemovedWithGroup() {
  if (fib_routes_with_group_ == nullptr) {
    fib_routes_with_group_ = &prometheus::BuildCounter()
                                  .Name("bagd_fib_routes_removed_with_group_total")
                                  .Help("Routes the FIB removed together with their next-hop group (every route of "
                                        "a large group withdrawn at once, e.g. a full table's session loss): one "
                                        "kernel operation instead of one per route")
                                  .Register(*registry_);
  }
  return fib_routes_with_group_->Add({});
}

prometheus::Gauge& SessionMetrics::FibGroupGauge(const std::string& what) {
  static const std::map<std::string, std::pair<std::string, std::string>> kSeries{
      {"limit", {"bagd_fib_group_limit", "Most next-hop groups the FIB sync lets the FIB hold (0: no limit)"}},
      {"groups", {"bagd_fib_groups", "Next-hop groups the FIB holds (bagd's, a previous run's, ones being deleted)"}},
      {"waiting", {"bagd_fib_groups_waiting", "Next-hop groups not created for want of room under the limit"}},
      {"waiting_routes",
       {"bagd_fib_routes_waiting", "Routes whose next-hop group waits for room (on their old group, or not installed)"}},
  };
  auto& f = fib_group_gauges_[what];
  if (f == nullptr) {
    const auto& [name, help] = kSeries.at(what);
    f = &prometheus::BuildGauge().Name(name).Help(help).Register(*registry_);
  }
  return f->Add({});
}

prometheus::Counter& SessionMetrics::FibRepairs(const std::string& object, const std::string& cause) {
  if (fib_repairs_ == nullptr) {
    fib_repairs_ = &prometheus::BuildCounter()
                        .Name("bagd_fib_repairs_total")
                        .Help("bagd's FIB objects someone else deleted or changed, put back (cause deleted or "
                              "changed: a notification; audit: found by the periodic audit)")
                        .Register(*registry_);
  }
  return fib_repairs_->Add({{"object", object}, {"cause", cause}});
}

prometheus::Gauge& SessionMetrics::RepairGauge(const std::string& name, const std::string& help) {
  auto& f = fib_repair_gauges_[name];
  if (f == nullptr) f = &prometheus::BuildGauge().Name(name).Help(help).Register(*registry_);
  return f->Add({});
}

prometheus::Gauge& SessionMetrics::FibRepairsHeld() {
  return RepairGauge("bagd_fib_repairs_held",
                     "Repairs waiting for the backoff of an object someone else changes again and again");
}

prometheus::Gauge& SessionMetrics::FibConflicts() {
  return RepairGauge("bagd_fib_conflicts",
                     "Prefixes where another protocol's route holds the place of bagd's (left alone)");
}

prometheus::Gauge& SessionMetrics::FibAuditSeconds() {
  return RepairGauge("bagd_fib_audit_seconds", "How long the last FIB audit took (dump and compare)");
}

prometheus::Counter& SessionMetrics::FibAudits() {
  if (fib_audits_ == nullptr) {
    fib_audits_ = &prometheus::BuildCounter()
                       .Name("bagd_fib_audits_total")
                       .Help("FIB audits: what bagd owns in the backend dumped and compared (fib.audit_interval)")
                       .Register(*registry_);
  }
  return fib_audits_->Add({});
}

}  // namespace bagd::session
