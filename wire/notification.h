// NOTIFICATION codes and subcodes: RFC 4271 §4.5/§6, RFC 4486 (Cease subcodes),
// RFC 5492 (Unsupported Capability), RFC 6608 (FSM errors), RFC 7313 (ROUTE-REFRESH),
// RFC 8538 (Hard Reset), RFC 9234 (Role Mismatch), RFC 9003 (shutdown communication).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "wire/byte_io.h"

namespace bagd::wire {

enum class ErrorCode : uint8_t {
  kMessageHeader = 1,
  kOpenMessage = 2,
  kUpdateMessage = 3,
  kHoldTimerExpired = 4,
  kFsm = 5,
  kCease = 6,
  kRouteRefresh = 7,
};

namespace header_error {
inline constexpr uint8_t kConnectionNotSynchronized = 1;
inline constexpr uint8_t kBadMessageLength = 2;
inline constexpr uint8_t kBadMessageType = 3;
}  // namespace header_error

namespace open_error {
inline constexpr uint8_t kUnsupportedVersion = 1;
inline constexpr uint8_t kBadPeerAs = 2;
inline constexpr uint8_t kBadBgpIdentifier = 3;
inline constexpr uint8_t kUnsupportedOptionalParameter = 4;
inline constexpr uint8_t kUnacceptableHoldTime = 6;
inline constexpr uint8_t kUnsupportedCapability = 7;
inline constexpr uint8_t kRoleMismatch = 11;
}  // namespace open_error

namespace update_error {
inline constexpr uint8_t kMalformedAttributeList = 1;
inline constexpr uint8_t kUnrecognizedWellKnownAttribute = 2;
inline constexpr uint8_t kMissingWellKnownAttribute = 3;
inline constexpr uint8_t kAttributeFlagsError = 4;
inline constexpr uint8_t kAttributeLengthError = 5;
inline constexpr uint8_t kInvalidOrigin = 6;
inline constexpr uint8_t kInvalidNextHop = 8;
inline constexpr uint8_t kOptionalAttributeError = 9;
inline constexpr uint8_t kInvalidNetworkField = 10;
inline constexpr uint8_t kMalformedAsPath = 11;
}  // namespace update_error

namespace fsm_error {
inline constexpr uint8_t kUnexpectedInOpenSent = 1;
inline constexpr uint8_t kUnexpectedInOpenConfirm = 2;
inline constexpr uint8_t kUnexpectedInEstablished = 3;
}  // namespace fsm_error

namespace cease {
inline constexpr uint8_t kMaxPrefixesReached = 1;
inline constexpr uint8_t kAdministrativeShutdown = 2;
inline constexpr uint8_t kPeerDeconfigured = 3;
inline constexpr uint8_t kAdministrativeReset = 4;
inline constexpr uint8_t kConnectionRejected = 5;
inline constexpr uint8_t kOtherConfigurationChange = 6;
inline constexpr uint8_t kConnectionCollisionResolution = 7;
inline constexpr uint8_t kOutOfResources = 8;
inline constexpr uint8_t kHardReset = 9;
inline constexpr uint8_t kBfdDown = 10;  // RFC 9384
}  // namespace cease

namespace route_refresh_error {
inline constexpr uint8_t kInvalidMessageLength = 1;
}  // namespace route_refresh_error

struct NotificationMessage {
  uint8_t code = 0;
  uint8_t subcode = 0;
  Bytes data;

  // RFC 9003: Cease/Administrative Shutdown or Reset may carry a UTF-8 message of up to 255 octets.
  static NotificationMessage Shutdown(uint8_t cease_subcode, std::string_view message);
  // The RFC 9003 message, if this is an admin shutdown/reset carrying a well-formed one.
  std::optional<std::string> ShutdownCommunication() const;

  friend bool operator==(const NotificationMessage&, const NotificationMessage&) = default;
};

const char* ErrorCodeName(uint8_t code);
const char* ErrorSubcodeName(uint8_t code, uint8_t subcode);
// "UPDATE Message Error / Malformed AS_PATH (3/11)"
std::string DescribeNotification(uint8_t code, uint8_t subcode);

}  // namespace bagd::wire
