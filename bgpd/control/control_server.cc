#include "bgpd/control/control_server.h"

#include <grpcpp/grpcpp.h>
#include <grpcpp/server_posix.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <chrono>
#include <cstring>
#include <exception>
#include <atomic>
#include <mutex>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "bgpd/control/control.grpc.pb.h"
#include "bgpd/control/control_requests.h"
#include "bgpd/control/grpc_status.h"
#include "bgpd/control/unix_socket.h"
#include "bgpd/control/utf8.h"

namespace bagd::control {
namespace {

// How long Stop() lets calls in progress finish before gRPC cancels them.
constexpr std::chrono::seconds kShutdownGrace{5};

std::string ErrnoText(int err) { return std::strerror(err); }

// Rule 8 of the design: exceptions (protobuf, std::bad_alloc, the backend) stop at the edge.
template <typename Fn>
grpc::Status Guarded(const char* rpc, Fn&& fn) {
  try {
    return fn();
  } catch (const std::exception& e) {
    return grpc::Status(grpc::StatusCode::INTERNAL, absl::StrCat(rpc, " failed inside bagd: ", e.what()));
  } catch (...) {
    return grpc::Status(grpc::StatusCode::INTERNAL, absl::StrCat(rpc, " failed inside bagd"));
  }
}

// How often a WatchEvents stream looks whether its client went away or the server stops.
constexpr std::chrono::milliseconds kWatchPoll{200};

// Two instances serve the socket: one for root and bagd's own user, one (read_only) for
// the members of control.group, whose connections the acceptor hands to it (SO_PEERCRED).
class ControlService final : public v1::Control::Service {
 public:
  ControlService(ControlBackend* backend, EventHub* events, bool read_only, const std::atomic<bool>* stopping,
                 std::chrono::milliseconds stopping_ack)
      : backend_(backend),
        events_(events),
        read_only_(read_only),
        stopping_(stopping),
        stopping_ack_(stopping_ack) {}

  // The write RPCs' answer on a read-only connection.
  std::optional<grpc::Status> RefuseWrite(const char* rpc) const {
    if (!read_only_) return std::nullopt;
    return grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                        absl::StrCat(rpc, " changes the running bagd, and this connection is read-only: members of "
                                          "the control group (config control.group) may only read; run it as root"));
  }

  grpc::Status WatchEvents(grpc::ServerContext* context, const v1::WatchEventsRequest* request,
                           grpc::ServerWriter<v1::Event>* writer) override {
    return Guarded("WatchEvents", [&] {
      if (events_ == nullptr) return grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "this bagd publishes no events");
      auto types = ParseEventTypes({request->types().begin(), request->types().end()});
      if (!types.ok()) return ToGrpcStatus(types.status());
      auto subscription = events_->Subscribe(*types);
      if (!subscription.ok()) return ToGrpcStatus(subscription.status());
      v1::Event hello;
      hello.set_time_unix_ms(absl::ToUnixMillis(absl::Now()));
      for (const std::string& t : EventTypeNames(*types)) hello.mutable_subscribed()->add_types(t);
      if (!writer->Write(hello)) return grpc::Status(grpc::StatusCode::CANCELLED, "the client went away");
      std::vector<v1::Event> batch;
      for (;;) {
        if (context->IsCancelled()) return grpc::Status(grpc::StatusCode::CANCELLED, "the client went away");
        // The server stops: what is queued still goes out (after the hub's Close, that ends
        // with its Stopping event), then the stream ends.
        const bool stopping = stopping_->load();
        batch.clear();
        const auto wait = (*subscription)->Next(&batch, stopping ? std::chrono::milliseconds(0) : kWatchPoll);
        bool last = false;
        for (v1::Event& e : batch) {
          ScrubInvalidUtf8(e);  // next hops, reasons and NOTIFICATION text come from peers
          // Blocks while the client does not read; the hub's queue for it fills meanwhile,
          // never the daemon's thread. A stuck client is cancelled when the server stops.
          if (!writer->Write(e)) return grpc::Status(grpc::StatusCode::CANCELLED, "the client went away");
          last = last || e.has_stopping();
        }
        if (last) {
          // bagctl ends the call when it reads the Stopping event; until then the event
          // may still sit in the transport, which the server's teardown (right after the
          // handler returns) would drop on its way to the client.
          const auto until = std::chrono::steady_clock::now() + stopping_ack_;
          while (!context->IsCancelled() && std::chrono::steady_clock::now() < until) {
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
          }
          return grpc::Status::OK;
        }
        if (wait == EventHub::Subscription::Wait::kClosed) return grpc::Status::OK;
        if (stopping) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "bagd's control API is stopping");
      }
    });
  }

  grpc::Status ListNeighbors(grpc::ServerContext*, const v1::ListNeighborsRequest* request,
                             v1::ListNeighborsResponse* response) override {
    return Guarded("ListNeighbors", [&] {
      std::string filter;
      if (!request->address().empty()) {
        auto address = CanonicalNeighborAddress(request->address());
        if (!address.ok()) return ToGrpcStatus(address.status());
        filter = *std::move(address);
      }
      std::vector<v1::NeighborStatus> neighbors = backend_->ListNeighbors(filter);
      if (!filter.empty() && neighbors.empty()) {
        return grpc::Status(grpc::StatusCode::NOT_FOUND, absl::StrCat("no neighbor ", filter, " is configured"));
      }
      response->mutable_neighbors()->Reserve(static_cast<int>(neighbors.size()));
      for (v1::NeighborStatus& n : neighbors) *response->add_neighbors() = std::move(n);
      // Peers choose some of these strings (FQDN, RFC 9003 messages); one bad byte would
      // make the whole answer unparsable for the client.
      ScrubInvalidUtf8(*response);
      return grpc::Status::OK;
    });
  }

  grpc::Status ShutdownNeighbor(grpc::ServerContext*, const v1::ShutdownNeighborRequest* request,
                                v1::ShutdownNeighborResponse*) override {
    return Guarded("ShutdownNeighbor", [&] {
      if (auto refused = RefuseWrite("ShutdownNeighbor")) return *refused;
      auto address = CanonicalNeighborAddress(request->address());
      if (!address.ok()) return ToGrpcStatus(address.status());
      if (absl::Status s = CheckShutdownMessage(request->message()); !s.ok()) return ToGrpcStatus(s);
      return ToGrpcStatus(backend_->ShutdownNeighbor(*address, request->message()));
    });
  }

  // Server streaming, one page at a time: the backend builds a page (on the daemon's event
  // thread), this gRPC thread writes it out (Write returns once the transport took it, so
  // at most about one page per call is held here), then asks for the next page after the
  // last prefix sent. Between pages the event thread is free for sessions and other calls.
  grpc::Status ListRoutes(grpc::ServerContext* context, const v1::ListRoutesRequest* request,
                          grpc::ServerWriter<v1::ListRoutesResponse>* writer) override {
    return Guarded("ListRoutes", [&] {
      auto canonical = CanonicalListRoutesRequest(*request);
      if (!canonical.ok()) return ToGrpcStatus(canonical.status());
      v1::ListRoutesRequest cursor = *std::move(canonical);
      const uint32_t limit = cursor.limit();
      const size_t page_size = cursor.page_size();
      uint64_t sent = 0;
      for (bool first = true;; first = false) {
        if (context->IsCancelled()) return grpc::Status(grpc::StatusCode::CANCELLED, "the client went away");
        size_t want = page_size;
        if (limit > 0) want = std::min<uint64_t>(want, limit - sent);
        auto page = backend_->ListRoutesPage(cursor, want);
        if (!page.ok()) return ToGrpcStatus(page.status());
        if (first && !cursor.prefix().empty() && page->routes.empty()) {
          return grpc::Status(grpc::StatusCode::NOT_FOUND, RoutesNotFoundMessage(cursor));
        }
        // A backend that answers more than asked is cut to size; what it cut is "more".
        bool more = page->more;
        if (page->routes.size() > want) {
          page->routes.resize(want);
          more = true;
        }
        if (more && page->routes.empty()) {
          return grpc::Status(grpc::StatusCode::INTERNAL, "ListRoutes: bagd returned an empty page before the end");
        }
        v1::ListRoutesResponse message;
        message.mutable_routes()->Reserve(static_cast<int>(page->routes.size()));
        for (v1::Route& r : page->routes) *message.add_routes() = std::move(r);
        sent += static_cast<uint64_t>(message.routes_size());
        if (!message.routes().empty()) cursor.set_after(message.routes(message.routes_size() - 1).prefix());
        const bool last = !more || !cursor.prefix().empty() || (limit > 0 && sent >= limit);
        if (last && more && cursor.prefix().empty()) message.set_truncated(true);
        // The daemon builds this text, but from what peers sent; one bad byte anywhere would
        // make the page unreadable for the client.
        ScrubInvalidUtf8(message);
        if (!writer->Write(message)) return grpc::Status(grpc::StatusCode::CANCELLED, "the client went away");
        if (last) return grpc::Status::OK;
      }
    });
  }

  grpc::Status ListBfdSessions(grpc::ServerContext*, const v1::ListBfdSessionsRequest* request,
                               v1::ListBfdSessionsResponse* response) override {
    return Guarded("ListBfdSessions", [&] {
      std::string filter;
      if (!request->peer().empty()) {
        auto address = CanonicalNeighborAddress(request->peer());
        if (!address.ok()) return ToGrpcStatus(address.status());
        filter = *std::move(address);
      }
      auto sessions = backend_->ListBfdSessions(filter);
      if (!sessions.ok()) return ToGrpcStatus(sessions.status());
      if (!filter.empty() && sessions->sessions().empty()) {
        return grpc::Status(grpc::StatusCode::NOT_FOUND, absl::StrCat("no BFD session with ", filter, " is configured"));
      }
      *response = *std::move(sessions);
      ScrubInvalidUtf8(*response);
      return grpc::Status::OK;
    });
  }

  grpc::Status ListBmpStations(grpc::ServerContext*, const v1::ListBmpStationsRequest*,
                               v1::ListBmpStationsResponse* response) override {
    return Guarded("ListBmpStations", [&] {
      auto stations = backend_->ListBmpStations();
      if (!stations.ok()) return ToGrpcStatus(stations.status());
      *response = *std::move(stations);
      ScrubInvalidUtf8(*response);
      return grpc::Status::OK;
    });
  }

  grpc::Status GetRibSummary(grpc::ServerContext*, const v1::GetRibSummaryRequest*,
                             v1::RibSummary* response) override {
    return Guarded("GetRibSummary", [&] {
      auto summary = backend_->GetRibSummary();
      if (!summary.ok()) return ToGrpcStatus(summary.status());
      *response = *std::move(summary);
      ScrubInvalidUtf8(*response);
      return grpc::Status::OK;
    });
  }

  grpc::Status ListNextHopGroups(grpc::ServerContext*, const v1::ListNextHopGroupsRequest* request,
                                 v1::ListNextHopGroupsResponse* response) override {
    return Guarded("ListNextHopGroups", [&] {
      auto canonical = CanonicalListNextHopGroupsRequest(*request);
      if (!canonical.ok()) return ToGrpcStatus(canonical.status());
      auto groups = backend_->ListNextHopGroups(*canonical);
      if (!groups.ok()) return ToGrpcStatus(groups.status());
      // The backend should have said NOT_FOUND itself; an empty answer to a filter is one.
      if (groups->groups().empty()) {
        if (canonical->id() != 0) {
          return grpc::Status(grpc::StatusCode::NOT_FOUND, absl::StrCat("no next-hop group ", canonical->id()));
        }
        if (!canonical->prefix().empty()) {
          const bool address = canonical->prefix().find('/') == std::string::npos;
          return grpc::Status(grpc::StatusCode::NOT_FOUND,
                              absl::StrCat("no next-hop group for ", address ? "the route covering " : "",
                                           canonical->prefix()));
        }
      }
      *response = *std::move(groups);
      // Next hops and link-bandwidth text come from what peers sent.
      ScrubInvalidUtf8(*response);
      return grpc::Status::OK;
    });
  }

  grpc::Status TestPolicy(grpc::ServerContext*, const v1::TestPolicyRequest* request,
                          v1::TestPolicyResponse* response) override {
    return Guarded("TestPolicy", [&] {
      auto canonical = CanonicalTestPolicyRequest(*request);
      if (!canonical.ok()) return ToGrpcStatus(canonical.status());
      auto tested = backend_->TestPolicy(*canonical);
      if (!tested.ok()) return ToGrpcStatus(tested.status());
      *response = *std::move(tested);
      // Communities and AS paths echo what the client sent; names come from the config.
      ScrubInvalidUtf8(*response);
      return grpc::Status::OK;
    });
  }

  grpc::Status ListPolicies(grpc::ServerContext*, const v1::ListPoliciesRequest* request,
                            v1::ListPoliciesResponse* response) override {
    return Guarded("ListPolicies", [&] {
      auto policies = backend_->ListPolicies(*request);
      if (!policies.ok()) return ToGrpcStatus(policies.status());
      if (!request->name().empty() && policies->policies().empty()) {
        return grpc::Status(grpc::StatusCode::NOT_FOUND,
                            absl::StrCat("no policy \"", ToValidUtf8(request->name()), "\" is defined"));
      }
      *response = *std::move(policies);
      ScrubInvalidUtf8(*response);
      return grpc::Status::OK;
    });
  }

  grpc::Status EnableNeighbor(grpc::ServerContext*, const v1::EnableNeighborRequest* request,
                              v1::EnableNeighborResponse*) override {
    return Guarded("EnableNeighbor", [&] {
      if (auto refused = RefuseWrite("EnableNeighbor")) return *refused;
      auto address = CanonicalNeighborAddress(request->address());
      if (!address.ok()) return ToGrpcStatus(address.status());
      return ToGrpcStatus(backend_->EnableNeighbor(*address));
    });
  }

  grpc::Status ClearNeighbor(grpc::ServerContext*, const v1::ClearNeighborRequest* request,
                             v1::ClearNeighborResponse* response) override {
    return Guarded("ClearNeighbor", [&] {
      if (auto refused = RefuseWrite("ClearNeighbor")) return *refused;
      auto address = CanonicalNeighborAddress(request->address());
      if (!address.ok()) return ToGrpcStatus(address.status());
      if (absl::Status s = CheckClearMode(request->mode()); !s.ok()) return ToGrpcStatus(s);
      auto cleared = backend_->ClearNeighbor(*address, request->mode());
      if (!cleared.ok()) return ToGrpcStatus(cleared.status());
      *response = *std::move(cleared);
      return grpc::Status::OK;
    });
  }

  grpc::Status ReloadConfig(grpc::ServerContext*, const v1::ReloadConfigRequest*,
                            v1::ReloadConfigResponse* response) override {
    return Guarded("ReloadConfig", [&] {
      if (auto refused = RefuseWrite("ReloadConfig")) return *refused;
      auto r = backend_->ReloadConfig();
      if (!r.ok()) return ToGrpcStatus(r.status());
      *response = *std::move(r);
      ScrubInvalidUtf8(*response);
      return grpc::Status::OK;
    });
  }

  grpc::Status DumpMrt(grpc::ServerContext*, const v1::DumpMrtRequest* request,
                       v1::DumpMrtResponse* response) override {
    return Guarded("DumpMrt", [&] {
      if (auto refused = RefuseWrite("DumpMrt")) return *refused;
      auto r = backend_->DumpMrt(*request);
      if (!r.ok()) return ToGrpcStatus(r.status());
      *response = *std::move(r);
      ScrubInvalidUtf8(*response);
      return grpc::Status::OK;
    });
  }

  grpc::Status AddNetwork(grpc::ServerContext*, const v1::AddNetworkRequest* request,
                          v1::AddNetworkResponse* response) override {
    return Guarded("AddNetwork", [&] {
      if (auto refused = RefuseWrite("AddNetwork")) return *refused;
      v1::AddNetworkRequest r = *request;
      r.set_prefix(ToValidUtf8(r.prefix()));
      r.set_link_bandwidth(ToValidUtf8(r.link_bandwidth()));
      auto added = backend_->AddNetwork(r);
      if (!added.ok()) return ToGrpcStatus(added.status());
      *response = *std::move(added);
      return grpc::Status::OK;
    });
  }

  grpc::Status DeleteNetwork(grpc::ServerContext*, const v1::DeleteNetworkRequest* request,
                             v1::DeleteNetworkResponse*) override {
    return Guarded("DeleteNetwork", [&] {
      if (auto refused = RefuseWrite("DeleteNetwork")) return *refused;
      v1::DeleteNetworkRequest r = *request;
      r.set_prefix(ToValidUtf8(r.prefix()));
      return ToGrpcStatus(backend_->DeleteNetwork(r));
    });
  }

 private:
  ControlBackend* backend_;
  EventHub* events_;
  const bool read_only_;
  const std::atomic<bool>* stopping_;
  const std::chrono::milliseconds stopping_ack_;
};

// mkdir -p for the socket's directory; directories it creates get mode 0755.
absl::Status EnsureParentDirectory(const std::string& socket_path) {
  const size_t slash = socket_path.rfind('/');
  if (slash == std::string::npos || slash == 0) return absl::OkStatus();  // cwd or /
  const std::string dir = socket_path.substr(0, slash);
  for (size_t pos = 1; pos <= dir.size(); ++pos) {
    if (pos != dir.size() && dir[pos] != '/') continue;
    const std::string prefix = dir.substr(0, pos);
    struct stat st;
    if (::stat(prefix.c_str(), &st) == 0) {
      if (!S_ISDIR(st.st_mode)) {
        return absl::FailedPreconditionError(
            absl::StrCat("cannot create the control socket ", socket_path, ": ", prefix, " is not a directory"));
      }
      continue;
    }
    if (::mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST) {
      return absl::FailedPreconditionError(absl::StrCat("cannot create directory ", prefix,
                                                        " for the control socket: ", ErrnoText(errno)));
    }
    ::chmod(prefix.c_str(), 0755);  // mkdir's mode is filtered by the umask
  }
  return absl::OkStatus();
}

// gRPC itself unlinks whatever socket is at the path before it binds, which would silently
// take the socket from a bagd that is still running. So look first.
absl::Status RemoveStaleSocket(const std::string& socket_path) {
  struct stat st;
  if (::lstat(socket_path.c_str(), &st) != 0) {
    if (errno == ENOENT) return absl::OkStatus();
    return absl::FailedPreconditionError(
        absl::StrCat("cannot use the control socket ", socket_path, ": ", ErrnoText(errno)));
  }
  if (!S_ISSOCK(st.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot use ", socket_path, " as the control socket: it exists and is not a socket"));
  }
  const int probe = ProbeUnixSocket(socket_path);
  if (probe == 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "another process is listening on the control socket ", socket_path, " (is another bagd running?)"));
  }
  if (::unlink(socket_path.c_str()) != 0 && errno != ENOENT) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot remove the stale control socket ", socket_path, ": ", ErrnoText(errno)));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ControlBackend::RoutesPage> ControlBackend::ListRoutesPage(const v1::ListRoutesRequest&, size_t) {
  return absl::UnimplementedError(kNoRibMessage);
}

absl::StatusOr<v1::DumpMrtResponse> ControlBackend::DumpMrt(const v1::DumpMrtRequest&) {
  return absl::UnimplementedError("MRT dumps are not available in this bagd");
}
absl::StatusOr<v1::RibSummary> ControlBackend::GetRibSummary() { return absl::UnimplementedError(kNoRibMessage); }

absl::StatusOr<v1::ListBfdSessionsResponse> ControlBackend::ListBfdSessions(const std::string&) {
  return v1::ListBfdSessionsResponse();
}

absl::StatusOr<v1::ListBmpStationsResponse> ControlBackend::ListBmpStations() { return v1::ListBmpStationsResponse(); }

absl::StatusOr<v1::ListNextHopGroupsResponse> ControlBackend::ListNextHopGroups(const v1::ListNextHopGroupsRequest&) {
  return absl::UnimplementedError(kNoRibMessage);
}

absl::StatusOr<v1::TestPolicyResponse> ControlBackend::TestPolicy(const v1::TestPolicyRequest&) {
  return absl::UnimplementedError(kNoPoliciesMessage);
}

absl::StatusOr<v1::ReloadConfigResponse> ControlBackend::ReloadConfig() {
  return absl::UnimplementedError(kNoWritesMessage);
}
absl::StatusOr<v1::AddNetworkResponse> ControlBackend::AddNetwork(const v1::AddNetworkRequest&) {
  return absl::UnimplementedError(kNoWritesMessage);
}
absl::Status ControlBackend::DeleteNetwork(const v1::DeleteNetworkRequest&) {
  return absl::UnimplementedError(kNoWritesMessage);
}

absl::StatusOr<v1::ListPoliciesResponse> ControlBackend::ListPolicies(const v1::ListPoliciesRequest&) {
  return absl::UnimplementedError(kNoPoliciesMessage);
}

struct ControlServer::Impl {
  Impl(ControlBackend* backend, const ControlServerOptions& options)
      : full(backend, options.events, /*read_only=*/false, &stopping, options.stopping_ack),
        read_only(backend, options.events, /*read_only=*/true, &stopping, options.stopping_ack) {}
  ~Impl() {
    if (listen_fd >= 0) ::close(listen_fd);
    if (wake[0] >= 0) ::close(wake[0]);
    if (wake[1] >= 0) ::close(wake[1]);
  }
  std::string socket_path;
  std::atomic<bool> stopping{false};
  ControlService full;
  ControlService read_only;
  std::mutex mu;  // guards the servers (Stop from any thread, any number of times)
  std::unique_ptr<grpc::Server> full_server;
  std::unique_ptr<grpc::Server> read_only_server;
  int listen_fd = -1;
  int wake[2] = {-1, -1};  // a byte on wake[1] ends the acceptor
  std::thread acceptor;
  std::atomic<uint64_t> accepted_full{0}, accepted_read_only{0};

  // Accepts each connection itself (rather than letting gRPC listen) to read who is
  // connecting (SO_PEERCRED) and hand the connection to the server for that role: root
  // and bagd's own user may call everything; anyone else got in through the group
  // permission of control.group and may only read.
  void Accept() {
    const uid_t self = ::geteuid();
    for (;;) {
      pollfd fds[2] = {{listen_fd, POLLIN, 0}, {wake[0], POLLIN, 0}};
      if (::poll(fds, 2, -1) < 0) {
        if (errno == EINTR) continue;
        return;
      }
      if (fds[1].revents != 0) return;
      const int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (fd < 0) {
        // Out of descriptors: the connection stays in the backlog; poll() would report it
        // again at once, so wait a little instead of spinning. Else the client went away.
        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
          pollfd wait_fd = {wake[0], POLLIN, 0};
          ::poll(&wait_fd, 1, 100);
        }
        continue;
      }
      ucred cred{};
      socklen_t len = sizeof cred;
      if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
        ::close(fd);
        continue;
      }
      const bool full_access = cred.uid == 0 || cred.uid == self;
      (full_access ? accepted_full : accepted_read_only).fetch_add(1);
      // gRPC owns the descriptor from here (it closes it with the connection).
      grpc::AddInsecureChannelFromFd(full_access ? full_server.get() : read_only_server.get(), fd);
    }
  }
};

ControlServer::ControlServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

ControlServer::~ControlServer() { Stop(); }

const std::string& ControlServer::socket_path() const { return impl_->socket_path; }

absl::StatusOr<std::unique_ptr<ControlServer>> ControlServer::Start(const std::string& socket_path,
                                                                    ControlBackend* backend,
                                                                    ControlServerOptions options) {
  if (backend == nullptr) return absl::InvalidArgumentError("ControlServer::Start: no backend");
  if (socket_path.empty()) return absl::InvalidArgumentError("the control socket path is empty");
  if (socket_path.size() > kMaxUnixSocketPathLength) {
    return absl::InvalidArgumentError(absl::StrCat("the control socket path ", socket_path, " is ",
                                                   socket_path.size(), " characters; a Unix socket path has at most ",
                                                   kMaxUnixSocketPathLength));
  }
  if (absl::Status s = EnsureParentDirectory(socket_path); !s.ok()) return s;
  if (absl::Status s = RemoveStaleSocket(socket_path); !s.ok()) return s;

  auto impl = std::make_unique<Impl>(backend, options);
  impl->socket_path = socket_path;

  // Neither server listens: the acceptor below hands them their connections.
  auto build = [](ControlService& service) {
    grpc::ServerBuilder builder;
    builder.RegisterService(&service);
    builder.SetMaxReceiveMessageSize(64 * 1024);  // requests are a few hundred octets
    // A handful of operators and scripts, not a server farm: keep gRPC's thread count small.
    builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::NUM_CQS, 1);
    builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::MIN_POLLERS, 1);
    builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::MAX_POLLERS, 2);
    return builder.BuildAndStart();
  };
  impl->full_server = build(impl->full);
  impl->read_only_server = build(impl->read_only);
  if (impl->full_server == nullptr || impl->read_only_server == nullptr) {
    return absl::UnavailableError("cannot start the control API's gRPC server");
  }
  auto fail = [&](absl::Status st) {
    impl->full_server->Shutdown();
    impl->read_only_server->Shutdown();
    if (impl->listen_fd >= 0) ::unlink(socket_path.c_str());
    return st;
  };

  impl->listen_fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (impl->listen_fd < 0) {
    return fail(absl::UnavailableError(absl::StrCat("cannot create the control socket: ", ErrnoText(errno))));
  }
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, socket_path.data(), socket_path.size());
  // The socket must never be reachable by others, not even between bind() and chmod():
  // bind() creates it with mode 0777 & ~umask. umask is per process, so this relies on
  // Start being called while the daemon starts up, before other threads create files.
  const mode_t old_umask = ::umask(0177);
  const int bound = ::bind(impl->listen_fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
  const int bind_errno = errno;
  ::umask(old_umask);
  if (bound != 0) {
    ::close(impl->listen_fd);
    impl->listen_fd = -1;
    return fail(absl::UnavailableError(
        absl::StrCat("cannot listen on the control socket ", socket_path, ": ", ErrnoText(bind_errno))));
  }
  if (absl::Status s = ApplySocketGroup(socket_path, options.group); !s.ok()) return fail(s);
  if (::listen(impl->listen_fd, 64) != 0 || ::pipe2(impl->wake, O_CLOEXEC) != 0) {
    return fail(absl::UnavailableError(
        absl::StrCat("cannot listen on the control socket ", socket_path, ": ", ErrnoText(errno))));
  }
  Impl* raw = impl.get();
  impl->acceptor = std::thread([raw] { raw->Accept(); });
  return std::unique_ptr<ControlServer>(new ControlServer(std::move(impl)));
}

absl::Status ControlServer::ApplySocketGroup(const std::string& socket_path, std::optional<gid_t> group) {
  // chown before chmod: the group's members never see the socket open to another group.
  if (group) {
    if (::chown(socket_path.c_str(), static_cast<uid_t>(-1), *group) != 0) {
      return absl::FailedPreconditionError(absl::StrCat("cannot give the control socket ", socket_path, " to group ",
                                                        *group, " (control.group): ", ErrnoText(errno)));
    }
  }
  const mode_t mode = group ? 0660 : 0600;
  if (::chmod(socket_path.c_str(), mode) != 0) {
    return absl::FailedPreconditionError(absl::StrFormat("cannot make the control socket %s mode %04o: %s",
                                                         socket_path, mode, ErrnoText(errno)));
  }
  return absl::OkStatus();
}

absl::Status ControlServer::SetGroup(std::optional<gid_t> group) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  if (impl_->full_server == nullptr) return absl::FailedPreconditionError("the control API has stopped");
  return ApplySocketGroup(impl_->socket_path, group);
}

ControlServer::Connections ControlServer::connections() const {
  return Connections{impl_->accepted_full.load(), impl_->accepted_read_only.load()};
}

void ControlServer::Stop() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  if (impl_->full_server == nullptr) return;
  // No new connection first (the acceptor hands connections to the servers), then the
  // streams end (WatchEvents looks at `stopping` every kWatchPoll), then the calls.
  if (impl_->acceptor.joinable()) {
    const char byte = 0;
    (void)!::write(impl_->wake[1], &byte, 1);
    impl_->acceptor.join();
  }
  ::close(impl_->listen_fd);
  impl_->listen_fd = -1;
  ::unlink(impl_->socket_path.c_str());
  impl_->stopping.store(true);
  const auto deadline = std::chrono::system_clock::now() + kShutdownGrace;
  impl_->full_server->Shutdown(deadline);
  impl_->read_only_server->Shutdown(deadline);
  impl_->full_server->Wait();
  impl_->read_only_server->Wait();
  impl_->full_server.reset();
  impl_->read_only_server.reset();
}

}  // namespace bagd::control
