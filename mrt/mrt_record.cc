#include "mrt/mrt_record.h"

#include <cassert>

namespace bagd::mrt {
namespace {

// RFC 6396 §2 / §3. `length`: the octets after the 12-octet common header (for the extended
// header, the 4-octet microsecond field included).
void PutHeader(wire::ByteWriter& w, uint32_t timestamp, uint16_t type, uint16_t subtype, uint32_t length) {
  w.U32(timestamp);
  w.U16(type);
  w.U16(subtype);
  w.U32(length);
}

void PatchU32(Bytes& out, size_t at, uint32_t v) {
  for (int k = 0; k < 4; ++k) out[at + k] = static_cast<uint8_t>(v >> (24 - 8 * k));
}

void PutAddress(wire::ByteWriter& w, const net::IpAddress& a) { w.Append(a.bytes(), a.size()); }

constexpr uint8_t kAttrExtendedLength = 0x10;
constexpr uint8_t kAttrMpReach = 14;
constexpr uint8_t kAttrMpUnreach = 15;

}  // namespace

void AppendPeerIndexTable(Bytes& out, uint32_t timestamp, uint32_t collector_bgp_id, std::string_view view_name,
                          std::span<const IndexedPeer> peers) {
  assert(peers.size() <= 65535 && view_name.size() <= 65535);
  wire::ByteWriter w(out);
  const size_t start = out.size();
  PutHeader(w, timestamp, kTypeTableDumpV2, kPeerIndexTable, 0);
  w.U32(collector_bgp_id);
  w.U16(static_cast<uint16_t>(view_name.size()));
  w.Append(reinterpret_cast<const uint8_t*>(view_name.data()), view_name.size());
  w.U16(static_cast<uint16_t>(peers.size()));
  for (const IndexedPeer& p : peers) {
    // Peer Type: bit 0 (0x01) the address is IPv6, bit 1 (0x02) the AS is 4 octets.
    w.U8(static_cast<uint8_t>((p.address.is_v6() ? 0x01 : 0x00) | 0x02));
    w.U32(p.bgp_id);
    PutAddress(w, p.address);
    w.U32(p.asn);
  }
  PatchU32(out, start + 8, static_cast<uint32_t>(out.size() - start - kHeaderSize));
}

void AppendRibRecord(Bytes& out, uint32_t timestamp, uint32_t sequence, const net::Prefix& prefix, bool add_path,
                     std::span<const RibEntry> entries) {
  assert(entries.size() <= kMaxRibEntries);
  const bool v4 = prefix.afi() == net::Afi::kIpv4;
  const uint16_t subtype = v4 ? (add_path ? kRibIpv4UnicastAddPath : kRibIpv4Unicast)
                              : (add_path ? kRibIpv6UnicastAddPath : kRibIpv6Unicast);
  wire::ByteWriter w(out);
  const size_t start = out.size();
  PutHeader(w, timestamp, kTypeTableDumpV2, subtype, 0);
  // RFC 6396 §4.3.2: Sequence Number, Prefix Length, Prefix (only the octets the length
  // covers), Entry Count, then the entries.
  w.U32(sequence);
  w.U8(prefix.length());
  w.Append(prefix.bytes(), (prefix.length() + 7u) / 8u);
  w.U16(static_cast<uint16_t>(entries.size()));
  for (const RibEntry& e : entries) {
    // RFC 6396 §4.3.4; RFC 8050 §4.1 puts the Path Identifier after the Originated Time.
    assert(e.attributes.size() <= 65535);
    w.U16(e.peer_index);
    w.U32(e.originated_time);
    if (add_path) w.U32(e.path_id);
    w.U16(static_cast<uint16_t>(e.attributes.size()));
    w.Append(e.attributes);
  }
  PatchU32(out, start + 8, static_cast<uint32_t>(out.size() - start - kHeaderSize));
}

bool AppendMrtAttributes(ByteSpan in, Bytes& out) {
  const size_t restore = out.size();
  size_t i = 0;
  while (i < in.size()) {
    if (in.size() - i < 3) break;
    const uint8_t flags = in[i], type = in[i + 1];
    const bool ext = flags & kAttrExtendedLength;
    const size_t header = ext ? 4 : 3;
    if (in.size() - i < header) break;
    const size_t len = ext ? (size_t{in[i + 2]} << 8 | in[i + 3]) : in[i + 2];
    if (in.size() - i - header < len) break;
    const uint8_t* value = in.data() + i + header;
    if (type == kAttrMpUnreach) {
      // Not part of a RIB entry.
    } else if (type == kAttrMpReach) {
      // RFC 4760 §3: AFI (2), SAFI (1), Next Hop Length (1), Next Hop, Reserved (1), NLRI.
      // RFC 6396 §4.3.4: only Next Hop Length and Next Hop are kept.
      if (len < 4 || len - 4 < value[3]) {
        out.resize(restore);
        return false;
      }
      const uint8_t nh_len = value[3];
      out.push_back(static_cast<uint8_t>(flags & ~kAttrExtendedLength));
      out.push_back(type);
      out.push_back(static_cast<uint8_t>(1 + nh_len));
      out.push_back(nh_len);
      out.insert(out.end(), value + 4, value + 4 + nh_len);
    } else {
      out.insert(out.end(), in.data() + i, value + len);
    }
    i += header + len;
  }
  if (i != in.size()) {
    out.resize(restore);
    return false;
  }
  return true;
}

void AppendBgp4mpStateChange(Bytes& out, const StateChange& s) {
  wire::ByteWriter w(out);
  const size_t start = out.size();
  const int64_t secs = s.unix_micros / 1000000;
  PutHeader(w, static_cast<uint32_t>(secs), kTypeBgp4mpEt, kBgp4mpStateChangeAs4, 0);
  w.U32(static_cast<uint32_t>(s.unix_micros - secs * 1000000));
  // RFC 6396 §4.4.4 (and §4.4.1's fields): Peer AS, Local AS, Interface Index, Address
  // Family, Peer IP, Local IP, Old State, New State.
  w.U32(s.peer_as);
  w.U32(s.local_as);
  w.U16(0);
  w.U16(s.peer_address.is_v6() ? 2 : 1);
  PutAddress(w, s.peer_address);
  if (s.local_address.afi() == s.peer_address.afi()) {
    PutAddress(w, s.local_address);
  } else {
    for (size_t k = 0; k < s.peer_address.size(); ++k) w.U8(0);
  }
  w.U16(s.old_state);
  w.U16(s.new_state);
  PatchU32(out, start + 8, static_cast<uint32_t>(out.size() - start - kHeaderSize));
}

void AppendBgp4mpMessage(Bytes& out, const ReceivedMessage& m) {
  const bool v6 = m.peer_address.is_v6();
  const uint16_t subtype = m.four_octet_as ? (m.add_path ? kBgp4mpMessageAs4AddPath : kBgp4mpMessageAs4)
                                           : (m.add_path ? kBgp4mpMessageAddPath : kBgp4mpMessage);
  wire::ByteWriter w(out);
  const size_t start = out.size();
  const int64_t secs = m.unix_micros / 1000000;
  PutHeader(w, static_cast<uint32_t>(secs), kTypeBgp4mpEt, subtype, 0);
  w.U32(static_cast<uint32_t>(m.unix_micros - secs * 1000000));
  // RFC 6396 §4.4.2 / §4.4.3: Peer AS, Local AS, Interface Index, Address Family, Peer IP,
  // Local IP, BGP Message.
  auto as2 = [](uint32_t as) { return static_cast<uint16_t>(as > 0xffff ? kAsTrans : as); };
  if (m.four_octet_as) {
    w.U32(m.peer_as);
    w.U32(m.local_as);
  } else {
    w.U16(as2(m.peer_as));
    w.U16(as2(m.local_as));
  }
  w.U16(0);
  w.U16(v6 ? 2 : 1);
  PutAddress(w, m.peer_address);
  if (m.local_address.afi() == m.peer_address.afi()) {
    PutAddress(w, m.local_address);
  } else {
    for (size_t k = 0; k < m.peer_address.size(); ++k) w.U8(0);  // unknown: zeros of the peer's family
  }
  w.Append(m.message);
  PatchU32(out, start + 8, static_cast<uint32_t>(out.size() - start - kHeaderSize));
}

}  // namespace bagd::mrt
