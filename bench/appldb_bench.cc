// APPL_DB write rate and reweight latency (docs/sonic.md, docs/benchmarks.md), against a
// private redis-server on a unix socket and the test consumer (tests/fib/sonic/
// fake_orchagent.h) in its own thread:
//   1. anchor: the same client (hiredis through RedisConnection) HSETs N route hashes with the
//      same six fields, pipelined 1000 at a time — the fastest plain write of the data;
//   2. bagd: N routes on one group through the reconciler and the APPL_DB backend
//      (ProducerStateTable script batches), timed until the consumer holds them all, and
//      until the producer is done;
//   3. reweight: new weights for the group, timed from the FIB update to the consumer holding
//      them; and from the RIB taking a new link bandwidth for every one of --rib-routes
//      prefixes (one batch, as a peer's re-announcement) through the weights stage, the
//      reconciler and APPL_DB to the consumer holding the group (as bench/fib_bench does for
//      the kernel).
//
// Each phase also reports CPU seconds: redis-server's main thread (the one that runs every
// command and script; /proc/PID/task/PID/schedstat), the producer (this thread) and the
// consumer thread (CLOCK_THREAD_CPUTIME_ID), so a shared machine's load does not hide where
// the time goes.
//
//   appldb_bench [--routes N] [--runs R] [--producer-only | --sequential] [--rib-routes N]
//                [--pop-batch B] [--keys-per-script K] [--scripts-in-flight S] [--phase-times]
//                [--swss-pop | --rename-pop] [--commandstats] [--zmq [--zmq-pairs P]]
// --zmq: also SONiC's ZMQ route path in the same run (docs/sonic.md, "Two route paths"): the
// same N routes through the backend over a real ZMQ socket to the test consumer
// (tests/fib/sonic/fake_zmq_orchagent.h, its own thread; groups through Redis), timed until
// it holds them all, with the persistence write to APPL_DB and without it; then a reweight of
// the group under those N routes (one group write, through Redis). P pairs (default 3), the
// order alternating, medians reported.
// --swss-pop: the consumer merges each staged field with its own HSET, as swss' pop script
// does (Redis' cost of a real orchagent's pops), instead of one HSET per key. --rename-pop:
// it RENAMEs a staging hash that has no main hash yet (not what swss does; what it would save).
// --commandstats prints, per phase, what Redis' INFO commandstats counted: calls and
// milliseconds per command, commands run by scripts included (EVALSHA's own time includes
// theirs), reset at the start of each phase.
// --phase-times prints each phase's start and end on CLOCK_MONOTONIC, for
// `perf record -k CLOCK_MONOTONIC` and `perf report --time START,END`.
#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "fib_sync/reconciler.h"
#include "fib_sync/sonic/appldb_backend.h"
#include "rib/weights/nexthop_group_registry.h"
#include "tests/fib/sonic/fake_orchagent.h"
#include "tests/fib/sonic/fake_zmq_orchagent.h"
#include "tests/fib/sonic/redis_server.h"

namespace {

using namespace bagd;
using Clock = std::chrono::steady_clock;
double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }
double Mono(Clock::time_point t) { return Seconds(t.time_since_epoch()); }  // steady_clock is CLOCK_MONOTONIC

// CPU seconds of the calling thread.
double ThreadCpu() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// INFO commandstats as "cmd calls ms; ...", then CONFIG RESETSTAT.
std::string CommandStats(fib::sonic::RedisConnection& c) {
  auto r = c.Command({"INFO", "commandstats"});
  std::string out;
  if (r.ok()) {
    for (absl::string_view line : absl::StrSplit(r->str, '\n')) {
      // cmdstat_hset:calls=200000,usec=123456,usec_per_call=0.62,...
      if (!absl::ConsumePrefix(&line, "cmdstat_")) continue;
      const size_t colon = line.find(':');
      uint64_t calls = 0, usec = 0;
      for (absl::string_view kv : absl::StrSplit(line.substr(colon + 1), ',')) {
        if (absl::ConsumePrefix(&kv, "calls=")) (void)absl::SimpleAtoi(kv, &calls);
        if (absl::ConsumePrefix(&kv, "usec=")) (void)absl::SimpleAtoi(kv, &usec);
      }
      const absl::string_view name = line.substr(0, colon);
      if (name == "info" || name == "config|resetstat") continue;
      absl::StrAppend(&out, out.empty() ? "" : "; ", name, " ", calls, " ", absl::StrFormat("%.0f", usec / 1000.0));
    }
  }
  (void)c.Command({"CONFIG", "RESETSTAT"});
  return out;
}

// CPU seconds of redis-server's main thread (schedstat's first field: ns on a CPU).
double RedisCpu(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) + "/schedstat");
  unsigned long long ns = 0;
  f >> ns;
  return static_cast<double>(ns) * 1e-9;
}

net::Prefix Route(int i) {
  const uint8_t b[4] = {static_cast<uint8_t>(10 + i / 16777216), static_cast<uint8_t>(i / 65536 % 256),
                        static_cast<uint8_t>(i / 256 % 256), static_cast<uint8_t>(i % 256)};
  return net::Prefix::Make(net::Afi::kIpv4, b, 32);
}

rib::FibGroup Group(uint32_t w0, uint32_t w1) {
  return rib::FibGroup{1, {{*net::IpAddress::Parse("10.0.1.2"), w0}, {*net::IpAddress::Parse("10.0.2.2"), w1}}};
}

absl::StatusOr<std::string> Ifname(const net::IpAddress& gw) {
  return gw.ToString() == "10.0.1.2" ? std::string("Ethernet0") : std::string("Ethernet4");
}

// From the RIB learning peer 0's new bandwidth for all `n` prefixes to the consumer holding
// the reweighted group: milliseconds, and the APPL_DB keys written for it.
std::pair<double, uint64_t> RibReweight(const fib::sonic::test::RedisServer& redis, uint32_t n) {
  auto orch = fib::sonic::test::FakeOrchagent::Connect(redis.address());
  fib::sonic::AppldbOptions o;
  o.address = redis.address();
  o.io_timeout = std::chrono::seconds(30);
  auto backend = fib::sonic::AppldbBackend::Open(o, Ifname, nullptr);
  if (!orch.ok() || !backend.ok()) std::exit(1);
  fib::Reconciler r(**backend);
  if (!r.Start().ok()) std::exit(1);
  rib::AttributeStore store;
  rib::Rib rib(65000, rib::DecisionConfig{false, 8, 8, true});
  rib::NextHopGroupRegistry groups(rib::WeightsConfig{});
  std::vector<rib::PeerIndex> peers;
  for (int p = 0; p < 2; ++p) {
    rib::PeerInfo info;
    info.source.address = *net::IpAddress::Parse(p == 0 ? "10.0.1.2" : "10.0.2.2");
    info.source.router_id = p + 1;
    info.asn = 65001 + p;
    peers.push_back(rib.AddPeer(info));
  }
  std::vector<net::Nlri> nlri;
  for (uint32_t i = 0; i < n; ++i) nlri.push_back(net::Nlri{Route(static_cast<int>(i)), 0});
  auto attrs = [&](int p, double gbps) {
    wire::PathAttributes a;
    a.origin = wire::Origin::kIgp;
    a.as_path = wire::AsPath{{{wire::AsSegmentType::kSequence, {65001u + p}}}};
    a.next_hop = rib.peer(peers[p]).source.address;
    a.extended_communities.push_back(
        wire::LinkBandwidth::FromBitsPerSecond(65001 + p, gbps * 1e9, true).ToExtendedCommunity());
    return store.Intern(a);
  };
  auto run = [&] {
    std::vector<rib::PrefixMembers> batch;
    for (const auto& c : rib.TakeChanges()) batch.push_back(rib::MembersOf(rib, c.prefix));
    groups.Update(batch, absl::Now());
    r.Update(groups.TakeFibUpdate());
    return r.Flush();
  };
  rib.Announce(peers[0], nlri, attrs(0, 100));
  rib.Announce(peers[1], nlri, attrs(1, 100));
  run();
  while ((*orch)->routes().size() < n && (*orch)->connected()) (*orch)->WaitAndDrain(50);
  const uint64_t before = (*backend)->counters().group_writes + (*backend)->counters().route_writes;
  const auto t0 = Clock::now();
  rib.Announce(peers[0], nlri, attrs(0, 50));  // peer 0's LAG loses half its members
  run();
  const auto& g = (*orch)->groups();
  auto reweighted = [&] {
    return !g.empty() && g.begin()->second.size() == 2 && g.begin()->second[0].weight * 2 == g.begin()->second[1].weight;
  };
  while (!reweighted() && (*orch)->connected()) (*orch)->WaitAndDrain(10);
  const double ms = Seconds(Clock::now() - t0) * 1000;
  return {ms, (*backend)->counters().group_writes + (*backend)->counters().route_writes - before};
}

}  // namespace

// The ZMQ route path: N routes on one group until the ZMQ consumer holds them all.
struct ZmqRun {
  double seconds = 0, producer_seconds = 0, persisted_seconds = 0, reweight_ms = 0;
  uint64_t messages = 0, bytes = 0, persisted = 0, reweight_keys = 0, reweight_messages = 0;
  size_t violations = 0, failed = 0;
  bool ok = false;
};

ZmqRun RunZmq(const fib::sonic::test::RedisServer& redis, int routes, bool persist) {
  ZmqRun out;
  {
    auto c = fib::sonic::RedisConnection::Connect(redis.address(), std::chrono::seconds(30));
    if (!c.ok() || !(*c)->Command({"FLUSHALL"}).ok()) return out;
  }
  auto groups = fib::sonic::test::FakeOrchagent::Connect(redis.address(), 1024);
  if (!groups.ok()) return out;
  auto zmq = fib::sonic::test::FakeZmqOrchagent::Bind("tcp://127.0.0.1:*", groups->get());
  if (!zmq.ok()) return out;
  Clock::time_point consumer_done{};
  std::thread consumer([&] {
    while ((*zmq)->routes().size() < static_cast<size_t>(routes)) {
      if ((*zmq)->Receive(5000) == 0) break;  // nothing for 5 s: the producer failed
    }
    consumer_done = Clock::now();
  });
  fib::sonic::AppldbOptions o;
  o.address = redis.address();
  o.io_timeout = std::chrono::seconds(30);
  o.route_path = fib::sonic::AppldbOptions::RoutePath::kZmq;
  o.zmq_endpoint = (*zmq)->endpoint();
  o.zmq_persist = persist;
  auto backend = fib::sonic::AppldbBackend::Open(
      o, [](const net::IpAddress& gw) -> absl::StatusOr<std::string> { return gw.ToString() == "10.0.1.2" ? "Ethernet0" : "Ethernet4"; },
      nullptr);
  if (!backend.ok()) {
    std::fprintf(stderr, "%s\n", std::string(backend.status().message()).c_str());
    consumer.join();
    return out;
  }
  fib::Reconciler reconciler(**backend);
  if (!reconciler.Start().ok()) return out;
  rib::FibUpdate u;
  u.group_upserts = {Group(1, 3)};
  u.route_upserts.reserve(routes);
  for (int i = 0; i < routes; ++i) u.route_upserts.emplace_back(Route(i), 1);
  const auto t0 = Clock::now();
  reconciler.Update(u);
  const auto r = reconciler.Flush();
  out.producer_seconds = Seconds(Clock::now() - t0);
  // What bagd's event thread does once the flush is done (AppldbDriver): Service(), which lets
  // the persistence write start while the consumer may still be taking the last messages.
  (*backend)->Service();
  consumer.join();
  out.seconds = Seconds(consumer_done - t0);
  (*backend)->WaitPersisted();  // APPL_DB holds them all
  out.persisted_seconds = persist ? Seconds(Clock::now() - t0) : 0;
  out.failed = r.failed;
  out.messages = (*backend)->zmq_sender()->counters().messages;
  out.bytes = (*backend)->zmq_sender()->counters().bytes;
  out.persisted = (*backend)->counters().persist_writes;
  // Reweight under the N routes: one group write (Redis), no route message.
  const auto keys0 = (*groups)->stats().keys();
  const auto msg0 = out.messages;
  const auto w0 = Clock::now();
  reconciler.Update(rib::FibUpdate{{Group(5, 7)}, {}, {}, {}});
  reconciler.Flush();
  const std::string name = fib::sonic::GroupName(*reconciler.GroupObject(1));
  for (int i = 0; i < 1000 && (*groups)->groups().at(name)[1].weight != 7; ++i) (*groups)->WaitAndDrain(10);
  out.reweight_ms = Seconds(Clock::now() - w0) * 1000;
  out.reweight_keys = (*groups)->stats().keys() - keys0;
  out.reweight_messages = (*backend)->zmq_sender()->counters().messages - msg0;
  out.violations = (*zmq)->violations().size() + (*groups)->violations().size();
  out.ok = (*zmq)->routes().size() == static_cast<size_t>(routes);
  return out;
}

int main(int argc, char** argv) {
  int routes = 1000000, runs = 1, rib_routes = 100000, pop_batch = 128, keys_per_script = 512, in_flight = 64;
  bool producer_only = false;  // no consumer: the producer's own rate
  bool sequential = false;     // the consumer starts once the producer is done: each one's own rate
  bool phase_times = false, commandstats = false, zmq = false;
  int zmq_pairs = 3;
  auto merge = fib::sonic::test::FakeOrchagent::Merge::kOneHset;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--commandstats")) commandstats = true;
    if (!strcmp(argv[i], "--swss-pop")) merge = fib::sonic::test::FakeOrchagent::Merge::kHsetPerField;
    if (!strcmp(argv[i], "--rename-pop")) merge = fib::sonic::test::FakeOrchagent::Merge::kRenameFresh;
    if (!strcmp(argv[i], "--phase-times")) phase_times = true;
    if (!strcmp(argv[i], "--producer-only")) producer_only = true;
    if (!strcmp(argv[i], "--sequential")) sequential = true;
    if (!strcmp(argv[i], "--zmq")) zmq = true;
  }
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--routes")) routes = std::stoi(argv[i + 1]);
    if (!strcmp(argv[i], "--runs")) runs = std::stoi(argv[i + 1]);
    if (!strcmp(argv[i], "--rib-routes")) rib_routes = std::stoi(argv[i + 1]);
    // bagd's fib.appldb_pop_batch; the consumer pops 1024 per message (orchagent.sh's -b).
    if (!strcmp(argv[i], "--pop-batch")) pop_batch = std::stoi(argv[i + 1]);
    if (!strcmp(argv[i], "--keys-per-script")) keys_per_script = std::stoi(argv[i + 1]);
    if (!strcmp(argv[i], "--scripts-in-flight")) in_flight = std::stoi(argv[i + 1]);
    if (!strcmp(argv[i], "--zmq-pairs")) zmq_pairs = std::max(1, std::stoi(argv[i + 1]));
  }
  if (!fib::sonic::test::RedisServer::Available()) {
    std::fprintf(stderr, "appldb_bench: needs /usr/bin/redis-server\n");
    return 77;
  }
  for (int run = 0; run < runs; ++run) {
    fib::sonic::test::RedisServer redis;
    // One message per newly pending key (as swss publishes): 1M routes are ~40 MB of pub/sub
    // backlog while the consumer lags, past Redis' default pubsub output limit (32 MB), which
    // would disconnect it. (SONiC's own redis.conf decides this on a switch.)
    if (!redis.Start({"--client-output-buffer-limit", "pubsub 0 0 0"})) {
      std::fprintf(stderr, "appldb_bench: redis-server did not start\n");
      return 1;
    }
    // 1. Anchor.
    double anchor_s = 0, anchor_redis = 0, anchor_cpu = 0;
    Clock::time_point anchor_start{};
    {
      auto c = fib::sonic::RedisConnection::Connect(redis.address(), std::chrono::seconds(30));
      if (!c.ok()) return 1;
      const auto fields = fib::sonic::RouteFields("bagd-1", "bagd");
      if (commandstats) CommandStats(**c);
      const double r0 = RedisCpu(redis.pid()), c0 = ThreadCpu();
      const auto t0 = Clock::now();
      anchor_start = t0;
      for (int b = 0; b < routes; b += 1000) {
        std::vector<std::vector<std::string>> cmds;
        for (int i = b; i < std::min(routes, b + 1000); ++i) {
          std::vector<std::string> argv = {"HSET", "ROUTE_TABLE:" + fib::sonic::RouteKey(Route(i))};
          for (const auto& [f, v] : fields) {
            argv.push_back(f);
            argv.push_back(v);
          }
          cmds.push_back(std::move(argv));
        }
        if (!(*c)->Pipeline(cmds).status.ok()) return 1;
      }
      anchor_s = Seconds(Clock::now() - t0);
      anchor_redis = RedisCpu(redis.pid()) - r0;
      anchor_cpu = ThreadCpu() - c0;
      if (commandstats) std::printf("run %d: redis commands (calls ms), anchor: %s\n", run + 1, CommandStats(**c).c_str());
      if (!(*c)->Command({"FLUSHALL"}).ok()) return 1;
    }
    // 2. bagd, with the consumer in its own thread.
    auto orch = fib::sonic::test::FakeOrchagent::Connect(redis.address(), 1024, merge);
    if (!orch.ok()) return 1;
    std::atomic<bool> done{false};
    Clock::time_point consumer_done{};
    Clock::time_point consumer_start{};
    double consumer_cpu = 0, redis_at_consumer_done = 0;
    auto consume = [&] {
      consumer_start = Clock::now();
      const double c0 = ThreadCpu();
      while ((*orch)->routes().size() < static_cast<size_t>(routes) && (*orch)->connected()) (*orch)->WaitAndDrain(50);
      if (!(*orch)->connected()) std::fprintf(stderr, "appldb_bench: the consumer lost its connection\n");
      consumer_done = Clock::now();
      consumer_cpu = ThreadCpu() - c0;
      redis_at_consumer_done = RedisCpu(redis.pid());
      done = true;
    };
    std::thread consumer;
    if (!producer_only && !sequential) consumer = std::thread(consume);
    fib::sonic::AppldbOptions o;
    o.address = redis.address();
    o.io_timeout = std::chrono::seconds(30);
    o.pop_batch = static_cast<size_t>(pop_batch);
    o.keys_per_script = static_cast<size_t>(keys_per_script);
    o.scripts_per_pipeline = static_cast<size_t>(in_flight);
    auto backend = fib::sonic::AppldbBackend::Open(
        o, [](const net::IpAddress& gw) -> absl::StatusOr<std::string> { return gw.ToString() == "10.0.1.2" ? "Ethernet0" : "Ethernet4"; },
        nullptr);
    if (!backend.ok()) {
      std::fprintf(stderr, "%s\n", std::string(backend.status().message()).c_str());
      return 1;
    }
    fib::Reconciler reconciler(**backend);
    if (!reconciler.Start().ok()) return 1;
    rib::FibUpdate u;
    u.group_upserts = {Group(1, 3)};
    u.route_upserts.reserve(routes);
    for (int i = 0; i < routes; ++i) u.route_upserts.emplace_back(Route(i), 1);
    auto stats = fib::sonic::RedisConnection::Connect(redis.address(), std::chrono::seconds(30));
    if (!stats.ok()) return 1;
    if (commandstats) CommandStats(**stats);
    const double redis0 = RedisCpu(redis.pid()), producer_cpu0 = ThreadCpu();
    const auto t0 = Clock::now();
    reconciler.Update(u);
    const auto r = reconciler.Flush();
    const auto producer_done = Clock::now();
    const double producer_cpu = ThreadCpu() - producer_cpu0, redis_at_producer_done = RedisCpu(redis.pid());
    if (commandstats && (sequential || producer_only)) {
      std::printf("run %d: redis commands (calls ms), producer: %s\n", run + 1, CommandStats(**stats).c_str());
    }
    if (sequential) consumer = std::thread(consume);
    if (consumer.joinable()) consumer.join();
    if (commandstats && !producer_only) {
      std::printf("run %d: redis commands (calls ms), %s: %s\n", run + 1, sequential ? "consumer" : "producer and consumer",
                  CommandStats(**stats).c_str());
    }
    if (phase_times) {
      std::printf("run %d: phases (CLOCK_MONOTONIC s): anchor %.6f,%.6f producer %.6f,%.6f consumer %.6f,%.6f\n", run + 1,
                  Mono(anchor_start), Mono(anchor_start) + anchor_s, Mono(t0), Mono(producer_done),
                  Mono(consumer_start), Mono(consumer_done));
    }
    // CPU seconds: the anchor's client and Redis; bagd's producer thread, the consumer thread,
    // and Redis while the producer ran and until the consumer was done.
    std::printf("run %d: cpu s: anchor client %.2f redis %.2f (%.1f us/route); producer %.2f, redis during it %.2f; "
                "consumer %.2f, redis in all %.2f (%.1f us/route)\n",
                run + 1, anchor_cpu, anchor_redis, 1e6 * anchor_redis / routes, producer_cpu,
                redis_at_producer_done - redis0, consumer_cpu,
                (consumer_cpu > 0 ? redis_at_consumer_done : redis_at_producer_done) - redis0,
                1e6 * ((consumer_cpu > 0 ? redis_at_consumer_done : redis_at_producer_done) - redis0) / routes);
    if (sequential) {
      std::printf("run %d: %d routes, one after the other: anchor %.2f s; bagd producer %.2f s (%.0f%% of the anchor "
                  "rate); then the consumer alone %.2f s (%.0f routes/s)\n",
                  run + 1, routes, anchor_s, Seconds(producer_done - t0), 100.0 * anchor_s / Seconds(producer_done - t0),
                  Seconds(consumer_done - consumer_start), routes / Seconds(consumer_done - consumer_start));
      continue;
    }
    if (producer_only) {
      std::printf("run %d: %d routes: anchor HSET loop %.2f s (%.0f routes/s); bagd producer %.2f s (%.0f routes/s, "
                  "%.0f%% of the anchor rate), no consumer\n",
                  run + 1, routes, anchor_s, routes / anchor_s, Seconds(producer_done - t0),
                  routes / Seconds(producer_done - t0), 100.0 * anchor_s / Seconds(producer_done - t0));
      continue;
    }
    if (r.failed != 0) std::fprintf(stderr, "appldb_bench: %zu writes failed\n", r.failed);
    const double bagd_s = Seconds(consumer_done - t0);
    // 3. Reweight: from the update to the consumer holding the new weights.
    const auto w0 = Clock::now();
    reconciler.Update(rib::FibUpdate{{Group(5, 7)}, {}, {}, {}});
    reconciler.Flush();
    const std::string name = fib::sonic::GroupName(*reconciler.GroupObject(1));
    while ((*orch)->groups().at(name)[1].weight != 7) (*orch)->WaitAndDrain(10);
    const double reweight_ms = Seconds(Clock::now() - w0) * 1000;
    std::printf(
        "run %d: %d routes: anchor HSET loop %.2f s (%.0f routes/s); bagd %.2f s until the consumer had all "
        "(%.0f routes/s, %.0f%% of the anchor rate), producer done after %.2f s, %llu scripts, %zu pops; reweight %.2f ms "
        "(1 group write; violations %zu)\n",
        run + 1, routes, anchor_s, routes / anchor_s, bagd_s, routes / bagd_s, 100.0 * anchor_s / bagd_s,
        Seconds(producer_done - t0), static_cast<unsigned long long>((*backend)->counters().scripts),
        (*orch)->stats().pops, reweight_ms,
        (*orch)->violations().size());
    if (zmq) {
      // 4. The ZMQ route path, with and without the persistence write, alternating (the
      // order of a pair changes each time), medians of --zmq-pairs pairs.
      std::vector<ZmqRun> with, without;
      for (int k = 0; k < zmq_pairs; ++k) {
        for (const bool persist : {k % 2 == 1, k % 2 == 0}) {
          const ZmqRun z = RunZmq(redis, routes, persist);
          (persist ? with : without).push_back(z);
          std::printf("run %d: %d routes over ZMQ%s: %.2f s until the consumer had all (%.0f routes/s, %.0f%% of the "
                      "anchor rate, %.1fx the Redis path), producer done after %.2f s, %llu messages (%.1f MB), %llu "
                      "main-hash writes (APPL_DB complete after %.2f s); reweight %.2f ms (%llu group key, %llu route "
                      "messages; violations %zu)%s\n",
                      run + 1, routes, persist ? " with the persistence write" : " without persistence", z.seconds,
                      routes / z.seconds, 100.0 * anchor_s / z.seconds, bagd_s / z.seconds, z.producer_seconds,
                      static_cast<unsigned long long>(z.messages), z.bytes / 1e6,
                      static_cast<unsigned long long>(z.persisted), z.persisted_seconds, z.reweight_ms,
                      static_cast<unsigned long long>(z.reweight_keys),
                      static_cast<unsigned long long>(z.reweight_messages), z.violations,
                      z.ok && z.failed == 0 ? "" : " INCOMPLETE");
          std::fflush(stdout);
        }
      }
      auto median = [](std::vector<ZmqRun> v) {
        std::sort(v.begin(), v.end(), [](const ZmqRun& a, const ZmqRun& b) { return a.seconds < b.seconds; });
        return v[v.size() / 2].seconds;
      };
      const double m_with = median(with), m_without = median(without);
      std::printf("run %d: ZMQ medians of %d: with the persistence write %.2f s (%.0f%% of the anchor rate), without "
                  "%.2f s (%.0f%%); the persistence write costs the ZMQ path %.0f%%\n",
                  run + 1, zmq_pairs, m_with, 100.0 * anchor_s / m_with, m_without, 100.0 * anchor_s / m_without,
                  100.0 * (m_with - m_without) / m_without);
    }
    if (rib_routes > 0) {
      if (!(*orch)->connected()) return 1;
      auto c = fib::sonic::RedisConnection::Connect(redis.address(), std::chrono::seconds(30));
      if (!c.ok() || !(*c)->Command({"FLUSHALL"}).ok()) return 1;
      const auto [ms, keys] = RibReweight(redis, static_cast<uint32_t>(rib_routes));
      std::printf("run %d: reweight of %d prefixes, RIB -> weights -> APPL_DB -> consumer: %.1f ms, %llu APPL_DB keys "
                  "written\n",
                  run + 1, rib_routes, ms, static_cast<unsigned long long>(keys));
    }
  }
  return 0;
}
