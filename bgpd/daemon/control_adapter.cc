#include "bgpd/daemon/control_adapter.h"

#include "bgpd/daemon/rib_view.h"
#include "conf/config_loader.h"
#include "conf/policy_text.h"
#include "conf/rate_text.h"

#include <boost/asio/post.hpp>
#include <chrono>
#include <future>

#include "bgpd/session/log.h"

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
           if (resp.ok()) {
             if (auto cap = speaker_.FibGroupCap()) daemon::FillFibGroupCap(*cap, *resp);
             if (auto rep = speaker_.FibRepairStatus()) daemon::FillFibRepair(*rep, *resp);
           }
           if (resp.ok() && annotate_) {
             for (auto& g : *resp->mutable_groups()) annotate_(g);
           }
           return resp;
         })
      .value_or(absl::DeadlineExceededError("bagd did not answer within 5 s"));
}

absl::StatusOr<control::v1::ListBfdSessionsResponse> ControlAdapter::ListBfdSessions(const std::string& peer) {
  control::v1::ListBfdSessionsResponse out;
  if (bfd_ == nullptr) return out;
  // The engine answers from its own thread: no visit to the event thread.
  for (auto& s : bfd_->Sessions(peer)) *out.add_sessions() = std::move(s);
  return out;
}

absl::StatusOr<control::v1::ListBmpStationsResponse> ControlAdapter::ListBmpStations() {
  return OnIoThread(io_, [this]() -> absl::StatusOr<control::v1::ListBmpStationsResponse> {
           control::v1::ListBmpStationsResponse out;
           for (const bmp::StationStatus& s : speaker_.BmpStations()) {
             auto& st = *out.add_stations();
             st.set_name(s.name);
             st.set_state(bmp::StationStateName(s.state));
             if (s.views.pre_policy) st.add_views("pre-policy");
             if (s.views.post_policy) st.add_views("post-policy");
             if (s.views.loc_rib) st.add_views("loc-rib");
             if (s.views.adj_rib_out_pre) st.add_views("adj-rib-out-pre");
             if (s.views.adj_rib_out_post) st.add_views("adj-rib-out-post");
             if (s.state == bmp::Station::State::kUp) {
               st.set_up_since_unix_ms(std::chrono::duration_cast<std::chrono::milliseconds>(
                                           s.up_since.time_since_epoch()).count());
             }
             st.set_syncing(s.syncing);
             st.set_syncs_done(s.syncs_done);
             st.set_messages(s.counters.messages);
             st.set_bytes(s.counters.bytes);
             st.set_drops(s.counters.drops);
             st.set_connects(s.counters.connects);
             st.set_reconnects(s.counters.reconnects);
             st.set_failures(s.counters.failures);
             st.set_buffered_bytes(s.buffered);
             st.set_max_buffer_bytes(s.max_buffer_bytes);
             st.set_longest_slice_seconds(static_cast<double>(s.longest_slice.count()) / 1e6);
             st.set_statistics_interval_seconds(s.statistics_interval_s);
             st.set_last_error(s.last_error);
           }
           return out;
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

absl::StatusOr<control::v1::ReloadConfigResponse> ControlAdapter::ReloadConfig() {
  if (options_.config_path.empty()) return absl::UnimplementedError("this bagd was started without a configuration file");
  std::lock_guard<std::mutex> lock(reload_mu_);
  control::v1::ReloadConfigResponse out;
  out.set_path(options_.config_path);
  // The file is read here, on the gRPC thread, as a SIGHUP's is on a worker: the io thread
  // only applies it.
  conf::LoadedConfig loaded = conf::LoadConfigFile(options_.config_path);
  if (!loaded.ok()) {
    for (const auto& e : loaded.errors) out.add_errors(e.ToString());
    log::Error("control API reload: %s has %d %s; keeping the running configuration", options_.config_path,
               loaded.errors.size(), loaded.errors.size() == 1 ? "error" : "errors");
    for (const auto& e : loaded.errors) log::Error("control API reload: %s", e.ToString());
  } else {
    // The task owns everything it touches: after a timeout it may still run, when this
    // call (and `out`) is gone.
    auto applied = OnIoThread(io_, [this, config = std::move(loaded.config)]() -> absl::StatusOr<std::vector<std::string>> {
      std::vector<std::string> restart;
      absl::Status st = speaker_.Reload(config, &restart);
      if (!st.ok()) {
        log::Error("control API reload: %s; keeping the running configuration", st.message());
        return st;
      }
      log::Info("control API: %s reloaded", options_.config_path);
      return restart;
    }, std::chrono::seconds(30));
    if (!applied) return absl::DeadlineExceededError("bagd did not apply the configuration within 30 s");
    if (applied->ok()) {
      out.set_applied(true);
      for (auto& r : **applied) out.add_needs_restart(r);
    } else {
      out.add_errors(std::string(applied->status().message()));
    }
  }
  if (options_.on_reloaded) {
    OnIoThread(io_, [this, out] {
      options_.on_reloaded(out);
      return true;
    });
  }
  return out;
}

absl::StatusOr<control::v1::AddNetworkResponse> ControlAdapter::AddNetwork(const control::v1::AddNetworkRequest& request) {
  // The same words as the configuration's checks (conf/config_validator.cc).
  const auto text = conf::ParsePrefixText(request.prefix());
  if (!text) {
    return absl::InvalidArgumentError(
        absl::StrCat("network \"", request.prefix(), "\" is not a prefix such as 10.100.0.0/24 or 2001:db8::/48"));
  }
  if (text->HasHostBits()) {
    return absl::InvalidArgumentError(absl::StrCat("network ", request.prefix(), " has host bits set: write the prefix itself"));
  }
  auto prefix = net::Prefix::Parse(request.prefix());
  if (!prefix.ok()) return absl::InvalidArgumentError(prefix.status().message());
  Network n;
  n.nlri = net::Nlri{*prefix, 0};
  if (!request.link_bandwidth().empty()) {
    auto bps = conf::ParseRate(request.link_bandwidth());
    if (!bps.ok()) return absl::InvalidArgumentError(absl::StrCat("link_bandwidth: ", bps.status().message()));
    n.link_bandwidth_bps = *bps;
  }
  return OnIoThread(io_, [this, n]() -> absl::StatusOr<control::v1::AddNetworkResponse> {
           auto replaced = speaker_.AddNetwork(n);
           if (!replaced.ok()) return replaced.status();
           control::v1::AddNetworkResponse r;
           r.set_replaced(*replaced);
           return r;
         })
      .value_or(absl::DeadlineExceededError("bagd did not answer within 5 s"));
}

absl::Status ControlAdapter::DeleteNetwork(const control::v1::DeleteNetworkRequest& request) {
  auto prefix = net::Prefix::Parse(request.prefix());
  if (!prefix.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("network \"", request.prefix(), "\" is not a prefix such as 10.100.0.0/24 or 2001:db8::/48"));
  }
  return OnIoThread(io_, [this, p = *prefix] { return speaker_.DeleteNetwork(p); })
      .value_or(absl::DeadlineExceededError("bagd did not answer within 5 s"));
}

absl::StatusOr<control::v1::DumpMrtResponse> ControlAdapter::DumpMrt(const control::v1::DumpMrtRequest& request) {
  if (!options_.dump_mrt) return absl::UnimplementedError("MRT dumps are not available in this bagd");
  const std::string path = request.path();
  if (path.empty() || path[0] != '/') {
    return absl::InvalidArgumentError(absl::StrCat(
        "\"", path, "\" is not an absolute path: bagd writes the file itself, on its own host (docs/mrt.md)"));
  }
  // The promise is set on the io thread when the writer has renamed the file (or failed).
  // If bagd stops first, the stage drops the callback and with it the promise: broken.
  auto promise = std::make_shared<std::promise<MrtDumpResult>>();
  auto result = promise->get_future();
  boost::asio::post(io_, [this, path, promise] {
    options_.dump_mrt(path, [promise](const MrtDumpResult& r) { promise->set_value(r); });
  });
  constexpr auto kMaxWait = std::chrono::minutes(30);
  if (result.wait_for(kMaxWait) != std::future_status::ready) {
    return absl::DeadlineExceededError("the MRT dump did not finish within 30 minutes");
  }
  MrtDumpResult r;
  try {
    r = result.get();
  } catch (const std::future_error&) {
    return absl::UnavailableError("bagd stopped before the MRT dump was written");
  }
  if (!r.status.ok()) return r.status;
  control::v1::DumpMrtResponse out;
  out.set_path(r.path);
  out.set_prefixes(r.counts.prefixes);
  out.set_paths(r.counts.paths);
  out.set_records(r.counts.records);
  out.set_bytes(r.bytes);
  out.set_peers(r.peers);
  out.set_seconds(r.seconds);
  out.set_skipped_paths(r.counts.skipped_paths);
  return out;
}

}  // namespace bagd::daemon
