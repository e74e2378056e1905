// bagctl's text views of the routing table: golden strings for the fixed samples.
#include <catch2/catch.hpp>

#include "tests/control/fake_backend.h"
#include "tools/bagctl/route_render.h"

using namespace bagd::bagctl;
using bagd::control::testing::SampleRibSummary;
using bagd::control::testing::SampleRoutes;

TEST_CASE("bagctl route render: origin codes, decision steps, flags, sizes", "[control][render][routes]") {
  CHECK(OriginCode("igp") == "i");
  CHECK(OriginCode("IGP") == "i");
  CHECK(OriginCode("egp") == "e");
  CHECK(OriginCode("incomplete") == "?");
  CHECK(OriginCode("") == "?");
  CHECK(OriginName("igp") == "IGP");
  CHECK(OriginName("egp") == "EGP");
  CHECK(OriginName("incomplete") == "incomplete");
  CHECK(OriginName("") == "unknown");
  CHECK(OriginName("odd\x1b") == "odd\\x1b");

  CHECK(DecisionStepNumber("local-pref") == 1);
  CHECK(DecisionStepNumber("as-path-length") == 2);
  CHECK(DecisionStepNumber("origin") == 3);
  CHECK(DecisionStepNumber("med") == 4);
  CHECK(DecisionStepNumber("ebgp-over-ibgp") == 5);
  CHECK(DecisionStepNumber("router-id") == 6);
  CHECK(DecisionStepNumber("cluster-list-length") == 7);
  CHECK(DecisionStepNumber("peer-address") == 8);
  CHECK(DecisionStepNumber("path-id") == 9);
  CHECK(DecisionStepNumber("none") == 0);
  CHECK(DecisionStepNumber("igp-cost") == 0);

  RoutePath p;
  p.set_best(true);
  p.set_multipath(true);
  CHECK(RouteFlags(p) == "*>");
  CHECK(NotBestText(p).empty());
  p.set_best(false);
  CHECK(RouteFlags(p) == "*=");
  p.set_multipath(false);
  CHECK(RouteFlags(p) == "* ");
  CHECK(NotBestText(p) == "not best: no reason given");
  p.set_lost_reason("lower local-pref");
  p.set_decision_step("local-pref");
  CHECK(NotBestText(p) == "not best: lower local-pref (step 1 local-pref)");
  p.set_lost_reason("lower weight");
  p.set_decision_step("weight");  // a step this bagctl does not know yet: shown without a number
  CHECK(NotBestText(p) == "not best: lower weight (step weight)");

  CHECK(FormatBytes(0) == "0 B");
  CHECK(FormatBytes(1023) == "1023 B");
  CHECK(FormatBytes(1024) == "1.0 KiB");
  CHECK(FormatBytes(1536) == "1.5 KiB");
  CHECK(FormatBytes(1258291) == "1.2 MiB");
  CHECK(FormatBytes(3ull << 30) == "3.0 GiB");
  CHECK(FormatBytes(5ull << 40) == "5.0 TiB");
  CHECK(FormatBytes(5ull << 50) == "5120.0 TiB");
}

TEST_CASE("bagctl route render: the table of all routes", "[control][render][routes]") {
  const std::string expected =
      "Status codes: * valid, > best, = multipath\n"
      "Origin codes: i IGP, e EGP, ? incomplete\n"
      "\n"
      "   Network            Next Hop        Peer            LocPrf    MED      LB Path\n"
      "*> 192.0.2.0/24       192.0.2.2       192.0.2.2          100      0  10Gbps 65002 65010 i\n"
      "*=                    192.0.2.3       192.0.2.3          100      0 2.5Gbps 65003 65010 i\n"
      "*                     192.0.2.44      192.0.2.4          100                65004 65005 65010 i\n"
      "*> 198.51.100.0/24    0.0.0.0         local              100                i\n"
      "*> 2001:db8::/32      2001:db8::3     2001:db8::3        100     50         4200000003 ?\n"
      "\n"
      "Displayed 3 prefixes and 5 paths\n";
  CHECK(RenderRouteTable(SampleRoutes()) == expected);

  SECTION("columns grow for long values; a link-local-only next hop; truncated") {
    ListRoutesResponse response;
    Route* r = response.add_routes();
    r->set_prefix("2001:db8:1234:5678:9abc::/80");
    RoutePath* p = r->add_paths();
    p->set_peer("fe80::1234:5678:9abc:def0");
    p->set_peer_as(65009);
    p->set_best(true);
    p->set_link_local_next_hop("fe80::1234:5678:9abc:def0");
    p->set_origin("egp");
    p->set_as_path("65009");
    p->set_local_pref(4294967295u);
    p->set_has_med(true);
    p->set_med(4294967295u);
    p->set_has_link_bandwidth(true);
    p->set_link_bandwidth_bps(400e6);
    response.set_truncated(true);
    CHECK(RenderRouteTable(response) ==
          "Status codes: * valid, > best, = multipath\n"
          "Origin codes: i IGP, e EGP, ? incomplete\n"
          "\n"
          "   Network                      Next Hop                  Peer                          LocPrf        MED      LB Path\n"
          "*> 2001:db8:1234:5678:9abc::/80 fe80::1234:5678:9abc:def0 fe80::1234:5678:9abc:def0 4294967295 4294967295 400Mbps 65009 e\n"
          "\n"
          "Displayed the first 1 prefix and 1 path; more routes were left out (--limit)\n");
  }
  SECTION("what peers sent cannot drive the terminal") {
    ListRoutesResponse response = SampleRoutes();
    response.mutable_routes(0)->mutable_paths(0)->set_as_path("65002 \x1b[2J");
    CHECK_THAT(RenderRouteTable(response), Catch::Contains(" 65002 \\x1b[2J i\n"));
  }
}

TEST_CASE("bagctl route render: one prefix in detail", "[control][render][routes]") {
  const ListRoutesResponse routes = SampleRoutes();
  CHECK(RenderRouteDetail(routes.routes(0)) ==
        "BGP routing table entry for 192.0.2.0/24\n"
        "Paths: 3 available, best #1, 2 in the multipath set\n"
        "Next-hop group 7\n"
        "  Path #1 from 192.0.2.2 (AS 65002)\n"
        "    best, multipath\n"
        "    AS path: 65002 65010, origin IGP\n"
        "    Next hop: 192.0.2.2\n"
        "    Local pref: 100, MED: 0\n"
        "    Link bandwidth: 10Gbps\n"
        "    Communities: 65002:100 65002:200\n"
        "    Extended communities: LB:65002:1.25e+09B/s (10Gbps) transitive\n"
        "  Path #2 from 192.0.2.3 (AS 65003)\n"
        "    multipath, not best: higher router id (step 6 router-id)\n"
        "    AS path: 65003 65010, origin IGP\n"
        "    Next hop: 192.0.2.3\n"
        "    Local pref: 100, MED: 0\n"
        "    Link bandwidth: 2.5Gbps\n"
        "    Extended communities: LB:65003:3.125e+08B/s (2.5Gbps) transitive\n"
        "  Path #3 from 192.0.2.4 (AS 65001), path id 7\n"
        "    not best: longer AS path (step 2 as-path-length)\n"
        "    AS path: 65004 65005 65010, origin IGP\n"
        "    Next hop: 192.0.2.44\n"
        "    Local pref: 100, MED: none\n"
        "    Large communities: 65004:1:2\n"
        "    Originator ID: 10.255.0.9\n"
        "    Cluster list: 10.255.0.1 10.255.0.2\n"
        "    Atomic aggregate\n");
  CHECK(RenderRouteDetail(routes.routes(1)) ==
        "BGP routing table entry for 198.51.100.0/24\n"
        "Paths: 1 available, best #1\n"
        "  Path #1, local\n"
        "    best\n"
        "    AS path: (empty), origin IGP\n"
        "    Next hop: 0.0.0.0\n"
        "    Local pref: 100, MED: none\n");
  CHECK(RenderRouteDetail(routes.routes(2)) ==
        "BGP routing table entry for 2001:db8::/32\n"
        "Paths: 1 available, best #1\n"
        "Next-hop group 8\n"
        "  Path #1 from 2001:db8::3 (AS 4200000003)\n"
        "    best\n"
        "    AS path: 4200000003, origin incomplete\n"
        "    Next hop: 2001:db8::3, link-local fe80::3\n"
        "    Local pref: 100, MED: 50\n");
  SECTION("a route without a next-hop group (local, or a bagd without weights) has no such line") {
    Route r = routes.routes(0);
    r.clear_nexthop_group();
    CHECK_THAT(RenderRouteDetail(r), !Catch::Contains("Next-hop group"));
    CHECK_THAT(RenderRouteDetail(routes.routes(1)), !Catch::Contains("Next-hop group"));
  }
  SECTION("no best path at all is said so") {
    Route r = routes.routes(0);
    r.mutable_paths(0)->set_best(false);
    CHECK_THAT(RenderRouteDetail(r), Catch::Contains("Paths: 3 available, no best path, 2 in the multipath set\n"));
  }
}

TEST_CASE("bagctl route render: the RIB summary", "[control][render][routes]") {
  CHECK(RenderRibSummary(SampleRibSummary()) ==
        "Family           Prefixes      Paths  Multipath\n"
        "ipv4-unicast            2          4          1\n"
        "ipv6-unicast            1          1          0\n"
        "total                   3          5          1\n"
        "\n"
        "Peer                    AS IPv4 paths IPv6 paths AS-loop rejects Next-hop rejects Withdrawn\n"
        "192.0.2.2            65002          1          0               3                0        12\n"
        "192.0.2.3            65003          1          0               0                1         0\n"
        "192.0.2.4            65001          1          0               0                0         0\n"
        "2001:db8::3     4200000003          0          1               0                0         2\n"
        "local                65001          1          0               0                0         0\n"
        "\n"
        "Attribute sets: 5\n"
        "Memory: 1.2 MiB (1258291 bytes), 251658 bytes per path\n");
  SECTION("an empty RIB") {
    RibSummary s;
    auto* f = s.add_families();
    f->set_family("ipv4-unicast");
    CHECK(RenderRibSummary(s) ==
          "Family           Prefixes      Paths  Multipath\n"
          "ipv4-unicast            0          0          0\n"
          "\n"
          "No peers.\n"
          "\n"
          "Attribute sets: 0\n"
          "Memory: 0 B, 0 bytes per path\n");
  }
}
