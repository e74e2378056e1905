#include "bgpd/session/metrics.h"

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
      updates_packed_(prometheus::BuildCounter()
                          .Name("bagd_updates_packed_total")
                          .Help("UPDATE messages built for the neighbor")
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
      build_info_(prometheus::BuildGauge()
                      .Name("bagd_build_info")
                      .Help("1, with the version and the git commit of the build as labels")
                      .Register(*registry_)) {}

void SessionMetrics::SetBuildInfo(const std::string& version, const std::string& git) {
  build_info_.Add({{"version", version}, {"git", git}}).Set(1);
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
prometheus::Counter& SessionMetrics::UpdatesPacked(const std::string& n) { return updates_packed_.Add({{"neighbor", n}}); }

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

prometheus::Gauge& SessionMetrics::DynamicNeighbors(const std::string& group) {
  if (dynamic_ == nullptr) {
    dynamic_ = &prometheus::BuildGauge()
                    .Name("bagd_dynamic_neighbors")
                    .Help("Dynamic neighbors of a neighbor group (accepted from its listen ranges) now")
                    .Register(*registry_);
  }
  return dynamic_->Add({{"group", group}});
}

prometheus::Counter& SessionMetrics::DynamicNeighborsRefused(const std::string& group) {
  if (dynamic_refused_ == nullptr) {
    dynamic_refused_ = &prometheus::BuildCounter()
                            .Name("bagd_dynamic_neighbors_refused_total")
                            .Help("Connections from a neighbor group's listen ranges closed: the group held "
                                  "listen_limit dynamic neighbors")
                            .Register(*registry_);
  }
  return dynamic_refused_->Add({{"group", group}});
}

}  // namespace bagd::session
