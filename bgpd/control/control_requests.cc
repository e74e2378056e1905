#include "bgpd/control/control_requests.h"

#include "absl/strings/str_cat.h"
#include "bgpd/control/utf8.h"
#include "bgpd/wire/ip_prefix.h"

namespace bagd::control {
namespace {

// The client's text, made safe to echo in an error message.
std::string Quoted(std::string_view text) {
  constexpr size_t kMax = 64;
  std::string shown = ToValidUtf8(text.substr(0, kMax));
  if (text.size() > kMax) shown += "...";
  return absl::StrCat("'", shown, "'");
}

}  // namespace

absl::StatusOr<std::string> CanonicalNeighborAddress(std::string_view text) {
  if (text.empty()) return absl::InvalidArgumentError("a neighbor address is required");
  auto addr = wire::IpAddress::Parse(text);
  if (!addr.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        Quoted(text), " is not a neighbor address: expected an IPv4 or IPv6 address such as 192.0.2.1 or 2001:db8::1"));
  }
  return addr->ToString();
}

absl::Status CheckShutdownMessage(std::string_view message) {
  if (!IsValidUtf8(message)) {
    return absl::InvalidArgumentError("the shutdown message is not valid UTF-8 (RFC 9003 requires UTF-8)");
  }
  if (message.size() > kMaxShutdownMessageOctets) {
    return absl::InvalidArgumentError(absl::StrCat("the shutdown message is ", message.size(),
                                                   " octets of UTF-8; RFC 9003 allows at most ",
                                                   kMaxShutdownMessageOctets));
  }
  return absl::OkStatus();
}

}  // namespace bagd::control
