// The routing path's and the FIB sync's metrics (daemon::RoutingMetrics, daemon::FibMetrics):
// every family present from start, the UPDATE histogram counted without a lock and handed on
// in one piece, and the three metrics classes on one registry exporting the daemon's whole set
// of families (docs/daemon.md), each once.
#include <catch2/catch.hpp>
#include <prometheus/text_serializer.h>
#include <set>
#include <string>

#include "bgpd/daemon/fib_metrics.h"
#include "bgpd/daemon/routing_metrics.h"
#include "bgpd/session/metrics.h"

namespace bagd::daemon {
namespace {

std::string Scrape(const prometheus::Collectable& c) {
  return prometheus::TextSerializer().Serialize(c.Collect());
}

TEST_CASE("metrics: the routing path's and the FIB's families exist from start, at 0", "[metrics]") {
  auto registry = std::make_shared<prometheus::Registry>();
  RoutingMetrics routing(registry);
  FibMetrics fib(registry);
  const std::string text = Scrape(*registry);
  for (const char* series : {
           "bagd_rib_prefixes{family=\"ipv4-unicast\"} 0",
           "bagd_rib_paths{family=\"ipv6-unicast\"} 0",
           "bagd_rib_attribute_sets 0",
           "bagd_decision_runs_total 0",
           "bagd_export_passes_total 0",
           "bagd_export_neighbor_updates_total{how=\"shared\"} 0",
           "bagd_nexthop_groups 0",
           "bagd_weight_quantization_max_error_ratio 0",
           "bagd_weight_changes_total{outcome=\"held\"} 0",
           "bagd_fib_operations_total{kind=\"route\"} 0",
           "bagd_early_reweight_total{event=\"reverted\"} 0",
           "bagd_fib_failures_total 0",
           "bagd_fib_retries_total 0",
           "bagd_fib_resyncs_total 0",
           "bagd_fib_repairs_total{cause=\"audit\",object=\"nexthop\"} 0",
           "bagd_fib_repairs_held 0",
           "bagd_fib_conflicts 0",
           "bagd_fib_audits_total 0",
           "bagd_fib_audit_seconds 0",
           "bagd_fib_pending_operations 0",
           "bagd_fib_apply_seconds_count 0",
           "bagd_update_processing_seconds_count 0",
           "bagd_end_of_rib_seconds_count 0",
       }) {
    INFO(series);
    CHECK(text.find(series) != std::string::npos);
  }
}

TEST_CASE("metrics: LocalHistogram counts into buckets and publishes once", "[metrics]") {
  auto registry = std::make_shared<prometheus::Registry>();
  RoutingMetrics m(registry);
  LocalHistogram h(UpdateSecondsBuckets());
  h.Observe(0.5e-6);  // <= 1 µs
  h.Observe(3e-6);    // <= 5 µs
  h.Observe(3e-6);
  h.Observe(1.0);     // past every bound
  h.PublishTo(m.UpdateSeconds());
  h.PublishTo(m.UpdateSeconds());  // nothing new: no change
  const std::string text = Scrape(*registry);
  CHECK(text.find("bagd_update_processing_seconds_count 4") != std::string::npos);
  CHECK(text.find("bagd_update_processing_seconds_bucket{le=\"1e-06\"} 1") != std::string::npos);
  CHECK(text.find("bagd_update_processing_seconds_bucket{le=\"5e-06\"} 3") != std::string::npos);
  CHECK(text.find("bagd_update_processing_seconds_bucket{le=\"0.1\"} 3") != std::string::npos);
  CHECK(text.find("bagd_update_processing_seconds_bucket{le=\"+Inf\"} 4") != std::string::npos);
}

TEST_CASE("metrics: the sessions', the routing path's and the FIB's classes export the daemon's families, each once",
          "[metrics]") {
  auto registry = std::make_shared<prometheus::Registry>();
  session::SessionMetrics s(registry);
  RoutingMetrics r(registry);
  FibMetrics f(registry);
  // Every series touched once, the ones registered on first use included.
  s.State("n");
  s.Transition("n", "Established");
  s.Received("n", "update");
  s.Sent("n", "update");
  s.NotificationSent("n", 6, 1);
  s.NotificationReceived("n", 6, 2);
  s.BytesIn("n");
  s.BytesOut("n");
  s.Prefixes("n", "ipv4-unicast");
  s.PrefixesSent("n");
  s.UpdatesPacked("n");
  s.PrefixLimit("n", "ipv4-unicast");
  s.PrefixLimitState("n", "ipv4-unicast");
  s.PrefixLimitEvents("n", "ipv4-unicast", "warning");
  s.GracefulRestartStalePaths("n", "ipv4-unicast");
  s.GracefulRestartEvents("n", "restart");
  s.SetBuildInfo("0.1.0", "abc1234");
  r.LocalCapacity("eth0");
  r.LocalCapacityCappedMembers();
  r.PolicyHits("p", "s");
  for (const char* w : {"limit", "wanted", "installed", "merged", "merged_prefixes", "unrouted_prefixes",
                        "merge_worst_error", "merge_weighted_error"}) {
    r.GroupBudget(w);
  }
  r.GroupBudgetRouteMoves();
  r.GroupBudgetSwaps();
  f.FibGroupsRefused();
  f.FibRoutesRemovedWithGroup();
  for (const char* w : {"limit", "groups", "waiting", "waiting_routes"}) f.FibGroupGauge(w);

  std::multiset<std::string> names;
  for (const auto& family : registry->Collect()) names.insert(family.name);
  // What the one SessionMetrics of before the split exported, touched the same way (and the
  // export counters of the update groups since).
  const std::multiset<std::string> expected{
      "bagd_build_info", "bagd_bytes_received_total", "bagd_bytes_sent_total", "bagd_decision_runs_total",
      "bagd_early_reweight_total", "bagd_end_of_rib_seconds", "bagd_export_neighbor_updates_total",
      "bagd_export_passes_total", "bagd_fib_apply_seconds", "bagd_fib_audit_seconds",
      "bagd_fib_audits_total", "bagd_fib_conflicts", "bagd_fib_failures_total", "bagd_fib_group_limit",
      "bagd_fib_groups", "bagd_fib_groups_refused_total", "bagd_fib_groups_waiting", "bagd_fib_operations_total",
      "bagd_fib_pending_operations", "bagd_fib_repairs_held", "bagd_fib_repairs_total", "bagd_fib_resyncs_total",
      "bagd_fib_retries_total", "bagd_fib_routes_removed_with_group_total", "bagd_fib_routes_waiting",
      "bagd_local_capacity_bps", "bagd_local_capacity_capped_members", "bagd_messages_received_total",
      "bagd_messages_sent_total", "bagd_neighbor_graceful_restart_events_total",
      "bagd_neighbor_graceful_restart_stale_paths", "bagd_neighbor_prefix_limit",
      "bagd_neighbor_prefix_limit_events_total", "bagd_neighbor_prefix_limit_state", "bagd_neighbor_state",
      "bagd_neighbor_transitions_total", "bagd_nexthop_groups", "bagd_nexthop_groups_installed",
      "bagd_nexthop_groups_limit", "bagd_nexthop_groups_merge_weighted_error", "bagd_nexthop_groups_merge_worst_error",
      "bagd_nexthop_groups_merged", "bagd_nexthop_groups_merged_prefixes", "bagd_nexthop_groups_route_moves_total",
      "bagd_nexthop_groups_swaps_total", "bagd_nexthop_groups_unrouted_prefixes", "bagd_nexthop_groups_wanted",
      "bagd_notifications_received_total", "bagd_notifications_sent_total", "bagd_policy_statement_hits_total",
      "bagd_prefixes_received", "bagd_prefixes_sent", "bagd_rib_attribute_sets", "bagd_rib_paths",
      "bagd_rib_prefixes", "bagd_update_processing_seconds", "bagd_updates_packed_total", "bagd_weight_changes_total",
      "bagd_weight_quantization_max_error_ratio",
  };
  CHECK(names == expected);
}

}  // namespace
}  // namespace bagd::daemon
