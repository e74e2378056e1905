// NeighborEvent (WatchEvents) from the real Peer and Speaker on a manual clock: each state
// change of a neighbor's session is published with its cause and NOTIFICATION.
#include <catch2/catch.hpp>

#include "bgpd/control/event_hub.h"
#include "bgpd/session/log.h"
#include "tests/session/session_harness.h"

namespace bagd::session::testing {
namespace {

constexpr char kConfig[] = R"(
router { asn: 65000 router_id: "10.255.0.1" hold_time: 9 ebgp_requires_policy: false }
fib { backend: BACKEND_NONE }
neighbors { address: "127.0.0.2" remote_as: 65002 passive: true description: "leaf-2" }
)";

struct Recording final : control::EventSink {
  void Publish(control::v1::Event event) override { events.push_back(std::move(event)); }
  // The neighbor events since the last call.
  std::vector<control::v1::NeighborEvent> Take() {
    std::vector<control::v1::NeighborEvent> out;
    for (auto& e : events) {
      if (e.has_neighbor()) out.push_back(e.neighbor());
    }
    events.clear();
    return out;
  }
  std::vector<control::v1::Event> events;
};

struct Quiet {
  Quiet() { log::SetLevel(log::Level::kError); }
  ~Quiet() { log::SetLevel(log::Level::kInfo); }
};

int Establish(SessionHarness& h) {
  const int fd = h.Connect("127.0.0.2");
  h.Write(fd, Open(65002, 0x0a090909, 9));
  h.Write(fd, Keepalive());
  h.Read(fd);
  REQUIRE(h.speaker().ListNeighbors("127.0.0.2").at(0).state() == "Established");
  return fd;
}

}  // namespace

TEST_CASE("neighbor events: up, a NOTIFICATION received, the hold timer, an operator's shutdown",
          "[session][events]") {
  Quiet q;
  Recording sink;
  SessionHarness h(kConfig, nullptr, {}, nullptr, &sink);
  sink.Take();

  SECTION("up, then Cease / Administrative Shutdown from the peer") {
    const int fd = Establish(h);
    auto e = sink.Take();
    REQUIRE(!e.empty());
    CHECK(e.back().address() == "127.0.0.2");
    CHECK(e.back().description() == "leaf-2");
    CHECK(e.back().from() == "OpenConfirm");
    CHECK(e.back().to() == "Established");
    CHECK(e.back().cause() == "established");
    CHECK(!e.back().has_notification());

    const std::vector<uint8_t> body{6, 2, 11, 'm', 'a', 'i', 'n', 't', 'e', 'n', 'a', 'n', 'c', 'e'};
    h.Write(fd, Message(3, body));
    e = sink.Take();
    REQUIRE(!e.empty());
    CHECK(e.front().from() == "Established");
    CHECK(e.front().to() == "Idle");
    CHECK(e.front().cause() == "notification-received");
    CHECK(!e.front().sent());
    CHECK(e.front().notification().code() == 6);
    CHECK(e.front().notification().subcode() == 2);
    CHECK(e.front().notification().shutdown_message() == "maintenance");
  }
  SECTION("the hold timer: bagd sends 4/0") {
    Establish(h);
    sink.Take();
    h.Advance(9001);
    auto e = sink.Take();
    REQUIRE(!e.empty());
    CHECK(e.front().from() == "Established");
    CHECK(e.front().cause() == "hold-timer");
    CHECK(e.front().sent());
    CHECK(e.front().notification().code() == 4);
  }
  SECTION("an operator's shutdown: admin, with the Cease bagd sent") {
    Establish(h);
    sink.Take();
    REQUIRE(h.speaker().ShutdownNeighbor("127.0.0.2", "bye").ok());
    h.Run();
    auto e = sink.Take();
    REQUIRE(!e.empty());
    CHECK(e.front().from() == "Established");
    CHECK(e.front().to() == "Idle");
    CHECK(e.front().cause() == "admin");
    CHECK(e.front().sent());
    CHECK(e.front().notification().code() == 6);
    CHECK(e.front().notification().subcode() == 2);
    CHECK(e.front().notification().shutdown_message() == "bye");
  }
}

}  // namespace bagd::session::testing
