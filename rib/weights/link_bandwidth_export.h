// Which link bandwidth bagd advertises with a prefix, per neighbor (docs/link-bandwidth.md),
// and the damping of re-advertised values. Pure.
//
// The community is replaced, never appended (RFC 10005 §7.1): the caller removes every LB
// community of the path and adds the one chosen here, if any. A 4-octet local AS is sent as
// AS_TRANS (wire::LinkBandwidth::Make).
#pragma once

#include <optional>
#include <span>

#include <vector>

#include "absl/time/time.h"
#include "bgpd/wire/ip_prefix.h"
#include "bgpd/wire/link_bandwidth.h"
#include "rib/prefix_map.h"

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
//
// It also holds the prefixes whose change waits for its interval (Defer/TakeDeferred), as a
// mark on the same entry: a deferred prefix always has one (kDefer comes only from an entry).
// While a neighbor's table comes in, every prefix of it can be tracked at once (a multipath
// set growing path by path changes the cumulative bandwidth every time), so the entries are
// 8 bytes in the ordered PrefixMap (~17 bytes each with the B-tree's keys and nodes, taken in
// table order), not a hash map and a hash set (~90 bytes a prefix, randomly ordered).
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
  void Sent(const wire::Prefix& prefix, absl::Time now);
  // `prefix`'s change waits for its interval (after Check said kDefer).
  void Defer(const wire::Prefix& prefix);
  bool has_deferred() const { return deferred_ > 0; }
  // The deferred prefixes, in table order, each once; they are no longer deferred.
  std::vector<wire::Prefix> TakeDeferred();
  void Clear();
  // Prefixes whose last re-sent change is remembered.
  size_t tracked() const { return tracked_; }

 private:
  // Bit 0: deferred; the rest: the time of the last re-sent change in nanoseconds since the
  // Unix epoch (63 bits: until 2116), or kNotSent.
  static constexpr int64_t kNotSent = INT64_MIN / 2;
  static uint64_t Pack(int64_t sent_ns, bool deferred) {
    return static_cast<uint64_t>(sent_ns) << 1 | (deferred ? 1u : 0u);
  }
  static int64_t SentNs(uint64_t v) { return static_cast<int64_t>(v) >> 1; }
  static bool IsDeferred(uint64_t v) { return v & 1; }

  PrefixMap<uint64_t> entries_;
  size_t tracked_ = 0;   // entries with a time
  size_t deferred_ = 0;  // entries marked deferred
};

}  // namespace bagd::rib
