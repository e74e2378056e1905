// The rtnetlink codec (fib_sync/netlink/messages.h): exact request bytes for 16-bit group
// weights, encode -> decode round trips for every message kind, the 8-bit fallback, the
// NHA_OP_FLAGS rule for weight_high, extended acks, multi-message datagrams, and malformed or
// truncated input (every prefix of a valid datagram), plus a bond member's link message
// built by hand from the UAPI layout.
#include <linux/if.h>
#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/nexthop.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>

#include <bit>
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "fib_sync/netlink/kernel_abi.h"
#include "fib_sync/netlink/messages.h"

using namespace bagd::fib::netlink;
using bagd::net::Afi;
using bagd::net::IpAddress;
using bagd::net::Prefix;

namespace {

// Netlink is host-order; the literal byte vectors below are little-endian.
constexpr bool kLittleEndian = std::endian::native == std::endian::little;

IpAddress Ip(const char* s) { return *IpAddress::Parse(s); }
Prefix Pfx(const char* s) { return *Prefix::Parse(s); }

// A copy of the body (callers often pass a temporary Message).
template <typename T>
T Body(const Message& m) {
  REQUIRE(std::holds_alternative<T>(m.body));
  return std::get<T>(m.body);
}

// Decodes a datagram expected to hold exactly one message.
Message ParseOne(const Bytes& b) {
  auto parsed = Parse(b);
  INFO(parsed.status().ToString());
  REQUIRE(parsed.ok());
  REQUIRE(parsed->size() == 1);
  return (*parsed)[0];
}

void Le16(Bytes& b, uint16_t v) {
  b.push_back(static_cast<uint8_t>(v));
  b.push_back(static_cast<uint8_t>(v >> 8));
}
void Le32(Bytes& b, uint32_t v) {
  Le16(b, static_cast<uint16_t>(v));
  Le16(b, static_cast<uint16_t>(v >> 16));
}
// Appends an attribute header + payload + padding, by hand.
void HandAttr(Bytes& b, uint16_t type, const Bytes& payload) {
  Le16(b, static_cast<uint16_t>(4 + payload.size()));
  Le16(b, type);
  b.insert(b.end(), payload.begin(), payload.end());
  while (b.size() % 4) b.push_back(0);
}
void SetLength(Bytes& b, size_t msg_start = 0) {
  const uint32_t len = static_cast<uint32_t>(b.size() - msg_start);
  std::memcpy(b.data() + msg_start, &len, 4);
}

// What the kernel sends for a group in a dump: NHA_ID, NHA_GROUP_TYPE, NHA_GROUP and, on 6.12+,
// NHA_OP_FLAGS.
Bytes GroupReply(uint32_t id, const std::vector<uapi::NexthopGrp>& entries, std::optional<uint32_t> op_flags,
                 uint32_t seq = 0) {
  Bytes b;
  MessageWriter w(b, RTM_NEWNEXTHOP, NLM_F_MULTI, seq);
  struct nhmsg nhm{};
  nhm.nh_protocol = RTPROT_BGP;
  w.Fixed(nhm);
  w.U32(NHA_ID, id);
  w.U16(NHA_GROUP_TYPE, NEXTHOP_GRP_TYPE_MPATH);
  w.Raw(NHA_GROUP, ByteSpan(reinterpret_cast<const uint8_t*>(entries.data()), entries.size() * 8));
  if (op_flags) w.U32(uapi::kNhaOpFlags, *op_flags);
  w.Finish();
  return b;
}

}  // namespace

TEST_CASE("A group with weights 1, 1000 and 65535 encodes to the exact kernel bytes", "[fib][netlink]") {
  if (!kLittleEndian) {
    WARN("byte vectors are little-endian");
    return;
  }
  NexthopGroup g;
  g.id = 100;
  g.protocol = kProtocolBgp;
  g.members = {{1, 1}, {2, 1000}, {3, 65535}};
  Bytes b;
  auto at = AppendNewGroup(b, 7, kFlagCreate | kFlagReplace, g, WeightWidth::k16Bit);
  REQUIRE(at.ok());
  CHECK(*at == 0);
  const Bytes expected = {
      0x44, 0x00, 0x00, 0x00,  // nlmsg_len 68
      0x68, 0x00,              // RTM_NEWNEXTHOP (104)
      0x01, 0x05,              // NLM_F_REQUEST | NLM_F_REPLACE | NLM_F_CREATE
      0x07, 0x00, 0x00, 0x00,  // seq 7
      0x00, 0x00, 0x00, 0x00,  // pid 0
      0x00, 0x00, 0xba, 0x00,  // nhmsg: AF_UNSPEC, scope 0, protocol 186 (bgp), resvd
      0x00, 0x00, 0x00, 0x00,  // nh_flags
      0x08, 0x00, 0x01, 0x00, 0x64, 0x00, 0x00, 0x00,  // NHA_ID 100
      0x1c, 0x00, 0x02, 0x00,                          // NHA_GROUP, 3 x struct nexthop_grp
      0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // id 1: weight 1 -> 0
      0x02, 0x00, 0x00, 0x00, 0xe7, 0x03, 0x00, 0x00,  // id 2: 1000 -> 999 = weight 231, weight_high 3
      0x03, 0x00, 0x00, 0x00, 0xfe, 0xff, 0x00, 0x00,  // id 3: 65535 -> 0xfffe
      0x06, 0x00, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00,  // NHA_GROUP_TYPE mpath, padded
  };
  CHECK(b == expected);

  // And back: a request carries no NHA_OP_FLAGS, so the decoder does not trust weight_high in
  // it; a kernel reply (with the capability bit) decodes to the same weights.
  const Message m = ParseOne(b);
  const auto& nm = Body<NexthopMsg>(m);
  CHECK_FALSE(nm.wide_weights);
  const auto& as_request = std::get<NexthopGroup>(nm.object);
  CHECK(as_request.members[1].weight == 232);  // 231 + 1: the high byte ignored

  auto reply = GroupReply(100, {{1, 0, 0, 0}, {2, 231, 3, 0}, {3, 0xfe, 0xff, 0}}, uapi::kNhaOpFlagRespGrpResvd0);
  const auto& rm = Body<NexthopMsg>(ParseOne(reply));
  CHECK(rm.wide_weights);
  const auto& rg = std::get<NexthopGroup>(rm.object);
  CHECK(rg.id == 100);
  CHECK(rg.protocol == kProtocolBgp);
  CHECK(rg.members == std::vector<GroupMember>{{1, 1}, {2, 1000}, {3, 65535}});
}

TEST_CASE("8-bit weight width rejects weights above 255 instead of truncating", "[fib][netlink]") {
  NexthopGroup g;
  g.id = 5;
  g.members = {{1, 256}, {2, 1}};
  Bytes b = {0xaa};  // earlier content of the batch must survive a failed append
  auto r = AppendNewGroup(b, 1, kFlagCreate, g, WeightWidth::k8Bit);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(std::string(r.status().message()), Catch::Contains("256"));
  CHECK(b == Bytes{0xaa});

  g.members[0].weight = 255;
  REQUIRE(AppendNewGroup(b, 1, kFlagCreate, g, WeightWidth::k8Bit).ok());
  auto m = Parse(ByteSpan(b).subspan(4));  // the writer aligned the batch before the message
  REQUIRE(m.ok());
  const auto& grp = std::get<NexthopGroup>(std::get<NexthopMsg>((*m)[0].body).object);
  CHECK(grp.members[0].weight == 255);

  Bytes c;
  g.members[0].weight = 0;
  CHECK_FALSE(AppendNewGroup(c, 1, kFlagCreate, g, WeightWidth::k16Bit).ok());
  g.members[0].weight = 65536;  // encoded 0xffff: the kernel refuses it, so do we
  CHECK_FALSE(AppendNewGroup(c, 1, kFlagCreate, g, WeightWidth::k16Bit).ok());
  g.members = {{1, 1}, {1, 2}};
  CHECK_FALSE(AppendNewGroup(c, 1, kFlagCreate, g, WeightWidth::k16Bit).ok());  // duplicate member
  g.members.clear();
  CHECK_FALSE(AppendNewGroup(c, 1, kFlagCreate, g, WeightWidth::k16Bit).ok());
  g.members.assign(uapi::kMaxGroupMembers + 1, {1, 1});
  CHECK_FALSE(AppendNewGroup(c, 1, kFlagCreate, g, WeightWidth::k16Bit).ok());
  CHECK(c.empty());
}

TEST_CASE("8191 members fit NHA_GROUP's u16 length", "[fib][netlink]") {
  NexthopGroup g;
  g.id = 9;
  for (uint32_t i = 1; i <= uapi::kMaxGroupMembers; ++i) g.members.push_back({i, i % 65535 + 1});
  Bytes b;
  REQUIRE(AppendNewGroup(b, 1, kFlagCreate, g, WeightWidth::k16Bit).ok());
  auto reply = Parse(b);
  REQUIRE(reply.ok());
  CHECK(std::get<NexthopGroup>(std::get<NexthopMsg>((*reply)[0].body).object).members.size() == 8191);
}

TEST_CASE("weight_high is trusted only when NHA_OP_FLAGS carries RESP_GRP_RESVD_0", "[fib][netlink]") {
  const std::vector<uapi::NexthopGrp> entries = {{1, 231, 3, 0}, {2, 0, 0, 0}};
  SECTION("no NHA_OP_FLAGS (kernel before 6.12): the reserved byte is ignored") {
    const auto& m = Body<NexthopMsg>(ParseOne(GroupReply(10, entries, std::nullopt)));
    CHECK_FALSE(m.wide_weights);
    CHECK(std::get<NexthopGroup>(m.object).members == std::vector<GroupMember>{{1, 232}, {2, 1}});
  }
  SECTION("NHA_OP_FLAGS without bit 31: still ignored") {
    const auto& m = Body<NexthopMsg>(ParseOne(GroupReply(10, entries, 0x1u)));
    CHECK_FALSE(m.wide_weights);
    CHECK(std::get<NexthopGroup>(m.object).members[0].weight == 232);
  }
  SECTION("bit 31 set: 16-bit weights") {
    const auto& m = Body<NexthopMsg>(ParseOne(GroupReply(10, entries, uapi::kNhaOpFlagRespGrpResvd0)));
    CHECK(m.wide_weights);
    CHECK(std::get<NexthopGroup>(m.object).members[0].weight == 1000);
  }
}

TEST_CASE("Nexthops round-trip: IPv4, IPv6 (RFC 8950 style), onlink, blackhole, id 0", "[fib][netlink]") {
  std::vector<Nexthop> cases;
  cases.push_back(Nexthop::Via(1, Ip("192.0.2.2"), 3, kProtocolBgp));
  cases.push_back(Nexthop::Via(2, Ip("2001:db8::2"), 4, kProtocolBgp));
  cases.push_back(Nexthop::Via(3, Ip("fe80::1"), 4, 0));
  Nexthop onlink = Nexthop::Via(4, Ip("198.51.100.9"), 7, kProtocolBgp);
  onlink.onlink = true;
  cases.push_back(onlink);
  Nexthop blackhole;
  blackhole.id = 5;
  blackhole.family = Afi::kIpv6;
  blackhole.blackhole = true;
  blackhole.protocol = kProtocolBgp;
  cases.push_back(blackhole);
  Nexthop device_only;
  device_only.id = 0;  // kernel assigns
  device_only.ifindex = 9;
  cases.push_back(device_only);

  for (const Nexthop& nh : cases) {
    Bytes b;
    REQUIRE(AppendNewNexthop(b, 42, kFlagCreate, nh).ok());
    const Message m = ParseOne(b);
    CHECK(m.header.type == RTM_NEWNEXTHOP);
    CHECK(m.header.seq == 42);
    CHECK(m.header.flags == (NLM_F_REQUEST | NLM_F_CREATE));
    const auto& nm = Body<NexthopMsg>(m);
    CHECK_FALSE(nm.deleted);
    REQUIRE(std::holds_alternative<Nexthop>(nm.object));
    CHECK(std::get<Nexthop>(nm.object) == nh);
  }
}

TEST_CASE("Nexthop encoder refuses what the kernel would refuse", "[fib][netlink]") {
  Bytes b;
  Nexthop nh = Nexthop::Via(1, Ip("192.0.2.2"), 0, 0);
  CHECK_FALSE(AppendNewNexthop(b, 1, kFlagCreate, nh).ok());  // no interface
  nh.ifindex = 2;
  nh.family = Afi::kIpv6;  // IPv6 object with an IPv4 gateway
  CHECK_FALSE(AppendNewNexthop(b, 1, kFlagCreate, nh).ok());
  nh.family = Afi::kIpv4;
  nh.blackhole = true;
  CHECK_FALSE(AppendNewNexthop(b, 1, kFlagCreate, nh).ok());  // blackhole with gateway
  Nexthop dev;
  dev.ifindex = 2;
  dev.onlink = true;
  CHECK_FALSE(AppendNewNexthop(b, 1, kFlagCreate, dev).ok());  // onlink without gateway
  dev.onlink = false;
  CHECK_FALSE(AppendNewNexthop(b, 1, kFlagReplace, dev).ok());  // replace of id 0
  CHECK_FALSE(AppendNewNexthop(b, 1, NLM_F_DUMP, dev).ok());    // not a flag for NEW
  CHECK(b.empty());
}

TEST_CASE("Groups round-trip, hash-threshold and resilient (timers in USER_HZ clock_t)", "[fib][netlink]") {
  NexthopGroup mpath;
  mpath.id = 100;
  mpath.protocol = kProtocolBgp;
  mpath.members = {{1, 1000}, {2, 999}, {3, 1}};

  NexthopGroup res;
  res.id = 200;
  res.protocol = kProtocolBgp;
  res.type = NexthopGroup::Type::kResilient;
  res.members = {{1, 1}, {2, 3}};
  res.buckets = 64;
  res.idle_timer_s = 120;
  res.unbalanced_timer_s = 300;

  for (const NexthopGroup& g : {mpath, res}) {
    Bytes b;
    REQUIRE(AppendNewGroup(b, 3, kFlagCreate | kFlagReplace, g, WeightWidth::k16Bit).ok());
    // Decode as the kernel would answer: weight_high is only trusted with the capability bit,
    // so check the round trip on a copy that carries it.
    Bytes reply = b;
    {
      Bytes extra;
      MessageWriter w(extra, 0, 0, 0);
      w.U32(uapi::kNhaOpFlags, uapi::kNhaOpFlagRespGrpResvd0);
      w.Finish();
      reply.insert(reply.end(), extra.begin() + kNlmsgHeaderSize, extra.end());
      SetLength(reply);
    }
    const auto& nm = Body<NexthopMsg>(ParseOne(reply));
    CHECK(nm.wide_weights);
    REQUIRE(std::holds_alternative<NexthopGroup>(nm.object));
    CHECK(std::get<NexthopGroup>(nm.object) == g);
  }

  if (kLittleEndian) {
    // The nested NHA_RES_GROUP (with NLA_F_NESTED): buckets 64, idle 120 s = 12000, unbalanced 300 s = 30000.
    Bytes b;
    REQUIRE(AppendNewGroup(b, 3, kFlagCreate, res, WeightWidth::k16Bit).ok());
    const Bytes nest = {0x1c, 0x00, 0x0c, 0x80,                          // NHA_RES_GROUP | NLA_F_NESTED
                        0x06, 0x00, 0x01, 0x00, 0x40, 0x00, 0x00, 0x00,  // BUCKETS 64
                        0x08, 0x00, 0x02, 0x00, 0xe0, 0x2e, 0x00, 0x00,  // IDLE_TIMER 12000
                        0x08, 0x00, 0x03, 0x00, 0x30, 0x75, 0x00, 0x00}; // UNBALANCED_TIMER 30000
    REQUIRE(b.size() >= nest.size());
    CHECK(Bytes(b.end() - static_cast<long>(nest.size()), b.end()) == nest);
  }

  NexthopGroup bad = res;
  bad.buckets = 0;
  Bytes b;
  CHECK_FALSE(AppendNewGroup(b, 1, kFlagCreate, bad, WeightWidth::k16Bit).ok());
  bad = res;
  bad.idle_timer_s = UINT32_MAX / 100 + 1;
  CHECK_FALSE(AppendNewGroup(b, 1, kFlagCreate, bad, WeightWidth::k16Bit).ok());
}

TEST_CASE("DelNexthop and GetNexthop carry only the id", "[fib][netlink]") {
  Bytes b;
  REQUIRE(AppendDelNexthop(b, 9, 77).ok());
  REQUIRE(AppendGetNexthop(b, 10, 78).ok());
  CHECK_FALSE(AppendDelNexthop(b, 11, 0).ok());
  auto msgs = Parse(b);
  REQUIRE(msgs.ok());
  REQUIRE(msgs->size() == 2);
  const Message& del = (*msgs)[0];
  CHECK(del.header.type == RTM_DELNEXTHOP);
  CHECK(del.header.flags == NLM_F_REQUEST);
  const auto& dm = Body<NexthopMsg>(del);
  CHECK(dm.deleted);
  CHECK(std::get<Nexthop>(dm.object).id == 77);
  CHECK(std::get<Nexthop>(dm.object).protocol == 0);  // the kernel rejects a protocol here
  CHECK((*msgs)[1].header.type == RTM_GETNEXTHOP);
  CHECK(Body<OtherMsg>((*msgs)[1]) == OtherMsg{});
  CHECK(b.size() == 2 * (16 + 8 + 8));
}

TEST_CASE("Routes round-trip for both families and tables above 255 use RTA_TABLE", "[fib][netlink]") {
  Route v4;
  v4.prefix = Pfx("10.10.0.0/24");
  v4.table = 1000;
  v4.protocol = kProtocolBgp;
  v4.nexthop_id = 100;
  Route v6;
  v6.prefix = Pfx("2001:db8:100::/48");
  v6.table = kTableMain;
  v6.protocol = kProtocolBgp;
  v6.nexthop_id = 3;
  v6.priority = 20;
  Route deflt;
  deflt.prefix = Pfx("0.0.0.0/0");
  deflt.nexthop_id = 7;
  Route blackhole;
  blackhole.prefix = Pfx("192.0.2.0/24");
  blackhole.type = kRouteTypeBlackhole;

  for (const Route& r : {v4, v6, deflt, blackhole}) {
    Bytes b;
    REQUIRE(AppendNewRoute(b, 5, kFlagCreate | kFlagReplace, r).ok());
    const Message m = ParseOne(b);
    CHECK(m.header.type == RTM_NEWROUTE);
    CHECK(m.header.flags == (NLM_F_REQUEST | NLM_F_CREATE | NLM_F_REPLACE));
    const auto& rm = Body<RouteMsg>(m);
    CHECK_FALSE(rm.deleted);
    CHECK(rm.route == r);
    CHECK_FALSE(rm.gateway);
  }

  // rtm_table is a u8: 1000 goes in RTA_TABLE with rtm_table = RT_TABLE_UNSPEC; 254 in rtm_table.
  Bytes b;
  REQUIRE(AppendNewRoute(b, 5, kFlagCreate, v4).ok());
  struct rtmsg rtm;
  std::memcpy(&rtm, b.data() + 16, sizeof rtm);
  CHECK(rtm.rtm_table == RT_TABLE_UNSPEC);
  CHECK(rtm.rtm_family == AF_INET);
  CHECK(rtm.rtm_dst_len == 24);
  CHECK(rtm.rtm_scope == RT_SCOPE_UNIVERSE);
  CHECK(rtm.rtm_type == RTN_UNICAST);
  auto attrs = ParseAttributes(ByteSpan(b).subspan(16 + sizeof rtm), "test");
  REQUIRE(attrs.ok());
  std::vector<uint16_t> types;
  for (const auto& a : *attrs) types.push_back(a.type);
  CHECK(types == std::vector<uint16_t>{RTA_DST, RTA_TABLE, RTA_NH_ID});

  Bytes c;
  REQUIRE(AppendNewRoute(c, 5, kFlagCreate, v6).ok());
  std::memcpy(&rtm, c.data() + 16, sizeof rtm);
  CHECK(rtm.rtm_table == RT_TABLE_MAIN);

  Route no_nh = v4;
  no_nh.nexthop_id = 0;
  CHECK_FALSE(AppendNewRoute(c, 1, kFlagCreate, no_nh).ok());
  Route table0 = v4;
  table0.table = 0;
  CHECK_FALSE(AppendNewRoute(c, 1, kFlagCreate, table0).ok());
}

TEST_CASE("DelRoute matches any scope and type and filters on protocol", "[fib][netlink]") {
  Bytes b;
  REQUIRE(AppendDelRoute(b, 8, Pfx("10.10.0.0/24"), 1000, kProtocolBgp).ok());
  REQUIRE(AppendDelRoute(b, 9, Pfx("2001:db8::/32"), kTableMain, 0).ok());
  auto msgs = Parse(b);
  REQUIRE(msgs.ok());
  REQUIRE(msgs->size() == 2);
  const auto& d4 = Body<RouteMsg>((*msgs)[0]);
  CHECK(d4.deleted);
  CHECK(d4.route.prefix == Pfx("10.10.0.0/24"));
  CHECK(d4.route.table == 1000);
  CHECK(d4.route.protocol == kProtocolBgp);
  CHECK(d4.route.type == RTN_UNSPEC);
  CHECK(d4.scope == RT_SCOPE_NOWHERE);
  const auto& d6 = Body<RouteMsg>((*msgs)[1]);
  CHECK(d6.route.prefix == Pfx("2001:db8::/32"));
  CHECK(d6.route.table == kTableMain);
  CHECK((*msgs)[1].header.type == RTM_DELROUTE);
}

TEST_CASE("Dump requests: nexthops, one family's routes filtered by protocol and table, links", "[fib][netlink]") {
  Bytes b;
  const size_t nh_at = AppendGetNexthops(b, 1);
  const size_t rt_at = AppendGetRoutes(b, 2, Afi::kIpv6, kProtocolBgp, 1000);
  const size_t all_at = AppendGetRoutes(b, 3, Afi::kIpv4, 0, 0);
  const size_t ln_at = AppendGetLinks(b, 4);
  CHECK(nh_at == 0);
  auto msgs = Parse(b);
  REQUIRE(msgs.ok());
  REQUIRE(msgs->size() == 4);
  const uint16_t dump = NLM_F_REQUEST | NLM_F_DUMP;
  CHECK((*msgs)[0].header == Header{24, RTM_GETNEXTHOP, dump, 1, 0});
  CHECK((*msgs)[1].header.type == RTM_GETROUTE);
  CHECK((*msgs)[1].header.flags == dump);
  CHECK((*msgs)[3].header.type == RTM_GETLINK);
  for (const Message& m : *msgs) CHECK(std::holds_alternative<OtherMsg>(m.body));

  struct rtmsg rtm;
  std::memcpy(&rtm, b.data() + rt_at + 16, sizeof rtm);
  CHECK(rtm.rtm_family == AF_INET6);
  CHECK(rtm.rtm_protocol == RTPROT_BGP);
  CHECK(rtm.rtm_dst_len == 0);  // strict checking rejects anything else in a dump header
  CHECK(rtm.rtm_scope == 0);
  CHECK(rtm.rtm_type == 0);
  auto attrs = ParseAttributes(ByteSpan(b).subspan(rt_at + 16 + sizeof rtm, (*msgs)[1].header.length - 16 - sizeof rtm), "t");
  REQUIRE(attrs.ok());
  REQUIRE(attrs->size() == 1);
  CHECK((*attrs)[0].type == RTA_TABLE);
  CHECK(*AttrU32((*attrs)[0], "RTA_TABLE") == 1000);
  CHECK((*msgs)[2].header.length == 16 + sizeof(struct rtmsg));  // no filter: no attribute

  auto link_attrs = ParseAttributes(ByteSpan(b).subspan(ln_at + 16 + sizeof(struct ifinfomsg)), "t");
  REQUIRE(link_attrs.ok());
  REQUIRE(link_attrs->size() == 1);
  CHECK((*link_attrs)[0].type == IFLA_EXT_MASK);
  CHECK(*AttrU32((*link_attrs)[0], "IFLA_EXT_MASK") == RTEXT_FILTER_SKIP_STATS);
  (void)all_at;
}

TEST_CASE("SetAck marks one message of a batch", "[fib][netlink]") {
  Bytes b;
  REQUIRE(AppendDelNexthop(b, 1, 10).ok());
  auto last = AppendDelNexthop(b, 2, 11);
  REQUIRE(last.ok());
  SetAck(b, *last);
  auto msgs = Parse(b);
  REQUIRE(msgs.ok());
  CHECK(((*msgs)[0].header.flags & NLM_F_ACK) == 0);
  CHECK(((*msgs)[1].header.flags & NLM_F_ACK) != 0);
}

namespace {

// NLMSG_ERROR as the kernel builds it (net/netlink/af_netlink.c netlink_ack): struct nlmsgerr
// (error + the request's header), the rest of the request unless NLM_F_CAPPED, then extended
// ack attributes when NLM_F_ACK_TLVS.
Bytes ErrorReply(int error, const Bytes& request, bool capped, const std::string& msg, std::optional<uint32_t> offs) {
  Bytes b(16, 0);
  uint16_t flags = capped ? NLM_F_CAPPED : 0;
  if (!msg.empty() || offs) flags |= NLM_F_ACK_TLVS;
  const uint16_t type = NLMSG_ERROR;
  std::memcpy(b.data() + 4, &type, 2);
  std::memcpy(b.data() + 6, &flags, 2);
  std::memcpy(b.data() + 8, request.data() + 8, 4);  // seq of the request
  Le32(b, static_cast<uint32_t>(error));
  if (capped) {
    b.insert(b.end(), request.begin(), request.begin() + 16);
  } else {
    b.insert(b.end(), request.begin(), request.end());
  }
  if (!msg.empty()) {
    Bytes s(msg.begin(), msg.end());
    s.push_back(0);
    HandAttr(b, NLMSGERR_ATTR_MSG, s);
  }
  if (offs) {
    Bytes o;
    Le32(o, *offs);
    HandAttr(b, NLMSGERR_ATTR_OFFS, o);
  }
  SetLength(b);
  return b;
}

Bytes WeightRequest() {
  NexthopGroup g;
  g.id = 100;
  g.members = {{1, 1}};
  Bytes b;
  (void)AppendNewGroup(b, 31, kFlagCreate, g, WeightWidth::k16Bit);
  return b;
}

}  // namespace

TEST_CASE("Errors decode with the extended ack (capped or not) and an ack is error 0", "[fib][netlink]") {
  if (!kLittleEndian) return;
  const Bytes request = WeightRequest();
  for (bool capped : {true, false}) {
    const Message m = ParseOne(ErrorReply(-22, request, capped, "Invalid value for weight", 36));
    CHECK(m.header.type == NLMSG_ERROR);
    CHECK(m.header.seq == 31);
    const auto& e = Body<ErrorMsg>(m);
    CHECK(e.error == -22);
    CHECK(e.extack_message == "Invalid value for weight");
    CHECK(e.extack_offset == 36u);
    CHECK(e.request.seq == 31);
    CHECK(e.request.type == RTM_NEWNEXTHOP);
    CHECK(e.request.length == request.size());
  }
  const auto& ack = Body<ErrorMsg>(ParseOne(ErrorReply(0, request, true, "", std::nullopt)));
  CHECK(ack.error == 0);
  CHECK(ack.extack_message.empty());
  CHECK_FALSE(ack.extack_offset);

  // An ack from a kernel that did not flag it CAPPED (before 4.12) still decodes.
  Bytes old_ack = ErrorReply(0, request, true, "", std::nullopt);
  old_ack[7] = 0;  // clear NLM_F_CAPPED (0x100: the high byte of nlmsg_flags)
  REQUIRE(Parse(old_ack).ok());
  CHECK(Body<ErrorMsg>(ParseOne(old_ack)).error == 0);

  // An uncapped error whose echoed request is cut short is malformed.
  Bytes cut = ErrorReply(-22, request, false, "", std::nullopt);
  cut.resize(cut.size() - 8);
  SetLength(cut);
  CHECK_FALSE(Parse(cut).ok());
}

TEST_CASE("NLMSG_DONE carries the dump's error and extack", "[fib][netlink]") {
  Bytes b(16, 0);
  const uint16_t type = NLMSG_DONE, flags = NLM_F_MULTI | NLM_F_ACK_TLVS;
  std::memcpy(b.data() + 4, &type, 2);
  std::memcpy(b.data() + 6, &flags, 2);
  Le32(b, static_cast<uint32_t>(-90));  // -EMSGSIZE
  const std::string msg = "Buffer too small for object";
  Bytes s(msg.begin(), msg.end());
  s.push_back(0);
  HandAttr(b, NLMSGERR_ATTR_MSG, s);
  SetLength(b);
  const auto& d = Body<DoneMsg>(ParseOne(b));
  CHECK(d.error == -90);
  CHECK(d.extack_message == msg);
}

namespace {

// A nexthop dump as one datagram: two nexthops, a group (6.12-style, with NHA_OP_FLAGS), DONE.
Bytes DumpDatagram() {
  Bytes b;
  Nexthop a = Nexthop::Via(1, Ip("192.0.2.2"), 3, kProtocolBgp);
  Nexthop v6 = Nexthop::Via(2, Ip("2001:db8::2"), 3, kProtocolBgp);
  (void)AppendNewNexthop(b, 77, 0, a);
  (void)AppendNewNexthop(b, 77, 0, v6);
  Bytes g = GroupReply(100, {{1, 231, 3, 0}, {2, 0xfe, 0xff, 0}}, uapi::kNhaOpFlagRespGrpResvd0, 77);
  b.insert(b.end(), g.begin(), g.end());
  Bytes done(16, 0);
  const uint16_t type = NLMSG_DONE, flags = NLM_F_MULTI;
  std::memcpy(done.data() + 4, &type, 2);
  std::memcpy(done.data() + 6, &flags, 2);
  const uint32_t seq = 77;
  std::memcpy(done.data() + 8, &seq, 4);
  Le32(done, 0);
  SetLength(done);
  b.insert(b.end(), done.begin(), done.end());
  return b;
}

}  // namespace

TEST_CASE("A multi-message datagram decodes in order", "[fib][netlink]") {
  const Bytes b = DumpDatagram();
  auto msgs = Parse(b);
  REQUIRE(msgs.ok());
  REQUIRE(msgs->size() == 4);
  for (const Message& m : *msgs) CHECK(m.header.seq == 77);
  CHECK(std::get<Nexthop>(Body<NexthopMsg>((*msgs)[0]).object).gateway == Ip("192.0.2.2"));
  CHECK(std::get<Nexthop>(Body<NexthopMsg>((*msgs)[1]).object).family == Afi::kIpv6);
  const auto& g = Body<NexthopMsg>((*msgs)[2]);
  CHECK(g.wide_weights);
  CHECK(std::get<NexthopGroup>(g.object).members == std::vector<GroupMember>{{1, 1000}, {2, 65535}});
  CHECK(Body<DoneMsg>((*msgs)[3]).error == 0);
}

TEST_CASE("Every truncation of a valid datagram fails cleanly or stops at a message boundary", "[fib][netlink]") {
  // Built from each message kind, so every decoder sees every cut.
  Bytes b = DumpDatagram();
  {
    Route r;
    r.prefix = Pfx("2001:db8:100::/48");
    r.nexthop_id = 3;
    r.priority = 1024;
    (void)AppendNewRoute(b, 1, kFlagCreate, r);
    NexthopGroup res;
    res.id = 7;
    res.type = NexthopGroup::Type::kResilient;
    res.buckets = 8;
    res.members = {{1, 2}};
    (void)AppendNewGroup(b, 2, kFlagCreate, res, WeightWidth::k16Bit);
    const Bytes err = ErrorReply(-22, WeightRequest(), false, "Invalid value for weight", 36);
    b.insert(b.end(), err.begin(), err.end());
  }
  auto full = Parse(b);
  REQUIRE(full.ok());
  std::vector<size_t> boundaries = {0};
  for (const Message& m : *full) boundaries.push_back(boundaries.back() + Align4(m.header.length));
  REQUIRE(boundaries.back() == b.size());

  for (size_t n = 0; n < b.size(); ++n) {
    // An exact-size heap copy, so a sanitizer build catches any read past the end.
    const Bytes prefix(b.begin(), b.begin() + static_cast<long>(n));
    auto r = Parse(prefix);
    const auto boundary = std::find(boundaries.begin(), boundaries.end(), n);
    INFO("prefix length " << n);
    if (boundary != boundaries.end()) {
      REQUIRE(r.ok());
      CHECK(r->size() == static_cast<size_t>(boundary - boundaries.begin()));
    } else {
      REQUIRE_FALSE(r.ok());
      CHECK(r.status().code() == absl::StatusCode::kInvalidArgument);
    }
  }
}

TEST_CASE("Malformed messages are errors that name the problem", "[fib][netlink]") {
  if (!kLittleEndian) return;
  const Bytes good = GroupReply(10, {{1, 0, 0, 0}}, std::nullopt);
  REQUIRE(Parse(good).ok());
  // Layout of `good`: header 0..15, nhmsg 16..23, NHA_ID 24..31, NHA_GROUP_TYPE 32..39, NHA_GROUP 40..51.
  auto expect_error = [](Bytes b, const char* needle) {
    auto r = Parse(b);
    REQUIRE_FALSE(r.ok());
    CHECK_THAT(std::string(r.status().message()), Catch::Contains(needle));
  };
  {
    Bytes b = good;
    b[0] = 15;  // nlmsg_len below the header
    expect_error(b, "below the header size");
  }
  {
    Bytes b = good;
    b[0] = static_cast<uint8_t>(b.size() + 4);
    expect_error(b, "truncated");
  }
  {
    Bytes b = good;
    b[24] = 2;  // NHA_ID nla_len 2
    expect_error(b, "below the 4-byte header");
  }
  {
    Bytes b = good;
    b[24] = 200;  // NHA_ID runs past the message
    expect_error(b, "truncated");
  }
  {
    Bytes b = good;
    b[24] = 6;  // NHA_ID of 2 bytes
    expect_error(b, "NHA_ID");
  }
  {
    Bytes b = good;
    b[36] = 7;  // NHA_GROUP_TYPE 7
    expect_error(b, "NHA_GROUP_TYPE");
  }
  {
    Bytes b = good;
    b[40] = 4 + 6;  // NHA_GROUP of 6 bytes
    b.resize(b.size() - 2);
    SetLength(b);
    expect_error(b, "NHA_GROUP");
  }
  {
    Bytes b = good;
    b.resize(16 + 4);  // nhmsg cut short
    SetLength(b);
    expect_error(b, "family header");
  }
  {
    Nexthop nh = Nexthop::Via(1, Ip("192.0.2.1"), 2, 0);
    Bytes b;
    REQUIRE(AppendNewNexthop(b, 1, 0, nh).ok());
    b[16] = AF_INET6;  // claims IPv6 with a 4-byte gateway
    expect_error(b, "NHA_GATEWAY");
  }
  {
    Route r;
    r.prefix = Pfx("10.0.0.0/8");
    r.nexthop_id = 1;
    Bytes b;
    REQUIRE(AppendNewRoute(b, 1, 0, r).ok());
    b[17] = 33;  // rtm_dst_len 33
    expect_error(b, "rtm_dst_len");
  }
  CHECK_FALSE(Parse(Bytes{1, 2, 3}).ok());
}

TEST_CASE("Kernel-style route messages: RTA_TABLE overrides rtm_table and RTA_VIA is a gateway", "[fib][netlink]") {
  if (!kLittleEndian) return;
  // RTM_NEWROUTE 10.1.0.0/16 table 1000 (rtm_table = RT_TABLE_COMPAT, as the kernel reports
  // ids above 255) via 2001:db8::1 (RTA_VIA) dev 4, metric 20, offloaded.
  Bytes b(16, 0);
  const uint16_t type = RTM_NEWROUTE;
  std::memcpy(b.data() + 4, &type, 2);
  struct rtmsg rtm{};
  rtm.rtm_family = AF_INET;
  rtm.rtm_dst_len = 16;
  rtm.rtm_table = RT_TABLE_COMPAT;
  rtm.rtm_protocol = RTPROT_STATIC;
  rtm.rtm_type = RTN_UNICAST;
  rtm.rtm_flags = RTM_F_OFFLOAD;
  b.insert(b.end(), reinterpret_cast<uint8_t*>(&rtm), reinterpret_cast<uint8_t*>(&rtm) + sizeof rtm);
  Bytes t;
  Le32(t, 1000);
  HandAttr(b, RTA_TABLE, t);
  HandAttr(b, RTA_DST, {10, 1, 0, 0});
  Bytes prio;
  Le32(prio, 20);
  HandAttr(b, RTA_PRIORITY, prio);
  Bytes via;
  Le16(via, AF_INET6);
  const IpAddress gw6 = Ip("2001:db8::1");
  via.insert(via.end(), gw6.bytes(), gw6.bytes() + 16);
  HandAttr(b, RTA_VIA, via);
  Bytes oif;
  Le32(oif, 4);
  HandAttr(b, RTA_OIF, oif);
  SetLength(b);

  const auto& r = Body<RouteMsg>(ParseOne(b));
  CHECK(r.route.prefix == Pfx("10.1.0.0/16"));
  CHECK(r.route.table == 1000);
  CHECK(r.route.protocol == RTPROT_STATIC);
  CHECK(r.route.priority == 20);
  CHECK(r.route.nexthop_id == 0);
  CHECK(r.gateway == gw6);
  CHECK(r.oif == 4);
  CHECK(r.flags == RTM_F_OFFLOAD);
  CHECK_FALSE(r.multipath);

  // Another family (RTNL_FAMILY_IPMR) is not ours: OtherMsg.
  Bytes mr = b;
  mr[16] = RTNL_FAMILY_IPMR;
  CHECK(std::holds_alternative<OtherMsg>(ParseOne(mr).body));
}

namespace {

// RTM_NEWLINK for a bond member, byte by byte from the UAPI layout:
// struct ifinfomsg { u8 family; u8 pad; u16 type; s32 index; u32 flags; u32 change; }, then
// IFLA_IFNAME, IFLA_MASTER, IFLA_OPERSTATE and IFLA_LINKINFO { IFLA_INFO_SLAVE_KIND "bond",
// IFLA_INFO_SLAVE_DATA { IFLA_BOND_SLAVE_STATE, IFLA_BOND_SLAVE_MII_STATUS,
// IFLA_BOND_SLAVE_LINK_FAILURE_COUNT, IFLA_BOND_SLAVE_PERM_HWADDR, IFLA_BOND_SLAVE_QUEUE_ID } }.
const Bytes kBondSlaveLink = {
    0x70, 0x00, 0x00, 0x00,  // nlmsg_len 112
    0x10, 0x00,              // RTM_NEWLINK (16)
    0x00, 0x00,              // flags
    0x00, 0x00, 0x00, 0x00,  // seq 0 (a notification)
    0x00, 0x00, 0x00, 0x00,  // pid
    0x00, 0x00,              // ifi_family AF_UNSPEC, pad
    0x01, 0x00,              // ifi_type ARPHRD_ETHER
    0x07, 0x00, 0x00, 0x00,  // ifi_index 7
    0x43, 0x18, 0x01, 0x00,  // ifi_flags IFF_UP|IFF_BROADCAST|IFF_RUNNING|IFF_SLAVE|IFF_MULTICAST|IFF_LOWER_UP
    0x00, 0x00, 0x00, 0x00,  // ifi_change
    0x09, 0x00, 0x03, 0x00, 'e', 't', 'h', '1', 0x00, 0x00, 0x00, 0x00,  // IFLA_IFNAME "eth1" (+pad)
    0x08, 0x00, 0x0a, 0x00, 0x05, 0x00, 0x00, 0x00,  // IFLA_MASTER 5
    0x05, 0x00, 0x10, 0x00, 0x06, 0x00, 0x00, 0x00,  // IFLA_OPERSTATE IF_OPER_UP (+pad)
    0x34, 0x00, 0x12, 0x00,                          // IFLA_LINKINFO, 52 bytes (no NLA_F_NESTED, as the kernel sends it)
    0x09, 0x00, 0x04, 0x00, 'b', 'o', 'n', 'd', 0x00, 0x00, 0x00, 0x00,  // IFLA_INFO_SLAVE_KIND "bond"
    0x24, 0x00, 0x05, 0x00,                          // IFLA_INFO_SLAVE_DATA, 36 bytes
    0x05, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00, 0x00,  // IFLA_BOND_SLAVE_STATE 1 (backup)
    0x05, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00,  // IFLA_BOND_SLAVE_MII_STATUS 0 (up)
    0x08, 0x00, 0x03, 0x00, 0x02, 0x00, 0x00, 0x00,  // IFLA_BOND_SLAVE_LINK_FAILURE_COUNT 2
    0x06, 0x00, 0x05, 0x00, 0x03, 0x00, 0x00, 0x00,  // IFLA_BOND_SLAVE_QUEUE_ID 3 (+pad)
};

}  // namespace

TEST_CASE("A bond member's RTM_NEWLINK decodes master, operstate and slave state", "[fib][netlink]") {
  if (!kLittleEndian) return;
  REQUIRE(kBondSlaveLink.size() == 112);
  const Message m = ParseOne(kBondSlaveLink);
  const auto& lm = Body<LinkMsg>(m);
  CHECK_FALSE(lm.deleted);
  const Link& l = lm.link;
  CHECK(l.ifindex == 7);
  CHECK(l.name == "eth1");
  CHECK(l.master == 5);
  CHECK(l.operstate == IF_OPER_UP);
  CHECK((l.flags & IFF_UP) != 0);
  CHECK((l.flags & IFF_RUNNING) != 0);
  CHECK((l.flags & IFF_LOWER_UP) != 0);
  CHECK(l.kind.empty());
  CHECK(l.slave_kind == "bond");
  CHECK(l.bond_slave_state == uint8_t{1});
  CHECK(l.bond_slave_mii_status == uint8_t{0});

  // RTM_DELLINK of the same link.
  Bytes del = kBondSlaveLink;
  del[4] = RTM_DELLINK;
  CHECK(Body<LinkMsg>(ParseOne(del)).deleted);

  // The same bytes as an AF_BRIDGE port message are not a link event.
  Bytes bridge = kBondSlaveLink;
  bridge[16] = AF_BRIDGE;
  CHECK(std::holds_alternative<OtherMsg>(ParseOne(bridge).body));

  // Slave data of another master kind is not read as bond state.
  Bytes team = kBondSlaveLink;
  const char* team_kind = "team";
  std::memcpy(team.data() + 68, team_kind, 4);  // "bond" in IFLA_INFO_SLAVE_KIND is at 68..71
  const Link tl = Body<LinkMsg>(ParseOne(team)).link;
  CHECK(tl.slave_kind == "team");
  CHECK_FALSE(tl.bond_slave_state);

  // Every cut of it fails cleanly.
  for (size_t n = 1; n < kBondSlaveLink.size(); ++n) {
    const Bytes prefix(kBondSlaveLink.begin(), kBondSlaveLink.begin() + static_cast<long>(n));
    CHECK_FALSE(Parse(prefix).ok());
  }
  // A corrupt nested length inside IFLA_INFO_SLAVE_DATA is caught.
  Bytes bad = kBondSlaveLink;
  bad[80] = 0x30;  // IFLA_BOND_SLAVE_STATE (at 80) claims 48 bytes of the 32 left
  CHECK_FALSE(Parse(bad).ok());
}

TEST_CASE("Messages cut short with a consistent nlmsg_len never read past their end", "[fib][netlink]") {
  // Unlike a cut datagram, these pass the header check, so every decoder sees its own
  // attributes end early. Some cuts land on attribute boundaries and are valid messages.
  std::vector<Bytes> messages;
  {
    Bytes b = DumpDatagram();
    auto msgs = Parse(b);
    REQUIRE(msgs.ok());
    size_t at = 0;
    for (const Message& m : *msgs) {
      messages.emplace_back(b.begin() + static_cast<long>(at), b.begin() + static_cast<long>(at + m.header.length));
      at += Align4(m.header.length);
    }
  }
  messages.push_back(kBondSlaveLink);
  messages.push_back(ErrorReply(-22, WeightRequest(), false, "Invalid value for weight", 36));
  NexthopGroup res;
  res.id = 7;
  res.type = NexthopGroup::Type::kResilient;
  res.buckets = 8;
  res.members = {{1, 2}};
  Bytes rb;
  REQUIRE(AppendNewGroup(rb, 2, kFlagCreate, res, WeightWidth::k16Bit).ok());
  messages.push_back(rb);
  size_t ok = 0, failed = 0;
  for (const Bytes& msg : messages) {
    for (size_t len = kNlmsgHeaderSize; len < msg.size(); ++len) {
      Bytes cut(msg.begin(), msg.begin() + static_cast<long>(len));
      SetLength(cut);
      auto r = Parse(cut);
      (r.ok() ? ok : failed)++;
    }
  }
  CHECK(failed > 0);
  CHECK(ok > 0);
}
