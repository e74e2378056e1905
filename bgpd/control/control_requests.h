// Checks of what a control client asks for, done by the server before the daemon sees it,
// so every ControlBackend receives canonical addresses and sendable messages.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace bagd::control {

// RFC 9003 §2: the shutdown communication is at most 255 octets of UTF-8.
inline constexpr size_t kMaxShutdownMessageOctets = 255;

// The canonical text of a neighbor address ("2001:DB8:0::1" -> "2001:db8::1"), so a
// backend can compare addresses as strings. InvalidArgument if `text` is not an address.
absl::StatusOr<std::string> CanonicalNeighborAddress(std::string_view text);

// OK, or InvalidArgument if `message` is longer than 255 octets or not valid UTF-8.
absl::Status CheckShutdownMessage(std::string_view message);

}  // namespace bagd::control
