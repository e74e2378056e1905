#include "net/overloaded.h"
#include "wire/capability.h"

#include "absl/strings/str_cat.h"

namespace bagd::wire {
namespace {


Capability Malformed(uint8_t code, ByteSpan value, bool* malformed) {
  if (malformed) *malformed = true;
  return UnknownCap{code, Bytes(value.begin(), value.end())};
}

}  // namespace

uint8_t CapabilityCodeOf(const Capability& cap) {
  return std::visit(
      net::Overloaded{
          [](const MultiprotocolCap&) { return uint8_t{1}; },
          [](const RouteRefreshCap&) { return uint8_t{2}; },
          [](const ExtendedNextHopCap&) { return uint8_t{5}; },
          [](const ExtendedMessageCap&) { return uint8_t{6}; },
          [](const RoleCap&) { return uint8_t{9}; },
          [](const GracefulRestartCap&) { return uint8_t{64}; },
          [](const FourOctetAsCap&) { return uint8_t{65}; },
          [](const AddPathCap&) { return uint8_t{69}; },
          [](const EnhancedRouteRefreshCap&) { return uint8_t{70}; },
          [](const FqdnCap&) { return uint8_t{73}; },
          [](const UnknownCap& u) { return u.code; },
      },
      cap);
}

std::string CapabilityName(uint8_t code) {
  switch (code) {
    case 1: return "multiprotocol";
    case 2: return "route-refresh";
    case 5: return "extended-nexthop";
    case 6: return "extended-message";
    case 9: return "role";
    case 64: return "graceful-restart";
    case 65: return "four-octet-as";
    case 69: return "add-path";
    case 70: return "enhanced-route-refresh";
    case 71: return "long-lived-graceful-restart";
    case 73: return "fqdn";
    case 128: return "route-refresh-old";
    default: return absl::StrCat("capability-", code);
  }
}

Capability DecodeCapability(uint8_t code, ByteSpan value, bool* malformed) {
  if (malformed) *malformed = false;
  ByteReader r(value);
  switch (static_cast<CapabilityCode>(code)) {
    case CapabilityCode::kMultiprotocol: {
      MultiprotocolCap c;
      uint8_t reserved = 0;
      if (value.size() != 4 || !r.ReadU16(c.afi) || !r.ReadU8(reserved) || !r.ReadU8(c.safi))
        return Malformed(code, value, malformed);
      return c;
    }
    case CapabilityCode::kRouteRefresh:
      if (!value.empty()) return Malformed(code, value, malformed);
      return RouteRefreshCap{};
    case CapabilityCode::kExtendedNextHop: {
      if (value.size() % 6 != 0) return Malformed(code, value, malformed);
      ExtendedNextHopCap c;
      while (!r.empty()) {
        ExtendedNextHopCap::Entry e;
        r.ReadU16(e.nlri_afi);
        r.ReadU16(e.nlri_safi);
        r.ReadU16(e.nexthop_afi);
        c.entries.push_back(e);
      }
      return c;
    }
    case CapabilityCode::kExtendedMessage:
      if (!value.empty()) return Malformed(code, value, malformed);
      return ExtendedMessageCap{};
    case CapabilityCode::kRole:
      if (value.size() != 1) return Malformed(code, value, malformed);
      return RoleCap{value[0]};
    case CapabilityCode::kGracefulRestart: {
      if (value.size() < 2 || (value.size() - 2) % 4 != 0) return Malformed(code, value, malformed);
      GracefulRestartCap c;
      uint16_t flags_time = 0;
      r.ReadU16(flags_time);
      c.restart_state = flags_time & 0x8000;
      c.notification = flags_time & 0x4000;
      c.restart_time = flags_time & 0x0fff;
      while (!r.empty()) {
        GracefulRestartCap::Entry e;
        uint8_t flags = 0;
        r.ReadU16(e.afi);
        r.ReadU8(e.safi);
        r.ReadU8(flags);
        e.forwarding_preserved = flags & 0x80;
        c.families.push_back(e);
      }
      return c;
    }
    case CapabilityCode::kFourOctetAs: {
      FourOctetAsCap c;
      if (value.size() != 4) return Malformed(code, value, malformed);
      r.ReadU32(c.asn);
      return c;
    }
    case CapabilityCode::kAddPath: {
      if (value.size() % 4 != 0) return Malformed(code, value, malformed);
      AddPathCap c;
      while (!r.empty()) {
        AddPathCap::Entry e;
        r.ReadU16(e.afi);
        r.ReadU8(e.safi);
        r.ReadU8(e.direction);
        c.families.push_back(e);
      }
      return c;
    }
    case CapabilityCode::kEnhancedRouteRefresh:
      if (!value.empty()) return Malformed(code, value, malformed);
      return EnhancedRouteRefreshCap{};
    case CapabilityCode::kFqdn: {
      FqdnCap c;
      uint8_t len = 0;
      ByteSpan s;
      if (!r.ReadU8(len) || !r.ReadSpan(len, s)) return Malformed(code, value, malformed);
      c.hostname.assign(s.begin(), s.end());
      if (!r.ReadU8(len) || !r.ReadSpan(len, s) || !r.empty()) return Malformed(code, value, malformed);
      c.domain.assign(s.begin(), s.end());
      return c;
    }
  }
  return UnknownCap{code, Bytes(value.begin(), value.end())};
}

void EncodeCapabilityValue(const Capability& cap, Bytes& out) {
  ByteWriter w(out);
  std::visit(net::Overloaded{
                 [&](const MultiprotocolCap& c) {
                   w.U16(c.afi);
                   w.U8(0);
                   w.U8(c.safi);
                 },
                 [](const RouteRefreshCap&) {},
                 [&](const ExtendedNextHopCap& c) {
                   for (const auto& e : c.entries) {
                     w.U16(e.nlri_afi);
                     w.U16(e.nlri_safi);
                     w.U16(e.nexthop_afi);
                   }
                 },
                 [](const ExtendedMessageCap&) {},
                 [&](const RoleCap& c) { w.U8(c.role); },
                 [&](const GracefulRestartCap& c) {
                   w.U16(static_cast<uint16_t>((c.restart_state ? 0x8000 : 0) | (c.notification ? 0x4000 : 0) |
                                               (c.restart_time & 0x0fff)));
                   for (const auto& e : c.families) {
                     w.U16(e.afi);
                     w.U8(e.safi);
                     w.U8(e.forwarding_preserved ? 0x80 : 0);
                   }
                 },
                 [&](const FourOctetAsCap& c) { w.U32(c.asn); },
                 [&](const AddPathCap& c) {
                   for (const auto& e : c.families) {
                     w.U16(e.afi);
                     w.U8(e.safi);
                     w.U8(e.direction);
                   }
                 },
                 [](const EnhancedRouteRefreshCap&) {},
                 [&](const FqdnCap& c) {
                   const size_t h = c.hostname.size() > 255 ? 255 : c.hostname.size();
                   const size_t d = c.domain.size() > 255 ? 255 : c.domain.size();
                   w.U8(static_cast<uint8_t>(h));
                   w.Append(reinterpret_cast<const uint8_t*>(c.hostname.data()), h);
                   w.U8(static_cast<uint8_t>(d));
                   w.Append(reinterpret_cast<const uint8_t*>(c.domain.data()), d);
                 },
                 [&](const UnknownCap& c) { w.Append(c.value); },
             },
             cap);
}

}  // namespace bagd::wire
