// Prometheus metrics of the FIB sync (prometheus-cpp), as the FIB stage (fib_stage.h) exports
// the reconciler's (fib_sync/reconciler.h) work. Names:
//   bagd_fib_failures_total                            counter: backend operations that failed (retried)
//   bagd_fib_retries_total                             counter: retry passes over what failed
//   bagd_fib_resyncs_total                             counter: full comparisons with the backend
//                                                      (lost notifications)
//   bagd_fib_pending_operations                        gauge: operations not yet confirmed by the backend
//   bagd_fib_apply_seconds                             histogram: one write to the backend (a flush)
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
// Every series but the group cap's exists from start, at 0. bagd_fib_operations_total (what
// the weights stage hands to the FIB) is RoutingMetrics' (routing_metrics.h); the APPL_DB
// backend's bagd_appldb_* are AppldbDriver's (appldb_driver.h). All on one registry with
// session::SessionMetrics (bgpd/session/metrics.h).
#pragma once

#include <map>
#include <memory>
#include <string>

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

namespace bagd::daemon {

class FibMetrics {
 public:
  explicit FibMetrics(std::shared_ptr<prometheus::Registry> registry);
  const std::shared_ptr<prometheus::Registry>& registry() const { return registry_; }

  prometheus::Counter& FibFailures() { return fib_failures_.Add({}); }
  prometheus::Counter& FibRetries() { return fib_retries_.Add({}); }
  prometheus::Counter& FibResyncs() { return fib_resyncs_.Add({}); }
  prometheus::Gauge& FibPending() { return fib_pending_.Add({}); }
  prometheus::Histogram& FibApplySeconds();

  // --- The FIB's own next-hop-group cap (fib_sync/reconciler.h, docs/weights.md): registered
  // on first use.
  // bagd_fib_groups_refused_total: group creates the FIB sync refused for want of room.
  prometheus::Counter& FibGroupsRefused();
  // bagd_fib_routes_removed_with_group_total: routes that went with their group's delete
  // (a whole group's routes withdrawn at once: one kernel operation instead of one each).
  prometheus::Counter& FibRoutesRemovedWithGroup();
  // bagd_fib_group_limit, bagd_fib_groups, bagd_fib_groups_waiting, bagd_fib_routes_waiting:
  // `what` is "limit", "groups", "waiting" or "waiting_routes".
  prometheus::Gauge& FibGroupGauge(const std::string& what);

  // --- Repair and audit (docs/fib.md, "Repair and audit"), present from start.
  prometheus::Counter& FibRepairs(const std::string& object, const std::string& cause);
  prometheus::Gauge& FibRepairsHeld();
  prometheus::Gauge& FibConflicts();
  prometheus::Counter& FibAudits();
  prometheus::Gauge& FibAuditSeconds();

 private:
  prometheus::Gauge& RepairGauge(const std::string& name, const std::string& help);

  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Counter>& fib_failures_;
  prometheus::Family<prometheus::Counter>& fib_retries_;
  prometheus::Family<prometheus::Counter>& fib_resyncs_;
  prometheus::Family<prometheus::Gauge>& fib_pending_;
  prometheus::Family<prometheus::Histogram>& fib_apply_;
  prometheus::Family<prometheus::Counter>* fib_repairs_ = nullptr;
  prometheus::Family<prometheus::Counter>* fib_audits_ = nullptr;
  std::map<std::string, prometheus::Family<prometheus::Gauge>*> fib_repair_gauges_;
  prometheus::Family<prometheus::Counter>* fib_groups_refused_ = nullptr;
  prometheus::Family<prometheus::Counter>* fib_routes_with_group_ = nullptr;
  std::map<std::string, prometheus::Family<prometheus::Gauge>*> fib_group_gauges_;
};

}  // namespace bagd::daemon
