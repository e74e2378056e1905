#include "net/ip_prefix.h"

#include <arpa/inet.h>

#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace bagd::net {

const char* FamilyName(Family f) {
  return f == Family::kIpv4Unicast ? "ipv4-unicast" : "ipv6-unicast";
}

std::optional<Family> FamilyFromAfiSafi(uint16_t afi, uint8_t safi) {
  if (safi != static_cast<uint8_t>(Safi::kUnicast)) return std::nullopt;
  if (afi == static_cast<uint16_t>(Afi::kIpv4)) return Family::kIpv4Unicast;
  if (afi == static_cast<uint16_t>(Afi::kIpv6)) return Family::kIpv6Unicast;
  return std::nullopt;
}

IpAddress IpAddress::V4(uint32_t h) {
  IpAddress a;
  a.afi_ = Afi::kIpv4;
  a.bytes_[0] = static_cast<uint8_t>(h >> 24);
  a.bytes_[1] = static_cast<uint8_t>(h >> 16);
  a.bytes_[2] = static_cast<uint8_t>(h >> 8);
  a.bytes_[3] = static_cast<uint8_t>(h);
  return a;
}

IpAddress IpAddress::V4Bytes(const uint8_t* b) {
  IpAddress a;
  a.afi_ = Afi::kIpv4;
  std::memcpy(a.bytes_.data(), b, 4);
  return a;
}

IpAddress IpAddress::V6Bytes(const uint8_t* b) {
  IpAddress a;
  a.afi_ = Afi::kIpv6;
  std::memcpy(a.bytes_.data(), b, 16);
  return a;
}

absl::StatusOr<IpAddress> IpAddress::Parse(std::string_view text) {
  std::string s(text);
  uint8_t buf[16];
  if (inet_pton(AF_INET, s.c_str(), buf) == 1) return V4Bytes(buf);
  if (inet_pton(AF_INET6, s.c_str(), buf) == 1) return V6Bytes(buf);
  return absl::InvalidArgumentError(absl::StrCat("not an IP address: '", std::string(text), "'"));
}

uint32_t IpAddress::v4() const {
  return (uint32_t{bytes_[0]} << 24) | (uint32_t{bytes_[1]} << 16) | (uint32_t{bytes_[2]} << 8) |
         bytes_[3];
}

std::string IpAddress::ToString() const {
  char buf[INET6_ADDRSTRLEN];
  inet_ntop(is_v4() ? AF_INET : AF_INET6, bytes_.data(), buf, sizeof buf);
  return buf;
}

absl::StatusOr<Prefix> Prefix::Parse(std::string_view text) {
  const size_t slash = text.find('/');
  auto addr = IpAddress::Parse(text.substr(0, slash));
  if (!addr.ok()) return absl::InvalidArgumentError(absl::StrCat("not a prefix: '", std::string(text), "'"));
  const unsigned max_len = addr->is_v4() ? 32 : 128;
  unsigned len = max_len;
  if (slash != std::string_view::npos &&
      (!absl::SimpleAtoi(std::string(text.substr(slash + 1)), &len) || len > max_len)) {
    return absl::InvalidArgumentError(absl::StrCat("bad prefix length in '", std::string(text), "'"));
  }
  return Make(addr->afi(), addr->bytes(), static_cast<uint8_t>(len));
}

IpAddress Prefix::address() const {
  return afi() == Afi::kIpv4 ? IpAddress::V4Bytes(addr_.data()) : IpAddress::V6Bytes(addr_.data());
}

std::string Prefix::ToString() const { return absl::StrCat(address().ToString(), "/", length_); }

}  // namespace bagd::net
