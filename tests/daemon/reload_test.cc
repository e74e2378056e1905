// SIGHUP reloads on live sessions (issue 12 defect 4): neighbors are matched by address,
// not by their place in the file; added ones start, removed ones get Cease / Peer
// De-configured, a change that needs a new session resets that session only (Cease / Other
// Configuration Change), the rest changes in place; router asn/id changes are refused.
#include <catch2/catch.hpp>

#include "bgpd/session/log.h"
#include "tests/session/session_harness.h"

namespace bagd::session::testing {
namespace {

constexpr uint32_t kPeerId = 0x0a090909;

struct Quiet {
  Quiet() { log::SetLevel(getenv("BAGD_TEST_LOG") ? log::Level::kDebug : log::Level::kError); }
  ~Quiet() { log::SetLevel(log::Level::kInfo); }
};

control::v1::NeighborStatus Status(SessionHarness& h, const std::string& addr) {
  auto all = h.speaker().ListNeighbors(addr);
  REQUIRE(all.size() == 1);
  return all.front();
}

int Establish(SessionHarness& h, const std::string& addr, uint32_t asn) {
  const int fd = h.Connect(addr);
  h.Write(fd, Open(asn, kPeerId, 90));
  h.Write(fd, Keepalive());
  h.Read(fd);
  REQUIRE(Status(h, addr).state() == "Established");
  return fd;
}

// The NOTIFICATION (code, subcode) bagd sent on `fd` last, if any.
std::optional<std::pair<int, int>> LastNotification(SessionHarness& h, int fd) {
  std::optional<std::pair<int, int>> n;
  for (const auto& [type, body] : h.Read(fd)) {
    if (type == 3 && body.size() >= 2) n = std::make_pair(int{body[0]}, int{body[1]});
  }
  return n;
}

constexpr char kTwo[] = R"(
router { asn: 65000 router_id: "10.255.0.1" ebgp_requires_policy: false }
fib { backend: BACKEND_NONE }
neighbors { address: "127.0.0.2" remote_as: 65002 passive: true description: "a" }
neighbors { address: "127.0.0.3" remote_as: 65003 passive: true description: "b"
            max_prefixes { family: IPV4_UNICAST limit: 100 } }
)";

TEST_CASE("Reload: neighbors are matched by address, not by their place in the file", "[reload]") {
  Quiet q;
  SessionHarness h(kTwo);
  const int a = Establish(h, "127.0.0.2", 65002);
  const int b = Establish(h, "127.0.0.3", 65003);
  // The same two, the other way round; B's description changes.
  REQUIRE(h.Reload(R"(
router { asn: 65000 router_id: "10.255.0.1" ebgp_requires_policy: false }
fib { backend: BACKEND_NONE }
neighbors { address: "127.0.0.3" remote_as: 65003 passive: true description: "b, renamed"
            max_prefixes { family: IPV4_UNICAST limit: 100 } }
neighbors { address: "127.0.0.2" remote_as: 65002 passive: true description: "a" }
)").ok());
  CHECK(Status(h, "127.0.0.2").description() == "a");
  CHECK(Status(h, "127.0.0.3").description() == "b, renamed");
  CHECK(Status(h, "127.0.0.3").prefix_limits_size() == 1);
  CHECK(Status(h, "127.0.0.2").prefix_limits_size() == 0);
  // Nobody was reset.
  CHECK(Status(h, "127.0.0.2").state() == "Established");
  CHECK(Status(h, "127.0.0.3").state() == "Established");
  CHECK(Status(h, "127.0.0.2").established_transitions() == 1);
  CHECK(Status(h, "127.0.0.3").established_transitions() == 1);
  CHECK_FALSE(LastNotification(h, a));
  CHECK_FALSE(LastNotification(h, b));
}

TEST_CASE("Reload: a removed neighbor gets Cease / Peer De-configured and its routes go", "[reload]") {
  Quiet q;
  SessionHarness h(kTwo);
  const int a = Establish(h, "127.0.0.2", 65002);
  const int b = Establish(h, "127.0.0.3", 65003);
  h.Write(b, Update(65003, 0x7f000003, {{7, 1}, {7, 2}}));
  REQUIRE(h.speaker().rib().paths_of(h.speaker().FindPeer("127.0.0.3")->rib_index) == 2);
  const uint32_t b_index = h.speaker().FindPeer("127.0.0.3")->rib_index;
  h.Read(a);
  REQUIRE(h.Reload(R"(
router { asn: 65000 router_id: "10.255.0.1" ebgp_requires_policy: false }
fib { backend: BACKEND_NONE }
neighbors { address: "127.0.0.2" remote_as: 65002 passive: true description: "a" }
)").ok());
  CHECK(LastNotification(h, b) == std::make_pair(6, 3));
  CHECK(h.PeerClosed(b));
  CHECK(h.speaker().FindPeer("127.0.0.3") == nullptr);
  CHECK(h.speaker().neighbor_count() == 1);
  CHECK(h.speaker().rib().paths_of(b_index) == 0);
  // A got the withdrawals and kept its session.
  bool withdrawn = false;
  for (const auto& [type, body] : h.Read(a)) withdrawn |= type == 2 && body.size() > 4 && (body[0] || body[1]);
  CHECK(withdrawn);
  CHECK(Status(h, "127.0.0.2").state() == "Established");
  // Time passes with the Peer gone (its timers went with it).
  h.Advance(200000);
}

TEST_CASE("Reload: an added neighbor starts, a changed AS resets only that session", "[reload]") {
  Quiet q;
  SessionHarness h(kTwo);
  const int a = Establish(h, "127.0.0.2", 65002);
  const int b = Establish(h, "127.0.0.3", 65003);
  REQUIRE(h.Reload(R"(
router { asn: 65000 router_id: "10.255.0.1" ebgp_requires_policy: false }
fib { backend: BACKEND_NONE }
neighbors { address: "127.0.0.2" remote_as: 65002 passive: true description: "a" }
neighbors { address: "127.0.0.3" remote_as: 65033 passive: true description: "b"
            max_prefixes { family: IPV4_UNICAST limit: 100 } }
neighbors { address: "127.0.0.4" remote_as: 65004 passive: true }
)").ok());
  CHECK(LastNotification(h, b) == std::make_pair(6, 6));
  CHECK_FALSE(LastNotification(h, a));
  CHECK(Status(h, "127.0.0.2").state() == "Established");
  CHECK(Status(h, "127.0.0.3").remote_as() == 65033);
  // The new settings are in force: the old AS is refused (2/2 Bad Peer AS), the new one taken.
  h.Close(b);
  const int b_old = h.Connect("127.0.0.3");
  h.Write(b_old, Open(65003, kPeerId, 90));
  CHECK(LastNotification(h, b_old) == std::make_pair(2, 2));
  h.Close(b_old);
  Establish(h, "127.0.0.3", 65033);
  Establish(h, "127.0.0.4", 65004);
  CHECK(h.speaker().neighbor_count() == 3);
}

TEST_CASE("Reload: router asn and router id are refused, the running config kept", "[reload]") {
  Quiet q;
  SessionHarness h(kTwo);
  const int a = Establish(h, "127.0.0.2", 65002);
  const absl::Status st = h.Reload(R"(
router { asn: 65100 router_id: "10.255.0.1" ebgp_requires_policy: false }
fib { backend: BACKEND_NONE }
neighbors { address: "127.0.0.2" remote_as: 65002 passive: true description: "changed" }
)");
  CHECK(absl::IsFailedPrecondition(st));
  CHECK_THAT(std::string(st.message()), Catch::Contains("restart bagd"));
  CHECK(Status(h, "127.0.0.2").description() == "a");
  CHECK(h.speaker().neighbor_count() == 2);
  CHECK_FALSE(LastNotification(h, a));
}

TEST_CASE("Reload: shutdown in the file takes the neighbor down and back", "[reload]") {
  Quiet q;
  SessionHarness h(kTwo);
  const int a = Establish(h, "127.0.0.2", 65002);
  REQUIRE(h.Reload(R"(
router { asn: 65000 router_id: "10.255.0.1" ebgp_requires_policy: false }
fib { backend: BACKEND_NONE }
neighbors { address: "127.0.0.2" remote_as: 65002 passive: true description: "a" shutdown: true
            shutdown_message: "maintenance" }
neighbors { address: "127.0.0.3" remote_as: 65003 passive: true description: "b"
            max_prefixes { family: IPV4_UNICAST limit: 100 } }
)").ok());
  CHECK(LastNotification(h, a) == std::make_pair(6, 2));
  CHECK(Status(h, "127.0.0.2").admin_down());
  REQUIRE(h.Reload(kTwo).ok());
  CHECK_FALSE(Status(h, "127.0.0.2").admin_down());
  h.Close(a);
  Establish(h, "127.0.0.2", 65002);
}

}  // namespace
}  // namespace bagd::session::testing
