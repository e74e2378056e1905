#include "bgpd/daemon/fib_metrics.h"

#include <utility>

namespace bagd::daemon {

FibMetrics::FibMetrics(std::shared_ptr<prometheus::Registry> registry)
    : registry_(std::move(registry)),
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
                     .Register(*registry_)) {
  // Present from start, at 0 (a rate() over a series that appears late misses its start).
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
}

prometheus::Histogram& FibMetrics::FibApplySeconds() {
  static const prometheus::Histogram::BucketBoundaries kBuckets{0.0001, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10};
  return fib_apply_.Add({}, kBuckets);
}

prometheus::Counter& FibMetrics::FibGroupsRefused() {
  if (fib_groups_refused_ == nullptr) {
    fib_groups_refused_ = &prometheus::BuildCounter()
                               .Name("bagd_fib_groups_refused_total")
                               .Help("Next-hop group creates the FIB sync refused: the FIB held its limit of groups "
                                     "(fib.max_groups or the backend's); created once a group is deleted")
                               .Register(*registry_);
  }
  return fib_groups_refused_->Add({});
}

prometheus::Counter& FibMetrics::FibRoutesRemovedWithGroup() {
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

prometheus::Gauge& FibMetrics::FibGroupGauge(const std::string& what) {
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

prometheus::Counter& FibMetrics::FibRepairs(const std::string& object, const std::string& cause) {
  if (fib_repairs_ == nullptr) {
    fib_repairs_ = &prometheus::BuildCounter()
                        .Name("bagd_fib_repairs_total")
                        .Help("bagd's FIB objects someone else deleted or changed, put back (cause deleted or "
                              "changed: a notification; audit: found by the periodic audit)")
                        .Register(*registry_);
  }
  return fib_repairs_->Add({{"object", object}, {"cause", cause}});
}

prometheus::Gauge& FibMetrics::RepairGauge(const std::string& name, const std::string& help) {
  auto& f = fib_repair_gauges_[name];
  if (f == nullptr) f = &prometheus::BuildGauge().Name(name).Help(help).Register(*registry_);
  return f->Add({});
}

prometheus::Gauge& FibMetrics::FibRepairsHeld() {
  return RepairGauge("bagd_fib_repairs_held",
                     "Repairs waiting for the backoff of an object someone else changes again and again");
}

prometheus::Gauge& FibMetrics::FibConflicts() {
  return RepairGauge("bagd_fib_conflicts",
                     "Prefixes where another protocol's route holds the place of bagd's (left alone)");
}

prometheus::Gauge& FibMetrics::FibAuditSeconds() {
  return RepairGauge("bagd_fib_audit_seconds", "How long the last FIB audit took (dump and compare)");
}

prometheus::Counter& FibMetrics::FibAudits() {
  if (fib_audits_ == nullptr) {
    fib_audits_ = &prometheus::BuildCounter()
                       .Name("bagd_fib_audits_total")
                       .Help("FIB audits: what bagd owns in the backend dumped and compared (fib.audit_interval)")
                       .Register(*registry_);
  }
  return fib_audits_->Add({});
}

}  // namespace bagd::daemon
