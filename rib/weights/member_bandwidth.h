// The bandwidth each member of a multipath set stands for (design.md rule 6, first half):
// from the link-bandwidth community of its path (RFC 10005, chosen per path by
// wire::SelectLinkBandwidth), or from the per-family policy when some paths carry none.
// Pure; the weights are computed from these values by Quantize (rib/weights/quantize.h).
#pragma once

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "net/ip_prefix.h"
#include "wire/link_bandwidth.h"

namespace bagd::rib {

// What a multipath set does when some of its paths carry no link bandwidth (FRR's
// `bgp bestpath bandwidth`).
enum class MissingBandwidth {
  kEqualCost,      // the whole set gets equal weights (FRR's default, RFC history)
  kSkip,           // only the paths with link bandwidth are used
  kDefaultWeight,  // paths without it count as `default_bps`
};

struct BandwidthPolicy {
  bool use_link_bandwidth = true;  // false: the community is ignored, plain ECMP
  MissingBandwidth missing = MissingBandwidth::kEqualCost;
  double default_bps = 0;  // kDefaultWeight: bits per second for a path without LB (> 0)
};

// Where a member's bandwidth came from, shown by `bagctl show nexthop-groups`.
enum class BandwidthSource : uint8_t {
  kCommunity,  // the path's link-bandwidth community
  kDefault,    // no community; the configured default bandwidth
  kEqualCost,  // equal weights: LB ignored, or some path lacks LB (kEqualCost), or all drained
  kDrained,    // the community says 0: the member carries no traffic
  kSkipped,    // no community under kSkip: the member carries no traffic
  kLocalLink,  // no community, but the next hop is reached over a local capacity source
               // (Neighbor.local_capacity_source): its capacity is the bandwidth
};
const char* BandwidthSourceName(BandwidthSource s);  // "community", "default", ...

// One path of a multipath set, as the weights stage sees it.
struct MemberInput {
  net::IpAddress next_hop;
  std::optional<wire::LinkBandwidth> link_bandwidth;  // the path's chosen, valid LB
  // The local capacity source (an index the weights stage assigns, LocalCapacitySources)
  // the path's neighbor is reached over, when it caps (LOCAL_CAPACITY_CAP); -1: none.
  int16_t local_source = -1;
};

struct MemberBandwidth {
  net::IpAddress next_hop;
  double bps = 0;  // the value weights are computed from; 0: carries no traffic
  BandwidthSource source = BandwidthSource::kCommunity;
  std::optional<wire::LinkBandwidth> link_bandwidth;  // as received, for display
  int16_t local_source = -1;  // the member's local capacity source, as MemberInput
};

struct ResolvedBandwidths {
  std::vector<MemberBandwidth> members;  // sorted by next hop, one per next hop
  bool all_drained = false;              // every member said 0: equal weights instead (logged)
};

// Paths with the same next hop are one member (their bandwidths add up: two sessions over
// one link are still one next hop in the FIB).
//
// Local capacity (docs/capacity.md, "Local capacity"): a member whose paths come over a
// local capacity source keeps its advertised bandwidth here (the group key); the weights
// are computed from min(advertised after hold-down, local capacity) by the registry, so a
// LAG losing a member re-weighs the group in place. A member without link bandwidth over
// such a source is not "missing": it is kLocalLink (bps 0 here), weighed at the local
// capacity. Equal-cost sets stay equal cost.
//
// Equal weights are expressed as equal bandwidths: the largest bandwidth any member
// advertises (1 bit/s if none does), so that a set moving between weighted and equal cost
// keeps its scale and the hold-down sees real capacity changes, not a unit change.
ResolvedBandwidths ResolveBandwidths(std::span<const MemberInput> members, const BandwidthPolicy& policy);

}  // namespace bagd::rib
