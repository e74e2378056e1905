// RFC 7606 error handling, one row per case: the attribute bytes, the expected action
// and the RFC 4271 subcode recorded (or sent, for session reset).
#include <catch2/catch.hpp>

#include "wire/message.h"
#include "tests/unit/test_support.h"

using namespace bagd::wire;
using namespace bagd::net;
using bagd::test::Hex;
using bagd::test::RawUpdate;

namespace {

constexpr const char* kOrigin = "40010100 ";
constexpr const char* kAsPath = "400206 0201 0000fde9 ";
constexpr const char* kNextHop = "400304 c0000201 ";
constexpr const char* kNlri = "180a0100";

struct Row {
  const char* name;
  std::string attrs;
  ErrorAction action;
  uint8_t subcode;
  bool ebgp = false;
};

}  // namespace

TEST_CASE("RFC 7606 table: attribute errors and their actions", "[wire][rfc7606]") {
  const std::string base = std::string(kOrigin) + kAsPath + kNextHop;
  const Row rows[] = {
      {"ORIGIN undefined value", std::string("40010105 ") + kAsPath + kNextHop, ErrorAction::kTreatAsWithdraw, 6},
      {"ORIGIN bad length", std::string("4001020000 ") + kAsPath + kNextHop, ErrorAction::kTreatAsWithdraw, 5},
      {"AS_PATH zero-length segment", std::string(kOrigin) + "400202 0200 " + kNextHop,
       ErrorAction::kTreatAsWithdraw, 11},
      {"AS_PATH unknown segment type", std::string(kOrigin) + "400206 0501 0000fde9 " + kNextHop,
       ErrorAction::kTreatAsWithdraw, 11},
      {"AS_PATH segment overrun", std::string(kOrigin) + "400206 0202 0000fde9 " + kNextHop,
       ErrorAction::kTreatAsWithdraw, 11},
      {"AS_PATH single octet left", std::string(kOrigin) + "400207 0201 0000fde9 02 " + kNextHop,
       ErrorAction::kTreatAsWithdraw, 11},
      {"AS_CONFED from eBGP", std::string(kOrigin) + "40020c 0301 0000fde8 0201 0000fde9 " + kNextHop,
       ErrorAction::kTreatAsWithdraw, 11, true},
      {"NEXT_HOP bad length", std::string(kOrigin) + kAsPath + "400305 c000020100 ", ErrorAction::kTreatAsWithdraw,
       5},
      {"NEXT_HOP 0.0.0.0", std::string(kOrigin) + kAsPath + "400304 00000000 ", ErrorAction::kTreatAsWithdraw, 8},
      {"NEXT_HOP multicast", std::string(kOrigin) + kAsPath + "400304 e0000001 ", ErrorAction::kTreatAsWithdraw, 8},
      {"missing NEXT_HOP", std::string(kOrigin) + kAsPath, ErrorAction::kTreatAsWithdraw, 3},
      {"missing ORIGIN", std::string(kAsPath) + kNextHop, ErrorAction::kTreatAsWithdraw, 3},
      {"missing AS_PATH", std::string(kOrigin) + kNextHop, ErrorAction::kTreatAsWithdraw, 3},
      {"MED bad length", base + "800403 000001 ", ErrorAction::kTreatAsWithdraw, 5},
      {"LOCAL_PREF bad length", base + "400502 0064 ", ErrorAction::kTreatAsWithdraw, 5},
      {"LOCAL_PREF from eBGP is discarded", base + "400504 00000064 ", ErrorAction::kAttributeDiscard, 0, true},
      {"ATOMIC_AGGREGATE with a value", base + "400601 00 ", ErrorAction::kAttributeDiscard, 5},
      {"AGGREGATOR bad length", base + "c00706 fde9c0000201 ", ErrorAction::kAttributeDiscard, 5},
      {"COMMUNITIES not a multiple of 4", base + "c00803 fde900 ", ErrorAction::kTreatAsWithdraw, 5},
      {"COMMUNITIES empty", base + "c00800 ", ErrorAction::kTreatAsWithdraw, 5},
      {"ORIGINATOR_ID bad length", base + "800903 010101 ", ErrorAction::kTreatAsWithdraw, 5},
      {"ORIGINATOR_ID from eBGP is discarded", base + "800904 01010101 ", ErrorAction::kAttributeDiscard, 0, true},
      {"CLUSTER_LIST bad length", base + "800a05 0101010101 ", ErrorAction::kTreatAsWithdraw, 5},
      {"EXTENDED_COMMUNITIES not a multiple of 8", base + "c01007 0004fde94e9502 ", ErrorAction::kTreatAsWithdraw,
       5},
      {"IPv6 extended communities not a multiple of 20", base + "c01908 0002200100000000 ",
       ErrorAction::kTreatAsWithdraw, 5},
      {"LARGE_COMMUNITY not a multiple of 12", base + "c02008 0000fde900000001 ", ErrorAction::kTreatAsWithdraw, 5},
      {"AS4_PATH malformed is discarded", base + "c01102 0200 ", ErrorAction::kAttributeDiscard, 9},
      {"AS4_AGGREGATOR bad length is discarded", base + "c01206 fde9c0000201 ", ErrorAction::kAttributeDiscard, 5},
      {"flags: ORIGIN marked optional", std::string("c0010100 ") + kAsPath + kNextHop, ErrorAction::kTreatAsWithdraw,
       4},
      {"flags: COMMUNITIES marked non-transitive", base + "800804 fde90064 ", ErrorAction::kTreatAsWithdraw, 4},
      {"flags: MED marked transitive", base + "c00404 00000001 ", ErrorAction::kTreatAsWithdraw, 4},
      {"flags: AGGREGATOR marked well-known", base + "400708 0000fde9c0000201 ", ErrorAction::kAttributeDiscard, 4},
      {"duplicate attribute: later copy discarded", base + "40010101 ", ErrorAction::kAttributeDiscard, 1},
      {"attribute length overruns the field", base + "c0100c 0004fde94e9502f9 ", ErrorAction::kTreatAsWithdraw, 5},
      {"truncated attribute header", base + "c010 ", ErrorAction::kTreatAsWithdraw, 1},
      {"MP_REACH bad next hop length", base + "800e0b 0002 01 05 2001db8000 00 00 ", ErrorAction::kAfiSafiDisable, 9},
      {"MP_REACH bad NLRI", base + "800e16 0002 01 10 20010db8000000000000000000000001 00 81 ",
       ErrorAction::kAfiSafiDisable, 9},
      {"MP_UNREACH bad NLRI", base + "800f05 0002 01 4020 ", ErrorAction::kAfiSafiDisable, 9},
  };
  for (const Row& row : rows) {
    DYNAMIC_SECTION(row.name) {
      CodecContext ctx;
      ctx.ebgp = row.ebgp;
      const Bytes msg = RawUpdate("", row.attrs, kNlri);
      auto d = DecodeMessage(msg, ctx);
      REQUIRE(d.ok());
      const auto& u = std::get<UpdateMessage>(d.value());
      INFO("errors: " << (u.errors.empty() ? "" : u.errors[0].reason));
      CHECK(u.action == row.action);
      REQUIRE_FALSE(u.errors.empty());
      bool found = false;
      for (const auto& e : u.errors) found |= e.action == row.action && e.subcode == row.subcode;
      CHECK(found);
      // Treat-as-withdraw keeps the NLRI so the RIB can withdraw exactly those routes.
      if (row.action == ErrorAction::kTreatAsWithdraw) CHECK(u.nlri.size() == 1);
      if (row.action == ErrorAction::kAfiSafiDisable) CHECK(u.disabled_family == Family::kIpv6Unicast);
    }
  }
}

TEST_CASE("RFC 7606 session-reset cases return the exact NOTIFICATION", "[wire][rfc7606]") {
  const std::string base = std::string(kOrigin) + kAsPath + kNextHop;
  const CodecContext ctx;
  SECTION("MP_REACH twice → 3/1") {
    const std::string mp = "800e15 0002 01 10 20010db8000000000000000000000001 00 ";
    auto d = DecodeMessage(RawUpdate("", base + mp + mp, ""), ctx);
    REQUIRE_FALSE(d.ok());
    CHECK(d.error().notification == NotificationMessage{3, 1, {}});
  }
  SECTION("unrecognized well-known attribute → 3/2 with the attribute as data") {
    auto d = DecodeMessage(RawUpdate("", base + "406302 abcd ", kNlri), ctx);
    REQUIRE_FALSE(d.ok());
    CHECK(d.error().notification == NotificationMessage{3, 2, Hex("406302abcd")});
  }
  SECTION("MP_REACH too short for AFI/SAFI → 3/9") {
    auto d = DecodeMessage(RawUpdate("", base + "800e02 0002 ", kNlri), ctx);
    REQUIRE_FALSE(d.ok());
    CHECK(d.error().notification == NotificationMessage{3, 9, Hex("800e020002")});
  }
  SECTION("MP_REACH with wrong flags → 3/4") {
    auto d = DecodeMessage(RawUpdate("", base + "c00e15 0002 01 10 20010db8000000000000000000000001 00 ", ""), ctx);
    REQUIRE_FALSE(d.ok());
    CHECK(d.error().notification.code == 3);
    CHECK(d.error().notification.subcode == 4);
  }
  SECTION("withdrawn routes length overruns → 3/1") {
    Bytes m = RawUpdate("", base, kNlri);
    m[19] = 0x7f;
    auto d = DecodeMessage(m, ctx);
    REQUIRE_FALSE(d.ok());
    CHECK(d.error().notification == NotificationMessage{3, 1, {}});
  }
  SECTION("total attribute length overruns → 3/1") {
    Bytes m = RawUpdate("", base, "");
    m[22] = 0xff;
    auto d = DecodeMessage(m, ctx);
    REQUIRE_FALSE(d.ok());
    CHECK(d.error().notification == NotificationMessage{3, 1, {}});
  }
  SECTION("NLRI prefix length 33 → 3/10") {
    auto d = DecodeMessage(RawUpdate("", base, "210a010000"), ctx);
    REQUIRE_FALSE(d.ok());
    CHECK(d.error().notification == NotificationMessage{3, 10, {}});
  }
  SECTION("NLRI truncated → 3/10") {
    auto d = DecodeMessage(RawUpdate("", base, "180a01"), ctx);
    REQUIRE_FALSE(d.ok());
    CHECK(d.error().notification == NotificationMessage{3, 10, {}});
  }
  SECTION("withdrawn prefix malformed → 3/10") {
    auto d = DecodeMessage(RawUpdate("2100000000", "", ""), ctx);
    REQUIRE_FALSE(d.ok());
    CHECK(d.error().notification == NotificationMessage{3, 10, {}});
  }
}

TEST_CASE("A withdraw-only UPDATE needs no mandatory attributes", "[wire][rfc7606]") {
  auto d = DecodeMessage(RawUpdate("180a0100", "", ""), CodecContext{});
  REQUIRE(d.ok());
  CHECK(std::get<UpdateMessage>(d.value()).action == ErrorAction::kNone);
}

TEST_CASE("Every row of the table is consistent", "[wire][rfc7606]") {
  for (const auto& rule : AttributeRules()) {
    INFO(rule.name);
    CHECK(FindAttributeRule(rule.type) == &rule);
    CHECK(rule.on_malformed != ErrorAction::kNone);
    CHECK(rule.on_malformed != ErrorAction::kSessionReset);  // RFC 7606: no attribute resets by default
    CHECK(std::string(rule.rfc).rfind("RFC", 0) == 0);
  }
  CHECK(FindAttributeRule(99) == nullptr);
  CHECK(std::string(ErrorActionName(ErrorAction::kTreatAsWithdraw)) == "treat-as-withdraw");
}
