#include <bit>
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

#include "wire/link_bandwidth.h"
#include "wire/path_attributes.h"

using namespace bagd::wire;
using namespace bagd::net;

namespace {
ExtendedCommunity Ec(uint64_t raw) { return ExtendedCommunity{raw}; }
ExtendedCommunity Lb(bool transitive, uint16_t asn, float bps_bytes) {
  return LinkBandwidth::Make(asn, bps_bytes, transitive).ToExtendedCommunity();
}
}  // namespace

TEST_CASE("Link bandwidth encodes exactly as RFC 10005 and the vendors do", "[wire][lb]") {
  // Reference encodings (shared/reference/link-bandwidth.md §1.3).
  CHECK(LinkBandwidth::FromBitsPerSecond(65001, 10e9, true).ToExtendedCommunity().raw == 0x0004FDE94E9502F9ull);
  CHECK(LinkBandwidth::FromBitsPerSecond(65001, 10e9, false).ToExtendedCommunity().raw == 0x4004FDE94E9502F9ull);
  CHECK(LinkBandwidth::FromBitsPerSecond(65001, 1e6, false).ToExtendedCommunity().raw == 0x4004FDE947F42400ull);
  // A 4-octet AS becomes AS_TRANS.
  CHECK(LinkBandwidth::FromBitsPerSecond(4200000001u, 100e9, false).ToExtendedCommunity().raw ==
        0x40045BA0503A43B7ull);
  // FRR `set extcommunity bandwidth 1000` from AS 65000.
  CHECK(LinkBandwidth::FromBitsPerSecond(65000, 1e9, true).ToExtendedCommunity().raw == 0x0004FDE84CEE6B28ull);
}

TEST_CASE("Link bandwidth decodes both types and nothing else", "[wire][lb]") {
  auto t = LinkBandwidth::FromExtendedCommunity(Ec(0x0004FDE94E9502F9ull));
  REQUIRE(t);
  CHECK(t->transitive());
  CHECK(t->asn() == 65001);
  CHECK(t->bits_per_second() == Approx(10e9));
  auto n = LinkBandwidth::FromExtendedCommunity(Ec(0x40045BA0503A43B7ull));
  REQUIRE(n);
  CHECK_FALSE(n->transitive());
  CHECK(n->asn() == kAsTrans);
  CHECK(n->bits_per_second() == Approx(100e9).epsilon(1e-7));
  CHECK_FALSE(LinkBandwidth::FromExtendedCommunity(Ec(0x0002FDE900000064ull)));  // route target
  CHECK_FALSE(LinkBandwidth::FromExtendedCommunity(Ec(0x0104FDE94E9502F9ull)));  // type 0x01
  CHECK_FALSE(LinkBandwidth::FromExtendedCommunity(Ec(0x4005FDE94E9502F9ull)));  // sub-type 5
}

TEST_CASE("Several LB communities: lowest value wins, numerically, tie to transitive", "[wire][lb]") {
  SECTION("lowest wins regardless of type and AS order in the bytes") {
    // Raw-byte order would pick 0x00.. (transitive, 10G); the numeric minimum is 1G non-transitive.
    const ExtendedCommunity ecs[] = {Lb(true, 65001, 1.25e9f), Lb(false, 65002, 1.25e8f)};
    auto s = SelectLinkBandwidth(ecs);
    REQUIRE(s.chosen);
    CHECK(s.seen == 2);
    CHECK(s.chosen->bytes_per_second() == 1.25e8f);
    CHECK_FALSE(s.chosen->transitive());
  }
  SECTION("AS numbers do not take part") {
    const ExtendedCommunity ecs[] = {Lb(true, 1, 5e9f), Lb(true, 65535, 1e9f)};
    CHECK(SelectLinkBandwidth(ecs).chosen->asn() == 65535);
  }
  SECTION("zero counts and wins") {
    const ExtendedCommunity ecs[] = {Lb(true, 65001, 1e9f), Lb(true, 65001, 0.0f)};
    auto s = SelectLinkBandwidth(ecs);
    REQUIRE(s.chosen);
    CHECK(s.chosen->bytes_per_second() == 0.0f);
  }
  SECTION("negative zero is zero") {
    const ExtendedCommunity ecs[] = {Lb(false, 65001, -0.0f), Lb(true, 65001, 0.0f)};
    auto s = SelectLinkBandwidth(ecs);
    REQUIRE(s.chosen);
    CHECK(s.chosen->transitive());  // tie → transitive
  }
  SECTION("on a tie the transitive one") {
    const ExtendedCommunity ecs[] = {Lb(false, 65001, 1e9f), Lb(true, 65002, 1e9f)};
    CHECK(SelectLinkBandwidth(ecs).chosen->transitive());
  }
  SECTION("other extended communities are ignored") {
    const ExtendedCommunity ecs[] = {Ec(0x0002FDE900000064ull), Lb(true, 65001, 1e9f)};
    auto s = SelectLinkBandwidth(ecs);
    CHECK(s.seen == 1);
    CHECK(s.chosen->bytes_per_second() == 1e9f);
  }
  SECTION("no LB at all") {
    const ExtendedCommunity ecs[] = {Ec(0x0002FDE900000064ull)};
    auto s = SelectLinkBandwidth(ecs);
    CHECK(s.seen == 0);
    CHECK_FALSE(s.chosen);
  }
  SECTION("subnormal values are valid") {
    const float tiny = std::numeric_limits<float>::denorm_min();
    const ExtendedCommunity ecs[] = {Lb(true, 65001, tiny)};
    auto s = SelectLinkBandwidth(ecs);
    REQUIRE(s.chosen);
    CHECK(s.chosen->bytes_per_second() == tiny);
  }
}

TEST_CASE("NaN, infinite and negative LB values make the path carry no LB", "[wire][lb]") {
  const float bad = GENERATE(std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                             -std::numeric_limits<float>::infinity(), -1.0f, -1e9f);
  const ExtendedCommunity ecs[] = {Lb(true, 65001, 1e9f), Lb(true, 65001, bad)};
  auto s = SelectLinkBandwidth(ecs);
  CHECK(s.seen == 2);
  CHECK(s.invalid == 1);
  CHECK_FALSE(s.chosen);
  CHECK_FALSE(LinkBandwidth::Make(65001, bad, true).valid());
}

TEST_CASE("ReplaceLinkBandwidth replaces, never appends (RFC 10005 §7.1)", "[wire][lb]") {
  PathAttributes a;
  a.extended_communities = {Lb(true, 65001, 1e9f), Ec(0x0002FDE900000064ull), Lb(false, 65001, 2e9f)};
  a.ReplaceLinkBandwidth(LinkBandwidth::Make(65000, 5e9f, true));
  REQUIRE(a.extended_communities.size() == 2);
  CHECK(a.extended_communities[0].raw == 0x0002FDE900000064ull);
  CHECK(a.SelectedLinkBandwidth().chosen->bytes_per_second() == 5e9f);
  a.ReplaceLinkBandwidth(std::nullopt);
  CHECK(a.extended_communities.size() == 1);
}

TEST_CASE("FRR's 64-bit extended link bandwidth is decoded for display", "[wire][lb]") {
  Ipv6ExtendedCommunity ec;
  // type 0x02 (FRR), sub-type 0x06, reserved, uint64 bytes/s, 4-octet AS, zeros.
  const uint8_t raw[20] = {0x02, 0x06, 0, 0, 0, 0, 0, 0x0b, 0xa4, 0x3b, 0x74, 0x00, 0xfa, 0x56, 0xea, 0x01, 0, 0, 0, 0};
  std::copy(std::begin(raw), std::end(raw), ec.bytes.begin());
  auto x = DecodeExtendedLinkBandwidth(ec);
  REQUIRE(x);
  CHECK(x->bytes_per_second == 50000000000ull);  // 400 Gbps
  CHECK(x->asn == 4200000001u);
  CHECK(x->transitive);
  ec.bytes[0] = 0x42;
  CHECK_FALSE(DecodeExtendedLinkBandwidth(ec)->transitive);
  ec.bytes[1] = 0x02;
  CHECK_FALSE(DecodeExtendedLinkBandwidth(ec));
}

TEST_CASE("Rates print in engineer units", "[wire][lb]") {
  CHECK(FormatBitsPerSecond(10e9) == "10Gbps");
  CHECK(FormatBitsPerSecond(2.5e9) == "2.5Gbps");
  CHECK(FormatBitsPerSecond(400e6) == "400Mbps");
  CHECK(FormatBitsPerSecond(1.6e12) == "1.6Tbps");
  CHECK(FormatBitsPerSecond(0) == "0bps");
}
