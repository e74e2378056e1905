// rtnetlink messages bagd sends and reads: nexthop objects and groups (16-bit weights,
// Linux 6.12+), routes that point at them (RTA_NH_ID), and links (for link loss and LAG
// member state). Pure: values in, bytes out; bytes in, values or absl::Status out.
// No sockets, no I/O. Byte order is the host's, as netlink's is.
//
// Reference: include/uapi/linux/{netlink,rtnetlink,nexthop,if_link}.h, net/ipv4/nexthop.c
// (request validation, nh_fill_node), net/netlink/af_netlink.c (netlink_ack). Values the
// Debian 12 headers lack are in kernel_abi.h; tests/fib/netlink_kernel_test.cc checks the
// bytes against the running kernel.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "net/ip_prefix.h"
#include "fib_sync/netlink/attributes.h"

namespace bagd::fib::netlink {

// nlmsg_flags a caller may pass to the New* encoders (values of <linux/netlink.h>, repeated
// so that users of this header need no kernel headers). NLM_F_REQUEST is always set.
inline constexpr uint16_t kFlagAck = 0x4;        // NLM_F_ACK
inline constexpr uint16_t kFlagEcho = 0x8;       // NLM_F_ECHO: the kernel sends the object back
inline constexpr uint16_t kFlagReplace = 0x100;  // NLM_F_REPLACE
inline constexpr uint16_t kFlagExcl = 0x200;     // NLM_F_EXCL
inline constexpr uint16_t kFlagCreate = 0x400;   // NLM_F_CREATE
inline constexpr uint16_t kFlagMulti = 0x2;      // NLM_F_MULTI (set by the kernel on dump parts)

inline constexpr uint8_t kProtocolBgp = 186;      // RTPROT_BGP (FRR's zebra uses it too)
inline constexpr uint8_t kRouteTypeUnicast = 1;   // RTN_UNICAST
inline constexpr uint8_t kRouteTypeBlackhole = 6; // RTN_BLACKHOLE
inline constexpr uint32_t kTableMain = 254;       // RT_TABLE_MAIN

// A single nexthop object (RTM_NEWNEXTHOP without NHA_GROUP).
struct Nexthop {
  uint32_t id = 0;  // 0 asks the kernel to pick one (see kFlagEcho)
  // The object's family (nh_family). It must match the gateway's: an IPv4 route may use an
  // IPv6 nexthop object (RFC 8950), never an IPv4 object with an IPv6 gateway.
  // A blackhole or device-only nexthop has no gateway, so the family is needed on its own.
  net::Afi family = net::Afi::kIpv4;
  std::optional<net::IpAddress> gateway;
  uint32_t ifindex = 0;  // NHA_OIF; required unless blackhole
  uint8_t protocol = 0;  // nh_protocol; fixed when the object is created (a replace keeps it)
  bool onlink = false;   // RTNH_F_ONLINK: gateway is on the link even without a covering route
  bool blackhole = false;
  // Decoded only: the kernel's RTNH_F_* state flags (RTNH_F_DEAD, RTNH_F_LINKDOWN, RTNH_F_OFFLOAD,
  // RTNH_F_TRAP, ...) with RTNH_F_ONLINK removed (that one is `onlink`). Ignored by the encoder.
  uint32_t flags = 0;

  // A nexthop through `gateway` on `ifindex`, with the family taken from the gateway.
  static Nexthop Via(uint32_t id, const net::IpAddress& gateway, uint32_t ifindex, uint8_t protocol);

  friend bool operator==(const Nexthop&, const Nexthop&) = default;
};

struct GroupMember {
  uint32_t nexthop_id = 0;
  uint32_t weight = 1;  // 1..65535 (1..255 for kernels before 6.12)
  friend bool operator==(const GroupMember&, const GroupMember&) = default;
};

// A nexthop group object (RTM_NEWNEXTHOP with NHA_GROUP). Replacing an existing id with
// kFlagReplace swaps the members atomically; routes that use the group stay untouched.
struct NexthopGroup {
  enum class Type : uint8_t { kHashThreshold, kResilient };

  uint32_t id = 0;
  std::vector<GroupMember> members;
  Type type = Type::kHashThreshold;
  uint8_t protocol = 0;
  // Resilient groups only (ignored and left at these defaults for hash-threshold groups).
  // The kernel counts the timers in clock_t (USER_HZ = 100 per second, see kernel_abi.h);
  // these are whole seconds, converted on the way in and out. A dumped timer that another
  // tool set to a fraction of a second is rounded down.
  uint16_t buckets = 0;             // NHA_RES_GROUP_BUCKETS: 1..65535, mandatory on creation
  uint32_t idle_timer_s = 120;      // kernel default 120 s
  uint32_t unbalanced_timer_s = 0;  // kernel default 0 (never force a rebalance)

  friend bool operator==(const NexthopGroup&, const NexthopGroup&) = default;
};

// How wide a group member's weight may be: 8 bits (weight byte only, kernels before 6.12)
// or 16 bits (weight + weight_high, 6.12+; detect with NexthopMsg::wide_weights).
enum class WeightWidth : uint8_t { k8Bit, k16Bit };

// An IPv4 or IPv6 route pointing at a nexthop object (RTA_NH_ID works for both families).
struct Route {
  net::Prefix prefix;
  uint32_t table = kTableMain;  // ids above 255 travel in RTA_TABLE
  uint8_t protocol = 0;         // rtm_protocol
  uint32_t nexthop_id = 0;      // RTA_NH_ID; 0 = none (only for non-unicast types)
  // RTA_PRIORITY (metric). 0 omits the attribute: IPv4 keeps 0, IPv6 installs (and dumps) 1024.
  uint32_t priority = 0;
  uint8_t type = kRouteTypeUnicast;  // rtm_type (RTN_*)
  friend bool operator==(const Route&, const Route&) = default;
};

// An interface as RTM_NEWLINK reports it (AF_UNSPEC link messages only).
struct Link {
  uint32_t ifindex = 0;
  std::string name;          // IFLA_IFNAME
  uint32_t flags = 0;        // ifi_flags: IFF_UP, IFF_RUNNING, IFF_LOWER_UP (carrier), ...
  uint8_t operstate = 0;     // IFLA_OPERSTATE: RFC 2863 IF_OPER_* (6 = up, 2 = down, 5 = dormant)
  uint32_t master = 0;       // IFLA_MASTER: bond/bridge/VRF ifindex; 0 = none
  std::string kind;          // IFLA_LINKINFO / IFLA_INFO_KIND: "veth", "bond", "bridge"
  std::string slave_kind;    // IFLA_INFO_SLAVE_KIND: "bond" for a bond member
  // IFLA_INFO_SLAVE_DATA of a bond member (slave_kind "bond"):
  std::optional<uint8_t> bond_slave_state;       // IFLA_BOND_SLAVE_STATE: 0 active, 1 backup
  std::optional<uint8_t> bond_slave_mii_status;  // IFLA_BOND_SLAVE_MII_STATUS: 0 up, 1 fail, 2 down, 3 back
  friend bool operator==(const Link&, const Link&) = default;
};

// ---------------------------------------------------------------------------------------
// Encoders. Each appends one complete, 4-byte-aligned request to `batch` (which may already
// hold earlier requests: the kernel processes a concatenated batch in order) and returns the
// offset of the new message, for SetAck. On error `batch` is unchanged.
// `flags` may combine kFlagCreate, kFlagReplace, kFlagExcl, kFlagAck and kFlagEcho.

absl::StatusOr<size_t> AppendNewNexthop(Bytes& batch, uint32_t seq, uint16_t flags, const Nexthop& nh);
// Weights outside 1..max for `width` are an InvalidArgument error, never truncated.
absl::StatusOr<size_t> AppendNewGroup(Bytes& batch, uint32_t seq, uint16_t flags, const NexthopGroup& group,
                                      WeightWidth width);
// Deletes a nexthop or a group. The kernel removes a deleted nexthop from every group, and
// deleting a group deletes the routes that use it.
absl::StatusOr<size_t> AppendDelNexthop(Bytes& batch, uint32_t seq, uint32_t id);
absl::StatusOr<size_t> AppendNewRoute(Bytes& batch, uint32_t seq, uint16_t flags, const Route& route);
// Deletes `prefix` from `table`; protocol 0 matches any protocol.
absl::StatusOr<size_t> AppendDelRoute(Bytes& batch, uint32_t seq, const net::Prefix& prefix, uint32_t table,
                                      uint8_t protocol);

// Dump of every nexthop and group. The kernel has no protocol filter for nexthops: filter on
// Nexthop::protocol / NexthopGroup::protocol.
size_t AppendGetNexthops(Bytes& batch, uint32_t seq);
// One nexthop or group by id (works for groups too large to dump). The kernel answers with
// the object alone (or an NLMSG_ERROR); SetAck on the request adds an ack as an end marker.
absl::StatusOr<size_t> AppendGetNexthop(Bytes& batch, uint32_t seq, uint32_t id);
// Dump of one family's routes, filtered in the kernel by protocol (0 = any) and table
// (0 = all) when the socket has NETLINK_GET_STRICT_CHK; without it the kernel ignores the
// filter and the caller must filter.
size_t AppendGetRoutes(Bytes& batch, uint32_t seq, net::Afi family, uint8_t protocol, uint32_t table);
// The kernel's route lookup for one address (RTM_GETROUTE, with an ack): its answer is the
// route that reaches it, with the outgoing interface (oif) and gateway.
void AppendRouteLookup(Bytes& batch, uint32_t seq, const net::IpAddress& address);
// Dump of every link, without statistics (IFLA_EXT_MASK = RTEXT_FILTER_SKIP_STATS).
size_t AppendGetLinks(Bytes& batch, uint32_t seq);

// Sets NLM_F_ACK on the message at `offset` (as returned by an Append*). A batch usually
// asks for an ack only on its last message: errors are reported without it.
void SetAck(Bytes& batch, size_t offset);

// ---------------------------------------------------------------------------------------
// Decoder.

// NLMSG_ERROR: an ack (error == 0) or a failed request, with the kernel's extended ack.
struct ErrorMsg {
  int error = 0;              // 0 = ack, else a negative errno (-EINVAL, -ENOENT, ...)
  Header request;             // header of the request this answers (seq, type)
  std::string extack_message; // NLMSGERR_ATTR_MSG, e.g. "Invalid value for weight"
  std::optional<uint32_t> extack_offset;        // NLMSGERR_ATTR_OFFS: bad attribute's offset in the request
  std::optional<uint32_t> extack_missing_type;  // NLMSGERR_ATTR_MISS_TYPE
  friend bool operator==(const ErrorMsg&, const ErrorMsg&) = default;
};

// NLMSG_DONE: end of a dump. A non-zero error means the dump failed part-way.
struct DoneMsg {
  int error = 0;
  std::string extack_message;
  friend bool operator==(const DoneMsg&, const DoneMsg&) = default;
};

// RTM_NEWNEXTHOP / RTM_DELNEXTHOP (a reply, a dump part, a notification, or a request).
struct NexthopMsg {
  bool deleted = false;  // RTM_DELNEXTHOP
  // A message with NHA_GROUP is a group; any other is a nexthop. (A bare delete request
  // carries only NHA_ID and decodes as a Nexthop with only `id` meaningful.)
  std::variant<Nexthop, NexthopGroup> object;
  // NHA_OP_FLAGS carried NHA_OP_FLAG_RESP_GRP_RESVD_0 (bit 31): the kernel zeroes the reserved
  // bytes, so weight_high was decoded. Only 6.12+ kernels set it, and only on groups: a group
  // reply without it means 8-bit weights (use WeightWidth::k8Bit).
  bool wide_weights = false;
  friend bool operator==(const NexthopMsg&, const NexthopMsg&) = default;
};

// RTM_NEWROUTE / RTM_DELROUTE for AF_INET and AF_INET6.
struct RouteMsg {
  bool deleted = false;
  Route route;
  // Routes not using a nexthop object (connected, static, other daemons): RTA_GATEWAY or
  // RTA_VIA, and RTA_OIF. With nexthop_compat_mode=1 the kernel also expands RTA_NH_ID routes
  // into these attributes or into RTA_MULTIPATH.
  std::optional<net::IpAddress> gateway;
  uint32_t oif = 0;
  bool multipath = false;  // RTA_MULTIPATH present (not decoded further)
  uint8_t scope = 0;       // rtm_scope
  uint32_t flags = 0;      // rtm_flags (RTM_F_OFFLOAD, RTM_F_TRAP, RTM_F_OFFLOAD_FAILED, ...)
  friend bool operator==(const RouteMsg&, const RouteMsg&) = default;
};

// RTM_NEWLINK / RTM_DELLINK with ifi_family AF_UNSPEC. (Bridge-port messages, family
// AF_BRIDGE, are OtherMsg: their RTM_DELLINK means "left the bridge", not "link gone".)
struct LinkMsg {
  bool deleted = false;
  Link link;
  friend bool operator==(const LinkMsg&, const LinkMsg&) = default;
};

// Anything else (NLMSG_NOOP, NLMSG_OVERRUN, requests, bucket messages, other families):
// see Message::header.type.
struct OtherMsg {
  friend bool operator==(const OtherMsg&, const OtherMsg&) = default;
};

struct Message {
  Header header;
  std::variant<ErrorMsg, DoneMsg, NexthopMsg, RouteMsg, LinkMsg, OtherMsg> body;
  friend bool operator==(const Message&, const Message&) = default;
};

// Decodes every message of one datagram (as returned by one recv on a netlink socket).
// Truncated or malformed input is an InvalidArgument error naming the message and the field;
// nothing is read outside `datagram`.
absl::StatusOr<std::vector<Message>> Parse(ByteSpan datagram);

// "RTM_NEWNEXTHOP", "NLMSG_ERROR", ... or the number, for error messages and logs.
std::string MessageTypeName(uint16_t type);

}  // namespace bagd::fib::netlink
