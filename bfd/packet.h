// BFD control packets (RFC 5880 §4.1, §4.2) as values: a pure codec, bytes in, a value or an
// error out (design.md rule 1). No sockets, no clocks, no logging.
//
// Decode applies the reception checks of RFC 5880 §6.8.6 that need nothing but the packet
// (version, length, multiplier, multipoint, discriminators); each failure names a DropReason
// so the engine can count it. Authentication (the A bit) is not supported: such a packet is
// dropped (kAuthNotSupported), as §6.8.6 says for a session without authentication.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace bagd::bfd {

// RFC 5880 §4.1 "Sta": the session states, numbered as on the wire.
enum class State : uint8_t { kAdminDown = 0, kDown = 1, kInit = 2, kUp = 3 };
const char* StateName(State s);  // "AdminDown", "Down", "Init", "Up"

// RFC 5880 §4.1 "Diag" (the IANA "BFD Diagnostic Codes" registry), numbered as on the wire.
enum class Diag : uint8_t {
  kNone = 0,
  kControlDetectionTimeExpired = 1,
  kEchoFunctionFailed = 2,
  kNeighborSignaledSessionDown = 3,
  kForwardingPlaneReset = 4,
  kPathDown = 5,
  kConcatenatedPathDown = 6,
  kAdministrativelyDown = 7,
  kReverseConcatenatedPathDown = 8,
};
const char* DiagName(Diag d);  // e.g. "control detection time expired"; "diag N" for unknown codes

inline constexpr uint8_t kVersion = 1;
inline constexpr size_t kMinLength = 24;      // without authentication
inline constexpr size_t kMinAuthLength = 26;  // with the A bit (§6.8.6)

struct ControlPacket {
  Diag diag = Diag::kNone;  // any 5-bit value is carried as received
  State state = State::kDown;
  bool poll = false;
  bool final = false;
  bool control_plane_independent = false;
  bool auth_present = false;  // never set by us (not supported)
  bool demand = false;
  bool multipoint = false;
  uint8_t detect_mult = 0;
  uint32_t my_discriminator = 0;
  uint32_t your_discriminator = 0;
  uint32_t desired_min_tx_us = 0;
  uint32_t required_min_rx_us = 0;
  uint32_t required_min_echo_rx_us = 0;
  friend bool operator==(const ControlPacket&, const ControlPacket&) = default;
};

// Why a received packet was not used (metrics label values, see ReasonLabel).
enum class DropReason : uint8_t {
  kNone = 0,
  kShort,              // fewer than 24 octets, or fewer than the Length field says
  kBadVersion,         // Vers != 1
  kBadLength,          // Length < 24 (26 with A), or more than the UDP payload
  kZeroMultiplier,     // Detect Mult 0
  kMultipoint,         // M bit set
  kZeroMyDiscriminator,
  kYourDiscriminatorZero,  // Your Discriminator 0 while State is Init or Up
  kAuthNotSupported,   // A bit set: bagd does not do authentication
  // Checked by the engine, not the codec:
  kBadTtl,             // single hop: TTL / hop limit not 255 (RFC 5881 §5)
  kUnknownDiscriminator,  // Your Discriminator names no session
  kNoSession,          // Your Discriminator 0 and no session for the addresses
  kAdminDown,          // received while our session is AdminDown (§6.8.6)
  kCount
};
const char* ReasonLabel(DropReason r);  // "short", "bad_version", ...

// RFC 5880 §6.8.6's packet-only checks. `reason` (may be null) receives why on error.
absl::StatusOr<ControlPacket> Decode(std::span<const uint8_t> bytes, DropReason* reason = nullptr);

// The 24-octet packet (no authentication section).
std::vector<uint8_t> Encode(const ControlPacket& packet);

std::string ToString(const ControlPacket& packet);  // for logs and test failures

}  // namespace bagd::bfd
