// OPEN checks (RFC 4271 §6.2) and capability negotiation (RFC 5492 and the capability
// RFCs): one pure function from our settings and the peer's OPEN to what was agreed,
// or the NOTIFICATION to send.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <variant>

#include "wire/message.h"

namespace bagd::fsm {

// What we offer a peer, from config.
struct LocalSettings {
  uint32_t local_as = 0;
  uint32_t router_id = 0;       // host order
  uint32_t remote_as = 0;       // expected peer AS
  uint16_t hold_time = 90;      // 0 or >= 3
  uint16_t keepalive = 0;       // 0: hold/3
  std::array<bool, net::kFamilyCount> families{true, false};
  std::array<bool, net::kFamilyCount> add_path_receive{};
  std::array<bool, net::kFamilyCount> add_path_send{};
  bool extended_message = true;
  bool route_refresh = true;
  // The Graceful Restart capability (RFC 4724 §3) is sent when set. With a restart time of 0
  // it lists no family: End-of-RIB only, no route kept across a restart either way. With a
  // restart time, it lists `graceful_restart_families` (of `families`): the neighbor may keep
  // our routes for that long when we restart, and we keep its paths when it restarts (the
  // helper role) in the families both sides listed.
  bool graceful_restart = false;
  uint16_t graceful_restart_time = 120;
  std::array<bool, net::kFamilyCount> graceful_restart_families{};
  std::string hostname;  // FQDN capability when non-empty

  bool ibgp() const { return local_as == remote_as; }
  friend bool operator==(const LocalSettings&, const LocalSettings&) = default;
};

// Our restart as the OPEN tells it (RFC 4724 §3, §4.1): runtime state, not config; the
// speaker knows it (the FIB found bagd's routes of a previous run at start).
struct RestartState {
  bool restarting = false;  // R: we restarted; do not wait for our End-of-RIB
  // F per family: our forwarding state (the kernel routes) survived the restart.
  std::array<bool, net::kFamilyCount> forwarding_preserved{};
  friend bool operator==(const RestartState&, const RestartState&) = default;
};

// What the peer put in its Graceful Restart capability (RFC 4724 §3).
struct PeerGracefulRestart {
  bool offered = false;        // the capability was in its OPEN
  bool restart_state = false;  // R: it has restarted
  bool notification = false;   // N (RFC 8538): recorded, not acted on
  uint16_t restart_time = 0;   // seconds
  std::array<bool, net::kFamilyCount> families{};               // listed (and known to bagd)
  std::array<bool, net::kFamilyCount> forwarding_preserved{};   // F, for the listed ones
  friend bool operator==(const PeerGracefulRestart&, const PeerGracefulRestart&) = default;
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
  bool graceful_restart = false;  // both sent the capability: End-of-RIB (RFC 4724 §2)
  PeerGracefulRestart peer_graceful_restart;
  // The helper role (RFC 4724 §4.2): the families in which, when this session drops without
  // a NOTIFICATION, the peer's paths are kept as stale for its restart time. Those both
  // sides listed, negotiated, with a restart time above 0 on both sides.
  std::array<bool, net::kFamilyCount> graceful_restart_retain{};
  std::array<bool, net::kFamilyCount> families{};
  std::array<bool, net::kFamilyCount> add_path_receive{};  // peer sends path ids to us
  std::array<bool, net::kFamilyCount> add_path_send{};     // we send path ids
  std::array<bool, net::kFamilyCount> extended_nexthop{};  // peer may send IPv6 next hops for the family
  std::string peer_hostname;

  // Codec contexts for the two directions.
  wire::CodecContext DecodeContext(bool ebgp) const;
  wire::CodecContext EncodeContext(bool ebgp) const;
};

// Our OPEN for these settings; `restart` sets the R and F bits of the Graceful Restart
// capability (when it lists families).
wire::OpenMessage BuildOpen(const LocalSettings& local, const RestartState& restart = {});

// RFC 4271 §6.2 checks and the intersection of capabilities.
std::variant<Negotiated, wire::NotificationMessage> Negotiate(const LocalSettings& local,
                                                              const wire::OpenMessage& peer);

// RFC 4271 §6.8: which connection survives a collision. The connection initiated by the
// speaker with the higher BGP Identifier is kept. True if our outbound connection wins.
bool OutboundWinsCollision(uint32_t local_router_id, uint32_t peer_router_id);

}  // namespace bagd::fsm
