// The export alone (issue 42, update groups): the routing core and the advertiser in one
// thread, without sessions, sockets or decoding, on W3x's shape: P eBGP peers x the same 1M/P
// prefixes, each peer its own AS and link bandwidth (100/40/25/10G by peer), every peer
// established and exported to (default export, next-hop-self with its own local address),
// 8-way multipath with AS-path relax, the peers interleaved one UPDATE of 1000 prefixes at a
// time with a flush after each (as the event loop reads and flushes them). At the end the
// clock moves on so deferred bandwidth re-advertisements go out too.
//
// Each run is made twice, interleaved: with update groups and with every neighbor alone
// (Advertiser::set_shared_export(false)); the UPDATE bytes sent must be the same.
//
// usage: export_bench [--runs N] [--peers P,...]   prints median CPU ms per run and ns per path
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <deque>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "bgpd/daemon/advertiser.h"
#include "bgpd/daemon/routing_core.h"
#include "bgpd/session/clock.h"
#include "bgpd/session/log.h"
#include "wire/link_bandwidth.h"

using namespace bagd;

namespace {

class Discard final : public daemon::Outbound {
 public:
  Discard(std::string name, net::IpAddress local) : name_(std::move(name)), local_(local) {}
  const std::string& name() const override { return name_; }
  bool established() const override { return true; }
  bool ebgp() const override { return true; }
  bool family_negotiated(net::Family f) const override { return f == net::Family::kIpv4Unicast; }
  wire::CodecContext EncodeContext() const override { return {}; }
  std::optional<net::IpAddress> LocalAddress() const override { return local_; }
  uint32_t advertisement_interval_s() const override { return 0; }
  void SendUpdates(std::vector<wire::Bytes> messages) override {
    for (const auto& m : messages) {
      bytes += m.size();
      // A checksum of what was sent, so the two ways can be compared.
      for (size_t i = 0; i < m.size(); i += 61) sum = sum * 1099511628211ull + m[i] + i;
    }
    updates += messages.size();
  }
  void SendRouteRefresh(const wire::RouteRefreshMessage&) override {}
  void Advertised(size_t) override {}

  uint64_t bytes = 0, updates = 0, sum = 0;

 private:
  std::string name_;
  net::IpAddress local_;
};

class Sink final : public rib::RouteChangeListener {
 public:
  void OnRouteChanges(std::span<const rib::RouteChange>) override {}
};

double CpuMs() {
  timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

struct Result {
  double ms = 0;
  uint64_t bytes = 0, updates = 0, sum = 0, reused = 0, passes = 0;
};

Result RunOnce(uint32_t peers, bool shared) {
  const uint32_t prefixes = 1'000'000 / peers;
  session::ManualClock clock;
  daemon::RoutingCore core(65000, rib::DecisionConfig{false, 8, 8, true});
  Sink sink;
  daemon::Advertiser adv(core, sink, clock, 65000);
  adv.set_shared_export(shared);
  std::deque<Discard> outs;
  std::vector<rib::PeerIndex> index;
  std::vector<wire::UpdateMessage> updates;  // per peer, its NLRI filled per run
  const double gbps[] = {100, 40, 25, 10};
  for (uint32_t p = 0; p < peers; ++p) {
    const auto address = net::IpAddress::V4(0x0a000002u + (p << 8));
    outs.emplace_back(absl::StrFormat("p%d", p), net::IpAddress::V4(0x0a000001u + (p << 8)));
    rib::PeerInfo info;
    info.source.address = address;
    info.source.ebgp = true;
    info.source.router_id = p + 1;
    info.asn = 65001 + p;
    info.name = outs.back().name();
    index.push_back(core.AddPeer(info, address, daemon::NeighborPolicies{}));
    adv.AddPeer(index.back(), outs.back(), daemon::ExportConfig{});
    adv.SessionUp(index.back());
    wire::UpdateMessage u;
    u.attrs.origin = wire::Origin::kIgp;
    u.attrs.as_path = wire::AsPath{{{wire::AsSegmentType::kSequence, {65001 + p}}}};
    u.attrs.next_hop = address;
    u.attrs.extended_communities = {
        wire::LinkBandwidth::FromBitsPerSecond(65001 + p, gbps[p % 4] * 1e9, true).ToExtendedCommunity()};
    updates.push_back(std::move(u));
  }
  const double start = CpuMs();
  for (uint32_t first = 0; first < prefixes; first += 1000) {
    for (uint32_t p = 0; p < peers; ++p) {
      wire::UpdateMessage& u = updates[p];
      u.nlri.clear();
      for (uint32_t k = first; k < std::min(prefixes, first + 1000); ++k) {
        const uint32_t a = 0x0b000000u + (k << 8);
        const uint8_t b[4] = {uint8_t(a >> 24), uint8_t(a >> 16), uint8_t(a >> 8), 0};
        u.nlri.push_back(net::Nlri{net::Prefix::Make(net::Afi::kIpv4, b, 24), 0});
      }
      core.Ingest(index[p], u);
      adv.Flush();
    }
  }
  clock.Advance(60'000);  // deferred re-advertisements
  Result r;
  r.ms = CpuMs() - start;
  for (const Discard& d : outs) {
    r.bytes += d.bytes;
    r.updates += d.updates;
    r.sum = r.sum * 31 + d.sum;
  }
  r.reused = adv.export_stats().reused;
  r.passes = adv.export_stats().passes;
  return r;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int runs = 5;
  std::vector<uint32_t> sizes = {4, 32, 128};
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--runs") == 0 && i + 1 < argc) {
      runs = std::atoi(argv[++i]);
    } else if (std::strcmp(argv[i], "--peers") == 0 && i + 1 < argc) {
      sizes.clear();
      for (absl::string_view s : absl::StrSplit(argv[++i], ',')) {
        uint32_t n;
        if (!absl::SimpleAtoi(s, &n) || n == 0) return std::fprintf(stderr, "bad --peers\n"), 2;
        sizes.push_back(n);
      }
    } else {
      std::fprintf(stderr, "usage: export_bench [--runs N] [--peers P,...]\n");
      return 2;
    }
  }
  log::SetLevel(log::Level::kWarning);
  std::printf("| peers | paths | groups: CPU ms (ns/path) | alone: CPU ms (ns/path) | alone / groups | UPDATEs | MB sent | same bytes | reused |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|\n");
  for (uint32_t peers : sizes) {
    std::vector<double> with, without;
    Result g, a;
    for (int r = 0; r < runs; ++r) {  // interleaved
      g = RunOnce(peers, true);
      a = RunOnce(peers, false);
      with.push_back(g.ms);
      without.push_back(a.ms);
    }
    const double paths = double(1'000'000 / peers) * peers;
    const double mg = Median(with), ma = Median(without);
    std::printf("| %u | %.0f | %.0f (%.0f) | %.0f (%.0f) | %.2fx | %llu | %.1f | %s | %llu of %llu passes |\n", peers,
                paths, mg, mg * 1e6 / paths, ma, ma * 1e6 / paths, ma / mg, (unsigned long long)g.updates,
                g.bytes / 1e6, (g.sum == a.sum && g.bytes == a.bytes) ? "yes" : "NO",
                (unsigned long long)g.reused, (unsigned long long)g.passes);
    std::fflush(stdout);
  }
  return 0;
}
