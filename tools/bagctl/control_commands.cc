#include "tools/bagctl/control_commands.h"

#include <chrono>
#include <ostream>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "bgpd/control/control_client.h"
#include "tools/bagctl/neighbor_render.h"

namespace bagd::bagctl {

const char* const kControlUsage = R"(  show neighbors [ADDRESS] [--json]
                            the neighbors and their sessions, like FRR's `show bgp summary`;
                            with ADDRESS, then everything about that neighbor
      --json                the answer as protobuf JSON, field names as in control.proto
                            (docs/control-api.md)
  neighbor ADDRESS shutdown [MESSAGE...]
                            administrative shutdown: sends Cease/Administrative Shutdown with
                            MESSAGE (RFC 9003: the words joined by spaces, at most 255 octets
                            of UTF-8); the session stays down until `enable`
  neighbor ADDRESS enable   ends the administrative shutdown
      --socket PATH         bagd's control socket (before or after the command; default
                            $BAGD_SOCKET, else /run/bagd/bagd.sock)
    exit status: 0 done, 1 bagd unreachable or the request refused (reason printed), 2 usage error
)";

namespace {

struct ControlArgs {
  std::optional<std::string> socket;
  bool json = false;
  std::vector<std::string> words;  // the command and its operands
};

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
      return absl::InvalidArgumentError(absl::StrCat("unknown flag ", a));
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

int ShowNeighbors(control::ControlClient& client, const std::string& address, bool json, std::ostream& out,
                  std::ostream& err) {
  auto response = client.ListNeighbors(address);
  if (!response.ok()) return Failed(err, response.status());
  if (json) {
    auto text = RenderNeighborsJson(*response);
    if (!text.ok()) return Failed(err, text.status());
    out << *text;
    if (text->empty() || text->back() != '\n') out << '\n';
    return kControlExitOk;
  }
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

  enum class Command { kShow, kShutdown, kEnable } command;
  std::string address, message;
  if (w[0] == "show") {
    if (w.size() < 2 || (w[1] != "neighbors" && w[1] != "neighbor")) return UsageError(err, "show what? (neighbors)");
    if (w.size() > 3) return UsageError(err, "show neighbors takes at most one ADDRESS");
    command = Command::kShow;
    if (w.size() == 3) address = w[2];
  } else if (w[0] == "neighbor") {
    if (w.size() < 3) return UsageError(err, "usage: neighbor ADDRESS shutdown [MESSAGE...] | neighbor ADDRESS enable");
    address = w[1];
    if (w[2] == "shutdown") {
      command = Command::kShutdown;
      message = absl::StrJoin(w.begin() + 3, w.end(), " ");
    } else if (w[2] == "enable") {
      if (w.size() > 3) return UsageError(err, "neighbor ADDRESS enable takes nothing more");
      command = Command::kEnable;
    } else {
      return UsageError(err, absl::StrCat("unknown neighbor action '", w[2], "' (shutdown, enable)"));
    }
    if (parsed->json) return UsageError(err, "--json is for show neighbors");
  } else {
    return UsageError(err, absl::StrCat("unknown command '", w[0], "'"));
  }

  const std::string socket = ResolveControlSocket(parsed->socket, env_socket);
  auto client = control::ControlClient::Connect(socket);
  if (!client.ok()) return Failed(err, client.status());

  switch (command) {
    case Command::kShow:
      return ShowNeighbors(**client, address, parsed->json, out, err);
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
  }
  return kControlExitFailed;  // unreachable
}

}  // namespace bagd::bagctl
