// Text forms of the routing-policy config (conf/bagd.proto, DefinedSets and Actions) that
// both the validator and the policy compiler (policy/) read: prefixes with a length,
// communities of the three kinds, and FRR-style AS-path regular expressions. One parser,
// so `bagd --check` accepts exactly what the engine compiles.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "conf/ip_address_text.h"

namespace bagd::conf {

// "10.0.0.0/8", "2001:db8::/32": an address literal (ParseIpAddressText), '/', a length
// within the family. nullopt when it does not parse.
struct PrefixText {
  IpAddressText address;
  int length = 0;
  int max_length() const { return address.v6 ? 128 : 32; }
  bool HasHostBits() const;  // bits set past `length`
};
std::optional<PrefixText> ParsePrefixText(const std::string& text);

// A community as written in a CommunitySet or CommunityAction.
struct CommunityText {
  enum class Kind { kStandard, kLarge, kExtended, kLinkBandwidth };
  Kind kind = Kind::kStandard;
  uint32_t standard = 0;                     // kStandard: high 16 bits AS, low 16 bits value
  uint32_t large[3] = {0, 0, 0};             // kLarge: global admin, local 1, local 2
  uint64_t extended = 0;                     // kExtended: the 8 octets, big-endian
  uint32_t lb_asn = 0;                       // kLinkBandwidth: the AS ...
  double lb_bits_per_second = 0;             // ... and the rate (conf/rate_text.h)
};

// Standard "65000:100" or a well-known name ("no-export", ...), large "65000:1:2", extended
// "rt:A:N" / "soo:A:N" (RFC 4360 §3.1/§3.2: 2-octet AS with a 4-octet number, or a 4-octet
// AS with a 2-octet number) and "lb:A:RATE" (RFC 10005). On failure InvalidArgument whose
// message quotes the text and says what to write, e.g.
//   "65000:70000": 70000 is more than 65535: a standard community is AS:VALUE, each 0..65535
absl::StatusOr<CommunityText> ParseCommunityText(std::string_view text);

// An FRR/GoBGP AS-path regex in RE2 syntax: each `_` outside a bracket expression becomes
// FRR's delimiter class `(?:^|$|[ ,{}()])` (FRR bgpd/bgp_regex.c); everything else is kept.
// The result is matched against the AS path text "65001 65002 {65003,65004} (65010)".
std::string TranslateAsPathRegex(std::string_view regex);

// The translated regex compiled by RE2: OK, or InvalidArgument with RE2's reason
// ("missing ): ^(65001"), for the validator.
absl::Status CheckAsPathRegex(std::string_view regex);

}  // namespace bagd::conf
