// mrt_dump_bench: what a TABLE_DUMP_V2 of a big RIB costs bagd (issue 44): the time and CPU
// to write it, memory while doing it, and the longest the event thread was held.
//
// The daemon's own MrtStage runs on a real io_context with the AsioClock, as in bagd: the
// table is encoded in slices on the event thread and written by the writer thread. A 1 ms
// probe timer on the same io_context stands in for sessions: its worst lateness is the
// longest the event thread could not serve a socket or a keepalive timer.
//
//   mrt_dump_bench [--prefixes N] [--peers P] [--dir DIR] [--slice-us U]
//
// N IPv4 /24s (default 500,000) with a path from each of P peers (default 2): N*P paths;
// every 16th prefix's paths carry their own attribute set (communities), the rest share one
// per peer, all with a link-bandwidth extended community. Prints one JSON object.
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bgpd/daemon/mrt_stage.h"
#include "bgpd/session/clock.h"
#include "rib/attribute_store.h"
#include "rib/rib.h"

namespace {

using SteadyClock = std::chrono::steady_clock;

double Ms(SteadyClock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

long StatusKb(const char* key) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) == 0) return std::strtol(line.c_str() + std::string_view(key).size(), nullptr, 10);
  }
  return -1;
}

double ThreadCpuMs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

double ProcessCpuMs() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace bagd;
  size_t prefixes = 500'000, peers = 2;
  long slice_us = 5000;
  std::string dir = "/tmp";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string_view a = argv[i];
    if (a == "--prefixes") prefixes = std::strtoull(argv[i + 1], nullptr, 10);
    else if (a == "--peers") peers = std::strtoull(argv[i + 1], nullptr, 10);
    else if (a == "--slice-us") slice_us = std::strtol(argv[i + 1], nullptr, 10);
    else if (a == "--dir") dir = argv[i + 1];
    else {
      std::fprintf(stderr, "usage: mrt_dump_bench [--prefixes N] [--peers P] [--dir DIR] [--slice-us U]\n");
      return 2;
    }
  }
  rib::AttributeStore store;
  rib::Rib rib(65000, rib::DecisionConfig{});
  std::vector<rib::PeerIndex> index;
  std::vector<wire::PathAttributes> base;
  for (size_t p = 0; p < peers; ++p) {
    rib::PeerInfo info;
    const std::string addr = absl::StrCat("10.0.", p / 250, ".", p % 250 + 1);
    info.source.address = *net::IpAddress::Parse(addr);
    info.source.router_id = static_cast<uint32_t>(p + 1);
    info.asn = static_cast<uint32_t>(65001 + p);
    info.name = addr;
    index.push_back(rib.AddPeer(info));
    wire::PathAttributes a;
    a.origin = wire::Origin::kIgp;
    a.as_path = wire::AsPath{{{wire::AsSegmentType::kSequence, {static_cast<uint32_t>(65001 + p), 65100, 65200}}}};
    a.next_hop = info.source.address;
    a.extended_communities.push_back(wire::ExtendedCommunity{0x0004fde94cee6b28ull});
    base.push_back(a);
  }
  const auto build_start = SteadyClock::now();
  std::vector<net::Nlri> batch;
  for (size_t p = 0; p < peers; ++p) {
    rib::AttrRef shared = store.Intern(base[p]);
    for (size_t i = 0; i < prefixes;) {
      batch.clear();
      for (; i < prefixes && batch.size() < 16; ++i) {
        const uint32_t a = 0x14000000u + static_cast<uint32_t>(i << 8);
        const uint8_t b[4] = {static_cast<uint8_t>(a >> 24), static_cast<uint8_t>(a >> 16), static_cast<uint8_t>(a >> 8), 0};
        batch.push_back(net::Nlri{net::Prefix::Make(net::Afi::kIpv4, b, 24), 0});
      }
      // Every 16th group of prefixes gets its own set: many distinct attribute sets.
      if ((i / 16) % 16 == 0) {
        wire::PathAttributes own = base[p];
        own.communities = {static_cast<uint32_t>(65000u << 16 | (i & 0xffff))};
        rib.Announce(index[p], batch, store.Intern(own));
      } else {
        rib.Announce(index[p], batch, shared);
      }
    }
  }
  rib.TakeChanges();
  const double build_ms = Ms(SteadyClock::now() - build_start);
  const long rss_before = StatusKb("VmRSS:");

  boost::asio::io_context io;
  session::AsioClock clock(io);
  daemon::MrtStage::Options o;
  o.clock = &clock;
  o.post = [&io](std::function<void()> f) { boost::asio::post(io, std::move(f)); };
  o.rib = [&rib]() -> const rib::Rib& { return rib; };
  o.slice_budget = std::chrono::microseconds(slice_us);
  daemon::MrtStage stage(std::move(o));

  // The probe: a 1 ms timer; its lateness is how long the event thread was busy elsewhere
  // (or, on a loaded machine, not scheduled at all: the baseline below runs the probe alone
  // for as long, so the two can be told apart).
  boost::asio::steady_timer probe(io);
  double worst_late_ms = 0;
  std::vector<double> lateness;
  long rss_peak = rss_before;
  bool finished = false;
  std::function<void()> arm = [&] {
    const auto due = SteadyClock::now() + std::chrono::milliseconds(1);
    probe.expires_at(due);
    probe.async_wait([&, due](const boost::system::error_code& ec) {
      if (ec || finished) return;
      const double late = Ms(SteadyClock::now() - due);
      worst_late_ms = std::max(worst_late_ms, late);
      lateness.push_back(late);
      rss_peak = std::max(rss_peak, StatusKb("VmRSS:"));
      arm();
    });
  };
  auto p99 = [](std::vector<double> v) {
    if (v.empty()) return 0.0;
    std::sort(v.begin(), v.end());
    return v[v.size() * 99 / 100];
  };
  // Baseline: the probe alone for 1 s.
  {
    boost::asio::steady_timer stop(io);
    stop.expires_after(std::chrono::seconds(1));
    stop.async_wait([&](const boost::system::error_code&) {
      finished = true;
      probe.cancel();
    });
    arm();
    io.run();
    io.restart();
  }
  const double baseline_worst_ms = worst_late_ms, baseline_p99_ms = p99(lateness);
  worst_late_ms = 0;
  lateness.clear();
  finished = false;
  arm();
  const std::string path = absl::StrCat(dir, "/mrt_dump_bench.", ::getpid(), ".mrt");
  daemon::MrtDumpResult result;
  const double cpu_before = ProcessCpuMs(), io_cpu_before = ThreadCpuMs();
  const auto start = SteadyClock::now();
  stage.DumpTable(path, [&](const daemon::MrtDumpResult& r) {
    result = r;
    finished = true;
    probe.cancel();
  });
  io.run();
  const double wall_ms = Ms(SteadyClock::now() - start);
  const double cpu_ms = ProcessCpuMs() - cpu_before, io_cpu_ms = ThreadCpuMs() - io_cpu_before;
  std::printf(
      "{\"prefixes\":%zu,\"paths\":%zu,\"attribute_sets\":%zu,\"build_ms\":%.0f,\"ok\":%s,\"dump_paths\":%llu,"
      "\"file_bytes\":%llu,\"wall_ms\":%.1f,\"cpu_ms\":%.1f,\"event_thread_cpu_ms\":%.1f,"
      "\"writer_thread_cpu_ms\":%.1f,\"longest_slice_ms\":%.2f,\"longest_slice_cpu_ms\":%.2f,\"worst_probe_lateness_ms\":%.2f,"
      "\"probe_p99_ms\":%.2f,\"baseline_worst_probe_lateness_ms\":%.2f,\"baseline_probe_p99_ms\":%.2f,"
      "\"rss_before_kb\":%ld,\"rss_peak_kb\":%ld,\"slice_budget_us\":%ld}\n",
      rib.prefix_count(), rib.path_count(), store.size(), build_ms, result.status.ok() ? "true" : "false",
      static_cast<unsigned long long>(result.counts.paths), static_cast<unsigned long long>(result.bytes), wall_ms,
      cpu_ms, io_cpu_ms, cpu_ms - io_cpu_ms, result.longest_slice_seconds * 1e3, result.longest_slice_cpu_seconds * 1e3,
      worst_late_ms, p99(lateness),
      baseline_worst_ms, baseline_p99_ms, rss_before, rss_peak,
      slice_us);
  if (!result.status.ok()) std::fprintf(stderr, "%s\n", result.status.ToString().c_str());
  ::unlink(path.c_str());
  return result.status.ok() ? 0 : 1;
}
