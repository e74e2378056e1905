// OPEN capabilities (RFC 5492) that bagd understands; anything else is kept raw.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "wire/byte_io.h"

namespace bagd::wire {

enum class CapabilityCode : uint8_t {
  kMultiprotocol = 1,         // RFC 4760
  kRouteRefresh = 2,          // RFC 2918
  kExtendedNextHop = 5,       // RFC 8950
  kExtendedMessage = 6,       // RFC 8654
  kRole = 9,                  // RFC 9234
  kGracefulRestart = 64,      // RFC 4724
  kFourOctetAs = 65,          // RFC 6793
  kAddPath = 69,              // RFC 7911
  kEnhancedRouteRefresh = 70, // RFC 7313
  kFqdn = 73,                 // draft-walton-bgp-hostname-capability (FRR sends it)
};

struct MultiprotocolCap {
  uint16_t afi = 0;
  uint8_t safi = 0;
  friend bool operator==(const MultiprotocolCap&, const MultiprotocolCap&) = default;
};
struct RouteRefreshCap {
  friend bool operator==(const RouteRefreshCap&, const RouteRefreshCap&) = default;
};
struct ExtendedNextHopCap {
  struct Entry {
    uint16_t nlri_afi = 0;
    uint16_t nlri_safi = 0;
    uint16_t nexthop_afi = 0;
    friend bool operator==(const Entry&, const Entry&) = default;
  };
  std::vector<Entry> entries;
  friend bool operator==(const ExtendedNextHopCap&, const ExtendedNextHopCap&) = default;
};
struct ExtendedMessageCap {
  friend bool operator==(const ExtendedMessageCap&, const ExtendedMessageCap&) = default;
};
struct RoleCap {
  uint8_t role = 0;  // 0 provider, 1 RS, 2 RS-client, 3 customer, 4 peer
  friend bool operator==(const RoleCap&, const RoleCap&) = default;
};
struct GracefulRestartCap {
  bool restart_state = false;  // R bit
  bool notification = false;   // N bit (RFC 8538)
  uint16_t restart_time = 0;   // seconds, 12 bits
  struct Entry {
    uint16_t afi = 0;
    uint8_t safi = 0;
    bool forwarding_preserved = false;
    friend bool operator==(const Entry&, const Entry&) = default;
  };
  std::vector<Entry> families;
  friend bool operator==(const GracefulRestartCap&, const GracefulRestartCap&) = default;
};
struct FourOctetAsCap {
  uint32_t asn = 0;
  friend bool operator==(const FourOctetAsCap&, const FourOctetAsCap&) = default;
};
struct AddPathCap {
  enum Direction : uint8_t { kReceive = 1, kSend = 2, kBoth = 3 };
  struct Entry {
    uint16_t afi = 0;
    uint8_t safi = 0;
    uint8_t direction = 0;
    friend bool operator==(const Entry&, const Entry&) = default;
  };
  std::vector<Entry> families;
  friend bool operator==(const AddPathCap&, const AddPathCap&) = default;
};
struct EnhancedRouteRefreshCap {
  friend bool operator==(const EnhancedRouteRefreshCap&, const EnhancedRouteRefreshCap&) = default;
};
struct FqdnCap {
  std::string hostname;
  std::string domain;
  friend bool operator==(const FqdnCap&, const FqdnCap&) = default;
};
struct UnknownCap {
  uint8_t code = 0;
  Bytes value;
  friend bool operator==(const UnknownCap&, const UnknownCap&) = default;
};

using Capability = std::variant<MultiprotocolCap, RouteRefreshCap, ExtendedNextHopCap, ExtendedMessageCap, RoleCap,
                                GracefulRestartCap, FourOctetAsCap, AddPathCap, EnhancedRouteRefreshCap, FqdnCap,
                                UnknownCap>;

uint8_t CapabilityCodeOf(const Capability& cap);
std::string CapabilityName(uint8_t code);

// Decodes one capability TLV value. A known capability whose value has the wrong
// shape is kept as UnknownCap with `malformed` set, so the OPEN still decodes and
// the FSM can decide (RFC 5492 leaves that to the receiver).
Capability DecodeCapability(uint8_t code, ByteSpan value, bool* malformed);
void EncodeCapabilityValue(const Capability& cap, Bytes& out);

}  // namespace bagd::wire
