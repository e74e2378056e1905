// What the codec needs to know about a session: what was negotiated in the OPEN
// exchange (design.md rule 1). The same struct drives decoding and encoding.
#pragma once

#include <array>

#include "net/ip_prefix.h"

namespace bagd::wire {

inline constexpr size_t kMaxMessageSize = 4096;           // RFC 4271
inline constexpr size_t kMaxExtendedMessageSize = 65535;  // RFC 8654
inline constexpr size_t kHeaderSize = 19;

struct CodecContext {
  bool four_octet_as = true;      // RFC 6793 capability negotiated by both sides
  bool extended_message = false;  // RFC 8654 negotiated by both sides
  // RFC 7911: path identifiers present in NLRI of this family (in the direction being coded).
  std::array<bool, net::kFamilyCount> add_path{};
  // eBGP session (RFC 7606: LOCAL_PREF/ORIGINATOR_ID/CLUSTER_LIST from eBGP are discarded,
  // AS_CONFED segments from eBGP are malformed).
  bool ebgp = true;
  // eBGP peer inside our confederation (RFC 5065): AS_CONFED segments are expected.
  bool confederation_peer = false;

  bool AddPath(net::Family f) const { return add_path[static_cast<int>(f)]; }
  size_t max_message_size() const { return extended_message ? kMaxExtendedMessageSize : kMaxMessageSize; }
  friend bool operator==(const CodecContext&, const CodecContext&) = default;
};

}  // namespace bagd::wire
