#include "bgpd/control/control_client.h"

#include <grpcpp/grpcpp.h>
#include <sys/stat.h>

#include <cerrno>
#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "bgpd/control/control_requests.h"
#include "bgpd/control/event_types.h"
#include "bgpd/control/grpc_status.h"
#include "bgpd/control/unix_socket.h"

namespace bagd::control {
namespace {

std::string Seconds(std::chrono::milliseconds d) {
  return absl::StrFormat("%g s", static_cast<double>(d.count()) / 1000.0);
}

std::chrono::system_clock::time_point DeadlineIn(std::chrono::milliseconds d) {
  return std::chrono::system_clock::now() + d;
}

// Reads a server stream into `handler` message by message. An error the handler returns
// cancels the call (the server stops producing) and is returned; the stream's own status
// goes to `stream_status`.
template <typename Message>
absl::Status ReadStream(grpc::ClientContext& context, grpc::ClientReader<Message>& reader,
                        const std::function<absl::Status(Message&)>& handler, grpc::Status* stream_status) {
  Message message;
  absl::Status handler_status;
  while (reader.Read(&message)) {
    handler_status = handler(message);
    if (!handler_status.ok()) {
      context.TryCancel();
      while (reader.Read(&message)) {  // drain what is in flight
      }
      break;
    }
    message.Clear();
  }
  *stream_status = reader.Finish();
  return handler_status;
}

}  // namespace

absl::StatusOr<std::unique_ptr<ControlClient>> ControlClient::Connect(const std::string& socket_path,
                                                                      const ControlClientOptions& options) {
  const std::string prefix = absl::StrCat("cannot reach bagd at ", socket_path, ": ");
  // gRPC would only retry and time out; connect() says why at once.
  if (const int err = ProbeUnixSocket(socket_path); err != 0) {
    struct stat st;
    if (err == ECONNREFUSED && ::stat(socket_path.c_str(), &st) == 0 && !S_ISSOCK(st.st_mode)) {
      return absl::UnavailableError(prefix + "not a socket");
    }
    const std::string message = prefix + std::strerror(err);
    if (err == EACCES || err == EPERM) return absl::PermissionDeniedError(message);
    return absl::UnavailableError(message);
  }
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(256 * 1024 * 1024);  // thousands of neighbors
  auto channel = grpc::CreateCustomChannel("unix:" + socket_path, grpc::InsecureChannelCredentials(), args);
  if (!channel->WaitForConnected(DeadlineIn(options.connect_timeout))) {
    return absl::UnavailableError(
        absl::StrCat(prefix, "no answer within ", Seconds(options.connect_timeout)));
  }
  return std::unique_ptr<ControlClient>(new ControlClient(socket_path, options, std::move(channel)));
}

ControlClient::ControlClient(std::string socket_path, const ControlClientOptions& options,
                             std::shared_ptr<grpc::Channel> channel)
    : socket_path_(std::move(socket_path)),
      options_(options),
      channel_(std::move(channel)),
      stub_(v1::Control::NewStub(channel_)) {}

std::unique_ptr<grpc::ClientContext> ControlClient::NewContext(std::chrono::milliseconds timeout) const {
  auto context = std::make_unique<grpc::ClientContext>();
  context->set_deadline(DeadlineIn(timeout));
  return context;
}

absl::Status ControlClient::CallStatus(const grpc::Status& status, std::chrono::milliseconds timeout) const {
  switch (status.error_code()) {
    case grpc::StatusCode::OK:
      return absl::OkStatus();
    case grpc::StatusCode::UNAVAILABLE:
      return absl::UnavailableError(absl::StrCat("cannot reach bagd at ", socket_path_, ": ", status.error_message()));
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return absl::DeadlineExceededError(
          absl::StrCat("bagd at ", socket_path_, " did not answer within ", Seconds(timeout)));
    case grpc::StatusCode::UNIMPLEMENTED:
      // A bagd older than this client does not know the method; gRPC then says nothing.
      if (status.error_message().empty()) {
        return absl::UnimplementedError(
            absl::StrCat("bagd at ", socket_path_, " does not support this request (it is older than this bagctl)"));
      }
      return FromGrpcStatus(status);
    default:
      return FromGrpcStatus(status);
  }
}

absl::StatusOr<v1::ListNeighborsResponse> ControlClient::ListNeighbors(const std::string& address) {
  v1::ListNeighborsRequest request;
  request.set_address(address);
  v1::ListNeighborsResponse response;
  auto context = NewContext();
  if (absl::Status s = CallStatus(stub_->ListNeighbors(context.get(), request, &response)); !s.ok()) return s;
  return response;
}

absl::Status ControlClient::ShutdownNeighbor(const std::string& address, const std::string& message) {
  // The server checks too; checking here keeps protobuf from serializing bad UTF-8 at all.
  if (absl::Status s = CheckShutdownMessage(message); !s.ok()) return s;
  v1::ShutdownNeighborRequest request;
  request.set_address(address);
  request.set_message(message);
  v1::ShutdownNeighborResponse response;
  auto context = NewContext();
  return CallStatus(stub_->ShutdownNeighbor(context.get(), request, &response));
}

absl::Status ControlClient::EnableNeighbor(const std::string& address) {
  v1::EnableNeighborRequest request;
  request.set_address(address);
  v1::EnableNeighborResponse response;
  auto context = NewContext();
  return CallStatus(stub_->EnableNeighbor(context.get(), request, &response));
}

absl::StatusOr<v1::ReloadConfigResponse> ControlClient::ReloadConfig() {
  v1::ReloadConfigRequest request;
  v1::ReloadConfigResponse response;
  auto context = NewContext();
  if (absl::Status s = CallStatus(stub_->ReloadConfig(context.get(), request, &response)); !s.ok()) return s;
  return response;
}

absl::StatusOr<v1::DumpMrtResponse> ControlClient::DumpMrt(const std::string& path) {
  v1::DumpMrtRequest request;
  request.set_path(path);
  v1::DumpMrtResponse response;
  auto context = NewContext(options_.list_routes_timeout);
  if (absl::Status s = CallStatus(stub_->DumpMrt(context.get(), request, &response), options_.list_routes_timeout);
      !s.ok()) {
    return s;
  }
  return response;
}

absl::StatusOr<v1::AddNetworkResponse> ControlClient::AddNetwork(const v1::AddNetworkRequest& request) {
  v1::AddNetworkResponse response;
  auto context = NewContext();
  if (absl::Status s = CallStatus(stub_->AddNetwork(context.get(), request, &response)); !s.ok()) return s;
  return response;
}

absl::Status ControlClient::DeleteNetwork(const std::string& prefix) {
  v1::DeleteNetworkRequest request;
  request.set_prefix(prefix);
  v1::DeleteNetworkResponse response;
  auto context = NewContext();
  return CallStatus(stub_->DeleteNetwork(context.get(), request, &response));
}

absl::StatusOr<v1::ClearNeighborResponse> ControlClient::ClearNeighbor(const std::string& address,
                                                                       v1::ClearNeighborRequest::Mode mode) {
  if (absl::Status s = CheckClearMode(mode); !s.ok()) return s;
  v1::ClearNeighborRequest request;
  request.set_address(address);
  request.set_mode(mode);
  v1::ClearNeighborResponse response;
  auto context = NewContext();
  if (absl::Status s = CallStatus(stub_->ClearNeighbor(context.get(), request, &response)); !s.ok()) return s;
  return response;
}

absl::Status ControlClient::ListRoutes(const v1::ListRoutesRequest& request, const RoutesPageHandler& on_page) {
  auto canonical = CanonicalListRoutesRequest(request);
  if (!canonical.ok()) return canonical.status();
  const std::chrono::milliseconds timeout =
      canonical->prefix().empty() ? std::max(options_.call_timeout, options_.list_routes_timeout) : options_.call_timeout;
  auto context = NewContext(timeout);
  grpc::Status status;
  if (absl::Status s = ReadStream(*context, *stub_->ListRoutes(context.get(), *canonical), on_page, &status); !s.ok()) {
    return s;
  }
  return CallStatus(status, timeout);
}

absl::Status ControlClient::WatchEvents(const std::vector<std::string>& types, const EventHandler& on_event) {
  if (auto mask = ParseEventTypes(types); !mask.ok()) return mask.status();
  v1::WatchEventsRequest request;
  for (const std::string& t : types) request.add_types(t);
  grpc::ClientContext context;  // no deadline: it runs until the caller or bagd ends it
  grpc::Status status;
  bool stopped = false;  // the last event was bagd's own "stopping"
  bool acknowledged = false;  // and we ended the call for it
  const EventHandler watch = [&](v1::Event& e) {
    stopped = e.has_stopping();
    absl::Status s = on_event(e);
    // "stopping" is the last event: end the call, which tells bagd's server it arrived
    // (the server waits for that before it lets its shutdown tear the transport down).
    if (s.ok() && stopped) {
      acknowledged = true;
      return absl::CancelledError("bagd is stopping");
    }
    return s;
  };
  absl::Status s = ReadStream(context, *stub_->WatchEvents(&context, request), watch, &status);
  if (acknowledged) return absl::OkStatus();
  if (!s.ok()) return s;  // on_event's own error
  // After "stopping" the stream has said all it had: bagd's server shutting down may still
  // cut the call before its final OK reaches us (UNAVAILABLE/CANCELLED), which is no error.
  if (stopped && (status.error_code() == grpc::StatusCode::UNAVAILABLE ||
                  status.error_code() == grpc::StatusCode::CANCELLED)) {
    return absl::OkStatus();
  }
  return CallStatus(status);
}

absl::StatusOr<v1::ListRoutesResponse> ControlClient::ListRoutes(const v1::ListRoutesRequest& request) {
  v1::ListRoutesResponse all;
  absl::Status s = ListRoutes(request, [&all](v1::ListRoutesResponse& page) {
    for (v1::Route& r : *page.mutable_routes()) *all.add_routes() = std::move(r);
    all.set_truncated(page.truncated());
    return absl::OkStatus();
  });
  if (!s.ok()) return s;
  return all;
}

absl::StatusOr<v1::ListBfdSessionsResponse> ControlClient::ListBfdSessions(const std::string& peer) {
  v1::ListBfdSessionsRequest request;
  request.set_peer(peer);
  v1::ListBfdSessionsResponse response;
  auto context = NewContext();
  if (absl::Status s = CallStatus(stub_->ListBfdSessions(context.get(), request, &response)); !s.ok()) return s;
  return response;
}

absl::StatusOr<v1::ListBmpStationsResponse> ControlClient::ListBmpStations() {
  v1::ListBmpStationsResponse response;
  auto context = NewContext();
  if (absl::Status s = CallStatus(stub_->ListBmpStations(context.get(), v1::ListBmpStationsRequest(), &response));
      !s.ok()) {
    return s;
  }
  return response;
}

absl::StatusOr<v1::RibSummary> ControlClient::GetRibSummary() {
  v1::RibSummary response;
  auto context = NewContext();
  if (absl::Status s = CallStatus(stub_->GetRibSummary(context.get(), v1::GetRibSummaryRequest(), &response)); !s.ok()) {
    return s;
  }
  return response;
}

absl::StatusOr<v1::ListNextHopGroupsResponse> ControlClient::ListNextHopGroups(
    const v1::ListNextHopGroupsRequest& request) {
  auto canonical = CanonicalListNextHopGroupsRequest(request);
  if (!canonical.ok()) return canonical.status();
  v1::ListNextHopGroupsResponse response;
  auto context = NewContext();
  if (absl::Status s = CallStatus(stub_->ListNextHopGroups(context.get(), *canonical, &response)); !s.ok()) return s;
  return response;
}

}  // namespace bagd::control

namespace bagd::control {

absl::StatusOr<v1::TestPolicyResponse> ControlClient::TestPolicy(const v1::TestPolicyRequest& request) {
  auto canonical = CanonicalTestPolicyRequest(request);
  if (!canonical.ok()) return canonical.status();
  v1::TestPolicyResponse response;
  auto context = NewContext();
  if (absl::Status s = CallStatus(stub_->TestPolicy(context.get(), *canonical, &response)); !s.ok()) return s;
  return response;
}

absl::StatusOr<v1::ListPoliciesResponse> ControlClient::ListPolicies(const std::string& name) {
  v1::ListPoliciesRequest request;
  request.set_name(name);
  v1::ListPoliciesResponse response;
  auto context = NewContext();
  if (absl::Status s = CallStatus(stub_->ListPolicies(context.get(), request, &response)); !s.ok()) return s;
  return response;
}

}  // namespace bagd::control
