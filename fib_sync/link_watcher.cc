#include "fib_sync/link_watcher.h"

#include <fcntl.h>
#include <linux/ethtool.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "fib_sync/netlink/messages.h"

namespace bagd::fib {

namespace nl = netlink;

namespace {

constexpr uint32_t kIffLowerUp = 0x10000;  // <linux/if.h> clashes with <net/if.h>

absl::Status Errno(const std::string& what) { return absl::InternalError(absl::StrCat(what, ": ", std::strerror(errno))); }

int NetlinkSocket(bool subscribe) {
  const int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
  if (fd < 0) return -1;
  const int one = 1;
  setsockopt(fd, SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof one);
  int buf = 4 << 20;
  if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &buf, sizeof buf) != 0) setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof buf);
  sockaddr_nl local{};
  local.nl_family = AF_NETLINK;
  if (subscribe) local.nl_groups = 1u << (RTNLGRP_LINK - 1);
  if (bind(fd, reinterpret_cast<sockaddr*>(&local), sizeof local) != 0) {
    close(fd);
    return -1;
  }
  if (subscribe) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  return fd;
}

}  // namespace

absl::StatusOr<std::unique_ptr<LinkWatcher>> LinkWatcher::Open(const std::string& netns) {
  std::unique_ptr<LinkWatcher> w(new LinkWatcher());
  int self = -1;
  if (!netns.empty()) {
    self = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
    const int target = open(("/run/netns/" + netns).c_str(), O_RDONLY | O_CLOEXEC);
    if (self < 0 || target < 0 || setns(target, CLONE_NEWNET) != 0) {
      const absl::Status st = Errno(absl::StrCat("network namespace ", netns));
      if (self >= 0) close(self);
      if (target >= 0) close(target);
      return st;
    }
    close(target);
  }
  w->fd_ = NetlinkSocket(true);
  w->query_fd_ = NetlinkSocket(false);
  w->ioctl_fd_ = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  const absl::Status st = (w->fd_ < 0 || w->query_fd_ < 0 || w->ioctl_fd_ < 0) ? Errno("link sockets") : absl::OkStatus();
  if (self >= 0) {
    setns(self, CLONE_NEWNET);
    close(self);
  }
  if (!st.ok()) return st;
  return w;
}

LinkWatcher::~LinkWatcher() {
  for (int fd : {fd_, query_fd_, ioctl_fd_}) {
    if (fd >= 0) close(fd);
  }
}

double LinkWatcher::Speed(const std::string& name) const {
  // ETHTOOL_GSET: the legacy query every driver answers (veth: 10000 Mb/s).
  ethtool_cmd cmd{};
  cmd.cmd = ETHTOOL_GSET;
  ifreq ifr{};
  std::strncpy(ifr.ifr_name, name.c_str(), IFNAMSIZ - 1);
  ifr.ifr_data = reinterpret_cast<char*>(&cmd);
  if (ioctl(ioctl_fd_, SIOCETHTOOL, &ifr) != 0) return 0;
  const uint32_t mbps = ethtool_cmd_speed(&cmd);
  if (mbps == 0 || mbps == static_cast<uint32_t>(SPEED_UNKNOWN) || mbps == 0xffff) return 0;
  return static_cast<double>(mbps) * 1e6;
}

absl::Status LinkWatcher::Request(const std::vector<uint8_t>& req, uint32_t seq, const Callback& cb) {
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  if (sendto(query_fd_, req.data(), req.size(), 0, reinterpret_cast<sockaddr*>(&kernel), sizeof kernel) < 0) {
    return Errno("netlink send");
  }
  std::vector<uint8_t> buf(1 << 20);
  while (true) {
    const ssize_t n = recv(query_fd_, buf.data(), buf.size(), 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Errno("netlink receive");
    }
    auto messages = nl::Parse(nl::ByteSpan(buf.data(), static_cast<size_t>(n)));
    if (!messages.ok()) return messages.status();
    for (const nl::Message& m : *messages) {
      if (m.header.seq != seq) continue;
      if (std::holds_alternative<nl::DoneMsg>(m.body) || std::holds_alternative<nl::ErrorMsg>(m.body)) {
        return absl::OkStatus();
      }
      if (const auto* l = std::get_if<nl::LinkMsg>(&m.body)) cb(StateOf(l), l->deleted);
    }
  }
}

LinkState LinkWatcher::StateOf(const void* p) const {
  const auto& l = *static_cast<const nl::LinkMsg*>(p);
  LinkState s;
  s.ifindex = l.link.ifindex;
  s.name = l.link.name;
  s.up = (l.link.flags & IFF_UP) && (l.link.flags & kIffLowerUp);
  s.master = l.link.master;
  s.speed_bps = Speed(l.link.name);
  return s;
}

absl::Status LinkWatcher::Dump(const Callback& cb) {
  std::vector<uint8_t> req;
  const uint32_t seq = seq_++;
  nl::AppendGetLinks(req, seq);
  return Request(req, seq, cb);
}

void LinkWatcher::Read(const Callback& cb) {
  std::vector<uint8_t> buf(1 << 20);
  while (true) {
    const ssize_t n = recv(fd_, buf.data(), buf.size(), MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == ENOBUFS) {
        (void)Dump(cb);  // lost notifications: start over from a dump
        continue;
      }
      return;
    }
    auto messages = nl::Parse(nl::ByteSpan(buf.data(), static_cast<size_t>(n)));
    if (!messages.ok()) continue;
    for (const nl::Message& m : *messages) {
      if (const auto* l = std::get_if<nl::LinkMsg>(&m.body)) cb(StateOf(l), l->deleted);
    }
  }
}

}  // namespace bagd::fib
