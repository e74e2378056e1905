#include <catch2/catch.hpp>

#include "wire/message.h"
#include "tests/unit/test_support.h"

using namespace bagd::wire;
using namespace bagd::net;
using bagd::test::Hex;
using bagd::test::MustDecode;
using bagd::test::MustEncode;
using bagd::test::RawUpdate;

namespace {

Nlri N(const char* p, uint32_t path_id = 0) { return Nlri{*Prefix::Parse(p), path_id}; }

PathAttributes FullAttributes() {
  PathAttributes a;
  a.origin = Origin::kIncomplete;
  a.as_path = AsPath{{{AsSegmentType::kSequence, {65001, 4200000001u}}, {AsSegmentType::kSet, {65010, 65011}}}};
  a.next_hop = *IpAddress::Parse("192.0.2.1");
  a.med = 50;
  a.local_pref = 200;
  a.atomic_aggregate = true;
  a.aggregator = Aggregator{4200000001u, *IpAddress::Parse("192.0.2.9")};
  a.communities = {(65001u << 16) | 100, 0xFFFFFF01u};
  a.originator_id = 0x0a0a0a0a;
  a.cluster_list = {0x01010101, 0x02020202};
  a.extended_communities = {LinkBandwidth::FromBitsPerSecond(65001, 10e9, true).ToExtendedCommunity(),
                            ExtendedCommunity{0x0002FDE900000064ull}};
  Ipv6ExtendedCommunity v6ec;
  v6ec.bytes = {0x00, 0x02, 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 7};
  a.ipv6_extended_communities = {v6ec};
  a.large_communities = {{65001, 1, 2}, {4200000001u, 3, 4}};
  a.unknown = {UnknownAttribute{attr_flag::kOptional | attr_flag::kTransitive | attr_flag::kPartial, 99, {1, 2, 3}}};
  return a;
}

}  // namespace

TEST_CASE("UPDATE with every attribute round-trips (value and bytes)", "[wire][update]") {
  CodecContext ctx;
  ctx.ebgp = false;
  UpdateMessage m;
  m.withdrawn = {N("10.9.0.0/16")};
  m.attrs = FullAttributes();
  m.nlri = {N("10.1.0.0/24"), N("10.2.0.0/23"), N("0.0.0.0/0"), N("10.3.3.3/32")};
  const Bytes b = MustEncode(m, ctx);
  const Message back = MustDecode(b, ctx);
  const auto& u = std::get<UpdateMessage>(back);
  CHECK(u.action == ErrorAction::kNone);
  CHECK(u.errors.empty());
  CHECK(u == m);
  CHECK(MustEncode(back, ctx) == b);
}

TEST_CASE("Attributes are encoded in ascending type order, extended length only when needed", "[wire][update]") {
  CodecContext ctx;
  ctx.ebgp = false;
  PathAttributes a = FullAttributes();
  Bytes out;
  EncodePathAttributes(a, ctx, out);
  ByteReader r(out);
  int last = 0;
  while (!r.empty()) {
    uint8_t flags = 0, type = 0, l8 = 0;
    uint16_t len = 0;
    r.ReadU8(flags);
    r.ReadU8(type);
    if (flags & attr_flag::kExtendedLength) {
      r.ReadU16(len);
      CHECK(len > 255);
    } else {
      r.ReadU8(l8);
      len = l8;
    }
    CHECK(type > last);
    last = type;
    r.Skip(len);
  }
  CHECK(last == 99);
}

TEST_CASE("IPv6 MP_REACH with global + link-local next hop", "[wire][update][ipv6]") {
  const CodecContext ctx;
  UpdateMessage m;
  m.attrs.origin = Origin::kIgp;
  m.attrs.as_path = AsPath{{{AsSegmentType::kSequence, {65001}}}};
  m.attrs.mp_reach = MpReach{Family::kIpv6Unicast, *IpAddress::Parse("2001:db8::1"), *IpAddress::Parse("fe80::1"),
                             {N("2001:db8:1::/48"), N("2001:db8:2::/64")}};
  const Bytes b = MustEncode(m, ctx);
  const auto u = std::get<UpdateMessage>(MustDecode(b, ctx));
  REQUIRE(u.attrs.mp_reach);
  CHECK(u.attrs.mp_reach->link_local->ToString() == "fe80::1");
  CHECK(u.attrs.mp_reach->nlri == m.attrs.mp_reach->nlri);
  CHECK(u == m);

  SECTION("16-octet next hop") {
    m.attrs.mp_reach->link_local.reset();
    CHECK(std::get<UpdateMessage>(MustDecode(MustEncode(m, ctx), ctx)) == m);
  }
  SECTION("withdraw through MP_UNREACH") {
    UpdateMessage w;
    w.attrs.mp_unreach = MpUnreach{Family::kIpv6Unicast, {N("2001:db8:1::/48")}};
    CHECK(std::get<UpdateMessage>(MustDecode(MustEncode(w, ctx), ctx)) == w);
  }
}

TEST_CASE("IPv4 NLRI with an IPv6 next hop (RFC 8950)", "[wire][update]") {
  const CodecContext ctx;
  UpdateMessage m;
  m.attrs.origin = Origin::kIgp;
  m.attrs.as_path = AsPath{{{AsSegmentType::kSequence, {65001}}}};
  m.attrs.mp_reach =
      MpReach{Family::kIpv4Unicast, *IpAddress::Parse("2001:db8::1"), std::nullopt, {N("10.1.0.0/24")}};
  const auto u = std::get<UpdateMessage>(MustDecode(MustEncode(m, ctx), ctx));
  REQUIRE(u.attrs.mp_reach);
  CHECK(u.attrs.mp_reach->family == Family::kIpv4Unicast);
  CHECK(u.attrs.mp_reach->next_hop.is_v6());
  CHECK(u == m);
}

TEST_CASE("ADD-PATH path identifiers when negotiated", "[wire][update][addpath]") {
  CodecContext ctx;
  ctx.add_path = {true, true};
  UpdateMessage m;
  m.withdrawn = {N("10.9.0.0/16", 7)};
  m.attrs.origin = Origin::kIgp;
  m.attrs.as_path = AsPath{{{AsSegmentType::kSequence, {65001}}}};
  m.attrs.next_hop = *IpAddress::Parse("192.0.2.1");
  m.attrs.mp_reach = MpReach{Family::kIpv6Unicast, *IpAddress::Parse("2001:db8::1"), std::nullopt,
                             {N("2001:db8:1::/48", 1), N("2001:db8:1::/48", 2)}};
  m.nlri = {N("10.1.0.0/24", 1), N("10.1.0.0/24", 2)};
  const Bytes b = MustEncode(m, ctx);
  CHECK(std::get<UpdateMessage>(MustDecode(b, ctx)) == m);
  // The same bytes without ADD-PATH are a different (here malformed) encoding.
  CodecContext plain;
  CHECK_FALSE(DecodeMessage(b, plain).ok());
}

TEST_CASE("2-octet AS sessions: AS_TRANS + AS4_PATH out, RFC 6793 merge in", "[wire][update][as4]") {
  CodecContext two;
  two.four_octet_as = false;
  two.ebgp = false;
  UpdateMessage m;
  m.attrs.origin = Origin::kIgp;
  m.attrs.as_path = AsPath{{{AsSegmentType::kSequence, {65001, 4200000001u, 65002}}}};
  m.attrs.next_hop = *IpAddress::Parse("192.0.2.1");
  m.attrs.aggregator = Aggregator{4200000001u, *IpAddress::Parse("192.0.2.9")};
  m.nlri = {N("10.1.0.0/24")};
  const Bytes b = MustEncode(m, two);
  // On the wire: AS_PATH 65001 23456 65002 (2-octet), AS4_PATH, AGGREGATOR AS_TRANS, AS4_AGGREGATOR.
  CHECK(bagd::test::ToHex(b).find("40020802" "03" "fde9" "5ba0" "fdea") != std::string::npos);
  const auto u = std::get<UpdateMessage>(MustDecode(b, two));
  CHECK(u.errors.empty());
  CHECK(u.attrs.as_path == m.attrs.as_path);
  CHECK(u.attrs.aggregator == m.attrs.aggregator);

  SECTION("AS4_PATH longer than AS_PATH is ignored") {
    const Bytes raw = RawUpdate("",
                                "40010100 400204 0201 fde9 400304 c0000201"
                                " c0110e 0203 fa56ea01 fa56ea02 fa56ea03",
                                "180a0100");
    const auto v = std::get<UpdateMessage>(MustDecode(raw, two));
    CHECK(v.attrs.as_path->ToString() == "65001");
  }
  SECTION("AGGREGATOR other than AS_TRANS: AS4 attributes ignored") {
    const Bytes raw = RawUpdate("",
                                "40010100 400206 0202 fde9 5ba0 400304 c0000201 c00706 fde9 c0000209"
                                " c01106 0201 fa56ea01",
                                "180a0100");
    const auto v = std::get<UpdateMessage>(MustDecode(raw, two));
    CHECK(v.attrs.as_path->ToString() == "65001 23456");
  }
  SECTION("AS4_PATH on a 4-octet session is discarded") {
    CodecContext four;
    four.ebgp = false;
    const Bytes raw = RawUpdate("", "40010100 400206 0201 0000fde9 400304 c0000201 c01106 0201 fa56ea01",
                                "180a0100");
    const auto v = std::get<UpdateMessage>(MustDecode(raw, four));
    CHECK(v.attrs.as_path->ToString() == "65001");
    CHECK(v.action == ErrorAction::kAttributeDiscard);
  }
}

TEST_CASE("AS_PATH helpers", "[wire][update]") {
  const AsPath p{{{AsSegmentType::kConfedSequence, {65100}},
                  {AsSegmentType::kSequence, {65001, 65002}},
                  {AsSegmentType::kSet, {1, 2, 3}}}};
  CHECK(p.Length() == 3);
  CHECK(p.FirstAs() == 65001);
  CHECK(p.Contains(2));
  CHECK(p.ToString() == "(65100) 65001 65002 {1,2,3}");
}

TEST_CASE("Unknown optional transitive attributes get the Partial bit", "[wire][update]") {
  CodecContext ctx;
  ctx.ebgp = false;
  const Bytes raw = RawUpdate("", "40010100 400206 0201 0000fde9 400304 c0000201 c06303 010203 80640100", "180a0100");
  const auto u = std::get<UpdateMessage>(MustDecode(raw, ctx));
  REQUIRE(u.attrs.unknown.size() == 2);
  CHECK(u.attrs.unknown[0].type == 99);
  CHECK(u.attrs.unknown[0].flags == 0xe0);  // Partial set for re-advertisement
  CHECK(u.attrs.unknown[1].flags == 0x80);  // optional non-transitive: as received
  const Bytes again = MustEncode(u, ctx);
  CHECK(bagd::test::ToHex(again).find("e06303010203") != std::string::npos);
}

TEST_CASE("End-of-RIB for IPv4 and IPv6", "[wire][update][eor]") {
  const CodecContext ctx;
  const Bytes v4 = MustEncode(UpdateMessage::MakeEndOfRib(Family::kIpv4Unicast), ctx);
  CHECK(v4.size() == 23);
  CHECK(std::get<UpdateMessage>(MustDecode(v4, ctx)).EndOfRib() == Family::kIpv4Unicast);
  const Bytes v6 = MustEncode(UpdateMessage::MakeEndOfRib(Family::kIpv6Unicast), ctx);
  CHECK(bagd::test::ToHex(v6) == "ffffffffffffffffffffffffffffffff" "001d" "02" "0000" "0006" "800f03000201");
  CHECK(std::get<UpdateMessage>(MustDecode(v6, ctx)).EndOfRib() == Family::kIpv6Unicast);
  UpdateMessage not_eor;
  not_eor.withdrawn = {N("10.0.0.0/8")};
  CHECK_FALSE(not_eor.EndOfRib());
}

TEST_CASE("MP attributes of other families are ignored but kept visible", "[wire][update]") {
  CodecContext ctx;
  ctx.ebgp = false;
  // MP_REACH AFI 1 SAFI 128 (VPNv4): not ours.
  const Bytes raw = RawUpdate("", "40010100 400200 800e09 0001 80 04 0a000001 00", "");
  const auto u = std::get<UpdateMessage>(MustDecode(raw, ctx));
  CHECK(u.action == ErrorAction::kNone);
  CHECK_FALSE(u.attrs.mp_reach);
  REQUIRE(u.attrs.unknown.size() == 1);
  CHECK(u.attrs.unknown[0].type == 14);
}

TEST_CASE("Unknown attributes decode in type order, so re-encoding is stable", "[wire][update]") {
  CodecContext ctx;
  ctx.ebgp = false;
  // attribute 234 (optional) before an MP_REACH of a family bagd does not route (found by the fuzzer).
  const Bytes raw = RawUpdate("", "40010100 400206 0201 0000fde9 400304 c0000201 80ea04 00000014 800e05 cd01 01 00 00",
                              "180a0100");
  const Message m = MustDecode(raw, ctx);
  const auto& u = std::get<UpdateMessage>(m);
  REQUIRE(u.attrs.unknown.size() == 2);
  CHECK(u.attrs.unknown[0].type == 14);
  CHECK(u.attrs.unknown[1].type == 234);
  CHECK(MustDecode(MustEncode(m, ctx), ctx) == m);
}
