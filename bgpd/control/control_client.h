// The client end of the control API, as bagctl uses it. Every call has a deadline: a
// client never hangs on a daemon that is gone, stuck, or not bagd at all.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "bgpd/control/control.grpc.pb.h"

namespace bagd::control {

struct ControlClientOptions {
  std::chrono::milliseconds connect_timeout{2000};
  std::chrono::milliseconds call_timeout{5000};
  // ListRoutes without a prefix may be a whole table (a million prefixes and more), and
  // the caller may print it to a slow terminal or a pager as it arrives: the whole stream
  // gets this long.
  std::chrono::milliseconds list_routes_timeout{std::chrono::minutes(30)};
};

class ControlClient {
 public:
  // Connects to unix:<socket_path>. Fails within connect_timeout with Unavailable (or
  // PermissionDenied when the socket may not be opened) and the message
  // "cannot reach bagd at <socket_path>: <reason>".
  static absl::StatusOr<std::unique_ptr<ControlClient>> Connect(const std::string& socket_path,
                                                                const ControlClientOptions& options = {});

  // The server's errors come back with their code and message (NotFound for an unknown
  // neighbor, InvalidArgument for a bad address or message). A daemon that went away is
  // Unavailable as in Connect; one that does not answer in time is DeadlineExceeded.
  absl::StatusOr<v1::ListNeighborsResponse> ListNeighbors(const std::string& address);
  absl::Status ShutdownNeighbor(const std::string& address, const std::string& message);
  absl::Status EnableNeighbor(const std::string& address);
  // The mode is checked as the server does (CheckClearMode) before it is sent.
  absl::StatusOr<v1::ClearNeighborResponse> ClearNeighbor(const std::string& address,
                                                          v1::ClearNeighborRequest::Mode mode);
  // The request is checked as the server does (CanonicalListRoutesRequest) before it is
  // sent. A bagd without a routing table answers Unimplemented.
  // ListRoutes is server streaming (control.proto): `on_page` gets each page as it arrives
  // (in table order; `truncated` is set in the last one); the caller keeps what it wants,
  // so a whole table needs no more memory than a page. An error `on_page` returns cancels
  // the call and is returned. An error after some pages is returned after them.
  using RoutesPageHandler = std::function<absl::Status(v1::ListRoutesResponse& page)>;
  absl::Status ListRoutes(const v1::ListRoutesRequest& request, const RoutesPageHandler& on_page);
  // Every page in one answer: the whole table in memory. For a prefix, a --limit or a
  // small table (tests); bagctl streams.
  absl::StatusOr<v1::ListRoutesResponse> ListRoutes(const v1::ListRoutesRequest& request);
  absl::StatusOr<v1::RibSummary> GetRibSummary();
  absl::StatusOr<v1::ListBfdSessionsResponse> ListBfdSessions(const std::string& peer);
  absl::StatusOr<v1::ListBmpStationsResponse> ListBmpStations();
  // Writes (control.proto): reload the configuration file; originate / withdraw a prefix.
  absl::StatusOr<v1::ReloadConfigResponse> ReloadConfig();
  absl::StatusOr<v1::AddNetworkResponse> AddNetwork(const v1::AddNetworkRequest& request);
  absl::Status DeleteNetwork(const std::string& prefix);
  // The RIB as an MRT file written by the daemon at `path` (absolute, on its host); waits
  // as long as a route listing may take (list_routes_timeout).
  absl::StatusOr<v1::DumpMrtResponse> DumpMrt(const std::string& path);
  // Checked as the server does (CanonicalListNextHopGroupsRequest: `id` and `prefix` are
  // exclusive) before it is sent. NotFound for an id or prefix without a group.
  absl::StatusOr<v1::ListNextHopGroupsResponse> ListNextHopGroups(const v1::ListNextHopGroupsRequest& request);

  // Checked as the server does (CanonicalTestPolicyRequest) before it is sent. NotFound for
  // a policy that is not defined, InvalidArgument for an attribute bagd cannot parse.
  absl::StatusOr<v1::TestPolicyResponse> TestPolicy(const v1::TestPolicyRequest& request);
  // Every policy (`name` empty) or one; NotFound if it is not defined.
  absl::StatusOr<v1::ListPoliciesResponse> ListPolicies(const std::string& name);

  // WatchEvents (control.proto): `on_event` gets each event as it arrives, the first one
  // `subscribed`. Runs until `on_event` returns an error (the call is cancelled and that
  // error returned), bagd ends the stream (OK, after its `stopping` event, on which this
  // client ends the call: bagd's server waits for that before it stops), or the
  // connection breaks (Unavailable). `types` empty: every type; an unknown one is
  // InvalidArgument before anything is sent.
  using EventHandler = std::function<absl::Status(v1::Event& event)>;
  absl::Status WatchEvents(const std::vector<std::string>& types, const EventHandler& on_event);

  const std::string& socket_path() const { return socket_path_; }

 private:
  ControlClient(std::string socket_path, const ControlClientOptions& options, std::shared_ptr<grpc::Channel> channel);
  std::unique_ptr<grpc::ClientContext> NewContext(std::chrono::milliseconds timeout) const;
  std::unique_ptr<grpc::ClientContext> NewContext() const { return NewContext(options_.call_timeout); }
  absl::Status CallStatus(const grpc::Status& status, std::chrono::milliseconds timeout) const;
  absl::Status CallStatus(const grpc::Status& status) const { return CallStatus(status, options_.call_timeout); }

  std::string socket_path_;
  ControlClientOptions options_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Control::Stub> stub_;
};

}  // namespace bagd::control
