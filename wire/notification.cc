#include "wire/notification.h"

#include <cstring>

#include "absl/strings/str_format.h"

namespace bagd::wire {

NotificationMessage NotificationMessage::Shutdown(uint8_t cease_subcode, std::string_view message) {
  NotificationMessage n{static_cast<uint8_t>(ErrorCode::kCease), cease_subcode, {}};
  if (!message.empty()) {
    // RFC 9003 §2: length octet then at most 255 octets of UTF-8. Truncate on a
    // character boundary so the peer never sees a broken UTF-8 sequence.
    size_t len = message.size() > 255 ? 255 : message.size();
    while (len > 0 && len < message.size() && (static_cast<uint8_t>(message[len]) & 0xc0) == 0x80) --len;
    n.data.resize(len + 1);
    n.data[0] = static_cast<uint8_t>(len);
    std::memcpy(n.data.data() + 1, message.data(), len);
  }
  return n;
}

std::optional<std::string> NotificationMessage::ShutdownCommunication() const {
  if (code != static_cast<uint8_t>(ErrorCode::kCease)) return std::nullopt;
  // RFC 8538 §3: a Hard Reset carries the Cease it stands for (code, subcode, data).
  if (subcode == cease::kHardReset && data.size() >= 2 && data[0] == code) {
    NotificationMessage inner;
    inner.code = data[0];
    inner.subcode = data[1];
    if (inner.subcode == cease::kHardReset) return std::nullopt;
    inner.data.assign(data.begin() + 2, data.end());
    return inner.ShutdownCommunication();
  }
  if (subcode != cease::kAdministrativeShutdown && subcode != cease::kAdministrativeReset) return std::nullopt;
  if (data.empty() || data[0] == 0 || size_t{data[0]} + 1 > data.size()) return std::nullopt;
  return std::string(data.begin() + 1, data.begin() + 1 + data[0]);
}

const char* ErrorCodeName(uint8_t code) {
  switch (code) {
    case 1: return "Message Header Error";
    case 2: return "OPEN Message Error";
    case 3: return "UPDATE Message Error";
    case 4: return "Hold Timer Expired";
    case 5: return "Finite State Machine Error";
    case 6: return "Cease";
    case 7: return "ROUTE-REFRESH Message Error";
    default: return "Unknown Error";
  }
}

const char* ErrorSubcodeName(uint8_t code, uint8_t subcode) {
  if (subcode == 0) return "Unspecific";
  switch (code) {
    case 1:
      switch (subcode) {
        case 1: return "Connection Not Synchronized";
        case 2: return "Bad Message Length";
        case 3: return "Bad Message Type";
      }
      break;
    case 2:
      switch (subcode) {
        case 1: return "Unsupported Version Number";
        case 2: return "Bad Peer AS";
        case 3: return "Bad BGP Identifier";
        case 4: return "Unsupported Optional Parameter";
        case 5: return "Authentication Failure (deprecated)";
        case 6: return "Unacceptable Hold Time";
        case 7: return "Unsupported Capability";
        case 11: return "Role Mismatch";
      }
      break;
    case 3:
      switch (subcode) {
        case 1: return "Malformed Attribute List";
        case 2: return "Unrecognized Well-known Attribute";
        case 3: return "Missing Well-known Attribute";
        case 4: return "Attribute Flags Error";
        case 5: return "Attribute Length Error";
        case 6: return "Invalid ORIGIN Attribute";
        case 7: return "AS Routing Loop (deprecated)";
        case 8: return "Invalid NEXT_HOP Attribute";
        case 9: return "Optional Attribute Error";
        case 10: return "Invalid Network Field";
        case 11: return "Malformed AS_PATH";
      }
      break;
    case 5:
      switch (subcode) {
        case 1: return "Receive Unexpected Message in OpenSent State";
        case 2: return "Receive Unexpected Message in OpenConfirm State";
        case 3: return "Receive Unexpected Message in Established State";
      }
      break;
    case 6:
      switch (subcode) {
        case 1: return "Maximum Number of Prefixes Reached";
        case 2: return "Administrative Shutdown";
        case 3: return "Peer De-configured";
        case 4: return "Administrative Reset";
        case 5: return "Connection Rejected";
        case 6: return "Other Configuration Change";
        case 7: return "Connection Collision Resolution";
        case 8: return "Out of Resources";
        case 9: return "Hard Reset";
        case 10: return "BFD Down";
      }
      break;
    case 7:
      if (subcode == 1) return "Invalid Message Length";
      break;
  }
  return "Unknown Subcode";
}

std::string DescribeNotification(uint8_t code, uint8_t subcode) {
  return absl::StrFormat("%s / %s (%d/%d)", ErrorCodeName(code), ErrorSubcodeName(code, subcode), code,
                         subcode);
}

}  // namespace bagd::wire
