// A ControlBackend with canned neighbors that records what it is asked, and a temporary
// directory for the control socket. Shared by the control tests.
#pragma once

#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "bgpd/control/control_server.h"

namespace bagd::control::testing {

// 192.0.2.2: Established for 1:02:03, two families, counters, a NOTIFICATION received.
v1::NeighborStatus SampleEstablished();
// 2001:db8::3: Active, never established.
v1::NeighborStatus SampleActive();
// 192.0.2.4: administratively down with an RFC 9003 message, was up before.
v1::NeighborStatus SampleAdminDown();

// Three routes: 192.0.2.0/24 with three paths (best, multipath, and one that lost at the
// AS path length), 198.51.100.0/24 originated locally, 2001:db8::/32 with a link-local
// next hop. In the order the API gives them.
v1::ListRoutesResponse SampleRoutes();
// Two families, five peers, attribute sets and memory.
v1::RibSummary SampleRibSummary();
// Settings (max weight 255, budget 64, default damping), counters, and two groups:
// 7 (ipv4-unicast, 12 prefixes): 192.0.2.2 100G stable; 192.0.2.3 advertising 5G with 2.5G
//   applied, an increase pending until kNowUnixMs + 21 s (weight 1 -> 2, penalty 2, next
//   hold-down 60 s); 192.0.2.4 drained (weight 0); 192.0.2.5 2.5G. No error.
// 8 (ipv6-unicast, 1 prefix): 2001:db8::3 10G and 2001:db8::4 3.3G by default, weights 3:1
//   (budget), max error 0.76 %.
// SampleRoutes' 192.0.2.0/24 uses group 7, 2001:db8::/32 group 8, 198.51.100.0/24 none.
v1::ListNextHopGroupsResponse SampleNextHopGroups();

// The fixed "now" the render goldens use: 2024-05-01 12:00:00 UTC.
inline constexpr int64_t kNowUnixMs = 1714564800000;

class FakeBackend : public ControlBackend {
 public:
  struct Call {
    std::string rpc;
    std::string address;
    std::string message;
    friend bool operator==(const Call&, const Call&) = default;
  };

  FakeBackend();  // starts with the three samples
  std::vector<v1::NeighborStatus> ListNeighbors(const std::string& address_filter) override;
  absl::Status ShutdownNeighbor(const std::string& address, const std::string& message) override;
  absl::Status EnableNeighbor(const std::string& address) override;
  // Recorded as Call{"ClearNeighbor", address, mode name}. NotFound for an unknown neighbor;
  // FailedPrecondition unless it is "Established", and for MODE_SOFT_IN / MODE_SOFT unless it
  // negotiated route refresh. A soft clear answers its negotiated families with 3 prefixes
  // re-sent per family, enhanced as negotiated.
  absl::StatusOr<v1::ClearNeighborResponse> ClearNeighbor(const std::string& address,
                                                          v1::ClearNeighborRequest::Mode mode) override;

  // SampleRoutes (or SetRoutes, kept in table order) filtered as the API says: prefix
  // (exact, or longest match for an address), family, after; at most max_routes (unless
  // IgnoreLimit: then all, `more` false). Each page is recorded as Call{"ListRoutes",
  // prefix, family}; the whole request in routes_requests(), max_routes in
  // page_sizes_asked(). BeforeEachPage's hook runs first, and may change the routes.
  absl::StatusOr<RoutesPage> ListRoutesPage(const v1::ListRoutesRequest& request, size_t max_routes) override;
  absl::StatusOr<v1::RibSummary> GetRibSummary() override;
  // SampleNextHopGroups (or SetNextHopGroups) filtered as the API says: an id (NotFound if
  // there is none), or a prefix (the route as ListRoutes finds it; NotFound if there is
  // none or it has no group; an empty answer if its group is not among the groups).
  // Recorded as Call{"ListNextHopGroups", prefix, id or ""}; the whole request in
  // groups_requests().
  absl::StatusOr<v1::ListNextHopGroupsResponse> ListNextHopGroups(const v1::ListNextHopGroupsRequest& request) override;

  // Recorded as Call{"TestPolicy", prefix, neighbor}, the whole request in
  // policy_requests(); answers the policy and prefix asked for, verdict "accept".
  absl::StatusOr<v1::TestPolicyResponse> TestPolicy(const v1::TestPolicyRequest& request) override;
  // SetPolicies' policies (none at first), only the one named when a name is given (an
  // empty answer for an unknown name). Recorded as Call{"ListPolicies", name, ""}.
  absl::StatusOr<v1::ListPoliciesResponse> ListPolicies(const v1::ListPoliciesRequest& request) override;
  std::vector<v1::TestPolicyRequest> policy_requests();
  void SetPolicies(v1::ListPoliciesResponse policies);

  std::vector<Call> calls();
  std::vector<v1::ListRoutesRequest> routes_requests();
  std::vector<v1::ListNextHopGroupsRequest> groups_requests();
  void SetNextHopGroups(v1::ListNextHopGroupsResponse groups);
  void SetNeighbors(std::vector<v1::NeighborStatus> neighbors);
  void SetRoutes(v1::ListRoutesResponse routes);
  std::vector<size_t> page_sizes_asked();
  // Called with the page number (0, 1, ...) and the routes before each page is built.
  void BeforeEachPage(std::function<void(int page, v1::ListRoutesResponse& routes)> hook);
  void IgnoreLimit() { std::lock_guard lock(mu_); ignore_limit_ = true; }
  void FailRibCalls(absl::Status status) { std::lock_guard lock(mu_); rib_status_ = std::move(status); }
  void ThrowOnNextCall() { std::lock_guard lock(mu_); throw_next_ = true; }

 private:
  v1::NeighborStatus* Find(const std::string& address);  // mu_ held
  // The route for a canonical prefix (exact) or address (longest match); mu_ held.
  const v1::Route* RouteFor(const std::string& prefix);
  void MaybeThrow();                                      // mu_ held
  std::mutex mu_;
  std::vector<v1::NeighborStatus> neighbors_;
  v1::ListRoutesResponse routes_;
  std::vector<Call> calls_;
  std::vector<v1::ListRoutesRequest> routes_requests_;
  std::vector<size_t> page_sizes_asked_;
  std::function<void(int, v1::ListRoutesResponse&)> before_page_;
  v1::ListNextHopGroupsResponse groups_;
  std::vector<v1::ListNextHopGroupsRequest> groups_requests_;
  std::vector<v1::TestPolicyRequest> policy_requests_;
  v1::ListPoliciesResponse policies_;
  bool ignore_limit_ = false;
  absl::Status rib_status_;
  bool throw_next_ = false;
};

// A backend written before the routing table existed: it implements only the neighbor
// calls, so ListRoutes, GetRibSummary, ListNextHopGroups, TestPolicy and ListPolicies are
// ControlBackend's defaults (UNIMPLEMENTED).
class NeighborsOnlyBackend : public ControlBackend {
 public:
  std::vector<v1::NeighborStatus> ListNeighbors(const std::string&) override { return {}; }
  absl::Status ShutdownNeighbor(const std::string&, const std::string&) override { return absl::OkStatus(); }
  absl::Status EnableNeighbor(const std::string&) override { return absl::OkStatus(); }
  absl::StatusOr<v1::ClearNeighborResponse> ClearNeighbor(const std::string&, v1::ClearNeighborRequest::Mode) override {
    return v1::ClearNeighborResponse();
  }
};

// A fresh directory under /tmp, removed with everything in it at destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  // A socket path inside a subdirectory that does not exist yet.
  std::string SocketPath() const { return path_ + "/run/bagd.sock"; }

 private:
  std::string path_;
};

}  // namespace bagd::control::testing
