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
