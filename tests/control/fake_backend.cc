#include "tests/control/fake_backend.h"

#include <stdlib.h>

#include <filesystem>
#include <stdexcept>

#include "absl/strings/str_cat.h"

namespace bagd::control::testing {

v1::NeighborStatus SampleEstablished() {
  v1::NeighborStatus n;
  n.set_address("192.0.2.2");
  n.set_remote_as(65002);
  n.set_description("spine-1");
  n.set_local_as(65001);
  n.set_state("Established");
  n.set_state_since_unix_ms(kNowUnixMs - 3723000);  // 1:02:03 ago
  n.set_uptime_seconds(3723);
  n.set_peer_router_id("10.255.0.2");
  n.set_local_address("192.0.2.1");
  n.set_local_port(179);
  n.set_remote_port(40123);
  auto* c = n.mutable_negotiated();
  c->set_four_octet_as(true);
  c->set_route_refresh(true);
  c->set_extended_message(true);
  c->add_families("ipv4-unicast");
  c->add_families("ipv6-unicast");
  c->add_add_path_receive("ipv4-unicast");
  c->add_extended_nexthop("ipv4-unicast");
  c->set_hold_time(90);
  c->set_keepalive(30);
  c->set_peer_hostname("spine-1.example.net");
  auto* in = n.mutable_messages_in();
  in->set_open(1);
  in->set_update(20);
  in->set_keepalive(125);
  in->set_total(146);
  in->set_bytes(4711);
  auto* out = n.mutable_messages_out();
  out->set_open(1);
  out->set_update(10);
  out->set_keepalive(124);
  out->set_notification(1);
  out->set_total(136);
  out->set_bytes(3333);
  n.set_prefixes_received(1200);
  n.set_prefixes_sent(800);
  n.set_last_error("Hold timer expired");
  auto* rcvd = n.mutable_last_notification_received();
  rcvd->set_code(6);
  rcvd->set_subcode(2);
  rcvd->set_code_name("Cease");
  rcvd->set_subcode_name("Administrative Shutdown");
  rcvd->set_data(std::string("\x0bmaintenance", 12));
  rcvd->set_shutdown_message("maintenance");
  rcvd->set_time_unix_ms(kNowUnixMs - 7200000);
  n.set_established_transitions(2);
  return n;
}

v1::NeighborStatus SampleActive() {
  v1::NeighborStatus n;
  n.set_address("2001:db8::3");
  n.set_remote_as(4200000003);
  n.set_local_as(65001);
  n.set_state("Active");
  n.set_state_since_unix_ms(kNowUnixMs - 30000);
  n.set_last_error("TCP connection refused");
  return n;
}

v1::NeighborStatus SampleAdminDown() {
  v1::NeighborStatus n;
  n.set_address("192.0.2.4");
  n.set_remote_as(65001);
  n.set_description("rr-2");
  n.set_local_as(65001);
  n.set_state("Idle");
  n.set_admin_down(true);
  n.set_admin_down_message("RMA ticket 4711");
  n.set_state_since_unix_ms(kNowUnixMs - 600000);  // 0:10:00 ago
  n.set_passive(true);
  n.set_established_transitions(1);
  n.mutable_messages_in()->set_total(50);
  n.mutable_messages_out()->set_total(51);
  auto* sent = n.mutable_last_notification_sent();
  sent->set_code(4);
  sent->set_subcode(0);
  sent->set_code_name("Hold Timer Expired");
  sent->set_subcode_name("Unspecific");
  sent->set_data(std::string("\x01\x02\xff", 3));
  return n;
}

FakeBackend::FakeBackend() : neighbors_{SampleEstablished(), SampleActive(), SampleAdminDown()} {}

v1::NeighborStatus* FakeBackend::Find(const std::string& address) {
  for (auto& n : neighbors_) {
    if (n.address() == address) return &n;
  }
  return nullptr;
}

std::vector<v1::NeighborStatus> FakeBackend::ListNeighbors(const std::string& address_filter) {
  std::lock_guard lock(mu_);
  calls_.push_back({"ListNeighbors", address_filter, ""});
  if (throw_next_) {
    throw_next_ = false;
    throw std::runtime_error("backend exploded");
  }
  if (address_filter.empty()) return neighbors_;
  if (auto* n = Find(address_filter)) return {*n};
  return {};
}

absl::Status FakeBackend::ShutdownNeighbor(const std::string& address, const std::string& message) {
  std::lock_guard lock(mu_);
  calls_.push_back({"ShutdownNeighbor", address, message});
  auto* n = Find(address);
  if (n == nullptr) return absl::NotFoundError(absl::StrCat("no neighbor ", address, " is configured"));
  n->set_admin_down(true);
  n->set_admin_down_message(message);
  n->set_state("Idle");
  return absl::OkStatus();
}

absl::Status FakeBackend::EnableNeighbor(const std::string& address) {
  std::lock_guard lock(mu_);
  calls_.push_back({"EnableNeighbor", address, ""});
  auto* n = Find(address);
  if (n == nullptr) return absl::NotFoundError(absl::StrCat("no neighbor ", address, " is configured"));
  n->set_admin_down(false);
  n->clear_admin_down_message();
  return absl::OkStatus();
}

std::vector<FakeBackend::Call> FakeBackend::calls() {
  std::lock_guard lock(mu_);
  return calls_;
}

void FakeBackend::SetNeighbors(std::vector<v1::NeighborStatus> neighbors) {
  std::lock_guard lock(mu_);
  neighbors_ = std::move(neighbors);
}

TempDir::TempDir() {
  char tmpl[] = "/tmp/bagd-control-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) throw std::runtime_error("mkdtemp failed");
  path_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

}  // namespace bagd::control::testing
