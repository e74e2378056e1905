// BMP (RFC 7854) messages as values in, octets out: the pure encoders of bagd's BMP
// client (design.md rule 1: no sockets, no clock, no logging). RFC 8671 adds the O flag
// (Adj-RIB-Out), RFC 9069 the Loc-RIB instance peer (type 3), its F flag, the VRF/Table
// Name TLV and Peer Down reason 6. The BGP PDUs inside (UPDATE, OPEN, NOTIFICATION) come
// from wire/ already encoded; these functions frame them.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "net/ip_prefix.h"
#include "wire/byte_io.h"
#include "wire/link_bandwidth.h"

namespace bagd::bmp {

using wire::ByteSpan;
using wire::Bytes;

inline constexpr uint8_t kVersion = 3;  // RFC 7854 §4.1
inline constexpr size_t kCommonHeaderSize = 6;
inline constexpr size_t kPerPeerHeaderSize = 42;

// RFC 7854 §4.1 (and §10.1's registry).
enum class MessageType : uint8_t {
  kRouteMonitoring = 0,
  kStatisticsReport = 1,
  kPeerDown = 2,
  kPeerUp = 3,
  kInitiation = 4,
  kTermination = 5,
  kRouteMirroring = 6,
};

// RFC 7854 §4.2; 3 from RFC 9069 §4.1.
enum class PeerType : uint8_t { kGlobal = 0, kRdInstance = 1, kLocalInstance = 2, kLocRib = 3 };

// Per-peer header flags (RFC 7854 §4.2, RFC 8671 §4). For peer type 3 the only flag is F
// (RFC 9069 §4.2), the same bit as V.
namespace peer_flag {
inline constexpr uint8_t kIpv6 = 0x80;        // V: the peer address is IPv6
inline constexpr uint8_t kPostPolicy = 0x40;  // L: after policy
inline constexpr uint8_t kTwoOctetAs = 0x20;  // A: the AS_PATH in the PDU has 2-octet ASNs
inline constexpr uint8_t kAdjRibOut = 0x10;   // O: Adj-RIB-Out (RFC 8671)
inline constexpr uint8_t kFiltered = 0x80;    // F (Loc-RIB only): the table is filtered
}  // namespace peer_flag

struct PerPeerHeader {
  PeerType type = PeerType::kGlobal;
  uint8_t flags = 0;  // peer_flag; V is set from `address` for non-Loc-RIB peers
  uint64_t distinguisher = 0;
  std::optional<net::IpAddress> address;  // none: all zero (a Loc-RIB instance)
  uint32_t as = 0;
  uint32_t bgp_id = 0;  // host order
  uint32_t seconds = 0;
  uint32_t microseconds = 0;
};

// Information TLVs (RFC 7854 §4.4): in Initiation and Peer Up.
namespace info_type {
inline constexpr uint16_t kString = 0;
inline constexpr uint16_t kSysDescr = 1;
inline constexpr uint16_t kSysName = 2;
inline constexpr uint16_t kTableName = 3;  // RFC 9069 §5.1: VRF/Table Name (Peer Up)
}  // namespace info_type

struct InfoTlv {
  uint16_t type = 0;
  std::string value;
};

// Peer Down reasons (RFC 7854 §4.9; 6 from RFC 9069 §5.3).
enum class PeerDownReason : uint8_t {
  kLocalNotification = 1,    // a NOTIFICATION PDU follows
  kLocalNoNotification = 2,  // a 2-octet FSM event code follows
  kRemoteNotification = 3,   // a NOTIFICATION PDU follows
  kRemoteNoData = 4,
  kDeconfigured = 5,
  kLocalTlv = 6,  // Loc-RIB instance closed: TLVs follow
};

// Termination reasons (RFC 7854 §4.5, type 1 TLV).
enum class TerminationReason : uint16_t {
  kAdminClose = 0,
  kUnspecified = 1,
  kOutOfResources = 2,
  kRedundantConnection = 3,
  kPermanentAdminClose = 4,
};

// Statistics types (RFC 7854 §4.8, RFC 8671 §5 adds 14-17).
namespace stat_type {
inline constexpr uint16_t kRejectedPrefixes = 0;       // 32-bit counter
inline constexpr uint16_t kDuplicatePrefixes = 1;      // 32-bit counter
inline constexpr uint16_t kDuplicateWithdraws = 2;     // 32-bit counter
inline constexpr uint16_t kAsPathLoop = 4;             // 32-bit counter
inline constexpr uint16_t kAdjRibInRoutes = 7;         // 64-bit gauge
inline constexpr uint16_t kLocRibRoutes = 8;           // 64-bit gauge
inline constexpr uint16_t kAdjRibInRoutesPerAfi = 9;   // AFI, SAFI, 64-bit gauge
inline constexpr uint16_t kLocRibRoutesPerAfi = 10;    // AFI, SAFI, 64-bit gauge
inline constexpr uint16_t kTreatAsWithdrawUpdates = 11;  // 32-bit counter
inline constexpr uint16_t kAdjRibOutPostRoutes = 15;     // 64-bit gauge (RFC 8671)
}  // namespace stat_type

// One statistic: a 32-bit counter, a 64-bit gauge, or a 64-bit gauge for one AFI/SAFI.
struct Stat {
  enum class Kind { kCounter32, kGauge64, kAfiSafiGauge64 } kind = Kind::kCounter32;
  uint16_t type = 0;
  uint64_t value = 0;
  uint16_t afi = 0;
  uint8_t safi = 0;
  static Stat Counter(uint16_t type, uint32_t v) { return {Kind::kCounter32, type, v, 0, 0}; }
  static Stat Gauge(uint16_t type, uint64_t v) { return {Kind::kGauge64, type, v, 0, 0}; }
  static Stat AfiGauge(uint16_t type, uint16_t afi, uint8_t safi, uint64_t v) {
    return {Kind::kAfiSafiGauge64, type, v, afi, safi};
  }
};

// Common header (§4.1) prepended to `body`, the whole message returned.
Bytes Frame(MessageType type, ByteSpan body);
// The per-peer header (§4.2) appended to `out`.
void AppendPerPeerHeader(Bytes& out, const PerPeerHeader& h);

// §4.3: Initiation with sysDescr and sysName (the RFC requires both), then `extra`.
Bytes EncodeInitiation(std::string_view sys_name, std::string_view sys_descr, std::span<const InfoTlv> extra = {});
// §4.5: Termination with a reason and an optional string.
Bytes EncodeTermination(TerminationReason reason, std::string_view text = {});
// §4.10: Peer Up. `local_address` of the session (none: zero, as for a Loc-RIB instance),
// its ports, the OPEN we sent and the one we received (whole BGP messages).
Bytes EncodePeerUp(const PerPeerHeader& h, const std::optional<net::IpAddress>& local_address, uint16_t local_port,
                   uint16_t remote_port, ByteSpan sent_open, ByteSpan received_open, std::span<const InfoTlv> tlvs = {});
// §4.9: Peer Down. `data`: the NOTIFICATION message for reasons 1 and 3, the FSM event
// code (2 octets) for 2, TLVs for 6 (use EncodePeerDownTlv), nothing otherwise.
Bytes EncodePeerDown(const PerPeerHeader& h, PeerDownReason reason, ByteSpan data = {});
Bytes EncodePeerDownFsmEvent(const PerPeerHeader& h, uint16_t fsm_event);
Bytes EncodePeerDownTlv(const PerPeerHeader& h, std::span<const InfoTlv> tlvs);
// §4.6: Route Monitoring: the per-peer header and one whole BGP UPDATE message.
Bytes EncodeRouteMonitoring(const PerPeerHeader& h, ByteSpan update);
// The same appended to `out` (the station's buffer), without a copy of the UPDATE.
void AppendRouteMonitoring(Bytes& out, const PerPeerHeader& h, ByteSpan update);
// §4.8: Statistics Report.
Bytes EncodeStatisticsReport(const PerPeerHeader& h, std::span<const Stat> stats);

// bagd's applied bandwidth on a Loc-RIB member (docs/bmp.md): a non-transitive link-bandwidth
// extended community (type 0x40, sub-type 0x04, RFC 10005's encoding) with bagd's AS (AS_TRANS
// above 65535) and the bandwidth the weights stage applied to the member, in octets per
// second as an IEEE float. Added beside the neighbor's own community, never replacing it.
wire::ExtendedCommunity AppliedBandwidthCommunity(uint32_t local_as, double bits_per_second);

// What a station needs to know of a BMP message's framing (tests, the stress tool):
// the type and whole length of the message at the front of `buffered`, if it is all there.
struct FrameInfo {
  uint8_t version = 0;
  MessageType type = MessageType::kRouteMonitoring;
  uint32_t length = 0;
};
std::optional<FrameInfo> PeekFrame(ByteSpan buffered);

}  // namespace bagd::bmp
