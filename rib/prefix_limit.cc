#include "rib/prefix_limit.h"

#include <algorithm>

namespace bagd::rib {

uint64_t PrefixLimitConfig::WarningAt() const {
  const uint64_t at = uint64_t{limit} * std::min<uint32_t>(warning_threshold_percent, 100) / 100;
  return std::max<uint64_t>(at, 1);
}

const char* PrefixLimitStateName(PrefixLimitState s) {
  switch (s) {
    case PrefixLimitState::kBelow: return "ok";
    case PrefixLimitState::kWarning: return "warning";
    case PrefixLimitState::kExceeded: return "exceeded";
  }
  return "?";
}

PrefixLimitEvent PrefixLimit::Check(uint64_t count) {
  if (!enabled()) return PrefixLimitEvent::kNone;
  // FRR and IOS: warn when the count reaches the threshold, act when it goes past the limit
  // (a peer may hold exactly `limit`).
  const PrefixLimitState now = count > config_.limit         ? PrefixLimitState::kExceeded
                               : count >= config_.WarningAt() ? PrefixLimitState::kWarning
                                                              : PrefixLimitState::kBelow;
  const PrefixLimitState before = state_;
  state_ = now;
  if (now == PrefixLimitState::kExceeded) {
    // warning_only: once per crossing. Otherwise on every check above the limit: the session
    // is taken down, and a caller that could not (no session) is asked again.
    if (config_.warning_only) {
      return before == PrefixLimitState::kExceeded ? PrefixLimitEvent::kNone : PrefixLimitEvent::kExceededWarn;
    }
    return PrefixLimitEvent::kExceededCease;
  }
  if (now == PrefixLimitState::kWarning && before == PrefixLimitState::kBelow) return PrefixLimitEvent::kWarning;
  return PrefixLimitEvent::kNone;
}

wire::NotificationMessage MaxPrefixesCease(net::Family family, uint32_t limit) {
  wire::NotificationMessage n;
  n.code = static_cast<uint8_t>(wire::ErrorCode::kCease);
  n.subcode = wire::cease::kMaxPrefixesReached;
  const auto afi = static_cast<uint16_t>(net::FamilyAfi(family));
  const auto safi = static_cast<uint8_t>(net::Safi::kUnicast);
  n.data = {static_cast<uint8_t>(afi >> 8),    static_cast<uint8_t>(afi),          safi,
            static_cast<uint8_t>(limit >> 24), static_cast<uint8_t>(limit >> 16), static_cast<uint8_t>(limit >> 8),
            static_cast<uint8_t>(limit)};
  return n;
}

}  // namespace bagd::rib
