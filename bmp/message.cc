#include "bmp/message.h"

#include <algorithm>
#include <cstring>

namespace bagd::bmp {

namespace {

void PatchU32(Bytes& out, size_t at, uint32_t v) {
  out[at] = static_cast<uint8_t>(v >> 24);
  out[at + 1] = static_cast<uint8_t>(v >> 16);
  out[at + 2] = static_cast<uint8_t>(v >> 8);
  out[at + 3] = static_cast<uint8_t>(v);
}

// Starts a message in `out`; returns where its length goes (EndMessage fills it in).
size_t BeginMessage(Bytes& out, MessageType type) {
  const size_t at = out.size();
  wire::ByteWriter w(out);
  w.U8(kVersion);
  w.U32(0);
  w.U8(static_cast<uint8_t>(type));
  return at;
}

void EndMessage(Bytes& out, size_t at) {
  // §4.1: the length counts the whole message, the common header included.
  PatchU32(out, at + 1, static_cast<uint32_t>(out.size() - at));
}

void AppendTlv(Bytes& out, uint16_t type, std::string_view value) {
  wire::ByteWriter w(out);
  w.U16(type);
  // A TLV value longer than 65535 octets cannot be expressed: cut (only operator text).
  const size_t n = std::min<size_t>(value.size(), 0xffff);
  w.U16(static_cast<uint16_t>(n));
  w.Append(reinterpret_cast<const uint8_t*>(value.data()), n);
}

// A 16-octet address field: IPv4 in the low-order 4 octets, the rest zero (§4.2, §4.10).
void AppendAddress16(Bytes& out, const std::optional<net::IpAddress>& a) {
  uint8_t field[16] = {};
  if (a) {
    if (a->is_v4()) {
      std::memcpy(field + 12, a->bytes(), 4);
    } else {
      std::memcpy(field, a->bytes(), 16);
    }
  }
  out.insert(out.end(), field, field + 16);
}

}  // namespace

Bytes Frame(MessageType type, ByteSpan body) {
  Bytes out;
  out.reserve(kCommonHeaderSize + body.size());
  const size_t at = BeginMessage(out, type);
  out.insert(out.end(), body.begin(), body.end());
  EndMessage(out, at);
  return out;
}

void AppendPerPeerHeader(Bytes& out, const PerPeerHeader& h) {
  wire::ByteWriter w(out);
  w.U8(static_cast<uint8_t>(h.type));
  uint8_t flags = h.flags;
  if (h.type != PeerType::kLocRib && h.address && h.address->is_v6()) flags |= peer_flag::kIpv6;
  w.U8(flags);
  w.U64(h.distinguisher);
  AppendAddress16(out, h.address);
  w.U32(h.as);
  w.U32(h.bgp_id);
  w.U32(h.seconds);
  w.U32(h.microseconds);
}

Bytes EncodeInitiation(std::string_view sys_name, std::string_view sys_descr, std::span<const InfoTlv> extra) {
  Bytes out;
  const size_t at = BeginMessage(out, MessageType::kInitiation);
  AppendTlv(out, info_type::kSysDescr, sys_descr);
  AppendTlv(out, info_type::kSysName, sys_name);
  for (const InfoTlv& t : extra) AppendTlv(out, t.type, t.value);
  EndMessage(out, at);
  return out;
}

Bytes EncodeTermination(TerminationReason reason, std::string_view text) {
  Bytes out;
  const size_t at = BeginMessage(out, MessageType::kTermination);
  if (!text.empty()) AppendTlv(out, 0, text);
  wire::ByteWriter w(out);
  w.U16(1);  // §4.5: type 1, Reason, 2 octets
  w.U16(2);
  w.U16(static_cast<uint16_t>(reason));
  EndMessage(out, at);
  return out;
}

Bytes EncodePeerUp(const PerPeerHeader& h, const std::optional<net::IpAddress>& local_address, uint16_t local_port,
                   uint16_t remote_port, ByteSpan sent_open, ByteSpan received_open, std::span<const InfoTlv> tlvs) {
  Bytes out;
  const size_t at = BeginMessage(out, MessageType::kPeerUp);
  AppendPerPeerHeader(out, h);
  AppendAddress16(out, local_address);
  wire::ByteWriter w(out);
  w.U16(local_port);
  w.U16(remote_port);
  w.Append(sent_open);
  w.Append(received_open);
  for (const InfoTlv& t : tlvs) AppendTlv(out, t.type, t.value);
  EndMessage(out, at);
  return out;
}

Bytes EncodePeerDown(const PerPeerHeader& h, PeerDownReason reason, ByteSpan data) {
  Bytes out;
  const size_t at = BeginMessage(out, MessageType::kPeerDown);
  AppendPerPeerHeader(out, h);
  out.push_back(static_cast<uint8_t>(reason));
  out.insert(out.end(), data.begin(), data.end());
  EndMessage(out, at);
  return out;
}

Bytes EncodePeerDownFsmEvent(const PerPeerHeader& h, uint16_t fsm_event) {
  const uint8_t code[2] = {static_cast<uint8_t>(fsm_event >> 8), static_cast<uint8_t>(fsm_event)};
  return EncodePeerDown(h, PeerDownReason::kLocalNoNotification, code);
}

Bytes EncodePeerDownTlv(const PerPeerHeader& h, std::span<const InfoTlv> tlvs) {
  Bytes data;
  for (const InfoTlv& t : tlvs) AppendTlv(data, t.type, t.value);
  return EncodePeerDown(h, PeerDownReason::kLocalTlv, data);
}

void AppendRouteMonitoring(Bytes& out, const PerPeerHeader& h, ByteSpan update) {
  const size_t at = BeginMessage(out, MessageType::kRouteMonitoring);
  AppendPerPeerHeader(out, h);
  out.insert(out.end(), update.begin(), update.end());
  EndMessage(out, at);
}

Bytes EncodeRouteMonitoring(const PerPeerHeader& h, ByteSpan update) {
  Bytes out;
  out.reserve(kCommonHeaderSize + kPerPeerHeaderSize + update.size());
  AppendRouteMonitoring(out, h, update);
  return out;
}

Bytes EncodeStatisticsReport(const PerPeerHeader& h, std::span<const Stat> stats) {
  Bytes out;
  const size_t at = BeginMessage(out, MessageType::kStatisticsReport);
  AppendPerPeerHeader(out, h);
  wire::ByteWriter w(out);
  w.U32(static_cast<uint32_t>(stats.size()));
  for (const Stat& s : stats) {
    w.U16(s.type);
    switch (s.kind) {
      case Stat::Kind::kCounter32:
        w.U16(4);
        w.U32(static_cast<uint32_t>(s.value));
        break;
      case Stat::Kind::kGauge64:
        w.U16(8);
        w.U64(s.value);
        break;
      case Stat::Kind::kAfiSafiGauge64:
        w.U16(11);  // §4.8: AFI (2), SAFI (1), 64-bit gauge
        w.U16(s.afi);
        w.U8(s.safi);
        w.U64(s.value);
        break;
    }
  }
  EndMessage(out, at);
  return out;
}

wire::ExtendedCommunity AppliedBandwidthCommunity(uint32_t local_as, double bits_per_second) {
  return wire::LinkBandwidth::FromBitsPerSecond(local_as > 0xffff ? wire::kAsTrans : local_as, bits_per_second,
                                                /*transitive=*/false)
      .ToExtendedCommunity();
}

std::optional<FrameInfo> PeekFrame(ByteSpan buffered) {
  if (buffered.size() < kCommonHeaderSize) return std::nullopt;
  FrameInfo f;
  f.version = buffered[0];
  f.length = static_cast<uint32_t>(buffered[1]) << 24 | static_cast<uint32_t>(buffered[2]) << 16 |
             static_cast<uint32_t>(buffered[3]) << 8 | buffered[4];
  f.type = static_cast<MessageType>(buffered[5]);
  if (f.length < kCommonHeaderSize || buffered.size() < f.length) return std::nullopt;
  return f;
}

}  // namespace bagd::bmp
