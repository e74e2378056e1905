// Extended communities and the link-bandwidth community (RFC 10005).
//
// Wire form (8 octets): type 0x00 (transitive) or 0x40 (non-transitive), sub-type 0x04,
// a 2-octet AS (AS_TRANS 23456 stands in for a 4-octet AS), and an IEEE-754 binary32
// value in bytes per second, all big-endian.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

namespace bagd::wire {

inline constexpr uint32_t kAsTrans = 23456;  // RFC 6793

// RFC 4360 extended community, kept as its 8 octets in one big-endian integer.
struct ExtendedCommunity {
  uint64_t raw = 0;
  uint8_t type() const { return static_cast<uint8_t>(raw >> 56); }
  uint8_t subtype() const { return static_cast<uint8_t>(raw >> 48); }
  bool transitive() const { return (type() & 0x40) == 0; }
  friend bool operator==(const ExtendedCommunity&, const ExtendedCommunity&) = default;
  friend auto operator<=>(const ExtendedCommunity&, const ExtendedCommunity&) = default;
};

// RFC 5701 IPv6-address-specific extended community (20 octets).
struct Ipv6ExtendedCommunity {
  std::array<uint8_t, 20> bytes{};
  uint8_t type() const { return bytes[0]; }
  uint8_t subtype() const { return bytes[1]; }
  friend bool operator==(const Ipv6ExtendedCommunity&, const Ipv6ExtendedCommunity&) = default;
};

// RFC 8092 large community.
struct LargeCommunity {
  uint32_t global_admin = 0;
  uint32_t local1 = 0;
  uint32_t local2 = 0;
  friend bool operator==(const LargeCommunity&, const LargeCommunity&) = default;
};

inline constexpr uint8_t kLinkBandwidthSubtype = 0x04;
inline constexpr uint8_t kLinkBandwidthTransitiveType = 0x00;
inline constexpr uint8_t kLinkBandwidthNonTransitiveType = 0x40;

class LinkBandwidth {
 public:
  LinkBandwidth() = default;
  // `asn` may be 4-octet; it is encoded as AS_TRANS then (RFC 10005, no 4-octet variant exists).
  static LinkBandwidth Make(uint32_t asn, float bytes_per_second, bool transitive);
  static LinkBandwidth FromBitsPerSecond(uint32_t asn, double bits_per_second, bool transitive);
  // nullopt unless the community is type 0x00/0x40, sub-type 0x04. Invalid values
  // (NaN, infinite, negative) still decode so they can be shown; see valid().
  static std::optional<LinkBandwidth> FromExtendedCommunity(ExtendedCommunity ec);

  ExtendedCommunity ToExtendedCommunity() const;
  bool transitive() const { return transitive_; }
  uint16_t asn() const { return asn_; }
  float bytes_per_second() const { return value_; }
  double bits_per_second() const { return static_cast<double>(value_) * 8.0; }
  // RFC 10005 values are non-negative finite numbers; zero is valid (a drained link).
  bool valid() const;
  std::string ToString() const;  // "LB:65001:1.25e+09B/s (10Gbps) transitive"

  friend bool operator==(const LinkBandwidth&, const LinkBandwidth&) = default;

 private:
  uint16_t asn_ = 0;
  bool transitive_ = true;
  float value_ = 0;
};

// What a path's extended communities say about its bandwidth.
struct LinkBandwidthSelection {
  std::optional<LinkBandwidth> chosen;  // empty: the path carries no usable LB
  int seen = 0;                          // LB communities present
  int invalid = 0;                       // of which NaN / infinite / negative
};

// RFC 10005: several LB communities → the lowest value wins, compared as numbers (zero
// counts), on a tie the transitive one. Any invalid value makes the whole path count as
// carrying no LB (the caller logs it); we never guess which of a sender's values was meant.
LinkBandwidthSelection SelectLinkBandwidth(std::span<const ExtendedCommunity> communities);

// FRR's 64-bit "extended link bandwidth" in an IPv6-address-specific community
// (sub-type 0x06; uint64 bytes/s at octets 4..11, 4-octet AS at 12..15). Decoded for display.
struct ExtendedLinkBandwidth {
  bool transitive = true;
  uint32_t asn = 0;
  uint64_t bytes_per_second = 0;
};
std::optional<ExtendedLinkBandwidth> DecodeExtendedLinkBandwidth(const Ipv6ExtendedCommunity& ec);

// Human rate, "10Gbps", "2.5Gbps", "400Mbps", "0bps".
std::string FormatBitsPerSecond(double bps);

}  // namespace bagd::wire
