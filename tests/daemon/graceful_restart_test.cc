// Graceful restart (RFC 4724) on a Speaker with a ManualClock and a recording FIB: the helper
// role (a neighbor restarts: its paths stay stale, the FIB is untouched, then re-announced
// paths replace them and End-of-RIB, a timer or a missing F bit removes the rest) and the
// restarting-speaker role (bagd restarted: R and F in its OPEN, its initial advertisement
// to a helper deferred until its tables are in). No test sleeps.
#include <catch2/catch.hpp>

#include "bgpd/session/log.h"
#include "tests/scenario/recording_fib.h"
#include "tests/session/session_harness.h"

namespace bagd::session::testing {
namespace {

constexpr uint32_t kPeerId = 0x0a090909;
constexpr uint32_t kNextHop = 0x0a000002;  // 10.0.0.2

struct Quiet {
  Quiet() { log::SetLevel(getenv("BAGD_TEST_LOG") ? log::Level::kDebug : log::Level::kError); }
  ~Quiet() { log::SetLevel(log::Level::kInfo); }
};

constexpr char kConfig[] = R"(
router { asn: 65000 router_id: "10.255.0.1" ebgp_requires_policy: false }
fib { backend: BACKEND_NONE }
multipath { maximum_paths_ebgp: 4 as_path_relax: true }
neighbors { address: "127.0.0.2" remote_as: 65002 passive: true }
neighbors { address: "127.0.0.3" remote_as: 65003 passive: true }
)";

// Graceful Restart capability: restart time, IPv4 unicast with F as given.
wire::Bytes GrCap(uint16_t restart_time, bool forwarding, bool restart_state = false) {
  const uint16_t flags = static_cast<uint16_t>((restart_state ? 0x8000 : 0) | (restart_time & 0x0fff));
  return {64, 6, static_cast<uint8_t>(flags >> 8), static_cast<uint8_t>(flags), 0, 1, 1,
          static_cast<uint8_t>(forwarding ? 0x80 : 0)};
}

// Link bandwidth 1 Gbit/s (transitive, AS 65002): the FIB gets weighted groups.
const wire::Bytes kLb = {0xc0, 16, 8, 0x00, 0x04, 0xfd, 0xea, 0x4c, 0xee, 0x6b, 0x28};
// 3 Gbit/s from AS 65003: the group is weighted 1:3.
const wire::Bytes kLb3 = {0xc0, 16, 8, 0x00, 0x04, 0xfd, 0xeb, 0x4d, 0xb2, 0xd0, 0x5e};
const wire::Bytes kEndOfRib = Message(2, std::vector<uint8_t>{0, 0, 0, 0});

control::v1::NeighborStatus Status(SessionHarness& h, const std::string& addr) {
  auto all = h.speaker().ListNeighbors(addr);
  REQUIRE(all.size() == 1);
  return all.front();
}

// Hold time 0: no KEEPALIVEs needed while the clock jumps minutes ahead.
int Establish(SessionHarness& h, const std::string& addr, uint32_t asn, std::span<const uint8_t> caps) {
  const int fd = h.Connect(addr);
  h.Write(fd, Open(asn, kPeerId, 0, {{1, 1}}, caps));
  h.Write(fd, Keepalive());
  h.Read(fd);
  REQUIRE(Status(h, addr).state() == "Established");
  return fd;
}

size_t PathsOf(SessionHarness& h, const std::string& addr) {
  return h.speaker().rib().paths_of(h.speaker().FindPeer(addr)->rib_index);
}

// What the FIB holds, as text: each route and its group's members (next hop, weight).
std::string FibText(const test::RecordingFib& fib) {
  std::string out;
  for (const char* p : {"10.1.1.0/24", "10.1.2.0/24", "10.1.3.0/24"}) {
    const auto* g = fib.GroupOfRoute(*net::Prefix::Parse(p));
    absl::StrAppend(&out, p, ":");
    if (g == nullptr) {
      absl::StrAppend(&out, " none; ");
      continue;
    }
    for (const auto& m : *g) absl::StrAppend(&out, " ", m.next_hop.ToString(), "/", m.weight);
    absl::StrAppend(&out, "; ");
  }
  return out;
}

// Two neighbors announce the same three /24s with link bandwidth (a two-way weighted group);
// 127.0.0.2 negotiates graceful restart (restart time 120, F for IPv4).
struct TwoPeers {
  Quiet quiet;
  test::RecordingFib fib;
  SessionHarness h{kConfig, &fib};
  int a = -1, b = -1;
  TwoPeers() {
    a = Establish(h, "127.0.0.2", 65002, GrCap(120, true));
    b = Establish(h, "127.0.0.3", 65003, GrCap(120, true));
    h.Write(a, Update(65002, kNextHop, {{1, 1}, {1, 2}, {1, 3}}, kLb));
    h.Write(b, Update(65003, 0x0a000003, {{1, 1}, {1, 2}, {1, 3}}, kLb3));
    h.Write(a, kEndOfRib);
    h.Write(b, kEndOfRib);
    h.Advance(1000);
    REQUIRE(PathsOf(h, "127.0.0.2") == 3);
    REQUIRE(fib.route_count() == 3);
    REQUIRE(fib.TakeErrors().empty());
    REQUIRE(FibText(fib) == "10.1.1.0/24: 10.0.0.2/1 10.0.0.3/3; 10.1.2.0/24: 10.0.0.2/1 10.0.0.3/3; "
                            "10.1.3.0/24: 10.0.0.2/1 10.0.0.3/3; ");
  }
  // 127.0.0.2 restarts: the TCP connection is reset, no NOTIFICATION.
  void Crash() {
    h.Close(a);
    a = -1;
    h.Run();
    REQUIRE(Status(h, "127.0.0.2").state() != "Established");
  }
};

TEST_CASE("Graceful restart helper: a session lost without a NOTIFICATION keeps the paths and the FIB",
          "[session][graceful-restart]") {
  TwoPeers t;
  const std::string fib_before = FibText(t.fib);
  const size_t groups_before = t.fib.group_count();
  t.Crash();
  t.h.Advance(5000);
  CHECK(PathsOf(t.h, "127.0.0.2") == 3);
  CHECK(FibText(t.fib) == fib_before);  // same groups, same weights
  CHECK(t.fib.group_count() == groups_before);
  CHECK(t.fib.TakeErrors().empty());
  const auto gr = Status(t.h, "127.0.0.2").graceful_restart();
  CHECK(gr.phase() == "restarting");
  CHECK(gr.stale_paths() == 3);
  CHECK(gr.restarts() == 1);
  CHECK(gr.deadline_unix_ms() > 0);
  // Still exported to the other neighbor: stale paths are used as before (RFC 4724 §4.2).
  CHECK(t.h.speaker().AdvertisedRoutes(t.h.speaker().FindPeer("127.0.0.3")->rib_index)->size() == 3);
}

TEST_CASE("Graceful restart helper: re-announced paths replace the stale ones, End-of-RIB removes the rest",
          "[session][graceful-restart]") {
  TwoPeers t;
  t.Crash();
  t.h.Advance(10000);
  const int a = Establish(t.h, "127.0.0.2", 65002, GrCap(120, true, /*restart_state=*/true));
  CHECK(Status(t.h, "127.0.0.2").graceful_restart().phase() == "stale");
  CHECK(Status(t.h, "127.0.0.2").graceful_restart().peer_restart_state());
  // It has two of the three now.
  t.h.Write(a, Update(65002, kNextHop, {{1, 1}, {1, 2}}, kLb));
  t.h.Advance(100);
  auto gr = Status(t.h, "127.0.0.2").graceful_restart();
  CHECK(gr.stale_paths() == 1);
  CHECK(PathsOf(t.h, "127.0.0.2") == 3);
  t.h.Write(a, kEndOfRib);
  t.h.Advance(1000);
  CHECK(PathsOf(t.h, "127.0.0.2") == 2);
  gr = Status(t.h, "127.0.0.2").graceful_restart();
  CHECK(gr.phase().empty());
  CHECK(gr.stale_paths_removed() == 1);
  // 10.1.3.0/24 now has only the other neighbor's path; the two others keep both.
  const auto* g3 = t.fib.GroupOfRoute(*net::Prefix::Parse("10.1.3.0/24"));
  REQUIRE(g3 != nullptr);
  CHECK(g3->size() == 1);
  const auto* g1 = t.fib.GroupOfRoute(*net::Prefix::Parse("10.1.1.0/24"));
  REQUIRE(g1 != nullptr);
  CHECK(g1->size() == 2);
  CHECK(t.fib.TakeErrors().empty());
}

TEST_CASE("Graceful restart helper: the neighbor connects again while its old session is still up",
          "[session][graceful-restart]") {
  TwoPeers t;
  // RFC 4724 §4.2: no TCP failure seen on the old connection; the new OPEN is the restart.
  const int a = Establish(t.h, "127.0.0.2", 65002, GrCap(120, true, true));
  CHECK(Status(t.h, "127.0.0.2").established_transitions() == 2);
  auto gr = Status(t.h, "127.0.0.2").graceful_restart();
  CHECK(gr.phase() == "stale");
  CHECK(gr.stale_paths() == 3);
  CHECK(PathsOf(t.h, "127.0.0.2") == 3);
  t.h.Write(a, Update(65002, kNextHop, {{1, 1}, {1, 2}, {1, 3}}, kLb));
  t.h.Write(a, kEndOfRib);
  t.h.Advance(100);
  CHECK(Status(t.h, "127.0.0.2").graceful_restart().phase().empty());
  CHECK(PathsOf(t.h, "127.0.0.2") == 3);
  CHECK(FibText(t.fib) == "10.1.1.0/24: 10.0.0.2/1 10.0.0.3/3; 10.1.2.0/24: 10.0.0.2/1 10.0.0.3/3; "
                          "10.1.3.0/24: 10.0.0.2/1 10.0.0.3/3; ");
  CHECK(t.h.PeerClosed(t.a));  // the old connection was dropped
}

TEST_CASE("Graceful restart helper: the restart time ends without the session back: the paths go",
          "[session][graceful-restart]") {
  TwoPeers t;
  t.Crash();
  t.h.Advance(119000);
  CHECK(PathsOf(t.h, "127.0.0.2") == 3);
  t.h.Advance(2000);
  CHECK(PathsOf(t.h, "127.0.0.2") == 0);
  const auto gr = Status(t.h, "127.0.0.2").graceful_restart();
  CHECK(gr.phase().empty());
  CHECK(gr.timers_expired() == 1);
  CHECK(gr.stale_paths_removed() == 3);
  const auto* g1 = t.fib.GroupOfRoute(*net::Prefix::Parse("10.1.1.0/24"));
  REQUIRE(g1 != nullptr);
  CHECK(g1->size() == 1);  // the other neighbor's path alone
}

TEST_CASE("Graceful restart helper: the new OPEN without F (or without the capability) removes the stale paths",
          "[session][graceful-restart]") {
  TwoPeers t;
  t.Crash();
  t.h.Advance(1000);
  SECTION("F bit 0") {
    Establish(t.h, "127.0.0.2", 65002, GrCap(120, false, true));
  }
  SECTION("no Graceful Restart capability") {
    Establish(t.h, "127.0.0.2", 65002, {});
  }
  t.h.Advance(100);
  CHECK(PathsOf(t.h, "127.0.0.2") == 0);
  CHECK(Status(t.h, "127.0.0.2").graceful_restart().phase().empty());
  CHECK(Status(t.h, "127.0.0.2").graceful_restart().stale_paths_removed() == 3);
}

TEST_CASE("Graceful restart helper: back without End-of-RIB, stale_routes_time removes what is still stale",
          "[session][graceful-restart]") {
  TwoPeers t;
  t.Crash();
  const int a = Establish(t.h, "127.0.0.2", 65002, GrCap(120, true));
  t.h.Write(a, Update(65002, kNextHop, {{1, 1}}, kLb));
  t.h.Advance(359000);
  CHECK(PathsOf(t.h, "127.0.0.2") == 3);
  t.h.Advance(2000);
  CHECK(PathsOf(t.h, "127.0.0.2") == 1);
  CHECK(Status(t.h, "127.0.0.2").graceful_restart().timers_expired() == 1);
}

TEST_CASE("Graceful restart helper: a NOTIFICATION, or a neighbor without graceful restart, withdraws at once",
          "[session][graceful-restart]") {
  TwoPeers t;
  SECTION("the neighbor sends Cease") {
    t.h.Write(t.a, Message(3, std::vector<uint8_t>{6, 2}));
    t.h.Run();
    CHECK(PathsOf(t.h, "127.0.0.2") == 0);
  }
  SECTION("127.0.0.3 offered restart time 0 (End-of-RIB only)") {
    Quiet q;
    test::RecordingFib fib;
    SessionHarness h(kConfig, &fib);
    const int c = Establish(h, "127.0.0.3", 65003, GrCap(0, false));
    h.Write(c, Update(65003, 0x0a000003, {{1, 1}}, kLb));
    h.Advance(100);
    REQUIRE(PathsOf(h, "127.0.0.3") == 1);
    h.Close(c);
    h.Run();
    CHECK(PathsOf(h, "127.0.0.3") == 0);
  }
  CHECK(Status(t.h, "127.0.0.2").graceful_restart().restarts() == 0);
}

TEST_CASE("Graceful restart helper: off in the config, nothing is kept", "[session][graceful-restart]") {
  Quiet q;
  test::RecordingFib fib;
  SessionHarness h(R"(
router { asn: 65000 router_id: "10.255.0.1" ebgp_requires_policy: false graceful_restart { enabled: false } }
fib { backend: BACKEND_NONE }
neighbors { address: "127.0.0.2" remote_as: 65002 passive: true }
)", &fib);
  const int a = Establish(h, "127.0.0.2", 65002, GrCap(120, true));
  CHECK_FALSE(Status(h, "127.0.0.2").graceful_restart().enabled());
  CHECK(Status(h, "127.0.0.2").graceful_restart().retained_size() == 0);
  h.Write(a, Update(65002, kNextHop, {{1, 1}}, kLb));
  h.Advance(100);
  REQUIRE(PathsOf(h, "127.0.0.2") == 1);
  h.Close(a);
  h.Run();
  CHECK(PathsOf(h, "127.0.0.2") == 0);
}

TEST_CASE("Graceful restart helper: the stale paths in Prometheus", "[session][graceful-restart][metrics]") {
  Quiet q;
  test::RecordingFib fib;
  SessionMetrics metrics(std::make_shared<prometheus::Registry>());
  SessionHarness h(kConfig, &fib, {}, &metrics);
  int a = Establish(h, "127.0.0.2", 65002, GrCap(120, true));
  h.Write(a, Update(65002, kNextHop, {{1, 1}, {1, 2}, {1, 3}}, kLb));
  h.Write(a, kEndOfRib);
  h.Advance(100);
  h.Close(a);
  h.Run();
  h.Advance(100);
  CHECK(metrics.GracefulRestartStalePaths("127.0.0.2", "ipv4-unicast").Value() == 3);
  CHECK(metrics.GracefulRestartEvents("127.0.0.2", "restart").Value() == 1);
  a = Establish(h, "127.0.0.2", 65002, GrCap(120, true, true));
  h.Write(a, Update(65002, kNextHop, {{1, 1}}, kLb));
  h.Advance(100);
  CHECK(metrics.GracefulRestartStalePaths("127.0.0.2", "ipv4-unicast").Value() == 2);
  h.Write(a, kEndOfRib);
  h.Advance(100);
  CHECK(metrics.GracefulRestartStalePaths("127.0.0.2", "ipv4-unicast").Value() == 0);
  CHECK(metrics.GracefulRestartEvents("127.0.0.2", "end_of_rib").Value() == 1);
  CHECK(PathsOf(h, "127.0.0.2") == 1);
}

// The Graceful Restart capability in bagd's OPEN on `fd` (the first message it sent).
std::optional<wire::GracefulRestartCap> SentGrCap(SessionHarness& h, int fd,
                                                  std::vector<std::pair<uint8_t, wire::Bytes>>* rest = nullptr) {
  auto msgs = h.Read(fd);
  std::optional<wire::GracefulRestartCap> out;
  for (const auto& [type, body] : msgs) {
    if (type != 1) {
      if (rest) rest->emplace_back(type, body);
      continue;
    }
    auto m = wire::DecodeMessage(Message(1, body), wire::CodecContext{});
    REQUIRE(m.ok());
    if (const auto* gr = std::get<wire::OpenMessage>(m.value()).Find<wire::GracefulRestartCap>()) out = *gr;
  }
  return out;
}

TEST_CASE("Graceful restart, restarting speaker: R and F after bagd's restart, the initial advertisement deferred",
          "[session][graceful-restart]") {
  Quiet q;
  test::RecordingFib fib;
  fsm::RestartState restart;
  restart.restarting = true;
  restart.forwarding_preserved = {true, false};
  SessionHarness h(R"(
router { asn: 65000 router_id: "10.255.0.1" ebgp_requires_policy: false }
fib { backend: BACKEND_NONE }
networks { prefix: "192.0.2.0/24" }
neighbors { address: "127.0.0.2" remote_as: 65002 passive: true }
)", &fib, restart);
  const int a = h.Connect("127.0.0.2");
  h.Write(a, Open(65002, kPeerId, 90, {{1, 1}}, GrCap(120, false)));
  auto gr = SentGrCap(h, a);
  REQUIRE(gr);
  CHECK(gr->restart_state);
  CHECK(gr->restart_time == 120);
  REQUIRE(gr->families.size() == 1);
  CHECK(gr->families[0].forwarding_preserved);
  h.Write(a, Keepalive());
  std::vector<std::pair<uint8_t, wire::Bytes>> after;
  SentGrCap(h, a, &after);
  // No UPDATE (neither our network nor End-of-RIB) before the tables are in.
  for (const auto& [type, body] : after) CHECK(type != 2);
  CHECK(Status(h, "127.0.0.2").graceful_restart().initial_advertisement_deferred());
  CHECK(Status(h, "127.0.0.2").graceful_restart().restart_state_sent());
  // The neighbor's End-of-RIB: every neighbor's table is in; ours goes, then End-of-RIB.
  h.Write(a, kEndOfRib);
  h.Advance(100);
  after.clear();
  SentGrCap(h, a, &after);
  int updates = 0;
  bool eor_last = false;
  for (const auto& [type, body] : after) {
    if (type != 2) continue;
    ++updates;
    eor_last = body == wire::Bytes{0, 0, 0, 0};
  }
  CHECK(updates == 2);  // 192.0.2.0/24, End-of-RIB
  CHECK(eor_last);
  CHECK_FALSE(Status(h, "127.0.0.2").graceful_restart().initial_advertisement_deferred());
  // Converged: a later session is not a restart of bagd any more (no R).
  h.Close(a);
  h.Run();
  h.Advance(10000);
  const int b = h.Connect("127.0.0.2");
  h.Write(b, Open(65002, kPeerId, 90, {{1, 1}}, GrCap(120, false)));
  gr = SentGrCap(h, b);
  REQUIRE(gr);
  CHECK_FALSE(gr->restart_state);
}

TEST_CASE("Graceful restart, restarting speaker: a neighbor without graceful restart is not deferred",
          "[session][graceful-restart]") {
  Quiet q;
  test::RecordingFib fib;
  fsm::RestartState restart;
  restart.restarting = true;
  SessionHarness h(R"(
router { asn: 65000 router_id: "10.255.0.1" ebgp_requires_policy: false }
fib { backend: BACKEND_NONE }
networks { prefix: "192.0.2.0/24" }
neighbors { address: "127.0.0.2" remote_as: 65002 passive: true }
)", &fib, restart);
  const int a = h.Connect("127.0.0.2");
  h.Write(a, Open(65002, kPeerId, 90, {{1, 1}}));
  h.Write(a, Keepalive());
  std::vector<std::pair<uint8_t, wire::Bytes>> msgs;
  SentGrCap(h, a, &msgs);
  int updates = 0;
  for (const auto& [type, body] : msgs) updates += type == 2;
  CHECK(updates == 2);  // at once: the network and End-of-RIB
}

}  // namespace
}  // namespace bagd::session::testing


namespace bagd::session::testing {

// RFC 8538: the neighbor's capability with N (0x4000 in the flags and time).
wire::Bytes GrCapN(uint16_t restart_time) {
  wire::Bytes cap = GrCap(restart_time, true);
  cap[2] |= 0x40;
  return cap;
}

TEST_CASE("Graceful restart, RFC 8538: with N both ways a Cease is a restart, a Hard Reset is not",
          "[session][graceful-restart][rfc8538]") {
  Quiet q;
  test::RecordingFib fib;
  SessionHarness h(kConfig, &fib);
  auto up = [&] {
    const int fd = Establish(h, "127.0.0.2", 65002, GrCapN(120));
    h.Write(fd, Update(65002, kNextHop, {{1, 1}, {1, 2}}, kLb));
    h.Write(fd, kEndOfRib);
    h.Advance(100);
    REQUIRE(PathsOf(h, "127.0.0.2") == 2);
    return fd;
  };
  SECTION("bagd's OPEN carries N, and the neighbor's is recorded") {
    const int fd = h.Connect("127.0.0.2");
    h.Write(fd, Open(65002, kPeerId, 0, {{1, 1}}, GrCapN(120)));
    const auto msgs = h.Read(fd);
    REQUIRE(!msgs.empty());
    REQUIRE(msgs.front().first == 1);
    const wire::Bytes raw = Message(1, msgs.front().second);
    auto open = wire::DecodeMessage(raw, {});
    REQUIRE(open.ok());
    const auto& o = std::get<wire::OpenMessage>(open.value());
    const auto* gr = o.Find<wire::GracefulRestartCap>();
    REQUIRE(gr != nullptr);
    CHECK(gr->notification);
    h.Write(fd, Keepalive());
    h.Read(fd);
    CHECK(Status(h, "127.0.0.2").graceful_restart().peer_notification());
  }
  SECTION("Cease / Administrative Shutdown from the neighbor: its paths are kept as stale") {
    const int fd = up();
    h.Write(fd, Message(3, std::vector<uint8_t>{6, 2}));
    h.Run();
    CHECK(PathsOf(h, "127.0.0.2") == 2);
    CHECK(Status(h, "127.0.0.2").graceful_restart().phase() == "restarting");
  }
  SECTION("Cease / Hard Reset from the neighbor: its paths go at once") {
    const int fd = up();
    h.Write(fd, Message(3, std::vector<uint8_t>{6, 9, 6, 4}));
    h.Run();
    CHECK(PathsOf(h, "127.0.0.2") == 0);
  }
  SECTION("an operator's clear sends Hard Reset (with Administrative Reset inside), and the paths go") {
    const int fd = up();
    REQUIRE(h.speaker().ClearNeighbor("127.0.0.2", control::v1::ClearNeighborRequest::MODE_HARD).ok());
    h.Run();
    const auto msgs = h.Read(fd);
    REQUIRE(!msgs.empty());
    CHECK(msgs.back().first == 3);
    CHECK(msgs.back().second == wire::Bytes{6, 9, 6, 4});
    CHECK(PathsOf(h, "127.0.0.2") == 0);
  }
  SECTION("without N from the neighbor, a Cease still withdraws at once (RFC 4724)") {
    const int fd = Establish(h, "127.0.0.2", 65002, GrCap(120, true));
    h.Write(fd, Update(65002, kNextHop, {{1, 1}}, kLb));
    h.Advance(100);
    REQUIRE(PathsOf(h, "127.0.0.2") == 1);
    h.Write(fd, Message(3, std::vector<uint8_t>{6, 2}));
    h.Run();
    CHECK(PathsOf(h, "127.0.0.2") == 0);
  }
}

}  // namespace bagd::session::testing
