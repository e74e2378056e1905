// FIB programming against the real kernel, in a network namespace this program creates and
// deletes (root). Prints markdown for docs/benchmarks.md:
//   1. routes/s: 1M IPv4 routes on one nexthop group through bagd's reconciler and netlink
//      backend, next to the kernel's own batched rate for the same routes (`ip -batch`,
//      iproute2 sending one request per route on one socket);
//   2. reweight latency with 100k and 500k routes: from the RIB learning the new link
//      bandwidth of every prefix (one batch, as bagd gets a peer's re-announcement) through
//      the weights stage and the reconciler to the kernel's ack of the group replace — the
//      path an UPDATE takes after decoding, without the daemon's 2 ms batching delay.
// Each figure: median of --runs (default 3).
//
//   bench/fib_bench [--runs N] [--routes N]
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "fib_sync/netlink_backend.h"
#include "fib_sync/reconciler.h"
#include "rib/weights/nexthop_group_registry.h"

namespace {

using namespace bagd;
using Clock = std::chrono::steady_clock;

int Sh(const std::string& cmd) { return std::system((cmd + " >/dev/null 2>&1").c_str()); }

struct Netns {
  std::string name = "bagdbench" + std::to_string(getpid());
  Netns() {
    Sh("ip netns add " + name);
    Sh("ip -n " + name + " link set lo up");
    Sh("ip -n " + name + " link add va type veth peer name vb");
    Sh("ip -n " + name + " addr add 192.0.2.1/24 dev va");
    Sh("ip -n " + name + " link set va up");
    Sh("ip -n " + name + " link set vb up");
    Sh("ip netns exec " + name + " sysctl -qw net.ipv4.nexthop_compat_mode=0");
  }
  ~Netns() { Sh("ip netns del " + name); }
};

wire::Prefix V4(uint32_t i) {
  const uint32_t a = (10u << 24) + (i << 8);  // 10.0.0.0/24 upwards
  const uint8_t b[4] = {static_cast<uint8_t>(a >> 24), static_cast<uint8_t>(a >> 16), static_cast<uint8_t>(a >> 8), 0};
  return wire::Prefix::Make(wire::Afi::kIpv4, b, 24);
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double Seconds(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

// bagd: one group, `n` routes, installed by the reconciler. Returns seconds.
double BagdInstall(const Netns& ns, uint32_t n) {
  fib::NetlinkOptions o;
  o.netns = ns.name;
  auto b = fib::NetlinkBackend::Open(o);
  if (!b.ok()) {
    std::fprintf(stderr, "%s\n", b.status().ToString().c_str());
    std::exit(1);
  }
  fib::Reconciler r(**b);
  if (!r.Start().ok()) std::exit(1);
  rib::FibUpdate u;
  u.group_upserts.push_back({1, {{*wire::IpAddress::Parse("192.0.2.2"), 1}, {*wire::IpAddress::Parse("192.0.2.3"), 3}}});
  for (uint32_t i = 0; i < n; ++i) u.route_upserts.emplace_back(V4(i), 1);
  const auto t0 = Clock::now();
  r.Update(u);
  const auto f = r.Flush();
  const auto t1 = Clock::now();
  if (f.failed) std::fprintf(stderr, "bagd install: %zu failed: %s\n", f.failed, f.errors.front().c_str());
  Sh("ip -n " + ns.name + " route flush proto 186");
  Sh("ip -n " + ns.name + " nexthop flush");
  return Seconds(t0, t1);
}

// The kernel's batched rate: the same routes through `ip -batch` on a group made by ip.
double IpBatchInstall(const Netns& ns, uint32_t n) {
  Sh("ip -n " + ns.name + " nexthop add id 1 via 192.0.2.2 dev va");
  Sh("ip -n " + ns.name + " nexthop add id 2 via 192.0.2.3 dev va");
  Sh("ip -n " + ns.name + " nexthop add id 3 group 1/2,3");
  const std::string file = "/tmp/" + ns.name + ".routes";
  FILE* f = std::fopen(file.c_str(), "w");
  for (uint32_t i = 0; i < n; ++i) std::fprintf(f, "route add %s nhid 3 proto 186\n", V4(i).ToString().c_str());
  std::fclose(f);
  const auto t0 = Clock::now();
  Sh("ip -n " + ns.name + " -batch " + file);
  const auto t1 = Clock::now();
  std::remove(file.c_str());
  Sh("ip -n " + ns.name + " route flush proto 186");
  Sh("ip -n " + ns.name + " nexthop flush");
  return Seconds(t0, t1);
}

// Reweight latency with `n` routes on one group: milliseconds from the RIB taking the new
// bandwidth of every prefix to the kernel's ack of the group replace; and the FIB messages.
std::pair<double, size_t> Reweight(const Netns& ns, uint32_t n) {
  fib::NetlinkOptions o;
  o.netns = ns.name;
  auto b = fib::NetlinkBackend::Open(o);
  fib::Reconciler r(**b);
  if (!r.Start().ok()) std::exit(1);
  rib::AttributeStore store;
  rib::Rib rib(65000, rib::DecisionConfig{false, 8, 8, true});
  rib::NextHopGroupRegistry groups(rib::WeightsConfig{});
  std::vector<rib::PeerIndex> peers;
  for (int p = 0; p < 2; ++p) {
    rib::PeerInfo info;
    info.source.address = *wire::IpAddress::Parse(p == 0 ? "192.0.2.2" : "192.0.2.3");
    info.source.router_id = p + 1;
    info.asn = 65001 + p;
    peers.push_back(rib.AddPeer(info));
  }
  std::vector<wire::Nlri> nlri;
  for (uint32_t i = 0; i < n; ++i) nlri.push_back(wire::Nlri{V4(i), 0});
  auto attrs = [&](int p, double gbps) {
    wire::PathAttributes a;
    a.origin = wire::Origin::kIgp;
    a.as_path = wire::AsPath{{{wire::AsSegmentType::kSequence, {65001u + p}}}};
    a.next_hop = rib.peer(peers[p]).source.address;
    a.extended_communities.push_back(wire::LinkBandwidth::FromBitsPerSecond(65001 + p, gbps * 1e9, true).ToExtendedCommunity());
    return store.Intern(a);
  };
  // Where the time goes, per stage (stderr), for the last run.
  double t_changes = 0, t_members = 0, t_groups = 0, t_fib = 0;
  auto run = [&](absl::Time now) {
    const auto a = Clock::now();
    const auto changes = rib.TakeChanges();
    const auto b1 = Clock::now();
    std::vector<rib::PrefixMembers> batch;
    batch.reserve(changes.size());
    for (const auto& c : changes) batch.push_back(rib::MembersOf(rib, c.prefix));
    const auto c1 = Clock::now();
    groups.Update(batch, now);
    const auto d = Clock::now();
    r.Update(groups.TakeFibUpdate());
    auto f = r.Flush();
    const auto e = Clock::now();
    t_changes = Seconds(a, b1) * 1e3, t_members = Seconds(b1, c1) * 1e3, t_groups = Seconds(c1, d) * 1e3,
    t_fib = Seconds(d, e) * 1e3;
    return f;
  };
  rib.Announce(peers[0], nlri, attrs(0, 100));
  rib.Announce(peers[1], nlri, attrs(1, 100));
  run(absl::Now());
  const uint64_t before = (*b)->counters().messages;
  // Peer 0's LAG loses half its members: every prefix is re-announced with 50G.
  const auto t0 = Clock::now();
  rib.Announce(peers[0], nlri, attrs(0, 50));
  const auto ta = Clock::now();
  const auto f = run(absl::Now());
  const auto t1 = Clock::now();
  std::fprintf(stderr, "reweight %u routes: rib %.1f ms, change set %.1f, members %.1f, weights %.1f, fib %.1f\n", n,
               Seconds(t0, ta) * 1e3, t_changes, t_members, t_groups, t_fib);
  const size_t messages = (*b)->counters().messages - before;
  if (f.failed || f.group_ops != 1 || f.route_ops != 0) std::fprintf(stderr, "reweight: unexpected ops\n");
  Sh("ip -n " + ns.name + " route flush proto 186");
  Sh("ip -n " + ns.name + " nexthop flush");
  return {Seconds(t0, t1) * 1e3, messages};
}

}  // namespace

int main(int argc, char** argv) {
  int runs = 3;
  uint32_t routes = 1000000;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::string(argv[i]) == "--runs") runs = std::atoi(argv[i + 1]);
    if (std::string(argv[i]) == "--routes") routes = static_cast<uint32_t>(std::atol(argv[i + 1]));
  }
  if (geteuid() != 0) {
    std::fprintf(stderr, "fib_bench needs root (it creates a network namespace)\n");
    return 1;
  }
  Netns ns;
  std::vector<double> bagd, ip;
  for (int i = 0; i < runs; ++i) {
    bagd.push_back(BagdInstall(ns, routes));
    ip.push_back(IpBatchInstall(ns, routes));
  }
  const double b = Median(bagd), k = Median(ip);
  std::printf("| install %u IPv4 routes on one group | seconds (median of %d) | routes/s |\n|---|---|---|\n", routes,
              runs);
  std::printf("| bagd (reconciler + netlink backend) | %.2f | %.0f |\n", b, routes / b);
  std::printf("| kernel via `ip -batch` | %.2f | %.0f |\n", k, routes / k);
  std::printf("| ratio bagd / ip -batch (rate) | | %.2f |\n\n", k / b);
  std::printf("| routes on the group | reweight: RIB -> kernel ack, ms (median of %d) | netlink messages |\n|---|---|---|\n",
              runs);
  for (uint32_t n : {100000u, 500000u}) {
    std::vector<double> ms;
    size_t messages = 0;
    for (int i = 0; i < runs; ++i) {
      auto [t, m] = Reweight(ns, n);
      ms.push_back(t);
      messages = m;
    }
    std::printf("| %u | %.1f | %zu |\n", n, Median(ms), messages);
  }
  return 0;
}
