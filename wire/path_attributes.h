// Path attributes of an UPDATE as decoded values (RFC 4271 §5, RFC 4760, RFC 6793,
// RFC 4360, RFC 5701, RFC 8092, RFC 4456). AS_PATH is always held with 4-octet ASNs:
// on a 2-octet session the decoder merges AS4_PATH/AS4_AGGREGATOR (RFC 6793 §4.2.3)
// and the encoder splits them again.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "wire/byte_io.h"
#include "wire/codec_context.h"
#include "net/ip_prefix.h"
#include "wire/link_bandwidth.h"
#include "wire/rfc7606.h"

namespace bagd::wire {

enum class Origin : uint8_t { kIgp = 0, kEgp = 1, kIncomplete = 2 };
const char* OriginName(Origin o);  // "igp", "egp", "incomplete"

enum class AsSegmentType : uint8_t { kSet = 1, kSequence = 2, kConfedSequence = 3, kConfedSet = 4 };

struct AsPathSegment {
  AsSegmentType type = AsSegmentType::kSequence;
  std::vector<uint32_t> asns;
  friend bool operator==(const AsPathSegment&, const AsPathSegment&) = default;
};

struct AsPath {
  std::vector<AsPathSegment> segments;
  // RFC 4271 §9.1.2.2 (a): a SET counts as 1, confederation segments count 0 (RFC 5065 §5.3).
  size_t Length() const;
  // Left-most AS of the first AS_SEQUENCE (the neighbor AS for MED comparison), 0 if none.
  uint32_t FirstAs() const;
  bool Contains(uint32_t asn) const;
  std::string ToString() const;  // "65001 65002 {65003,65004} (65010)"
  friend bool operator==(const AsPath&, const AsPath&) = default;
};

struct Aggregator {
  uint32_t asn = 0;
  net::IpAddress address;  // IPv4
  friend bool operator==(const Aggregator&, const Aggregator&) = default;
};

// MP_REACH_NLRI for a family bagd routes. next_hop is IPv6 for IPv6 NLRI, and IPv4 or
// IPv6 (RFC 8950) for IPv4 NLRI; link_local is the second half of a 32-byte next hop.
struct MpReach {
  net::Family family = net::Family::kIpv6Unicast;
  net::IpAddress next_hop;
  std::optional<net::IpAddress> link_local;
  std::vector<net::Nlri> nlri;
  friend bool operator==(const MpReach&, const MpReach&) = default;
};

struct MpUnreach {
  net::Family family = net::Family::kIpv6Unicast;
  std::vector<net::Nlri> withdrawn;
  friend bool operator==(const MpUnreach&, const MpUnreach&) = default;
};

// An attribute bagd does not interpret: unknown types, and MP attributes of families
// bagd does not route. Optional transitive ones are passed on with the Partial bit set.
struct UnknownAttribute {
  uint8_t flags = 0;
  uint8_t type = 0;
  Bytes value;
  friend bool operator==(const UnknownAttribute&, const UnknownAttribute&) = default;
};

struct PathAttributes {
  std::optional<Origin> origin;
  std::optional<AsPath> as_path;
  std::optional<net::IpAddress> next_hop;  // IPv4 NEXT_HOP attribute
  std::optional<uint32_t> med;
  std::optional<uint32_t> local_pref;
  bool atomic_aggregate = false;
  std::optional<Aggregator> aggregator;
  std::vector<uint32_t> communities;
  std::optional<uint32_t> originator_id;
  std::vector<uint32_t> cluster_list;
  std::optional<MpReach> mp_reach;
  std::optional<MpUnreach> mp_unreach;
  std::vector<ExtendedCommunity> extended_communities;
  std::vector<Ipv6ExtendedCommunity> ipv6_extended_communities;
  std::vector<LargeCommunity> large_communities;
  std::vector<UnknownAttribute> unknown;

  // Convenience: the RFC 10005 selection over extended_communities.
  LinkBandwidthSelection SelectedLinkBandwidth() const { return SelectLinkBandwidth(extended_communities); }
  // RFC 10005 §7.1: replace every LB community with `lb` (or just remove them if nullopt).
  void ReplaceLinkBandwidth(std::optional<wire::LinkBandwidth> lb);

  friend bool operator==(const PathAttributes&, const PathAttributes&) = default;
};

// Result of decoding the path attribute field of one UPDATE.
struct AttributeDecodeResult {
  PathAttributes attrs;
  std::vector<AttributeError> errors;
  ErrorAction action = ErrorAction::kNone;
  std::optional<net::Family> disabled_family;  // for kAfiSafiDisable
  // Set when action is kSessionReset: the NOTIFICATION to send.
  uint8_t notify_subcode = 0;
  Bytes notify_data;
};

// Decodes the Path Attributes field (RFC 4271 §4.3) applying the RFC 7606 table.
// `has_ipv4_nlri` tells whether the NLRI field is non-empty (NEXT_HOP is then mandatory).
AttributeDecodeResult DecodePathAttributes(ByteSpan field, const CodecContext& ctx, bool has_ipv4_nlri);

// Appends the encoded attributes (ascending type order; extended length only when the value
// exceeds 255 octets). MP_REACH/MP_UNREACH are included with their NLRI.
void EncodePathAttributes(const PathAttributes& attrs, const CodecContext& ctx, Bytes& out);

// Attribute-level building blocks shared with the UPDATE packer.
void EncodeAttributeHeader(uint8_t flags, uint8_t type, size_t value_len, Bytes& out);
void EncodeNlri(const net::Nlri& n, bool add_path, Bytes& out);
inline size_t EncodedNlriSize(const net::Nlri& n, bool add_path) {
  return (add_path ? 4 : 0) + 1 + (n.prefix.length() + 7) / 8;
}
// Encodes the fixed part of MP_REACH (AFI, SAFI, next hop, reserved) into `out`.
void EncodeMpReachHeader(const MpReach& mp, Bytes& out);

// NLRI list (RFC 4271 §4.3 / RFC 4760 §5 / RFC 7911 §3). False on a malformed encoding
// (prefix length too long for the family, or truncated).
bool DecodeNlriList(ByteSpan data, net::Afi afi, bool add_path, std::vector<net::Nlri>& out);

}  // namespace bagd::wire
