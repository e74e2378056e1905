// IP address literals in the configuration: parsing and the checks that tell a usable
// unicast endpoint from the unspecified, multicast, broadcast or link-local addresses.
// (conf/ does not link bgpd/, so it has its own small parser on top of inet_pton.)
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>

namespace bagd::conf {

struct IpAddressText {
  bool v6 = false;
  std::array<uint8_t, 16> bytes{};  // the first 4 for IPv4
  friend auto operator<=>(const IpAddressText&, const IpAddressText&) = default;
};

// Strict literals only: dotted quad ("192.0.2.1", no leading zeros or short forms) or any
// RFC 4291 IPv6 text form. No interface scope ("%eth0"), no brackets, no prefix length.
std::optional<IpAddressText> ParseIpAddressText(const std::string& text);

// Why the address cannot be a BGP endpoint, as the end of a sentence ("is a multicast
// address"), or "" when it can. `allow_unspecified` admits 0.0.0.0 and :: (listen).
std::string EndpointProblem(const IpAddressText& address, bool allow_unspecified);

// Why `text` does not parse, as the end of a sentence ("is not an IPv4 or IPv6 address").
std::string SyntaxProblem(const std::string& text);

}  // namespace bagd::conf
