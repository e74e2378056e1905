#include "fib_sync/netlink_socket.h"

#include <fcntl.h>
#include <linux/netlink.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace bagd::fib {

namespace nl = netlink;

absl::Status Errno(const std::string& what, int err) {
  return absl::InternalError(absl::StrCat(what, ": ", std::strerror(err)));
}

absl::Status KernelError(const nl::ErrorMsg& e) {
  const int err = -e.error;
  std::string msg = std::strerror(err);
  if (!e.extack_message.empty()) absl::StrAppend(&msg, " (", e.extack_message, ")");
  switch (err) {
    case EEXIST: return absl::AlreadyExistsError(msg);
    case ENOENT:
    case ESRCH: return absl::NotFoundError(msg);
    case EINVAL:
    case ERANGE: return absl::InvalidArgumentError(msg);
    case ENETDOWN:
    case ENETUNREACH:
    case EHOSTUNREACH:
    case ENODEV: return absl::UnavailableError(msg);
    case EPERM:
    case EACCES: return absl::PermissionDeniedError(msg);
    default: return absl::InternalError(msg);
  }
}

absl::Status InNamespace(const std::string& name, const std::function<void()>& fn) {
  if (name.empty()) {
    fn();
    return absl::OkStatus();
  }
  const int self = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
  const int target = open(("/run/netns/" + name).c_str(), O_RDONLY | O_CLOEXEC);
  if (self < 0 || target < 0) {
    const int err = errno;
    if (self >= 0) close(self);
    if (target >= 0) close(target);
    return Errno(absl::StrCat("network namespace ", name), err);
  }
  absl::Status st;
  if (setns(target, CLONE_NEWNET) != 0) {
    st = Errno(absl::StrCat("setns ", name), errno);
  } else {
    fn();
    if (setns(self, CLONE_NEWNET) != 0) st = Errno("setns back", errno);
  }
  close(self);
  close(target);
  return st;
}

int OpenRouteSocket(int buffer, std::initializer_list<int> groups) {
  const int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
  if (fd < 0) return -1;
  const int one = 1;
  setsockopt(fd, SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof one);
  setsockopt(fd, SOL_NETLINK, NETLINK_CAP_ACK, &one, sizeof one);
  setsockopt(fd, SOL_NETLINK, NETLINK_GET_STRICT_CHK, &one, sizeof one);
  // As root the buffers may exceed net.core.rmem_max; otherwise take what is allowed.
  if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &buffer, sizeof buffer) != 0) {
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buffer, sizeof buffer);
  }
  if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &buffer, sizeof buffer) != 0) {
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buffer, sizeof buffer);
  }
  sockaddr_nl local{};
  local.nl_family = AF_NETLINK;
  if (bind(fd, reinterpret_cast<sockaddr*>(&local), sizeof local) != 0) {
    const int err = errno;
    close(fd);
    errno = err;
    return -1;
  }
  for (int group : groups) {
    if (setsockopt(fd, SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, &group, sizeof group) != 0) {
      const int err = errno;
      close(fd);
      errno = err;
      return -1;
    }
  }
  if (groups.size() > 0) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  return fd;
}

absl::Status SendToKernel(int fd, const nl::Bytes& request) {
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  if (sendto(fd, request.data(), request.size(), 0, reinterpret_cast<sockaddr*>(&kernel), sizeof kernel) < 0) {
    return Errno("netlink send", errno);
  }
  return absl::OkStatus();
}

absl::Status ReceiveUntil(int fd, const std::function<bool(nl::Message&)>& each) {
  std::vector<uint8_t> buf(1 << 20);
  while (true) {
    const ssize_t n = recv(fd, buf.data(), buf.size(), 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Errno("netlink receive", errno);
    }
    auto messages = nl::Parse(nl::ByteSpan(buf.data(), static_cast<size_t>(n)));
    if (!messages.ok()) return messages.status();
    for (nl::Message& m : *messages) {
      if (each(m)) return absl::OkStatus();
    }
  }
}

absl::StatusOr<std::vector<nl::Message>> Request(int fd, const nl::Bytes& request, uint32_t seq) {
  if (auto st = SendToKernel(fd, request); !st.ok()) return st;
  std::vector<nl::Message> out;
  absl::Status refused;
  auto st = ReceiveUntil(fd, [&](nl::Message& m) {
    if (m.header.seq != seq) return false;
    if (const auto* e = std::get_if<nl::ErrorMsg>(&m.body)) {
      if (e->error != 0) refused = KernelError(*e);
      return true;  // the ack of a non-dump request, or its refusal
    }
    if (const auto* d = std::get_if<nl::DoneMsg>(&m.body)) {
      if (d->error != 0) refused = KernelError(nl::ErrorMsg{d->error, {}, d->extack_message, {}, {}});
      return true;
    }
    out.push_back(std::move(m));
    return false;
  });
  if (!st.ok()) return st;
  if (!refused.ok()) return refused;
  return out;
}

absl::StatusOr<nl::RouteMsg> RouteTowards(int fd, uint32_t seq, const net::IpAddress& gateway) {
  nl::Bytes req;
  nl::AppendRouteLookup(req, seq, gateway);
  auto answer = Request(fd, req, seq);
  if (!answer.ok()) {
    return absl::UnavailableError(absl::StrCat("no route to gateway ", gateway.ToString(), ": ", answer.status().message()));
  }
  for (nl::Message& m : *answer) {
    if (auto* r = std::get_if<nl::RouteMsg>(&m.body); r && r->oif != 0) return std::move(*r);
  }
  return absl::UnavailableError(absl::StrCat("no interface reaches gateway ", gateway.ToString()));
}

}  // namespace bagd::fib
