#include "tools/bagctl/neighbor_render.h"

#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <array>
#include <ctime>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace bagd::bagctl {
namespace {

using control::v1::MessageCounters;
using control::v1::Notification;

constexpr const char* kEstablished = "Established";

std::string YesNo(bool b) { return b ? "yes" : "no"; }

std::string JoinOrNone(const google::protobuf::RepeatedPtrField<std::string>& items) {
  if (items.empty()) return "none";
  std::vector<std::string> shown;
  shown.reserve(items.size());
  for (const std::string& s : items) shown.push_back(Printable(s));
  return absl::StrJoin(shown, ", ");
}

// "192.0.2.1:179", "[2001:db8::1]:179".
std::string AddressPort(const std::string& address, uint32_t port) {
  if (address.find(':') != std::string::npos) return absl::StrCat("[", Printable(address), "]:", port);
  return absl::StrCat(Printable(address), ":", port);
}

std::string Quote(std::string_view text) { return absl::StrCat("\"", Printable(text), "\""); }

// One table column: its header, whether it is right-aligned, and its minimum width
// (FRR's, so the numbers line up the same way operators are used to).
struct Column {
  const char* header;
  bool right;
  size_t min_width;
};

constexpr Column kColumns[] = {
    {"Neighbor", false, 15}, {"V", true, 1},       {"AS", true, 10},         {"MsgRcvd", true, 9}, {"MsgSent", true, 9},
    {"Up/Down", true, 8},    {"State/PfxRcd", true, 12}, {"PfxSnt", true, 8}, {"Desc", false, 0},
};

std::string NotificationLine(const Notification& n) {
  std::string what;
  if (!n.code_name().empty()) {
    what = absl::StrCat(Printable(n.code_name()), " / ", Printable(n.subcode_name()), " (", n.code(), "/", n.subcode(),
                        ")");
  } else {
    what = absl::StrCat("code ", n.code(), ", subcode ", n.subcode());
  }
  if (n.time_unix_ms() > 0) absl::StrAppend(&what, " at ", FormatUnixMs(n.time_unix_ms()));
  return what;
}

void AppendNotification(std::string& out, const char* label, bool present, const Notification& n) {
  if (!present) {
    absl::StrAppend(&out, "  ", label, ": none\n");
    return;
  }
  absl::StrAppend(&out, "  ", label, ": ", NotificationLine(n), "\n");
  if (!n.shutdown_message().empty()) {
    absl::StrAppend(&out, "    Shutdown message: ", Quote(n.shutdown_message()), "\n");
  } else if (!n.data().empty()) {
    constexpr size_t kMaxShown = 32;
    std::string hex;
    for (size_t i = 0; i < n.data().size() && i < kMaxShown; ++i) {
      absl::StrAppend(&hex, i ? " " : "", absl::Hex(static_cast<unsigned char>(n.data()[i]), absl::kZeroPad2));
    }
    if (n.data().size() > kMaxShown) absl::StrAppend(&hex, " ... (", n.data().size(), " octets)");
    absl::StrAppend(&out, "    Data: ", hex, "\n");
  }
}

void AppendCounterRow(std::string& out, const char* label, uint64_t sent, uint64_t received) {
  absl::StrAppend(&out, absl::StrFormat("    %-16s%10d %10d\n", label, sent, received));
}

// Route refresh both ways, when anything happened (the message counters count every
// ROUTE-REFRESH; these say what they were for).
void AppendRouteRefresh(std::string& out, const control::v1::RouteRefreshStatus& r) {
  const bool enhanced_in = r.borr_received() > 0 || r.eorr_received() > 0 || !r.refreshing().empty();
  if (r.requests_received() == 0 && r.requests_sent() == 0 && r.adj_rib_out_resends() == 0 && !enhanced_in &&
      r.ignored() == 0) {
    return;
  }
  absl::StrAppend(&out, "  Route refresh: requests received ", r.requests_received(), ", sent ", r.requests_sent(),
                  "; Adj-RIB-Out re-sent ", r.adj_rib_out_resends(), r.adj_rib_out_resends() == 1 ? " time" : " times",
                  " (", r.prefixes_resent(), " prefixes)\n");
  if (enhanced_in) {
    absl::StrAppend(&out, "  Refreshes from the neighbor: BoRR ", r.borr_received(), ", EoRR ", r.eorr_received(),
                    ", timed out ", r.refreshes_timed_out(), "; stale paths removed ", r.stale_paths_removed());
    if (!r.refreshing().empty()) absl::StrAppend(&out, "; re-sending now: ", JoinOrNone(r.refreshing()));
    absl::StrAppend(&out, "\n");
  }
  if (r.ignored() > 0) absl::StrAppend(&out, "  ROUTE-REFRESH messages ignored: ", r.ignored(), " (see bagd's log)\n");
}

// Graceful restart (RFC 4724): what each side offered, and the stale paths kept now.
void AppendGracefulRestart(std::string& out, const control::v1::GracefulRestartStatus& g) {
  std::string local = g.enabled() ? absl::StrCat("restart time ", g.restart_time(), " s, families ", JoinOrNone(g.families()),
                                                 ", stale routes time ", g.stale_routes_time(), " s")
                                  : "off (End-of-RIB only)";
  if (g.restart_state_sent()) absl::StrAppend(&local, ", R sent (bagd restarted)");
  if (!g.forwarding_preserved_sent().empty()) absl::StrAppend(&local, ", F sent: ", JoinOrNone(g.forwarding_preserved_sent()));
  absl::StrAppend(&out, "  Graceful restart: ", local, "\n");
  if (g.peer_offered()) {
    absl::StrAppend(&out, "    Neighbor: restart time ", g.peer_restart_time(), " s, families ", JoinOrNone(g.peer_families()),
                    ", F: ", JoinOrNone(g.peer_forwarding_preserved()), g.peer_restart_state() ? ", R (it restarted)" : "",
                    "; kept across its restart: ", JoinOrNone(g.retained()), "\n");
  }
  if (g.initial_advertisement_deferred()) {
    absl::StrAppend(&out, "    Initial advertisement deferred until bagd's tables are in\n");
  }
  if (!g.phase().empty()) {
    absl::StrAppend(&out, "    Now: ", g.phase() == "restarting" ? "neighbor restarting" : "waiting for End-of-RIB", ", ",
                    g.stale_paths(), " stale paths in ", JoinOrNone(g.stale_families()), ", removed at the latest at ",
                    FormatUnixMs(g.deadline_unix_ms()), "\n");
  }
  if (g.restarts() > 0) {
    absl::StrAppend(&out, "    Restarts helped: ", g.restarts(), "; stale paths removed ", g.stale_paths_removed(),
                    "; timers expired ", g.timers_expired(), "\n");
  }
}

}  // namespace

std::string FormatHms(int64_t seconds) {
  if (seconds < 0) seconds = 0;
  return absl::StrFormat("%d:%02d:%02d", seconds / 3600, seconds / 60 % 60, seconds % 60);
}

std::string FormatUnixMs(int64_t unix_ms) {
  const std::time_t t = static_cast<std::time_t>(unix_ms / 1000);
  std::tm tm{};
  if (gmtime_r(&t, &tm) == nullptr) return absl::StrCat(unix_ms, " ms");
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &tm);
  return buf;
}

std::string Printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) {
      absl::StrAppend(&out, "\\x", absl::Hex(u, absl::kZeroPad2));
    } else {
      out += c;
    }
  }
  return out;
}

std::string UpDownColumn(const NeighborStatus& n, int64_t now_unix_ms) {
  if (n.state() == kEstablished) return FormatHms(n.uptime_seconds());
  if (n.established_transitions() == 0) return "never";
  if (n.state_since_unix_ms() <= 0) return "-";
  return FormatHms((now_unix_ms - n.state_since_unix_ms()) / 1000);
}

std::string StateColumn(const NeighborStatus& n) {
  if (n.state() == kEstablished) return absl::StrCat(n.prefixes_received());
  const std::string state = n.state().empty() ? "Idle" : Printable(n.state());
  if (n.admin_down()) return absl::StrCat(state, " (Admin)");
  // FRR's mark for a neighbor down after exceeding its maximum prefixes.
  if (n.prefix_limit_down()) return absl::StrCat(state, " (PfxCt)");
  return state;
}

std::string RenderNeighborTable(const std::vector<NeighborStatus>& neighbors, int64_t now_unix_ms) {
  // With neighbor groups, a Group column before Desc; a dynamic neighbor's address is marked
  // '*', as FRR marks it.
  const bool grouped = std::any_of(neighbors.begin(), neighbors.end(), [](const NeighborStatus& n) { return !n.group().empty(); });
  const bool any_dynamic = std::any_of(neighbors.begin(), neighbors.end(), [](const NeighborStatus& n) { return n.dynamic(); });
  std::vector<Column> columns(std::begin(kColumns), std::end(kColumns));
  if (grouped) columns.insert(columns.end() - 1, Column{"Group", false, 5});
  std::vector<std::vector<std::string>> rows;
  rows.reserve(neighbors.size() + 1);
  rows.emplace_back();
  for (const Column& c : columns) rows[0].push_back(c.header);
  for (const NeighborStatus& n : neighbors) {
    rows.push_back({
        absl::StrCat(n.dynamic() ? "*" : "", Printable(n.address())),
        "4",
        absl::StrCat(n.remote_as()),
        absl::StrCat(n.has_messages_in() ? n.messages_in().total() : 0),
        absl::StrCat(n.has_messages_out() ? n.messages_out().total() : 0),
        UpDownColumn(n, now_unix_ms),
        StateColumn(n),
        absl::StrCat(n.prefixes_sent()),
    });
    if (grouped) rows.back().push_back(n.group().empty() ? "-" : Printable(n.group()));
    rows.back().push_back(n.description().empty() ? "N/A" : Printable(n.description()));
  }
  std::vector<size_t> width(columns.size());
  for (size_t c = 0; c < columns.size(); ++c) {
    width[c] = columns[c].min_width;
    for (const auto& row : rows) width[c] = std::max(width[c], row[c].size());
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (size_t c = 0; c < columns.size(); ++c) {
      if (c > 0) line += ' ';
      const size_t pad = width[c] - row[c].size();
      if (c + 1 == columns.size()) {
        line += row[c];  // the last column is not padded: no trailing blanks
      } else if (columns[c].right) {
        line.append(pad, ' ').append(row[c]);
      } else {
        line.append(row[c]).append(pad, ' ');
      }
    }
    absl::StrAppend(&out, line, "\n");
  }
  absl::StrAppend(&out, "\nTotal number of neighbors ", neighbors.size(), "\n");
  if (any_dynamic) absl::StrAppend(&out, "* - dynamic neighbor (a group's listen range)\n");
  return out;
}

std::string RenderNeighborDetail(const NeighborStatus& n, int64_t now_unix_ms) {
  std::string out;
  const bool established = n.state() == kEstablished;
  absl::StrAppend(&out, "BGP neighbor is ", Printable(n.address()), ", remote AS ", n.remote_as(), ", local AS ",
                  n.local_as(), ", ", n.remote_as() == n.local_as() ? "internal" : "external", " link\n");
  if (!n.description().empty()) absl::StrAppend(&out, "  Description: ", Printable(n.description()), "\n");
  if (n.dynamic()) {
    absl::StrAppend(&out, "  Dynamic neighbor of group ", Printable(n.group()), " (listen range ", Printable(n.listen_range()),
                    "): removed when its session ends\n");
  } else if (!n.group().empty()) {
    absl::StrAppend(&out, "  Neighbor group: ", Printable(n.group()), "\n");
  }

  // State, and since when.
  std::string state_line = absl::StrCat("  BGP state = ", n.state().empty() ? "Idle" : Printable(n.state()));
  if (established) {
    absl::StrAppend(&state_line, ", up for ", FormatHms(n.uptime_seconds()));
    if (n.state_since_unix_ms() > 0) absl::StrAppend(&state_line, " (since ", FormatUnixMs(n.state_since_unix_ms()), ")");
  } else if (n.state_since_unix_ms() > 0) {
    absl::StrAppend(&state_line, ", for ", FormatHms((now_unix_ms - n.state_since_unix_ms()) / 1000), " (since ",
                    FormatUnixMs(n.state_since_unix_ms()), ")");
  }
  absl::StrAppend(&out, state_line, "\n");
  if (n.admin_down()) {
    if (n.admin_down_message().empty()) {
      absl::StrAppend(&out, "  Administratively shut down (no message)\n");
    } else {
      absl::StrAppend(&out, "  Administratively shut down, message: ", Quote(n.admin_down_message()), "\n");
    }
  }
  if (n.passive()) absl::StrAppend(&out, "  Passive: waits for the peer to connect\n");
  if (n.established_transitions() == 0) {
    absl::StrAppend(&out, "  Never established\n");
  } else {
    absl::StrAppend(&out, "  Established ", n.established_transitions(),
                    n.established_transitions() == 1 ? " time\n" : " times\n");
  }

  // RFC 8212 and other reasons policy keeps routes from flowing (NeighborStatus.policy_notes).
  for (const std::string& note : n.policy_notes()) absl::StrAppend(&out, "  Policy: ", Printable(note), "\n");
  if (n.prefixes_rejected() > 0) absl::StrAppend(&out, "  Rejected by import policy: ", n.prefixes_rejected(), " routes\n");

  if (n.gtsm_refused() > 0) {
    absl::StrAppend(&out, "  GTSM: refused ", n.gtsm_refused(), n.gtsm_refused() == 1 ? " connection" : " connections",
                    " with a TTL below the minimum (see the log for the addresses)\n");
  }

  // Transport and identity.
  if (n.local_address().empty()) {
    absl::StrAppend(&out, "  No TCP connection\n");
  } else {
    absl::StrAppend(&out, "  Local address ", AddressPort(n.local_address(), n.local_port()), ", remote address ",
                    AddressPort(n.address(), n.remote_port()), "\n");
  }
  if (!n.peer_router_id().empty()) absl::StrAppend(&out, "  Peer router ID ", Printable(n.peer_router_id()), "\n");

  // What the OPENs agreed on.
  if (n.has_negotiated()) {
    const auto& c = n.negotiated();
    absl::StrAppend(&out, "  Hold time ", c.hold_time(), " s, keepalive interval ", c.keepalive(), " s\n");
    absl::StrAppend(&out, "  Negotiated capabilities:\n");
    absl::StrAppend(&out, "    Address families: ", JoinOrNone(c.families()), "\n");
    absl::StrAppend(&out, "    4-octet AS: ", YesNo(c.four_octet_as()), "\n");
    absl::StrAppend(&out, "    Route refresh: ", YesNo(c.route_refresh()), "\n");
    absl::StrAppend(&out, "    Enhanced route refresh: ", YesNo(c.enhanced_route_refresh()), "\n");
    absl::StrAppend(&out, "    Extended message: ", YesNo(c.extended_message()), "\n");
    absl::StrAppend(&out, "    Graceful restart: ", YesNo(c.graceful_restart()), "\n");
    absl::StrAppend(&out, "    ADD-PATH receive: ", JoinOrNone(c.add_path_receive()), "\n");
    absl::StrAppend(&out, "    ADD-PATH send: ", JoinOrNone(c.add_path_send()), "\n");
    absl::StrAppend(&out, "    Extended next hop: ", JoinOrNone(c.extended_nexthop()), "\n");
    if (!c.peer_hostname().empty()) absl::StrAppend(&out, "    Hostname: ", Printable(c.peer_hostname()), "\n");
  }

  // Messages, both ways.
  const MessageCounters& in = n.messages_in();  // default instance (all zero) when absent
  const MessageCounters& sent = n.messages_out();
  absl::StrAppend(&out, "  Message statistics:\n");
  absl::StrAppend(&out, absl::StrFormat("    %-16s%10s %10s\n", "", "Sent", "Rcvd"));
  AppendCounterRow(out, "Opens:", sent.open(), in.open());
  AppendCounterRow(out, "Notifications:", sent.notification(), in.notification());
  AppendCounterRow(out, "Updates:", sent.update(), in.update());
  AppendCounterRow(out, "Keepalives:", sent.keepalive(), in.keepalive());
  AppendCounterRow(out, "Route refresh:", sent.route_refresh(), in.route_refresh());
  AppendCounterRow(out, "Total:", sent.total(), in.total());
  AppendCounterRow(out, "Bytes:", sent.bytes(), in.bytes());
  AppendRouteRefresh(out, n.route_refresh());
  if (n.has_graceful_restart()) AppendGracefulRestart(out, n.graceful_restart());
  absl::StrAppend(&out, "  Prefixes received ", n.prefixes_received(), ", sent ", n.prefixes_sent(), "\n");
  for (const auto& l : n.prefix_limits()) {
    absl::StrAppend(&out, "  Maximum prefixes ", Printable(l.family()), ": ", l.limit(), ", warning at ", l.warning_at(),
                    " (", l.warning_threshold_percent(), " %), ",
                    l.warning_only() ? "warning only"
                    : l.restart_interval_s() > 0 ? absl::StrCat("restart after ", l.restart_interval_s(), " s")
                                                 : std::string("no restart (enable the neighbor)"),
                    "; held ", l.count(), ", ", Printable(l.state()), "\n");
  }
  if (n.prefix_limit_down()) {
    if (n.prefix_limit_restart_unix_ms() > 0) {
      absl::StrAppend(&out, "  Down: maximum prefixes exceeded; restarts at ", FormatUnixMs(n.prefix_limit_restart_unix_ms()),
                      " (in ", std::max<int64_t>(0, (n.prefix_limit_restart_unix_ms() - now_unix_ms + 999) / 1000),
                      " s)\n");
    } else {
      absl::StrAppend(&out, "  Down: maximum prefixes exceeded; stays down until `bagctl neighbor ", Printable(n.address()),
                      " enable`\n");
    }
  }

  // Why it is (or was) down.
  absl::StrAppend(&out, "  Last error: ", n.last_error().empty() ? "none" : Printable(n.last_error()), "\n");
  AppendNotification(out, "Last NOTIFICATION sent", n.has_last_notification_sent(), n.last_notification_sent());
  AppendNotification(out, "Last NOTIFICATION received", n.has_last_notification_received(),
                     n.last_notification_received());
  return out;
}

absl::StatusOr<std::string> RenderNeighborsJson(const ListNeighborsResponse& response) {
  return RenderProtoJson(response);
}

absl::StatusOr<std::string> RenderProtoJson(const google::protobuf::Message& message, bool one_line) {
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  options.add_whitespace = !one_line;
  std::string json;
  const auto status = google::protobuf::util::MessageToJsonString(message, &json, options);
  if (!status.ok()) {
    return absl::InternalError(absl::StrCat("cannot print the answer as JSON: ", status.ToString()));
  }
  return json;
}

}  // namespace bagd::bagctl
