// OPEN checks (RFC 4271 §6.2) and capability negotiation (RFC 5492 and the capability
// RFCs): one pure function from our settings and the peer's OPEN to what was agreed,
// or the NOTIFICATION to send.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <variant>

#include "bgpd/wire/message.h"

namespace bagd::fsm {

// What we offer a peer, from config.
struct LocalSettings {
  uint32_t local_as = 0;
  uint32_t router_id = 0;       // host order
  uint32_t remote_as = 0;       // expected peer AS
  uint16_t hold_time = 90;      // 0 or >= 3
  uint16_t keepalive = 0;       // 0: hold/3
  std::array<bool, wire::kFamilyCount> families{true, false};
  std::array<bool, wire::kFamilyCount> add_path_receive{};
  std::array<bool, wire::kFamilyCount> add_path_send{};
  bool extended_message = true;
  bool route_refresh = true;
  bool graceful_restart = false;
  uint16_t graceful_restart_time = 120;
  std::string hostname;  // FQDN capability when non-empty

  bool ibgp() const { return local_as == remote_as; }
  friend bool operator==(const LocalSettings&, const LocalSettings&) = default;
};

// What both sides agreed on.
struct Negotiated {
  uint32_t peer_as = 0;
  uint32_t peer_router_id = 0;
  uint16_t hold_time = 0;  // seconds; 0 = no keepalives, no hold timer
  uint16_t keepalive = 0;  // seconds
  bool four_octet_as = false;
  bool extended_message = false;
  bool route_refresh = false;
  bool enhanced_route_refresh = false;
  bool graceful_restart = false;
  std::array<bool, wire::kFamilyCount> families{};
  std::array<bool, wire::kFamilyCount> add_path_receive{};  // peer sends path ids to us
  std::array<bool, wire::kFamilyCount> add_path_send{};     // we send path ids
  std::array<bool, wire::kFamilyCount> extended_nexthop{};  // peer may send IPv6 next hops for the family
  std::string peer_hostname;

  // Codec contexts for the two directions.
  wire::CodecContext DecodeContext(bool ebgp) const;
  wire::CodecContext EncodeContext(bool ebgp) const;
};

// Our OPEN for these settings.
wire::OpenMessage BuildOpen(const LocalSettings& local);

// RFC 4271 §6.2 checks and the intersection of capabilities.
std::variant<Negotiated, wire::NotificationMessage> Negotiate(const LocalSettings& local,
                                                              const wire::OpenMessage& peer);

// RFC 4271 §6.8: which connection survives a collision. The connection initiated by the
// speaker with the higher BGP Identifier is kept. True if our outbound connection wins.
bool OutboundWinsCollision(uint32_t local_router_id, uint32_t peer_router_id);

}  // namespace bagd::fsm
