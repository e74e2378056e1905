#include "tests/control/fake_backend.h"

#include <stdlib.h>

#include <cmath>
#include <filesystem>
#include <optional>
#include <stdexcept>

#include "absl/strings/str_cat.h"
#include "net/ip_prefix.h"

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

v1::ListRoutesResponse SampleRoutes() {
  v1::ListRoutesResponse response;
  v1::Route* r = response.add_routes();
  r->set_prefix("192.0.2.0/24");
  {
    v1::RoutePath* p = r->add_paths();
    p->set_peer("192.0.2.2");
    p->set_peer_as(65002);
    p->set_best(true);
    p->set_multipath(true);
    p->set_next_hop("192.0.2.2");
    p->set_origin("igp");
    p->set_as_path("65002 65010");
    p->set_local_pref(100);
    p->set_has_med(true);
    p->set_med(0);
    p->add_communities("65002:100");
    p->add_communities("65002:200");
    p->add_extended_communities("LB:65002:1.25e+09B/s (10Gbps) transitive");
    p->set_link_bandwidth_bps(1e10);
    p->set_has_link_bandwidth(true);
  }
  {
    v1::RoutePath* p = r->add_paths();
    p->set_peer("192.0.2.3");
    p->set_peer_as(65003);
    p->set_multipath(true);
    p->set_decision_step("router-id");
    p->set_lost_reason("higher router id");
    p->set_next_hop("192.0.2.3");
    p->set_origin("igp");
    p->set_as_path("65003 65010");
    p->set_local_pref(100);
    p->set_has_med(true);
    p->set_med(0);
    p->add_extended_communities("LB:65003:3.125e+08B/s (2.5Gbps) transitive");
    p->set_link_bandwidth_bps(2.5e9);
    p->set_has_link_bandwidth(true);
  }
  {
    v1::RoutePath* p = r->add_paths();
    p->set_peer("192.0.2.4");
    p->set_peer_as(65001);
    p->set_path_id(7);
    p->set_decision_step("as-path-length");
    p->set_lost_reason("longer AS path");
    p->set_next_hop("192.0.2.44");
    p->set_origin("igp");
    p->set_as_path("65004 65005 65010");
    p->set_local_pref(100);
    p->add_large_communities("65004:1:2");
    p->set_originator_id("10.255.0.9");
    p->add_cluster_list("10.255.0.1");
    p->add_cluster_list("10.255.0.2");
    p->set_atomic_aggregate(true);
  }
  r->set_nexthop_group(7);
  r = response.add_routes();
  r->set_prefix("198.51.100.0/24");
  {
    v1::RoutePath* p = r->add_paths();
    p->set_peer("local");
    p->set_peer_as(65001);
    p->set_best(true);
    p->set_multipath(true);  // the best path is in the multipath set, alone
    p->set_next_hop("0.0.0.0");
    p->set_origin("igp");
    p->set_local_pref(100);
  }
  r = response.add_routes();
  r->set_prefix("2001:db8::/32");
  {
    v1::RoutePath* p = r->add_paths();
    p->set_peer("2001:db8::3");
    p->set_peer_as(4200000003);
    p->set_best(true);
    p->set_multipath(true);  // the best path is in the multipath set, alone
    p->set_next_hop("2001:db8::3");
    p->set_link_local_next_hop("fe80::3");
    p->set_origin("incomplete");
    p->set_as_path("4200000003");
    p->set_local_pref(100);
    p->set_has_med(true);
    p->set_med(50);
  }
  r->set_nexthop_group(8);
  return response;
}

v1::RibSummary SampleRibSummary() {
  v1::RibSummary s;
  auto* f = s.add_families();
  f->set_family("ipv4-unicast");
  f->set_prefixes(2);
  f->set_paths(4);
  f->set_multipath_prefixes(1);
  f = s.add_families();
  f->set_family("ipv6-unicast");
  f->set_prefixes(1);
  f->set_paths(1);
  f->set_multipath_prefixes(0);
  const auto peer = [&](const char* address, uint32_t as, uint64_t v4, uint64_t v6, uint64_t loop, uint64_t nh,
                        uint64_t withdrawn) {
    auto* p = s.add_peers();
    p->set_peer(address);
    p->set_peer_as(as);
    p->set_paths_ipv4(v4);
    p->set_paths_ipv6(v6);
    p->set_rejected_as_loop(loop);
    p->set_rejected_next_hop(nh);
    p->set_withdrawn(withdrawn);
  };
  peer("192.0.2.2", 65002, 1, 0, 3, 0, 12);
  peer("192.0.2.3", 65003, 1, 0, 0, 1, 0);
  peer("192.0.2.4", 65001, 1, 0, 0, 0, 0);
  peer("2001:db8::3", 4200000003, 0, 1, 0, 0, 2);
  peer("local", 65001, 1, 0, 0, 0, 0);
  s.set_attribute_sets(5);
  s.set_memory_bytes(1258291);
  s.set_bytes_per_path(251658);
  return s;
}

v1::ListNextHopGroupsResponse SampleNextHopGroups() {
  v1::ListNextHopGroupsResponse response;
  auto* s = response.mutable_settings();
  s->set_max_weight(255);
  s->set_group_budget(64);
  s->set_decrease_delay_s(0);
  s->set_increase_hold_down_s(30);
  s->set_min_change_percent(5);
  s->set_max_hold_down_s(600);
  s->set_half_life_s(300);
  auto* c = response.mutable_counters();
  c->set_applied(12);
  c->set_held(3);
  c->set_suppressed(1);
  c->set_group_updates(40);
  c->set_route_updates(1200);

  const auto member = [](v1::NextHopGroup* g, const char* next_hop, double bps, const char* source,
                         const char* community, double applied, double share, uint32_t weight, double weight_share,
                         double error, uint32_t target) {
    v1::NextHopGroupMember* m = g->add_members();
    m->set_next_hop(next_hop);
    m->set_bandwidth_bps(bps);
    m->set_bandwidth_source(source);
    m->set_link_bandwidth(community);
    m->set_applied_bandwidth_bps(applied);
    m->set_share(share);
    m->set_weight(weight);
    m->set_weight_share(weight_share);
    m->set_error(error);
    m->set_target_weight(target);
    m->set_damping_state("stable");
    m->set_next_increase_hold_down_s(30);
    return m;
  };
  v1::NextHopGroup* g = response.add_groups();
  g->set_id(7);
  g->set_family("ipv4-unicast");
  g->set_prefixes(12);
  g->set_max_error(0);
  // Applied 100G : 2.5G : 0 : 2.5G is 40 : 1 : 0 : 1, exactly; advertised 100G : 5G : 0 : 2.5G
  // will be 40 : 2 : 0 : 1.
  member(g, "192.0.2.2", 100e9, "community", "LB:65002:1.25e+10B/s (100Gbps) transitive", 100e9, 40.0 / 42, 40,
         40.0 / 42, 0, 40);
  v1::NextHopGroupMember* pending = member(g, "192.0.2.3", 5e9, "community",
                                           "LB:65003:6.25e+08B/s (5Gbps) transitive", 2.5e9, 1.0 / 42, 1, 1.0 / 42, 0, 2);
  pending->set_damping_state("pending-increase");
  pending->set_pending_until_unix_ms(kNowUnixMs + 21000);
  pending->set_penalty(2);
  pending->set_next_increase_hold_down_s(60);
  member(g, "192.0.2.4", 0, "drained", "LB:65004:0B/s (0bps) transitive", 0, 0, 0, 0, 0, 0);
  member(g, "192.0.2.5", 2.5e9, "community", "LB:65005:3.125e+08B/s (2.5Gbps) transitive", 2.5e9, 1.0 / 42, 1,
         1.0 / 42, 0, 1);

  g = response.add_groups();
  g->set_id(8);
  g->set_family("ipv6-unicast");
  g->set_prefixes(1);
  // 10G : 3.3G is 100 : 33, more than the budget of 64; 3 : 1 is the closest.
  const double s3 = 10.0 / 13.3, s4 = 3.3 / 13.3;
  const double e3 = std::abs(0.75 - s3) / s3, e4 = std::abs(0.25 - s4) / s4;
  g->set_max_error(e4);
  member(g, "2001:db8::3", 10e9, "community", "LB:65003:1.25e+09B/s (10Gbps) transitive", 10e9, s3, 3, 0.75, e3, 3);
  member(g, "2001:db8::4", 3.3e9, "default", "", 3.3e9, s4, 1, 0.25, e4, 1);
  return response;
}

FakeBackend::FakeBackend()
    : neighbors_{SampleEstablished(), SampleActive(), SampleAdminDown()},
      routes_(SampleRoutes()),
      groups_(SampleNextHopGroups()) {}

void FakeBackend::MaybeThrow() {
  if (throw_next_) {
    throw_next_ = false;
    throw std::runtime_error("backend exploded");
  }
}

absl::StatusOr<ControlBackend::RoutesPage> FakeBackend::ListRoutesPage(const v1::ListRoutesRequest& request,
                                                                       size_t max_routes) {
  std::lock_guard lock(mu_);
  calls_.push_back({"ListRoutes", request.prefix(), request.family()});
  routes_requests_.push_back(request);
  page_sizes_asked_.push_back(max_routes);
  if (before_page_) before_page_(static_cast<int>(page_sizes_asked_.size()) - 1, routes_);
  MaybeThrow();
  if (!rib_status_.ok()) return rib_status_;
  RoutesPage out;
  std::optional<net::Prefix> exact, after;
  std::optional<net::IpAddress> covered;
  if (request.prefix().find('/') != std::string::npos) {
    exact = *net::Prefix::Parse(request.prefix());
  } else if (!request.prefix().empty()) {
    covered = *net::IpAddress::Parse(request.prefix());
  }
  if (!request.after().empty()) after = *net::Prefix::Parse(request.after());
  const v1::Route* longest = nullptr;
  int longest_length = -1;
  for (const v1::Route& route : routes_.routes()) {
    const net::Prefix p = *net::Prefix::Parse(route.prefix());
    if (!request.family().empty() && request.family() != net::FamilyName(p.family())) continue;
    if (exact && p != *exact) continue;
    // Table order: IPv4 before IPv6, then the prefix (SampleRoutes and SetRoutes keep it).
    if (after && !(after->afi() != p.afi() ? after->afi() < p.afi() : *after < p)) continue;
    if (covered) {
      if (covered->afi() != p.afi() || net::Prefix::Make(p.afi(), covered->bytes(), p.length()) != p) continue;
      if (p.length() > longest_length) {
        longest = &route;
        longest_length = p.length();
      }
      continue;
    }
    if (!ignore_limit_ && out.routes.size() == max_routes) {
      out.more = true;
      break;
    }
    out.routes.push_back(route);
  }
  if (longest != nullptr) out.routes.push_back(*longest);
  return out;
}

absl::StatusOr<v1::RibSummary> FakeBackend::GetRibSummary() {
  std::lock_guard lock(mu_);
  calls_.push_back({"GetRibSummary", "", ""});
  MaybeThrow();
  if (!rib_status_.ok()) return rib_status_;
  return SampleRibSummary();
}

const v1::Route* FakeBackend::RouteFor(const std::string& prefix) {
  if (prefix.find('/') != std::string::npos) {
    for (const v1::Route& route : routes_.routes()) {
      if (route.prefix() == prefix) return &route;
    }
    return nullptr;
  }
  const net::IpAddress address = *net::IpAddress::Parse(prefix);
  const v1::Route* longest = nullptr;
  int longest_length = -1;
  for (const v1::Route& route : routes_.routes()) {
    const net::Prefix p = *net::Prefix::Parse(route.prefix());
    if (address.afi() != p.afi() || net::Prefix::Make(p.afi(), address.bytes(), p.length()) != p) continue;
    if (p.length() > longest_length) {
      longest = &route;
      longest_length = p.length();
    }
  }
  return longest;
}

absl::StatusOr<v1::ListNextHopGroupsResponse> FakeBackend::ListNextHopGroups(
    const v1::ListNextHopGroupsRequest& request) {
  std::lock_guard lock(mu_);
  calls_.push_back({"ListNextHopGroups", request.prefix(), request.id() == 0 ? "" : absl::StrCat(request.id())});
  groups_requests_.push_back(request);
  MaybeThrow();
  if (!rib_status_.ok()) return rib_status_;
  v1::ListNextHopGroupsResponse out = groups_;
  out.clear_groups();
  uint32_t id = request.id();
  if (!request.prefix().empty()) {
    const v1::Route* route = RouteFor(request.prefix());
    if (route == nullptr) return absl::NotFoundError(absl::StrCat("no route for ", request.prefix()));
    if (route->nexthop_group() == 0) {
      return absl::NotFoundError(absl::StrCat("route ", route->prefix(), " has no next-hop group"));
    }
    id = route->nexthop_group();
  }
  for (const v1::NextHopGroup& g : groups_.groups()) {
    if (id == 0 || g.id() == id) *out.add_groups() = g;
  }
  if (request.id() != 0 && out.groups().empty()) {
    return absl::NotFoundError(absl::StrCat("no next-hop group ", request.id()));
  }
  return out;
}

absl::StatusOr<v1::TestPolicyResponse> FakeBackend::TestPolicy(const v1::TestPolicyRequest& request) {
  std::lock_guard lock(mu_);
  calls_.push_back({"TestPolicy", request.prefix(), request.neighbor()});
  policy_requests_.push_back(request);
  MaybeThrow();
  v1::TestPolicyResponse out;
  out.set_policy(request.policy());
  out.set_prefix(request.prefix());
  out.set_verdict("accept");
  return out;
}

absl::StatusOr<v1::ListPoliciesResponse> FakeBackend::ListPolicies(const v1::ListPoliciesRequest& request) {
  std::lock_guard lock(mu_);
  calls_.push_back({"ListPolicies", request.name(), ""});
  MaybeThrow();
  v1::ListPoliciesResponse out;
  for (const auto& p : policies_.policies()) {
    if (request.name().empty() || p.name() == request.name()) *out.add_policies() = p;
  }
  return out;
}

std::vector<v1::TestPolicyRequest> FakeBackend::policy_requests() {
  std::lock_guard lock(mu_);
  return policy_requests_;
}

void FakeBackend::SetPolicies(v1::ListPoliciesResponse policies) {
  std::lock_guard lock(mu_);
  policies_ = std::move(policies);
}

std::vector<v1::ListNextHopGroupsRequest> FakeBackend::groups_requests() {
  std::lock_guard lock(mu_);
  return groups_requests_;
}

void FakeBackend::SetNextHopGroups(v1::ListNextHopGroupsResponse groups) {
  std::lock_guard lock(mu_);
  groups_ = std::move(groups);
}

std::vector<v1::ListRoutesRequest> FakeBackend::routes_requests() {
  std::lock_guard lock(mu_);
  return routes_requests_;
}

std::vector<size_t> FakeBackend::page_sizes_asked() {
  std::lock_guard lock(mu_);
  return page_sizes_asked_;
}

void FakeBackend::BeforeEachPage(std::function<void(int page, v1::ListRoutesResponse& routes)> hook) {
  std::lock_guard lock(mu_);
  before_page_ = std::move(hook);
}

void FakeBackend::SetRoutes(v1::ListRoutesResponse routes) {
  std::lock_guard lock(mu_);
  routes_ = std::move(routes);
}

v1::NeighborStatus* FakeBackend::Find(const std::string& address) {
  for (auto& n : neighbors_) {
    if (n.address() == address) return &n;
  }
  return nullptr;
}

std::vector<v1::NeighborStatus> FakeBackend::ListNeighbors(const std::string& address_filter) {
  std::lock_guard lock(mu_);
  calls_.push_back({"ListNeighbors", address_filter, ""});
  MaybeThrow();
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

absl::StatusOr<v1::ClearNeighborResponse> FakeBackend::ClearNeighbor(const std::string& address,
                                                                     v1::ClearNeighborRequest::Mode mode) {
  std::lock_guard lock(mu_);
  calls_.push_back({"ClearNeighbor", address, v1::ClearNeighborRequest::Mode_Name(mode)});
  auto* n = Find(address);
  if (n == nullptr) return absl::NotFoundError(absl::StrCat("no neighbor ", address, " is configured"));
  if (n->state() != "Established") {
    return absl::FailedPreconditionError(absl::StrCat("neighbor ", address, " is not Established (", n->state(), ")"));
  }
  const bool in = mode == v1::ClearNeighborRequest::MODE_SOFT_IN || mode == v1::ClearNeighborRequest::MODE_SOFT;
  const bool out = mode == v1::ClearNeighborRequest::MODE_SOFT_OUT || mode == v1::ClearNeighborRequest::MODE_SOFT;
  if (in && !n->negotiated().route_refresh()) {
    return absl::FailedPreconditionError(absl::StrCat("neighbor ", address, " did not offer route refresh"));
  }
  v1::ClearNeighborResponse r;
  for (const std::string& family : n->negotiated().families()) {
    if (in) r.add_refresh_requested(family);
    if (out) {
      r.add_resent(family);
      r.set_prefixes_resent(r.prefixes_resent() + 3);
    }
  }
  r.set_enhanced(out && n->negotiated().enhanced_route_refresh());
  return r;
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
