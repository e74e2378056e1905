#include "conf/ip_address_text.h"

#include <arpa/inet.h>

#include <algorithm>

namespace bagd::conf {

std::optional<IpAddressText> ParseIpAddressText(const std::string& text) {
  IpAddressText address;
  if (text.find(':') != std::string::npos) {
    address.v6 = true;
    if (inet_pton(AF_INET6, text.c_str(), address.bytes.data()) != 1) return std::nullopt;
  } else if (inet_pton(AF_INET, text.c_str(), address.bytes.data()) != 1) {
    return std::nullopt;
  }
  return address;
}

std::string EndpointProblem(const IpAddressText& a, bool allow_unspecified) {
  const auto& b = a.bytes;
  if (!a.v6) {
    const bool zero = b[0] == 0 && b[1] == 0 && b[2] == 0 && b[3] == 0;
    if (zero) return allow_unspecified ? "" : "is the unspecified address";
    if (b[0] == 255 && b[1] == 255 && b[2] == 255 && b[3] == 255) return "is the broadcast address";
    if (b[0] >= 224 && b[0] < 240) return "is a multicast address (224.0.0.0/4)";
    if (b[0] >= 240) return "is in the reserved range 240.0.0.0/4";
    return "";
  }
  if (std::all_of(b.begin(), b.end(), [](uint8_t x) { return x == 0; })) {
    return allow_unspecified ? "" : "is the unspecified address";
  }
  if (b[0] == 0xff) return "is a multicast address (ff00::/8)";
  if (b[0] == 0xfe && (b[1] & 0xc0) == 0x80) {
    return "is link-local (fe80::/10), which needs an interface; link-local sessions are not "
           "supported: use a global or unique-local address";
  }
  const bool mapped = std::all_of(b.begin(), b.begin() + 10, [](uint8_t x) { return x == 0; }) &&
                      b[10] == 0xff && b[11] == 0xff;
  if (mapped) return "is an IPv4-mapped IPv6 address: write the IPv4 address itself";
  return "";
}

std::string SyntaxProblem(const std::string& text) {
  if (text.find('%') != std::string::npos) {
    return "is not an address bagd accepts: interface scopes (%name) are not supported";
  }
  if (text.find('/') != std::string::npos) {
    return "is not an IPv4 or IPv6 address: remove the prefix length";
  }
  if (!text.empty() && text.front() == '[') {
    return "is not an IPv4 or IPv6 address: remove the brackets";
  }
  return "is not an IPv4 or IPv6 address";
}

}  // namespace bagd::conf
