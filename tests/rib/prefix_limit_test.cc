// rib/prefix_limit.h: the maximum-prefixes decision, its NOTIFICATION, and the count it is
// given (the RIB's paths per peer and family).
#include "rib/prefix_limit.h"

#include <catch2/catch.hpp>

#include "absl/strings/str_cat.h"
#include "wire/message.h"
#include "tests/rib/rib_test_support.h"

using namespace bagd;
using namespace bagd::rib;
using namespace bagd::rib::test;
using net::Family;

namespace {

PrefixLimit Limit(uint32_t limit, uint32_t percent = 75, bool warning_only = false) {
  PrefixLimitConfig c;
  c.limit = limit;
  c.warning_threshold_percent = percent;
  c.warning_only = warning_only;
  return PrefixLimit(c);
}

// `count` IPv4 /24s from 10.<block>.0.0 on.
std::vector<net::Nlri> Block(int block, int count, uint32_t path_id = 0) {
  std::vector<net::Nlri> out;
  for (int i = 0; i < count; ++i) {
    out.push_back(net::Nlri{*net::Prefix::Parse(absl::StrCat("10.", block + i / 256, ".", i % 256, ".0/24")), path_id});
  }
  return out;
}

}  // namespace

TEST_CASE("prefix limit: the warning at the threshold, the Cease above the limit", "[rib][prefix_limit]") {
  PrefixLimit l = Limit(10);  // warn at 7
  CHECK(l.config().WarningAt() == 7);
  CHECK(l.Check(0) == PrefixLimitEvent::kNone);
  CHECK(l.Check(6) == PrefixLimitEvent::kNone);
  CHECK(l.state() == PrefixLimitState::kBelow);
  CHECK(l.Check(7) == PrefixLimitEvent::kWarning);
  CHECK(l.state() == PrefixLimitState::kWarning);
  CHECK(l.Check(9) == PrefixLimitEvent::kNone);  // warned once
  CHECK(l.Check(10) == PrefixLimitEvent::kNone);  // exactly the limit is allowed
  CHECK(l.Check(11) == PrefixLimitEvent::kExceededCease);
  CHECK(l.state() == PrefixLimitState::kExceeded);
  // Still above (the session could not be taken down yet): asked again.
  CHECK(l.Check(12) == PrefixLimitEvent::kExceededCease);
  // The session went down: its paths are gone, the next session starts afresh.
  CHECK(l.Check(0) == PrefixLimitEvent::kNone);
  CHECK(l.state() == PrefixLimitState::kBelow);
  CHECK(l.Check(8) == PrefixLimitEvent::kWarning);
  l.Reset();
  CHECK(l.Check(8) == PrefixLimitEvent::kWarning);  // a reset re-arms the warning
  // Below the threshold and back: warned again.
  CHECK(l.Check(3) == PrefixLimitEvent::kNone);
  CHECK(l.Check(7) == PrefixLimitEvent::kWarning);
}

TEST_CASE("prefix limit: warning_only warns once per crossing and never asks for a Cease",
          "[rib][prefix_limit]") {
  PrefixLimit l = Limit(10, 75, /*warning_only=*/true);
  CHECK(l.Check(7) == PrefixLimitEvent::kWarning);
  CHECK(l.Check(11) == PrefixLimitEvent::kExceededWarn);
  CHECK(l.Check(5000) == PrefixLimitEvent::kNone);
  CHECK(l.state() == PrefixLimitState::kExceeded);
  CHECK(l.Check(9) == PrefixLimitEvent::kNone);  // back under the limit, above the threshold
  CHECK(l.state() == PrefixLimitState::kWarning);
  CHECK(l.Check(11) == PrefixLimitEvent::kExceededWarn);
  // Straight from nothing to above the limit: one event, the exceeded one.
  PrefixLimit m = Limit(10, 75, true);
  CHECK(m.Check(20) == PrefixLimitEvent::kExceededWarn);
}

TEST_CASE("prefix limit: threshold rounding and the disabled limit", "[rib][prefix_limit]") {
  CHECK(Limit(3).config().WarningAt() == 2);     // 2.25 rounded down
  CHECK(Limit(1).config().WarningAt() == 1);     // never 0: no warning at an empty table
  CHECK(Limit(1, 1).config().WarningAt() == 1);
  CHECK(Limit(100, 100).config().WarningAt() == 100);
  CHECK(Limit(4294967295u, 75).config().WarningAt() == 3221225471u);  // no 32-bit overflow
  PrefixLimit off;
  CHECK_FALSE(off.enabled());
  CHECK(off.Check(100000000) == PrefixLimitEvent::kNone);
  PrefixLimit at_limit = Limit(100, 100);
  CHECK(at_limit.Check(99) == PrefixLimitEvent::kNone);
  CHECK(at_limit.Check(100) == PrefixLimitEvent::kWarning);
  CHECK(at_limit.Check(101) == PrefixLimitEvent::kExceededCease);
}

TEST_CASE("prefix limit: Cease / Maximum Number of Prefixes Reached carries AFI, SAFI and the limit (RFC 4486 §4)",
          "[rib][prefix_limit]") {
  const wire::NotificationMessage v4 = MaxPrefixesCease(Family::kIpv4Unicast, 10);
  CHECK(v4.code == 6);
  CHECK(v4.subcode == 1);
  CHECK(v4.data == wire::Bytes{0x00, 0x01, 0x01, 0x00, 0x00, 0x00, 0x0a});
  const wire::NotificationMessage v6 = MaxPrefixesCease(Family::kIpv6Unicast, 0x01020304);
  CHECK(v6.data == wire::Bytes{0x00, 0x02, 0x01, 0x01, 0x02, 0x03, 0x04});
  // On the wire: a 26-octet NOTIFICATION.
  auto bytes = wire::EncodeMessage(v4, wire::CodecContext{});
  REQUIRE(bytes.ok());
  REQUIRE(bytes->size() == 19 + 2 + 7);
  CHECK((*bytes)[16] == 0);
  CHECK((*bytes)[17] == 28);
  CHECK((*bytes)[18] == 3);  // NOTIFICATION
  CHECK(wire::Bytes(bytes->begin() + 19, bytes->end()) == wire::Bytes{6, 1, 0, 1, 1, 0, 0, 0, 10});
  CHECK(wire::DescribeNotification(v4.code, v4.subcode).find("Maximum Number of Prefixes Reached") != std::string::npos);
}

TEST_CASE("prefix limit: the count is the paths held from the peer in the family", "[rib][prefix_limit]") {
  AttributeStore store;
  Rib rib(65000, DecisionConfig{});
  const PeerIndex a = rib.AddPeer(Peer("192.0.2.2", 2, 65002));
  const PeerIndex b = rib.AddPeer(Peer("192.0.2.3", 3, 65003));
  const AttrRef attrs = AttrsBuilder().In(store);
  const AttrRef other = AttrsBuilder().Med(7).In(store);

  rib.Announce(a, Block(0, 10), attrs);
  CHECK(rib.paths_of(a, Family::kIpv4Unicast) == 10);
  // Re-announced, identical or with new attributes: the same paths, not more.
  rib.Announce(a, Block(0, 10), attrs);
  rib.Announce(a, Block(0, 10), other);
  CHECK(rib.paths_of(a, Family::kIpv4Unicast) == 10);
  // Another peer's paths of the same prefixes are its own.
  rib.Announce(b, Block(0, 10), attrs);
  CHECK(rib.paths_of(a, Family::kIpv4Unicast) == 10);
  CHECK(rib.paths_of(b, Family::kIpv4Unicast) == 10);
  // The families apart.
  const AttrRef v6 = [&] {
    AttrsBuilder x;
    x.a.next_hop.reset();
    x.a.mp_reach = wire::MpReach{Family::kIpv6Unicast, *net::IpAddress::Parse("2001:db8::2"), std::nullopt, {}};
    return x.In(store);
  }();
  rib.Announce(a, std::vector<net::Nlri>{N("2001:db8:1::/48"), N("2001:db8:2::/48"), N("2001:db8:3::/48")}, v6);
  CHECK(rib.paths_of(a, Family::kIpv4Unicast) == 10);
  CHECK(rib.paths_of(a, Family::kIpv6Unicast) == 3);
  // Withdrawn paths go; withdrawing what was never sent changes nothing.
  rib.Withdraw(a, Block(0, 2));
  rib.Withdraw(a, Block(0, 2));
  rib.Withdraw(a, Block(40, 5));
  CHECK(rib.paths_of(a, Family::kIpv4Unicast) == 8);
  // Refused paths (our AS in the AS_PATH) hold nothing, and replace what the peer had.
  rib.Announce(a, Block(50, 5), AttrsBuilder().Path({65002, 65000}).In(store));
  CHECK(rib.paths_of(a, Family::kIpv4Unicast) == 8);
  rib.Announce(a, Block(0, 4), AttrsBuilder().Path({65002, 65000}).In(store));
  CHECK(rib.paths_of(a, Family::kIpv4Unicast) == 6);
  // ADD-PATH: each path id of a prefix is a path held.
  rib.Announce(a, Block(60, 3, /*path_id=*/1), attrs);
  rib.Announce(a, Block(60, 3, /*path_id=*/2), attrs);
  CHECK(rib.paths_of(a, Family::kIpv4Unicast) == 12);
  // The session goes: nothing is held.
  rib.PeerDown(a);
  CHECK(rib.paths_of(a, Family::kIpv4Unicast) == 0);
  CHECK(rib.paths_of(a, Family::kIpv6Unicast) == 0);
  CHECK(rib.paths_of(b, Family::kIpv4Unicast) == 10);
}

TEST_CASE("prefix limit: a flood is stopped at the first UPDATE past the limit", "[rib][prefix_limit]") {
  // A peer sends packed UPDATEs of 1000 prefixes with a limit of 2500: the check after each
  // UPDATE (what the session does) asks for the Cease after the third, so the RIB never held
  // more than one UPDATE past the limit, and dropping the peer frees it all.
  AttributeStore store;
  Rib rib(65000, DecisionConfig{});
  const PeerIndex p = rib.AddPeer(Peer("192.0.2.2", 2, 65002));
  const AttrRef attrs = AttrsBuilder().In(store);
  PrefixLimit limit = Limit(2500);
  std::vector<PrefixLimitEvent> events;
  int updates = 0;
  for (int u = 0; u < 100; ++u) {
    rib.Announce(p, Block(u * 4, 1000), attrs);
    ++updates;
    const PrefixLimitEvent e = limit.Check(rib.paths_of(p, Family::kIpv4Unicast));
    events.push_back(e);
    if (e == PrefixLimitEvent::kExceededCease) break;
  }
  CHECK(updates == 3);
  CHECK(events == std::vector<PrefixLimitEvent>{PrefixLimitEvent::kNone, PrefixLimitEvent::kWarning,
                                                PrefixLimitEvent::kExceededCease});
  CHECK(rib.paths_of(p, Family::kIpv4Unicast) == 3000);
  rib.PeerDown(p);
  CHECK(rib.path_count() == 0);
  CHECK(rib.prefix_count() == 0);
  CHECK(limit.Check(rib.paths_of(p, Family::kIpv4Unicast)) == PrefixLimitEvent::kNone);
}
