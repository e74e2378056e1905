#include "tools/bagctl/control_commands.h"

#include <algorithm>
#include <chrono>
#include <ostream>
#include <string_view>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "bgpd/control/control_client.h"
#include "bgpd/control/control_requests.h"
#include "tools/bagctl/neighbor_render.h"
#include "tools/bagctl/nexthop_group_render.h"
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
  show rib-summary [--json] prefixes and paths per family and per peer, attribute sets, memory
  show nexthop-groups [ID | PREFIX | ADDRESS] [--json]
                            the weighted next-hop groups: per member the link bandwidth it
                            advertises and the one its weight is computed from (hold-down),
                            its share, weight, error and damping state; with ID that group,
                            with PREFIX or ADDRESS the group of that route
                            (docs/bagctl-nexthop-groups.md)
      --json                the answer as protobuf JSON, field names as in control.proto
                            (docs/control-api.md)
  neighbor ADDRESS shutdown [MESSAGE...]
                            administrative shutdown: sends Cease/Administrative Shutdown with
                            MESSAGE (RFC 9003: the words joined by spaces, at most 255 octets
                            of UTF-8); the session stays down until `enable`
  neighbor ADDRESS enable   ends the administrative shutdown
  neighbor ADDRESS clear    hard reset: sends Cease/Administrative Reset (RFC 4486) and the
                            session restarts at once (its routes are withdrawn meanwhile)
  neighbor ADDRESS clear soft [in|out]
                            without a reset: `in` asks the neighbor to re-send its routes
                            (ROUTE-REFRESH, RFC 2918; the neighbor must have offered it),
                            `out` re-sends bagd's Adj-RIB-Out to it (within BoRR/EoRR with
                            enhanced route refresh, RFC 7313), neither means both; for every
                            family of the session. The session must be Established.
      --socket PATH         bagd's control socket (before or after the command; default
                            $BAGD_SOCKET, else /run/bagd/bagd.sock)
    exit status: 0 done, 1 bagd unreachable or the request refused (reason printed), 2 usage error
)";

namespace {

struct ControlArgs {
  std::optional<std::string> socket;
  bool json = false;
  std::optional<std::string> family;  // --family, as given
  std::optional<uint32_t> limit;      // --limit
  std::vector<std::string> words;     // the command and its operands
};

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
    } else {
      auto family = FlagValue(args, i, "--family");
      if (!family.ok()) return family.status();
      if (*family) {
        parsed.family = **family;
        continue;
      }
      auto limit = FlagValue(args, i, "--limit");
      if (!limit.ok()) return limit.status();
      if (*limit) {
        uint32_t n = 0;
        if ((*limit)->empty() || !std::all_of((*limit)->begin(), (*limit)->end(), absl::ascii_isdigit) ||
            !absl::SimpleAtoi(**limit, &n)) {
          return absl::InvalidArgumentError(
              absl::StrCat("--limit needs a number of prefixes (0 for all), not '", Printable(**limit), "'"));
        }
        parsed.limit = n;
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
  } else if (status.code() == absl::StatusCode::kPermissionDenied) {
    err << " (the socket is mode 0600: run bagctl as root)";
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

// The routing table comes in pages (control.proto: ListRoutes streams); each one is printed
// as it arrives and then dropped, so a million routes need no more memory here than a page.
int ShowRoutes(control::ControlClient& client, const control::v1::ListRoutesRequest& request, bool json,
               std::ostream& out, std::ostream& err) {
  if (!request.prefix().empty() && !json) {
    auto response = client.ListRoutes(request);  // one route
    if (!response.ok()) return Failed(err, response.status());
    for (int i = 0; i < response->routes_size(); ++i) {
      if (i > 0) out << '\n';
      out << RenderRouteDetail(response->routes(i));
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
  absl::Status s = client.ListRoutes(request, [&](control::v1::ListRoutesResponse& page) {
    truncated = page.truncated();
    writer.Add(page);
    return absl::OkStatus();
  });
  if (!s.ok()) return Failed(err, s);
  if (writer.prefixes() == 0) {
    out << (request.family().empty() ? std::string("No routes.\n") : absl::StrCat("No ", request.family(), " routes.\n"));
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
  return first == "show" || first == "neighbor" || first == "--socket" || absl::StartsWith(first, "--socket=");
}

int RunControlCommand(const std::vector<std::string>& args, const char* env_socket, std::ostream& out,
                      std::ostream& err) {
  auto parsed = ParseControlArgs(args);
  if (!parsed.ok()) return UsageError(err, std::string(parsed.status().message()));
  const std::vector<std::string>& w = parsed->words;
  if (w.empty()) return UsageError(err, "no command given");

  enum class Command { kShowNeighbors, kShowRoutes, kShowRibSummary, kShowNextHopGroups, kShutdown, kEnable, kClear };
  Command command = Command::kShowNeighbors;
  using ClearMode = control::v1::ClearNeighborRequest;
  ClearMode::Mode clear_mode = ClearMode::MODE_UNSPECIFIED;
  std::string address, message;
  control::v1::ListRoutesRequest routes_request;
  control::v1::ListNextHopGroupsRequest groups_request;
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
      return UsageError(err, "show what? (neighbors, routes, rib-summary, nexthop-groups)");
    }
    if (command != Command::kShowRoutes && (parsed->family || parsed->limit)) {
      return UsageError(err, "--family and --limit are for show routes");
    }
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
    if (parsed->json) return UsageError(err, "--json is for the show commands");
    if (parsed->family || parsed->limit) return UsageError(err, "--family and --limit are for show routes");
  } else {
    return UsageError(err, absl::StrCat("unknown command '", w[0], "'"));
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

  const std::string socket = ResolveControlSocket(parsed->socket, env_socket);
  auto client = control::ControlClient::Connect(socket);
  if (!client.ok()) return Failed(err, client.status());

  switch (command) {
    case Command::kShowNeighbors:
      return ShowNeighbors(**client, address, parsed->json, out, err);
    case Command::kShowRoutes:
      return ShowRoutes(**client, routes_request, parsed->json, out, err);
    case Command::kShowRibSummary:
      return ShowRibSummary(**client, parsed->json, out, err);
    case Command::kShowNextHopGroups:
      return ShowNextHopGroups(**client, groups_request, parsed->json, out, err);
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
  }
  return kControlExitFailed;  // unreachable
}

}  // namespace bagd::bagctl
