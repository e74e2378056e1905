// bagctl's commands that talk to a running bagd through the control API
// (bgpd/control/control.proto): `show neighbors`, `show routes` (also one neighbor's
// received / accepted / advertised routes), `show rib-summary`, `show nexthop-groups`,
// `show policies`, `policy test`, `neighbor ADDRESS shutdown|enable|clear [soft [in|out]]`.
#pragma once

#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

namespace bagd::bagctl {

inline constexpr const char* kDefaultControlSocket = "/run/bagd/bagd.sock";
inline constexpr const char* kControlSocketEnv = "BAGD_SOCKET";

// Exit codes of the control commands (the same meaning as `bagctl decode`'s).
inline constexpr int kControlExitOk = 0;
inline constexpr int kControlExitFailed = 1;  // bagd unreachable, or it refused the request
inline constexpr int kControlExitUsage = 2;   // bad arguments

// The usage lines of the control commands, for bagctl's help text.
extern const char* const kControlUsage;

// --socket if given, else $BAGD_SOCKET if set and not empty, else /run/bagd/bagd.sock.
std::string ResolveControlSocket(const std::optional<std::string>& socket_flag, const char* env_value);

// Whether bagctl's arguments name a control command: `show`, `neighbor`, `policy`, or a
// leading --socket.
bool IsControlCommand(const std::vector<std::string>& args);

// Runs a control command (`args` are bagctl's arguments, `--socket PATH` anywhere before a
// `--`). `env_socket` is $BAGD_SOCKET (may be null). Returns the exit code.
int RunControlCommand(const std::vector<std::string>& args, const char* env_socket, std::ostream& out,
                      std::ostream& err);

}  // namespace bagd::bagctl
