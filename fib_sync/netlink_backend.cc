#include "fib_sync/netlink_backend.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"
#include "net/overloaded.h"
#include "fib_sync/netlink_socket.h"

namespace bagd::fib {

namespace nl = netlink;

namespace {

// 16-bit nexthop weights came with Linux 6.12.
nl::WeightWidth DetectWeightWidth() {
  utsname u{};
  if (uname(&u) != 0) return nl::WeightWidth::k8Bit;
  int major = 0, minor = 0;
  if (std::sscanf(u.release, "%d.%d", &major, &minor) != 2) return nl::WeightWidth::k8Bit;
  return (major > 6 || (major == 6 && minor >= 12)) ? nl::WeightWidth::k16Bit : nl::WeightWidth::k8Bit;
}

// The notification socket hears every change to routes and next hops, bagd's own too: a
// full table's install would echo a million messages into it (and overflow it). A socket
// filter drops, in the kernel, every message whose nlmsg_pid is the port of bagd's request
// socket (the kernel sends the requester's port in the notifications a request causes), so
// what is read is what someone else did. FRR's zebra filters its own echoes the same way.
absl::Status DropOwnEchoes(int event_fd, uint32_t own_port) {
  // Classic BPF loads words big-endian; nlmsg_pid is in host order.
  const uint32_t want = htonl(own_port);
  sock_filter code[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 12),  // offsetof(struct nlmsghdr, nlmsg_pid)
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, want, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, 0),           // ours: drop
      BPF_STMT(BPF_RET | BPF_K, 0xffffffff),  // anyone else's: keep
  };
  sock_fprog prog{static_cast<unsigned short>(sizeof code / sizeof code[0]), code};
  if (setsockopt(event_fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof prog) != 0) {
    return Errno("attaching the notification filter", errno);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<NetlinkBackend>> NetlinkBackend::Open(const NetlinkOptions& options) {
  std::unique_ptr<NetlinkBackend> b(new NetlinkBackend(options));
  int err = 0;
  auto st = InNamespace(options.netns, [&] {
    b->fd_ = OpenRouteSocket(options.socket_buffer);
    if (b->fd_ < 0) {
      err = errno;
      return;
    }
    b->event_fd_ = OpenRouteSocket(options.event_buffer,
                                   {RTNLGRP_NEXTHOP, RTNLGRP_LINK, RTNLGRP_IPV4_ROUTE, RTNLGRP_IPV6_ROUTE});
    if (b->event_fd_ < 0) err = errno;
  });
  if (!st.ok()) return st;
  if (err != 0) return Errno("netlink socket", err);
  sockaddr_nl self{};
  socklen_t len = sizeof self;
  if (getsockname(b->fd_, reinterpret_cast<sockaddr*>(&self), &len) != 0) return Errno("netlink getsockname", errno);
  b->own_port_ = self.nl_pid;
  if (auto f = DropOwnEchoes(b->event_fd_, b->own_port_); !f.ok()) return f;
  b->width_ = options.weight_bits == 8    ? nl::WeightWidth::k8Bit
              : options.weight_bits == 16 ? nl::WeightWidth::k16Bit
                                          : DetectWeightWidth();
  return b;
}

NetlinkBackend::~NetlinkBackend() {
  if (fd_ >= 0) close(fd_);
  if (event_fd_ >= 0) close(event_fd_);
}

FibCapabilities NetlinkBackend::Capabilities() const {
  FibCapabilities c;
  c.max_weight = width_ == nl::WeightWidth::k16Bit ? 65535 : 255;
  c.max_members = 256;  // far below the ~232 members that break IPv4 route dumps with compat mode on
  c.resilient_groups = true;
  c.group_delete_removes_routes = true;  // remove_nexthop() flushes the routes that use it
  return c;
}

absl::Status NetlinkBackend::Transact(const nl::Bytes& batch, uint32_t last_seq,
                                      std::map<uint32_t, absl::Status>& errors) {
  ++counters_.sends;
  if (auto st = SendToKernel(fd_, batch); !st.ok()) return st;
  return ReceiveUntil(fd_, [&](nl::Message& m) {
    const auto* e = std::get_if<nl::ErrorMsg>(&m.body);
    if (e == nullptr) return false;
    const uint32_t seq = e->request.seq ? e->request.seq : m.header.seq;
    if (e->error != 0) {
      errors[seq] = KernelError(*e);
      ++counters_.errors;
    }
    return seq == last_seq;
  });
}

absl::StatusOr<uint32_t> NetlinkBackend::InterfaceTowards(const net::IpAddress& gateway) {
  // The kernel's own lookup says which interface reaches the gateway.
  auto route = RouteTowards(fd_, seq_++, gateway);
  if (!route.ok()) return route.status();
  return route->oif;
}

absl::Status NetlinkBackend::Encode(const FibOp& op, nl::Bytes& batch, uint32_t seq) {
  constexpr uint16_t kUpsert = nl::kFlagCreate | nl::kFlagReplace;
  return std::visit(
      net::Overloaded{
          [&](const NexthopOp& n) -> absl::Status {
            if (n.remove) return nl::AppendDelNexthop(batch, seq, n.id).status();
            auto ifindex = InterfaceTowards(n.gateway);
            if (!ifindex.ok()) return ifindex.status();
            return nl::AppendNewNexthop(batch, seq, kUpsert, nl::Nexthop::Via(n.id, n.gateway, *ifindex, options_.protocol))
                .status();
          },
          [&](const GroupOp& g) -> absl::Status {
            if (g.remove) return nl::AppendDelNexthop(batch, seq, g.id).status();
            nl::NexthopGroup group;
            group.id = g.id;
            group.protocol = options_.protocol;
            for (const auto& [id, weight] : g.members) group.members.push_back(nl::GroupMember{id, weight});
            if (options_.resilient) {
              group.type = nl::NexthopGroup::Type::kResilient;
              group.buckets = options_.buckets;
              group.idle_timer_s = options_.idle_timer_s;
              group.unbalanced_timer_s = options_.unbalanced_timer_s;
            }
            return nl::AppendNewGroup(batch, seq, kUpsert, group, width_).status();
          },
          [&](const RouteOp& r) -> absl::Status {
            if (r.remove) return nl::AppendDelRoute(batch, seq, r.prefix, options_.table, options_.protocol).status();
            nl::Route route;
            route.prefix = r.prefix;
            route.table = options_.table;
            route.protocol = options_.protocol;
            route.nexthop_id = r.group;
            // A route bagd does not hold as its own is only created, never put in place of
            // another protocol's (EEXIST then: a conflict the reconciler reports).
            const uint16_t flags = r.exclusive ? (nl::kFlagCreate | nl::kFlagExcl) : kUpsert;
            return nl::AppendNewRoute(batch, seq, flags, route).status();
          },
      },
      op);
}

std::vector<absl::Status> NetlinkBackend::Apply(std::span<const FibOp> ops) {
  std::vector<absl::Status> out(ops.size());
  nl::Bytes batch;
  std::map<uint32_t, size_t> op_of_seq;
  size_t last_offset = 0;
  uint32_t last_seq = 0;
  auto flush = [&] {
    if (op_of_seq.empty()) return;
    nl::SetAck(batch, last_offset);
    std::map<uint32_t, absl::Status> errors;
    const absl::Status st = Transact(batch, last_seq, errors);
    for (const auto& [seq, index] : op_of_seq) {
      if (!st.ok()) {
        out[index] = st;
      } else if (auto e = errors.find(seq); e != errors.end()) {
        out[index] = e->second;
      }
    }
    batch.clear();
    op_of_seq.clear();
  };
  for (size_t i = 0; i < ops.size(); ++i) {
    const uint32_t seq = seq_++;
    const size_t offset = batch.size();
    if (absl::Status st = Encode(ops[i], batch, seq); !st.ok()) {
      batch.resize(offset);
      out[i] = st;
      continue;
    }
    ++counters_.messages;
    op_of_seq[seq] = i;
    last_offset = offset;
    last_seq = seq;
    if (batch.size() >= options_.batch_bytes) flush();
  }
  flush();
  return out;
}

// The kernel dumps on demand: each recv makes it fill the next datagram, so a dump read a
// piece at a time holds nothing in the kernel or here beyond one datagram. Each cursor has its
// own socket (the request socket keeps sending operations meanwhile).
class NetlinkDumpCursor final : public DumpCursor {
 public:
  NetlinkDumpCursor(const NetlinkOptions& options, int fd) : options_(options), fd_(fd), buf_(1 << 20) {}
  ~NetlinkDumpCursor() override { close(fd_); }

  absl::StatusOr<bool> Next(size_t max_routes, FibState& out) override {
    if (!objects_done_) {
      if (auto st = Objects(out); !st.ok()) return st;
      objects_done_ = true;
    }
    size_t got = 0;
    while (family_ < 2 && got < max_routes) {
      if (!sent_) {
        nl::Bytes req;
        seq_ = next_seq_++;
        nl::AppendGetRoutes(req, seq_, family_ == 0 ? net::Afi::kIpv4 : net::Afi::kIpv6, options_.protocol,
                            options_.table);
        if (auto st = SendToKernel(fd_, req); !st.ok()) return st;
        sent_ = true;
      }
      const ssize_t n = recv(fd_, buf_.data(), buf_.size(), 0);
      if (n < 0) {
        if (errno == EINTR) continue;
        return Errno("netlink route dump", errno);
      }
      auto messages = nl::Parse(nl::ByteSpan(buf_.data(), static_cast<size_t>(n)));
      if (!messages.ok()) return messages.status();
      for (const nl::Message& m : *messages) {
        if (m.header.seq != seq_) continue;
        if (const auto* d = std::get_if<nl::DoneMsg>(&m.body)) {
          if (d->error != 0) return KernelError(nl::ErrorMsg{d->error, {}, d->extack_message, {}, {}});
          ++family_;
          sent_ = false;
          break;
        }
        if (const auto* e = std::get_if<nl::ErrorMsg>(&m.body)) {
          if (e->error != 0) return KernelError(*e);
          continue;
        }
        const auto* r = std::get_if<nl::RouteMsg>(&m.body);
        if (r == nullptr || r->route.protocol != options_.protocol || r->route.table != options_.table) continue;
        // A route of bagd's protocol without a nexthop object (someone rewrote it with a
        // gateway) is bagd's too: it is there, pointing at no object of bagd's.
        out.routes[r->route.prefix] = r->route.nexthop_id != 0 ? r->route.nexthop_id : FibEvent::kNotAnObject;
        ++got;
      }
    }
    return family_ >= 2;
  }

 private:
  // Every nexthop and group (the kernel has no protocol filter for them): a few thousand at
  // most, read whole.
  absl::Status Objects(FibState& state) {
    nl::Bytes req;
    const uint32_t seq = next_seq_++;
    nl::AppendGetNexthops(req, seq);
    auto answer = Request(fd_, req, seq);
    if (!answer.ok()) return answer.status();
    for (const nl::Message& m : *answer) {
      const auto* nh = std::get_if<nl::NexthopMsg>(&m.body);
      if (nh == nullptr) continue;
      if (const auto* single = std::get_if<nl::Nexthop>(&nh->object)) {
        if (single->protocol != options_.protocol || !single->gateway) {
          state.foreign_ids.push_back(single->id);
        } else {
          state.nexthops[single->id] = *single->gateway;
        }
      } else {
        const auto& g = std::get<nl::NexthopGroup>(nh->object);
        if (g.protocol != options_.protocol) {
          state.foreign_ids.push_back(g.id);
          continue;
        }
        auto& members = state.groups[g.id];
        for (const auto& m2 : g.members) members.emplace_back(m2.nexthop_id, m2.weight);
      }
    }
    return absl::OkStatus();
  }

  NetlinkOptions options_;
  int fd_;
  std::vector<uint8_t> buf_;
  bool objects_done_ = false;
  int family_ = 0;  // 0 IPv4, 1 IPv6, 2 done
  bool sent_ = false;
  uint32_t seq_ = 0, next_seq_ = 1;
};

absl::StatusOr<std::unique_ptr<DumpCursor>> NetlinkBackend::StartDump() {
  int fd = -1, err = 0;
  auto st = InNamespace(options_.netns, [&] {
    fd = OpenRouteSocket(1 << 20);
    if (fd < 0) err = errno;
  });
  if (!st.ok()) return st;
  if (fd < 0) return Errno("netlink dump socket", err);
  return std::unique_ptr<DumpCursor>(new NetlinkDumpCursor(options_, fd));
}

absl::StatusOr<FibState> NetlinkBackend::Dump() {
  // Through a cursor read to its end: the routes go straight into the state (a full table's
  // answer is not held as messages first).
  auto cursor = StartDump();
  if (!cursor.ok()) return cursor.status();
  FibState state;
  while (true) {
    auto done = (*cursor)->Next(std::numeric_limits<size_t>::max(), state);
    if (!done.ok()) return done.status();
    if (*done) return state;
  }
}

void NetlinkBackend::ReadEvents() {
  std::vector<uint8_t> buf(1 << 20);
  while (true) {
    const ssize_t n = recv(event_fd_, buf.data(), buf.size(), MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == ENOBUFS) {
        // The kernel dropped notifications: nothing we know is certain any more.
        Emit(FibEvent::Of(FibEvent::Kind::kResyncNeeded, 0));
        continue;
      }
      return;  // EAGAIN: all read
    }
    auto messages = nl::Parse(nl::ByteSpan(buf.data(), static_cast<size_t>(n)));
    if (!messages.ok()) {
      Emit(FibEvent::Of(FibEvent::Kind::kResyncNeeded, 0));
      continue;
    }
    for (const nl::Message& m : *messages) {
      if (m.header.pid == own_port_ && own_port_ != 0) continue;  // ours (the filter missed it)
      if (const auto* nh = std::get_if<nl::NexthopMsg>(&m.body)) {
        const uint32_t id = std::visit([](const auto& o) { return o.id; }, nh->object);
        if (nh->deleted) {
          FibEvent e = FibEvent::Of(FibEvent::Kind::kNexthopDeleted, id);
          e.by_kernel = m.header.pid == 0;
          Emit(e);
        } else if (const auto* g = std::get_if<nl::NexthopGroup>(&nh->object)) {
          if (g->protocol != options_.protocol) continue;
          FibEvent e = FibEvent::Of(FibEvent::Kind::kGroupChanged, id);
          for (const auto& member : g->members) e.members.emplace_back(member.nexthop_id, member.weight);
          Emit(e);
        } else if (std::get<nl::Nexthop>(nh->object).protocol == options_.protocol) {
          Emit(FibEvent::Of(FibEvent::Kind::kNexthopChanged, id));
        }
      } else if (const auto* r = std::get_if<nl::RouteMsg>(&m.body)) {
        if (r->route.table != options_.table) continue;
        FibEvent e;
        e.prefix = r->route.prefix;
        e.present = !r->deleted;
        e.by_kernel = m.header.pid == 0;
        if (r->route.protocol == options_.protocol) {
          e.kind = FibEvent::Kind::kRouteChanged;
          e.id = r->route.nexthop_id != 0 ? r->route.nexthop_id : FibEvent::kNotAnObject;
          Emit(e);
        } else if (r->route.type == nl::kRouteTypeUnicast || r->route.type == nl::kRouteTypeBlackhole) {
          // Another protocol's route where bagd's would be (same table, same metric: bagd
          // installs without RTA_PRIORITY, which IPv6 stores as 1024): it replaced bagd's
          // route or keeps bagd's from being added. Routes at another metric live beside it.
          const uint32_t ours = r->route.prefix.afi() == net::Afi::kIpv6 ? 1024 : 0;
          const uint32_t theirs = r->route.priority == 0 && r->route.prefix.afi() == net::Afi::kIpv6 ? 1024
                                                                                                     : r->route.priority;
          if (theirs != ours) continue;
          e.kind = FibEvent::Kind::kForeignRoute;
          Emit(e);
        }
      } else if (const auto* l = std::get_if<nl::LinkMsg>(&m.body)) {
        // Linux deletes the nexthops of a link that goes down (admin or carrier) without a
        // RTM_DELNEXTHOP notification, so a link going down means: look again.
        const bool up = !l->deleted && (l->link.flags & IFF_UP) && (l->link.flags & kIffLowerUp);
        Emit(FibEvent::Of(up ? FibEvent::Kind::kLinkUp : FibEvent::Kind::kLinkDown, l->link.ifindex));
      }
    }
  }
}

}  // namespace bagd::fib
