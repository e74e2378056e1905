#include <catch2/catch.hpp>

#include "bgpd/fsm/negotiation.h"

using namespace bagd;
using namespace bagd::fsm;

namespace {

LocalSettings Local() {
  LocalSettings l;
  l.local_as = 65000;
  l.remote_as = 4200000001u;
  l.router_id = 0x0a000001;
  l.hold_time = 90;
  l.families = {true, true};
  l.add_path_receive = {true, true};
  return l;
}

wire::OpenMessage Peer() {
  LocalSettings p;
  p.local_as = 4200000001u;
  p.remote_as = 65000;
  p.router_id = 0x0a000002;
  p.hold_time = 30;
  p.families = {true, false};
  p.add_path_send = {true, false};
  return BuildOpen(p);
}

template <class T>
T As(const std::variant<Negotiated, wire::NotificationMessage>& v) {
  REQUIRE(std::holds_alternative<T>(v));
  return std::get<T>(v);
}

}  // namespace

TEST_CASE("Negotiation: the agreed session", "[fsm][negotiation]") {
  const auto n = As<Negotiated>(Negotiate(Local(), Peer()));
  CHECK(n.peer_as == 4200000001u);
  CHECK(n.four_octet_as);
  CHECK(n.hold_time == 30);  // the smaller one
  CHECK(n.keepalive == 10);  // hold / 3
  CHECK(n.families[0]);
  CHECK_FALSE(n.families[1]);  // the peer did not offer IPv6
  CHECK(n.add_path_receive[0]);
  CHECK_FALSE(n.add_path_send[0]);
  CHECK(n.route_refresh);
  CHECK(n.enhanced_route_refresh);
  CHECK(n.extended_message);
  const auto dec = n.DecodeContext(true);
  CHECK(dec.add_path[0]);
  CHECK(dec.extended_message);
  CHECK_FALSE(n.EncodeContext(true).add_path[0]);
}

TEST_CASE("Negotiation: BuildOpen uses AS_TRANS for a 4-octet AS", "[fsm][negotiation]") {
  const auto open = Peer();
  CHECK(open.my_as == wire::kAsTrans);
  CHECK(open.AsNumber() == 4200000001u);
  CHECK(open.Find<wire::AddPathCap>()->families.size() == 1);
}

TEST_CASE("Negotiation: OPEN errors with RFC 4271 subcodes", "[fsm][negotiation]") {
  SECTION("bad peer AS → 2/2") {
    LocalSettings l = Local();
    l.remote_as = 65099;
    CHECK(As<wire::NotificationMessage>(Negotiate(l, Peer())) == wire::NotificationMessage{2, 2, {}});
  }
  SECTION("AS_TRANS without the 4-octet capability is a bad peer AS") {
    wire::OpenMessage p = Peer();
    std::erase_if(p.capabilities, [](const auto& c) { return std::holds_alternative<wire::FourOctetAsCap>(c); });
    CHECK(As<wire::NotificationMessage>(Negotiate(Local(), p)).subcode == 2);
  }
  SECTION("BGP identifier 0 → 2/3") {
    wire::OpenMessage p = Peer();
    p.bgp_id = 0;
    CHECK(As<wire::NotificationMessage>(Negotiate(Local(), p)).subcode == 3);
  }
  SECTION("iBGP peer with our identifier → 2/3") {
    LocalSettings l = Local();
    l.remote_as = 65000;
    LocalSettings p = l;
    wire::OpenMessage o = BuildOpen(p);
    CHECK(As<wire::NotificationMessage>(Negotiate(l, o)).subcode == 3);
  }
  SECTION("hold time 1 or 2 → 2/6; 0 disables keepalives") {
    wire::OpenMessage p = Peer();
    p.hold_time = 1;
    CHECK(As<wire::NotificationMessage>(Negotiate(Local(), p)) == wire::NotificationMessage{2, 6, {}});
    p.hold_time = 2;
    CHECK(As<wire::NotificationMessage>(Negotiate(Local(), p)).subcode == 6);
    p.hold_time = 0;
    const auto n = As<Negotiated>(Negotiate(Local(), p));
    CHECK(n.hold_time == 0);
    CHECK(n.keepalive == 0);
    p.hold_time = 3;
    CHECK(As<Negotiated>(Negotiate(Local(), p)).keepalive == 1);
  }
  SECTION("no common family → 2/7") {
    LocalSettings l = Local();
    l.families = {false, true};
    const auto n = As<wire::NotificationMessage>(Negotiate(l, Peer()));
    CHECK(n.subcode == 7);
    CHECK(n.data == wire::Bytes{1, 4, 0, 2, 0, 1});
  }
  SECTION("no MP capability at all means IPv4 unicast") {
    wire::OpenMessage p = Peer();
    std::erase_if(p.capabilities, [](const auto& c) { return std::holds_alternative<wire::MultiprotocolCap>(c); });
    CHECK(As<Negotiated>(Negotiate(Local(), p)).families[0]);
  }
}

TEST_CASE("Collision resolution keeps the higher identifier's connection", "[fsm][negotiation]") {
  CHECK(OutboundWinsCollision(0x0a000002, 0x0a000001));
  CHECK_FALSE(OutboundWinsCollision(0x0a000001, 0x0a000002));
  // Compared as integers, not bytes: 10.0.0.1 > 9.255.255.255.
  CHECK(OutboundWinsCollision(0x0a000001, 0x09ffffff));
}

// --- Graceful restart (RFC 4724) ---------------------------------------------------------

namespace {

LocalSettings GrLocal() {
  LocalSettings l = Local();
  l.graceful_restart = true;
  l.graceful_restart_time = 120;
  l.graceful_restart_families = {true, true};
  return l;
}

wire::GracefulRestartCap GrCap(const wire::OpenMessage& m) {
  const auto* gr = m.Find<wire::GracefulRestartCap>();
  REQUIRE(gr != nullptr);
  return *gr;
}

// The peer's OPEN with a Graceful Restart capability as given.
wire::OpenMessage PeerWithGr(wire::GracefulRestartCap cap) {
  wire::OpenMessage m = Peer();
  m.capabilities.push_back(wire::MultiprotocolCap{2, 1});
  m.capabilities.push_back(std::move(cap));
  return m;
}

}  // namespace

TEST_CASE("Graceful restart: our capability carries the restart time, the families and R/F as told",
          "[fsm][negotiation][graceful-restart]") {
  SECTION("a first start: restart time and both families, no R, no F; N (RFC 8538)") {
    const auto gr = GrCap(BuildOpen(GrLocal()));
    CHECK(gr.restart_time == 120);
    CHECK_FALSE(gr.restart_state);
    CHECK(gr.notification);
    REQUIRE(gr.families.size() == 2);
    CHECK(gr.families[0] == wire::GracefulRestartCap::Entry{1, 1, false});
    CHECK(gr.families[1] == wire::GracefulRestartCap::Entry{2, 1, false});
  }
  SECTION("after a restart with the kernel routes of IPv4 kept: R, F for IPv4 only") {
    RestartState r;
    r.restarting = true;
    r.forwarding_preserved = {true, false};
    const auto gr = GrCap(BuildOpen(GrLocal(), r));
    CHECK(gr.restart_state);
    REQUIRE(gr.families.size() == 2);
    CHECK(gr.families[0].forwarding_preserved);
    CHECK_FALSE(gr.families[1].forwarding_preserved);
  }
  SECTION("the families selected for graceful restart, of those negotiated") {
    LocalSettings l = GrLocal();
    l.graceful_restart_families = {false, true};
    const auto gr = GrCap(BuildOpen(l));
    REQUIRE(gr.families.size() == 1);
    CHECK(gr.families[0].afi == 2);
    l.families = {true, false};  // IPv6 not negotiated with this neighbor: nothing listed
    CHECK(GrCap(BuildOpen(l)).families.empty());
  }
  SECTION("off (restart time 0): End-of-RIB only, no family, no R even after a restart") {
    LocalSettings l = GrLocal();
    l.graceful_restart_time = 0;
    RestartState r;
    r.restarting = true;
    r.forwarding_preserved = {true, true};
    const auto gr = GrCap(BuildOpen(l, r));
    CHECK(gr.restart_time == 0);
    CHECK(gr.families.empty());
    CHECK_FALSE(gr.restart_state);
    CHECK_FALSE(gr.notification);  // nothing is kept, so no NOTIFICATION is a restart either
  }
  SECTION("the capability survives the codec with its bits") {
    RestartState r;
    r.restarting = true;
    r.forwarding_preserved = {true, true};
    const wire::OpenMessage open = BuildOpen(GrLocal(), r);
    auto bytes = wire::EncodeMessage(open, wire::CodecContext{});
    REQUIRE(bytes.ok());
    auto back = wire::DecodeMessage(*bytes, wire::CodecContext{});
    REQUIRE(back.ok());
    CHECK(GrCap(std::get<wire::OpenMessage>(back.value())) == GrCap(open));
  }
}

TEST_CASE("Graceful restart: what the peer offers is recorded per family, and what we keep for it",
          "[fsm][negotiation][graceful-restart]") {
  wire::GracefulRestartCap cap;
  cap.restart_state = true;
  cap.notification = true;
  cap.restart_time = 90;
  cap.families = {{1, 1, true}, {2, 1, false}, {1, 128, true}};  // VPNv4: not ours, ignored
  const Negotiated n = As<Negotiated>(Negotiate(GrLocal(), PeerWithGr(cap)));
  CHECK(n.graceful_restart);
  const PeerGracefulRestart& p = n.peer_graceful_restart;
  CHECK(p.offered);
  CHECK(p.restart_state);
  CHECK(p.notification);
  CHECK(p.restart_time == 90);
  CHECK(p.families == std::array<bool, net::kFamilyCount>{true, true});
  CHECK(p.forwarding_preserved == std::array<bool, net::kFamilyCount>{true, false});
  CHECK(n.graceful_restart_retain == std::array<bool, net::kFamilyCount>{true, true});

  SECTION("our helper is only for the families we selected") {
    LocalSettings l = GrLocal();
    l.graceful_restart_families = {true, false};
    CHECK(As<Negotiated>(Negotiate(l, PeerWithGr(cap))).graceful_restart_retain ==
          std::array<bool, net::kFamilyCount>{true, false});
  }
  SECTION("our graceful restart off: nothing kept, the peer's offer still recorded") {
    LocalSettings l = GrLocal();
    l.graceful_restart_time = 0;
    const Negotiated off = As<Negotiated>(Negotiate(l, PeerWithGr(cap)));
    CHECK(off.graceful_restart);  // End-of-RIB still
    CHECK(off.peer_graceful_restart.restart_time == 90);
    CHECK(off.graceful_restart_retain == std::array<bool, net::kFamilyCount>{false, false});
  }
  SECTION("the peer's restart time 0 or no families: nothing kept") {
    wire::GracefulRestartCap eor_only;  // what bagd sends with graceful restart off, and GoBGP by default
    CHECK(As<Negotiated>(Negotiate(GrLocal(), PeerWithGr(eor_only))).graceful_restart_retain ==
          std::array<bool, net::kFamilyCount>{false, false});
    wire::GracefulRestartCap zero = cap;
    zero.restart_time = 0;
    CHECK(As<Negotiated>(Negotiate(GrLocal(), PeerWithGr(zero))).graceful_restart_retain ==
          std::array<bool, net::kFamilyCount>{false, false});
  }
  SECTION("a family the peer lists but the session does not negotiate is not kept") {
    wire::OpenMessage m = Peer();  // IPv4 only
    m.capabilities.push_back(cap);
    const Negotiated v4 = As<Negotiated>(Negotiate(GrLocal(), m));
    CHECK(v4.peer_graceful_restart.families[1]);
    CHECK(v4.graceful_restart_retain == std::array<bool, net::kFamilyCount>{true, false});
  }
  SECTION("no capability at all") {
    const Negotiated none = As<Negotiated>(Negotiate(GrLocal(), Peer()));
    CHECK_FALSE(none.graceful_restart);
    CHECK_FALSE(none.peer_graceful_restart.offered);
    CHECK(none.graceful_restart_retain == std::array<bool, net::kFamilyCount>{false, false});
  }
}
