// Maximum prefixes per neighbor and family (an import limit, as FRR's `maximum-prefix`,
// BIRD's channel `import limit` and OpenBGPD's `max-prefix`): what the session does when a
// peer holds more paths in one family than it is allowed. Pure: the caller passes the count
// after each UPDATE (rib::Rib::paths_of, O(1)) and acts on the returned event.
//
// The count is the number of paths held from the peer in that family: one per prefix, or
// one per ADD-PATH path id when ADD-PATH receive is negotiated (as FRR counts). Paths the
// RIB refused (AS loop, unusable next hop) and treat-as-withdraw UPDATEs (RFC 7606) hold
// nothing and count nothing.
#pragma once

#include <cstdint>

#include "net/ip_prefix.h"
#include "wire/notification.h"

namespace bagd::rib {

struct PrefixLimitConfig {
  uint32_t limit = 0;                     // at most this many; 0: no limit
  uint32_t warning_threshold_percent = 75;  // warn at this share of the limit (FRR, IOS default)
  bool warning_only = false;              // exceeding only warns, the session stays up
  uint32_t restart_interval_s = 0;        // after the Cease: down this long; 0 until enabled

  // The count at which the warning is given: limit × percent / 100 (rounded down, at least 1).
  uint64_t WarningAt() const;
  friend bool operator==(const PrefixLimitConfig&, const PrefixLimitConfig&) = default;
};

enum class PrefixLimitState : uint8_t {
  kBelow,     // under the warning threshold
  kWarning,   // at or above the threshold, not above the limit
  kExceeded,  // above the limit
};
const char* PrefixLimitStateName(PrefixLimitState s);  // "ok", "warning", "exceeded"

// What crossing the threshold or the limit asks the session to do. Each is returned once
// per crossing: going back below re-arms it.
enum class PrefixLimitEvent : uint8_t {
  kNone,
  kWarning,        // crossed the warning threshold: log and count it
  kExceededWarn,   // above the limit with warning_only: log and count it, keep the session
  kExceededCease,  // above the limit: Cease / Maximum Number of Prefixes Reached
};

// The limit of one (peer, family) and where the count stands against it.
class PrefixLimit {
 public:
  PrefixLimit() = default;
  explicit PrefixLimit(PrefixLimitConfig config) : config_(config) {}

  bool enabled() const { return config_.limit > 0; }
  const PrefixLimitConfig& config() const { return config_; }
  PrefixLimitState state() const { return state_; }

  // The count after an UPDATE (or a session loss, with 0). Cheap: two comparisons.
  PrefixLimitEvent Check(uint64_t count);
  // A new session starts from nothing.
  void Reset() { state_ = PrefixLimitState::kBelow; }

 private:
  PrefixLimitConfig config_;
  PrefixLimitState state_ = PrefixLimitState::kBelow;
};

// Cease / Maximum Number of Prefixes Reached (RFC 4486 §3, subcode 1) with the data RFC 4486
// §4 allows: AFI (2 octets), SAFI (1 octet) and the upper bound (4 octets).
wire::NotificationMessage MaxPrefixesCease(net::Family family, uint32_t limit);

}  // namespace bagd::rib
