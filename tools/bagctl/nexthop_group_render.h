// Text view of the control API's weighted next-hop groups for `bagctl show nexthop-groups`
// (JSON: RenderProtoJson in neighbor_render.h). Pure functions: the current time is an
// argument, so every view is a golden string in the tests. docs/bagctl-nexthop-groups.md.
#pragma once

#include <cstdint>
#include <string>

#include "bgpd/control/control.pb.h"

namespace bagd::bagctl {

using control::v1::ListNextHopGroupsResponse;
using control::v1::NextHopGroup;
using control::v1::NextHopGroupBudget;
using control::v1::NextHopGroupMember;
using control::v1::WeightCounters;
using control::v1::WeightSettings;

// Bits per second with an SI unit, as the configuration writes rates (conf/rate_text.h):
// 100e9 -> "100G", 2.5e9 -> "2.5G", 800e6 -> "800M", 1e12 -> "1T", 1500 -> "1.5K",
// 999 -> "999", 0 -> "0". At most 6 significant digits.
std::string FormatRate(double bps);
// A duration in seconds: "0s", "30s", "1.5s", "10m", "1m30s", "2h", "1h5s" (a fraction
// only in seconds: "90.5s").
std::string FormatSeconds(double seconds);
// Time left, rounded up to the second: "21s", "2m05s", "1h02m".
std::string FormatCountdown(int64_t ms);

// The ADVERTISED column: the rate, and where it came from unless it is the community:
// "100G", "0 (drained)", "10G (default)", "100G (equal-cost)".
std::string AdvertisedColumn(const NextHopGroupMember& member);
// The WEIGHT column: the installed weight, "20->40" while a pending change will move it.
std::string WeightColumn(const NextHopGroupMember& member);
// The STATE column: "stable", "increase at 12:00:21 (in 21s)", "decrease at ... (due)"
// (times UTC).
std::string DampingStateColumn(const NextHopGroupMember& member, int64_t now_unix_ms);
// The PENALTY column: "0.00", and "1.00 (hold 1m)" when an increase seen now would be held
// longer than the configured increase hold-down.
std::string PenaltyColumn(const NextHopGroupMember& member, const WeightSettings& settings);

// The settings and counters (two lines).
std::string RenderWeightSettings(const WeightSettings& settings, const WeightCounters& counters);
// One group: "group 7  ipv4-unicast  12 prefixes  max error 0.00%" and its member table.
std::string RenderNextHopGroup(const NextHopGroup& group, const WeightSettings& settings, int64_t now_unix_ms);
// The settings, then every group, a blank line before each.
std::string RenderNextHopGroups(const ListNextHopGroupsResponse& response, int64_t now_unix_ms);
// "Group budget: 510 of 512 groups installed (2 kept free for moves), 33923 wanted; ..."
std::string RenderGroupBudget(const NextHopGroupBudget& budget);
// The FIB sync's repairs and conflicts (docs/fib.md, "Repair and audit").
std::string RenderFibRepair(const control::v1::FibRepair& repair);

}  // namespace bagd::bagctl
