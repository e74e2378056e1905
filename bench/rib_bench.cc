// The RIB alone (issue 42): the decision's cost per path as the paths per prefix grow, without
// sessions, decoding or the stages after the RIB. 1M paths as the ingest workloads send them:
// P peers x the same 1M/P prefixes, each peer its own AS and link bandwidth, peers interleaved
// one UPDATE-sized run of 1000 prefixes at a time (as the event loop reads them), 8-way
// multipath with AS-path relax (1 peer: none), TakeChanges every 256 runs (a flush).
//
// usage: rib_bench [--runs N]   prints median ns per path for P = 1, 4, 32, 128
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "rib/rib.h"
#include "wire/link_bandwidth.h"

using namespace bagd;

namespace {

rib::AttrRef Attrs(rib::AttributeStore& store, uint32_t peer) {
  wire::PathAttributes a;
  a.origin = wire::Origin::kIgp;
  a.as_path = wire::AsPath{{{wire::AsSegmentType::kSequence, {65001 + peer}}}};
  a.next_hop = net::IpAddress::V4(0x0a000002u + (peer << 8));
  const double gbps[] = {100, 40, 25, 10};
  a.extended_communities = {wire::LinkBandwidth::FromBitsPerSecond(65001 + peer, gbps[peer % 4] * 1e9, true)
                                .ToExtendedCommunity()};
  return store.Intern(a);
}

double RunOnce(uint32_t peers) {
  const uint32_t prefixes = 1'000'000 / peers;
  rib::DecisionConfig cfg;
  if (peers > 1) {
    cfg.maximum_paths_ebgp = 8;
    cfg.as_path_multipath_relax = true;
  }
  rib::AttributeStore store;
  rib::Rib rib(65000, cfg);
  std::vector<rib::AttrRef> attrs;
  for (uint32_t p = 0; p < peers; ++p) {
    rib::PeerInfo info;
    info.source.address = net::IpAddress::V4(0x0a000002u + (p << 8));
    info.source.router_id = 0x0aff0101u + p;
    info.asn = 65001 + p;
    info.name = std::to_string(p);
    rib.AddPeer(info);
    attrs.push_back(Attrs(store, p));
  }
  constexpr uint32_t kRun = 1000;
  std::vector<net::Nlri> nlri(kRun);
  size_t runs = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (uint32_t base = 0; base < prefixes; base += kRun) {
    const uint32_t n = std::min(kRun, prefixes - base);
    for (uint32_t p = 0; p < peers; ++p) {
      for (uint32_t i = 0; i < n; ++i) {
        const uint32_t a = 0x0b000000u + ((base + i) << 8);
        const uint8_t b[4] = {uint8_t(a >> 24), uint8_t(a >> 16), uint8_t(a >> 8), uint8_t(a)};
        nlri[i] = net::Nlri{net::Prefix::Make(net::Afi::kIpv4, b, 24), 0};
      }
      rib.Announce(p, std::span<const net::Nlri>(nlri.data(), n), attrs[p]);
      if (++runs % 256 == 0) rib.Recycle(rib.TakeChanges());
    }
  }
  rib.Recycle(rib.TakeChanges());
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (rib.path_count() != size_t{prefixes} * peers) std::fprintf(stderr, "path count %zu\n", rib.path_count());
  return s * 1e9 / (double(prefixes) * peers);
}

}  // namespace

int main(int argc, char** argv) {
  int runs = 5;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::string(argv[i]) == "--runs") runs = std::atoi(argv[i + 1]);
  }
  std::printf("| peers (paths per prefix) | ns per path, median of %d | min | max |\n|---|---|---|---|\n", runs);
  for (uint32_t peers : {1u, 4u, 32u, 128u}) {
    std::vector<double> v;
    for (int r = 0; r < runs; ++r) v.push_back(RunOnce(peers));
    std::sort(v.begin(), v.end());
    std::printf("| %u | %.0f | %.0f | %.0f |\n", peers, v[v.size() / 2], v.front(), v.back());
    std::fflush(stdout);
  }
}
