#include <catch2/catch.hpp>

#include "wire/message.h"
#include "tests/unit/test_support.h"

using namespace bagd::wire;
using namespace bagd::net;
using bagd::test::Hex;
using bagd::test::MustDecode;
using bagd::test::MustEncode;

namespace {

OpenMessage FullOpen() {
  OpenMessage m;
  m.my_as = static_cast<uint16_t>(kAsTrans);
  m.hold_time = 90;
  m.bgp_id = 0x0a000001;
  m.capabilities = {
      MultiprotocolCap{1, 1},
      MultiprotocolCap{2, 1},
      RouteRefreshCap{},
      ExtendedNextHopCap{{{1, 1, 2}}},
      ExtendedMessageCap{},
      RoleCap{4},
      GracefulRestartCap{true, true, 120, {{1, 1, true}, {2, 1, false}}},
      FourOctetAsCap{4200000001u},
      AddPathCap{{{1, 1, AddPathCap::kBoth}, {2, 1, AddPathCap::kReceive}}},
      EnhancedRouteRefreshCap{},
      FqdnCap{"bag1", "dc.example"},
      UnknownCap{200, {1, 2, 3}},
  };
  return m;
}

}  // namespace

TEST_CASE("OPEN with every capability round-trips", "[wire][open]") {
  const CodecContext ctx;
  const OpenMessage m = FullOpen();
  const Bytes bytes = MustEncode(m, ctx);
  const Message back = MustDecode(bytes, ctx);
  REQUIRE(std::holds_alternative<OpenMessage>(back));
  const auto& o = std::get<OpenMessage>(back);
  CHECK(o == m);
  CHECK(o.AsNumber() == 4200000001u);
  CHECK(o.Find<GracefulRestartCap>()->restart_time == 120);
  CHECK(MustEncode(back, ctx) == bytes);
}

TEST_CASE("OPEN decodes a known byte layout", "[wire][open]") {
  // version 4, AS 65001, hold 180, id 1.1.1.1, caps: MP ipv4, route refresh, 4-octet AS 65001.
  const Bytes b = Hex(
      "ffffffffffffffffffffffffffffffff 0031 01 04 fde9 00b4 01010101 14"
      " 02 12 0104 00010001 0200 4104 0000fde9 4600 0600");
  const auto o = std::get<OpenMessage>(MustDecode(b, CodecContext{}));
  CHECK(o.my_as == 65001);
  CHECK(o.hold_time == 180);
  CHECK(o.bgp_id == 0x01010101);
  REQUIRE(o.capabilities.size() == 5);
  CHECK(std::get<MultiprotocolCap>(o.capabilities[0]) == MultiprotocolCap{1, 1});
  CHECK(std::holds_alternative<EnhancedRouteRefreshCap>(o.capabilities[3]));
  CHECK(std::holds_alternative<ExtendedMessageCap>(o.capabilities[4]));
  CHECK_FALSE(o.extended_optional_parameters);
}

TEST_CASE("RFC 9072 extended optional parameters", "[wire][open]") {
  const CodecContext ctx;
  OpenMessage m = FullOpen();
  SECTION("used when asked") {
    m.extended_optional_parameters = true;
    const Bytes b = MustEncode(m, ctx);
    CHECK(b[28] == 255);
    CHECK(b[29] == 255);
    CHECK(std::get<OpenMessage>(MustDecode(b, ctx)) == m);
  }
  SECTION("used automatically when the parameters exceed 255 octets") {
    m.capabilities.push_back(UnknownCap{201, Bytes(250, 0xab)});
    const Bytes b = MustEncode(m, ctx);
    const auto o = std::get<OpenMessage>(MustDecode(b, ctx));
    CHECK(o.extended_optional_parameters);
    CHECK(o.capabilities == m.capabilities);
  }
}

TEST_CASE("OPEN errors carry the RFC 4271 subcodes", "[wire][open]") {
  const CodecContext ctx;
  SECTION("unsupported version → 2/1 with the supported version") {
    Bytes b = MustEncode(FullOpen(), ctx);
    b[19] = 3;
    auto d = DecodeMessage(b, ctx);
    REQUIRE_FALSE(d.ok());
    CHECK(d.error().notification == NotificationMessage{2, 1, {0, 4}});
  }
  SECTION("a non-capability optional parameter → 2/4") {
    const Bytes b = Hex("ffffffffffffffffffffffffffffffff 0020 01 04 fde9 00b4 01010101 03 01 01 00");
    auto d = DecodeMessage(b, ctx);
    REQUIRE_FALSE(d.ok());
    CHECK(d.error().notification.code == 2);
    CHECK(d.error().notification.subcode == 4);
  }
  SECTION("optional parameters overrunning the message → 1/2") {
    const Bytes b = Hex("ffffffffffffffffffffffffffffffff 001f 01 04 fde9 00b4 01010101 09 02 00");
    auto d = DecodeMessage(b, ctx);
    REQUIRE_FALSE(d.ok());
    CHECK(d.error().notification.code == 1);
    CHECK(d.error().notification.subcode == 2);
    CHECK(d.error().notification.data == Bytes{0x00, 0x1f});
  }
  SECTION("a capability overrunning its parameter → 2/0") {
    const Bytes b = Hex("ffffffffffffffffffffffffffffffff 0021 01 04 fde9 00b4 01010101 04 02 02 41 04");
    auto d = DecodeMessage(b, ctx);
    REQUIRE_FALSE(d.ok());
    CHECK(d.error().notification.code == 2);
    CHECK(d.error().notification.subcode == 0);
  }
}

TEST_CASE("A malformed known capability is kept raw and flagged", "[wire][open]") {
  // four-octet-AS capability with 2 octets instead of 4.
  const Bytes fixed = Hex("ffffffffffffffffffffffffffffffff 0023 01 04 fde9 00b4 01010101 06 02 04 41 02 fd e9");
  const auto o = std::get<OpenMessage>(MustDecode(fixed, CodecContext{}));
  REQUIRE(o.malformed_capabilities == std::vector<uint8_t>{65});
  CHECK(std::get<UnknownCap>(o.capabilities[0]).code == 65);
  CHECK(o.AsNumber() == 65001);  // falls back to My AS
}

TEST_CASE("NOTIFICATION, KEEPALIVE and ROUTE-REFRESH", "[wire][messages]") {
  const CodecContext ctx;
  SECTION("RFC 9003 shutdown communication") {
    const auto n = NotificationMessage::Shutdown(cease::kAdministrativeShutdown, "maintenance");
    const Bytes b = MustEncode(n, ctx);
    CHECK(bagd::test::ToHex(b) == "ffffffffffffffffffffffffffffffff" "0021" "03" "0602" "0b" "6d61696e74656e616e6365");
    const auto back = std::get<NotificationMessage>(MustDecode(b, ctx));
    CHECK(back.ShutdownCommunication() == "maintenance");
    CHECK(DescribeNotification(back.code, back.subcode) == "Cease / Administrative Shutdown (6/2)");
  }
  SECTION("RFC 8538: a Hard Reset's message is the one of the Cease inside it") {
    NotificationMessage hard;
    hard.code = 6;
    hard.subcode = cease::kHardReset;
    hard.data = {6, 2, 3, 'b', 'y', 'e'};
    CHECK(hard.ShutdownCommunication() == "bye");
    hard.data = {6, 4};  // Administrative Reset without a message
    CHECK_FALSE(hard.ShutdownCommunication());
    hard.data = {6, 9, 6, 2, 1, 'x'};  // a Hard Reset inside a Hard Reset is not followed
    CHECK_FALSE(hard.ShutdownCommunication());
    hard.data = {6};
    CHECK_FALSE(hard.ShutdownCommunication());
  }
  SECTION("shutdown messages are cut at 255 octets on a UTF-8 boundary") {
    std::string msg(254, 'a');
    msg += "\xc3\xa9";  // é straddles octet 255
    const auto n = NotificationMessage::Shutdown(cease::kAdministrativeReset, msg);
    CHECK(n.data[0] == 254);
  }
  SECTION("every RFC 4271 code has a name") {
    for (int code = 1; code <= 7; ++code) CHECK(std::string(ErrorCodeName(code)) != "Unknown Error");
    for (int sub = 1; sub <= 11; ++sub) {
      if (sub == 7) continue;
      CHECK(std::string(ErrorSubcodeName(3, sub)) != "Unknown Subcode");
    }
    for (int sub = 1; sub <= 9; ++sub) CHECK(std::string(ErrorSubcodeName(6, sub)) != "Unknown Subcode");
  }
  SECTION("KEEPALIVE") {
    const Bytes b = MustEncode(KeepaliveMessage{}, ctx);
    CHECK(b.size() == 19);
    CHECK(std::holds_alternative<KeepaliveMessage>(MustDecode(b, ctx)));
  }
  SECTION("ROUTE-REFRESH BoRR / EoRR and normal with ORF") {
    for (uint8_t st : {0, 1, 2}) {
      RouteRefreshMessage rr{2, st, 1, {}};
      CHECK(std::get<RouteRefreshMessage>(MustDecode(MustEncode(rr, ctx), ctx)) == rr);
    }
    RouteRefreshMessage orf{1, 0, 1, {1, 0, 0, 1}};
    CHECK(std::get<RouteRefreshMessage>(MustDecode(MustEncode(orf, ctx), ctx)) == orf);
  }
  SECTION("an EoRR longer than 4 octets → 7/1 with the message as data (RFC 7313)") {
    const Bytes b = Hex("ffffffffffffffffffffffffffffffff 0018 05 0001 02 01 00");
    auto d = DecodeMessage(b, ctx);
    REQUIRE_FALSE(d.ok());
    CHECK(d.error().notification.code == 7);
    CHECK(d.error().notification.subcode == 1);
    CHECK(d.error().notification.data == b);
  }
}
