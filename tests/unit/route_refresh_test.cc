// ROUTE-REFRESH (RFC 2918) with the Enhanced Route Refresh subtypes (RFC 7313 §3): bytes and
// values both ways, and the errors of RFC 7313 §5 with their exact NOTIFICATION.
#include <catch2/catch.hpp>

#include "wire/message.h"
#include "tests/unit/test_support.h"

using namespace bagd::wire;
using namespace bagd::net;
using bagd::test::Hex;
using bagd::test::MustDecode;
using bagd::test::MustEncode;
using bagd::test::ToHex;

namespace subtype = bagd::wire::route_refresh_subtype;

TEST_CASE("ROUTE-REFRESH: bytes and values both ways, every subtype", "[wire][route_refresh]") {
  const CodecContext ctx;
  struct Case {
    const char* hex;
    RouteRefreshMessage value;
  };
  const Case cases[] = {
      // AFI 1, subtype 0 (a normal request), SAFI 1.
      {"ffffffffffffffffffffffffffffffff 0017 05 0001 00 01", {1, subtype::kRequest, 1, {}}},
      // BoRR / EoRR for IPv6 unicast (RFC 7313 §3: the former Reserved octet).
      {"ffffffffffffffffffffffffffffffff 0017 05 0002 01 01", {2, subtype::kBorr, 1, {}}},
      {"ffffffffffffffffffffffffffffffff 0017 05 0002 02 01", {2, subtype::kEorr, 1, {}}},
      // A request with ORF entries (RFC 5291: When-to-refresh, then ORF type/length/entries), kept raw.
      {"ffffffffffffffffffffffffffffffff 001d 05 0001 00 01 01 40 0002 0000", {1, 0, 1, {1, 0x40, 0, 2, 0, 0}}},
      // A reserved subtype decodes as it is: the session ignores the message (RFC 7313 §5).
      {"ffffffffffffffffffffffffffffffff 0017 05 0001 03 01", {1, 3, 1, {}}},
      {"ffffffffffffffffffffffffffffffff 0019 05 0001 ff 01 abcd", {1, 255, 1, {0xab, 0xcd}}},
  };
  for (const Case& c : cases) {
    INFO(c.hex);
    const Bytes bytes = Hex(c.hex);
    CHECK(std::get<RouteRefreshMessage>(MustDecode(bytes, ctx)) == c.value);
    CHECK(MustEncode(c.value, ctx) == bytes);
  }
}

TEST_CASE("ROUTE-REFRESH: Make for a family, subtype names", "[wire][route_refresh]") {
  CHECK(RouteRefreshMessage::Make(Family::kIpv4Unicast) == RouteRefreshMessage{1, subtype::kRequest, 1, {}});
  CHECK(RouteRefreshMessage::Make(Family::kIpv6Unicast, subtype::kBorr) == RouteRefreshMessage{2, 1, 1, {}});
  CHECK(ToHex(MustEncode(RouteRefreshMessage::Make(Family::kIpv6Unicast, subtype::kEorr), CodecContext{})) ==
        "ffffffffffffffffffffffffffffffff" "0017" "05" "0002" "02" "01");
  CHECK(std::string(RouteRefreshSubtypeName(0)) == "request");
  CHECK(std::string(RouteRefreshSubtypeName(1)) == "BoRR");
  CHECK(std::string(RouteRefreshSubtypeName(2)) == "EoRR");
  CHECK(std::string(RouteRefreshSubtypeName(3)) == "reserved");
  CHECK(std::string(RouteRefreshSubtypeName(255)) == "reserved");
}

TEST_CASE("ROUTE-REFRESH: length errors get the NOTIFICATION of RFC 7313 §5", "[wire][route_refresh]") {
  CodecContext ctx;
  SECTION("BoRR or EoRR longer than 4 octets: 7/1, data = the whole message") {
    for (const char* hex : {"ffffffffffffffffffffffffffffffff 0018 05 0001 01 01 00",
                            "ffffffffffffffffffffffffffffffff 0018 05 0001 02 01 00",
                            "ffffffffffffffffffffffffffffffff 001b 05 0002 01 01 00000000"}) {
      INFO(hex);
      const Bytes b = Hex(hex);
      auto d = DecodeMessage(b, ctx);
      REQUIRE_FALSE(d.ok());
      CHECK(d.error().notification == NotificationMessage{7, route_refresh_error::kInvalidMessageLength, b});
      CHECK(DescribeNotification(d.error().notification.code, d.error().notification.subcode) ==
            "ROUTE-REFRESH Message Error / Invalid Message Length (7/1)");
    }
  }
  SECTION("the same with extended messages (RFC 8654): still 7/1") {
    ctx.extended_message = true;
    const Bytes b = Hex("ffffffffffffffffffffffffffffffff 0019 05 0001 02 01 0000");
    auto d = DecodeMessage(b, ctx);
    REQUIRE_FALSE(d.ok());
    CHECK(d.error().notification == NotificationMessage{7, 1, b});
  }
  SECTION("shorter than AFI/subtype/SAFI: a header length error (1/2, data = the length)") {
    const Bytes b = Hex("ffffffffffffffffffffffffffffffff 0016 05 0001 00");
    auto d = DecodeMessage(b, ctx);
    REQUIRE_FALSE(d.ok());
    CHECK(d.error().notification == NotificationMessage{1, header_error::kBadMessageLength, {0x00, 0x16}});
    Frame f = NextFrame(b, ctx);
    CHECK(f.kind == Frame::kError);
    CHECK(f.error.notification == NotificationMessage{1, 2, {0x00, 0x16}});
  }
  SECTION("a request (subtype 0) may be longer: ORF entries, not an error") {
    CHECK(DecodeMessage(Hex("ffffffffffffffffffffffffffffffff 0018 05 0001 00 01 01"), ctx).ok());
  }
}
