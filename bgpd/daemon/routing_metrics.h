// Prometheus metrics of the routing path (prometheus-cpp): the RIB and the routing core, as
// the speaker refreshes them (Speaker::RefreshRibMetrics, SyncPolicyMetrics), and the weights
// stage (WeightsStage::RefreshMetrics). Names:
//   bagd_rib_prefixes{family}, bagd_rib_paths{family}  gauge
//   bagd_rib_attribute_sets                            gauge: distinct interned attribute sets
//   bagd_decision_runs_total                           counter: best-path selections
//   bagd_export_passes_total                           counter: export passes (one per update group
//                                                      per change set, bgpd/daemon/advertiser.h)
//   bagd_export_neighbor_updates_total{how}            counter: neighbors given a change set, with the
//                                                      UPDATEs of their group ("shared") or their "own"
//   bagd_policy_statement_hits_total{policy,statement} counter: routes whose conditions held at
//                                                      the statement, across reloads
//                                                      (bgpd/daemon/policy_view.h SyncPolicyMetrics)
//   bagd_update_processing_seconds                     histogram: one received UPDATE, decoded, into
//                                                      the RIB (import policy included); every 16th
//   bagd_end_of_rib_seconds                            histogram: Established to the neighbor's End-of-RIB
// The weights stage's:
//   bagd_nexthop_groups                                gauge: weighted next-hop groups in use
//   bagd_weight_changes_total{outcome}                 counter: member bandwidth changes, by what
//                                                      the hold-down did: applied, held, suppressed
//   bagd_weight_quantization_max_error_ratio           gauge: largest relative share error of any
//                                                      group's installed weights (0.01 = 1 %)
//   bagd_local_capacity_bps{source}                    gauge: a local capacity source's capacity as the
//                                                      weights use it (after its hold-down)
//   bagd_local_capacity_capped_members                 gauge: next-hop-group members weighed at their
//                                                      local link's capacity (below what they advertise)
//   bagd_fib_operations_total{kind}                    counter: group / route operations the weights
//                                                      stage handed to the FIB (what the FIB sync did
//                                                      with them: FibMetrics, fib_metrics.h)
//   bagd_early_reweight_total{event}                   counter: early reweight (docs/weights.md): groups
//                                                      "followed" their first re-announced prefixes,
//                                                      prefixes "checked" after, of them "moved" to
//                                                      another group, groups "reverted" (most had not
//                                                      changed)
//   bagd_nexthop_groups_{limit,wanted,installed,merged,merged_prefixes,unrouted_prefixes}
//                                                      gauges of the group budget (fib.max_groups):
//                                                      the limit, the distinct groups the routes want,
//                                                      those in the FIB, wanted groups served by
//                                                      another's weights and their prefixes, and
//                                                      prefixes not installed (table full)
//   bagd_nexthop_groups_merge_worst_error, bagd_nexthop_groups_merge_weighted_error
//                                                      gauges: share error of merged groups, the
//                                                      largest and the traffic-weighted mean
//   bagd_nexthop_groups_route_moves_total              counter: installed routes repointed by merges
//   bagd_nexthop_groups_swaps_total                    counter: slots moved between next-hop sets (table full)
// Every series that does not depend on a policy, a local capacity source or the group budget
// exists from start, at 0. Registered on the registry that session::SessionMetrics (the
// sessions, bgpd/session/metrics.h) and FibMetrics (the FIB sync, fib_metrics.h) use too.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

namespace bagd::daemon {

class RoutingMetrics {
 public:
  explicit RoutingMetrics(std::shared_ptr<prometheus::Registry> registry);
  const std::shared_ptr<prometheus::Registry>& registry() const { return registry_; }

  // --- The RIB and the routing core.
  prometheus::Gauge& RibPrefixes(const std::string& family);
  prometheus::Gauge& RibPaths(const std::string& family);
  prometheus::Gauge& AttributeSets();
  prometheus::Counter& DecisionRuns();
  prometheus::Counter& ExportPasses();
  prometheus::Counter& ExportNeighborUpdates(const std::string& how);  // "shared", "own"
  prometheus::Counter& PolicyHits(const std::string& policy, const std::string& statement);
  prometheus::Histogram& UpdateSeconds();
  prometheus::Histogram& EndOfRibSeconds();

  // --- The weights stage.
  prometheus::Gauge& NextHopGroups();
  prometheus::Counter& WeightChanges(const std::string& outcome);
  prometheus::Gauge& QuantizationMaxError();
  prometheus::Gauge& LocalCapacity(const std::string& source);
  prometheus::Gauge& LocalCapacityCappedMembers();
  prometheus::Counter& FibOperations(const std::string& kind);
  prometheus::Counter& EarlyReweight(const std::string& event);
  // bagd_nexthop_groups_<what> (the group budget's gauges, above); created when first used.
  prometheus::Gauge& GroupBudget(const std::string& what);
  prometheus::Counter& GroupBudgetRouteMoves();
  prometheus::Counter& GroupBudgetSwaps();  // bagd_nexthop_groups_swaps_total

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Gauge>& rib_prefixes_;
  prometheus::Family<prometheus::Gauge>& rib_paths_;
  prometheus::Family<prometheus::Gauge>& attribute_sets_;
  prometheus::Family<prometheus::Counter>& decision_runs_;
  prometheus::Family<prometheus::Counter>& export_;
  prometheus::Family<prometheus::Counter>& export_passes_;
  prometheus::Family<prometheus::Gauge>& nexthop_groups_;
  prometheus::Family<prometheus::Counter>& weight_changes_;
  prometheus::Family<prometheus::Gauge>& quantization_error_;
  prometheus::Family<prometheus::Gauge>& local_capacity_;
  prometheus::Family<prometheus::Gauge>& local_capacity_capped_;
  prometheus::Family<prometheus::Counter>& fib_operations_;
  prometheus::Family<prometheus::Counter>& early_reweight_;
  prometheus::Family<prometheus::Counter>& policy_hits_;
  prometheus::Family<prometheus::Histogram>& update_seconds_;
  prometheus::Family<prometheus::Histogram>& end_of_rib_;
  std::map<std::string, prometheus::Family<prometheus::Gauge>*> group_budget_;
  prometheus::Family<prometheus::Counter>* group_budget_moves_ = nullptr;
  prometheus::Family<prometheus::Counter>* group_budget_swaps_ = nullptr;
};

// Observations counted on the event thread without a lock (an UPDATE costs about a
// microsecond: a prometheus::Histogram's mutex per UPDATE would be a measurable share), then
// handed to the Histogram in one ObserveMultiple when the RIB gauges are refreshed.
class LocalHistogram {
 public:
  explicit LocalHistogram(std::vector<double> bounds) : bounds_(std::move(bounds)), counts_(bounds_.size() + 1) {}
  void Observe(double v) {
    size_t i = 0;
    while (i < bounds_.size() && v > bounds_[i]) ++i;
    counts_[i] += 1;
    sum_ += v;
    any_ = true;
  }
  void PublishTo(prometheus::Histogram& h);

 private:
  std::vector<double> bounds_;
  std::vector<double> counts_;  // per bucket (not cumulative), the last one past every bound
  double sum_ = 0;
  bool any_ = false;
};
// The buckets of bagd_update_processing_seconds (1 µs .. 100 ms).
const std::vector<double>& UpdateSecondsBuckets();

}  // namespace bagd::daemon
