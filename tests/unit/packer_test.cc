#include <catch2/catch.hpp>
#include <set>

#include "wire/update_packer.h"
#include "tests/unit/test_support.h"

using namespace bagd::wire;
using namespace bagd::net;

namespace {

std::vector<Nlri> V4Slash24(size_t n, uint32_t path_id = 0) {
  std::vector<Nlri> out;
  for (size_t i = 0; i < n; ++i) {
    const uint32_t a = 0x0a000000u + (static_cast<uint32_t>(i) << 8);
    const uint8_t b[4] = {uint8_t(a >> 24), uint8_t(a >> 16), uint8_t(a >> 8), 0};
    out.push_back(Nlri{Prefix::Make(Afi::kIpv4, b, 24), path_id});
  }
  return out;
}

std::vector<Nlri> V6Slash48(size_t n) {
  std::vector<Nlri> out;
  for (size_t i = 0; i < n; ++i) {
    uint8_t b[16] = {0x20, 0x01, 0x0d, 0xb8, uint8_t(i >> 8), uint8_t(i)};
    out.push_back(Nlri{Prefix::Make(Afi::kIpv6, b, 48), 0});
  }
  return out;
}

PathAttributes Attrs() {
  PathAttributes a;
  a.origin = Origin::kIgp;
  a.as_path = AsPath{{{AsSegmentType::kSequence, {65001}}}};
  a.next_hop = *IpAddress::Parse("192.0.2.1");
  a.extended_communities = {LinkBandwidth::FromBitsPerSecond(65001, 10e9, true).ToExtendedCommunity()};
  return a;
}

// Decodes every message and collects the announced NLRI, checking sizes and attributes.
std::vector<Nlri> Unpack(const std::vector<Bytes>& msgs, const CodecContext& ctx, const PathAttributes& expect) {
  std::vector<Nlri> all;
  for (const auto& m : msgs) {
    REQUIRE(m.size() <= ctx.max_message_size());
    auto u = std::get<UpdateMessage>(bagd::test::MustDecode(m, ctx));
    CHECK(u.action == ErrorAction::kNone);
    if (u.attrs.mp_reach) {
      all.insert(all.end(), u.attrs.mp_reach->nlri.begin(), u.attrs.mp_reach->nlri.end());
      u.attrs.mp_reach->nlri.clear();
    }
    all.insert(all.end(), u.nlri.begin(), u.nlri.end());
    if (!u.withdrawn.empty()) all.insert(all.end(), u.withdrawn.begin(), u.withdrawn.end());
    if (u.attrs.mp_unreach) all.insert(all.end(), u.attrs.mp_unreach->withdrawn.begin(), u.attrs.mp_unreach->withdrawn.end());
    if (!u.nlri.empty() || u.attrs.mp_reach) CHECK(u.attrs == expect);
  }
  return all;
}

}  // namespace

TEST_CASE("IPv4 /24s pack ~1000 per 4096-octet UPDATE, nothing lost", "[wire][packer]") {
  CodecContext ctx;
  ctx.ebgp = false;
  const auto nlri = V4Slash24(5000);
  PathAttributes a = Attrs();
  auto msgs = PackAnnouncements(a, Family::kIpv4Unicast, nlri, ctx);
  REQUIRE(msgs.ok());
  // attrs: ORIGIN 4 + AS_PATH 9 + NEXT_HOP 7 + EXT_COMM 11 = 31 octets → (4096-23-31)/4 = 1010 per message.
  CHECK(msgs->size() == 5);
  CHECK(Unpack(*msgs, ctx, a) == nlri);
  CHECK((*msgs)[0].size() == 4096 - 2);  // 1010 × 4 = 4040 + 23 + 31
  SECTION("extended messages take far more per UPDATE") {
    ctx.extended_message = true;
    auto big = PackAnnouncements(a, Family::kIpv4Unicast, nlri, ctx);
    REQUIRE(big.ok());
    CHECK(big->size() == 1);
    CHECK(Unpack(*big, ctx, a) == nlri);
  }
  SECTION("ADD-PATH adds 4 octets per prefix") {
    ctx.add_path = {true, false};
    const auto with_ids = V4Slash24(5000, 9);
    auto ap = PackAnnouncements(a, Family::kIpv4Unicast, with_ids, ctx);
    REQUIRE(ap.ok());
    CHECK(ap->size() == 10);
    CHECK(Unpack(*ap, ctx, a) == with_ids);
  }
}

TEST_CASE("IPv6 announcements pack into MP_REACH", "[wire][packer]") {
  CodecContext ctx;
  ctx.ebgp = false;
  PathAttributes a = Attrs();
  a.next_hop.reset();
  a.mp_reach = MpReach{Family::kIpv6Unicast, *IpAddress::Parse("2001:db8::1"), *IpAddress::Parse("fe80::1"), {}};
  const auto nlri = V6Slash48(3000);
  auto msgs = PackAnnouncements(a, Family::kIpv6Unicast, nlri, ctx);
  REQUIRE(msgs.ok());
  // 7 octets per /48: ~575 per message.
  CHECK(msgs->size() == 6);
  for (size_t i = 0; i + 1 < msgs->size(); ++i) CHECK((*msgs)[i].size() > 4000);
  CHECK(Unpack(*msgs, ctx, a) == nlri);
}

TEST_CASE("Withdrawals pack for both families", "[wire][packer]") {
  const CodecContext ctx;
  const auto v4 = V4Slash24(2000);
  auto w4 = PackWithdrawals(Family::kIpv4Unicast, v4, ctx);
  REQUIRE(w4.ok());
  CHECK(w4->size() == 2);
  CHECK(Unpack(*w4, ctx, {}) == v4);
  const auto v6 = V6Slash48(2000);
  auto w6 = PackWithdrawals(Family::kIpv6Unicast, v6, ctx);
  REQUIRE(w6.ok());
  CHECK(w6->size() == 4);
  CHECK(Unpack(*w6, ctx, {}) == v6);
}

TEST_CASE("Packer refuses what cannot be sent", "[wire][packer]") {
  const CodecContext ctx;
  PathAttributes no_nh = Attrs();
  no_nh.next_hop.reset();
  CHECK_FALSE(PackAnnouncements(no_nh, Family::kIpv4Unicast, V4Slash24(1), ctx).ok());
  PathAttributes huge = Attrs();
  huge.communities.assign(1100, 1);  // 4400 octets of communities
  CHECK_FALSE(PackAnnouncements(huge, Family::kIpv4Unicast, V4Slash24(1), ctx).ok());
  CHECK(PackAnnouncements(Attrs(), Family::kIpv4Unicast, {}, ctx)->empty());
}

TEST_CASE("Packed UPDATEs hold the octets they need, not the largest message the session allows", "[wire][packer]") {
  // They wait in a session's send queue until the socket takes them: a few prefixes in a
  // message of 4096 (or 65535) reserved octets multiplied an exporting table's memory.
  CodecContext ctx;
  ctx.ebgp = false;
  ctx.extended_message = GENERATE(false, true);
  const auto few = V4Slash24(3);
  auto announced = PackAnnouncements(Attrs(), Family::kIpv4Unicast, few, ctx);
  REQUIRE(announced.ok());
  REQUIRE(announced->size() == 1);
  CHECK((*announced)[0].size() == 23 + 31 + 3 * 4);
  CHECK((*announced)[0].capacity() == (*announced)[0].size());
  auto full = PackAnnouncements(Attrs(), Family::kIpv4Unicast, V4Slash24(5000), ctx);
  REQUIRE(full.ok());
  for (const Bytes& m : *full) CHECK(m.capacity() == m.size());
  auto withdrawn = PackWithdrawals(Family::kIpv4Unicast, few, ctx);
  REQUIRE(withdrawn.ok());
  REQUIRE(withdrawn->size() == 1);
  CHECK((*withdrawn)[0].capacity() == (*withdrawn)[0].size());
  PathAttributes a6 = Attrs();
  a6.next_hop.reset();
  a6.mp_reach = MpReach{Family::kIpv6Unicast, *IpAddress::Parse("2001:db8::1"), std::nullopt, {}};
  auto announced6 = PackAnnouncements(a6, Family::kIpv6Unicast, V6Slash48(3), ctx);
  REQUIRE(announced6.ok());
  REQUIRE(announced6->size() == 1);
  CHECK((*announced6)[0].capacity() == (*announced6)[0].size());
  auto withdrawn6 = PackWithdrawals(Family::kIpv6Unicast, V6Slash48(3), ctx);
  REQUIRE(withdrawn6.ok());
  REQUIRE(withdrawn6->size() == 1);
  // MP_UNREACH's attribute header is counted as extended-length: one octet to spare at most.
  CHECK((*withdrawn6)[0].capacity() <= (*withdrawn6)[0].size() + 1);
}

TEST_CASE("RewriteNextHop makes the bytes a packing with the other next hop makes", "[wire][packer]") {
  CodecContext ctx;
  SECTION("IPv4 NEXT_HOP") {
    PathAttributes a = Attrs(), b = Attrs();
    b.next_hop = *IpAddress::Parse("198.51.100.7");
    auto as = PackAnnouncements(a, Family::kIpv4Unicast, V4Slash24(2500), ctx);
    const auto bs = PackAnnouncements(b, Family::kIpv4Unicast, V4Slash24(2500), ctx);
    REQUIRE(as.ok());
    REQUIRE(bs.ok());
    REQUIRE(as->size() == bs->size());
    CHECK(*as != *bs);
    for (auto& m : *as) REQUIRE(RewriteNextHop(m, *b.next_hop).ok());
    CHECK(*as == *bs);
    // An IPv6 address has no place in NEXT_HOP: an error, the message unchanged.
    Bytes m = bs->front();
    CHECK_FALSE(RewriteNextHop(m, *IpAddress::Parse("2001:db8::9")).ok());
    CHECK(m == bs->front());
  }
  SECTION("IPv6 MP_REACH_NLRI, extended-length attributes before it") {
    ctx.ebgp = false;
    PathAttributes a = Attrs();
    a.next_hop.reset();
    a.communities.assign(80, 0x00010002);  // 320 octets: an extended-length COMMUNITIES
    a.mp_reach = MpReach{Family::kIpv6Unicast, *IpAddress::Parse("2001:db8::1"), std::nullopt, {}};
    PathAttributes b = a;
    b.mp_reach->next_hop = *IpAddress::Parse("2001:db8:ffff::2");
    auto as = PackAnnouncements(a, Family::kIpv6Unicast, V6Slash48(1200), ctx);
    const auto bs = PackAnnouncements(b, Family::kIpv6Unicast, V6Slash48(1200), ctx);
    REQUIRE(as.ok());
    REQUIRE(as->size() > 1);
    for (auto& m : *as) REQUIRE(RewriteNextHop(m, b.mp_reach->next_hop).ok());
    CHECK(*as == *bs);
  }
  SECTION("a withdrawal has no next hop") {
    auto w = PackWithdrawals(Family::kIpv4Unicast, V4Slash24(3), ctx);
    REQUIRE(w.ok());
    Bytes m = w->front();
    CHECK(RewriteNextHop(m, *IpAddress::Parse("192.0.2.9")).code() == absl::StatusCode::kNotFound);
    CHECK(m == w->front());
    Bytes short_message(10, 0xff);
    CHECK_FALSE(RewriteNextHop(short_message, *IpAddress::Parse("192.0.2.9")).ok());
  }
}
