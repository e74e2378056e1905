// MRT records (RFC 6396, with the ADD-PATH variants of RFC 8050) as pure encoders: values
// in, bytes out. No files, no clocks, no RIB: the table dump (mrt/rib_dump.h) and the
// daemon's writers call these.
//
// What is written:
// - TABLE_DUMP_V2 (type 13, RFC 6396 §4.3): PEER_INDEX_TABLE (subtype 1), then one
//   RIB_IPV4_UNICAST (2) / RIB_IPV6_UNICAST (4) record per prefix with every path, or
//   RIB_IPV4_UNICAST_ADDPATH (8) / RIB_IPV6_UNICAST_ADDPATH (10) (RFC 8050 §4) when a path
//   of the prefix came with an ADD-PATH path identifier.
// - BGP4MP_ET (type 17, RFC 6396 §4.4 with the extended timestamp of §3): BGP4MP_MESSAGE_AS4
//   (4) / BGP4MP_MESSAGE (1) for a received message, BGP4MP_MESSAGE_AS4_ADDPATH (9) /
//   BGP4MP_MESSAGE_ADDPATH (8) (RFC 8050 §3) when the session negotiated ADD-PATH receive;
//   BGP4MP_STATE_CHANGE_AS4 (5) when a session changes state.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "net/ip_prefix.h"
#include "wire/byte_io.h"

namespace bagd::mrt {

using wire::ByteSpan;
using wire::Bytes;

// RFC 6396 §4 (types), §4.3 and §4.4 (subtypes); RFC 8050 §3 and §4 (ADD-PATH subtypes).
inline constexpr uint16_t kTypeTableDumpV2 = 13;
inline constexpr uint16_t kTypeBgp4mp = 16;
inline constexpr uint16_t kTypeBgp4mpEt = 17;

inline constexpr uint16_t kPeerIndexTable = 1;
inline constexpr uint16_t kRibIpv4Unicast = 2;
inline constexpr uint16_t kRibIpv6Unicast = 4;
inline constexpr uint16_t kRibIpv4UnicastAddPath = 8;
inline constexpr uint16_t kRibIpv6UnicastAddPath = 10;

inline constexpr uint16_t kBgp4mpMessage = 1;
inline constexpr uint16_t kBgp4mpMessageAs4 = 4;
inline constexpr uint16_t kBgp4mpStateChangeAs4 = 5;
inline constexpr uint16_t kBgp4mpMessageAddPath = 8;
inline constexpr uint16_t kBgp4mpMessageAs4AddPath = 9;

// RFC 6396 §2: Timestamp (4), Type (2), Subtype (2), Length (4) = 12 octets; §3: the
// extended header adds a Microsecond Timestamp (4) that IS counted in Length.
inline constexpr size_t kHeaderSize = 12;
inline constexpr size_t kEtHeaderSize = 16;
inline constexpr uint16_t kAsTrans = 23456;  // RFC 6793 §9

// The most entries one RIB record can hold: Entry Count is 2 octets (RFC 6396 §4.3.2).
inline constexpr size_t kMaxRibEntries = 65535;

// One peer of the PEER_INDEX_TABLE (RFC 6396 §4.3.1). bagd always writes the AS as 4 octets
// (Peer Type bit 1), and the address as IPv4 or IPv6 by its family (bit 0).
struct IndexedPeer {
  uint32_t bgp_id = 0;  // host order
  net::IpAddress address;
  uint32_t asn = 0;
};

// A whole PEER_INDEX_TABLE record (header included).
void AppendPeerIndexTable(Bytes& out, uint32_t timestamp, uint32_t collector_bgp_id, std::string_view view_name,
                          std::span<const IndexedPeer> peers);

// One path of a RIB record (RFC 6396 §4.3.4). `attributes`: already in the MRT form
// (MrtAttributes below). `path_id` is written only in an ADD-PATH record.
struct RibEntry {
  uint16_t peer_index = 0;
  uint32_t originated_time = 0;
  uint32_t path_id = 0;
  ByteSpan attributes;
};

// A whole RIB_IPV4_UNICAST / RIB_IPV6_UNICAST record (or the _ADDPATH subtype when
// `add_path`), the family from the prefix. At most kMaxRibEntries entries (asserted).
void AppendRibRecord(Bytes& out, uint32_t timestamp, uint32_t sequence, const net::Prefix& prefix, bool add_path,
                     std::span<const RibEntry> entries);

// The path attributes of a RIB entry from their BGP encoding (4-octet AS, as the RIB's
// attribute store keeps them): every attribute as it is, except MP_REACH_NLRI, which RFC 6396
// §4.3.4 abbreviates to its Next Hop Length and Next Hop (no AFI, SAFI, reserved octet or
// NLRI), and MP_UNREACH_NLRI, which has no place in a RIB entry and is left out. Appends to
// `out`; false (and `out` as it was) on an attribute that runs past the end.
bool AppendMrtAttributes(ByteSpan bgp_attributes, Bytes& out);

// A received BGP message as one BGP4MP_ET record.
struct ReceivedMessage {
  int64_t unix_micros = 0;  // when it was received
  uint32_t peer_as = 0;
  uint32_t local_as = 0;
  net::IpAddress peer_address;
  net::IpAddress local_address;  // the same family as peer_address
  bool four_octet_as = true;     // the session negotiated 4-octet AS (RFC 6793)
  bool add_path = false;         // the session receives ADD-PATH path identifiers (RFC 7911)
  ByteSpan message;              // the whole BGP message, marker included
};

// Subtype: MESSAGE_AS4 on a 4-octet-AS session (the AS_PATH inside is 4-octet, as readers
// assume for this subtype), MESSAGE with the ASes as 2 octets (AS_TRANS for a larger one)
// otherwise; the ADDPATH variant of either when `add_path`. Interface index 0.
void AppendBgp4mpMessage(Bytes& out, const ReceivedMessage& m);

// A session's state change as one BGP4MP_ET STATE_CHANGE_AS4 record (RFC 6396 §4.4.4): the
// ASes as 4 octets, interface index 0, the states as RFC 6396 numbers them (1 Idle, 2 Connect,
// 3 Active, 4 OpenSent, 5 OpenConfirm, 6 Established).
struct StateChange {
  int64_t unix_micros = 0;
  uint32_t peer_as = 0;
  uint32_t local_as = 0;
  net::IpAddress peer_address;
  net::IpAddress local_address;  // the same family as peer_address (zeros when unknown)
  uint16_t old_state = 1;
  uint16_t new_state = 1;
};
void AppendBgp4mpStateChange(Bytes& out, const StateChange& s);

}  // namespace bagd::mrt
