// routes_page_bench: how long `bagctl show routes` holds bagd's event thread, on a synthetic
// RIB (issue 11, defect 4). ListRoutes builds one page at a time on the event thread
// (daemon::ListRoutesPage, bgpd/daemon/rib_view.cc); the longest page is the longest stall.
// For comparison, the same function asked for the whole table in one page: what building the
// answer at once (as ListRoutes did before it streamed) costs the event thread.
//
//   routes_page_bench [--prefixes N] [--peers P] [--page-size K]
//
// N IPv4 /24s (default 1,000,000), each with a path from each of P peers (default 1), the
// same attributes per peer. Prints one JSON object.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bgpd/daemon/rib_view.h"
#include "rib/attribute_store.h"
#include "rib/rib.h"

namespace {

using Clock = std::chrono::steady_clock;

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

}  // namespace

int main(int argc, char** argv) {
  using namespace bagd;
  size_t prefixes = 1'000'000, peers = 1, page_size = 1000;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string_view a = argv[i];
    const size_t v = std::strtoull(argv[i + 1], nullptr, 10);
    if (a == "--prefixes") prefixes = v;
    else if (a == "--peers") peers = v;
    else if (a == "--page-size") page_size = v;
    else {
      std::fprintf(stderr, "usage: routes_page_bench [--prefixes N] [--peers P] [--page-size K]\n");
      return 2;
    }
  }
  rib::AttributeStore store;
  rib::Rib rib(65000, rib::DecisionConfig{});
  std::vector<rib::PeerIndex> peer_index;
  std::vector<rib::AttrRef> attrs;
  for (size_t p = 0; p < peers; ++p) {
    rib::PeerInfo info;
    const std::string addr = absl::StrCat("10.0.0.", p + 1);
    info.source.address = *net::IpAddress::Parse(addr);
    info.source.router_id = static_cast<uint32_t>(p + 1);
    info.source.ebgp = true;
    info.asn = static_cast<uint32_t>(65001 + p);
    info.name = addr;
    peer_index.push_back(rib.AddPeer(info));
    wire::PathAttributes a;
    a.origin = wire::Origin::kIgp;
    a.as_path = wire::AsPath{{{wire::AsSegmentType::kSequence, {static_cast<uint32_t>(65001 + p), 65100}}}};
    a.next_hop = info.source.address;
    attrs.push_back(store.Intern(a));
  }
  std::vector<net::Nlri> batch;
  for (size_t p = 0; p < peers; ++p) {
    for (size_t i = 0; i < prefixes;) {
      batch.clear();
      for (; i < prefixes && batch.size() < 4096; ++i) {
        const uint32_t a = 0x14000000u + static_cast<uint32_t>(i << 8);  // 20.0.0.0/24, 20.0.1.0/24, ...
        const uint8_t b[4] = {static_cast<uint8_t>(a >> 24), static_cast<uint8_t>(a >> 16), static_cast<uint8_t>(a >> 8), 0};
        batch.push_back(net::Nlri{net::Prefix::Make(net::Afi::kIpv4, b, 24), 0});
      }
      rib.Announce(peer_index[p], batch, attrs[p]);
    }
  }
  rib.TakeChanges();

  // Pages, as the control server asks for them.
  control::v1::ListRoutesRequest request;
  std::vector<double> page_ms;
  size_t routes = 0;
  const auto start = Clock::now();
  while (true) {
    const auto t0 = Clock::now();
    auto page = daemon::ListRoutesPage(rib, request, page_size);
    page_ms.push_back(Ms(Clock::now() - t0));
    if (!page.ok()) return 1;
    routes += page->routes.size();
    if (!page->more) break;
    request.set_after(page->routes.back().prefix());
  }
  const double pages_total = Ms(Clock::now() - start);
  std::vector<double> sorted = page_ms;
  std::sort(sorted.begin(), sorted.end());

  // The whole table at once.
  const auto t0 = Clock::now();
  auto whole = daemon::ListRoutesPage(rib, control::v1::ListRoutesRequest(), prefixes + 1);
  const double whole_ms = Ms(Clock::now() - t0);
  std::printf(
      "{\"prefixes\": %zu, \"peers\": %zu, \"page_size\": %zu, \"pages\": %zu, \"routes\": %zu, "
      "\"page_ms_median\": %.2f, \"page_ms_p99\": %.2f, \"page_ms_max\": %.2f, \"pages_total_ms\": %.0f, "
      "\"whole_table_at_once_ms\": %.0f, \"whole_table_routes\": %zu}\n",
      prefixes, peers, page_size, page_ms.size(), routes, sorted[sorted.size() / 2],
      sorted[sorted.size() * 99 / 100], sorted.back(), pages_total, whole_ms, whole.ok() ? whole->routes.size() : 0);
  return 0;
}
