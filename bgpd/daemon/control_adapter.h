// The control API's view of the speaker: gRPC threads post each call to the io_context
// thread and wait for its answer, so the speaker never needs a lock.
#pragma once

#include <boost/asio/io_context.hpp>
#include <functional>

#include "bgpd/control/control_server.h"
#include "bgpd/daemon/policy_view.h"
#include "bgpd/daemon/speaker.h"

namespace bagd::daemon {

class ControlAdapter : public control::ControlBackend {
 public:
  // `neighbor_ribs` (policies, received / advertised routes; may be null: then TestPolicy,
  // ListPolicies and the neighbor route views answer UNIMPLEMENTED) is read on the io thread.
  ControlAdapter(boost::asio::io_context& io, Speaker& speaker, const NeighborRibs* neighbor_ribs = nullptr)
      : io_(io), speaker_(speaker), neighbor_ribs_(neighbor_ribs) {}
  std::vector<control::v1::NeighborStatus> ListNeighbors(const std::string& address_filter) override;
  absl::Status ShutdownNeighbor(const std::string& address, const std::string& message) override;
  absl::Status EnableNeighbor(const std::string& address) override;
  absl::StatusOr<control::v1::ClearNeighborResponse> ClearNeighbor(
      const std::string& address, control::v1::ClearNeighborRequest::Mode mode) override;
  absl::StatusOr<RoutesPage> ListRoutesPage(const control::v1::ListRoutesRequest& request,
                                            size_t max_routes) override;
  absl::StatusOr<control::v1::RibSummary> GetRibSummary() override;
  absl::StatusOr<control::v1::ListNextHopGroupsResponse> ListNextHopGroups(
      const control::v1::ListNextHopGroupsRequest& request) override;
  absl::StatusOr<control::v1::TestPolicyResponse> TestPolicy(const control::v1::TestPolicyRequest& request) override;
  absl::StatusOr<control::v1::ListPoliciesResponse> ListPolicies(
      const control::v1::ListPoliciesRequest& request) override;
  // What the FIB backend knows of each listed group (APPL_DB key and confirmation), added on
  // the io thread.
  void set_group_annotator(std::function<void(control::v1::NextHopGroup&)> f) { annotate_ = std::move(f); }

 private:
  boost::asio::io_context& io_;
  Speaker& speaker_;
  const NeighborRibs* neighbor_ribs_;
  std::function<void(control::v1::NextHopGroup&)> annotate_;
};

}  // namespace bagd::daemon
