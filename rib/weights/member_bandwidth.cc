#include "rib/weights/member_bandwidth.h"

#include <algorithm>

namespace bagd::rib {

const char* BandwidthSourceName(BandwidthSource s) {
  switch (s) {
    case BandwidthSource::kCommunity: return "community";
    case BandwidthSource::kDefault: return "default";
    case BandwidthSource::kEqualCost: return "equal-cost";
    case BandwidthSource::kDrained: return "drained";
    case BandwidthSource::kSkipped: return "skipped";
    case BandwidthSource::kLocalLink: return "local-link";
  }
  return "?";
}

ResolvedBandwidths ResolveBandwidths(std::span<const MemberInput> inputs, const BandwidthPolicy& policy) {
  ResolvedBandwidths out;
  // One member per next hop; two paths over one next hop add their bandwidths, and the
  // member lacks LB if either path does.
  struct Merged {
    net::IpAddress next_hop;
    double bps = 0;
    bool missing = false;
    std::optional<wire::LinkBandwidth> lb;
    int16_t local_source = -1;
  };
  std::vector<Merged> merged;
  for (const MemberInput& in : inputs) {
    auto it = std::find_if(merged.begin(), merged.end(), [&](const Merged& m) { return m.next_hop == in.next_hop; });
    if (it == merged.end()) {
      merged.push_back(Merged{in.next_hop, 0, false, in.link_bandwidth, in.local_source});
      it = merged.end() - 1;
    }
    // Two neighbors over one next hop with different sources: the first one's (the best path's).
    if (it->local_source < 0) it->local_source = in.local_source;
    if (in.link_bandwidth) {
      it->bps += in.link_bandwidth->bits_per_second();
    } else {
      it->missing = true;
    }
  }
  std::sort(merged.begin(), merged.end(), [](const Merged& a, const Merged& b) { return a.next_hop < b.next_hop; });

  double largest = 0;
  size_t with_lb = 0;
  for (const Merged& m : merged) {
    if (m.missing && m.local_source >= 0) ++with_lb;  // weighed at its local capacity
    if (m.missing) continue;
    ++with_lb;
    largest = std::max(largest, m.bps);
  }
  if (policy.missing == MissingBandwidth::kDefaultWeight) largest = std::max(largest, policy.default_bps);
  const double equal = largest > 0 ? largest : 1.0;

  auto all_equal = [&](BandwidthSource source) {
    for (const Merged& m : merged) out.members.push_back(MemberBandwidth{m.next_hop, equal, source, m.lb, -1});
  };
  if (!policy.use_link_bandwidth || (with_lb < merged.size() && policy.missing == MissingBandwidth::kEqualCost) ||
      (with_lb == 0 && policy.missing == MissingBandwidth::kSkip)) {
    all_equal(BandwidthSource::kEqualCost);
    return out;
  }
  for (const Merged& m : merged) {
    MemberBandwidth mb{m.next_hop, m.bps, BandwidthSource::kCommunity, m.lb, m.local_source};
    if (m.missing && m.local_source >= 0) {
      mb.bps = 0;  // the registry weighs it at the local capacity
      mb.source = BandwidthSource::kLocalLink;
    } else if (m.missing) {
      if (policy.missing == MissingBandwidth::kSkip) {
        mb.bps = 0;
        mb.source = BandwidthSource::kSkipped;
      } else {
        mb.bps = policy.default_bps;
        mb.source = BandwidthSource::kDefault;
      }
    } else if (m.bps <= 0) {
      mb.bps = 0;
      mb.source = BandwidthSource::kDrained;
    }
    out.members.push_back(mb);
  }
  const bool any_traffic = std::any_of(out.members.begin(), out.members.end(), [](const MemberBandwidth& m) {
    return m.bps > 0 || m.source == BandwidthSource::kLocalLink;
  });
  if (!any_traffic) {
    // Every member drained: the prefix still has paths, so spread over all of them rather
    // than blackhole it (the caller logs this).
    out.members.clear();
    all_equal(BandwidthSource::kEqualCost);
    out.all_drained = true;
  }
  return out;
}

}  // namespace bagd::rib
