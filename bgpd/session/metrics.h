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
//   bagd_weight_quantization_max_error                 gauge: largest relative share error of any
//                                                      group's installed weights (0.01 = 1 %)
//   bagd_fib_operations_total{kind}                    counter: group / route operations handed to the FIB
#pragma once

#include <memory>
#include <string>

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

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
  prometheus::Counter& FibOperations(const std::string& kind);

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
  prometheus::Family<prometheus::Counter>& fib_operations_;
};

}  // namespace bagd::session
