#include "tools/bagctl/control_commands.h"

#include <algorithm>
#include <chrono>
#include <ostream>
#include <string_view>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "bgpd/control/control_client.h"
#include "bgpd/control/control_requests.h"
#include "bgpd/control/event_types.h"
#include "tools/bagctl/event_render.h"
#include "tools/bagctl/neighbor_render.h"
#include "tools/bagctl/bfd_render.h"
#include "tools/bagctl/bmp_render.h"
#include "tools/bagctl/nexthop_group_render.h"
#include "tools/bagctl/policy_render.h"
#include "tools/bagctl/route_render.h"

namespace bagd::bagctl {

const char* const kControlUsage = R"(  show neighbors [ADDRESS] [--json]
                            the neighbors and their sessions, like FRR's `show bgp summary`;
                            with ADDRESS, then everything about that neighbor
  show routes [PREFIX] [--json] [--family ipv4|ipv6] [--limit N]
                            the routing table: every prefix with its paths (* valid, > best,
                            = multipath), like FRR's `show ip bgp`; with PREFIX (192.0.2.0/24,
                            or an address for the most specific route covering it), every
                            path with all its attributes and why it is or is not the best
      --family ipv4|ipv6    only that address family
      --limit N             at most N prefixes (default: all)
  show routes --neighbor ADDRESS --received|--accepted|--advertised [PREFIX] [--json] [--family ...]
                            one neighbor's routes: --received as it sent them, before import
                            policy (needs soft_reconfiguration_inbound on the neighbor),
                            --accepted its paths in the table after import policy, with the
                            decision, --advertised what bagd sends it (its Adj-RIB-Out, after
                            export policy and the next-hop / AS-path rewrite)
  show rib-summary [--json] prefixes and paths per family and per peer, attribute sets, memory
  show bfd [PEER] [--json]  the BFD sessions (docs/bfd.md): state, discriminators, negotiated
                            intervals, last diagnostic, up since, flaps; with PEER in detail
  show bmp [--json]         the BMP monitoring stations (docs/bmp.md): state, up since, views,
                            messages and octets sent, drops, reconnects, the send buffer
  show policies [NAME] [--json]
                            every routing policy (or NAME) with each statement and how many
                            routes matched it since the policies were loaded
  policy test NAME PREFIX [--neighbor ADDRESS] [--source ebgp|ibgp|local] [attributes] [--json]
                            runs policy NAME on a route made up of PREFIX and the attributes,
                            and says for each statement why it matched or not, the verdict and
                            the attributes after it; no route and no counter is touched
      --as-path "65001 65002"  the AS path (default: empty); sets in braces {65003,65004}
      --community C         repeatable: 65000:100, no-export, 65000:1:2, rt:65000:7, lb:65001:10G
      --large-community L   repeatable: 65000:1:2
      --link-bandwidth RATE a link-bandwidth extended community (RFC 10005), e.g. 10G or 65001:10G
      --origin igp|egp|incomplete   (default igp)
      --next-hop ADDRESS    (default: the neighbor)
      --med N, --local-pref N
  show nexthop-groups [ID | PREFIX | ADDRESS] [--json]
                            the weighted next-hop groups: per member the link bandwidth it
                            advertises and the one its weight is computed from (hold-down),
                            its share, weight, error and damping state; with ID that group,
                            with PREFIX or ADDRESS the group of that route
                            (docs/bagctl-nexthop-groups.md)
      --json                the answer as protobuf JSON, field names as in control.proto
                            (docs/control-api.md)
  dump mrt FILE [--json]    bagd writes the whole RIB (every path, IPv4 and IPv6) to FILE as an
                            MRT TABLE_DUMP_V2 file (RFC 6396, bgpdump reads it); FILE is on
                            bagd's host and must be absolute; written as FILE.tmp, then renamed
                            (docs/mrt.md)
  neighbor ADDRESS shutdown [MESSAGE...]
                            administrative shutdown: sends Cease/Administrative Shutdown with
                            MESSAGE (RFC 9003: the words joined by spaces, at most 255 octets
                            of UTF-8); the session stays down until `enable`. To a neighbor
                            with RFC 8538 (the N bit) inside a Cease/Hard Reset, so that it
                            drops bagd's routes
  neighbor ADDRESS enable   ends the administrative shutdown
  neighbor ADDRESS clear    hard reset: sends Cease/Administrative Reset (RFC 4486; inside a
                            Hard Reset to an RFC 8538 neighbor) and the session restarts at
                            once (its routes are withdrawn meanwhile, on both sides)
  neighbor ADDRESS clear soft [in|out]
                            without a reset: `in` asks the neighbor to re-send its routes
                            (ROUTE-REFRESH, RFC 2918; the neighbor must have offered it),
                            `out` re-sends bagd's Adj-RIB-Out to it (within BoRR/EoRR with
                            enhanced route refresh, RFC 7313), neither means both; for every
                            family of the session. The session must be Established.
  reload                    re-reads bagd's configuration file and applies it, as SIGHUP does;
                            prints the errors of a file that is rejected (the running
                            configuration stays; exit 1) and what changed but needs a restart
  network add PREFIX [--link-bandwidth RATE]
                            originates PREFIX (as a `networks` entry) with an optional link
                            bandwidth (10G); kept until `network delete` or a restart of bagd
  network delete PREFIX     withdraws a prefix added with `network add`
  monitor [--json] [--type neighbor|weights|fib|config|bfd ...] [--count N]
                            what happens in bagd as it happens, one line per event (one JSON
                            object per line with --json): neighbor state changes and why,
                            weight changes and their cause, FIB errors, configuration reloads,
                            BFD state changes;
                            until interrupted, bagd stops, or N events were printed
      --type T              only these types (repeatable, or comma-separated; default: all)
      --socket PATH         bagd's control socket (before or after the command; default
                            $BAGD_SOCKET, else /run/bagd/bagd.sock)
    exit status: 0 done, 1 bagd unreachable or the request refused (reason printed), 2 usage error
)";

namespace {

using RouteView = control::v1::ListRoutesRequest::View;

struct ControlArgs {
  std::optional<std::string> socket;
  bool json = false;
  std::optional<std::string> family;  // --family, as given
  std::optional<uint32_t> limit;      // --limit
  std::optional<std::string> neighbor;  // --neighbor
  std::optional<RouteView> view;        // --received, --accepted, --advertised
  std::optional<std::string> source;    // --source
  control::v1::TestRouteAttributes attributes;  // --as-path, --community, ... (policy test)
  bool has_attributes = false;
  std::vector<std::string> types;     // --type (monitor), split at commas
  std::optional<uint64_t> count;      // --count (monitor)
  std::vector<std::string> words;     // the command and its operands
};

// A number for --med / --local-pref / --limit: digits only, 0..4294967295.
std::optional<uint32_t> Number(const std::string& text) {
  uint32_t n = 0;
  if (text.empty() || !std::all_of(text.begin(), text.end(), absl::ascii_isdigit) || !absl::SimpleAtoi(text, &n)) {
    return std::nullopt;
  }
  return n;
}

// The value of `--name VALUE` or `--name=VALUE` at args[i] (advancing i past a separate
// value); nullopt if args[i] is not this flag.
absl::StatusOr<std::optional<std::string>> FlagValue(const std::vector<std::string>& args, size_t& i,
                                                     const std::string& name) {
  const std::string& a = args[i];
  if (a == name) {
    if (i + 1 == args.size()) return absl::InvalidArgumentError(absl::StrCat(name, " needs a value"));
    return std::optional<std::string>(args[++i]);
  }
  if (absl::StartsWith(a, name) && a.size() > name.size() && a[name.size()] == '=') {
    return std::optional<std::string>(a.substr(name.size() + 1));
  }
  return std::optional<std::string>();
}

// Flags may appear anywhere up to a `--`; after it every argument is a word (a shutdown
// message may then start with "--").
absl::StatusOr<ControlArgs> ParseControlArgs(const std::vector<std::string>& args) {
  ControlArgs parsed;
  bool flags_done = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (flags_done || !absl::StartsWith(a, "--")) {
      parsed.words.push_back(a);
    } else if (a == "--") {
      flags_done = true;
    } else if (a == "--socket") {
      if (i + 1 == args.size()) return absl::InvalidArgumentError("--socket needs a path");
      parsed.socket = args[++i];
    } else if (absl::StartsWith(a, "--socket=")) {
      parsed.socket = a.substr(9);
    } else if (a == "--json") {
      parsed.json = true;
    } else if (a == "--received" || a == "--accepted" || a == "--advertised") {
      const RouteView view = a == "--received"   ? control::v1::ListRoutesRequest::VIEW_RECEIVED
                             : a == "--accepted" ? control::v1::ListRoutesRequest::VIEW_ACCEPTED
                                                 : control::v1::ListRoutesRequest::VIEW_ADVERTISED;
      if (parsed.view && *parsed.view != view) {
        return absl::InvalidArgumentError("give one of --received, --accepted and --advertised");
      }
      parsed.view = view;
    } else {
      // Flags with a value that are not --family / --limit.
      bool taken = false;
      for (const char* name : {"--neighbor", "--source", "--as-path", "--community", "--large-community",
                               "--link-bandwidth", "--origin", "--next-hop", "--med", "--local-pref"}) {
        auto value = FlagValue(args, i, name);
        if (!value.ok()) return value.status();
        if (!*value) continue;
        taken = true;
        const std::string flag = name;
        const std::string& v = **value;
        if (flag == "--neighbor") {
          parsed.neighbor = v;
        } else if (flag == "--source") {
          parsed.source = v;
        } else {
          parsed.has_attributes = true;
          control::v1::TestRouteAttributes& t = parsed.attributes;
          if (flag == "--as-path") t.set_as_path(v);
          if (flag == "--community") t.add_communities(v);
          if (flag == "--large-community") t.add_large_communities(v);
          if (flag == "--link-bandwidth") t.set_link_bandwidth(v);
          if (flag == "--origin") t.set_origin(v);
          if (flag == "--next-hop") t.set_next_hop(v);
          if (flag == "--med" || flag == "--local-pref") {
            const std::optional<uint32_t> n = Number(v);
            if (!n) return absl::InvalidArgumentError(absl::StrCat(flag, " needs a number 0..4294967295, not '", Printable(v), "'"));
            if (flag == "--med") t.set_med(*n);
            if (flag == "--local-pref") t.set_local_pref(*n);
          }
        }
        break;
      }
      if (taken) continue;
      auto family = FlagValue(args, i, "--family");
      if (!family.ok()) return family.status();
      if (*family) {
        parsed.family = **family;
        continue;
      }
      auto type = FlagValue(args, i, "--type");
      if (!type.ok()) return type.status();
      if (*type) {
        for (absl::string_view t : absl::StrSplit(**type, ',', absl::SkipEmpty())) parsed.types.push_back(std::string(t));
        continue;
      }
      auto count = FlagValue(args, i, "--count");
      if (!count.ok()) return count.status();
      if (*count) {
        const std::optional<uint32_t> n = Number(**count);
        if (!n || *n == 0) {
          return absl::InvalidArgumentError(
              absl::StrCat("--count needs a number of events (1 or more), not '", Printable(**count), "'"));
        }
        parsed.count = *n;
        continue;
      }
      auto limit = FlagValue(args, i, "--limit");
      if (!limit.ok()) return limit.status();
      if (*limit) {
        const std::optional<uint32_t> n = Number(**limit);
        if (!n) {
          return absl::InvalidArgumentError(
              absl::StrCat("--limit needs a number of prefixes (0 for all), not '", Printable(**limit), "'"));
        }
        parsed.limit = *n;
        continue;
      }
      return absl::InvalidArgumentError(absl::StrCat("unknown flag ", Printable(a)));
    }
  }
  if (parsed.socket && parsed.socket->empty()) return absl::InvalidArgumentError("--socket needs a path");
  return parsed;
}

int UsageError(std::ostream& err, const std::string& problem) {
  err << "bagctl: " << problem << "\nusage: bagctl [--socket PATH] <command>\n" << kControlUsage;
  return kControlExitUsage;
}

int Failed(std::ostream& err, const absl::Status& status) {
  err << "bagctl: " << status.message();
  if (status.code() == absl::StatusCode::kUnavailable) {
    err << " (is bagd running?)";
  } else if (status.code() == absl::StatusCode::kPermissionDenied && !absl::StrContains(status.message(), "read-only")) {
    // Refused at connect(): not root, and not in control.group (bagd's message otherwise).
    err << " (the socket is mode 0600, or 0660 for the group of control.group: run bagctl as root or as a member)";
  }
  err << "\n";
  return kControlExitFailed;
}

int64_t NowUnixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

int PrintJson(const google::protobuf::Message& message, std::ostream& out, std::ostream& err) {
  auto text = RenderProtoJson(message);
  if (!text.ok()) return Failed(err, text.status());
  out << *text;
  if (text->empty() || text->back() != '\n') out << '\n';
  return kControlExitOk;
}

// `bagctl monitor`: each event as it comes, flushed at once (the reader is often a pipe).
// --count N: done after N events (the `subscribed` line is not one).
int Monitor(control::ControlClient& client, const std::vector<std::string>& types, bool json,
            std::optional<uint64_t> count, std::ostream& out, std::ostream& err) {
  uint64_t printed = 0;
  const absl::Status done = absl::CancelledError("enough events");  // ends the stream, not an error
  absl::Status s = client.WatchEvents(types, [&](control::v1::Event& event) -> absl::Status {
    if (json) {
      auto line = RenderEventJson(event);
      if (!line.ok()) return line.status();
      out << *line << '\n';
    } else {
      out << RenderEventLine(event) << '\n';
    }
    out.flush();
    if (!out) return absl::CancelledError("the output was closed");
    const bool counted = event.kind_case() != control::v1::Event::kSubscribed;
    if (count && counted && ++printed >= *count) return done;
    return absl::OkStatus();
  });
  if (s.ok() || s == done || (s.code() == absl::StatusCode::kCancelled && !out)) return kControlExitOk;
  return Failed(err, s);
}

int ShowNeighbors(control::ControlClient& client, const std::string& address, bool json, std::ostream& out,
                  std::ostream& err) {
  auto response = client.ListNeighbors(address);
  if (!response.ok()) return Failed(err, response.status());
  if (json) return PrintJson(*response, out, err);
  if (response->neighbors().empty()) {
    out << "No neighbors are configured.\n";
    return kControlExitOk;
  }
  const std::vector<NeighborStatus> neighbors(response->neighbors().begin(), response->neighbors().end());
  const int64_t now = NowUnixMs();
  out << RenderNeighborTable(neighbors, now);
  if (!address.empty()) {
    for (const NeighborStatus& n : neighbors) out << '\n' << RenderNeighborDetail(n, now);
  }
  return kControlExitOk;
}

int ShowBmp(control::ControlClient& client, bool json, std::ostream& out, std::ostream& err) {
  auto response = client.ListBmpStations();
  if (!response.ok()) return Failed(err, response.status());
  if (json) return PrintJson(*response, out, err);
  out << RenderBmpStations(*response, NowUnixMs());
  return kControlExitOk;
}

int ShowBfd(control::ControlClient& client, const std::string& peer, bool json, std::ostream& out, std::ostream& err) {
  auto response = client.ListBfdSessions(peer);
  if (!response.ok()) return Failed(err, response.status());
  if (json) return PrintJson(*response, out, err);
  const int64_t now = NowUnixMs();
  out << RenderBfdTable(*response, now);
  if (!peer.empty()) {
    for (const auto& s : response->sessions()) out << '\n' << RenderBfdDetail(s, now);
  }
  return kControlExitOk;
}

// The routing table comes in pages (control.proto: ListRoutes streams); each one is printed
// as it arrives and then dropped, so a million routes need no more memory here than a page.
// What a neighbor view shows, for its title: "received from 192.0.2.2 (before import policy)".
std::string NeighborViewTitle(const control::v1::ListRoutesRequest& request) {
  switch (request.view()) {
    case control::v1::ListRoutesRequest::VIEW_RECEIVED:
      return absl::StrCat("received from ", request.neighbor(), " (before import policy)");
    case control::v1::ListRoutesRequest::VIEW_ACCEPTED:
      return absl::StrCat("accepted from ", request.neighbor(), " (after import policy)");
    case control::v1::ListRoutesRequest::VIEW_ADVERTISED:
      return absl::StrCat("advertised to ", request.neighbor(), " (after export policy)");
    default:
      return "";
  }
}

int ShowRoutes(control::ControlClient& client, const control::v1::ListRoutesRequest& request, bool json,
               std::ostream& out, std::ostream& err) {
  const bool neighbor_view = request.view() != control::v1::ListRoutesRequest::VIEW_RIB;
  if (!request.prefix().empty() && !json) {
    auto response = client.ListRoutes(request);  // one route
    if (!response.ok()) return Failed(err, response.status());
    for (int i = 0; i < response->routes_size(); ++i) {
      if (i > 0) out << '\n';
      out << RenderRouteDetail(response->routes(i), request.view());
    }
    return kControlExitOk;
  }
  bool truncated = false;
  if (json) {
    RouteJsonWriter writer(out);
    absl::Status s = client.ListRoutes(request, [&](control::v1::ListRoutesResponse& page) {
      truncated = page.truncated();
      return writer.Add(page);
    });
    // An error after some pages: what was printed is cut short, the reason goes to stderr.
    if (!s.ok()) return Failed(err, s);
    writer.Finish(truncated);
    return kControlExitOk;
  }
  RouteTableWriter writer(out);
  bool titled = false;
  absl::Status s = client.ListRoutes(request, [&](control::v1::ListRoutesResponse& page) {
    truncated = page.truncated();
    if (neighbor_view && !titled && !page.routes().empty()) {
      out << "Routes " << NeighborViewTitle(request) << "\n\n";
      titled = true;
    }
    writer.Add(page);
    return absl::OkStatus();
  });
  if (!s.ok()) return Failed(err, s);
  if (writer.prefixes() == 0) {
    const std::string routes = request.family().empty() ? "routes" : absl::StrCat(request.family(), " routes");
    if (neighbor_view) {
      out << "No " << routes << " " << NeighborViewTitle(request) << ".\n";
    } else {
      out << "No " << routes << ".\n";
    }
    return kControlExitOk;
  }
  writer.Finish(truncated);
  return kControlExitOk;
}

int ShowNextHopGroups(control::ControlClient& client, const control::v1::ListNextHopGroupsRequest& request, bool json,
                      std::ostream& out, std::ostream& err) {
  auto response = client.ListNextHopGroups(request);
  if (!response.ok()) return Failed(err, response.status());
  if (json) return PrintJson(*response, out, err);
  out << RenderNextHopGroups(*response, NowUnixMs());
  return kControlExitOk;
}

int TestPolicy(control::ControlClient& client, const control::v1::TestPolicyRequest& request, bool json,
               std::ostream& out, std::ostream& err) {
  auto response = client.TestPolicy(request);
  if (!response.ok()) return Failed(err, response.status());
  if (json) return PrintJson(*response, out, err);
  out << RenderPolicyTest(*response);
  return kControlExitOk;
}

int ShowPolicies(control::ControlClient& client, const std::string& name, bool json, std::ostream& out,
                 std::ostream& err) {
  auto response = client.ListPolicies(name);
  if (!response.ok()) return Failed(err, response.status());
  if (json) return PrintJson(*response, out, err);
  out << RenderPolicyCounters(*response);
  return kControlExitOk;
}

int ShowRibSummary(control::ControlClient& client, bool json, std::ostream& out, std::ostream& err) {
  auto summary = client.GetRibSummary();
  if (!summary.ok()) return Failed(err, summary.status());
  if (json) return PrintJson(*summary, out, err);
  out << RenderRibSummary(*summary);
  return kControlExitOk;
}

int ClearNeighbor(control::ControlClient& client, const std::string& address,
                  control::v1::ClearNeighborRequest::Mode mode, std::ostream& out, std::ostream& err) {
  auto response = client.ClearNeighbor(address, mode);
  if (!response.ok()) return Failed(err, response.status());
  if (mode == control::v1::ClearNeighborRequest::MODE_HARD) {
    out << "neighbor " << address << ": session reset (Cease / Administrative Reset sent); it restarts now\n";
    return kControlExitOk;
  }
  if (!response->refresh_requested().empty()) {
    out << "neighbor " << address << ": route refresh requested for "
        << absl::StrJoin(response->refresh_requested(), ", ") << "; the neighbor re-sends its routes\n";
  }
  if (!response->resent().empty()) {
    out << "neighbor " << address << ": Adj-RIB-Out re-sent for " << absl::StrJoin(response->resent(), ", ") << " ("
        << response->prefixes_resent() << (response->prefixes_resent() == 1 ? " prefix" : " prefixes")
        << (response->enhanced() ? ", between BoRR and EoRR" : "") << ")\n";
  }
  return kControlExitOk;
}

// --family's value as the API spells it: ipv4 / ipv4-unicast, ipv6 / ipv6-unicast.
std::optional<std::string> FamilyArgument(const std::string& value) {
  if (value == "ipv4" || value == "ipv4-unicast") return "ipv4-unicast";
  if (value == "ipv6" || value == "ipv6-unicast") return "ipv6-unicast";
  return std::nullopt;
}

}  // namespace

std::string ResolveControlSocket(const std::optional<std::string>& socket_flag, const char* env_value) {
  if (socket_flag) return *socket_flag;
  if (env_value != nullptr && *env_value != '\0') return env_value;
  return kDefaultControlSocket;
}

bool IsControlCommand(const std::vector<std::string>& args) {
  if (args.empty()) return false;
  const std::string& first = args[0];
  return first == "show" || first == "neighbor" || first == "policy" || first == "reload" || first == "network" ||
         first == "monitor" || first == "dump" ||
         first == "--socket" ||
         absl::StartsWith(first, "--socket=");
}

int RunControlCommand(const std::vector<std::string>& args, const char* env_socket, std::ostream& out,
                      std::ostream& err) {
  auto parsed = ParseControlArgs(args);
  if (!parsed.ok()) return UsageError(err, std::string(parsed.status().message()));
  const std::vector<std::string>& w = parsed->words;
  if (w.empty()) return UsageError(err, "no command given");

  enum class Command {
    kShowNeighbors, kShowRoutes, kShowRibSummary, kShowNextHopGroups, kShowPolicies, kPolicyTest,
    kShutdown, kEnable, kClear, kReload, kNetworkAdd, kNetworkDelete, kMonitor, kShowBfd, kDumpMrt, kShowBmp,
  };
  Command command = Command::kShowNeighbors;
  using ClearMode = control::v1::ClearNeighborRequest;
  ClearMode::Mode clear_mode = ClearMode::MODE_UNSPECIFIED;
  std::string address, message;
  control::v1::ListRoutesRequest routes_request;
  control::v1::ListNextHopGroupsRequest groups_request;
  control::v1::TestPolicyRequest test_request;
  std::string policy_name;
  if (w[0] == "show") {
    const std::string what = w.size() < 2 ? "" : w[1];
    if (what == "neighbors" || what == "neighbor") {
      if (w.size() > 3) return UsageError(err, "show neighbors takes at most one ADDRESS");
      command = Command::kShowNeighbors;
      if (w.size() == 3) address = w[2];
    } else if (what == "routes" || what == "route") {
      if (w.size() > 3) return UsageError(err, "show routes takes at most one PREFIX");
      command = Command::kShowRoutes;
      if (w.size() == 3) routes_request.set_prefix(w[2]);
      if (parsed->family) {
        auto family = FamilyArgument(*parsed->family);
        if (!family) {
          return UsageError(err, absl::StrCat("--family is ipv4 or ipv6, not '", Printable(*parsed->family), "'"));
        }
        routes_request.set_family(*family);
      }
      if (parsed->limit) routes_request.set_limit(*parsed->limit);
      if (parsed->view && !parsed->neighbor) {
        return UsageError(err, "--received, --accepted and --advertised need --neighbor ADDRESS");
      }
      if (parsed->neighbor && !parsed->view) {
        return UsageError(err, "show routes --neighbor ADDRESS needs --received, --accepted or --advertised");
      }
      if (parsed->neighbor) {
        routes_request.set_neighbor(*parsed->neighbor);
        routes_request.set_view(*parsed->view);
      }
    } else if (what == "policies" || what == "policy") {
      if (w.size() > 3) return UsageError(err, "show policies takes at most one NAME");
      command = Command::kShowPolicies;
      if (w.size() == 3) policy_name = w[2];
    } else if (what == "bfd") {
      if (w.size() > 3) return UsageError(err, "show bfd takes at most one PEER");
      command = Command::kShowBfd;
      if (w.size() == 3) address = w[2];
    } else if (what == "bmp") {
      if (w.size() > 2) return UsageError(err, "show bmp takes no operands");
      command = Command::kShowBmp;
    } else if (what == "rib-summary") {
      if (w.size() > 2) return UsageError(err, "show rib-summary takes no operands");
      command = Command::kShowRibSummary;
    } else if (what == "nexthop-groups" || what == "nexthop-group") {
      if (w.size() > 3) return UsageError(err, "show nexthop-groups takes at most one ID, PREFIX or ADDRESS");
      command = Command::kShowNextHopGroups;
      if (w.size() == 3) {
        const std::string& operand = w[2];
        if (!operand.empty() && std::all_of(operand.begin(), operand.end(), absl::ascii_isdigit)) {
          uint32_t id = 0;
          if (!absl::SimpleAtoi(operand, &id) || id == 0) {
            return UsageError(err, absl::StrCat("a next-hop group id is 1 to 4294967295, not ", operand));
          }
          groups_request.set_id(id);
        } else {
          groups_request.set_prefix(operand);
        }
      }
    } else {
      return UsageError(err, "show what? (neighbors, routes, rib-summary, nexthop-groups, policies, bfd, bmp)");
    }
    if (command != Command::kShowRoutes && (parsed->family || parsed->limit)) {
      return UsageError(err, "--family and --limit are for show routes");
    }
    if (command != Command::kShowRoutes && (parsed->neighbor || parsed->view)) {
      return UsageError(err, "--neighbor, --received, --accepted and --advertised are for show routes and policy test");
    }
    if (parsed->source || parsed->has_attributes) {
      return UsageError(err, "--source and the route attributes (--as-path, --community, ...) are for policy test");
    }
  } else if (w[0] == "policy") {
    if (w.size() < 2 || w[1] != "test") return UsageError(err, "usage: policy test NAME PREFIX [options]");
    if (w.size() != 4) return UsageError(err, "policy test takes a policy NAME and a PREFIX");
    command = Command::kPolicyTest;
    test_request.set_policy(w[2]);
    test_request.set_prefix(w[3]);
    if (parsed->neighbor) test_request.set_neighbor(*parsed->neighbor);
    if (parsed->source) {
      const std::string& source = *parsed->source;
      if (source == "ebgp") {
        test_request.set_source(control::v1::TestPolicyRequest::SOURCE_EBGP);
      } else if (source == "ibgp") {
        test_request.set_source(control::v1::TestPolicyRequest::SOURCE_IBGP);
      } else if (source == "local") {
        test_request.set_source(control::v1::TestPolicyRequest::SOURCE_LOCAL);
      } else {
        return UsageError(err, absl::StrCat("--source is ebgp, ibgp or local, not '", Printable(source), "'"));
      }
    }
    *test_request.mutable_attributes() = parsed->attributes;
    if (parsed->view) return UsageError(err, "--received, --accepted and --advertised are for show routes");
    if (parsed->family || parsed->limit) return UsageError(err, "--family and --limit are for show routes");
  } else if (w[0] == "neighbor") {
    if (w.size() < 3) {
      return UsageError(err,
                        "usage: neighbor ADDRESS shutdown [MESSAGE...] | enable | clear | clear soft [in|out]");
    }
    address = w[1];
    if (w[2] == "shutdown") {
      command = Command::kShutdown;
      message = absl::StrJoin(w.begin() + 3, w.end(), " ");
    } else if (w[2] == "enable") {
      if (w.size() > 3) return UsageError(err, "neighbor ADDRESS enable takes nothing more");
      command = Command::kEnable;
    } else if (w[2] == "clear") {
      command = Command::kClear;
      const std::string direction = w.size() > 4 ? w[4] : "";
      if (w.size() == 3) {
        clear_mode = ClearMode::MODE_HARD;
      } else if (w[3] != "soft" || w.size() > 5 || (w.size() == 5 && direction != "in" && direction != "out")) {
        return UsageError(err, "neighbor ADDRESS clear takes nothing (a hard reset) or soft [in|out]");
      } else {
        clear_mode = w.size() == 4 ? ClearMode::MODE_SOFT
                     : direction == "in" ? ClearMode::MODE_SOFT_IN
                                         : ClearMode::MODE_SOFT_OUT;
      }
    } else {
      return UsageError(err, absl::StrCat("unknown neighbor action '", Printable(w[2]), "' (shutdown, enable, clear)"));
    }
    if (parsed->json) return UsageError(err, "--json is for the show commands and policy test");
    if (parsed->family || parsed->limit) return UsageError(err, "--family and --limit are for show routes");
    if (parsed->neighbor || parsed->view || parsed->source || parsed->has_attributes) {
      return UsageError(err, "neighbor ADDRESS ... takes no --neighbor, view or route attribute flags");
    }
  } else if (w[0] == "reload") {
    if (w.size() != 1) return UsageError(err, "reload takes nothing more");
    command = Command::kReload;
  } else if (w[0] == "network") {
    if (w.size() != 3 || (w[1] != "add" && w[1] != "delete")) {
      return UsageError(err, "usage: network add PREFIX [--link-bandwidth RATE] | network delete PREFIX");
    }
    command = w[1] == "add" ? Command::kNetworkAdd : Command::kNetworkDelete;
    address = w[2];  // the prefix
    if (command == Command::kNetworkDelete && !parsed->attributes.link_bandwidth().empty()) {
      return UsageError(err, "network delete takes no --link-bandwidth");
    }
  } else if (w[0] == "dump") {
    // The daemon writes the file on its own host, as its own user: a relative path would be
    // relative to bagd's directory, not to the shell's, so it is refused, not guessed.
    if (w.size() != 3 || w[1] != "mrt") return UsageError(err, "usage: dump mrt FILE (an absolute path on bagd's host)");
    if (w[2].empty() || w[2][0] != '/') {
      return UsageError(err, absl::StrCat("dump mrt: '", Printable(w[2]),
                                          "' is not an absolute path; bagd writes FILE itself, on its host, so give "
                                          "the full path (e.g. /var/lib/bagd/rib.mrt)"));
    }
    command = Command::kDumpMrt;
    address = w[2];  // the file
    if (parsed->family || parsed->limit || parsed->neighbor || parsed->view || parsed->source || parsed->has_attributes) {
      return UsageError(err, "dump mrt takes no --family, --limit, --neighbor, view, --source or route attributes");
    }
  } else if (w[0] == "monitor") {
    if (w.size() != 1) return UsageError(err, "monitor takes only flags (--json, --type, --count)");
    command = Command::kMonitor;
    if (parsed->family || parsed->limit || parsed->neighbor || parsed->view || parsed->source || parsed->has_attributes) {
      return UsageError(err, "monitor takes no --family, --limit, --neighbor, view, --source or route attributes");
    }
    if (auto types = control::ParseEventTypes(parsed->types); !types.ok()) {
      return UsageError(err, std::string(types.status().message()));
    }
  } else {
    return UsageError(err, absl::StrCat("unknown command '", w[0], "'"));
  }
  if (command != Command::kMonitor && (!parsed->types.empty() || parsed->count)) {
    return UsageError(err, "--type and --count are for monitor");
  }
  if (command == Command::kReload || command == Command::kNetworkAdd || command == Command::kNetworkDelete) {
    if (parsed->family || parsed->limit || parsed->neighbor || parsed->view || parsed->source || parsed->json) {
      return UsageError(err, absl::StrCat(w[0], " takes no --json, --family, --limit, --neighbor, view or --source"));
    }
    control::v1::TestRouteAttributes only_lb;
    only_lb.set_link_bandwidth(parsed->attributes.link_bandwidth());
    if (parsed->attributes.SerializeAsString() != only_lb.SerializeAsString()) {
      return UsageError(err, absl::StrCat(w[0], " takes no route attributes but --link-bandwidth (network add)"));
    }
  }

  // A prefix the server would refuse is refused here, without needing a running bagd.
  if (command == Command::kShowRoutes) {
    auto canonical = control::CanonicalListRoutesRequest(routes_request);
    if (!canonical.ok()) return Failed(err, canonical.status());
  }
  if (command == Command::kShowNextHopGroups) {
    auto canonical = control::CanonicalListNextHopGroupsRequest(groups_request);
    if (!canonical.ok()) return Failed(err, canonical.status());
  }
  if (command == Command::kPolicyTest) {
    auto canonical = control::CanonicalTestPolicyRequest(test_request);
    if (!canonical.ok()) return Failed(err, canonical.status());
  }

  const std::string socket = ResolveControlSocket(parsed->socket, env_socket);
  auto client = control::ControlClient::Connect(socket);
  if (!client.ok()) return Failed(err, client.status());

  switch (command) {
    case Command::kShowNeighbors:
      return ShowNeighbors(**client, address, parsed->json, out, err);
    case Command::kShowBfd:
      return ShowBfd(**client, address, parsed->json, out, err);
    case Command::kShowBmp:
      return ShowBmp(**client, parsed->json, out, err);
    case Command::kShowRoutes:
      return ShowRoutes(**client, routes_request, parsed->json, out, err);
    case Command::kShowRibSummary:
      return ShowRibSummary(**client, parsed->json, out, err);
    case Command::kShowNextHopGroups:
      return ShowNextHopGroups(**client, groups_request, parsed->json, out, err);
    case Command::kShowPolicies:
      return ShowPolicies(**client, policy_name, parsed->json, out, err);
    case Command::kPolicyTest:
      return TestPolicy(**client, test_request, parsed->json, out, err);
    case Command::kShutdown: {
      if (absl::Status s = (*client)->ShutdownNeighbor(address, message); !s.ok()) return Failed(err, s);
      out << "neighbor " << address << ": administratively shut down";
      if (!message.empty()) out << " with message \"" << Printable(message) << "\"";
      out << "; `bagctl neighbor " << address << " enable` brings it back\n";
      return kControlExitOk;
    }
    case Command::kEnable: {
      if (absl::Status s = (*client)->EnableNeighbor(address); !s.ok()) return Failed(err, s);
      out << "neighbor " << address << ": enabled (administrative shutdown ended)\n";
      return kControlExitOk;
    }
    case Command::kClear:
      return ClearNeighbor(**client, address, clear_mode, out, err);
    case Command::kReload: {
      auto r = (*client)->ReloadConfig();
      if (!r.ok()) return Failed(err, r.status());
      if (!r->applied()) {
        err << "bagctl: " << Printable(r->path()) << " was not applied; bagd runs the previous configuration:\n";
        for (const std::string& e : r->errors()) err << "  " << Printable(e) << "\n";
        return kControlExitFailed;
      }
      out << Printable(r->path()) << " reloaded\n";
      for (const std::string& n : r->needs_restart()) out << "  changed, needs a restart of bagd: " << Printable(n) << "\n";
      return kControlExitOk;
    }
    case Command::kNetworkAdd: {
      control::v1::AddNetworkRequest request;
      request.set_prefix(address);
      request.set_link_bandwidth(parsed->attributes.link_bandwidth());
      auto r = (*client)->AddNetwork(request);
      if (!r.ok()) return Failed(err, r.status());
      out << "network " << Printable(address) << (r->replaced() ? ": link bandwidth replaced\n" : ": originated\n");
      return kControlExitOk;
    }
    case Command::kNetworkDelete: {
      if (absl::Status s = (*client)->DeleteNetwork(address); !s.ok()) return Failed(err, s);
      out << "network " << Printable(address) << ": withdrawn\n";
      return kControlExitOk;
    }
    case Command::kDumpMrt: {
      auto r = (*client)->DumpMrt(address);
      if (!r.ok()) return Failed(err, r.status());
      if (parsed->json) {
        out << absl::StrFormat(
            "{\"path\":\"%s\",\"peers\":%d,\"prefixes\":%d,\"paths\":%d,\"records\":%d,\"bytes\":%d,"
            "\"skipped_paths\":%d,\"seconds\":%.3f}\n",
            absl::CEscape(r->path()), r->peers(), r->prefixes(), r->paths(), r->records(), r->bytes(),
            r->skipped_paths(), r->seconds());
      } else {
        out << absl::StrFormat("%s: TABLE_DUMP_V2, %d peers, %d prefixes, %d paths, %d records, %d bytes in %.3f s\n",
                               Printable(r->path()), r->peers(), r->prefixes(), r->paths(), r->records(), r->bytes(),
                               r->seconds());
        if (r->skipped_paths() > 0) {
          out << absl::StrFormat("  %d paths could not be written (docs/mrt.md)\n", r->skipped_paths());
        }
      }
      return kControlExitOk;
    }
    case Command::kMonitor:
      return Monitor(**client, parsed->types, parsed->json, parsed->count, out, err);
  }
  return kControlExitFailed;  // unreachable
}

}  // namespace bagd::bagctl
