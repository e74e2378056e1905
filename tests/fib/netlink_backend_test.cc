// The kernel backend with the reconciler, against the real kernel in a network namespace
// the test creates and deletes (root only; skipped otherwise): weights as bagd computed them
// (decoded from NHA_GROUP by bagd's own decoder: iproute2 6.1 truncates weights above 256),
// flow shares from `ip route get`, a reweight as one group replace, a restart that changes
// nothing, and link loss with recovery. Both nexthop_compat_mode values.
#include <catch2/catch.hpp>

#include <map>
#include <sstream>

#include <unistd.h>

#include "fib_sync/netlink_backend.h"
#include "fib_sync/reconciler.h"
#include "tests/fib/test_netns.h"

namespace bagd::fib {
namespace {

using test::TestNetns;

net::IpAddress A(const char* s) { return *net::IpAddress::Parse(s); }

rib::FibUpdate Desired(rib::GroupId id, std::vector<std::pair<const char*, uint32_t>> members, int routes) {
  rib::FibUpdate u;
  rib::FibGroup g{id, {}};
  for (const auto& [nh, w] : members) g.members.push_back({A(nh), w});
  u.group_upserts.push_back(g);
  for (int i = 0; i < routes; ++i) {
    const uint8_t b[4] = {10, static_cast<uint8_t>(100 + i / 256), static_cast<uint8_t>(i % 256), 0};
    u.route_upserts.emplace_back(net::Prefix::Make(net::Afi::kIpv4, b, 24), id);
  }
  return u;
}

// gateway -> weight of the one group bagd owns, from a dump.
std::map<std::string, uint32_t> KernelWeights(NetlinkBackend& b, size_t* routes = nullptr) {
  auto s = b.Dump();
  REQUIRE(s.ok());
  REQUIRE(s->groups.size() == 1);
  std::map<std::string, uint32_t> out;
  for (const auto& [id, w] : s->groups.begin()->second) out[s->nexthops.at(id).ToString()] = w;
  if (routes) *routes = s->routes.size();
  return out;
}

// Shares of 10000 flows (UDP source ports) per gateway, with the L4 hash.
std::map<std::string, double> FlowShares(const TestNetns& ns) {
  std::ostringstream batch;
  for (int port = 10000; port < 20000; ++port) {
    batch << "route get 10.100.0.1 from 192.0.2.1 ipproto udp sport " << port << " dport 4791\n";
  }
  const std::string file = "/tmp/" + ns.name() + ".batch";
  FILE* f = fopen(file.c_str(), "w");
  REQUIRE(f != nullptr);
  fputs(batch.str().c_str(), f);
  fclose(f);
  const std::string out = ns.Exec("ip -batch " + file);
  std::remove(file.c_str());
  std::map<std::string, double> shares;
  std::istringstream lines(out);
  std::string line;
  int total = 0;
  while (std::getline(lines, line)) {
    const auto via = line.find(" via ");
    if (via == std::string::npos) continue;
    const auto end = line.find(' ', via + 5);
    ++shares[line.substr(via + 5, end - via - 5)];
    ++total;
  }
  REQUIRE(total == 10000);
  for (auto& [gw, n] : shares) n /= total;
  return shares;
}

// A veth pair inside `ns`, va = 192.0.2.1/24, both ends up: the gateways 192.0.2.x are on it.
void AddLink(TestNetns& ns) {
  REQUIRE(ns.ok());
  REQUIRE(ns.Ip("link add va type veth peer name vb") == 0);
  REQUIRE(ns.Ip("addr add 192.0.2.1/24 dev va") == 0);
  REQUIRE(ns.Ip("link set va up") == 0);
  REQUIRE(ns.Ip("link set vb up") == 0);
}

TEST_CASE("kernel: weights, flows, reweight, restart, link loss", "[fib][kernel]") {
  if (!test::IsRoot()) {
    WARN("needs root (network namespaces); skipped");
    return;
  }
  for (const int compat : {1, 0}) {
    DYNAMIC_SECTION("nexthop_compat_mode=" << compat) {
      TestNetns ns("nlb" + std::to_string(compat));
      AddLink(ns);
      ns.Exec("sysctl -qw net.ipv4.nexthop_compat_mode=" + std::to_string(compat));
      ns.Exec("sysctl -qw net.ipv4.fib_multipath_hash_policy=1");

      NetlinkOptions o;
      o.netns = ns.name();
      auto opened = NetlinkBackend::Open(o);
      REQUIRE(opened.ok());
      NetlinkBackend& b = **opened;
      REQUIRE(b.weight_width() == netlink::WeightWidth::k16Bit);  // this machine runs Linux >= 6.12
      Reconciler r(b);
      REQUIRE(r.Start().ok());

      // Weights that need 16 bits, kept exactly.
      r.Update(Desired(1, {{"192.0.2.2", 1000}, {"192.0.2.3", 999}, {"192.0.2.4", 65535}}, 1000));
      FlushResult f = r.Flush();
      INFO((f.errors.empty() ? std::string() : f.errors.front()));
      REQUIRE(f.failed == 0);
      CHECK(f.route_ops == 1000);
      size_t routes = 0;
      CHECK(KernelWeights(b, &routes) ==
            std::map<std::string, uint32_t>{{"192.0.2.2", 1000}, {"192.0.2.3", 999}, {"192.0.2.4", 65535}});
      CHECK(routes == 1000);

      // A reweight: one group replace, no route message.
      const uint64_t sent = b.counters().messages;
      r.Update(Desired(1, {{"192.0.2.2", 1}, {"192.0.2.3", 2}, {"192.0.2.4", 5}}, 0));
      f = r.Flush();
      CHECK(f.failed == 0);
      CHECK(f.group_ops == 1);
      CHECK(f.route_ops == 0);
      CHECK(b.counters().messages - sent == 1);
      CHECK(KernelWeights(b, &routes) ==
            std::map<std::string, uint32_t>{{"192.0.2.2", 1}, {"192.0.2.3", 2}, {"192.0.2.4", 5}});
      CHECK(routes == 1000);

      // The kernel spreads flows as the weights say: within 3 percentage points.
      const auto shares = FlowShares(ns);
      CHECK(std::abs(shares.at("192.0.2.2") - 1.0 / 8) < 0.03);
      CHECK(std::abs(shares.at("192.0.2.3") - 2.0 / 8) < 0.03);
      CHECK(std::abs(shares.at("192.0.2.4") - 5.0 / 8) < 0.03);

      // A restart with the same state: everything is adopted, nothing is sent.
      {
        auto again = NetlinkBackend::Open(o);
        REQUIRE(again.ok());
        Reconciler r2(**again);
        REQUIRE(r2.Start().ok());
        r2.Update(Desired(9, {{"192.0.2.4", 5}, {"192.0.2.3", 2}, {"192.0.2.2", 1}}, 1000));
        const FlushResult f2 = r2.Flush();
        CHECK(f2.applied == 0);
        CHECK(f2.failed == 0);
        CHECK((*again)->counters().messages == 0);
        CHECK(r2.stats().adopted == 4);
        r2.Sweep();
        CHECK(r2.Flush().applied == 0);  // nothing was left over
      }

      // Link loss: the kernel deletes the next hops (and the group and its routes); when the
      // link returns, bagd re-creates them and the group is whole again.
      b.SetEventHandler([&](const FibEvent& e) { r.OnEvent(e); });
      REQUIRE(ns.Ip("link set va down") == 0);
      b.ReadEvents();
      CHECK(r.resync_wanted());
      REQUIRE(r.Resync().ok());
      f = r.Flush();
      CHECK(f.failed > 0);  // no route to the gateways while the link is down
      REQUIRE(ns.Ip("link set va up") == 0);
      // The kernel raises carrier a moment later: wait for it as bagd waits for the event.
      for (int i = 0; i < 50 && ns.Exec("ip link show va").find("LOWER_UP") == std::string::npos; ++i) usleep(20000);
      b.ReadEvents();
      f = r.Flush();
      INFO((f.errors.empty() ? std::string() : f.errors.front()));
      CHECK(f.failed == 0);
      CHECK(KernelWeights(b, &routes) ==
            std::map<std::string, uint32_t>{{"192.0.2.2", 1}, {"192.0.2.3", 2}, {"192.0.2.4", 5}});
      CHECK(routes == 1000);
      CHECK_FALSE(r.dirty());
    }
  }
}

TEST_CASE("kernel: a full table's loss is one group delete, the kernel removes the routes with it",
          "[fib][kernel]") {
  if (!test::IsRoot()) {
    WARN("needs root (network namespaces); skipped");
    return;
  }
  TestNetns ns("nlbgone");
  AddLink(ns);
  NetlinkOptions o;
  o.netns = ns.name();
  auto opened = NetlinkBackend::Open(o);
  REQUIRE(opened.ok());
  NetlinkBackend& b = **opened;
  REQUIRE(b.Capabilities().group_delete_removes_routes);
  Reconciler r(b);
  REQUIRE(r.Start().ok());
  b.SetEventHandler([&](const FibEvent& e) { r.OnEvent(e); });
  constexpr int kRoutes = 20000;
  rib::FibUpdate u = Desired(1, {{"192.0.2.2", 1}, {"192.0.2.3", 3}}, kRoutes);
  r.Update(u);
  REQUIRE(r.Flush().failed == 0);
  b.ReadEvents();
  size_t routes = 0;
  KernelWeights(b, &routes);
  REQUIRE(routes == kRoutes);

  rib::FibUpdate gone;
  for (const auto& [prefix, gid] : u.route_upserts) gone.route_deletes.push_back(prefix);
  gone.group_deletes.push_back(1);
  r.Update(gone);
  const uint64_t sent = b.counters().messages;
  const FlushResult f = r.Flush();
  INFO((f.errors.empty() ? std::string() : f.errors.front()));
  CHECK(f.failed == 0);
  CHECK(f.route_ops == 0);
  CHECK(f.routes_removed_with_group == kRoutes);
  CHECK(b.counters().messages - sent == 3);  // the group, then its two next hops
  auto state = b.Dump();
  REQUIRE(state.ok());
  CHECK(state->routes.empty());
  CHECK(state->groups.empty());
  CHECK(state->nexthops.empty());
  // What the kernel tells about it afterwards is bagd's own doing: no resync.
  b.ReadEvents();
  CHECK_FALSE(r.resync_wanted());
  CHECK_FALSE(r.dirty());
  CHECK(ns.Exec("ip -4 route show proto 186").find("10.100.") == std::string::npos);
}

TEST_CASE("kernel: lost notifications (ENOBUFS) lead to a resync with no drift", "[fib][kernel]") {
  if (!test::IsRoot()) {
    WARN("needs root (network namespaces); skipped");
    return;
  }
  TestNetns ns("enob");
  AddLink(ns);
  NetlinkOptions o;
  o.netns = ns.name();
  o.event_buffer = 1024;  // the kernel's minimum: a burst of notifications overflows it
  auto opened = NetlinkBackend::Open(o);
  REQUIRE(opened.ok());
  NetlinkBackend& b = **opened;
  Reconciler r(b);
  REQUIRE(r.Start().ok());
  b.SetEventHandler([&](const FibEvent& e) { r.OnEvent(e); });
  r.Update(Desired(1, {{"192.0.2.2", 1}, {"192.0.2.3", 3}}, 100));
  REQUIRE(r.Flush().failed == 0);
  const auto group = *r.GroupObject(1);
  b.ReadEvents();  // our own changes

  // Behind bagd's back, in one burst: 300 foreign nexthops come and go, one of bagd's routes
  // is deleted and its group is re-weighted. The notification socket overflows.
  std::ostringstream burst;
  for (int i = 0; i < 300; ++i) burst << "nexthop add id " << (1000 + i) << " via 192.0.2.9 dev va\n";
  for (int i = 0; i < 300; ++i) burst << "nexthop del id " << (1000 + i) << "\n";
  burst << "route del 10.100.0.0/24 proto 186\n";
  const std::string file = "/tmp/" + ns.name() + ".burst";
  FILE* f = fopen(file.c_str(), "w");
  REQUIRE(f != nullptr);
  fputs(burst.str().c_str(), f);
  fclose(f);
  ns.Exec("ip -batch " + file);
  std::remove(file.c_str());
  // iproute2 6.1 cannot write 16-bit weights, 8-bit ones are enough to drift.
  // (bagd created the next hops first: ids group-2 and group-1.)
  ns.Exec("ip nexthop replace id " + std::to_string(group) + " group " + std::to_string(group - 2) + ",5/" +
          std::to_string(group - 1) + " proto bgp");

  b.ReadEvents();
  REQUIRE(r.resync_wanted());  // ENOBUFS was seen
  REQUIRE(r.Resync().ok());
  const FlushResult fix = r.Flush();
  CHECK(fix.failed == 0);
  CHECK(fix.route_ops == 1);  // the deleted route
  CHECK(fix.group_ops == 1);  // the weights put back
  size_t routes = 0;
  CHECK(KernelWeights(b, &routes) == std::map<std::string, uint32_t>{{"192.0.2.2", 1}, {"192.0.2.3", 3}});
  CHECK(routes == 100);
  CHECK(r.stats().resyncs == 1);
}

}  // namespace
}  // namespace bagd::fib
