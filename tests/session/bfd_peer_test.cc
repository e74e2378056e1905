// BGP's reaction to BFD (RFC 5882 §10.2, docs/bfd.md) on a manual clock: Peer::BfdDown sends
// Cease / BFD Down (RFC 9384) and takes the paths out at once, even with graceful restart
// negotiated; no restart and no accepted connection until Peer::BfdUp; hold_bgp_until_up keeps
// the session from starting before BFD is Up.
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

std::string StateOf(SessionHarness& h, const std::string& addr) {
  return h.speaker().ListNeighbors(addr).at(0).state();
}

size_t PathsOf(SessionHarness& h, const std::string& addr) {
  return h.speaker().rib().paths_of(h.speaker().FindPeer(addr)->rib_index);
}

// Graceful Restart capability: restart time 120 s, IPv4 unicast with F.
const wire::Bytes kGrCap = {64, 6, 0x00, 120, 0, 1, 1, 0x80};

int Establish(SessionHarness& h, const std::string& addr, uint32_t asn, std::span<const uint8_t> caps = {}) {
  const int fd = h.Connect(addr);
  h.Write(fd, Open(asn, kPeerId, 9, {{1, 1}}, caps));
  h.Write(fd, Keepalive());
  h.Read(fd);
  REQUIRE(StateOf(h, addr) == "Established");
  return fd;
}

constexpr char kConfig[] = R"(
router { asn: 65000 router_id: "10.255.0.1" hold_time: 9 ebgp_requires_policy: false }
fib { backend: BACKEND_NONE }
neighbors { address: "127.0.0.2" remote_as: 65002 passive: true bfd {} }
neighbors { address: "127.0.0.3" remote_as: 65003 passive: true bfd { hold_bgp_until_up: true } }
)";

TEST_CASE("BFD down: Cease / BFD Down, paths gone without stale keeping, no restart until BFD Up",
          "[session][bfd]") {
  Quiet q;
  SessionHarness h(kConfig);
  // Graceful restart negotiated: a plain session loss would keep these paths stale.
  const int fd = Establish(h, "127.0.0.2", 65002, kGrCap);
  h.Write(fd, Update(65002, 0x7f000002, {{1, 1}, {1, 2}}));
  REQUIRE(PathsOf(h, "127.0.0.2") == 2);

  Peer* peer = h.speaker().FindPeer("127.0.0.2");
  peer->BfdDown("control detection time expired");
  h.Run();
  const auto msgs = h.Read(fd);
  REQUIRE_FALSE(msgs.empty());
  CHECK(msgs.back().first == 3);  // NOTIFICATION
  REQUIRE(msgs.back().second.size() >= 2);
  CHECK(msgs.back().second[0] == 6);   // Cease
  CHECK(msgs.back().second[1] == 10);  // BFD Down (RFC 9384)
  CHECK(h.PeerClosed(fd));
  CHECK(StateOf(h, "127.0.0.2") == "Idle");
  CHECK(PathsOf(h, "127.0.0.2") == 0);  // not kept stale
  CHECK_FALSE(h.speaker().ListNeighbors("127.0.0.2").at(0).graceful_restart().phase() == "stale");
  CHECK(h.speaker().ListNeighbors("127.0.0.2").at(0).last_error().find("BFD down") != std::string::npos);
  CHECK(peer->waiting_for_bfd());

  // The neighbor connects again: refused while BFD is down, and no restart by itself.
  const int again = h.Connect("127.0.0.2");
  h.Run();
  h.Read(again);
  CHECK(h.PeerClosed(again));
  h.Advance(300'000);
  CHECK(StateOf(h, "127.0.0.2") == "Idle");

  // BFD Up: the (passive) session starts and takes the next connection.
  peer->BfdUp();
  h.Run();
  CHECK_FALSE(peer->waiting_for_bfd());
  CHECK(StateOf(h, "127.0.0.2") == "Active");
  const int back = Establish(h, "127.0.0.2", 65002, kGrCap);
  h.Close(back);
}

TEST_CASE("BFD hold_bgp_until_up: no BGP before BFD is Up", "[session][bfd]") {
  Quiet q;
  SessionHarness h(kConfig);
  Peer* held = h.speaker().FindPeer("127.0.0.3");
  CHECK(held->waiting_for_bfd());
  CHECK(StateOf(h, "127.0.0.3") == "Idle");
  const int fd = h.Connect("127.0.0.3");
  h.Run();
  h.Read(fd);
  CHECK(h.PeerClosed(fd));
  // The other neighbor (bfd without hold) came up on its own meanwhile.
  CHECK_FALSE(h.speaker().FindPeer("127.0.0.2")->waiting_for_bfd());
  CHECK(StateOf(h, "127.0.0.2") == "Active");
  held->BfdUp();
  h.Run();
  const int up = Establish(h, "127.0.0.3", 65003);
  // A second BfdUp (BFD Up again after the peer's AdminDown) changes nothing.
  held->BfdUp();
  h.Run();
  CHECK(StateOf(h, "127.0.0.3") == "Established");
  h.Close(up);
}

TEST_CASE("BFD down on an idle neighbor, then an operator's enable, still waits for BFD", "[session][bfd]") {
  Quiet q;
  SessionHarness h(kConfig);
  Peer* peer = h.speaker().FindPeer("127.0.0.2");
  peer->BfdDown("neighbor signaled session down");
  h.Run();
  CHECK(StateOf(h, "127.0.0.2") == "Idle");
  REQUIRE(h.speaker().ShutdownNeighbor("127.0.0.2", "").ok());
  REQUIRE(h.speaker().EnableNeighbor("127.0.0.2").ok());
  h.Run();
  CHECK(StateOf(h, "127.0.0.2") == "Idle");
  peer->BfdUp();
  h.Run();
  CHECK(StateOf(h, "127.0.0.2") == "Active");
}

}  // namespace
}  // namespace bagd::session::testing
