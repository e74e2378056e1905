// Prometheus metrics of the BGP sessions (prometheus-cpp). Names:
//   bagd_neighbor_state{neighbor}                      gauge: 0 Idle .. 5 Established
//   bagd_neighbor_transitions_total{neighbor,to}       counter
//   bagd_messages_received_total{neighbor,type}        counter
//   bagd_messages_sent_total{neighbor,type}            counter
//   bagd_notifications_sent_total{neighbor,code,subcode}      counter
//   bagd_notifications_received_total{neighbor,code,subcode}  counter
//   bagd_bytes_received_total{neighbor}, bagd_bytes_sent_total{neighbor}  counter
//   bagd_prefixes_received{neighbor,family}            gauge: paths in the RIB from the neighbor
//   bagd_prefixes_sent{neighbor}                       gauge: prefixes in its Adj-RIB-Out
//   bagd_rib_prefixes{family}, bagd_rib_paths{family}  gauge
//   bagd_rib_attribute_sets                            gauge: distinct interned attribute sets
//   bagd_decision_runs_total                           counter: best-path selections
//   bagd_updates_packed_total{neighbor}                counter: UPDATEs built for the neighbor
//   bagd_nexthop_groups                                gauge: weighted next-hop groups in use
//   bagd_weight_changes_total{outcome}                 counter: member bandwidth changes, by what
//                                                      the hold-down did: applied, held, suppressed
//   bagd_weight_quantization_max_error_ratio           gauge: largest relative share error of any
//                                                      group's installed weights (0.01 = 1 %)
//   bagd_fib_operations_total{kind}                    counter: group / route operations handed to the FIB
//   bagd_early_reweight_total{event}                   counter: early reweight (docs/weights.md): groups
//                                                      "followed" their first re-announced prefixes,
//                                                      prefixes "checked" after, of them "moved" to
//                                                      another group, groups "reverted" (most had not
//                                                      changed)
//   bagd_local_capacity_bps{source}                    gauge: a local capacity source's capacity as the
//                                                      weights use it (after its hold-down)
//   bagd_local_capacity_capped_members                 gauge: next-hop-group members weighed at their
//                                                      local link's capacity (below what they advertise)
//   bagd_fib_failures_total                            counter: backend operations that failed (retried)
//   bagd_fib_retries_total                             counter: retry passes over what failed
//   bagd_fib_resyncs_total                             counter: full comparisons with the backend
//                                                      (lost notifications)
//   bagd_fib_pending_operations                        gauge: operations not yet confirmed by the backend
//   bagd_fib_apply_seconds                             histogram: one write to the backend (a flush)
//   bagd_update_processing_seconds                     histogram: one received UPDATE, decoded, into
//                                                      the RIB (import policy included); every 16th
//   bagd_end_of_rib_seconds                            histogram: Established to the neighbor's End-of-RIB
//   bagd_build_info{version,git}                       gauge: 1
// Every series that does not depend on a neighbor or a policy exists from start, at 0; a
// configured neighbor's exist from its creation (NeighborSeries::Declare). process_* series
// (CPU, memory, descriptors) come from ProcessCollector (process_metrics.h).
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
//   bagd_fib_group_limit, bagd_fib_groups               gauges: the FIB sync's own cap on the groups
//                                                      (0: none) and the groups the FIB holds
//   bagd_fib_groups_waiting, bagd_fib_routes_waiting    gauges: groups not created for want of room
//                                                      under it, and the routes waiting for them
//   bagd_fib_groups_refused_total                      counter: group creates refused for want of room
//   bagd_fib_routes_removed_with_group_total           counter: routes the kernel removed with their group
//   bagd_fib_repairs_total{object,cause}               counter: bagd's objects someone else changed, put
//                                                      back (object route|group|nexthop, cause
//                                                      deleted|changed|audit)
//   bagd_fib_repairs_held                              gauge: repairs waiting for the backoff of an
//                                                      object changed again and again
//   bagd_fib_conflicts                                 gauge: prefixes held by another protocol's route
//   bagd_fib_audits_total, bagd_fib_audit_seconds      counter, gauge: audits and the last one's time
//   bagd_neighbor_prefix_limit{neighbor,family}        gauge: the configured maximum prefixes
//   bagd_neighbor_prefix_limit_state{neighbor,family}  gauge: 0 below the warning threshold,
//                                                      1 at or above it, 2 above the limit
//   bagd_neighbor_prefix_limit_events_total{neighbor,family,event}  counter: event "warning"
//                                                      (threshold reached), "exceeded" (limit)
//   bagd_policy_statement_hits_total{policy,statement} counter: routes whose conditions held at
//                                                      the statement, across reloads
//                                                      (bgpd/daemon/policy_view.h SyncPolicyMetrics)
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <vector>

#include "net/ip_prefix.h"

namespace bagd::session {

class SessionMetrics {
 public:
  explicit SessionMetrics(std::shared_ptr<prometheus::Registry> registry);
  const std::shared_ptr<prometheus::Registry>& registry() const { return registry_; }

  prometheus::Gauge& State(const std::string& neighbor);
  prometheus::Counter& Transition(const std::string& neighbor, const std::string& to);
  prometheus::Counter& Received(const std::string& neighbor, const std::string& type);
  prometheus::Counter& Sent(const std::string& neighbor, const std::string& type);
  prometheus::Counter& NotificationSent(const std::string& neighbor, int code, int subcode);
  prometheus::Counter& NotificationReceived(const std::string& neighbor, int code, int subcode);
  prometheus::Counter& BytesIn(const std::string& neighbor);
  prometheus::Counter& BytesOut(const std::string& neighbor);
  prometheus::Gauge& Prefixes(const std::string& neighbor, const std::string& family);
  prometheus::Gauge& PrefixesSent(const std::string& neighbor);
  prometheus::Gauge& RibPrefixes(const std::string& family);
  prometheus::Gauge& RibPaths(const std::string& family);
  prometheus::Gauge& AttributeSets();
  prometheus::Counter& DecisionRuns();
  prometheus::Counter& UpdatesPacked(const std::string& neighbor);
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
  prometheus::Gauge& PrefixLimit(const std::string& neighbor, const std::string& family);
  prometheus::Gauge& PrefixLimitState(const std::string& neighbor, const std::string& family);
  prometheus::Counter& PrefixLimitEvents(const std::string& neighbor, const std::string& family,
                                         const std::string& event);
  prometheus::Counter& PolicyHits(const std::string& policy, const std::string& statement);
  prometheus::Counter& FibFailures() { return fib_failures_.Add({}); }
  prometheus::Counter& FibRetries() { return fib_retries_.Add({}); }
  prometheus::Counter& FibResyncs() { return fib_resyncs_.Add({}); }
  prometheus::Gauge& FibPending() { return fib_pending_.Add({}); }
  prometheus::Histogram& FibApplySeconds();
  prometheus::Histogram& UpdateSeconds();
  prometheus::Histogram& EndOfRibSeconds();
  void SetBuildInfo(const std::string& version, const std::string& git);

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Gauge>& state_;
  prometheus::Family<prometheus::Counter>& transitions_;
  prometheus::Family<prometheus::Counter>& received_;
  prometheus::Family<prometheus::Counter>& sent_;
  prometheus::Family<prometheus::Counter>& notif_sent_;
  prometheus::Family<prometheus::Counter>& notif_received_;
  prometheus::Family<prometheus::Counter>& bytes_in_;
  prometheus::Family<prometheus::Counter>& bytes_out_;
  prometheus::Family<prometheus::Gauge>& prefixes_;
  prometheus::Family<prometheus::Gauge>& prefixes_sent_;
  prometheus::Family<prometheus::Gauge>& rib_prefixes_;
  prometheus::Family<prometheus::Gauge>& rib_paths_;
  prometheus::Family<prometheus::Gauge>& attribute_sets_;
  prometheus::Family<prometheus::Counter>& decision_runs_;
  prometheus::Family<prometheus::Counter>& updates_packed_;
  prometheus::Family<prometheus::Gauge>& nexthop_groups_;
  prometheus::Family<prometheus::Counter>& weight_changes_;
  prometheus::Family<prometheus::Gauge>& quantization_error_;
  prometheus::Family<prometheus::Gauge>& local_capacity_;
  prometheus::Family<prometheus::Gauge>& local_capacity_capped_;
  prometheus::Family<prometheus::Counter>& fib_operations_;
  prometheus::Family<prometheus::Counter>& early_reweight_;
  prometheus::Family<prometheus::Gauge>& prefix_limit_;
  prometheus::Family<prometheus::Gauge>& prefix_limit_state_;
  prometheus::Family<prometheus::Counter>& prefix_limit_events_;
  prometheus::Family<prometheus::Counter>& policy_hits_;
  prometheus::Family<prometheus::Counter>& fib_failures_;
  prometheus::Family<prometheus::Counter>& fib_retries_;
  prometheus::Family<prometheus::Counter>& fib_resyncs_;
  prometheus::Family<prometheus::Gauge>& fib_pending_;
  prometheus::Family<prometheus::Histogram>& fib_apply_;
  prometheus::Family<prometheus::Histogram>& update_seconds_;
  prometheus::Family<prometheus::Histogram>& end_of_rib_;
  prometheus::Family<prometheus::Gauge>& build_info_;
  std::map<std::string, prometheus::Family<prometheus::Gauge>*> group_budget_;
  prometheus::Family<prometheus::Counter>* group_budget_moves_ = nullptr;
  prometheus::Family<prometheus::Counter>* group_budget_swaps_ = nullptr;

  // --- Graceful restart (RFC 4724, docs/graceful-restart.md): registered on first use.
 public:
  // Paths of the neighbor kept as stale in the family (helper role).
  prometheus::Gauge& GracefulRestartStalePaths(const std::string& neighbor, const std::string& family);
  // "restart" (session lost, paths kept), "end_of_rib", "restart_timer", "stale_timer",
  // "forwarding_not_preserved": how a restart of the neighbor went.
  prometheus::Counter& GracefulRestartEvents(const std::string& neighbor, const std::string& event);

 private:
  prometheus::Family<prometheus::Gauge>* gr_stale_paths_ = nullptr;
  prometheus::Family<prometheus::Counter>* gr_events_ = nullptr;

  // --- The FIB's own next-hop-group cap (fib_sync/reconciler.h, docs/weights.md): registered
  // on first use.
 public:
  // bagd_fib_groups_refused_total: group creates the FIB sync refused for want of room.
  prometheus::Counter& FibGroupsRefused();
  // bagd_fib_routes_removed_with_group_total: routes that went with their group's delete
  // (a whole group's routes withdrawn at once: one kernel operation instead of one each).
  prometheus::Counter& FibRoutesRemovedWithGroup();
  // bagd_fib_group_limit, bagd_fib_groups, bagd_fib_groups_waiting, bagd_fib_routes_waiting:
  // `what` is "limit", "groups", "waiting" or "waiting_routes".
  prometheus::Gauge& FibGroupGauge(const std::string& what);
  // Repair and audit (docs/fib.md, "Repair and audit"), present from start.
  prometheus::Counter& FibRepairs(const std::string& object, const std::string& cause);
  prometheus::Gauge& FibRepairsHeld();
  prometheus::Gauge& FibConflicts();
  prometheus::Counter& FibAudits();
  prometheus::Gauge& FibAuditSeconds();

 private:
  prometheus::Family<prometheus::Counter>* fib_repairs_ = nullptr;
  prometheus::Family<prometheus::Counter>* fib_audits_ = nullptr;
  std::map<std::string, prometheus::Family<prometheus::Gauge>*> fib_repair_gauges_;
  prometheus::Gauge& RepairGauge(const std::string& name, const std::string& help);
  prometheus::Family<prometheus::Counter>* fib_groups_refused_ = nullptr;
  prometheus::Family<prometheus::Counter>* fib_routes_with_group_ = nullptr;
  std::map<std::string, prometheus::Family<prometheus::Gauge>*> fib_group_gauges_;
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

// "open", "update", "notification", "keepalive", "route_refresh"; "unknown" otherwise.
const char* MessageTypeLabel(uint8_t type);

// One neighbor's series that change with every message or UPDATE, each looked up once (a
// label map, a hash and a lock in prometheus-cpp) and kept: a table dump is a million of
// them. Created when first used, so only series that happened show up. Null metrics: every
// call is a no-op.
class NeighborSeries {
 public:
  NeighborSeries(SessionMetrics* metrics, std::string neighbor) : m_(metrics), neighbor_(std::move(neighbor)) {}
  // Every series of the neighbor, at 0, for the families it is configured with: a dashboard
  // sees a neighbor that never came up as 0, not as missing.
  void Declare(const std::array<bool, net::kFamilyCount>& families);
  void Received(uint8_t type, size_t bytes);
  void Sent(uint8_t type, size_t bytes);
  void SetPrefixes(net::Family family, size_t paths);
  void SetPrefixesSent(size_t prefixes);
  void UpdatesPacked(size_t messages);

 private:
  static size_t Slot(uint8_t type) { return type >= 1 && type <= 5 ? type : 0; }
  SessionMetrics* m_;
  std::string neighbor_;
  std::array<prometheus::Counter*, 6> received_{}, sent_{};
  prometheus::Counter* bytes_in_ = nullptr;
  prometheus::Counter* bytes_out_ = nullptr;
  std::array<prometheus::Gauge*, net::kFamilyCount> prefixes_{};
  prometheus::Gauge* prefixes_sent_ = nullptr;
  prometheus::Counter* updates_packed_ = nullptr;
};

}  // namespace bagd::session
