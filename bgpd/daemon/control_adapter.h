// The control API's view of the speaker: gRPC threads post each call to the io_context
// thread and wait for its answer, so the speaker never needs a lock.
#pragma once

#include <boost/asio/io_context.hpp>
#include <functional>
#include <mutex>
#include <string>

#include "bgpd/control/control_server.h"
#include "bgpd/daemon/bfd_stage.h"
#include "bgpd/daemon/mrt_stage.h"
#include "bgpd/daemon/policy_view.h"
#include "bgpd/daemon/speaker.h"

namespace bagd::daemon {

class ControlAdapter : public control::ControlBackend {
 public:
  // `neighbor_ribs` (policies, received / advertised routes; may be null: then TestPolicy,
  // ListPolicies and the neighbor route views answer UNIMPLEMENTED) is read on the io thread.
  // `config_path`: the file ReloadConfig reads (the one bagd was started with; empty: no
  // ReloadConfig). `on_reloaded` (may be empty) runs on the io thread after each reload, as
  // after a SIGHUP's (the service manager's status).
  struct Options {
    const NeighborRibs* neighbor_ribs = nullptr;
    std::string config_path;
    std::function<void(const control::v1::ReloadConfigResponse&)> on_reloaded;
    // What the FIB backend knows of each listed group (the APPL_DB key and confirmation),
    // added on the io thread; may be empty.
    std::function<void(control::v1::NextHopGroup&)> annotate_group;
    // BFD sessions (ListBfdSessions; null: none), read from the gRPC thread.
    const BfdStage* bfd = nullptr;
    // Starts an MRT table dump to an absolute path and calls back on the io thread when it
    // is written or failed (MrtStage::DumpTable); called on the io thread. Empty: DumpMrt
    // answers UNIMPLEMENTED.
    std::function<void(const std::string&, std::function<void(const MrtDumpResult&)>)> dump_mrt;
  };
  ControlAdapter(boost::asio::io_context& io, Speaker& speaker, Options options)
      : io_(io),
        speaker_(speaker),
        neighbor_ribs_(options.neighbor_ribs),
        options_(std::move(options)),
        annotate_(options_.annotate_group),
        bfd_(options_.bfd) {}
  ControlAdapter(boost::asio::io_context& io, Speaker& speaker, const NeighborRibs* neighbor_ribs = nullptr)
      : ControlAdapter(io, speaker, Options{neighbor_ribs, {}, {}, {}, {}, {}}) {}
  std::vector<control::v1::NeighborStatus> ListNeighbors(const std::string& address_filter) override;
  absl::Status ShutdownNeighbor(const std::string& address, const std::string& message) override;
  absl::Status EnableNeighbor(const std::string& address) override;
  absl::StatusOr<control::v1::ClearNeighborResponse> ClearNeighbor(
      const std::string& address, control::v1::ClearNeighborRequest::Mode mode) override;
  absl::StatusOr<RoutesPage> ListRoutesPage(const control::v1::ListRoutesRequest& request,
                                            size_t max_routes) override;
  absl::StatusOr<control::v1::RibSummary> GetRibSummary() override;
  absl::StatusOr<control::v1::ListBfdSessionsResponse> ListBfdSessions(const std::string& peer) override;
  absl::StatusOr<control::v1::ListBmpStationsResponse> ListBmpStations() override;
  absl::StatusOr<control::v1::ListNextHopGroupsResponse> ListNextHopGroups(
      const control::v1::ListNextHopGroupsRequest& request) override;
  absl::StatusOr<control::v1::TestPolicyResponse> TestPolicy(const control::v1::TestPolicyRequest& request) override;
  absl::StatusOr<control::v1::ListPoliciesResponse> ListPolicies(
      const control::v1::ListPoliciesRequest& request) override;
  // Reads and validates the file on the calling (gRPC) thread, applies it on the io thread.
  absl::StatusOr<control::v1::ReloadConfigResponse> ReloadConfig() override;
  absl::StatusOr<control::v1::AddNetworkResponse> AddNetwork(const control::v1::AddNetworkRequest& request) override;
  absl::Status DeleteNetwork(const control::v1::DeleteNetworkRequest& request) override;
  // Waits (on the gRPC thread) until the file is written; the io thread only encodes slices.
  absl::StatusOr<control::v1::DumpMrtResponse> DumpMrt(const control::v1::DumpMrtRequest& request) override;

 private:
  boost::asio::io_context& io_;
  Speaker& speaker_;
  const NeighborRibs* neighbor_ribs_;
  Options options_;
  std::function<void(control::v1::NextHopGroup&)> annotate_;  // options_.annotate_group
  std::mutex reload_mu_;  // one ReloadConfig at a time
  const BfdStage* bfd_;
};

}  // namespace bagd::daemon
