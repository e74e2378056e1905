#include "bgpd/control/unix_socket.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace bagd::control {

static_assert(sizeof(sockaddr_un::sun_path) == kMaxUnixSocketPathLength + 1);

int ProbeUnixSocket(const std::string& path) {
  if (path.size() > kMaxUnixSocketPathLength) return ENAMETOOLONG;
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return errno;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.data(), path.size());
  int err = 0;
  // A listening Unix socket accepts into its backlog at once; this never blocks for long.
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) err = errno;
  ::close(fd);
  return err;
}

}  // namespace bagd::control
