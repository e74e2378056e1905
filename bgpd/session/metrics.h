// Prometheus metrics of the BGP sessions (prometheus-cpp), one Peer's view of its neighbor.
// Names:
//   bagd_neighbor_state{neighbor}                      gauge: 0 Idle .. 5 Established
//   bagd_neighbor_transitions_total{neighbor,to}       counter
//   bagd_messages_received_total{neighbor,type}        counter
//   bagd_messages_sent_total{neighbor,type}            counter
//   bagd_notifications_sent_total{neighbor,code,subcode}      counter
//   bagd_notifications_received_total{neighbor,code,subcode}  counter
//   bagd_bytes_received_total{neighbor}, bagd_bytes_sent_total{neighbor}  counter
//   bagd_prefixes_received{neighbor,family}            gauge: paths in the RIB from the neighbor
//   bagd_prefixes_sent{neighbor}                       gauge: prefixes in its Adj-RIB-Out
//   bagd_updates_packed_total{neighbor}                counter: UPDATEs built for the neighbor
//   bagd_neighbor_prefix_limit{neighbor,family}        gauge: the configured maximum prefixes
//   bagd_neighbor_prefix_limit_state{neighbor,family}  gauge: 0 below the warning threshold,
//                                                      1 at or above it, 2 above the limit
//   bagd_neighbor_prefix_limit_events_total{neighbor,family,event}  counter: event "warning"
//                                                      (threshold reached), "exceeded" (limit)
//   bagd_neighbor_graceful_restart_stale_paths{neighbor,family}  gauge: paths kept as stale
//   bagd_neighbor_graceful_restart_events_total{neighbor,event}  counter: how its restarts went
//   bagd_build_info{version,git}                       gauge: 1
// A configured neighbor's series exist from its creation (NeighborSeries::Declare). The
// other metrics are registered on the same prometheus::Registry by their own classes:
// daemon::RoutingMetrics (bgpd/daemon/routing_metrics.h: the RIB, the routing core, the
// weights stage) and daemon::FibMetrics (bgpd/daemon/fib_metrics.h: the FIB sync). process_*
// series (CPU, memory, descriptors) come from ProcessCollector (process_metrics.h).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

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
  prometheus::Counter& UpdatesPacked(const std::string& neighbor);
  prometheus::Gauge& PrefixLimit(const std::string& neighbor, const std::string& family);
  prometheus::Gauge& PrefixLimitState(const std::string& neighbor, const std::string& family);
  prometheus::Counter& PrefixLimitEvents(const std::string& neighbor, const std::string& family,
                                         const std::string& event);
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
  prometheus::Family<prometheus::Counter>& updates_packed_;
  prometheus::Family<prometheus::Gauge>& prefix_limit_;
  prometheus::Family<prometheus::Gauge>& prefix_limit_state_;
  prometheus::Family<prometheus::Counter>& prefix_limit_events_;
  prometheus::Family<prometheus::Gauge>& build_info_;

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

  // --- Neighbor groups' dynamic neighbors (docs/config.md "neighbor_groups"): on first use.
 public:
  prometheus::Gauge& DynamicNeighbors(const std::string& group);
  // Connections closed because the group held listen_limit dynamic neighbors.
  prometheus::Counter& DynamicNeighborsRefused(const std::string& group);

 private:
  prometheus::Family<prometheus::Gauge>* dynamic_ = nullptr;
  prometheus::Family<prometheus::Counter>* dynamic_refused_ = nullptr;
};

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
