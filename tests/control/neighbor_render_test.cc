// bagctl's text views of NeighborStatus, golden strings for fixed samples and a fixed now.
#include <catch2/catch.hpp>

#include "tests/control/fake_backend.h"
#include "tools/bagctl/neighbor_render.h"

using namespace bagd::bagctl;
using bagd::control::testing::kNowUnixMs;
using bagd::control::testing::SampleActive;
using bagd::control::testing::SampleAdminDown;
using bagd::control::testing::SampleEstablished;

TEST_CASE("bagctl render: durations, times, control characters", "[control][render]") {
  CHECK(FormatHms(0) == "0:00:00");
  CHECK(FormatHms(59) == "0:00:59");
  CHECK(FormatHms(3723) == "1:02:03");
  CHECK(FormatHms(26 * 3600) == "26:00:00");
  CHECK(FormatHms(-5) == "0:00:00");
  CHECK(FormatUnixMs(kNowUnixMs) == "2024-05-01 12:00:00 UTC");
  CHECK(FormatUnixMs(0) == "1970-01-01 00:00:00 UTC");
  CHECK(Printable("plain text, UTF-8 \xc3\xbc") == "plain text, UTF-8 \xc3\xbc");
  CHECK(Printable("a\x1b[31mred\nline\x7f") == "a\\x1b[31mred\\x0aline\\x7f");
}

TEST_CASE("bagctl render: the Up/Down and State/PfxRcd columns", "[control][render]") {
  CHECK(UpDownColumn(SampleEstablished(), kNowUnixMs) == "1:02:03");
  CHECK(UpDownColumn(SampleActive(), kNowUnixMs) == "never");
  CHECK(UpDownColumn(SampleAdminDown(), kNowUnixMs) == "0:10:00");  // down for 10 minutes
  CHECK(StateColumn(SampleEstablished()) == "1200");
  CHECK(StateColumn(SampleActive()) == "Active");
  CHECK(StateColumn(SampleAdminDown()) == "Idle (Admin)");
  CHECK(StateColumn(bagd::control::v1::NeighborStatus{}) == "Idle");
}

TEST_CASE("bagctl render: the summary table", "[control][render]") {
  const std::string expected =
      "Neighbor        V         AS   MsgRcvd   MsgSent  Up/Down State/PfxRcd   PfxSnt Desc\n"
      "192.0.2.2       4      65002       146       136  1:02:03         1200      800 spine-1\n"
      "2001:db8::3     4 4200000003         0         0    never       Active        0 N/A\n"
      "192.0.2.4       4      65001        50        51  0:10:00 Idle (Admin)        0 rr-2\n"
      "\n"
      "Total number of neighbors 3\n";
  CHECK(RenderNeighborTable({SampleEstablished(), SampleActive(), SampleAdminDown()}, kNowUnixMs) == expected);

  SECTION("columns grow for long values, and lines never end in blanks") {
    auto n = SampleActive();
    n.set_address("2001:db8:1234:5678:9abc:def0:1234:5678");
    n.clear_description();
    const std::string table = RenderNeighborTable({SampleEstablished(), n}, kNowUnixMs);
    CHECK(table ==
          "Neighbor                               V         AS   MsgRcvd   MsgSent  Up/Down State/PfxRcd   PfxSnt Desc\n"
          "192.0.2.2                              4      65002       146       136  1:02:03         1200      800 "
          "spine-1\n"
          "2001:db8:1234:5678:9abc:def0:1234:5678 4 4200000003         0         0    never       Active        0 N/A\n"
          "\n"
          "Total number of neighbors 2\n");
  }
}

TEST_CASE("bagctl render: neighbor groups add a Group column, dynamic neighbors a star", "[control][render]") {
  auto grouped = SampleEstablished();
  grouped.set_group("spines");
  auto dynamic = SampleActive();
  dynamic.set_address("10.1.2.3");
  dynamic.set_group("fabric-a");
  dynamic.set_dynamic(true);
  dynamic.set_listen_range("10.1.0.0/16");
  CHECK(RenderNeighborTable({grouped, dynamic, SampleAdminDown()}, kNowUnixMs) ==
        "Neighbor        V         AS   MsgRcvd   MsgSent  Up/Down State/PfxRcd   PfxSnt Group    Desc\n"
        "192.0.2.2       4      65002       146       136  1:02:03         1200      800 spines   spine-1\n"
        "*10.1.2.3       4 4200000003         0         0    never       Active        0 fabric-a N/A\n"
        "192.0.2.4       4      65001        50        51  0:10:00 Idle (Admin)        0 -        rr-2\n"
        "\n"
        "Total number of neighbors 3\n"
        "* - dynamic neighbor (a group's listen range)\n");
  CHECK_THAT(RenderNeighborDetail(dynamic, kNowUnixMs),
             Catch::Matchers::Contains("  Dynamic neighbor of group fabric-a (listen range 10.1.0.0/16): removed when its "
                                       "session ends\n"));
  CHECK_THAT(RenderNeighborDetail(grouped, kNowUnixMs), Catch::Matchers::Contains("  Neighbor group: spines\n"));
}

TEST_CASE("bagctl render: the detail of an Established neighbor", "[control][render]") {
  const std::string expected =
      "BGP neighbor is 192.0.2.2, remote AS 65002, local AS 65001, external link\n"
      "  Description: spine-1\n"
      "  BGP state = Established, up for 1:02:03 (since 2024-05-01 10:57:57 UTC)\n"
      "  Established 2 times\n"
      "  Local address 192.0.2.1:179, remote address 192.0.2.2:40123\n"
      "  Peer router ID 10.255.0.2\n"
      "  Hold time 90 s, keepalive interval 30 s\n"
      "  Negotiated capabilities:\n"
      "    Address families: ipv4-unicast, ipv6-unicast\n"
      "    4-octet AS: yes\n"
      "    Route refresh: yes\n"
      "    Enhanced route refresh: no\n"
      "    Extended message: yes\n"
      "    Graceful restart: no\n"
      "    ADD-PATH receive: ipv4-unicast\n"
      "    ADD-PATH send: none\n"
      "    Extended next hop: ipv4-unicast\n"
      "    Hostname: spine-1.example.net\n"
      "  Message statistics:\n"
      "                          Sent       Rcvd\n"
      "    Opens:                   1          1\n"
      "    Notifications:           1          0\n"
      "    Updates:                10         20\n"
      "    Keepalives:            124        125\n"
      "    Route refresh:           0          0\n"
      "    Total:                 136        146\n"
      "    Bytes:                3333       4711\n"
      "  Prefixes received 1200, sent 800\n"
      "  Last error: Hold timer expired\n"
      "  Last NOTIFICATION sent: none\n"
      "  Last NOTIFICATION received: Cease / Administrative Shutdown (6/2) at 2024-05-01 10:00:00 UTC\n"
      "    Shutdown message: \"maintenance\"\n";
  CHECK(RenderNeighborDetail(SampleEstablished(), kNowUnixMs) == expected);
}

TEST_CASE("bagctl render: the detail of neighbors that are down", "[control][render]") {
  SECTION("administratively down, passive, iBGP, a NOTIFICATION with data") {
    const std::string expected =
        "BGP neighbor is 192.0.2.4, remote AS 65001, local AS 65001, internal link\n"
        "  Description: rr-2\n"
        "  BGP state = Idle, for 0:10:00 (since 2024-05-01 11:50:00 UTC)\n"
        "  Administratively shut down, message: \"RMA ticket 4711\"\n"
        "  Passive: waits for the peer to connect\n"
        "  Established 1 time\n"
        "  No TCP connection\n"
        "  Message statistics:\n"
        "                          Sent       Rcvd\n"
        "    Opens:                   0          0\n"
        "    Notifications:           0          0\n"
        "    Updates:                 0          0\n"
        "    Keepalives:              0          0\n"
        "    Route refresh:           0          0\n"
        "    Total:                  51         50\n"
        "    Bytes:                   0          0\n"
        "  Prefixes received 0, sent 0\n"
        "  Last error: none\n"
        "  Last NOTIFICATION sent: Hold Timer Expired / Unspecific (4/0)\n"
        "    Data: 01 02 ff\n"
        "  Last NOTIFICATION received: none\n";
    CHECK(RenderNeighborDetail(SampleAdminDown(), kNowUnixMs) == expected);
  }
  SECTION("never established, IPv6, 4-octet AS") {
    const std::string expected =
        "BGP neighbor is 2001:db8::3, remote AS 4200000003, local AS 65001, external link\n"
        "  BGP state = Active, for 0:00:30 (since 2024-05-01 11:59:30 UTC)\n"
        "  Never established\n"
        "  No TCP connection\n"
        "  Message statistics:\n"
        "                          Sent       Rcvd\n"
        "    Opens:                   0          0\n"
        "    Notifications:           0          0\n"
        "    Updates:                 0          0\n"
        "    Keepalives:              0          0\n"
        "    Route refresh:           0          0\n"
        "    Total:                   0          0\n"
        "    Bytes:                   0          0\n"
        "  Prefixes received 0, sent 0\n"
        "  Last error: TCP connection refused\n"
        "  Last NOTIFICATION sent: none\n"
        "  Last NOTIFICATION received: none\n";
    CHECK(RenderNeighborDetail(SampleActive(), kNowUnixMs) == expected);
  }
  SECTION("an IPv6 session shows ports in brackets; admin down without a message") {
    auto n = SampleActive();
    n.set_local_address("2001:db8::1");
    n.set_local_port(179);
    n.set_remote_port(50000);
    n.set_admin_down(true);
    const std::string detail = RenderNeighborDetail(n, kNowUnixMs);
    CHECK_THAT(detail, Catch::Contains("  Local address [2001:db8::1]:179, remote address [2001:db8::3]:50000\n"));
    CHECK_THAT(detail, Catch::Contains("  Administratively shut down (no message)\n"));
  }
  SECTION("what a peer sent cannot drive the terminal") {
    auto n = SampleEstablished();
    n.mutable_last_notification_received()->set_shutdown_message("\x1b]0;owned\x07");
    CHECK_THAT(RenderNeighborDetail(n, kNowUnixMs), Catch::Contains("    Shutdown message: \"\\x1b]0;owned\\x07\"\n"));
  }
}

TEST_CASE("bagctl render: JSON uses control.proto's field names", "[control][render]") {
  bagd::control::v1::ListNeighborsResponse response;
  *response.add_neighbors() = SampleActive();
  auto json = RenderNeighborsJson(response);
  REQUIRE(json.ok());
  CHECK_THAT(*json, Catch::Contains("\"address\": \"2001:db8::3\""));
  CHECK_THAT(*json, Catch::Contains("\"remote_as\": 4200000003"));
  CHECK_THAT(*json, Catch::Contains("\"state_since_unix_ms\": \"1714564770000\""));
  CHECK_THAT(*json, Catch::Contains("\"admin_down\": false"));        // zero values are printed
  CHECK_THAT(*json, Catch::Contains("\"established_transitions\": \"0\""));
  CHECK_THAT(*json, !Catch::Contains("remoteAs"));
}

TEST_CASE("bagctl render: maximum prefixes, and a neighbor down after exceeding them", "[control][render][prefix_limit]") {
  bagd::control::v1::NeighborStatus n = SampleEstablished();
  auto* l = n.add_prefix_limits();
  l->set_family("ipv4-unicast");
  l->set_limit(1000);
  l->set_warning_threshold_percent(75);
  l->set_warning_at(750);
  l->set_restart_interval_s(30);
  l->set_count(800);
  l->set_state("warning");
  auto* w = n.add_prefix_limits();
  w->set_family("ipv6-unicast");
  w->set_limit(10);
  w->set_warning_threshold_percent(90);
  w->set_warning_at(9);
  w->set_warning_only(true);
  w->set_count(3);
  w->set_state("ok");
  std::string detail = RenderNeighborDetail(n, kNowUnixMs);
  CHECK_THAT(detail, Catch::Contains("  Maximum prefixes ipv4-unicast: 1000, warning at 750 (75 %), restart after 30 s; "
                                     "held 800, warning\n"));
  CHECK_THAT(detail, Catch::Contains("  Maximum prefixes ipv6-unicast: 10, warning at 9 (90 %), warning only; held 3, ok\n"));
  CHECK_THAT(detail, !Catch::Contains("Down: maximum prefixes"));

  // Down after the Cease: FRR's "(PfxCt)" in the table, when it restarts in the detail.
  bagd::control::v1::NeighborStatus down = SampleActive();
  down.set_state("Idle");
  down.set_prefix_limit_down(true);
  down.set_prefix_limit_restart_unix_ms(kNowUnixMs + 25'000);
  CHECK(StateColumn(down) == "Idle (PfxCt)");
  CHECK_THAT(RenderNeighborDetail(down, kNowUnixMs),
             Catch::Contains("  Down: maximum prefixes exceeded; restarts at 2024-05-01 12:00:25 UTC (in 25 s)\n"));
  down.set_prefix_limit_restart_unix_ms(0);
  CHECK_THAT(RenderNeighborDetail(down, kNowUnixMs),
             Catch::Contains("  Down: maximum prefixes exceeded; stays down until `bagctl neighbor 2001:db8::3 enable`\n"));
  // The operator's shutdown is what the table shows when both hold.
  down.set_admin_down(true);
  CHECK(StateColumn(down) == "Idle (Admin)");
}

TEST_CASE("bagctl render: route refresh both ways", "[control][render][route_refresh]") {
  bagd::control::v1::NeighborStatus n = SampleEstablished();
  // Nothing happened: no lines (the message counters still show the ROUTE-REFRESH row).
  CHECK_THAT(RenderNeighborDetail(n, kNowUnixMs), !Catch::Contains("Route refresh: requests"));
  auto* r = n.mutable_route_refresh();
  r->set_requests_received(2);
  r->set_requests_sent(1);
  r->set_adj_rib_out_resends(3);
  r->set_prefixes_resent(2400);
  std::string detail = RenderNeighborDetail(n, kNowUnixMs);
  CHECK_THAT(detail, Catch::Contains("  Route refresh: requests received 2, sent 1; Adj-RIB-Out re-sent 3 times "
                                     "(2400 prefixes)\n  Prefixes received 1200, sent 800\n"));
  CHECK_THAT(detail, !Catch::Contains("Refreshes from the neighbor"));
  CHECK_THAT(detail, !Catch::Contains("ignored"));
  r->set_borr_received(2);
  r->set_eorr_received(1);
  r->set_stale_paths_removed(17);
  r->add_refreshing("ipv4-unicast");
  r->set_ignored(1);
  detail = RenderNeighborDetail(n, kNowUnixMs);
  CHECK_THAT(detail, Catch::Contains("  Refreshes from the neighbor: BoRR 2, EoRR 1, timed out 0; stale paths removed 17; "
                                     "re-sending now: ipv4-unicast\n"));
  CHECK_THAT(detail, Catch::Contains("  ROUTE-REFRESH messages ignored: 1 (see bagd's log)\n"));
}

namespace bagd::bagctl {
namespace {

TEST_CASE("bagctl render: RFC 8212 notes and import rejections in the detail", "[control][render]") {
  control::v1::NeighborStatus n = SampleEstablished();
  n.add_policy_notes("ipv4-unicast: no import policy and default_import REJECT (RFC 8212): no route from this neighbor is accepted");
  n.set_prefixes_rejected(3);
  const std::string detail = RenderNeighborDetail(n, kNowUnixMs);
  CHECK(detail.find("  Policy: ipv4-unicast: no import policy and default_import REJECT (RFC 8212)") != std::string::npos);
  CHECK(detail.find("  Rejected by import policy: 3 routes\n") != std::string::npos);
  CHECK(RenderNeighborDetail(SampleEstablished(), kNowUnixMs).find("Policy:") == std::string::npos);
}

}  // namespace
}  // namespace bagd::bagctl

TEST_CASE("bagctl render: graceful restart in the detail, during a neighbor's restart", "[control][render]") {
  auto n = SampleEstablished();
  auto* g = n.mutable_graceful_restart();
  g->set_enabled(true);
  g->set_restart_time(120);
  g->set_stale_routes_time(360);
  g->add_families("ipv4-unicast");
  g->add_forwarding_preserved_sent("ipv4-unicast");
  g->set_peer_offered(true);
  g->set_peer_restart_time(90);
  g->add_peer_families("ipv4-unicast");
  g->add_peer_forwarding_preserved("ipv4-unicast");
  g->set_peer_restart_state(true);
  g->add_retained("ipv4-unicast");
  g->set_phase("stale");
  g->set_stale_paths(12);
  g->add_stale_families("ipv4-unicast");
  g->set_deadline_unix_ms(kNowUnixMs + 360000);
  g->set_restarts(1);
  const std::string detail = RenderNeighborDetail(n, kNowUnixMs);
  CHECK_THAT(detail, Catch::Matchers::Contains(
                         "  Graceful restart: restart time 120 s, families ipv4-unicast, stale routes time 360 s, F sent: "
                         "ipv4-unicast\n"
                         "    Neighbor: restart time 90 s, families ipv4-unicast, F: ipv4-unicast, R (it restarted); kept "
                         "across its restart: ipv4-unicast\n"
                         "    Now: waiting for End-of-RIB, 12 stale paths in ipv4-unicast, removed at the latest at "
                         "2024-05-01 12:06:00 UTC\n"
                         "    Restarts helped: 1; stale paths removed 0; timers expired 0\n"));
  // Off: one line.
  auto off = SampleEstablished();
  off.mutable_graceful_restart()->set_restart_time(0);
  CHECK_THAT(RenderNeighborDetail(off, kNowUnixMs), Catch::Matchers::Contains("  Graceful restart: off (End-of-RIB only)\n"));
}
