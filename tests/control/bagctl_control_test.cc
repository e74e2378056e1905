// bagctl's control commands run exactly as from the shell (RunControlCommand), against a
// real ControlServer with the fake backend.
#include <google/protobuf/util/json_util.h>
#include <google/protobuf/util/message_differencer.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <sstream>

#include "absl/strings/str_join.h"
#include "bgpd/control/control_server.h"
#include "tests/control/fake_backend.h"
#include "tools/bagctl/control_commands.h"

using namespace bagd;
using control::testing::FakeBackend;
using control::testing::TempDir;
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

struct Daemon {
  TempDir dir;
  FakeBackend backend;
  std::unique_ptr<control::ControlServer> server;
  Daemon() {
    // Times relative to the real clock, so the Up/Down column is predictable.
    const int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
    auto active = control::testing::SampleActive();
    active.set_state_since_unix_ms(now - 30000);
    auto admin_down = control::testing::SampleAdminDown();
    admin_down.set_state_since_unix_ms(now - 600000);
    backend.SetNeighbors({control::testing::SampleEstablished(), active, admin_down});
    auto started = control::ControlServer::Start(dir.SocketPath(), &backend);
    REQUIRE(started.ok());
    server = *std::move(started);
  }
  std::string socket() const { return dir.SocketPath(); }
};

}  // namespace

TEST_CASE("bagctl control: which socket", "[control][bagctl]") {
  CHECK(bagctl::ResolveControlSocket(std::nullopt, nullptr) == "/run/bagd/bagd.sock");
  CHECK(bagctl::ResolveControlSocket(std::nullopt, "") == "/run/bagd/bagd.sock");
  CHECK(bagctl::ResolveControlSocket(std::nullopt, "/tmp/env.sock") == "/tmp/env.sock");
  CHECK(bagctl::ResolveControlSocket("/tmp/flag.sock", "/tmp/env.sock") == "/tmp/flag.sock");

  CHECK(bagctl::IsControlCommand({"show", "neighbors"}));
  CHECK(bagctl::IsControlCommand({"neighbor", "192.0.2.2", "enable"}));
  CHECK(bagctl::IsControlCommand({"--socket", "/x", "show", "neighbors"}));
  CHECK(bagctl::IsControlCommand({"--socket=/x", "show", "neighbors"}));
  CHECK_FALSE(bagctl::IsControlCommand({"decode", "ff"}));
  CHECK_FALSE(bagctl::IsControlCommand({}));
}

TEST_CASE("bagctl control: show neighbors", "[control][bagctl]") {
  Daemon d;
  SECTION("the table") {
    Run r = Bagctl({"--socket", d.socket(), "show", "neighbors"});
    CHECK(r.code == 0);
    CHECK(r.err.empty());
    // The Up/Down column depends on the clock; the rest is fixed.
    CHECK(r.out.rfind("Neighbor        V         AS   MsgRcvd   MsgSent  Up/Down State/PfxRcd   PfxSnt Desc\n", 0) == 0);
    CHECK_THAT(r.out, Catch::Contains("192.0.2.2       4      65002       146       136  1:02:03         1200      800 spine-1\n"));
    CHECK_THAT(r.out, Catch::Contains("2001:db8::3     4 4200000003         0         0    never       Active        0 N/A\n"));
    CHECK_THAT(r.out, Catch::Contains(" Idle (Admin)        0 rr-2\n"));
    CHECK_THAT(r.out, Catch::EndsWith("\nTotal number of neighbors 3\n"));
    CHECK_THAT(r.out, !Catch::Contains("BGP neighbor is"));
  }
  SECTION("one neighbor: its row, then the detail") {
    Run r = Bagctl({"show", "neighbors", "192.0.2.2", "--socket=" + d.socket()});
    CHECK(r.code == 0);
    CHECK_THAT(r.out, Catch::Contains("Total number of neighbors 1\n\nBGP neighbor is 192.0.2.2, remote AS 65002"));
    CHECK_THAT(r.out, Catch::Contains("    Shutdown message: \"maintenance\"\n"));
    CHECK(d.backend.calls().back() == Call{"ListNeighbors", "192.0.2.2", ""});
  }
  SECTION("$BAGD_SOCKET is used without --socket") {
    Run r = Bagctl({"show", "neighbors"}, d.socket().c_str());
    CHECK(r.code == 0);
    CHECK_THAT(r.out, Catch::Contains("Total number of neighbors 3"));
  }
  SECTION("an unknown neighbor: the server's message, exit 1") {
    Run r = Bagctl({"--socket", d.socket(), "show", "neighbors", "192.0.2.99"});
    CHECK(r.code == 1);
    CHECK(r.out.empty());
    CHECK(r.err == "bagctl: no neighbor 192.0.2.99 is configured\n");
  }
  SECTION("no neighbors at all") {
    d.backend.SetNeighbors({});
    Run r = Bagctl({"--socket", d.socket(), "show", "neighbors"});
    CHECK(r.code == 0);
    CHECK(r.out == "No neighbors are configured.\n");
  }
}

TEST_CASE("bagctl control: show neighbors --json", "[control][bagctl]") {
  Daemon d;
  Run r = Bagctl({"--socket", d.socket(), "show", "neighbors", "--json"});
  REQUIRE(r.code == 0);
  // control.proto's field names, and zero-valued scalars printed too.
  CHECK_THAT(r.out, Catch::Contains("\"remote_as\": 65002"));
  CHECK_THAT(r.out, Catch::Contains("\"prefixes_received\": \"1200\""));  // uint64: a JSON string
  CHECK_THAT(r.out, Catch::Contains("\"admin_down\": false"));
  CHECK_THAT(r.out, Catch::Contains("\"last_notification_received\": {"));
  CHECK_THAT(r.out, Catch::Contains("\"shutdown_message\": \"maintenance\""));
  CHECK(r.out.back() == '\n');
  // It parses back into the same message.
  control::v1::ListNeighborsResponse parsed, expected;
  REQUIRE(google::protobuf::util::JsonStringToMessage(r.out, &parsed).ok());
  for (const auto& n : d.backend.ListNeighbors("")) *expected.add_neighbors() = n;
  CHECK(google::protobuf::util::MessageDifferencer::Equals(parsed, expected));
}

TEST_CASE("bagctl control: neighbor shutdown and enable", "[control][bagctl]") {
  Daemon d;
  Run r = Bagctl({"--socket", d.socket(), "neighbor", "192.0.2.2", "shutdown", "maintenance", "window", "ticket", "42"});
  CHECK(r.code == 0);
  CHECK(r.err.empty());
  CHECK(r.out ==
        "neighbor 192.0.2.2: administratively shut down with message \"maintenance window ticket 42\"; "
        "`bagctl neighbor 192.0.2.2 enable` brings it back\n");
  CHECK(d.backend.calls().back() == Call{"ShutdownNeighbor", "192.0.2.2", "maintenance window ticket 42"});

  r = Bagctl({"--socket", d.socket(), "neighbor", "192.0.2.2", "enable"});
  CHECK(r.code == 0);
  CHECK(r.out == "neighbor 192.0.2.2: enabled (administrative shutdown ended)\n");
  CHECK(d.backend.calls().back() == Call{"EnableNeighbor", "192.0.2.2", ""});

  SECTION("without a message") {
    r = Bagctl({"--socket", d.socket(), "neighbor", "2001:db8::3", "shutdown"});
    CHECK(r.code == 0);
    CHECK(r.out == "neighbor 2001:db8::3: administratively shut down; `bagctl neighbor 2001:db8::3 enable` brings it back\n");
    CHECK(d.backend.calls().back() == Call{"ShutdownNeighbor", "2001:db8::3", ""});
  }
  SECTION("after --, words that look like flags are part of the message") {
    r = Bagctl({"neighbor", "192.0.2.4", "shutdown", "--socket", d.socket(), "--", "--json", "is", "not", "a", "flag"});
    CHECK(r.code == 0);
    CHECK(d.backend.calls().back() == Call{"ShutdownNeighbor", "192.0.2.4", "--json is not a flag"});
  }
  SECTION("an unknown neighbor: the server's message, exit 1") {
    r = Bagctl({"--socket", d.socket(), "neighbor", "192.0.2.99", "enable"});
    CHECK(r.code == 1);
    CHECK(r.out.empty());
    CHECK(r.err == "bagctl: no neighbor 192.0.2.99 is configured\n");
    r = Bagctl({"--socket", d.socket(), "neighbor", "192.0.2.99", "shutdown", "x"});
    CHECK(r.code == 1);
    CHECK(r.err == "bagctl: no neighbor 192.0.2.99 is configured\n");
  }
  SECTION("not an address: exit 1 with the server's explanation") {
    r = Bagctl({"--socket", d.socket(), "neighbor", "spine-1", "enable"});
    CHECK(r.code == 1);
    CHECK(r.err ==
          "bagctl: 'spine-1' is not a neighbor address: expected an IPv4 or IPv6 address such as 192.0.2.1 or "
          "2001:db8::1\n");
  }
  SECTION("a message over 255 octets: exit 1") {
    std::vector<std::string> args = {"--socket", d.socket(), "neighbor", "192.0.2.2", "shutdown"};
    for (int i = 0; i < 26; ++i) args.push_back("123456789");  // 26 * 10 - 1 = 259 octets
    r = Bagctl(args);
    CHECK(r.code == 1);
    CHECK(r.err == "bagctl: the shutdown message is 259 octets of UTF-8; RFC 9003 allows at most 255\n");
  }
}

TEST_CASE("bagctl control: neighbor clear, hard and soft", "[control][bagctl][clear]") {
  Daemon d;
  Run r = Bagctl({"--socket", d.socket(), "neighbor", "192.0.2.2", "clear"});
  CHECK(r.code == 0);
  CHECK(r.err.empty());
  CHECK(r.out == "neighbor 192.0.2.2: session reset (Cease / Administrative Reset sent); it restarts now\n");
  CHECK(d.backend.calls().back() == Call{"ClearNeighbor", "192.0.2.2", "MODE_HARD"});

  r = Bagctl({"--socket", d.socket(), "neighbor", "192.0.2.2", "clear", "soft", "in"});
  CHECK(r.code == 0);
  CHECK(r.out ==
        "neighbor 192.0.2.2: route refresh requested for ipv4-unicast, ipv6-unicast; the neighbor re-sends its "
        "routes\n");
  CHECK(d.backend.calls().back() == Call{"ClearNeighbor", "192.0.2.2", "MODE_SOFT_IN"});

  r = Bagctl({"--socket", d.socket(), "neighbor", "192.0.2.2", "clear", "soft", "out"});
  CHECK(r.code == 0);
  CHECK(r.out == "neighbor 192.0.2.2: Adj-RIB-Out re-sent for ipv4-unicast, ipv6-unicast (6 prefixes)\n");
  CHECK(d.backend.calls().back() == Call{"ClearNeighbor", "192.0.2.2", "MODE_SOFT_OUT"});

  SECTION("soft: both, and BoRR/EoRR when enhanced route refresh was negotiated") {
    auto enhanced = control::testing::SampleEstablished();
    enhanced.mutable_negotiated()->set_enhanced_route_refresh(true);
    d.backend.SetNeighbors({enhanced});
    r = Bagctl({"neighbor", "192.0.2.2", "clear", "soft"}, d.socket().c_str());
    CHECK(r.code == 0);
    CHECK(r.out ==
          "neighbor 192.0.2.2: route refresh requested for ipv4-unicast, ipv6-unicast; the neighbor re-sends its "
          "routes\n"
          "neighbor 192.0.2.2: Adj-RIB-Out re-sent for ipv4-unicast, ipv6-unicast (6 prefixes, between BoRR and "
          "EoRR)\n");
    CHECK(d.backend.calls().back() == Call{"ClearNeighbor", "192.0.2.2", "MODE_SOFT"});
  }
  SECTION("a neighbor that is not Established: the reason, exit 1") {
    r = Bagctl({"--socket", d.socket(), "neighbor", "2001:db8::3", "clear", "soft", "out"});
    CHECK(r.code == 1);
    CHECK(r.out.empty());
    CHECK(r.err == "bagctl: neighbor 2001:db8::3 is not Established (Active)\n");
  }
  SECTION("soft in toward a neighbor without route refresh: the reason, exit 1") {
    auto plain = control::testing::SampleEstablished();
    plain.mutable_negotiated()->set_route_refresh(false);
    d.backend.SetNeighbors({plain});
    r = Bagctl({"--socket", d.socket(), "neighbor", "192.0.2.2", "clear", "soft", "in"});
    CHECK(r.code == 1);
    CHECK(r.err == "bagctl: neighbor 192.0.2.2 did not offer route refresh\n");
  }
  SECTION("an unknown neighbor: exit 1") {
    r = Bagctl({"--socket", d.socket(), "neighbor", "192.0.2.99", "clear"});
    CHECK(r.code == 1);
    CHECK(r.err == "bagctl: no neighbor 192.0.2.99 is configured\n");
  }
}

TEST_CASE("bagctl control: bagd not running", "[control][bagctl]") {
  TempDir dir;
  const std::string path = dir.path() + "/bagd.sock";
  const auto start = std::chrono::steady_clock::now();
  Run r = Bagctl({"--socket", path, "show", "neighbors"});
  CHECK(r.code == 1);
  CHECK(r.out.empty());
  CHECK(r.err == "bagctl: cannot reach bagd at " + path + ": No such file or directory (is bagd running?)\n");
  r = Bagctl({"neighbor", "192.0.2.2", "enable"}, path.c_str());
  CHECK(r.code == 1);
  CHECK(r.err == "bagctl: cannot reach bagd at " + path + ": No such file or directory (is bagd running?)\n");
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(2));
}

TEST_CASE("bagctl control: usage errors exit 2 without contacting bagd", "[control][bagctl]") {
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"show"},
           {"show", "route-map"},
           {"show", "neighbors", "192.0.2.2", "192.0.2.3"},
           {"neighbor", "192.0.2.2"},
           {"neighbor", "192.0.2.2", "reset"},
           {"neighbor", "192.0.2.2", "enable", "now"},
           {"neighbor", "192.0.2.2", "enable", "--json"},
           {"neighbor", "192.0.2.2", "clear", "hard"},
           {"neighbor", "192.0.2.2", "clear", "soft", "both"},
           {"neighbor", "192.0.2.2", "clear", "soft", "in", "out"},
           {"neighbor", "192.0.2.2", "clear", "in"},
           {"neighbor", "192.0.2.2", "clear", "--json"},
           {"show", "neighbors", "--verbose"},
           {"--socket"},
           {"--socket", "/tmp/x"},
       }) {
    INFO(absl::StrJoin(args, " "));
    Run r = Bagctl(args, "/nonexistent/bagd.sock");
    CHECK(r.code == 2);
    CHECK(r.out.empty());
    CHECK_THAT(r.err, Catch::StartsWith("bagctl: "));
    CHECK_THAT(r.err, !Catch::Contains("cannot reach"));
  }
}
