// Enhanced route refresh, receiving side (RFC 7313 §4.2): the paths a peer had at its BoRR,
// which of them it announced again, and the ones removed at its EoRR.
#include <catch2/catch.hpp>

#include "rib/stale_paths.h"
#include "tests/rib/rib_test_support.h"

using namespace bagd;
using namespace bagd::rib;
using namespace bagd::rib::test;

namespace {

std::vector<std::string> Texts(const std::vector<net::Nlri>& nlri) {
  std::vector<std::string> out;
  for (const auto& n : nlri) out.push_back(n.prefix.ToString() + (n.path_id ? "#" + std::to_string(n.path_id) : ""));
  return out;
}

}  // namespace

TEST_CASE("Rib::PathsOf: one peer's paths in one family, in table order", "[rib][route_refresh]") {
  AttributeStore store;
  Rib rib(65000, DecisionConfig{});
  const PeerIndex a = rib.AddPeer(Peer("10.0.0.1", 1, 65001));
  const PeerIndex b = rib.AddPeer(Peer("10.0.0.2", 2, 65002));
  const net::Nlri from_a[] = {N("198.51.100.0/24"), N("192.0.2.0/24", 2), N("192.0.2.0/24", 1), N("10.0.0.0/8")};
  rib.Announce(a, from_a, AttrsBuilder().In(store));
  const net::Nlri from_b[] = {N("192.0.2.0/24"), N("203.0.113.0/24")};
  rib.Announce(b, from_b, AttrsBuilder().NextHop("10.0.0.2").Path({65002}).In(store));
  wire::PathAttributes v6 = AttrsBuilder().a;
  v6.next_hop.reset();
  v6.mp_reach = wire::MpReach{net::Family::kIpv6Unicast, *net::IpAddress::Parse("2001:db8::1"), std::nullopt, {}};
  const net::Nlri v6_nlri[] = {N("2001:db8::/32")};
  rib.Announce(a, v6_nlri, store.Intern(v6));

  std::vector<std::string> v4 = Texts(rib.PathsOf(a, net::Family::kIpv4Unicast));
  std::sort(v4.begin() + 1, v4.begin() + 3);  // the path ids of one prefix: in any order
  CHECK(v4 == std::vector<std::string>{"10.0.0.0/8", "192.0.2.0/24#1", "192.0.2.0/24#2", "198.51.100.0/24"});
  CHECK(Texts(rib.PathsOf(a, net::Family::kIpv6Unicast)) == std::vector<std::string>{"2001:db8::/32"});
  CHECK(Texts(rib.PathsOf(b, net::Family::kIpv4Unicast)) ==
        std::vector<std::string>{"192.0.2.0/24", "203.0.113.0/24"});
  CHECK(rib.PathsOf(b, net::Family::kIpv6Unicast).empty());
}

TEST_CASE("StalePaths: what was not announced again is taken, once, in table order", "[rib][route_refresh]") {
  StalePaths stale({N("198.51.100.0/24"), N("192.0.2.0/24", 2), N("10.0.0.0/8"), N("192.0.2.0/24", 1),
                    N("10.0.0.0/8")});  // a duplicate counts once
  CHECK(stale.marked() == 4);
  CHECK(stale.stale() == 4);
  stale.Refreshed(N("192.0.2.0/24", 1));
  stale.Refreshed(N("192.0.2.0/24", 1));  // twice is once
  stale.Refreshed(N("203.0.113.0/24"));   // new since the BoRR: nothing to unmark
  stale.Refreshed(N("10.0.0.0/9"));       // another prefix length is another prefix
  CHECK(stale.stale() == 3);
  CHECK(Texts(stale.TakeStale(2)) == std::vector<std::string>{"10.0.0.0/8", "192.0.2.0/24#2"});
  CHECK(stale.stale() == 1);
  stale.Refreshed(N("198.51.100.0/24"));  // announced after all, before the sweep reached it
  CHECK(stale.TakeStale(2).empty());
  CHECK(stale.stale() == 0);
  CHECK(stale.TakeStale(2).empty());
}

TEST_CASE("StalePaths: a refresh that re-sends everything removes nothing, one that re-sends nothing, all",
          "[rib][route_refresh]") {
  std::vector<net::Nlri> paths;
  for (int i = 0; i < 1000; ++i) {
    paths.push_back(N(("10." + std::to_string(i / 256) + "." + std::to_string(i % 256) + ".0/24").c_str()));
  }
  StalePaths all(paths), none(paths);
  for (const auto& n : paths) all.Refreshed(n);
  CHECK(all.stale() == 0);
  CHECK(all.TakeStale(10000).empty());
  size_t taken = 0;
  for (auto slice = none.TakeStale(300); !slice.empty(); slice = none.TakeStale(300)) {
    CHECK(slice.size() <= 300);
    taken += slice.size();
  }
  CHECK(taken == 1000);
}

TEST_CASE("StalePaths with the RIB: an EoRR removes the paths not re-announced", "[rib][route_refresh]") {
  AttributeStore store;
  Rib rib(65000, DecisionConfig{});
  const PeerIndex a = rib.AddPeer(Peer("10.0.0.1", 1, 65001));
  const PeerIndex b = rib.AddPeer(Peer("10.0.0.2", 2, 65002));
  const net::Nlri before[] = {N("192.0.2.0/24"), N("198.51.100.0/24"), N("203.0.113.0/24")};
  const AttrRef attrs = AttrsBuilder().In(store);
  rib.Announce(a, before, attrs);
  const net::Nlri other[] = {N("198.51.100.0/24")};
  rib.Announce(b, other, AttrsBuilder().NextHop("10.0.0.2").Path({65002, 65003}).In(store));
  rib.TakeChanges();

  StalePaths stale(rib.PathsOf(a, net::Family::kIpv4Unicast));  // BoRR
  // The peer re-sends 192.0.2.0/24 (identical: no change in the RIB) and 203.0.113.0/24.
  const net::Nlri again[] = {N("192.0.2.0/24"), N("203.0.113.0/24")};
  for (const auto& n : again) stale.Refreshed(n);
  rib.Announce(a, again, attrs);
  CHECK(rib.TakeChanges().empty());
  // EoRR: 198.51.100.0/24 from `a` is gone; `b`'s path is the best now.
  rib.Withdraw(a, stale.TakeStale(100));
  CHECK(rib.paths_of(a) == 2);
  const auto changes = rib.TakeChanges();
  REQUIRE(changes.size() == 1);
  CHECK(changes[0].prefix.ToString() == "198.51.100.0/24");
  REQUIRE(changes[0].new_multipath.size() == 1);
  CHECK(changes[0].new_multipath[0].peer == b);
}

TEST_CASE("StaleTable: marks per peer and family with their cause, one rule for what is sent again", "[rib][stale]") {
  using rib::StaleCause;
  rib::StaleTable t;
  const auto v4 = net::Family::kIpv4Unicast, v6 = net::Family::kIpv6Unicast;
  auto nlri = [](const char* p, uint32_t id = 0) { return net::Nlri{*net::Prefix::Parse(p), id}; };
  CHECK_FALSE(t.any(3));
  CHECK(t.Find(3, v4) == nullptr);
  t.Begin(3, v4, StaleCause::kGracefulRestart, {nlri("10.0.0.0/24"), nlri("10.0.1.0/24"), nlri("10.0.2.0/24")});
  CHECK(t.any(3));
  CHECK_FALSE(t.any(2));
  CHECK(t.cause(3, v4) == StaleCause::kGracefulRestart);
  CHECK_FALSE(t.cause(3, v6).has_value());
  // Announced or withdrawn again: not stale. Another peer's or family's NLRI changes nothing.
  t.Refreshed(3, nlri("10.0.0.0/24"));
  t.Refreshed(3, nlri("10.0.2.0/24"));
  t.Refreshed(2, nlri("10.0.1.0/24"));
  t.Refreshed(3, nlri("2001:db8::/48"));
  REQUIRE(t.Find(3, v4) != nullptr);
  CHECK(t.Find(3, v4)->stale() == 1);
  // The sweep asks for its cause: a refresh's EoRR does not sweep a restart's marks.
  CHECK(t.Find(3, v4, StaleCause::kRouteRefresh) == nullptr);
  rib::StalePaths* gr = t.Find(3, v4, StaleCause::kGracefulRestart);
  REQUIRE(gr != nullptr);
  const auto taken = gr->TakeStale(10);
  REQUIRE(taken.size() == 1);
  CHECK(taken[0].prefix.ToString() == "10.0.1.0/24");
  // A BoRR while a restart's paths are stale: the refresh's marks replace them.
  t.Begin(3, v4, StaleCause::kRouteRefresh, {nlri("10.0.0.0/24")});
  CHECK(t.cause(3, v4) == StaleCause::kRouteRefresh);
  CHECK(t.Find(3, v4)->stale() == 1);
  t.Begin(3, v6, StaleCause::kGracefulRestart, {nlri("2001:db8::/48")});
  t.Clear(3, v4);
  CHECK(t.any(3));
  t.Clear(3);
  CHECK_FALSE(t.any(3));
  CHECK(t.Find(3, v6) == nullptr);
}
