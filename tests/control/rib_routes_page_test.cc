// daemon::ListRoutesPage on a real RIB: the pages a ListRoutes stream is made of. Each
// page starts after the cursor in the RIB's own (B-tree) order, so a walk in pages sees
// every prefix once, in order, also when routes come and go between pages.
#include <catch2/catch.hpp>
#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "bgpd/daemon/rib_view.h"
#include "tests/rib/rib_test_support.h"

using namespace bagd;
using namespace bagd::rib;
using namespace bagd::rib::test;

namespace {

bool TableOrder(const std::string& a, const std::string& b) {
  const auto pa = *net::Prefix::Parse(a), pb = *net::Prefix::Parse(b);
  if (pa.afi() != pb.afi()) return pa.afi() < pb.afi();
  return pa < pb;
}

struct Walk {
  std::vector<std::string> prefixes;
  std::vector<size_t> page_sizes;
  std::vector<size_t> page_paths;
};

// Pages of `page` routes as the control server asks for them; `between(n)` runs before
// page n (n >= 1).
Walk WalkPages(const Rib& rib, control::v1::ListRoutesRequest request, size_t page,
               const std::function<void(int)>& between = nullptr) {
  Walk w;
  for (int n = 0;; ++n) {
    if (n > 0 && between) between(n);
    auto got = daemon::ListRoutesPage(rib, request, page);
    REQUIRE(got.ok());
    size_t paths = 0;
    for (const auto& r : got->routes) {
      w.prefixes.push_back(r.prefix());
      paths += static_cast<size_t>(r.paths_size());
    }
    w.page_sizes.push_back(got->routes.size());
    w.page_paths.push_back(paths);
    if (!got->more) return w;
    REQUIRE(!got->routes.empty());
    request.set_after(got->routes.back().prefix());
  }
}

struct Table {
  AttributeStore store;
  Rib rib{65000, DecisionConfig{}};
  PeerIndex p1 = rib.AddPeer(Peer("10.0.0.1", 1, 65001));
  PeerIndex p2 = rib.AddPeer(Peer("10.0.0.2", 2, 65002));
  void Add(const std::string& prefix, PeerIndex peer) {
    const net::Nlri n[] = {N(prefix.c_str())};
    rib.Announce(peer, n, AttrsBuilder().Path({65001 + peer}).NextHop(peer == p1 ? "10.0.0.1" : "10.0.0.2").In(store));
  }
  void Remove(const std::string& prefix, PeerIndex peer) {
    const net::Nlri n[] = {N(prefix.c_str())};
    rib.Withdraw(peer, n);
  }
};

}  // namespace

TEST_CASE("RIB pages: every prefix once, in table order, pages bounded", "[control][rib][routes][stream]") {
  Table t;
  std::vector<std::string> all;
  for (int i = 0; i < 2500; ++i) all.push_back(absl::StrCat("20.", i / 256, ".", i % 256, ".0/24"));
  for (int i = 1; i <= 300; ++i) all.push_back(absl::StrFormat("2001:db8:%x::/48", i));  // canonical text
  all.push_back("20.0.0.0/16");  // same address, shorter: before 20.0.0.0/24
  for (const auto& p : all) t.Add(p, t.p1);
  std::sort(all.begin(), all.end(), TableOrder);

  SECTION("both families") {
    Walk w = WalkPages(t.rib, {}, 1000);
    CHECK(w.prefixes == all);
    CHECK(w.page_sizes == std::vector<size_t>{1000, 1000, 801});
  }
  SECTION("IPv6 only starts past every IPv4 prefix; IPv4 only stops before IPv6") {
    control::v1::ListRoutesRequest r;
    r.set_family("ipv6-unicast");
    Walk w6 = WalkPages(t.rib, r, 1000);
    CHECK(w6.prefixes == std::vector<std::string>(all.end() - 300, all.end()));
    r.set_family("ipv4-unicast");
    Walk w4 = WalkPages(t.rib, r, 1000);
    CHECK(w4.prefixes == std::vector<std::string>(all.begin(), all.end() - 300));
    CHECK(w4.page_sizes == std::vector<size_t>{1000, 1000, 501});
  }
  SECTION("a prefix query is one page with that route") {
    control::v1::ListRoutesRequest r;
    r.set_prefix("20.0.1.9");
    auto got = daemon::ListRoutesPage(t.rib, r, 1000);
    REQUIRE(got.ok());
    REQUIRE(got->routes.size() == 1);
    CHECK(got->routes[0].prefix() == "20.0.1.0/24");
    CHECK_FALSE(got->more);
  }
}

TEST_CASE("RIB pages: routes added and withdrawn between pages", "[control][rib][routes][stream]") {
  Table t;
  std::vector<std::string> all;
  for (int i = 0; i < 3000; ++i) all.push_back(absl::StrCat("20.", i / 256, ".", i % 256, ".0/24"));
  for (const auto& p : all) t.Add(p, t.p1);
  std::sort(all.begin(), all.end(), TableOrder);
  const std::string removed_behind = all[5], removed_ahead = all[2500], cursor_route = all[999];
  const std::string added_behind = "20.0.1.128/25", added_ahead = "20.11.0.128/25";
  Walk w = WalkPages(t.rib, {}, 1000, [&](int page) {
    if (page != 1) return;
    t.Remove(removed_behind, t.p1);
    t.Remove(removed_ahead, t.p1);
    t.Remove(cursor_route, t.p1);  // the cursor itself may go: the walk resumes after it
    t.Add(added_behind, t.p2);
    t.Add(added_ahead, t.p2);
    t.Add("2001:db8::/32", t.p2);
  });
  CHECK(std::is_sorted(w.prefixes.begin(), w.prefixes.end(), TableOrder));
  CHECK(std::set<std::string>(w.prefixes.begin(), w.prefixes.end()).size() == w.prefixes.size());
  auto shown = [&](const std::string& p) { return std::find(w.prefixes.begin(), w.prefixes.end(), p) != w.prefixes.end(); };
  CHECK(shown(removed_behind));
  CHECK(shown(cursor_route));
  CHECK_FALSE(shown(removed_ahead));
  CHECK_FALSE(shown(added_behind));
  CHECK(shown(added_ahead));
  CHECK(w.prefixes.back() == "2001:db8::/32");
  CHECK(w.prefixes.size() == 3000 - 1 + 1 + 1);
}

TEST_CASE("RIB pages: a page of prefixes with many paths ends early", "[control][rib][routes][stream]") {
  Table t;
  std::vector<PeerIndex> peers;
  for (int i = 0; i < 10; ++i) {
    peers.push_back(t.rib.AddPeer(Peer(absl::StrCat("10.0.1.", i + 1).c_str(), 100 + i, 65100 + i)));
  }
  for (int i = 0; i < 200; ++i) {
    const std::string p = absl::StrCat("20.0.", i, ".0/24");
    for (PeerIndex peer : peers) {
      const net::Nlri n[] = {N(p.c_str())};
      t.rib.Announce(peer, n, AttrsBuilder().Path({65100u + peer}).NextHop(t.rib.peer(peer).name.c_str()).In(t.store));
    }
  }
  Walk w = WalkPages(t.rib, {}, 20);  // 20 routes or 80 paths per page: 8 routes of 10 paths
  CHECK(w.prefixes.size() == 200);
  for (size_t i = 0; i < w.page_sizes.size(); ++i) {
    CHECK(w.page_sizes[i] <= 20);
    CHECK(w.page_paths[i] <= 80 + 9);  // the route that crosses 80 is the page's last
  }
  CHECK(w.page_sizes[0] == 8);
}
