#include "fib_sync/netlink/messages.h"

#include <sys/socket.h>

#include <algorithm>
#include <cassert>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "fib_sync/netlink/kernel_abi.h"

namespace bagd::fib::netlink {

// Assigns the value of a StatusOr expression or returns its error from the enclosing function.
#define BAGD_NL_ASSIGN(lhs, expr)        \
  do {                                   \
    auto bagd_nl_result = (expr);        \
    if (!bagd_nl_result.ok()) return bagd_nl_result.status(); \
    lhs = *std::move(bagd_nl_result);    \
  } while (0)

static_assert(kFlagAck == NLM_F_ACK && kFlagEcho == NLM_F_ECHO && kFlagReplace == NLM_F_REPLACE &&
              kFlagExcl == NLM_F_EXCL && kFlagCreate == NLM_F_CREATE && kFlagMulti == NLM_F_MULTI);
static_assert(kProtocolBgp == RTPROT_BGP && kRouteTypeUnicast == RTN_UNICAST &&
              kRouteTypeBlackhole == RTN_BLACKHOLE && kTableMain == RT_TABLE_MAIN);

namespace {

constexpr uint16_t kAllowedNewFlags = kFlagCreate | kFlagReplace | kFlagExcl | kFlagAck | kFlagEcho;

absl::Status CheckNewFlags(uint16_t flags, const char* what) {
  if (flags & ~kAllowedNewFlags) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": unsupported nlmsg_flags 0x",
                                                   absl::Hex(flags & ~kAllowedNewFlags),
                                                   " (allowed: CREATE, REPLACE, EXCL, ACK, ECHO)"));
  }
  return absl::OkStatus();
}

uint8_t AddressFamily(net::Afi afi) { return afi == net::Afi::kIpv4 ? AF_INET : AF_INET6; }
const char* AfiName(net::Afi afi) { return afi == net::Afi::kIpv4 ? "IPv4" : "IPv6"; }

// ------------------------------------------------------------------------------------------
// Encoding helpers

struct nhmsg MakeNhmsg(uint8_t family, uint8_t protocol, uint32_t flags) {
  struct nhmsg m;
  std::memset(&m, 0, sizeof m);
  m.nh_family = family;
  m.nh_protocol = protocol;
  m.nh_flags = flags;
  return m;
}

struct rtmsg MakeRtmsg(const net::Prefix& prefix, uint32_t table, uint8_t protocol, uint8_t scope,
                       uint8_t type) {
  struct rtmsg m;
  std::memset(&m, 0, sizeof m);
  m.rtm_family = AddressFamily(prefix.afi());
  m.rtm_dst_len = prefix.length();
  // rtm_table is a u8: ids above 255 go in RTA_TABLE with rtm_table = RT_TABLE_UNSPEC
  // (iproute2's convention; the kernel lets RTA_TABLE override rtm_table).
  m.rtm_table = table < 256 ? static_cast<uint8_t>(table) : uint8_t{RT_TABLE_UNSPEC};
  m.rtm_protocol = protocol;
  m.rtm_scope = scope;
  m.rtm_type = type;
  return m;
}

void PutRouteKey(MessageWriter& w, const net::Prefix& prefix, uint32_t table) {
  if (prefix.length() > 0) w.Address(RTA_DST, prefix.address());
  if (table >= 256) w.U32(RTA_TABLE, table);
}

absl::Status CheckTable(uint32_t table, const char* what) {
  if (table == RT_TABLE_UNSPEC) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": table 0 is not a routing table (main is 254)"));
  }
  return absl::OkStatus();
}

// ------------------------------------------------------------------------------------------
// Decoding helpers

absl::Status Malformed(const char* what, const std::string& detail) {
  return absl::InvalidArgumentError(absl::StrCat(what, ": ", detail));
}

template <typename T>
absl::StatusOr<T> ReadFixed(ByteSpan payload, const char* what) {
  if (payload.size() < sizeof(T)) {
    return Malformed(what, absl::StrCat("payload of ", payload.size(), " bytes is shorter than its ", sizeof(T),
                                        "-byte family header"));
  }
  T v;
  std::memcpy(&v, payload.data(), sizeof(T));
  return v;
}

absl::StatusOr<std::vector<Attribute>> AttributesAfter(ByteSpan payload, size_t fixed_size, const char* what) {
  const size_t start = Align4(fixed_size);
  if (payload.size() <= start) return std::vector<Attribute>{};
  return ParseAttributes(payload.subspan(start), what);
}

absl::StatusOr<net::IpAddress> AddressOf(const Attribute& a, net::Afi afi, const char* name) {
  const size_t want = afi == net::Afi::kIpv4 ? 4 : 16;
  if (a.payload.size() != want) {
    return absl::InvalidArgumentError(absl::StrCat(name, ": ", a.payload.size(), " bytes for an ",
                                                   AfiName(afi), " address (want ", want, ")"));
  }
  return afi == net::Afi::kIpv4 ? net::IpAddress::V4Bytes(a.payload.data())
                                 : net::IpAddress::V6Bytes(a.payload.data());
}

// Extended-ack TLVs shared by NLMSG_ERROR and NLMSG_DONE.
struct Extack {
  std::string message;
  std::optional<uint32_t> offset;
  std::optional<uint32_t> missing_type;
};

absl::StatusOr<Extack> DecodeExtack(ByteSpan tlvs) {
  Extack e;
  std::vector<Attribute> attrs;
  BAGD_NL_ASSIGN(attrs, ParseAttributes(tlvs, "extended ack"));
  for (const Attribute& a : attrs) {
    switch (a.type) {
      case NLMSGERR_ATTR_MSG:
        e.message = AttrString(a);
        break;
      case NLMSGERR_ATTR_OFFS:
        BAGD_NL_ASSIGN(e.offset, AttrU32(a, "NLMSGERR_ATTR_OFFS"));
        break;
      case NLMSGERR_ATTR_MISS_TYPE:
        BAGD_NL_ASSIGN(e.missing_type, AttrU32(a, "NLMSGERR_ATTR_MISS_TYPE"));
        break;
      default:
        break;  // COOKIE, POLICY, MISS_NEST: not used
    }
  }
  return e;
}

absl::StatusOr<ErrorMsg> DecodeError(const Header& h, ByteSpan payload) {
  // struct nlmsgerr { int error; struct nlmsghdr msg; } then, unless NLM_F_CAPPED, the rest of
  // the request; then, with NLM_F_ACK_TLVS, the extended-ack attributes.
  if (payload.size() < 4 + kNlmsgHeaderSize) {
    return Malformed("NLMSG_ERROR", absl::StrCat("payload of ", payload.size(), " bytes is shorter than struct nlmsgerr (20)"));
  }
  ErrorMsg e;
  std::memcpy(&e.error, payload.data(), 4);
  e.request = ReadHeader(payload.subspan(4));
  size_t consumed = 4 + kNlmsgHeaderSize;
  // An ack never echoes the request body (kernels before 4.12 did not flag that as CAPPED).
  const bool capped = (h.flags & NLM_F_CAPPED) || e.error == 0;
  if (!capped) {
    if (e.request.length < kNlmsgHeaderSize) {
      return Malformed("NLMSG_ERROR", absl::StrCat("echoed request claims nlmsg_len ", e.request.length));
    }
    if (payload.size() - 4 < e.request.length) {
      return Malformed("NLMSG_ERROR", absl::StrCat("echoed request claims ", e.request.length, " bytes but only ",
                                                   payload.size() - 4, " are present (truncated)"));
    }
    consumed = 4 + e.request.length;
  }
  if (h.flags & NLM_F_ACK_TLVS) {
    const size_t start = Align4(consumed);
    if (start < payload.size()) {
      Extack x;
      BAGD_NL_ASSIGN(x, DecodeExtack(payload.subspan(start)));
      e.extack_message = std::move(x.message);
      e.extack_offset = x.offset;
      e.extack_missing_type = x.missing_type;
    }
  }
  return e;
}

absl::StatusOr<DoneMsg> DecodeDone(const Header& h, ByteSpan payload) {
  DoneMsg d;
  // The kernel always sends the dump's int error; tolerate its absence (old kernels).
  if (payload.size() >= 4) {
    std::memcpy(&d.error, payload.data(), 4);
  } else if (!payload.empty()) {
    return Malformed("NLMSG_DONE", absl::StrCat("payload of ", payload.size(), " bytes (want 0 or >= 4)"));
  }
  if ((h.flags & NLM_F_ACK_TLVS) && payload.size() > 4) {
    Extack x;
    BAGD_NL_ASSIGN(x, DecodeExtack(payload.subspan(4)));
    d.extack_message = std::move(x.message);
  }
  return d;
}

// Resilient-group timers: clock_t (USER_HZ) <-> whole seconds.
uint32_t TimerSeconds(uint32_t clock_t_units) { return clock_t_units / uapi::kUserHz; }

absl::Status DecodeResGroup(const Attribute& nest, NexthopGroup& g) {
  std::vector<Attribute> attrs;
  BAGD_NL_ASSIGN(attrs, ParseAttributes(nest.payload, "NHA_RES_GROUP"));
  for (const Attribute& a : attrs) {
    uint32_t v = 0;
    switch (a.type) {
      case NHA_RES_GROUP_BUCKETS:
        BAGD_NL_ASSIGN(g.buckets, AttrU16(a, "NHA_RES_GROUP_BUCKETS"));
        break;
      case NHA_RES_GROUP_IDLE_TIMER:
        BAGD_NL_ASSIGN(v, AttrU32(a, "NHA_RES_GROUP_IDLE_TIMER"));
        g.idle_timer_s = TimerSeconds(v);
        break;
      case NHA_RES_GROUP_UNBALANCED_TIMER:
        BAGD_NL_ASSIGN(v, AttrU32(a, "NHA_RES_GROUP_UNBALANCED_TIMER"));
        g.unbalanced_timer_s = TimerSeconds(v);
        break;
      default:
        break;  // PAD, UNBALANCED_TIME (u64, dumps only)
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<NexthopMsg> DecodeNexthop(const Header& h, ByteSpan payload) {
  const char* what = h.type == RTM_DELNEXTHOP ? "RTM_DELNEXTHOP" : "RTM_NEWNEXTHOP";
  struct nhmsg nhm;
  BAGD_NL_ASSIGN(nhm, ReadFixed<struct nhmsg>(payload, what));
  std::vector<Attribute> attrs;
  BAGD_NL_ASSIGN(attrs, AttributesAfter(payload, sizeof(struct nhmsg), what));

  net::Afi afi = net::Afi::kIpv4;
  if (nhm.nh_family == AF_INET6) {
    afi = net::Afi::kIpv6;
  } else if (nhm.nh_family != AF_INET && nhm.nh_family != AF_UNSPEC) {
    return Malformed(what, absl::StrCat("unsupported nh_family ", static_cast<int>(nhm.nh_family)));
  }

  uint32_t id = 0, oif = 0, op_flags = 0;
  uint16_t group_type = NEXTHOP_GRP_TYPE_MPATH;
  bool blackhole = false;
  std::optional<ByteSpan> group;
  std::optional<net::IpAddress> gateway;
  const Attribute* res_group = nullptr;
  for (const Attribute& a : attrs) {
    switch (a.type) {
      case NHA_ID:
        BAGD_NL_ASSIGN(id, AttrU32(a, "NHA_ID"));
        break;
      case NHA_GROUP:
        if (a.payload.size() % sizeof(uapi::NexthopGrp) != 0) {
          return Malformed(what, absl::StrCat("NHA_GROUP of ", a.payload.size(),
                                              " bytes is not a whole number of 8-byte struct nexthop_grp"));
        }
        group = a.payload;
        break;
      case NHA_GROUP_TYPE:
        BAGD_NL_ASSIGN(group_type, AttrU16(a, "NHA_GROUP_TYPE"));
        if (group_type != NEXTHOP_GRP_TYPE_MPATH && group_type != NEXTHOP_GRP_TYPE_RES) {
          return Malformed(what, absl::StrCat("unknown NHA_GROUP_TYPE ", group_type));
        }
        break;
      case NHA_BLACKHOLE:
        blackhole = true;
        break;
      case NHA_OIF:
        BAGD_NL_ASSIGN(oif, AttrU32(a, "NHA_OIF"));
        break;
      case NHA_GATEWAY: {
        if (nhm.nh_family == AF_UNSPEC) return Malformed(what, "NHA_GATEWAY without an address family");
        net::IpAddress gw;
        BAGD_NL_ASSIGN(gw, AddressOf(a, afi, "NHA_GATEWAY"));
        gateway = gw;
        break;
      }
      case NHA_RES_GROUP:
        res_group = &a;
        break;
      case uapi::kNhaOpFlags:
        BAGD_NL_ASSIGN(op_flags, AttrU32(a, "NHA_OP_FLAGS"));
        break;
      default:
        break;  // ENCAP, FDB, stats: not used by bagd
    }
  }

  NexthopMsg m;
  m.deleted = h.type == RTM_DELNEXTHOP;
  m.wide_weights = (op_flags & uapi::kNhaOpFlagRespGrpResvd0) != 0;
  if (group) {
    NexthopGroup g;
    g.id = id;
    g.protocol = nhm.nh_protocol;
    g.type = group_type == NEXTHOP_GRP_TYPE_RES ? NexthopGroup::Type::kResilient : NexthopGroup::Type::kHashThreshold;
    const size_t n = group->size() / sizeof(uapi::NexthopGrp);
    g.members.reserve(n);
    for (size_t i = 0; i < n; ++i) {
      uapi::NexthopGrp e;
      std::memcpy(&e, group->data() + i * sizeof e, sizeof e);
      // Before 6.12 weight_high was resvd1 and dumps did not promise to zero it: trust it only
      // when the kernel says so.
      const uint32_t high = m.wide_weights ? e.weight_high : 0;
      g.members.push_back({e.id, ((high << 8) | e.weight) + 1});
    }
    if (res_group) {
      if (auto s = DecodeResGroup(*res_group, g); !s.ok()) return Malformed(what, std::string(s.message()));
    }
    m.object = std::move(g);
  } else {
    Nexthop nh;
    nh.id = id;
    nh.family = afi;
    nh.gateway = gateway;
    nh.ifindex = oif;
    nh.protocol = nhm.nh_protocol;
    nh.onlink = (nhm.nh_flags & RTNH_F_ONLINK) != 0;
    nh.blackhole = blackhole;
    nh.flags = nhm.nh_flags & ~static_cast<uint32_t>(RTNH_F_ONLINK);
    m.object = nh;
  }
  return m;
}

absl::StatusOr<std::variant<RouteMsg, OtherMsg>> DecodeRoute(const Header& h, ByteSpan payload) {
  const char* what = h.type == RTM_DELROUTE ? "RTM_DELROUTE" : "RTM_NEWROUTE";
  struct rtmsg rtm;
  BAGD_NL_ASSIGN(rtm, ReadFixed<struct rtmsg>(payload, what));
  if (rtm.rtm_family != AF_INET && rtm.rtm_family != AF_INET6) return OtherMsg{};  // MPLS, multicast, ...
  const net::Afi afi = rtm.rtm_family == AF_INET ? net::Afi::kIpv4 : net::Afi::kIpv6;
  const unsigned max_len = afi == net::Afi::kIpv4 ? 32 : 128;
  if (rtm.rtm_dst_len > max_len) {
    return Malformed(what, absl::StrCat("rtm_dst_len ", static_cast<int>(rtm.rtm_dst_len), " exceeds ", max_len, " for ", AfiName(afi)));
  }
  std::vector<Attribute> attrs;
  BAGD_NL_ASSIGN(attrs, AttributesAfter(payload, sizeof(struct rtmsg), what));

  RouteMsg m;
  m.deleted = h.type == RTM_DELROUTE;
  m.route.table = rtm.rtm_table;
  m.route.protocol = rtm.rtm_protocol;
  m.route.type = rtm.rtm_type;
  m.scope = rtm.rtm_scope;
  m.flags = rtm.rtm_flags;
  std::optional<net::IpAddress> dst;
  for (const Attribute& a : attrs) {
    switch (a.type) {
      case RTA_DST: {
        net::IpAddress d;
        BAGD_NL_ASSIGN(d, AddressOf(a, afi, "RTA_DST"));
        dst = d;
        break;
      }
      case RTA_TABLE:
        BAGD_NL_ASSIGN(m.route.table, AttrU32(a, "RTA_TABLE"));
        break;
      case RTA_PRIORITY:
        BAGD_NL_ASSIGN(m.route.priority, AttrU32(a, "RTA_PRIORITY"));
        break;
      case RTA_NH_ID:
        BAGD_NL_ASSIGN(m.route.nexthop_id, AttrU32(a, "RTA_NH_ID"));
        break;
      case RTA_OIF:
        BAGD_NL_ASSIGN(m.oif, AttrU32(a, "RTA_OIF"));
        break;
      case RTA_GATEWAY: {
        net::IpAddress gw;
        BAGD_NL_ASSIGN(gw, AddressOf(a, afi, "RTA_GATEWAY"));
        m.gateway = gw;
        break;
      }
      case RTA_VIA: {
        // struct rtvia { __kernel_sa_family_t rtvia_family; __u8 rtvia_addr[]; }: an IPv4 route
        // through an IPv6 gateway (RFC 8950) without a nexthop object.
        if (a.payload.size() < 2) return Malformed(what, "RTA_VIA shorter than its family field");
        uint16_t family;
        std::memcpy(&family, a.payload.data(), 2);
        if (family != AF_INET && family != AF_INET6) break;  // e.g. AF_PACKET for MPLS: not ours
        Attribute inner{a.type, false, a.payload.subspan(2)};
        net::IpAddress gw;
        BAGD_NL_ASSIGN(gw, AddressOf(inner, family == AF_INET ? net::Afi::kIpv4 : net::Afi::kIpv6, "RTA_VIA"));
        m.gateway = gw;
        break;
      }
      case RTA_MULTIPATH:
        m.multipath = true;
        break;
      default:
        break;
    }
  }
  if (rtm.rtm_dst_len > 0 && !dst) {
    return Malformed(what, absl::StrCat("a /", static_cast<int>(rtm.rtm_dst_len), " route without RTA_DST"));
  }
  uint8_t zero[16] = {};
  m.route.prefix = net::Prefix::Make(afi, dst ? dst->bytes() : zero, rtm.rtm_dst_len);
  return m;
}

absl::Status DecodeBondSlave(const Attribute& data, Link& link) {
  std::vector<Attribute> attrs;
  BAGD_NL_ASSIGN(attrs, ParseAttributes(data.payload, "IFLA_INFO_SLAVE_DATA"));
  for (const Attribute& a : attrs) {
    switch (a.type) {
      case IFLA_BOND_SLAVE_STATE:
        BAGD_NL_ASSIGN(link.bond_slave_state, AttrU8(a, "IFLA_BOND_SLAVE_STATE"));
        break;
      case IFLA_BOND_SLAVE_MII_STATUS:
        BAGD_NL_ASSIGN(link.bond_slave_mii_status, AttrU8(a, "IFLA_BOND_SLAVE_MII_STATUS"));
        break;
      default:
        break;
    }
  }
  return absl::OkStatus();
}

absl::Status DecodeLinkInfo(const Attribute& info, Link& link) {
  std::vector<Attribute> attrs;
  BAGD_NL_ASSIGN(attrs, ParseAttributes(info.payload, "IFLA_LINKINFO"));
  const Attribute* slave_data = nullptr;
  for (const Attribute& a : attrs) {
    switch (a.type) {
      case IFLA_INFO_KIND:
        link.kind = AttrString(a);
        break;
      case IFLA_INFO_SLAVE_KIND:
        link.slave_kind = AttrString(a);
        break;
      case IFLA_INFO_SLAVE_DATA:
        slave_data = &a;
        break;
      default:
        break;  // IFLA_INFO_DATA (kind-specific), XSTATS
    }
  }
  // Slave data is interpreted by the master's kind, which may be listed after it.
  if (slave_data && link.slave_kind == "bond") return DecodeBondSlave(*slave_data, link);
  return absl::OkStatus();
}

absl::StatusOr<std::variant<LinkMsg, OtherMsg>> DecodeLink(const Header& h, ByteSpan payload) {
  const char* what = h.type == RTM_DELLINK ? "RTM_DELLINK" : "RTM_NEWLINK";
  struct ifinfomsg ifi;
  BAGD_NL_ASSIGN(ifi, ReadFixed<struct ifinfomsg>(payload, what));
  if (ifi.ifi_family != AF_UNSPEC) return OtherMsg{};  // AF_BRIDGE port messages
  if (ifi.ifi_index <= 0) return Malformed(what, absl::StrCat("ifi_index ", ifi.ifi_index));
  std::vector<Attribute> attrs;
  BAGD_NL_ASSIGN(attrs, AttributesAfter(payload, sizeof(struct ifinfomsg), what));

  LinkMsg m;
  m.deleted = h.type == RTM_DELLINK;
  m.link.ifindex = static_cast<uint32_t>(ifi.ifi_index);
  m.link.flags = ifi.ifi_flags;
  for (const Attribute& a : attrs) {
    switch (a.type) {
      case IFLA_IFNAME:
        m.link.name = AttrString(a);
        break;
      case IFLA_MASTER:
        BAGD_NL_ASSIGN(m.link.master, AttrU32(a, "IFLA_MASTER"));
        break;
      case IFLA_OPERSTATE:
        BAGD_NL_ASSIGN(m.link.operstate, AttrU8(a, "IFLA_OPERSTATE"));
        break;
      case IFLA_LINKINFO:
        if (auto s = DecodeLinkInfo(a, m.link); !s.ok()) return Malformed(what, std::string(s.message()));
        break;
      default:
        break;
    }
  }
  return m;
}

template <typename... Ts, typename V>
absl::Status Assign(V& body, absl::StatusOr<std::variant<Ts...>> r) {
  if (!r.ok()) return r.status();
  std::visit([&](auto&& alt) { body = std::move(alt); }, *std::move(r));
  return absl::OkStatus();
}

template <typename T, typename V>
absl::Status Assign(V& body, absl::StatusOr<T> r) {
  if (!r.ok()) return r.status();
  body = *std::move(r);
  return absl::OkStatus();
}

absl::Status DecodeBody(const Header& h, ByteSpan payload, Message& m) {
  switch (h.type) {
    case NLMSG_ERROR:
      return Assign(m.body, DecodeError(h, payload));
    case NLMSG_DONE:
      return Assign(m.body, DecodeDone(h, payload));
    case RTM_NEWNEXTHOP:
    case RTM_DELNEXTHOP:
      return Assign(m.body, DecodeNexthop(h, payload));
    case RTM_NEWROUTE:
    case RTM_DELROUTE:
      return Assign(m.body, DecodeRoute(h, payload));
    case RTM_NEWLINK:
    case RTM_DELLINK:
      return Assign(m.body, DecodeLink(h, payload));
    default:
      m.body = OtherMsg{};
      return absl::OkStatus();
  }
}

}  // namespace

// ------------------------------------------------------------------------------------------
// Encoders

Nexthop Nexthop::Via(uint32_t id, const net::IpAddress& gateway, uint32_t ifindex, uint8_t protocol) {
  Nexthop nh;
  nh.id = id;
  nh.family = gateway.afi();
  nh.gateway = gateway;
  nh.ifindex = ifindex;
  nh.protocol = protocol;
  return nh;
}

absl::StatusOr<size_t> AppendNewNexthop(Bytes& batch, uint32_t seq, uint16_t flags, const Nexthop& nh) {
  const std::string what = absl::StrCat("nexthop ", nh.id);
  if (auto s = CheckNewFlags(flags, what.c_str()); !s.ok()) return s;
  if ((flags & kFlagReplace) && nh.id == 0) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": a replace needs an explicit id"));
  }
  if (nh.blackhole) {
    if (nh.gateway || nh.ifindex || nh.onlink) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": a blackhole nexthop takes no gateway, interface or onlink flag"));
    }
  } else {
    if (nh.ifindex == 0) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": needs an outgoing interface (ifindex) unless blackhole"));
    }
    if (nh.gateway && nh.gateway->afi() != nh.family) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": gateway ", nh.gateway->ToString(), " is not ",
                                                     AfiName(nh.family), " (set family from the gateway)"));
    }
    if (nh.onlink && !nh.gateway) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": onlink needs a gateway"));
    }
  }
  MessageWriter w(batch, RTM_NEWNEXTHOP, static_cast<uint16_t>(NLM_F_REQUEST | flags), seq);
  // nh_scope and resvd must be 0 in requests; RTNH_F_ONLINK is the only flag a user may set.
  w.Fixed(MakeNhmsg(AddressFamily(nh.family), nh.protocol, nh.onlink ? RTNH_F_ONLINK : 0));
  w.U32(NHA_ID, nh.id);
  if (nh.blackhole) {
    w.Flag(NHA_BLACKHOLE);
  } else {
    w.U32(NHA_OIF, nh.ifindex);
    if (nh.gateway) w.Address(NHA_GATEWAY, *nh.gateway);
  }
  return w.Finish();
}

absl::StatusOr<size_t> AppendNewGroup(Bytes& batch, uint32_t seq, uint16_t flags, const NexthopGroup& group,
                                      WeightWidth width) {
  const std::string what = absl::StrCat("nexthop group ", group.id);
  if (auto s = CheckNewFlags(flags, what.c_str()); !s.ok()) return s;
  if ((flags & kFlagReplace) && group.id == 0) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": a replace needs an explicit id"));
  }
  if (group.members.empty()) return absl::InvalidArgumentError(absl::StrCat(what, ": has no members"));
  if (group.members.size() > uapi::kMaxGroupMembers) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": ", group.members.size(),
                                                   " members do not fit NHA_GROUP (at most ", uapi::kMaxGroupMembers, ")"));
  }
  const uint32_t max_weight = width == WeightWidth::k16Bit ? uapi::kMaxWeight16 : uapi::kMaxWeight8;
  std::vector<uint32_t> ids;
  ids.reserve(group.members.size());
  for (const GroupMember& m : group.members) {
    if (m.nexthop_id == 0) return absl::InvalidArgumentError(absl::StrCat(what, ": member with nexthop id 0"));
    if (m.weight < 1 || m.weight > max_weight) {
      return absl::InvalidArgumentError(absl::StrCat(
          what, ": weight ", m.weight, " of nexthop ", m.nexthop_id, " is outside 1..", max_weight,
          width == WeightWidth::k8Bit ? " (8-bit weights: kernel before 6.12 or no NHA_OP_FLAGS capability)" : ""));
    }
    ids.push_back(m.nexthop_id);
  }
  std::sort(ids.begin(), ids.end());
  if (auto dup = std::adjacent_find(ids.begin(), ids.end()); dup != ids.end()) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": nexthop ", *dup, " is listed twice"));
  }
  const bool resilient = group.type == NexthopGroup::Type::kResilient;
  if (resilient) {
    if (group.buckets == 0) return absl::InvalidArgumentError(absl::StrCat(what, ": a resilient group needs buckets >= 1"));
    constexpr uint32_t kMaxTimer = UINT32_MAX / uapi::kUserHz;
    if (group.idle_timer_s > kMaxTimer || group.unbalanced_timer_s > kMaxTimer) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": resilient timers are limited to ", kMaxTimer, " s"));
    }
  }

  MessageWriter w(batch, RTM_NEWNEXTHOP, static_cast<uint16_t>(NLM_F_REQUEST | flags), seq);
  w.Fixed(MakeNhmsg(AF_UNSPEC, group.protocol, 0));  // a group must be AF_UNSPEC
  w.U32(NHA_ID, group.id);
  Bytes entries(group.members.size() * sizeof(uapi::NexthopGrp));
  for (size_t i = 0; i < group.members.size(); ++i) {
    const uint32_t encoded = group.members[i].weight - 1;
    uapi::NexthopGrp e{};
    e.id = group.members[i].nexthop_id;
    e.weight = static_cast<uint8_t>(encoded & 0xff);
    e.weight_high = static_cast<uint8_t>(encoded >> 8);  // 0 whenever width is k8Bit
    std::memcpy(entries.data() + i * sizeof e, &e, sizeof e);
  }
  w.Raw(NHA_GROUP, entries);
  w.U16(NHA_GROUP_TYPE, resilient ? NEXTHOP_GRP_TYPE_RES : NEXTHOP_GRP_TYPE_MPATH);
  if (resilient) {
    const size_t nest = w.BeginNested(NHA_RES_GROUP);
    w.U16(NHA_RES_GROUP_BUCKETS, group.buckets);
    w.U32(NHA_RES_GROUP_IDLE_TIMER, group.idle_timer_s * uapi::kUserHz);
    w.U32(NHA_RES_GROUP_UNBALANCED_TIMER, group.unbalanced_timer_s * uapi::kUserHz);
    w.EndNested(nest);
  }
  return w.Finish();
}

namespace {
// DEL and GET by id: the kernel requires nh_protocol, nh_scope, nh_flags and resvd to be 0.
absl::StatusOr<size_t> AppendNexthopById(Bytes& batch, uint16_t type, uint32_t seq, uint32_t id) {
  if (id == 0) return absl::InvalidArgumentError("nexthop id 0 names no nexthop");
  MessageWriter w(batch, type, NLM_F_REQUEST, seq);
  w.Fixed(MakeNhmsg(AF_UNSPEC, 0, 0));
  w.U32(NHA_ID, id);
  return w.Finish();
}
}  // namespace

absl::StatusOr<size_t> AppendDelNexthop(Bytes& batch, uint32_t seq, uint32_t id) {
  return AppendNexthopById(batch, RTM_DELNEXTHOP, seq, id);
}

absl::StatusOr<size_t> AppendGetNexthop(Bytes& batch, uint32_t seq, uint32_t id) {
  return AppendNexthopById(batch, RTM_GETNEXTHOP, seq, id);
}

absl::StatusOr<size_t> AppendNewRoute(Bytes& batch, uint32_t seq, uint16_t flags, const Route& route) {
  const std::string what = absl::StrCat("route ", route.prefix.ToString(), " table ", route.table);
  if (auto s = CheckNewFlags(flags, what.c_str()); !s.ok()) return s;
  if (auto s = CheckTable(route.table, what.c_str()); !s.ok()) return s;
  if (route.type == RTN_UNICAST && route.nexthop_id == 0) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": a unicast route needs a nexthop id"));
  }
  MessageWriter w(batch, RTM_NEWROUTE, static_cast<uint16_t>(NLM_F_REQUEST | flags), seq);
  w.Fixed(MakeRtmsg(route.prefix, route.table, route.protocol, RT_SCOPE_UNIVERSE, route.type));
  PutRouteKey(w, route.prefix, route.table);
  if (route.priority) w.U32(RTA_PRIORITY, route.priority);
  if (route.nexthop_id) w.U32(RTA_NH_ID, route.nexthop_id);
  return w.Finish();
}

absl::StatusOr<size_t> AppendDelRoute(Bytes& batch, uint32_t seq, const net::Prefix& prefix, uint32_t table,
                                      uint8_t protocol) {
  const std::string what = absl::StrCat("route ", prefix.ToString(), " table ", table);
  if (auto s = CheckTable(table, what.c_str()); !s.ok()) return s;
  MessageWriter w(batch, RTM_DELROUTE, NLM_F_REQUEST, seq);
  // RT_SCOPE_NOWHERE and RTN_UNSPEC match any scope and type (iproute2 does the same).
  w.Fixed(MakeRtmsg(prefix, table, protocol, RT_SCOPE_NOWHERE, RTN_UNSPEC));
  PutRouteKey(w, prefix, table);
  return w.Finish();
}

void AppendRouteLookup(Bytes& batch, uint32_t seq, const net::IpAddress& address) {
  MessageWriter w(batch, RTM_GETROUTE, NLM_F_REQUEST | NLM_F_ACK, seq);
  rtmsg rt{};
  rt.rtm_family = address.is_v4() ? AF_INET : AF_INET6;
  rt.rtm_dst_len = address.is_v4() ? 32 : 128;
  w.Fixed(rt);
  w.Address(RTA_DST, address);
  w.Finish();
}

size_t AppendGetNexthops(Bytes& batch, uint32_t seq) {
  MessageWriter w(batch, RTM_GETNEXTHOP, NLM_F_REQUEST | NLM_F_DUMP, seq);
  w.Fixed(MakeNhmsg(AF_UNSPEC, 0, 0));  // strict checking rejects a protocol here
  return w.Finish();
}

size_t AppendGetRoutes(Bytes& batch, uint32_t seq, net::Afi family, uint8_t protocol, uint32_t table) {
  MessageWriter w(batch, RTM_GETROUTE, NLM_F_REQUEST | NLM_F_DUMP, seq);
  // Strict dump requests (ip_valid_fib_dump_req) allow rtm_protocol, rtm_table/RTA_TABLE,
  // rtm_type and RTA_OIF as filters; dst_len, src_len, tos and scope must be 0.
  struct rtmsg m;
  std::memset(&m, 0, sizeof m);
  m.rtm_family = AddressFamily(family);
  m.rtm_protocol = protocol;
  w.Fixed(m);
  if (table) w.U32(RTA_TABLE, table);
  return w.Finish();
}

size_t AppendGetLinks(Bytes& batch, uint32_t seq) {
  MessageWriter w(batch, RTM_GETLINK, NLM_F_REQUEST | NLM_F_DUMP, seq);
  struct ifinfomsg ifi;
  std::memset(&ifi, 0, sizeof ifi);
  ifi.ifi_family = AF_UNSPEC;
  w.Fixed(ifi);
  w.U32(IFLA_EXT_MASK, RTEXT_FILTER_SKIP_STATS);
  return w.Finish();
}

void SetAck(Bytes& batch, size_t offset) {
  assert(offset + kNlmsgHeaderSize <= batch.size());
  uint16_t flags;
  std::memcpy(&flags, batch.data() + offset + 6, 2);
  flags |= NLM_F_ACK;
  std::memcpy(batch.data() + offset + 6, &flags, 2);
}

// ------------------------------------------------------------------------------------------
// Decoder

absl::StatusOr<std::vector<Message>> Parse(ByteSpan datagram) {
  std::vector<Message> out;
  size_t pos = 0;
  while (pos < datagram.size()) {
    const size_t left = datagram.size() - pos;
    if (left < kNlmsgHeaderSize) {
      return absl::InvalidArgumentError(absl::StrCat("netlink datagram: ", left, " bytes at offset ", pos,
                                                     " are too short for a message header (truncated)"));
    }
    Message m;
    m.header = ReadHeader(datagram.subspan(pos));
    const Header& h = m.header;
    const auto where = [&] {
      return absl::StrCat("netlink message ", out.size() + 1, " (", MessageTypeName(h.type), ", seq ", h.seq,
                          ", offset ", pos, ")");
    };
    if (h.length < kNlmsgHeaderSize) {
      return absl::InvalidArgumentError(absl::StrCat(where(), ": nlmsg_len ", h.length, " is below the header size"));
    }
    if (h.length > left) {
      return absl::InvalidArgumentError(
          absl::StrCat(where(), ": nlmsg_len ", h.length, " but only ", left, " bytes remain (truncated)"));
    }
    const ByteSpan payload = datagram.subspan(pos + kNlmsgHeaderSize, h.length - kNlmsgHeaderSize);
    if (auto s = DecodeBody(h, payload, m); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(where(), ": ", std::string(s.message())));
    }
    out.push_back(std::move(m));
    pos += std::min(Align4(h.length), left);
  }
  return out;
}

std::string MessageTypeName(uint16_t type) {
  switch (type) {
    case NLMSG_NOOP: return "NLMSG_NOOP";
    case NLMSG_ERROR: return "NLMSG_ERROR";
    case NLMSG_DONE: return "NLMSG_DONE";
    case NLMSG_OVERRUN: return "NLMSG_OVERRUN";
    case RTM_NEWLINK: return "RTM_NEWLINK";
    case RTM_DELLINK: return "RTM_DELLINK";
    case RTM_GETLINK: return "RTM_GETLINK";
    case RTM_NEWROUTE: return "RTM_NEWROUTE";
    case RTM_DELROUTE: return "RTM_DELROUTE";
    case RTM_GETROUTE: return "RTM_GETROUTE";
    case RTM_NEWNEXTHOP: return "RTM_NEWNEXTHOP";
    case RTM_DELNEXTHOP: return "RTM_DELNEXTHOP";
    case RTM_GETNEXTHOP: return "RTM_GETNEXTHOP";
    case RTM_NEWNEXTHOPBUCKET: return "RTM_NEWNEXTHOPBUCKET";
    case RTM_DELNEXTHOPBUCKET: return "RTM_DELNEXTHOPBUCKET";
    case RTM_GETNEXTHOPBUCKET: return "RTM_GETNEXTHOPBUCKET";
    default: return absl::StrCat("type ", type);
  }
}

}  // namespace bagd::fib::netlink
