// Addresses, prefixes and NLRI entries as the codec produces them.
// Compact value types: a Prefix is 18 bytes and trivially copyable, so a decoded
// UPDATE with ~1000 /24s is one contiguous vector.
#pragma once

#include <array>
#include <bit>
#include <compare>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "absl/status/statusor.h"

namespace bagd::net {

// RFC 4760 address family / subsequent address family identifiers.
enum class Afi : uint16_t { kIpv4 = 1, kIpv6 = 2 };
enum class Safi : uint8_t { kUnicast = 1 };

// The two families bagd routes: IPv4 unicast and IPv6 unicast.
enum class Family : uint8_t { kIpv4Unicast = 0, kIpv6Unicast = 1 };
inline constexpr int kFamilyCount = 2;
const char* FamilyName(Family f);  // "ipv4-unicast" / "ipv6-unicast"
std::optional<Family> FamilyFromAfiSafi(uint16_t afi, uint8_t safi);
inline Afi FamilyAfi(Family f) { return f == Family::kIpv4Unicast ? Afi::kIpv4 : Afi::kIpv6; }

class IpAddress {
 public:
  IpAddress() = default;
  static IpAddress V4(uint32_t host_order);
  static IpAddress V4Bytes(const uint8_t* b);
  static IpAddress V6Bytes(const uint8_t* b);
  static absl::StatusOr<IpAddress> Parse(std::string_view text);

  bool is_v4() const { return afi_ == Afi::kIpv4; }
  bool is_v6() const { return afi_ == Afi::kIpv6; }
  Afi afi() const { return afi_; }
  // Network-order bytes: 4 for IPv4, 16 for IPv6.
  const uint8_t* bytes() const { return bytes_.data(); }
  size_t size() const { return is_v4() ? 4 : 16; }
  uint32_t v4() const;  // host order; only for IPv4
  bool IsIpv6LinkLocal() const { return is_v6() && bytes_[0] == 0xfe && (bytes_[1] & 0xc0) == 0x80; }
  std::string ToString() const;

  // Two words (a defaulted == calls memcmp for the bytes: next hops are compared in every
  // group's members).
  friend bool operator==(const IpAddress& a, const IpAddress& b) {
    return a.word(0) == b.word(0) && a.word(1) == b.word(1) && a.afi_ == b.afi_;
  }
  friend auto operator<=>(const IpAddress&, const IpAddress&) = default;
  template <typename H>
  friend H AbslHashValue(H h, const IpAddress& a) {
    return H::combine(std::move(h), a.afi_, a.bytes_);
  }

 private:
  uint64_t word(int i) const {
    uint64_t w;
    std::memcpy(&w, bytes_.data() + 8 * i, 8);
    return w;
  }

  Afi afi_ = Afi::kIpv4;
  std::array<uint8_t, 16> bytes_{};
};

class Prefix {
 public:
  Prefix() = default;
  // Bits past `length` are cleared, so equal prefixes compare equal.
  // Reads exactly (length + 7) / 8 bytes from addr_bytes; length is clamped to the family's maximum.
  static Prefix Make(Afi afi, const uint8_t* addr_bytes, uint8_t length) {
    Prefix p;
    p.afi_ = static_cast<uint8_t>(afi);
    const unsigned max_len = afi == Afi::kIpv4 ? 32 : 128;
    p.length_ = static_cast<uint8_t>(length > max_len ? max_len : length);
    const unsigned full = p.length_ / 8, rem = p.length_ % 8;
    std::memcpy(p.addr_.data(), addr_bytes, full);
    if (rem) p.addr_[full] = static_cast<uint8_t>(addr_bytes[full] & (0xff00 >> rem));
    return p;
  }
  static absl::StatusOr<Prefix> Parse(std::string_view text);  // "10.0.0.0/24", "2001:db8::/32"

  Afi afi() const { return static_cast<Afi>(afi_); }
  Family family() const { return afi() == Afi::kIpv4 ? Family::kIpv4Unicast : Family::kIpv6Unicast; }
  uint8_t length() const { return length_; }
  const uint8_t* bytes() const { return addr_.data(); }
  IpAddress address() const;
  std::string ToString() const;

  // Compared and hashed as two 64-bit words plus length and family: these run for every
  // prefix of every UPDATE (RIB and registry lookups, batch sorts), where a library memcmp
  // call per comparison showed as a quarter of the ingest profile. Order: address bytes,
  // then length, then family, as a byte-wise comparison would give.
  friend bool operator==(const Prefix& a, const Prefix& b) {
    return a.word(0) == b.word(0) && a.word(1) == b.word(1) && a.length_ == b.length_ && a.afi_ == b.afi_;
  }
  friend std::strong_ordering operator<=>(const Prefix& a, const Prefix& b) {
    if (auto c = a.ordered_word(0) <=> b.ordered_word(0); c != 0) return c;
    if (auto c = a.ordered_word(1) <=> b.ordered_word(1); c != 0) return c;
    if (auto c = a.length_ <=> b.length_; c != 0) return c;
    return a.afi_ <=> b.afi_;
  }
  template <typename H>
  friend H AbslHashValue(H h, const Prefix& p) {
    return H::combine(std::move(h), p.word(0), p.word(1), static_cast<uint16_t>(p.length_ << 8 | p.afi_));
  }

 private:
  uint64_t word(int i) const {
    uint64_t w;
    std::memcpy(&w, addr_.data() + 8 * i, 8);
    return w;
  }
  uint64_t ordered_word(int i) const {  // the 8 address bytes as a big-endian number
    if constexpr (std::endian::native == std::endian::little) return __builtin_bswap64(word(i));
    return word(i);
  }

  std::array<uint8_t, 16> addr_{};
  uint8_t length_ = 0;
  uint8_t afi_ = 1;  // Afi, one octet so a Prefix is 18 bytes
};

// One NLRI entry. path_id is meaningful only when ADD-PATH (RFC 7911) is in use.
struct Nlri {
  Prefix prefix;
  uint32_t path_id = 0;
  friend bool operator==(const Nlri&, const Nlri&) = default;
};

}  // namespace bagd::net
