// `bagctl show routes` and `bagctl show rib-summary` run exactly as from the shell
// (RunControlCommand), against a real ControlServer with the fake backend.
#include <google/protobuf/util/json_util.h>
#include <google/protobuf/util/message_differencer.h>

#include <catch2/catch.hpp>
#include <sstream>

#include "absl/strings/str_join.h"
#include "bgpd/control/control_server.h"
#include "tests/control/fake_backend.h"
#include "tools/bagctl/control_commands.h"
#include "tools/bagctl/route_render.h"

using namespace bagd;
using control::testing::FakeBackend;
using control::testing::NeighborsOnlyBackend;
using control::testing::SampleRibSummary;
using control::testing::SampleRoutes;
using control::testing::TempDir;
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

template <typename Backend>
struct Daemon {
  TempDir dir;
  Backend backend;
  std::unique_ptr<control::ControlServer> server;
  Daemon() {
    auto started = control::ControlServer::Start(dir.SocketPath(), &backend);
    REQUIRE(started.ok());
    server = *std::move(started);
  }
  std::string socket() const { return dir.SocketPath(); }
};

}  // namespace

TEST_CASE("bagctl routes: show routes", "[control][bagctl][routes]") {
  Daemon<FakeBackend> d;
  SECTION("all routes: the table") {
    Run r = Bagctl({"--socket", d.socket(), "show", "routes"});
    CHECK(r.code == 0);
    CHECK(r.err.empty());
    CHECK(r.out == bagctl::RenderRouteTable(SampleRoutes()));
    CHECK_THAT(r.out, Catch::Contains("\n*> 192.0.2.0/24 "));
    CHECK_THAT(r.out, Catch::EndsWith("\nDisplayed 3 prefixes and 5 paths\n"));
    CHECK(d.backend.routes_requests().back().limit() == 0);
  }
  SECTION("--family and --limit reach the daemon as the API spells them") {
    Run r = Bagctl({"show", "routes", "--family", "ipv6", "--socket", d.socket()});
    CHECK(r.code == 0);
    CHECK_THAT(r.out, Catch::Contains("*> 2001:db8::/32 "));
    CHECK_THAT(r.out, !Catch::Contains("192.0.2.0/24"));
    CHECK(d.backend.calls().back() == Call{"ListRoutes", "", "ipv6-unicast"});
    r = Bagctl({"show", "routes", "--family=ipv4-unicast", "--limit=1", "--socket", d.socket()});
    CHECK(r.code == 0);
    CHECK(d.backend.routes_requests().back().family() == "ipv4-unicast");
    CHECK(d.backend.routes_requests().back().limit() == 1);
    CHECK_THAT(r.out, Catch::EndsWith("\nDisplayed the first 1 prefix and 3 paths; more routes were left out (--limit)\n"));
  }
  SECTION("one prefix: every path in detail") {
    Run r = Bagctl({"--socket", d.socket(), "show", "routes", "192.0.2.0/24"});
    CHECK(r.code == 0);
    CHECK(r.out == bagctl::RenderRouteDetail(SampleRoutes().routes(0)));
    CHECK_THAT(r.out, Catch::Contains("    not best: longer AS path (step 2 as-path-length)\n"));
    CHECK(d.backend.calls().back() == Call{"ListRoutes", "192.0.2.0/24", "ipv4-unicast"});
  }
  SECTION("an address: the route that covers it") {
    Run r = Bagctl({"--socket", d.socket(), "show", "route", "198.51.100.7"});
    CHECK(r.code == 0);
    CHECK_THAT(r.out, Catch::StartsWith("BGP routing table entry for 198.51.100.0/24\n"));
  }
  SECTION("no route: the server's message, exit 1") {
    Run r = Bagctl({"--socket", d.socket(), "show", "routes", "203.0.113.0/24"});
    CHECK(r.code == 1);
    CHECK(r.out.empty());
    CHECK(r.err == "bagctl: no route for 203.0.113.0/24 in the routing table\n");
  }
  SECTION("an empty table") {
    d.backend.SetRoutes({});
    Run r = Bagctl({"--socket", d.socket(), "show", "routes"});
    CHECK(r.code == 0);
    CHECK(r.out == "No routes.\n");
    r = Bagctl({"--socket", d.socket(), "show", "routes", "--family", "ipv6"});
    CHECK(r.out == "No ipv6-unicast routes.\n");
  }
}

TEST_CASE("bagctl routes: --json", "[control][bagctl][routes]") {
  Daemon<FakeBackend> d;
  SECTION("show routes") {
    Run r = Bagctl({"--socket", d.socket(), "show", "routes", "--json"});
    REQUIRE(r.code == 0);
    CHECK_THAT(r.out, Catch::Contains("\"link_bandwidth_bps\": 10000000000"));
    CHECK_THAT(r.out, Catch::Contains("\"decision_step\": \"as-path-length\""));
    CHECK_THAT(r.out, Catch::Contains("\"truncated\": false"));  // zero values are printed
    CHECK(r.out.back() == '\n');
    control::v1::ListRoutesResponse parsed;
    REQUIRE(google::protobuf::util::JsonStringToMessage(r.out, &parsed).ok());
    CHECK(MessageDifferencer::Equals(parsed, SampleRoutes()));
  }
  SECTION("show rib-summary") {
    Run r = Bagctl({"--socket", d.socket(), "show", "rib-summary", "--json"});
    REQUIRE(r.code == 0);
    CHECK_THAT(r.out, Catch::Contains("\"memory_bytes\": \"1258291\""));  // uint64: a JSON string
    CHECK_THAT(r.out, Catch::Contains("\"rejected_as_loop\": \"3\""));
    control::v1::RibSummary parsed;
    REQUIRE(google::protobuf::util::JsonStringToMessage(r.out, &parsed).ok());
    CHECK(MessageDifferencer::Equals(parsed, SampleRibSummary()));
  }
}

TEST_CASE("bagctl routes: show rib-summary", "[control][bagctl][routes]") {
  Daemon<FakeBackend> d;
  Run r = Bagctl({"--socket", d.socket(), "show", "rib-summary"});
  CHECK(r.code == 0);
  CHECK(r.err.empty());
  CHECK(r.out == bagctl::RenderRibSummary(SampleRibSummary()));
  CHECK(d.backend.calls().back() == Call{"GetRibSummary", "", ""});
}

TEST_CASE("bagctl routes: a bagd without a routing table", "[control][bagctl][routes]") {
  Daemon<NeighborsOnlyBackend> d;
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"show", "routes"},
           {"show", "routes", "192.0.2.0/24"},
           {"show", "routes", "--json"},
           {"show", "rib-summary"},
           {"show", "rib-summary", "--json"},
       }) {
    INFO(absl::StrJoin(args, " "));
    Run r = Bagctl(args, d.socket().c_str());
    CHECK(r.code == 1);
    CHECK(r.out.empty());
    CHECK(r.err == "bagctl: the routing table is not available in this bagd\n");
  }
}

TEST_CASE("bagctl routes: a bad prefix is refused without asking bagd", "[control][bagctl][routes]") {
  // No daemon at this path: the answer must be about the prefix, not the socket.
  Run r = Bagctl({"show", "routes", "192.0.2.0/40"}, "/nonexistent/bagd.sock");
  CHECK(r.code == 1);
  CHECK(r.out.empty());
  CHECK(r.err == "bagctl: '192.0.2.0/40' is not a prefix: the length must be 0 to 32 for IPv4\n");
  r = Bagctl({"show", "routes", "2001:db8::/32", "--family", "ipv4"}, "/nonexistent/bagd.sock");
  CHECK(r.code == 1);
  CHECK(r.err == "bagctl: 2001:db8::/32 is an IPv6 prefix, but the family asked for is ipv4-unicast\n");
  r = Bagctl({"show", "routes", "spine-1"}, "/nonexistent/bagd.sock");
  CHECK(r.code == 1);
  CHECK_THAT(r.err, Catch::StartsWith("bagctl: 'spine-1' is not a prefix or address: "));
}

TEST_CASE("bagctl routes: usage errors exit 2 without contacting bagd", "[control][bagctl][routes]") {
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"show", "routing-table"},
           {"show", "routes", "192.0.2.0/24", "198.51.100.0/24"},
           {"show", "routes", "--family", "ipv5"},
           {"show", "routes", "--family"},
           {"show", "routes", "--family="},
           {"show", "routes", "--limit", "-1"},
           {"show", "routes", "--limit", "ten"},
           {"show", "routes", "--limit", "99999999999"},
           {"show", "routes", "--limit"},
           {"show", "rib-summary", "ipv4"},
           {"show", "rib-summary", "--limit", "5"},
           {"show", "neighbors", "--family", "ipv4"},
           {"neighbor", "192.0.2.2", "enable", "--limit", "1"},
       }) {
    INFO(absl::StrJoin(args, " "));
    Run r = Bagctl(args, "/nonexistent/bagd.sock");
    CHECK(r.code == 2);
    CHECK(r.out.empty());
    CHECK_THAT(r.err, Catch::StartsWith("bagctl: "));
    CHECK_THAT(r.err, !Catch::Contains("cannot reach"));
  }
}
