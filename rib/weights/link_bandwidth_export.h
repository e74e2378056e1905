// Which link bandwidth bagd advertises with a prefix, per neighbor (docs/link-bandwidth.md),
// and the damping of re-advertised values. Pure.
//
// The community is replaced, never appended (RFC 10005 §7.1): the caller removes every LB
// community of the path and adds the one chosen here, if any. A 4-octet local AS is sent as
// AS_TRANS (wire::LinkBandwidth::Make).
#pragma once

#include <optional>
#include <span>

#include "absl/container/flat_hash_map.h"
#include "absl/time/time.h"
#include "bgpd/wire/ip_prefix.h"
#include "bgpd/wire/link_bandwidth.h"

namespace bagd::rib {

enum class LinkBandwidthExportMode {
  kAuto,           // cumulative when we are the next hop and every multipath carries LB, else pass
  kNone,           // never send link bandwidth
  kPass,           // the best path's community as received, only when the next hop is unchanged
  kFixed,          // a configured rate
  kCumulative,     // the sum over the multipath set, only when every member carries LB
  kNumMultipaths,  // number of multipaths × a reference rate
};
const char* LinkBandwidthExportModeName(LinkBandwidthExportMode m);

struct LinkBandwidthExport {
  LinkBandwidthExportMode mode = LinkBandwidthExportMode::kAuto;
  double fixed_bps = 0;      // kFixed, bits per second
  double reference_bps = 0;  // kNumMultipaths, bits per second
  bool transitive = true;    // encoding of what we generate (pass keeps the received type)
  // Re-advertisement damping of generated values.
  double readvertise_threshold_percent = 5;
  absl::Duration readvertise_interval = absl::Seconds(5);
};

// `multipath`: the chosen LB of each path of the set, best first (nullopt: the path has none).
// `next_hop_unchanged`: the neighbor sees the same next hop as we do (iBGP without next-hop-self).
std::optional<wire::LinkBandwidth> ExportLinkBandwidth(const LinkBandwidthExport& config,
                                                       std::span<const std::optional<wire::LinkBandwidth>> multipath,
                                                       bool next_hop_unchanged, uint32_t local_as);

// Damping of one neighbor's re-advertised bandwidth (IOS-XR thresholds, Arista update-delay):
// a value that moved less than the threshold is not re-sent, and a prefix's bandwidth is
// re-sent at most once per interval (the first change after a quiet interval goes at once).
class BandwidthReadvertisement {
 public:
  enum class Verdict { kSend, kSuppress, kDefer };
  struct Decision {
    Verdict verdict = Verdict::kSend;
    absl::Time not_before = absl::InfinitePast();  // kDefer: when it may go
  };
  // The neighbor has `old_bps` for `prefix`; we would now send `new_bps` (bits per second).
  Decision Check(const wire::Prefix& prefix, double old_bps, double new_bps, absl::Time now,
                 const LinkBandwidthExport& config);
  // A changed bandwidth for `prefix` went out at `now`.
  void Sent(const wire::Prefix& prefix, absl::Time now) { last_sent_[prefix] = now; }
  void Clear() { last_sent_.clear(); }
  size_t tracked() const { return last_sent_.size(); }

 private:
  absl::flat_hash_map<wire::Prefix, absl::Time> last_sent_;
};

}  // namespace bagd::rib
