#include "wire/link_bandwidth.h"

#include <bit>
#include <cmath>

#include "absl/strings/str_format.h"

namespace bagd::wire {

LinkBandwidth LinkBandwidth::Make(uint32_t asn, float bytes_per_second, bool transitive) {
  LinkBandwidth lb;
  lb.asn_ = static_cast<uint16_t>(asn > 0xffff ? kAsTrans : asn);
  lb.value_ = bytes_per_second;
  lb.transitive_ = transitive;
  return lb;
}

LinkBandwidth LinkBandwidth::FromBitsPerSecond(uint32_t asn, double bits_per_second, bool transitive) {
  return Make(asn, static_cast<float>(bits_per_second / 8.0), transitive);
}

std::optional<LinkBandwidth> LinkBandwidth::FromExtendedCommunity(ExtendedCommunity ec) {
  if (ec.subtype() != kLinkBandwidthSubtype) return std::nullopt;
  if (ec.type() != kLinkBandwidthTransitiveType && ec.type() != kLinkBandwidthNonTransitiveType)
    return std::nullopt;
  LinkBandwidth lb;
  lb.transitive_ = ec.type() == kLinkBandwidthTransitiveType;
  lb.asn_ = static_cast<uint16_t>(ec.raw >> 32);
  lb.value_ = std::bit_cast<float>(static_cast<uint32_t>(ec.raw));
  return lb;
}

ExtendedCommunity LinkBandwidth::ToExtendedCommunity() const {
  const uint64_t type = transitive_ ? kLinkBandwidthTransitiveType : kLinkBandwidthNonTransitiveType;
  return ExtendedCommunity{(type << 56) | (uint64_t{kLinkBandwidthSubtype} << 48) | (uint64_t{asn_} << 32) |
                           std::bit_cast<uint32_t>(value_)};
}

bool LinkBandwidth::valid() const { return std::isfinite(value_) && !(value_ < 0.0f); }

std::string FormatBitsPerSecond(double bps) {
  struct Unit {
    double scale;
    const char* name;
  };
  static constexpr Unit kUnits[] = {{1e12, "Tbps"}, {1e9, "Gbps"}, {1e6, "Mbps"}, {1e3, "Kbps"}};
  for (const auto& u : kUnits) {
    if (bps >= u.scale) return absl::StrFormat("%.6g%s", bps / u.scale, u.name);
  }
  return absl::StrFormat("%.6gbps", bps);
}

std::string LinkBandwidth::ToString() const {
  if (!valid()) {
    return absl::StrFormat("LB:%d:invalid(%g) %s", asn_, value_, transitive_ ? "transitive" : "non-transitive");
  }
  return absl::StrFormat("LB:%d:%.9gB/s (%s) %s", asn_, value_, FormatBitsPerSecond(bits_per_second()),
                         transitive_ ? "transitive" : "non-transitive");
}

LinkBandwidthSelection SelectLinkBandwidth(std::span<const ExtendedCommunity> communities) {
  LinkBandwidthSelection sel;
  for (const ExtendedCommunity& ec : communities) {
    auto lb = LinkBandwidth::FromExtendedCommunity(ec);
    if (!lb) continue;
    ++sel.seen;
    if (!lb->valid()) {
      ++sel.invalid;
      continue;
    }
    if (!sel.chosen) {
      sel.chosen = lb;
      continue;
    }
    // Numeric comparison (never raw bytes): -0.0 == 0.0, and type/AS do not take part.
    const float a = lb->bytes_per_second(), b = sel.chosen->bytes_per_second();
    if (a < b || (a == b && lb->transitive() && !sel.chosen->transitive())) sel.chosen = lb;
  }
  if (sel.invalid > 0) sel.chosen.reset();
  return sel;
}

std::optional<ExtendedLinkBandwidth> DecodeExtendedLinkBandwidth(const Ipv6ExtendedCommunity& ec) {
  // FRR 10.1+ writes type 0x02 (0x42 non-transitive); the IANA registry has 0x00/0x40. Accept both.
  const uint8_t base = ec.type() & ~uint8_t{0x40};
  if (ec.subtype() != 0x06 || (base != 0x00 && base != 0x02)) return std::nullopt;
  ExtendedLinkBandwidth out;
  out.transitive = (ec.type() & 0x40) == 0;
  for (int i = 4; i < 12; ++i) out.bytes_per_second = (out.bytes_per_second << 8) | ec.bytes[i];
  for (int i = 12; i < 16; ++i) out.asn = (out.asn << 8) | ec.bytes[i];
  return out;
}

}  // namespace bagd::wire
