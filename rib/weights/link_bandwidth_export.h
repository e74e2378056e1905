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
#include "net/ip_prefix.h"
#include "wire/link_bandwidth.h"
#include "rib/adj_rib_out.h"
#include "net/prefix_map.h"

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
// The per-prefix state is a word in the prefix's Adj-RIB-Out entry (rib/adj_rib_out.h): the
// time of the last re-sent change, and a mark when a change waits for its interval
// (Defer/TakeDeferred). A deferred prefix always has an entry (kDefer comes only from one).
class BandwidthReadvertisement {
 public:
  enum class Verdict { kSend, kSuppress, kDefer };
  struct Decision {
    Verdict verdict = Verdict::kSend;
    absl::Time not_before = absl::InfinitePast();  // kDefer: when it may go
  };
  // The neighbor has `old_bps` for the prefix whose state is `state`; we would now send
  // `new_bps` (bits per second). A time older than the interval is forgotten.
  Decision Check(uint32_t& state, double old_bps, double new_bps, absl::Time now,
                 const LinkBandwidthExport& config) const;
  // A changed bandwidth for the prefix of `e` (an entry of `out`) went out at `now`.
  void Sent(AdjRibOut& out, AdjRibOut::Entry& e, absl::Time now);
  // `prefix`'s change waits for its interval (after Check said kDefer); `state` is its word.
  void Defer(uint32_t& state, const net::Prefix& prefix);
  bool has_deferred() const { return deferred_ > 0; }
  // The deferred prefixes of `out`, in table order, each once; they are no longer deferred.
  // A few are looked up where they were listed; past kListedMax the table is walked for the
  // marks (a table coming in defers most of its prefixes: no list as long as the table).
  std::vector<net::Prefix> TakeDeferred(AdjRibOut& out);
  // The Adj-RIB-Out was cleared.
  void Clear();
  static constexpr size_t kListedMax = 4096;
  // Whether `state` remembers a re-sent change (tests, counters).
  static bool Tracked(uint32_t state) { return (state & kHasTime) != 0; }
  // The span of times the words hold at once, around the last rebase (tests).
  static constexpr int64_t kSpanMs = int64_t{1} << 30;  // 12.4 days

 private:
  // Bit 0: deferred; bit 1: a time follows; bits 2..31: the time of the last re-sent change
  // in milliseconds after epoch_ms_ (30 bits: 12.4 days). When a time to write falls outside
  // that span (every ~6 days of uptime, or the clock was stepped far), the words are moved to
  // a new epoch centred on it, in one walk of the table; a time then outside the span lies
  // days from now, far beyond any interval (at most an hour), and is forgotten.
  static constexpr uint32_t kDeferred = 1, kHasTime = 2;
  void Rebase(AdjRibOut& out, int64_t now_ms);

  int64_t epoch_ms_ = 0;
  bool has_epoch_ = false;
  size_t deferred_ = 0;  // marks set since the last TakeDeferred (an erased entry takes its mark)
  std::vector<net::Prefix> listed_;  // where they were set, while listed_all_
  bool listed_all_ = true;
};

}  // namespace bagd::rib
