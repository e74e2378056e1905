// What both ends of the control API need to know about the Unix socket itself: its
// path limit, and whether anything listens on it. gRPC only says "unavailable" after
// retrying; a plain connect() gives the reason at once (ENOENT, ECONNREFUSED, EACCES).
#pragma once

#include <cstddef>
#include <string>

namespace bagd::control {

// sockaddr_un.sun_path is 108 bytes on Linux, NUL included.
inline constexpr size_t kMaxUnixSocketPathLength = 107;

// Connects to the stream socket at `path` and closes the connection at once.
// Returns 0 if something accepted it, else the errno of the failure.
int ProbeUnixSocket(const std::string& path);

}  // namespace bagd::control
