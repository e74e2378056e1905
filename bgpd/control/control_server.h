// The control API server: gRPC service bagd.control.v1.Control (control.proto) on a Unix
// socket, answering from a ControlBackend the daemon implements. See docs/control-api.md.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "bgpd/control/control.pb.h"
#include "bgpd/control/event_hub.h"

namespace bagd::control {

// Implemented by the daemon. Called from gRPC threads (several at once); the daemon makes
// it thread-safe, typically by posting to its own thread and waiting for the answer.
// Calls must return promptly: ControlServer::Stop waits for calls in progress.
//
// The server has already checked the arguments: every `address` is the canonical text of
// an IP address (CanonicalNeighborAddress), `message` is valid UTF-8 of at most 255 octets,
// a ClearNeighbor mode is one the API defines (CheckClearMode), a ListRoutesRequest is canonical (CanonicalListRoutesRequest), and so is a
// ListNextHopGroupsRequest (CanonicalListNextHopGroupsRequest).
// Return NotFound for an address that is not a configured neighbor; the message of any
// error is shown to the operator as is, so make it one an engineer can act on.
// Text the backend returns is scrubbed of ill-formed UTF-8 by the server.
class ControlBackend {
 public:
  virtual ~ControlBackend() = default;
  // Every configured neighbor, or only the one whose address is `address_filter` (empty:
  // all). An empty answer to a filter becomes NOT_FOUND for the client.
  virtual std::vector<v1::NeighborStatus> ListNeighbors(const std::string& address_filter) = 0;
  // Cease / Administrative Shutdown (6/2) carrying `message` (RFC 9003; empty: none);
  // the neighbor stays down until EnableNeighbor.
  virtual absl::Status ShutdownNeighbor(const std::string& address, const std::string& message) = 0;
  virtual absl::Status EnableNeighbor(const std::string& address) = 0;
  // Resets (MODE_HARD) or refreshes (MODE_SOFT_IN, MODE_SOFT_OUT, MODE_SOFT) the session
  // with `address` (control.proto); `mode` is one of those four (CheckClearMode). NotFound
  // for an unknown neighbor; FailedPrecondition when it is not Established, or for a soft
  // refresh inbound when it did not negotiate route refresh (then nothing is done at all).
  virtual absl::StatusOr<v1::ClearNeighborResponse> ClearNeighbor(const std::string& address,
                                                                  v1::ClearNeighborRequest::Mode mode) = 0;

  // One page of the routing table (control.proto, docs/control-api.md). The server calls
  // this once per page of a ListRoutes stream, with the last prefix it sent as `after`, and
  // writes each page out before it asks for the next; the backend keeps no state between
  // pages (the table may change in between). `request` is canonical:
  //   prefix  empty (all), a prefix "192.0.2.0/24" (exactly that one, host bits already
  //           cleared), or an address without a length "192.0.2.1" (the most specific
  //           route covering it); then `after` is empty and one call answers;
  //   family  "ipv4-unicast", "ipv6-unicast", or empty (both); always the prefix's own
  //           family when a prefix is given;
  //   after   empty, or a canonical prefix: only routes after it in table order;
  //   limit, page_size: the server's business (it asks for at most `max_routes`);
  //   view    VIEW_RIB (the routing table), or a neighbor's routes as received, accepted
  //           or advertised; then `neighbor` is its canonical address. NotFound for a
  //           neighbor that is not configured, FailedPrecondition for VIEW_RECEIVED when
  //           the neighbor keeps no received routes (soft_reconfiguration_inbound off).
  // At most `max_routes` routes in ascending order (IPv4 before IPv6, by address, then
  // length), each with its best path first, and `more` when further routes follow. A page
  // may hold fewer routes (e.g. to bound the paths in it) but never none while `more`.
  // No route for a prefix may be an empty answer (the server makes it NOT_FOUND).
  struct RoutesPage {
    std::vector<v1::Route> routes;
    bool more = false;
  };
  virtual absl::StatusOr<RoutesPage> ListRoutesPage(const v1::ListRoutesRequest& request, size_t max_routes);
  // Counts per family and per peer, attribute sets, memory.
  virtual absl::StatusOr<v1::RibSummary> GetRibSummary();
  // BFD sessions (docs/bfd.md), all or those of `peer` (canonical address; the server makes
  // an empty answer to a filter NOT_FOUND). Default: none.
  virtual absl::StatusOr<v1::ListBfdSessionsResponse> ListBfdSessions(const std::string& peer);
  // BMP stations (docs/bmp.md); the default: none.
  virtual absl::StatusOr<v1::ListBmpStationsResponse> ListBmpStations();
  // The weighted next-hop groups (control.proto, docs/control-api.md), with the weight
  // settings and counters. `request` is canonical (CanonicalListNextHopGroupsRequest): at
  // most one of
  //   id      0, or one group: NotFound if there is no such group;
  //   prefix  empty, a prefix with its host bits cleared (exactly that route) or an address
  //           without a length (the most specific route covering it): that route's group;
  //           NotFound if there is no such route or it has no group.
  // Groups by id. An empty answer to an id or a prefix becomes NOT_FOUND for the client.
  virtual absl::StatusOr<v1::ListNextHopGroupsResponse> ListNextHopGroups(const v1::ListNextHopGroupsRequest& request);
  // What the three defaults above answer (UNIMPLEMENTED), for a daemon without a RIB.
  static constexpr const char* kNoRibMessage = "the routing table is not available in this bagd";

  // One policy evaluated on the route the request describes (control.proto TestPolicy),
  // counting no hits. `request` is canonical (CanonicalTestPolicyRequest): a policy name,
  // a prefix with its host bits cleared, a canonical neighbor address or none, a known
  // source; the attributes are unchecked text. NotFound for an undefined policy (naming the
  // defined ones), InvalidArgument for an attribute that does not parse.
  virtual absl::StatusOr<v1::TestPolicyResponse> TestPolicy(const v1::TestPolicyRequest& request);
  // Every policy, or the one named (NotFound if it is not defined), with per-statement hits.
  virtual absl::StatusOr<v1::ListPoliciesResponse> ListPolicies(const v1::ListPoliciesRequest& request);
  // What those two defaults answer (UNIMPLEMENTED), for a daemon without policies.
  static constexpr const char* kNoPoliciesMessage = "routing policies are not available in this bagd";

  // Writes (control.proto). The defaults answer UNIMPLEMENTED.
  virtual absl::StatusOr<v1::ReloadConfigResponse> ReloadConfig();
  // The request's text as it came (valid UTF-8): the backend parses the prefix and the rate
  // as the configuration does, with the same messages (InvalidArgument).
  virtual absl::StatusOr<v1::AddNetworkResponse> AddNetwork(const v1::AddNetworkRequest& request);
  virtual absl::Status DeleteNetwork(const v1::DeleteNetworkRequest& request);
  // The RIB as an MRT TABLE_DUMP_V2 file (control.proto DumpMrt); blocks the calling gRPC
  // thread until the file is written. `path` unchecked: the backend refuses a relative one.
  virtual absl::StatusOr<v1::DumpMrtResponse> DumpMrt(const v1::DumpMrtRequest& request);
  static constexpr const char* kNoWritesMessage = "this bagd takes no changes over the control API";
};

struct ControlServerOptions {
  // Where WatchEvents subscribes (must outlive the server); null: WatchEvents answers
  // UNIMPLEMENTED.
  EventHub* events = nullptr;
  // control.group (docs/operations.md): the socket belongs to this group with mode 0660,
  // and connections from its members are read-only. nullopt: mode 0600.
  std::optional<gid_t> group;
  // After a WatchEvents stream's Stopping event, how long it waits for its client to end the
  // call (bagctl does on reading it) before it returns: the server's shutdown would drop an
  // event still in the transport. A client that does not end it holds the stop this long.
  std::chrono::milliseconds stopping_ack{1000};
};

class ControlServer {
 public:
  // Listens on unix:<socket_path>. Creates the parent directory (mode 0755) if missing,
  // removes a stale socket (one nobody listens on), and makes the socket mode 0600 (0660
  // and group-owned with options.group).
  // Fails (FailedPrecondition) rather than take over a socket another process listens on,
  // or remove a path that is not a socket. `backend` must outlive the server.
  //
  // Who may do what: a connection whose peer (SO_PEERCRED) is root or bagd's own user may
  // call every RPC; any other got in through the group permission and may only read: the
  // writes (ShutdownNeighbor, EnableNeighbor, ClearNeighbor, ReloadConfig, AddNetwork,
  // DeleteNetwork) answer PERMISSION_DENIED to it.
  static absl::StatusOr<std::unique_ptr<ControlServer>> Start(const std::string& socket_path,
                                                              ControlBackend* backend,
                                                              ControlServerOptions options = {});

  // A reload's control.group: the socket's group and mode change at once (connections
  // already open keep their role). Thread-safe.
  absl::Status SetGroup(std::optional<gid_t> group);

  // Connections accepted since Start, by role.
  struct Connections {
    uint64_t full = 0;
    uint64_t read_only = 0;
  };
  Connections connections() const;

  // Stops accepting calls, waits for calls in progress (at most 5 s, then gRPC cancels
  // them), removes the socket file. Idempotent.
  void Stop();
  ~ControlServer();

  ControlServer(const ControlServer&) = delete;
  ControlServer& operator=(const ControlServer&) = delete;

  const std::string& socket_path() const;

 private:
  struct Impl;
  static absl::Status ApplySocketGroup(const std::string& socket_path, std::optional<gid_t> group);
  explicit ControlServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace bagd::control
