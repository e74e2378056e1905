// FIB programming against the real kernel, in a network namespace this program creates and
// deletes (root). Prints markdown for docs/benchmarks.md:
//   1. routes/s: 1M IPv4 routes on one nexthop group through the daemon's FIB stage
//      (reconciler and netlink backend), next to the kernel's own batched rate for the same
//      routes (`ip -batch`, iproute2 sending one request per route on one socket);
//   2. reweight latency with 100k and 500k routes: from a neighbor's UPDATE with the new link
//      bandwidth of every prefix (decoded) through the daemon's own daemon::Pipeline (routing
//      core, advertiser, weights stage) and FibStage to the kernel's ack of the group replace,
//      without the daemon's 2 ms batching delay (the pipeline's clock is a ManualClock).
// Each figure: median of --runs (default 3).
//
//   3. the audit (issue 40): CPU and wall time of one audit of the whole table, its longest
//      piece (the longest the event thread is held), and repairs of 1, 100 and 10k routes
//      someone deleted at once (`ip -batch`), from the end of the deletion to every route back.
//
//   bench/fib_bench [--runs N] [--routes N] [--only audit]
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>

#include "bgpd/daemon/fib_stage.h"
#include "bgpd/daemon/pipeline.h"
#include "bgpd/session/clock.h"
#include "bgpd/session/log.h"
#include "fib_sync/netlink_backend.h"
#include "tests/daemon/null_outbound.h"
#include "tests/daemon/posted_tasks.h"

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

net::Prefix V4(uint32_t i) {
  const uint32_t a = (10u << 24) + (i << 8);  // 10.0.0.0/24 upwards
  const uint8_t b[4] = {static_cast<uint8_t>(a >> 24), static_cast<uint8_t>(a >> 16), static_cast<uint8_t>(a >> 8), 0};
  return net::Prefix::Make(net::Afi::kIpv4, b, 24);
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double Seconds(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

std::unique_ptr<fib::NetlinkBackend> OpenBackend(const Netns& ns) {
  fib::NetlinkOptions o;
  o.netns = ns.name;
  auto b = fib::NetlinkBackend::Open(o);
  if (!b.ok()) {
    std::fprintf(stderr, "%s\n", b.status().ToString().c_str());
    std::exit(1);
  }
  return std::move(*b);
}

// The daemon's FIB stage on a fresh namespace: nothing to adopt, so nothing is held back.
std::unique_ptr<daemon::FibStage> StartFibStage(boost::asio::io_context& io, std::unique_ptr<fib::NetlinkBackend> b) {
  daemon::FibStageOptions o;
  o.startup_hold = std::chrono::seconds(0);
  o.sweep_after = std::chrono::seconds(0);
  auto stage = std::make_unique<daemon::FibStage>(io, std::move(b), o);
  if (auto st = stage->Start(); !st.ok()) {
    std::fprintf(stderr, "fib stage: %s\n", st.ToString().c_str());
    std::exit(1);
  }
  return stage;
}

void FlushNamespace(const Netns& ns) {
  Sh("ip -n " + ns.name + " route flush proto 186");
  Sh("ip -n " + ns.name + " nexthop flush");
}

// bagd: one group, `n` routes, installed by the FIB stage. Returns seconds.
double BagdInstall(const Netns& ns, uint32_t n) {
  boost::asio::io_context io;
  auto stage = StartFibStage(io, OpenBackend(ns));
  rib::FibUpdate u;
  u.group_upserts.push_back({1, {{*net::IpAddress::Parse("192.0.2.2"), 1}, {*net::IpAddress::Parse("192.0.2.3"), 3}}});
  for (uint32_t i = 0; i < n; ++i) u.route_upserts.emplace_back(V4(i), 1);
  const auto t0 = Clock::now();
  stage->Apply(u);
  const auto t1 = Clock::now();
  if (stage->reconciler().dirty()) std::fprintf(stderr, "bagd install: some operations failed\n");
  FlushNamespace(ns);
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
  FlushNamespace(ns);
  return Seconds(t0, t1);
}

// Reweight latency with `n` routes on one group: milliseconds from the neighbor's UPDATE
// with the new bandwidth of every prefix to the kernel's ack of the group replace; and the
// netlink messages it took.
std::pair<double, size_t> Reweight(const Netns& ns, uint32_t n) {
  boost::asio::io_context io;
  auto backend = OpenBackend(ns);
  const fib::NetlinkBackend* kernel = backend.get();
  auto stage = StartFibStage(io, std::move(backend));
  session::ManualClock clock;
  test::NullOutbound out0("a"), out1("b");  // neighbors the bench only receives from
  test::PostedTasks posted;  // the pipeline's posted hand-off (none for a full UPDATE)
  daemon::Pipeline pipeline(65000, rib::DecisionConfig{false, 8, 8, true}, rib::WeightsConfig{}, clock, stage.get(),
                            nullptr, nullptr, posted.post());
  std::vector<rib::PeerIndex> peers;
  for (int p = 0; p < 2; ++p) {
    rib::PeerInfo info;
    info.name = p == 0 ? "a" : "b";
    info.source.address = *net::IpAddress::Parse(p == 0 ? "192.0.2.2" : "192.0.2.3");
    info.source.ebgp = true;
    info.asn = 65001 + p;
    peers.push_back(pipeline.AddNeighbor(info, info.source.address, p == 0 ? out0 : out1, daemon::NeighborPolicies{},
                                         rib::LinkBandwidthExport{}));
    pipeline.SessionUp(peers.back(), p + 1);
  }
  auto update = [&](int p, double gbps) {
    wire::UpdateMessage u;
    u.attrs.origin = wire::Origin::kIgp;
    u.attrs.as_path = wire::AsPath{{{wire::AsSegmentType::kSequence, {65001u + p}}}};
    u.attrs.next_hop = *net::IpAddress::Parse(p == 0 ? "192.0.2.2" : "192.0.2.3");
    u.attrs.extended_communities.push_back(
        wire::LinkBandwidth::FromBitsPerSecond(65001 + p, gbps * 1e9, true).ToExtendedCommunity());
    for (uint32_t i = 0; i < n; ++i) u.nlri.push_back(net::Nlri{V4(i), 0});
    return u;
  };
  pipeline.Ingest(peers[0], update(0, 100));
  pipeline.Ingest(peers[1], update(1, 100));
  posted.RunAll();
  pipeline.WeighNow();
  const uint64_t messages_before = kernel->counters().messages;
  const rib::WeightCounters before = pipeline.weights().groups().counters();
  // Peer 0's LAG loses half its members: every prefix is re-announced with 50G.
  const wire::UpdateMessage degraded = update(0, 50);
  const auto t0 = Clock::now();
  pipeline.Ingest(peers[0], degraded);  // the routing core, then the change set to the neighbors
  posted.RunAll();
  const auto ta = Clock::now();
  pipeline.WeighNow();  // the weights batch: groups, then the FIB stage and the kernel's ack
  const auto t1 = Clock::now();
  std::fprintf(stderr, "reweight %u routes: routing core + advertiser %.1f ms, weights + fib %.1f\n", n,
               Seconds(t0, ta) * 1e3, Seconds(ta, t1) * 1e3);
  const rib::WeightCounters& after = pipeline.weights().groups().counters();
  if (after.group_updates - before.group_updates != 1 || after.route_updates != before.route_updates ||
      stage->reconciler().dirty()) {
    std::fprintf(stderr, "reweight: unexpected ops (%lu group, %lu route)\n",
                 static_cast<unsigned long>(after.group_updates - before.group_updates),
                 static_cast<unsigned long>(after.route_updates - before.route_updates));
  }
  const size_t messages = kernel->counters().messages - messages_before;
  FlushNamespace(ns);
  return {Seconds(t0, t1) * 1e3, messages};
}

double CpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

struct AuditFigures {
  double wall = 0, cpu = 0;              // one audit of the table
  double longest = 0;                    // its longest piece: the longest pause of the event thread
  std::vector<double> repair_seconds;    // per deletion size
};

// `n` routes installed by the FIB stage (the kernel's notifications watched, as bagd does);
// one audit timed; then 1, 100, 10k routes deleted by `ip -batch`, each repaired.
AuditFigures Audit(const Netns& ns, uint32_t n, const std::vector<uint32_t>& deletions) {
  AuditFigures out;
  boost::asio::io_context io;
  auto backend = OpenBackend(ns);
  fib::NetlinkBackend* kernel = backend.get();
  auto stage = StartFibStage(io, std::move(backend));
  stage->WatchEvents(kernel->event_fd(), [kernel] { kernel->ReadEvents(); });
  rib::FibUpdate u;
  u.group_upserts.push_back({1, {{*net::IpAddress::Parse("192.0.2.2"), 1}, {*net::IpAddress::Parse("192.0.2.3"), 3}}});
  for (uint32_t i = 0; i < n; ++i) u.route_upserts.emplace_back(V4(i), 1);
  stage->Apply(u);
  io.run_for(std::chrono::milliseconds(100));
  const double c0 = CpuSeconds();
  const auto t0 = Clock::now();
  if (!stage->AuditNow()) std::fprintf(stderr, "audit: did not start\n");
  while (stage->auditing()) io.run_one();
  out.wall = Seconds(t0, Clock::now());
  out.cpu = CpuSeconds() - c0;
  out.longest = stage->last_audit().longest_step;
  if (stage->last_audit().found != 0) std::fprintf(stderr, "audit: found differences in an untouched table\n");
  uint32_t offset = 0;
  for (uint32_t k : deletions) {
    const std::string file = "/tmp/" + ns.name + ".del";
    FILE* f = std::fopen(file.c_str(), "w");
    for (uint32_t i = 0; i < k; ++i) std::fprintf(f, "route del %s proto 186\n", V4((offset + i * 7) % n).ToString().c_str());
    std::fclose(f);
    offset += 1;
    Sh("ip -n " + ns.name + " -batch " + file);
    const auto td = Clock::now();
    std::remove(file.c_str());
    // Until every route is back: the notifications read, the repairs counted, one flush.
    auto repaired = [&] {
      return stage->reconciler().stats().repairs[0][static_cast<int>(fib::RepairCause::kDeleted)];
    };
    const uint64_t before = repaired();
    while (repaired() - before < k || stage->reconciler().dirty()) {
      io.run_for(std::chrono::milliseconds(1));
      if (Seconds(td, Clock::now()) > 60) break;
    }
    out.repair_seconds.push_back(Seconds(td, Clock::now()));
    auto dumped = kernel->Dump();
    if (!dumped.ok() || dumped->routes.size() != n) {
      std::fprintf(stderr, "repair of %u deleted routes: the kernel holds %zu of %u\n", k,
                   dumped.ok() ? dumped->routes.size() : 0, n);
    }
  }
  FlushNamespace(ns);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  int runs = 3;
  uint32_t routes = 1000000;
  std::string only;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::string(argv[i]) == "--runs") runs = std::atoi(argv[i + 1]);
    if (std::string(argv[i]) == "--routes") routes = static_cast<uint32_t>(std::atol(argv[i + 1]));
    if (std::string(argv[i]) == "--only") only = argv[i + 1];
  }
  if (geteuid() != 0) {
    std::fprintf(stderr, "fib_bench needs root (it creates a network namespace)\n");
    return 1;
  }
  log::SetLevel(log::Level::kError);
  Netns ns;
  if (only.empty() || only == "audit") {
    const std::vector<uint32_t> deletions = {1, 100, 10000};
    std::vector<double> wall, cpu, longest;
    std::vector<std::vector<double>> repair(deletions.size());
    for (int i = 0; i < runs; ++i) {
      AuditFigures a = Audit(ns, routes, deletions);
      wall.push_back(a.wall);
      cpu.push_back(a.cpu);
      longest.push_back(a.longest);
      for (size_t d = 0; d < deletions.size(); ++d) repair[d].push_back(a.repair_seconds[d]);
    }
    std::printf("| audit of %u routes (median of %d) | seconds |\n|---|---|\n", routes, runs);
    std::printf("| CPU of one audit (dump + compare) | %.3f |\n", Median(cpu));
    std::printf("| wall time of one audit (pieces of 16384 routes, other work between them) | %.3f |\n", Median(wall));
    std::printf("| longest piece: the longest pause of the event thread | %.4f |\n", Median(longest));
    for (size_t d = 0; d < deletions.size(); ++d) {
      std::printf("| %u routes deleted at once (ip -batch): all back after the deletion | %.3f |\n", deletions[d],
                  Median(repair[d]));
    }
    std::printf("\n");
    if (only == "audit") return 0;
  }
  std::vector<double> bagd, ip;
  for (int i = 0; i < runs; ++i) {
    bagd.push_back(BagdInstall(ns, routes));
    ip.push_back(IpBatchInstall(ns, routes));
  }
  const double b = Median(bagd), k = Median(ip);
  std::printf("| install %u IPv4 routes on one group | seconds (median of %d) | routes/s |\n|---|---|---|\n", routes,
              runs);
  std::printf("| bagd (FibStage: reconciler + netlink backend) | %.2f | %.0f |\n", b, routes / b);
  std::printf("| kernel via `ip -batch` | %.2f | %.0f |\n", k, routes / k);
  std::printf("| ratio bagd / ip -batch (rate) | | %.2f |\n\n", k / b);
  std::printf("| routes on the group | reweight: UPDATE in -> kernel ack, ms (median of %d) | netlink messages |\n|---|---|---|\n",
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
