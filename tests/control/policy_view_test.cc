// bgpd/daemon/policy_view.cc on its own: the route TestPolicy builds, its answer, the hit
// counters and their Prometheus sync across a reload, and the pages of one neighbor's
// received / accepted / advertised routes (walked page by page as the server does).
#include <catch2/catch.hpp>
#include <set>

#include "absl/strings/str_cat.h"
#include "bgpd/daemon/policy_view.h"
#include "tests/control/explain_fixture.h"
#include "tests/rib/rib_test_support.h"

using namespace bagd;
using control::testing::ExplainPolicies;
using control::testing::ExplainRibs;
using control::v1::ListRoutesRequest;
using control::v1::TestPolicyRequest;

namespace {

TestPolicyRequest Request(const std::string& policy, const std::string& prefix) {
  TestPolicyRequest r;
  r.set_policy(policy);
  r.set_prefix(prefix);
  return r;
}

// Every page of a view, as the control server asks for them.
template <typename PageFn>
std::vector<std::string> Walk(PageFn page_fn, ListRoutesRequest request, size_t page, std::vector<size_t>* sizes = nullptr) {
  std::vector<std::string> prefixes;
  for (int n = 0; n < 1000; ++n) {
    auto got = page_fn(request, page);
    REQUIRE(got.ok());
    for (const auto& r : got->routes) prefixes.push_back(absl::StrCat(r.prefix(), " x", r.paths_size()));
    if (sizes) sizes->push_back(got->routes.size());
    if (!got->more) return prefixes;
    REQUIRE(!got->routes.empty());
    request.set_after(got->routes.back().prefix());
  }
  FAIL("no end");
  return prefixes;
}

}  // namespace

TEST_CASE("policy view: the test route from the request", "[control][policy]") {
  TestPolicyRequest r = Request("p", "2001:db8::/32");
  r.set_neighbor("2001:db8::2");
  auto* t = r.mutable_attributes();
  t->set_as_path("65001 65002 {65003,65004} (65010 65011) [65012]");
  t->add_communities("no-export");
  t->add_communities("65000:0:7");
  t->add_communities("rt:65000:7");
  t->add_large_communities("65000:1:2");
  t->set_link_bandwidth("65009:2.5G");
  t->set_origin("EGP");
  t->set_local_pref(50);
  auto a = daemon::TestRouteAttributes(r);
  REQUIRE(a.ok());
  CHECK(a->as_path->ToString() == "65001 65002 {65003,65004} (65010 65011) [65012]");
  CHECK(a->as_path->segments.size() == 4);
  CHECK(a->communities == std::vector<uint32_t>{0xFFFFFF01});
  REQUIRE(a->large_communities.size() == 2);
  CHECK(a->large_communities[0] == wire::LargeCommunity{65000, 0, 7});
  REQUIRE(a->extended_communities.size() == 2);
  const auto lb = a->SelectedLinkBandwidth();
  REQUIRE(lb.chosen);
  CHECK(lb.chosen->asn() == 65009);
  CHECK(lb.chosen->bits_per_second() == 2.5e9);
  CHECK(a->origin == wire::Origin::kEgp);
  CHECK(a->local_pref == 50u);
  CHECK_FALSE(a->med);
  // IPv6: the next hop (the neighbor, by default) is MP_REACH's.
  CHECK_FALSE(a->next_hop);
  REQUIRE(a->mp_reach);
  CHECK(a->mp_reach->next_hop.ToString() == "2001:db8::2");

  SECTION("IPv4 with an IPv6 next hop: MP_REACH (RFC 8950); the LB's AS from the AS path") {
    TestPolicyRequest v4 = Request("p", "192.0.2.0/24");
    v4.mutable_attributes()->set_next_hop("2001:db8::9");
    v4.mutable_attributes()->set_as_path("65001");
    v4.mutable_attributes()->set_link_bandwidth("10G");
    auto b = daemon::TestRouteAttributes(v4);
    REQUIRE(b.ok());
    REQUIRE(b->mp_reach);
    CHECK(b->mp_reach->family == net::Family::kIpv4Unicast);
    CHECK(b->SelectedLinkBandwidth().chosen->asn() == 65001);
  }
  SECTION("what does not parse") {
    const auto error = [](TestPolicyRequest q) { return std::string(daemon::TestRouteAttributes(q).status().message()); };
    TestPolicyRequest q = Request("p", "192.0.2.0/24");
    q.mutable_attributes()->set_origin("bgp");
    CHECK(error(q) == "origin \"bgp\": igp, egp or incomplete");
    q = Request("p", "192.0.2.0/24");
    q.mutable_attributes()->set_as_path("65001 AS65002");
    CHECK(error(q) == "AS path \"65001 AS65002\": 'AS65002' is not an AS number (0..4294967295) (write it as bagctl "
                      "shows it: 65001 65002 {65003,65004})");
    q = Request("p", "192.0.2.0/24");
    q.mutable_attributes()->add_large_communities("65000:1");
    CHECK(error(q) == "large community \"65000:1\": three numbers 0..4294967295, GLOBAL:LOCAL1:LOCAL2, e.g. 65000:1:2");
    q = Request("p", "192.0.2.0/24");
    q.mutable_attributes()->set_link_bandwidth("x:10G");
    CHECK(error(q) == "link bandwidth \"x:10G\": the AS before ':' is a number, e.g. 65001:10G");
    q = Request("p", "192.0.2.0/24");
    q.mutable_attributes()->set_next_hop("router");
    CHECK(error(q) == "next hop \"router\" is not an address such as 192.0.2.1 or 2001:db8::1");
  }
}

TEST_CASE("policy view: TestPolicy", "[control][policy]") {
  const policy::PolicySet set = ExplainPolicies();
  SECTION("a NEXT statement then ACCEPT: the trace, the change, no hit counted") {
    TestPolicyRequest r = Request("from-spines", "198.51.100.0/24");
    r.set_neighbor("192.0.2.2");
    r.set_source(TestPolicyRequest::SOURCE_IBGP);
    r.mutable_attributes()->set_as_path("65010");
    auto got = daemon::TestPolicy(set, r);
    REQUIRE(got.ok());
    CHECK(got->verdict() == "accept");
    CHECK(got->statement() == "rest");
    CHECK(got->source() == "ibgp");
    CHECK(got->neighbor() == "192.0.2.2");
    REQUIRE(got->trace_size() == 4);
    CHECK(got->trace(1).failed_condition() == "community-set");
    CHECK(got->trace(2).matched());
    CHECK(got->trace(2).applied(0) == "local-pref 200");
    CHECK(got->modified());
    CHECK(got->route().local_pref() == 100);
    CHECK(got->result().local_pref() == 200);
    CHECK(got->result().communities(0) == "65000:10");
    CHECK(got->route().peer() == "192.0.2.2");
    CHECK(got->route().peer_as() == 0);  // iBGP: not the path's first AS
    const policy::CompiledPolicy& p = *set.Find("from-spines");
    for (size_t i = 0; i < p.statement_count(); ++i) CHECK(p.hits(i) == 0);
  }
  SECTION("an accept that changes nothing is not 'modified'") {
    auto got = daemon::TestPolicy(set, Request("from-spines", "198.51.100.0/24"));
    REQUIRE(got.ok());
    CHECK(got->verdict() == "accept");
    CHECK_FALSE(got->modified());
    CHECK(got->result().as_path() == got->route().as_path());
  }
  SECTION("a policy that is not defined") {
    auto got = daemon::TestPolicy(set, Request("to-leaves", "10.0.0.0/8"));
    CHECK(got.status().code() == absl::StatusCode::kNotFound);
    CHECK(got.status().message() == "no policy \"to-leaves\" is defined; the defined policies are: from-spines, to-spines");
    const policy::PolicySet empty = *policy::PolicySet::Compile(config::v1::Config());
    CHECK(daemon::TestPolicy(empty, Request("p", "10.0.0.0/8")).status().message() ==
          "no policy \"p\" is defined: the config defines no policies");
  }
}

TEST_CASE("policy view: ListPolicies and the Prometheus counters across a reload", "[control][policy][metrics]") {
  ExplainRibs ribs;  // from-spines ran on five received routes
  auto listed = daemon::ListPolicies(*ribs.policies(), {});
  REQUIRE(listed.ok());
  REQUIRE(listed->policies_size() == 2);
  const auto& from = listed->policies(0);
  CHECK(from.name() == "from-spines");
  CHECK(from.depends_on_prefix());
  REQUIRE(from.statements_size() == 4);
  CHECK(from.statements(3).name() == "rest");
  CHECK(from.statements(3).hits() == 3);
  CHECK(listed->policies(1).statements(0).name() == "#1");
  control::v1::ListPoliciesRequest one;
  one.set_name("to-spines");
  CHECK(daemon::ListPolicies(*ribs.policies(), one)->policies_size() == 1);
  one.set_name("nope");
  CHECK(daemon::ListPolicies(*ribs.policies(), one).status().code() == absl::StatusCode::kNotFound);

  daemon::RoutingMetrics metrics(std::make_shared<prometheus::Registry>());
  daemon::PolicyHitsSynced synced;
  daemon::SyncPolicyMetrics(*ribs.policies(), metrics, synced);
  CHECK(metrics.PolicyHits("from-spines", "rest").Value() == 3);
  CHECK(metrics.PolicyHits("from-spines", "bogons").Value() == 1);
  CHECK(metrics.PolicyHits("to-spines", "#1").Value() == 0);  // the series exists from the first sync
  CHECK(synced.size() == 5);

  // More routes: the counters catch up by the difference.
  const auto evaluate = [](const policy::PolicySet& set, const char* prefix) {
    wire::PathAttributes a = rib::test::AttrsBuilder().Path({65002}).a;
    const policy::RouteContext route{*net::Prefix::Parse(prefix), &a, std::nullopt, policy::RouteSource::kEbgp};
    policy::Evaluate(*set.Find("from-spines"), route);
  };
  evaluate(*ribs.policies(), "192.0.2.0/24");
  evaluate(*ribs.policies(), "10.0.0.0/8");
  daemon::SyncPolicyMetrics(*ribs.policies(), metrics, synced);
  daemon::SyncPolicyMetrics(*ribs.policies(), metrics, synced);  // nothing new: nothing added
  CHECK(metrics.PolicyHits("from-spines", "rest").Value() == 4);
  CHECK(metrics.PolicyHits("from-spines", "bogons").Value() == 2);

  // A reload: the old set's last hits, Reloaded(), the new set (its hits from 0).
  evaluate(*ribs.policies(), "192.0.2.0/24");
  daemon::SyncPolicyMetrics(*ribs.policies(), metrics, synced);
  synced.Reloaded();
  ribs.mutable_policies() = ExplainPolicies();
  CHECK(ribs.policies()->Find("from-spines")->hits(3) == 0);
  daemon::SyncPolicyMetrics(*ribs.policies(), metrics, synced);
  CHECK(metrics.PolicyHits("from-spines", "rest").Value() == 5);
  evaluate(*ribs.policies(), "192.0.2.0/24");
  evaluate(*ribs.policies(), "198.51.100.0/24");
  daemon::SyncPolicyMetrics(*ribs.policies(), metrics, synced);
  CHECK(metrics.PolicyHits("from-spines", "rest").Value() == 7);  // 5 before, 2 in the new set
  CHECK(metrics.PolicyHits("from-spines", "bogons").Value() == 2);
}

TEST_CASE("policy view: received routes in pages", "[control][routes][stream]") {
  rib::AttributeStore store;
  rib::AdjRibIn in;
  const rib::PeerInfo from = rib::test::Peer("192.0.2.2", 2, 65002);
  std::vector<std::string> want;
  for (int i = 0; i < 300; ++i) {
    const std::string p = absl::StrCat("20.", i / 256, ".", i % 256, ".0/24");
    const int paths = i % 7 == 0 ? 3 : 1;  // ADD-PATH: some prefixes with three path ids
    for (int id = 1; id <= paths; ++id) in.Set(rib::test::N(p.c_str(), id), rib::test::AttrsBuilder().In(store));
    want.push_back(absl::StrCat(p, " x", paths));
  }
  in.Set(rib::test::N("2001:db8::/32"), rib::test::AttrsBuilder().In(store));
  in.Set(rib::test::N("20.0.0.0/16"), rib::test::AttrsBuilder().In(store));
  want.insert(want.begin(), "20.0.0.0/16 x1");
  want.push_back("2001:db8::/32 x1");
  const auto page = [&](const ListRoutesRequest& r, size_t n) { return daemon::ReceivedRoutesPage(in, from, r, n); };

  SECTION("every prefix once, in table order, a prefix's paths never split") {
    std::vector<size_t> sizes;
    CHECK(Walk(page, {}, 50, &sizes) == want);
    for (size_t s : sizes) CHECK(s <= 50);
    CHECK(Walk(page, {}, 1) == want);
  }
  SECTION("a family, a prefix, an address") {
    ListRoutesRequest r;
    r.set_family("ipv6-unicast");
    CHECK(Walk(page, r, 50) == std::vector<std::string>{"2001:db8::/32 x1"});
    r.set_family("ipv4-unicast");
    CHECK(Walk(page, r, 50).size() == want.size() - 1);
    ListRoutesRequest one;
    one.set_prefix("20.0.7.0/24");
    auto got = page(one, 1000);
    REQUIRE(got->routes.size() == 1);
    CHECK(got->routes[0].paths_size() == 3);
    CHECK(got->routes[0].paths(2).path_id() == 3);
    CHECK(got->routes[0].paths(0).peer() == "192.0.2.2");
    CHECK(got->routes[0].paths(0).peer_as() == 65002);
    CHECK(got->routes[0].paths(0).next_hop() == "10.0.0.1");
    one.set_prefix("20.0.0.9");  // covered by 20.0.0.0/24 and 20.0.0.0/16: the longer
    got = page(one, 1000);
    REQUIRE(got->routes.size() == 1);
    CHECK(got->routes[0].prefix() == "20.0.0.0/24");
    one.set_prefix("30.0.0.1");
    CHECK(page(one, 1000)->routes.empty());
  }
}

TEST_CASE("policy view: accepted and advertised routes in pages", "[control][routes][stream]") {
  ExplainRibs ribs;
  // Many more prefixes in the RIB from spine 2 only, and every third one from spine 1 too.
  for (int i = 0; i < 200; ++i) {
    const net::Nlri n[] = {rib::test::N(absl::StrCat("21.0.", i, ".0/24").c_str())};
    ribs.mutable_rib().Announce(ribs.spine2(), n, rib::test::AttrsBuilder().Path({65003}).NextHop("192.0.2.3").In(ribs.store()));
    if (i % 3 == 0) {
      ribs.mutable_rib().Announce(ribs.spine1(), n, rib::test::AttrsBuilder().Path({65002}).NextHop("192.0.2.2").In(ribs.store()));
    }
  }
  const auto accepted = [&](const ListRoutesRequest& r, size_t n) {
    return daemon::AcceptedRoutesPage(ribs.rib(), ribs.spine1(), r, n);
  };
  std::vector<size_t> sizes;
  const std::vector<std::string> walked = Walk(accepted, {}, 10, &sizes);
  CHECK(walked.size() == 2 + 67);
  CHECK(walked.front() == "21.0.0.0/24 x1");
  CHECK(walked[walked.size() - 2] == "198.51.100.0/24 x2");  // spine 1's two paths, not spine 2's
  CHECK(walked.back() == "203.0.113.0/24 x1");
  CHECK(sizes.back() <= 10);
  CHECK(std::set<std::string>(walked.begin(), walked.end()).size() == walked.size());
  // The last page ends where spine 1's routes end: no empty page after it.
  CHECK(sizes.back() > 0);

  ListRoutesRequest one;
  one.set_prefix("21.0.1.0/24");  // spine 2's only: not in spine 1's view
  CHECK(accepted(one, 1000)->routes.empty());
  one.set_prefix("198.51.100.1");
  auto got = accepted(one, 1000);
  REQUIRE(got->routes.size() == 1);
  CHECK(got->routes[0].paths(0).best());
  CHECK(got->routes[0].paths(1).decision_step() == "local-pref");

  const auto advertised = [&](const ListRoutesRequest& r, size_t n) {
    return daemon::AdvertisedRoutesPage(ribs.advertised(), ribs.rib().peer(ribs.spine2()), r, n);
  };
  CHECK(Walk(advertised, {}, 1) == std::vector<std::string>{"198.51.100.0/24 x1", "203.0.113.0/24 x1"});
  one.set_prefix("203.0.113.200");
  got = advertised(one, 1000);
  REQUIRE(got->routes.size() == 1);
  CHECK(got->routes[0].paths(0).peer() == "192.0.2.3");
  CHECK(got->routes[0].paths(0).next_hop() == "192.0.2.1");
  CHECK(got->routes[0].paths(0).as_path() == "65000 65002");
}

TEST_CASE("policy view: what ControlAdapter answers", "[control][routes][policy]") {
  ExplainRibs ribs;
  ListRoutesRequest r;
  r.set_view(ListRoutesRequest::VIEW_RECEIVED);
  r.set_neighbor("192.0.2.2");
  CHECK(daemon::ServeNeighborRoutesPage(nullptr, ribs.rib(), r, 10).status().code() == absl::StatusCode::kUnimplemented);
  auto got = daemon::ServeNeighborRoutesPage(&ribs, ribs.rib(), r, 10);
  REQUIRE(got.ok());
  CHECK(got->routes.size() == 3);  // the bogon too: before import policy
  r.set_neighbor("192.0.2.3");
  CHECK(daemon::ServeNeighborRoutesPage(&ribs, ribs.rib(), r, 10).status().code() ==
        absl::StatusCode::kFailedPrecondition);
  r.set_view(ListRoutesRequest::VIEW_ADVERTISED);
  r.set_neighbor("192.0.2.2");  // nothing advertised: an empty view, not an error
  got = daemon::ServeNeighborRoutesPage(&ribs, ribs.rib(), r, 10);
  REQUIRE(got.ok());
  CHECK(got->routes.empty());
  CHECK_FALSE(got->more);
  r.set_neighbor("192.0.2.99");
  CHECK(daemon::ServeNeighborRoutesPage(&ribs, ribs.rib(), r, 10).status().message() ==
        "no neighbor 192.0.2.99 is configured");
  CHECK(daemon::ServeListPolicies(nullptr, {}).status().code() == absl::StatusCode::kUnimplemented);
  ribs.Unload();
  CHECK(daemon::ServeTestPolicy(&ribs, Request("from-spines", "10.0.0.0/8")).status().code() ==
        absl::StatusCode::kFailedPrecondition);
}
