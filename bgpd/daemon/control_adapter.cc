#include "bgpd/daemon/control_adapter.h"

#include "bgpd/daemon/rib_view.h"

#include <boost/asio/post.hpp>
#include <chrono>
#include <future>

namespace bagd::daemon {
namespace {

// Runs `fn` on the io_context thread and returns its result; gives up after 5 s so a
// wedged daemon cannot hang its operator's CLI forever.
template <class F, class R = std::invoke_result_t<F>>
std::optional<R> OnIoThread(boost::asio::io_context& io, F fn, std::chrono::seconds timeout = std::chrono::seconds(5)) {
  auto task = std::make_shared<std::packaged_task<R()>>(std::move(fn));
  auto result = task->get_future();
  boost::asio::post(io, [task] { (*task)(); });
  if (result.wait_for(timeout) != std::future_status::ready) return std::nullopt;
  return result.get();
}

}  // namespace

std::vector<control::v1::NeighborStatus> ControlAdapter::ListNeighbors(const std::string& filter) {
  return OnIoThread(io_, [this, filter] { return speaker_.ListNeighbors(filter); })
      .value_or(std::vector<control::v1::NeighborStatus>{});
}

absl::Status ControlAdapter::ShutdownNeighbor(const std::string& address, const std::string& message) {
  return OnIoThread(io_, [this, address, message] { return speaker_.ShutdownNeighbor(address, message); })
      .value_or(absl::DeadlineExceededError("bagd did not answer within 5 s"));
}

absl::Status ControlAdapter::EnableNeighbor(const std::string& address) {
  return OnIoThread(io_, [this, address] { return speaker_.EnableNeighbor(address); })
      .value_or(absl::DeadlineExceededError("bagd did not answer within 5 s"));
}

absl::StatusOr<control::v1::ClearNeighborResponse> ControlAdapter::ClearNeighbor(
    const std::string& address, control::v1::ClearNeighborRequest::Mode mode) {
  return OnIoThread(io_, [this, address, mode] { return speaker_.ClearNeighbor(address, mode); })
      .value_or(absl::DeadlineExceededError("bagd did not answer within 5 s"));
}

absl::StatusOr<control::ControlBackend::RoutesPage> ControlAdapter::ListRoutesPage(
    const control::v1::ListRoutesRequest& request, size_t max_routes) {
  // One page per visit of the io thread (a few milliseconds for 1000 routes): the control
  // server writes it out from its own thread and only then asks for the next one, so
  // sessions and other calls run between pages however large the table is.
  return OnIoThread(io_, [this, request, max_routes]() -> absl::StatusOr<control::ControlBackend::RoutesPage> {
           if (request.view() != control::v1::ListRoutesRequest::VIEW_RIB) {
             return ServeNeighborRoutesPage(neighbor_ribs_, speaker_.rib(), request, max_routes);
           }
           return daemon::ListRoutesPage(speaker_.rib(), request, max_routes, &speaker_.groups());
         })
      .value_or(absl::DeadlineExceededError("bagd did not answer within 5 s"));
}

absl::StatusOr<control::v1::ListNextHopGroupsResponse> ControlAdapter::ListNextHopGroups(
    const control::v1::ListNextHopGroupsRequest& request) {
  return OnIoThread(io_, [this, request]() -> absl::StatusOr<control::v1::ListNextHopGroupsResponse> {
           auto resp = daemon::ListNextHopGroups(speaker_.rib(), speaker_.groups(), request, absl::Now(),
                                                 [this](rib::GroupId g) { return speaker_.FibObjectOf(g); });
           if (resp.ok() && annotate_) {
             for (auto& g : *resp->mutable_groups()) annotate_(g);
           }
           return resp;
         })
      .value_or(absl::DeadlineExceededError("bagd did not answer within 5 s"));
}

absl::StatusOr<control::v1::RibSummary> ControlAdapter::GetRibSummary() {
  return OnIoThread(io_, [this]() -> absl::StatusOr<control::v1::RibSummary> {
           return daemon::RibSummary(speaker_.rib(), speaker_.attribute_store());
         })
      .value_or(absl::DeadlineExceededError("bagd did not answer within 5 s"));
}

absl::StatusOr<control::v1::TestPolicyResponse> ControlAdapter::TestPolicy(const control::v1::TestPolicyRequest& request) {
  return OnIoThread(io_, [this, request]() -> absl::StatusOr<control::v1::TestPolicyResponse> {
           return ServeTestPolicy(neighbor_ribs_, request);
         })
      .value_or(absl::DeadlineExceededError("bagd did not answer within 5 s"));
}

absl::StatusOr<control::v1::ListPoliciesResponse> ControlAdapter::ListPolicies(
    const control::v1::ListPoliciesRequest& request) {
  return OnIoThread(io_, [this, request]() -> absl::StatusOr<control::v1::ListPoliciesResponse> {
           return ServeListPolicies(neighbor_ribs_, request);
         })
      .value_or(absl::DeadlineExceededError("bagd did not answer within 5 s"));
}

}  // namespace bagd::daemon
