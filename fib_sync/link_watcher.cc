#include "fib_sync/link_watcher.h"

#include <linux/ethtool.h>
#include <linux/rtnetlink.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "fib_sync/netlink/messages.h"
#include "fib_sync/netlink_socket.h"

namespace bagd::fib {

namespace nl = netlink;

namespace {

LinkState StateOf(const nl::LinkMsg& l) {
  LinkState s;
  s.ifindex = l.link.ifindex;
  s.name = l.link.name;
  s.up = (l.link.flags & IFF_UP) && (l.link.flags & kIffLowerUp);
  s.master = l.link.master;
  return s;
}

}  // namespace

absl::StatusOr<std::unique_ptr<LinkWatcher>> LinkWatcher::Open(const std::string& netns) {
  std::unique_ptr<LinkWatcher> w(new LinkWatcher());
  int err = 0;
  auto st = InNamespace(netns, [&] {
    w->fd_ = OpenRouteSocket(4 << 20, {RTNLGRP_LINK});
    if (w->fd_ < 0) err = errno;
    w->query_fd_ = OpenRouteSocket(4 << 20);
    if (w->query_fd_ < 0) err = errno;
    w->ioctl_fd_ = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (w->ioctl_fd_ < 0) err = errno;
  });
  if (!st.ok()) return st;
  if (err != 0) return Errno("link sockets", err);
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

absl::Status LinkWatcher::Dump(const Callback& cb) {
  nl::Bytes req;
  const uint32_t seq = seq_++;
  nl::AppendGetLinks(req, seq);
  auto answer = Request(query_fd_, req, seq);
  if (!answer.ok()) return answer.status();
  for (const nl::Message& m : *answer) {
    if (const auto* l = std::get_if<nl::LinkMsg>(&m.body)) cb(StateOf(*l), l->deleted);
  }
  return absl::OkStatus();
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
      if (const auto* l = std::get_if<nl::LinkMsg>(&m.body)) cb(StateOf(*l), l->deleted);
    }
  }
}

}  // namespace bagd::fib
