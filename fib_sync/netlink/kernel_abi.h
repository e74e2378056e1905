// The rtnetlink ABI bagd speaks, as far as Debian 12's UAPI headers (linux-libc-dev 6.1)
// do not already declare it. Everything here is a fixed kernel ABI value; the
// static_asserts fail to compile if the installed headers ever disagree.
//
// Only the encoder/decoder (.cc files) and tests include this header: the value types in
// messages.h stay free of kernel headers.
#pragma once

#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/nexthop.h>
#include <linux/rtnetlink.h>

#include <cstdint>

namespace bagd::fib::netlink::uapi {

// struct nexthop_grp as of Linux 6.12 (merge e96f6fd30eec, "net-nexthop-increase-weight-to-u16").
// 6.1 names the second byte `resvd1`. The logical weight W is encoded as
// W - 1 == weight | weight_high << 8. Pre-6.12 kernels reject a non-zero resvd1/weight_high
// ("Reserved fields in nexthop_grp must be 0") and weight > 254.
struct NexthopGrp {
  uint32_t id;
  uint8_t weight;
  uint8_t weight_high;
  uint16_t resvd2;
};
static_assert(sizeof(NexthopGrp) == sizeof(struct nexthop_grp), "struct nexthop_grp layout changed");
static_assert(sizeof(NexthopGrp) == 8);

// NHA_OP_FLAGS (u32): request flags on GET/dump (stats) and, since 6.12, response flags on
// every group the kernel reports. It follows NHA_RES_BUCKET in the NHA_* enum.
static_assert(NHA_RES_BUCKET == 13, "NHA_* enum changed");
inline constexpr uint16_t kNhaOpFlags = 14;
// Response flag: "dump clears resvd fields", i.e. nexthop_grp.weight_high is meaningful.
// Its presence is the capability check for 16-bit weights.
inline constexpr uint32_t kNhaOpFlagRespGrpResvd0 = 1u << 31;

// Resilient-group timers (NHA_RES_GROUP_IDLE_TIMER / _UNBALANCED_TIMER) are "clock_t as u32":
// net/ipv4/nexthop.c converts them with clock_t_to_jiffies() on input and
// jiffies_to_clock_t() on output, and clock_t in the user ABI counts USER_HZ ticks, which is
// 100 on every architecture. So 1 s == 100 units; iproute2 multiplies its seconds by 100 and
// divides dumps by 100 the same way. The kernel's default idle timer is 120 s (12000 units).
inline constexpr uint32_t kUserHz = 100;

// Weight limits. The u16 encoded value 0xffff (logical 65536) is rejected by 6.12+ with
// "Invalid value for weight"; pre-6.12 kernels accept encoded 0..254 (logical 1..255).
inline constexpr uint32_t kMaxWeight16 = 65535;
inline constexpr uint32_t kMaxWeight8 = 255;

// NHA_GROUP's nla_len is a u16: 4 header bytes + 8 bytes per member.
inline constexpr uint32_t kMaxGroupMembers = (0xffff - 4) / sizeof(NexthopGrp);  // 8191

static_assert(RTA_NH_ID == 30 && RTA_TABLE == 15 && RTA_VIA == 18);
static_assert(RTM_NEWNEXTHOP == 104 && RTM_DELNEXTHOP == 105 && RTM_GETNEXTHOP == 106);
static_assert(IFLA_INFO_SLAVE_DATA == 5 && IFLA_BOND_SLAVE_MII_STATUS == 2);

}  // namespace bagd::fib::netlink::uapi
