// `bagctl show nexthop-groups` run exactly as from the shell (RunControlCommand), against a
// real ControlServer with the fake backend.
#include <google/protobuf/util/json_util.h>
#include <google/protobuf/util/message_differencer.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <sstream>

#include "absl/strings/str_join.h"
#include "bgpd/control/control_server.h"
#include "tests/control/fake_backend.h"
#include "tests/control/serving.h"
#include "tools/bagctl/control_commands.h"
#include "tools/bagctl/nexthop_group_render.h"

using namespace bagd;
using control::testing::FakeBackend;
using control::testing::NeighborsOnlyBackend;
using control::testing::SampleNextHopGroups;
using control::testing::Serving;
using google::protobuf::util::MessageDifferencer;
using Call = FakeBackend::Call;

namespace {

struct Run {
  int code;
  std::string out, err;
};

Run Bagctl(std::vector<std::string> args, const char* env_socket = nullptr) {
  std::ostringstream out, err;
  const int code = bagctl::RunControlCommand(args, env_socket, out, err);
  return {code, out.str(), err.str()};
}

int64_t NowUnixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

control::v1::ListNextHopGroupsResponse OnlyGroup(uint32_t id) {
  const control::v1::ListNextHopGroupsResponse all = SampleNextHopGroups();
  control::v1::ListNextHopGroupsResponse r = all;
  r.clear_groups();
  for (const auto& g : all.groups()) {
    if (g.id() == id) *r.add_groups() = g;
  }
  return r;
}

}  // namespace

TEST_CASE("bagctl nexthop-groups: show nexthop-groups", "[control][bagctl][nexthop-groups]") {
  Serving<FakeBackend> d;
  const std::string socket = d.dir.SocketPath();
  // The sample's pending increase is due in 2024, long past: "(due)" whenever this runs,
  // so the output is the same as rendered here a moment later.
  SECTION("every group") {
    Run r = Bagctl({"--socket", socket, "show", "nexthop-groups"});
    CHECK(r.code == 0);
    CHECK(r.err.empty());
    CHECK(r.out == bagctl::RenderNextHopGroups(SampleNextHopGroups(), NowUnixMs()));
    CHECK_THAT(r.out, Catch::StartsWith("Weights: max weight 255, group budget 64;"));
    CHECK_THAT(r.out, Catch::Contains("\ngroup 7  ipv4-unicast  12 prefixes  max error 0.00%\n"));
    CHECK_THAT(r.out, Catch::Contains("increase at 12:00:21 (due)"));
    CHECK(d.backend.calls().back() == Call{"ListNextHopGroups", "", ""});
  }
  SECTION("one group by id") {
    Run r = Bagctl({"show", "nexthop-groups", "8", "--socket", socket});
    CHECK(r.code == 0);
    CHECK(r.out == bagctl::RenderNextHopGroups(OnlyGroup(8), NowUnixMs()));
    CHECK(d.backend.groups_requests().back().id() == 8);
    CHECK(d.backend.groups_requests().back().prefix().empty());
  }
  SECTION("the group of a route, by prefix or by address; `nexthop-group` works too") {
    Run r = Bagctl({"--socket", socket, "show", "nexthop-groups", "192.0.2.77/24"});
    CHECK(r.code == 0);
    CHECK_THAT(r.out, Catch::Contains("\ngroup 7  "));
    CHECK_THAT(r.out, !Catch::Contains("\ngroup 8  "));
    CHECK(d.backend.calls().back() == Call{"ListNextHopGroups", "192.0.2.0/24", ""});
    r = Bagctl({"--socket", socket, "show", "nexthop-group", "2001:db8::9"});
    CHECK(r.code == 0);
    CHECK(r.out == bagctl::RenderNextHopGroups(OnlyGroup(8), NowUnixMs()));
    CHECK(d.backend.calls().back() == Call{"ListNextHopGroups", "2001:db8::9", ""});
  }
  SECTION("NOT_FOUND: the server's message, exit 1") {
    Run r = Bagctl({"--socket", socket, "show", "nexthop-groups", "99"});
    CHECK(r.code == 1);
    CHECK(r.out.empty());
    CHECK(r.err == "bagctl: no next-hop group 99\n");
    r = Bagctl({"--socket", socket, "show", "nexthop-groups", "198.51.100.0/24"});
    CHECK(r.code == 1);
    CHECK(r.err == "bagctl: route 198.51.100.0/24 has no next-hop group\n");
  }
  SECTION("no groups") {
    auto none = SampleNextHopGroups();
    none.clear_groups();
    d.backend.SetNextHopGroups(none);
    Run r = Bagctl({"--socket", socket, "show", "nexthop-groups"});
    CHECK(r.code == 0);
    CHECK_THAT(r.out, Catch::EndsWith("\n\nNo next-hop groups.\n"));
  }
  SECTION("--json: the response with the proto's field names") {
    Run r = Bagctl({"--socket", socket, "show", "nexthop-groups", "--json"});
    REQUIRE(r.code == 0);
    CHECK_THAT(r.out, Catch::Contains("\"applied_bandwidth_bps\": 2500000000"));
    CHECK_THAT(r.out, Catch::Contains("\"damping_state\": \"pending-increase\""));
    CHECK_THAT(r.out, Catch::Contains("\"pending_until_unix_ms\": \"1714564821000\""));  // int64: a string
    CHECK_THAT(r.out, Catch::Contains("\"prefixes\": \"12\""));
    CHECK_THAT(r.out, Catch::Contains("\"all_drained\": false"));  // zero values are printed
    CHECK_THAT(r.out, Catch::Contains("\"group_budget\": 64"));
    CHECK(r.out.back() == '\n');
    control::v1::ListNextHopGroupsResponse parsed;
    REQUIRE(google::protobuf::util::JsonStringToMessage(r.out, &parsed).ok());
    CHECK(MessageDifferencer::Equals(parsed, SampleNextHopGroups()));
    r = Bagctl({"--socket", socket, "show", "nexthop-groups", "7", "--json"});
    REQUIRE(r.code == 0);
    REQUIRE(google::protobuf::util::JsonStringToMessage(r.out, &parsed).ok());
    CHECK(MessageDifferencer::Equals(parsed, OnlyGroup(7)));
  }
}

TEST_CASE("bagctl nexthop-groups: show routes PREFIX names the route's group", "[control][bagctl][nexthop-groups]") {
  Serving<FakeBackend> d;
  Run r = Bagctl({"--socket", d.dir.SocketPath(), "show", "routes", "192.0.2.0/24"});
  CHECK(r.code == 0);
  CHECK_THAT(r.out, Catch::StartsWith("BGP routing table entry for 192.0.2.0/24\n"
                                      "Paths: 3 available, best #1, 2 in the multipath set\n"
                                      "Next-hop group 7\n"));
  r = Bagctl({"--socket", d.dir.SocketPath(), "show", "routes", "198.51.100.0/24"});
  CHECK(r.code == 0);
  CHECK_THAT(r.out, !Catch::Contains("Next-hop group"));
  r = Bagctl({"--socket", d.dir.SocketPath(), "show", "routes", "192.0.2.0/24", "--json"});
  CHECK_THAT(r.out, Catch::Contains("\"nexthop_group\": 7"));
}

TEST_CASE("bagctl nexthop-groups: a bagd without a routing table", "[control][bagctl][nexthop-groups]") {
  Serving<NeighborsOnlyBackend> d;
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"show", "nexthop-groups"},
           {"show", "nexthop-groups", "7"},
           {"show", "nexthop-groups", "192.0.2.0/24", "--json"},
       }) {
    INFO(absl::StrJoin(args, " "));
    Run r = Bagctl(args, d.dir.SocketPath().c_str());
    CHECK(r.code == 1);
    CHECK(r.out.empty());
    CHECK(r.err == "bagctl: the routing table is not available in this bagd\n");
  }
}

TEST_CASE("bagctl nexthop-groups: a bad prefix is refused without asking bagd", "[control][bagctl][nexthop-groups]") {
  Run r = Bagctl({"show", "nexthop-groups", "192.0.2.0/40"}, "/nonexistent/bagd.sock");
  CHECK(r.code == 1);
  CHECK(r.out.empty());
  CHECK(r.err == "bagctl: '192.0.2.0/40' is not a prefix: the length must be 0 to 32 for IPv4\n");
  r = Bagctl({"show", "nexthop-groups", "spine-1"}, "/nonexistent/bagd.sock");
  CHECK(r.code == 1);
  CHECK_THAT(r.err, Catch::StartsWith("bagctl: 'spine-1' is not a prefix or address: "));
}

TEST_CASE("bagctl nexthop-groups: usage errors exit 2 without contacting bagd", "[control][bagctl][nexthop-groups]") {
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"show", "nexthop-groups", "7", "8"},
           {"show", "nexthop-groups", "7", "192.0.2.0/24"},
           {"show", "nexthop-groups", "0"},
           {"show", "nexthop-groups", "4294967296"},
           {"show", "nexthop-groups", "--family", "ipv4"},
           {"show", "nexthop-groups", "--limit", "1"},
           {"show", "nexthop-groups", "--verbose"},
       }) {
    INFO(absl::StrJoin(args, " "));
    Run r = Bagctl(args, "/nonexistent/bagd.sock");
    CHECK(r.code == 2);
    CHECK(r.out.empty());
    CHECK_THAT(r.err, Catch::StartsWith("bagctl: "));
    CHECK_THAT(r.err, !Catch::Contains("cannot reach"));
  }
}

TEST_CASE("bagctl nexthop-groups: the help lists the command", "[control][bagctl][nexthop-groups]") {
  const std::string usage = bagctl::kControlUsage;
  CHECK_THAT(usage, Catch::Contains("  show nexthop-groups [ID | PREFIX | ADDRESS] [--json]\n"));
  Run r = Bagctl({"show", "what"}, "/nonexistent/bagd.sock");
  CHECK(r.code == 2);
  CHECK_THAT(r.err, Catch::Contains("(neighbors, routes, rib-summary, nexthop-groups, policies, bfd, bmp)"));
  CHECK_THAT(r.err, Catch::Contains("show nexthop-groups"));
}
