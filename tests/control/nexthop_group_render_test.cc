// bagctl's text view of the weighted next-hop groups: golden strings for the fixed sample.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

#include "tests/control/fake_backend.h"
#include "tools/bagctl/nexthop_group_render.h"

using namespace bagd::bagctl;
using bagd::control::testing::kNowUnixMs;
using bagd::control::testing::SampleNextHopGroups;

TEST_CASE("bagctl nexthop-group render: rates, durations, countdowns", "[control][render][nexthop-groups]") {
  CHECK(FormatRate(100e9) == "100G");
  CHECK(FormatRate(2.5e9) == "2.5G");
  CHECK(FormatRate(800e6) == "800M");
  CHECK(FormatRate(1e12) == "1T");
  CHECK(FormatRate(400e12) == "400T");
  CHECK(FormatRate(1500) == "1.5K");
  CHECK(FormatRate(999) == "999");
  CHECK(FormatRate(1) == "1");
  CHECK(FormatRate(0) == "0");
  CHECK(FormatRate(3.3e9) == "3.3G");
  CHECK(FormatRate(1.23456789e9) == "1.23457G");
  CHECK(FormatRate(999999999.9) == "1G");  // rounded before the unit is chosen
  CHECK(FormatRate(-1) == "-1");
  CHECK(FormatRate(std::numeric_limits<double>::infinity()) == "inf");

  CHECK(FormatSeconds(0) == "0s");
  CHECK(FormatSeconds(30) == "30s");
  CHECK(FormatSeconds(1.5) == "1.5s");
  CHECK(FormatSeconds(59) == "59s");
  CHECK(FormatSeconds(60) == "1m");
  CHECK(FormatSeconds(90) == "1m30s");
  CHECK(FormatSeconds(600) == "10m");
  CHECK(FormatSeconds(7200) == "2h");
  CHECK(FormatSeconds(3605) == "1h5s");
  CHECK(FormatSeconds(90.5) == "90.5s");

  CHECK(FormatCountdown(21000) == "21s");
  CHECK(FormatCountdown(20001) == "21s");  // rounded up: never "0s" while still pending
  CHECK(FormatCountdown(1) == "1s");
  CHECK(FormatCountdown(125000) == "2m05s");
  CHECK(FormatCountdown(3720000) == "1h02m");
}

TEST_CASE("bagctl nexthop-group render: columns", "[control][render][nexthop-groups]") {
  const auto sample = SampleNextHopGroups();
  const auto& g7 = sample.groups(0);
  const auto& settings = sample.settings();

  CHECK(AdvertisedColumn(g7.members(0)) == "100G");  // the community: no source shown
  CHECK(AdvertisedColumn(g7.members(2)) == "0 (drained)");
  CHECK(AdvertisedColumn(sample.groups(1).members(1)) == "3.3G (default)");

  CHECK(WeightColumn(g7.members(0)) == "40");
  CHECK(WeightColumn(g7.members(1)) == "1->2");  // the pending increase will raise it
  CHECK(WeightColumn(g7.members(2)) == "0");

  NextHopGroupMember m = g7.members(1);
  CHECK(DampingStateColumn(m, kNowUnixMs) == "increase at 12:00:21 (in 21s)");
  CHECK(DampingStateColumn(m, kNowUnixMs + 20500) == "increase at 12:00:21 (in 1s)");
  CHECK(DampingStateColumn(m, kNowUnixMs + 21000) == "increase at 12:00:21 (due)");
  CHECK(DampingStateColumn(m, kNowUnixMs - 100000) == "increase at 12:00:21 (in 2m01s)");
  m.set_damping_state("pending-decrease");
  m.set_pending_until_unix_ms(kNowUnixMs + 5000);
  CHECK(DampingStateColumn(m, kNowUnixMs) == "decrease at 12:00:05 (in 5s)");
  m.set_pending_until_unix_ms(0);
  CHECK(DampingStateColumn(m, kNowUnixMs) == "decrease pending");
  m.set_damping_state("stable");
  CHECK(DampingStateColumn(m, kNowUnixMs) == "stable");
  m.set_damping_state("frozen\x1b");  // a state this bagctl does not know: as given, escaped
  CHECK(DampingStateColumn(m, kNowUnixMs) == "frozen\\x1b");

  CHECK(PenaltyColumn(g7.members(0), settings) == "0.00");
  CHECK(PenaltyColumn(g7.members(1), settings) == "2.00 (hold 1m)");  // 60 s > the configured 30 s
}

TEST_CASE("bagctl nexthop-group render: the settings and every group", "[control][render][nexthop-groups]") {
  const std::string expected =
      "Weights: max weight 255, group budget 64; damping: decrease delay 0s, increase hold-down 30s, "
      "min change 5%, max hold-down 10m, half-life 5m\n"
      "Bandwidth changes: 12 applied, 3 held, 1 suppressed; FIB updates: 40 groups, 1200 routes\n"
      "\n"
      "group 7  ipv4-unicast  12 prefixes  max error 0.00%\n"
      "  NEXT HOP        ADVERTISED  APPLIED SHARE % WEIGHT ERROR % STATE                         PENALTY\n"
      "  192.0.2.2       100G           100G   95.24     40    0.00 stable                        0.00\n"
      "  192.0.2.3       5G             2.5G    2.38   1->2    0.00 increase at 12:00:21 (in 21s) 2.00 (hold 1m)\n"
      "  192.0.2.4       0 (drained)       0    0.00      0       - stable                        0.00\n"
      "  192.0.2.5       2.5G           2.5G    2.38      1    0.00 stable                        0.00\n"
      "\n"
      "group 8  ipv6-unicast  1 prefix  max error 0.76%\n"
      "  NEXT HOP        ADVERTISED     APPLIED SHARE % WEIGHT ERROR % STATE  PENALTY\n"
      "  2001:db8::3     10G                10G   75.19      3    0.25 stable 0.00\n"
      "  2001:db8::4     3.3G (default)    3.3G   24.81      1    0.76 stable 0.00\n";
  CHECK(RenderNextHopGroups(SampleNextHopGroups(), kNowUnixMs) == expected);

  SECTION("no groups; no budget; no members; every member drained; text from peers escaped") {
    ListNextHopGroupsResponse r = SampleNextHopGroups();
    r.mutable_settings()->set_group_budget(0);
    r.mutable_settings()->set_decrease_delay_s(2.5);
    r.mutable_counters()->set_group_updates(1);
    r.mutable_counters()->set_route_updates(1);
    r.clear_groups();
    CHECK(RenderNextHopGroups(r, kNowUnixMs) ==
          "Weights: max weight 255, no group budget; damping: decrease delay 2.5s, increase hold-down 30s, "
          "min change 5%, max hold-down 10m, half-life 5m\n"
          "Bandwidth changes: 12 applied, 3 held, 1 suppressed; FIB updates: 1 group, 1 route\n"
          "\n"
          "No next-hop groups.\n");

    NextHopGroup empty;
    empty.set_id(3);
    empty.set_family("ipv4-unicast");
    empty.set_prefixes(1);
    CHECK(RenderNextHopGroup(empty, r.settings(), kNowUnixMs) ==
          "group 3  ipv4-unicast  1 prefix  max error 0.00%\n"
          "  (no members)\n");

    // Every member advertised 0: equal weights instead, from an equal bandwidth of 1 bit/s.
    NextHopGroup drained;
    drained.set_id(4);
    drained.set_family("ipv6-unicast");
    drained.set_prefixes(2);
    drained.set_all_drained(true);
    for (const char* next_hop : {"2001:db8::a", "2001:db8::b\x1b[2J"}) {
      NextHopGroupMember* m = drained.add_members();
      m->set_next_hop(next_hop);
      m->set_bandwidth_bps(1);
      m->set_bandwidth_source("equal-cost");
      m->set_applied_bandwidth_bps(1);
      m->set_share(0.5);
      m->set_weight(1);
      m->set_weight_share(0.5);
      m->set_target_weight(1);
      m->set_damping_state("stable");
      m->set_next_increase_hold_down_s(30);
    }
    drained.mutable_members(1)->set_error(std::nan(""));  // whatever the daemon sends: no crash, "-"
    CHECK(RenderNextHopGroup(drained, r.settings(), kNowUnixMs) ==
          "group 4  ipv6-unicast  2 prefixes  max error 0.00%  all drained: equal weights\n"
          "  NEXT HOP           ADVERTISED     APPLIED SHARE % WEIGHT ERROR % STATE  PENALTY\n"
          "  2001:db8::a        1 (equal-cost)       1   50.00      1    0.00 stable 0.00\n"
          "  2001:db8::b\\x1b[2J 1 (equal-cost)       1   50.00      1       - stable 0.00\n");
  }
}

TEST_CASE("bagctl nexthop-group render: a group budget and a merged group", "[control][render][nexthop-groups]") {
  ListNextHopGroupsResponse r = SampleNextHopGroups();
  auto* b = r.mutable_budget();
  b->set_max_groups(512);
  b->set_reserve(2);
  b->set_merge_scope("same-next-hops");
  b->set_merge_weight("prefixes");
  b->set_wanted(33923);
  b->set_installed(510);
  b->set_merged(33413);
  b->set_merged_prefixes(99000);
  b->set_worst_error(0.194);
  b->set_weighted_error(0.1268);
  const std::string budget = RenderGroupBudget(*b);
  CHECK(budget ==
        "Group budget: 510 of 512 groups installed (2 kept free for moves), 33923 wanted; 33413 groups merged "
        "(99000 prefixes), worst share error 19.40%, prefixes-weighted 12.68%; merge scope same-next-hops\n");
  CHECK(RenderNextHopGroups(r, kNowUnixMs).find(budget) != std::string::npos);
  b->set_unrouted_prefixes(3);
  CHECK(RenderGroupBudget(*b).find("; 3 prefixes NOT installed\n") != std::string::npos);

  NextHopGroup g = r.groups(0);
  g.set_served_by(1073741824);
  g.set_merged(true);
  g.set_merge_error(0.125);
  g.set_served_as(3);
  auto* m = g.add_served_members();
  m->set_next_hop("10.0.0.1");
  m->set_weight(1);
  m = g.add_served_members();
  m->set_next_hop("10.0.0.2");
  m->set_weight(1);
  const std::string text = RenderNextHopGroup(g, r.settings(), kNowUnixMs);
  CHECK(text.find("\n  merged: served by installed group 1073741824 (the weights of group 3), share error 12.50%: "
                  "10.0.0.1*1 10.0.0.2*1\n") != std::string::npos);
  g.set_served_as(0);
  CHECK(RenderNextHopGroup(g, r.settings(), kNowUnixMs).find("(weights of a group that has left)") != std::string::npos);
  g.set_served_by(0);
  g.set_merge_error(1);
  CHECK(RenderNextHopGroup(g, r.settings(), kNowUnixMs).find("  not installed: no installed group uses only its next hops") !=
        std::string::npos);
  // Without a budget nothing of it shows.
  CHECK(RenderNextHopGroup(r.groups(0), r.settings(), kNowUnixMs).find("merged") == std::string::npos);
}

TEST_CASE("bagctl nexthop-group render: the FIB's own group cap", "[control][render][nexthop-groups]") {
  NextHopGroupBudget b;
  b.set_max_groups(4);
  b.set_reserve(1);
  b.set_merge_scope("same-next-hops");
  b.set_merge_weight("prefixes");
  b.set_installed(3);
  b.set_wanted(5);
  b.set_fib_limit(4);
  b.set_fib_groups(4);
  b.set_fib_refused(3);
  b.set_fib_rebound(1);
  const std::string quiet = RenderGroupBudget(b);
  CHECK(quiet.substr(quiet.find('\n') + 1) == "FIB group table: 4 of 4 groups held; 3 refused since start, 1 written in place\n");
  b.set_fib_waiting_groups(1);
  b.set_fib_waiting_routes(2);
  const std::string waiting = RenderGroupBudget(b);
  CHECK(waiting.substr(waiting.find('\n') + 1) ==
        "FIB group table: 4 of 4 groups held; 1 group NOT created (no room), 2 routes wait for them; 3 refused since "
        "start, 1 written in place\n");
}

TEST_CASE("bagctl nexthop-group render: FIB repairs and conflicts", "[control][render][nexthop-groups]") {
  bagd::control::v1::FibRepair r;
  r.set_audit_interval(30);
  r.set_audits(4);
  CHECK(RenderFibRepair(r) ==
        "FIB repair: 0 routes, 0 groups, 0 next hops put back that others changed (0 found by audits); audit every "
        "30 s, 4 so far\n");
  r.set_routes_deleted(2);
  r.set_routes_audit(1);
  r.set_groups_changed(1);
  r.set_held_now(1);
  r.set_conflicts_now(2);
  r.add_conflicts("10.50.3.0/24");
  r.add_conflicts("10.50.4.0/24");
  CHECK(RenderFibRepair(r) ==
        "FIB repair: 3 routes, 1 groups, 0 next hops put back that others changed (1 found by audits); audit every "
        "30 s, 4 so far; 1 held back (changed again and again)\n"
        "FIB conflicts: 2 prefixes held by another protocol's route (bagd leaves them alone): 10.50.3.0/24 "
        "10.50.4.0/24\n");
  r.set_audit_interval(0);
  r.set_conflicts_now(3);  // more than listed
  const std::string text = RenderFibRepair(r);
  CHECK(text.find("no periodic audit") != std::string::npos);
  CHECK(text.find("10.50.4.0/24 ...\n") != std::string::npos);
}

TEST_CASE("bagctl nexthop-group render: the APPL_DB key and confirmation", "[control][render][nexthop-groups]") {
  auto sample = SampleNextHopGroups();
  NextHopGroup g = sample.groups(0);
  g.set_fib_object(195887105);
  const std::string plain = RenderNextHopGroup(g, sample.settings(), kNowUnixMs);
  CHECK(plain.find("appldb") == std::string::npos);  // the kernel: no APPL_DB line
  g.set_fib_key("NEXTHOP_GROUP_TABLE:bagd-195887105");
  g.set_fib_confirmation("retrying");
  g.set_fib_routes_confirmed(9);
  g.set_fib_routes_pending(1);
  g.set_fib_routes_retried(1);
  const std::string out = RenderNextHopGroup(g, sample.settings(), kNowUnixMs);
  CHECK_THAT(out, Catch::Contains("  fib object 195887105\n  appldb NEXTHOP_GROUP_TABLE:bagd-195887105  retrying: 9 "
                                  "confirmed, 1 pending (1 written again)\n"));
  g.set_fib_confirmation("not asked (fib.confirm is CONFIRM_NONE)");
  g.set_fib_routes_confirmed(0);
  g.set_fib_routes_pending(0);
  CHECK_THAT(RenderNextHopGroup(g, sample.settings(), kNowUnixMs),
             Catch::Contains("appldb NEXTHOP_GROUP_TABLE:bagd-195887105  not asked (fib.confirm is CONFIRM_NONE)\n"));
  // Which way the routes go (docs/sonic.md, "Two route paths").
  g.set_fib_route_path("zmq tcp://127.0.0.1:8100 (CONFIG_DB SYSTEM_DEFAULTS|swss_zmq status=enabled)");
  CHECK_THAT(RenderNextHopGroup(g, sample.settings(), kNowUnixMs),
             Catch::Contains("not asked (fib.confirm is CONFIRM_NONE)\n  routes over zmq tcp://127.0.0.1:8100 "
                             "(CONFIG_DB SYSTEM_DEFAULTS|swss_zmq status=enabled)\n"));
}

TEST_CASE("bagctl nexthop-group render: an early reweight and its check", "[control][render][nexthop-groups]") {
  auto sample = SampleNextHopGroups();
  NextHopGroup g = sample.groups(0);
  CHECK(RenderNextHopGroup(g, sample.settings(), kNowUnixMs).find("early reweight") == std::string::npos);
  g.set_early_followed(true);
  g.set_early_follows(1);
  g.set_early_check_due_unix_ms(kNowUnixMs + 1500);
  CHECK_THAT(RenderNextHopGroup(g, sample.settings(), kNowUnixMs),
             Catch::Contains("\n  early reweight: followed the first prefixes' new bandwidths; the others are checked in 2s\n"));
  g.set_early_follows(2);
  g.set_early_checking(true);
  CHECK_THAT(RenderNextHopGroup(g, sample.settings(), kNowUnixMs),
             Catch::Contains("  early reweight: followed the first prefixes' new bandwidths (2 times); checking the others now\n"));
  g.set_early_reverted(true);
  CHECK_THAT(RenderNextHopGroup(g, sample.settings(), kNowUnixMs),
             Catch::Contains("(2 times); most prefixes kept their old ones: back to them, moving the changed ones out\n"));
}

TEST_CASE("bagctl nexthop-group render: the early reweight counters, once there was one", "[control][render][nexthop-groups]") {
  const auto sample = SampleNextHopGroups();
  WeightCounters c;
  CHECK(RenderWeightSettings(sample.settings(), c).find("Early reweights") == std::string::npos);
  c.set_early_follows(3);
  c.set_early_checked(100000);
  c.set_early_moved(20000);
  c.set_early_reverted(1);
  CHECK_THAT(RenderWeightSettings(sample.settings(), c),
             Catch::Contains("\nEarly reweights: 3 followed, 100000 prefixes checked, 20000 moved, 1 group put back\n"));
}

TEST_CASE("bagctl nexthop-group render: where a member's applied value comes from (local capacity)",
          "[control][render][nexthop-groups][local-capacity]") {
  const auto sample = SampleNextHopGroups();
  NextHopGroup g;
  g.set_id(3);
  g.set_family("ipv4-unicast");
  g.set_prefixes(2);
  struct Row {
    const char* next_hop;
    double advertised, applied;
    const char* source;
    const char* lag;
    const char* from;
    uint32_t weight;
  };
  for (const Row& row : {Row{"10.0.0.1", 400e9, 300e9, "community", "lag1", "local link lag1 300Gbps < advertised 400Gbps", 3},
                         Row{"10.0.0.2", 400e9, 400e9, "community", "", "", 4},
                         Row{"10.0.0.3", 0, 200e9, "local-link", "lag2", "local link lag2 200Gbps (no link bandwidth advertised)", 2}}) {
    NextHopGroupMember* m = g.add_members();
    m->set_next_hop(row.next_hop);
    m->set_bandwidth_bps(row.advertised);
    m->set_bandwidth_source(row.source);
    m->set_applied_bandwidth_bps(row.applied);
    m->set_weight(row.weight);
    m->set_target_weight(row.weight);
    m->set_share(row.applied / 900e9);
    m->set_weight_share(row.weight / 9.0);
    m->set_damping_state("stable");
    m->set_local_capacity_source(row.lag);
    m->set_applied_from(row.from);
  }
  CHECK(RenderNextHopGroup(g, sample.settings(), kNowUnixMs) ==
        "group 3  ipv4-unicast  2 prefixes  max error 0.00%\n"
        "  NEXT HOP        ADVERTISED     APPLIED SHARE % WEIGHT ERROR % STATE  PENALTY APPLIED FROM\n"
        "  10.0.0.1        400G              300G   33.33      3    0.00 stable 0.00    local link lag1 300Gbps < advertised 400Gbps\n"
        "  10.0.0.2        400G              400G   44.44      4    0.00 stable 0.00    advertised\n"
        "  10.0.0.3        0 (local-link)    200G   22.22      2    0.00 stable 0.00    local link lag2 200Gbps (no link bandwidth advertised)\n");
  SECTION("no member over a LAG: no column (the table as before)") {
    for (auto& m : *g.mutable_members()) m.clear_local_capacity_source();
    CHECK(RenderNextHopGroup(g, sample.settings(), kNowUnixMs).find("APPLIED FROM") == std::string::npos);
  }
}
