#include "bgpd/daemon/routing_metrics.h"

#include <algorithm>

namespace bagd::daemon {

RoutingMetrics::RoutingMetrics(std::shared_ptr<prometheus::Registry> registry)
    : registry_(std::move(registry)),
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
      export_(prometheus::BuildCounter()
                  .Name("bagd_export_neighbor_updates_total")
                  .Help("Neighbors given a change set: with UPDATEs packed for an earlier neighbor of their "
                        "update group (shared) or packed for themselves (own)")
                  .Register(*registry_)),
      export_passes_(prometheus::BuildCounter()
                         .Name("bagd_export_passes_total")
                         .Help("Export passes: one per update group per change set")
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
      policy_hits_(prometheus::BuildCounter()
                       .Name("bagd_policy_statement_hits_total")
                       .Help("Routes whose conditions all held at the policy statement (counted on across reloads)")
                       .Register(*registry_)),
      update_seconds_(prometheus::BuildHistogram()
                          .Name("bagd_update_processing_seconds")
                          .Help("Time from a decoded UPDATE to its paths in the RIB (import policy included), every 16th UPDATE")
                          .Register(*registry_)),
      end_of_rib_(prometheus::BuildHistogram()
                      .Name("bagd_end_of_rib_seconds")
                      .Help("Time from Established to the neighbor's End-of-RIB, per family")
                      .Register(*registry_)) {
  // Present from start, at 0 (a rate() over a series that appears late misses its start).
  for (const char* f : {"ipv4-unicast", "ipv6-unicast"}) {
    RibPrefixes(f);
    RibPaths(f);
  }
  AttributeSets();
  DecisionRuns();
  ExportPasses();
  for (const char* how : {"shared", "own"}) ExportNeighborUpdates(how);
  NextHopGroups();
  QuantizationMaxError();
  for (const char* o : {"applied", "held", "suppressed"}) WeightChanges(o);
  for (const char* k : {"group", "route"}) FibOperations(k);
  for (const char* e : {"followed", "checked", "moved", "reverted"}) EarlyReweight(e);
  UpdateSeconds();
  EndOfRibSeconds();
}

prometheus::Gauge& RoutingMetrics::RibPrefixes(const std::string& f) { return rib_prefixes_.Add({{"family", f}}); }
prometheus::Gauge& RoutingMetrics::RibPaths(const std::string& f) { return rib_paths_.Add({{"family", f}}); }
prometheus::Gauge& RoutingMetrics::AttributeSets() { return attribute_sets_.Add({}); }
prometheus::Counter& RoutingMetrics::DecisionRuns() { return decision_runs_.Add({}); }
prometheus::Counter& RoutingMetrics::ExportPasses() { return export_passes_.Add({}); }
prometheus::Counter& RoutingMetrics::ExportNeighborUpdates(const std::string& how) { return export_.Add({{"how", how}}); }
prometheus::Counter& RoutingMetrics::PolicyHits(const std::string& policy, const std::string& statement) {
  return policy_hits_.Add({{"policy", policy}, {"statement", statement}});
}
prometheus::Histogram& RoutingMetrics::UpdateSeconds() { return update_seconds_.Add({}, UpdateSecondsBuckets()); }
prometheus::Histogram& RoutingMetrics::EndOfRibSeconds() {
  static const prometheus::Histogram::BucketBoundaries kBuckets{0.1, 0.5, 1, 2, 5, 10, 30, 60, 120, 300};
  return end_of_rib_.Add({}, kBuckets);
}

// --- The weights stage ---------------------------------------------------------------

prometheus::Gauge& RoutingMetrics::NextHopGroups() { return nexthop_groups_.Add({}); }
prometheus::Counter& RoutingMetrics::WeightChanges(const std::string& outcome) {
  return weight_changes_.Add({{"outcome", outcome}});
}
prometheus::Gauge& RoutingMetrics::QuantizationMaxError() { return quantization_error_.Add({}); }
prometheus::Gauge& RoutingMetrics::LocalCapacity(const std::string& source) {
  return local_capacity_.Add({{"source", source}});
}
prometheus::Gauge& RoutingMetrics::LocalCapacityCappedMembers() { return local_capacity_capped_.Add({}); }
prometheus::Counter& RoutingMetrics::FibOperations(const std::string& kind) { return fib_operations_.Add({{"kind", kind}}); }
prometheus::Counter& RoutingMetrics::EarlyReweight(const std::string& event) {
  return early_reweight_.Add({{"event", event}});
}
prometheus::Gauge& RoutingMetrics::GroupBudget(const std::string& what) {
  auto& f = group_budget_[what];
  if (f == nullptr) {
    f = &prometheus::BuildGauge()
             .Name("bagd_nexthop_groups_" + what)
             .Help("Next-hop-group budget (fib.max_groups): " + what)
             .Register(*registry_);
  }
  return f->Add({});
}
prometheus::Counter& RoutingMetrics::GroupBudgetSwaps() {
  if (group_budget_swaps_ == nullptr) {
    group_budget_swaps_ = &prometheus::BuildCounter()
                               .Name("bagd_nexthop_groups_swaps_total")
                               .Help("Slots the group budget moved between next-hop sets with the table full (swaps)")
                               .Register(*registry_);
  }
  return group_budget_swaps_->Add({});
}

prometheus::Counter& RoutingMetrics::GroupBudgetRouteMoves() {
  if (group_budget_moves_ == nullptr) {
    group_budget_moves_ = &prometheus::BuildCounter()
                               .Name("bagd_nexthop_groups_route_moves_total")
                               .Help("Installed routes repointed to another next-hop group by the group budget")
                               .Register(*registry_);
  }
  return group_budget_moves_->Add({});
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

}  // namespace bagd::daemon
