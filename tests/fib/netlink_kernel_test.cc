// The codec against the real kernel: inside a fresh network namespace (unshare(CLONE_NEWNET)
// on a worker thread, so nothing outside it changes and it disappears when the thread ends),
// the kernel must accept the encoded nexthops, 16-bit-weight groups, a resilient group and
// routes (table > 255, IPv4 over an IPv6 nexthop), and the decoder must read the dumps back
// with identical weights. Needs root; skipped otherwise.
#include <linux/if.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <future>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "fib_sync/netlink/messages.h"

using namespace bagd::fib::netlink;
using bagd::net::Afi;
using bagd::net::IpAddress;
using bagd::net::Prefix;

namespace {

IpAddress Ip(const char* s) { return *IpAddress::Parse(s); }
Prefix Pfx(const char* s) { return *Prefix::Parse(s); }

// A NETLINK_ROUTE socket with extended acks, capped acks and strict dump checking.
class RouteSocket {
 public:
  RouteSocket() {
    fd_ = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
    if (fd_ < 0) return;
    const int one = 1;
    for (int opt : {NETLINK_EXT_ACK, NETLINK_CAP_ACK, NETLINK_GET_STRICT_CHK}) {
      setsockopt(fd_, SOL_NETLINK, opt, &one, sizeof one);
    }
    const int buf = 4 << 20;
    setsockopt(fd_, SOL_SOCKET, SO_RCVBUFFORCE, &buf, sizeof buf);
    timeval tv{5, 0};  // a missing answer fails the test instead of hanging it
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  ~RouteSocket() {
    if (fd_ >= 0) close(fd_);
  }
  bool ok() const { return fd_ >= 0; }

  // Sends `batch` and collects every answer up to the one that ends `last_seq`: its
  // NLMSG_ERROR (ack or error), or for a dump its NLMSG_DONE. `raw` receives the datagrams.
  absl::StatusOr<std::vector<Message>> Transact(const Bytes& batch, uint32_t last_seq,
                                                std::vector<Bytes>* raw = nullptr) {
    sockaddr_nl kernel{};
    kernel.nl_family = AF_NETLINK;
    if (sendto(fd_, batch.data(), batch.size(), 0, reinterpret_cast<sockaddr*>(&kernel), sizeof kernel) !=
        static_cast<ssize_t>(batch.size())) {
      return absl::InternalError(absl::StrCat("sendto: ", strerror(errno)));
    }
    std::vector<Message> out;
    Bytes buf(1 << 20);
    for (;;) {
      const ssize_t n = recv(fd_, buf.data(), buf.size(), MSG_TRUNC);
      if (n < 0) return absl::InternalError(absl::StrCat("recv: ", strerror(errno)));
      if (static_cast<size_t>(n) > buf.size()) return absl::InternalError("datagram larger than 1 MiB");
      const Bytes datagram(buf.begin(), buf.begin() + n);
      if (raw) raw->push_back(datagram);
      auto msgs = Parse(datagram);
      if (!msgs.ok()) return msgs.status();
      bool done = false;
      for (Message& m : *msgs) {
        if (m.header.seq == last_seq &&
            (std::holds_alternative<ErrorMsg>(m.body) || std::holds_alternative<DoneMsg>(m.body))) {
          done = true;
        }
        out.push_back(std::move(m));
      }
      if (done) return out;
    }
  }

 private:
  int fd_ = -1;
};

// Runs a shell command in the calling thread's network namespace (the child inherits it).
bool Sh(const std::string& cmd) { return std::system(cmd.c_str()) == 0; }

std::string ShOutput(const std::string& cmd) {
  std::string out;
  if (FILE* p = popen(cmd.c_str(), "r")) {
    char buf[512];
    while (fgets(buf, sizeof buf, p)) out += buf;
    pclose(p);
  }
  return out;
}

std::vector<std::string> ErrorsIn(const std::vector<Message>& msgs) {
  std::vector<std::string> errors;
  for (const Message& m : msgs) {
    if (const auto* e = std::get_if<ErrorMsg>(&m.body); e && e->error != 0) {
      errors.push_back(absl::StrCat("seq ", m.header.seq, ": ", strerror(-e->error), " (", e->extack_message, ")"));
    }
  }
  return errors;
}

std::map<uint32_t, NexthopMsg> NexthopsIn(const std::vector<Message>& msgs) {
  std::map<uint32_t, NexthopMsg> out;
  for (const Message& m : msgs) {
    if (const auto* nm = std::get_if<NexthopMsg>(&m.body)) {
      const uint32_t id = std::visit([](const auto& o) { return o.id; }, nm->object);
      out[id] = *nm;
    }
  }
  return out;
}

std::vector<RouteMsg> RoutesIn(const std::vector<Message>& msgs) {
  std::vector<RouteMsg> out;
  for (const Message& m : msgs) {
    if (const auto* r = std::get_if<RouteMsg>(&m.body)) out.push_back(*r);
  }
  return out;
}

// Everything below runs on the namespace thread.
void KernelRoundTrip() {
  REQUIRE(Sh("ip link set lo up && ip link add bagd0 type veth peer name bagd1 && ip link set bagd0 up && "
             "ip link set bagd1 up && ip addr add 192.0.2.1/24 dev bagd0 && "
             "ip -6 addr add 2001:db8::1/64 dev bagd0 nodad"));
  RouteSocket sock;
  REQUIRE(sock.ok());
  uint32_t seq = 100;

  // Links: our veth, decoded from a dump.
  Bytes req;
  AppendGetLinks(req, ++seq);
  auto links = sock.Transact(req, seq);
  REQUIRE(links.ok());
  std::map<std::string, Link> by_name;
  for (const Message& m : *links) {
    if (const auto* lm = std::get_if<LinkMsg>(&m.body)) by_name[lm->link.name] = lm->link;
  }
  REQUIRE(by_name.count("bagd0"));
  const Link veth = by_name["bagd0"];
  CHECK(veth.kind == "veth");
  CHECK((veth.flags & IFF_UP) != 0);
  CHECK(veth.master == 0);
  CHECK_FALSE(veth.bond_slave_state);
  const uint32_t ifindex = veth.ifindex;
  CHECK(by_name.count("lo"));

  // Nexthops, groups, routes in one batch, ack only on the last.
  Bytes batch;
  REQUIRE(AppendNewNexthop(batch, ++seq, kFlagCreate | kFlagReplace, Nexthop::Via(1, Ip("192.0.2.2"), ifindex, kProtocolBgp)).ok());
  REQUIRE(AppendNewNexthop(batch, ++seq, kFlagCreate | kFlagReplace, Nexthop::Via(2, Ip("192.0.2.3"), ifindex, kProtocolBgp)).ok());
  REQUIRE(AppendNewNexthop(batch, ++seq, kFlagCreate | kFlagReplace, Nexthop::Via(3, Ip("2001:db8::2"), ifindex, kProtocolBgp)).ok());
  Nexthop onlink = Nexthop::Via(4, Ip("203.0.113.1"), ifindex, kProtocolBgp);
  onlink.onlink = true;
  REQUIRE(AppendNewNexthop(batch, ++seq, kFlagCreate | kFlagReplace, onlink).ok());
  NexthopGroup g100;
  g100.id = 100;
  g100.protocol = kProtocolBgp;
  g100.members = {{1, 1000}, {2, 999}};
  REQUIRE(AppendNewGroup(batch, ++seq, kFlagCreate | kFlagReplace, g100, WeightWidth::k16Bit).ok());
  NexthopGroup g101;
  g101.id = 101;
  g101.protocol = kProtocolBgp;
  g101.members = {{1, 65535}, {3, 1}};  // IPv4 + IPv6 members: usable by IPv4 routes
  REQUIRE(AppendNewGroup(batch, ++seq, kFlagCreate | kFlagReplace, g101, WeightWidth::k16Bit).ok());
  NexthopGroup g102;
  g102.id = 102;
  g102.protocol = kProtocolBgp;
  g102.type = NexthopGroup::Type::kResilient;
  g102.members = {{1, 1}, {2, 3}};
  g102.buckets = 64;
  g102.idle_timer_s = 120;
  g102.unbalanced_timer_s = 300;
  REQUIRE(AppendNewGroup(batch, ++seq, kFlagCreate | kFlagReplace, g102, WeightWidth::k16Bit).ok());
  Route r1{Pfx("10.10.0.0/24"), 1000, kProtocolBgp, 100, 0, kRouteTypeUnicast};
  Route r2{Pfx("10.20.0.0/24"), kTableMain, kProtocolBgp, 101, 0, kRouteTypeUnicast};
  Route r3{Pfx("10.30.0.0/24"), kTableMain, kProtocolBgp, 102, 50, kRouteTypeUnicast};
  Route r6{Pfx("2001:db8:100::/48"), kTableMain, kProtocolBgp, 3, 1024, kRouteTypeUnicast};
  for (const Route& r : {r1, r2, r3}) REQUIRE(AppendNewRoute(batch, ++seq, kFlagCreate | kFlagReplace, r).ok());
  auto last = AppendNewRoute(batch, ++seq, kFlagCreate | kFlagReplace, r6);
  REQUIRE(last.ok());
  SetAck(batch, *last);
  auto applied = sock.Transact(batch, seq);
  REQUIRE(applied.ok());
  const auto errors = ErrorsIn(*applied);
  for (const auto& e : errors) UNSCOPED_INFO(e);
  CHECK(errors.empty());

  // Dump the nexthops back (and keep the raw datagrams for a truncation sweep).
  req.clear();
  AppendGetNexthops(req, ++seq);
  std::vector<Bytes> raw;
  auto dump = sock.Transact(req, seq, &raw);
  REQUIRE(dump.ok());
  auto nhs = NexthopsIn(*dump);
  REQUIRE(nhs.count(100));
  REQUIRE(nhs.count(101));
  REQUIRE(nhs.count(102));
  for (uint32_t id : {100u, 101u, 102u}) {
    INFO("group " << id);
    CHECK(nhs[id].wide_weights);  // Linux 6.12+: NHA_OP_FLAGS with RESP_GRP_RESVD_0
    REQUIRE(std::holds_alternative<NexthopGroup>(nhs[id].object));
  }
  CHECK(std::get<NexthopGroup>(nhs[100].object) == g100);  // 1000:999 exactly
  CHECK(std::get<NexthopGroup>(nhs[101].object) == g101);  // 65535
  CHECK(std::get<NexthopGroup>(nhs[102].object) == g102);  // buckets 64, 120 s, 300 s
  for (uint32_t id : {1u, 2u, 3u}) {
    REQUIRE(std::holds_alternative<Nexthop>(nhs[id].object));
    const Nexthop& nh = std::get<Nexthop>(nhs[id].object);
    CHECK(nh.ifindex == ifindex);
    CHECK(nh.protocol == kProtocolBgp);
    CHECK_FALSE(nh.onlink);
  }
  CHECK(std::get<Nexthop>(nhs[3].object).family == Afi::kIpv6);
  CHECK(std::get<Nexthop>(nhs[3].object).gateway == Ip("2001:db8::2"));
  CHECK(std::get<Nexthop>(nhs[4].object).onlink);
  CHECK_FALSE(nhs[1].wide_weights);  // single nexthops carry no NHA_OP_FLAGS
  for (const Bytes& d : raw) {
    for (size_t n = 0; n < d.size(); ++n) (void)Parse(Bytes(d.begin(), d.begin() + static_cast<long>(n)));
  }

  // iproute2 reads the resilient timers the way we wrote them (seconds * USER_HZ)...
  const std::string shown = ShOutput("ip nexthop show id 102");
  INFO(shown);
  CHECK(shown.find("buckets 64 idle_timer 120 unbalanced_timer 300") != std::string::npos);
  // ...and we read what iproute2 wrote.
  REQUIRE(Sh("ip nexthop add id 103 group 1/2 type resilient buckets 8 idle_timer 7 unbalanced_timer 9 proto bgp"));
  req.clear();
  auto get103 = AppendGetNexthop(req, ++seq, 103);
  REQUIRE(get103.ok());
  SetAck(req, *get103);  // a GET is answered with the object only; the ack marks the end
  auto one = sock.Transact(req, seq);
  INFO(one.status().ToString());
  REQUIRE(one.ok());
  auto g103 = NexthopsIn(*one);
  REQUIRE(g103.count(103));
  const auto& res103 = std::get<NexthopGroup>(g103[103].object);
  CHECK(res103.idle_timer_s == 7);
  CHECK(res103.unbalanced_timer_s == 9);
  CHECK(res103.buckets == 8);

  // Routes, filtered by the kernel (strict checking) on protocol and table.
  req.clear();
  AppendGetRoutes(req, ++seq, Afi::kIpv4, kProtocolBgp, 1000);
  auto t1000 = sock.Transact(req, seq);
  REQUIRE(t1000.ok());
  auto routes = RoutesIn(*t1000);
  REQUIRE(routes.size() == 1);
  CHECK(routes[0].route == r1);

  req.clear();
  AppendGetRoutes(req, ++seq, Afi::kIpv4, kProtocolBgp, kTableMain);
  auto main4 = sock.Transact(req, seq);
  REQUIRE(main4.ok());
  routes = RoutesIn(*main4);
  REQUIRE(routes.size() == 2);
  CHECK(routes[0].route == r2);  // IPv4 route over a group with an IPv6 member
  CHECK(routes[1].route == r3);

  req.clear();
  AppendGetRoutes(req, ++seq, Afi::kIpv6, kProtocolBgp, kTableMain);
  auto main6 = sock.Transact(req, seq);
  REQUIRE(main6.ok());
  routes = RoutesIn(*main6);
  REQUIRE(routes.size() == 1);
  CHECK(routes[0].route == r6);

  // A reweight is a replace of the group; the route stays.
  g100.members = {{1, 1}, {2, 65535}};
  batch.clear();
  auto rw = AppendNewGroup(batch, ++seq, kFlagReplace, g100, WeightWidth::k16Bit);
  REQUIRE(rw.ok());
  SetAck(batch, *rw);
  auto replaced = sock.Transact(batch, seq);
  REQUIRE(replaced.ok());
  CHECK(ErrorsIn(*replaced).empty());
  req.clear();
  auto get100 = AppendGetNexthop(req, ++seq, 100);
  REQUIRE(get100.ok());
  SetAck(req, *get100);
  auto after = sock.Transact(req, seq);
  REQUIRE(after.ok());
  CHECK(std::get<NexthopGroup>(NexthopsIn(*after)[100].object) == g100);

  // Kernel errors come back with the extended ack.
  NexthopGroup missing;
  missing.id = 200;
  missing.members = {{1, 1}, {999, 1}};
  batch.clear();
  auto bad = AppendNewGroup(batch, ++seq, kFlagCreate, missing, WeightWidth::k16Bit);
  REQUIRE(bad.ok());
  SetAck(batch, *bad);
  auto refused = sock.Transact(batch, seq);
  REQUIRE(refused.ok());
  REQUIRE(refused->size() == 1);
  const auto& err = std::get<ErrorMsg>(refused->back().body);
  CHECK(err.error == -EINVAL);
  CHECK(err.request.seq == seq);
  CHECK(err.request.type == RTM_NEWNEXTHOP);
  CHECK(err.extack_message == "Invalid nexthop id");  // net/ipv4/nexthop.c nh_check_attr_group

  // NLM_F_ECHO with id 0: the kernel assigns an id and tells us which.
  batch.clear();
  Nexthop anon = Nexthop::Via(0, Ip("192.0.2.9"), ifindex, kProtocolBgp);
  auto echo = AppendNewNexthop(batch, ++seq, kFlagCreate | kFlagEcho | kFlagAck, anon);
  REQUIRE(echo.ok());
  auto echoed = sock.Transact(batch, seq);
  REQUIRE(echoed.ok());
  auto assigned = NexthopsIn(*echoed);
  REQUIRE(assigned.size() == 1);
  CHECK(assigned.begin()->first != 0);

  // Deletes: the route in table 1000, then group 101 (which takes route r2 with it).
  batch.clear();
  REQUIRE(AppendDelRoute(batch, ++seq, r1.prefix, 1000, kProtocolBgp).ok());
  auto del = AppendDelNexthop(batch, ++seq, 101);
  REQUIRE(del.ok());
  SetAck(batch, *del);
  auto deleted = sock.Transact(batch, seq);
  REQUIRE(deleted.ok());
  CHECK(ErrorsIn(*deleted).empty());
  req.clear();
  AppendGetRoutes(req, ++seq, Afi::kIpv4, kProtocolBgp, 0);  // every table
  auto remaining = sock.Transact(req, seq);
  REQUIRE(remaining.ok());
  routes = RoutesIn(*remaining);
  REQUIRE(routes.size() == 1);
  CHECK(routes[0].route == r3);
}

}  // namespace

TEST_CASE("The kernel accepts the encoded objects and the decoder reads them back", "[fib][netlink][kernel]") {
  if (geteuid() != 0) {
    WARN("skipped: needs root for a network namespace");
    SUCCEED();
    return;
  }
  if (std::system("ip -V >/dev/null 2>&1") != 0) {
    WARN("skipped: iproute2 (ip) not installed");
    SUCCEED();
    return;
  }
  // A new thread, so unshare() moves only it into the namespace; the namespace and the veth
  // pair vanish when the thread (the last user) exits, whatever the outcome.
  std::string skip;
  auto run = std::async(std::launch::async, [&skip] {
    if (unshare(CLONE_NEWNET) != 0) {
      skip = absl::StrCat("unshare(CLONE_NEWNET): ", strerror(errno));
      return;
    }
    KernelRoundTrip();
  });
  run.get();  // rethrows a failed REQUIRE into this thread
  if (!skip.empty()) {
    WARN("skipped: " << skip);
    SUCCEED();
  }
}
