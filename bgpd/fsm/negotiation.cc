#include "bgpd/fsm/negotiation.h"

#include <algorithm>

namespace bagd::fsm {

using wire::AddPathCap;
using net::Family;
using wire::NotificationMessage;

namespace {

constexpr net::Family kFamilies[] = {net::Family::kIpv4Unicast, net::Family::kIpv6Unicast};

uint16_t AfiOf(net::Family f) { return static_cast<uint16_t>(net::FamilyAfi(f)); }
int Idx(net::Family f) { return static_cast<int>(f); }

NotificationMessage OpenError(uint8_t subcode, wire::Bytes data = {}) {
  return NotificationMessage{static_cast<uint8_t>(wire::ErrorCode::kOpenMessage), subcode, std::move(data)};
}

}  // namespace

wire::CodecContext Negotiated::DecodeContext(bool ebgp) const {
  wire::CodecContext c;
  c.four_octet_as = four_octet_as;
  c.extended_message = extended_message;
  c.add_path = add_path_receive;
  c.ebgp = ebgp;
  return c;
}

wire::CodecContext Negotiated::EncodeContext(bool ebgp) const {
  wire::CodecContext c = DecodeContext(ebgp);
  c.add_path = add_path_send;
  return c;
}

wire::OpenMessage BuildOpen(const LocalSettings& local, const RestartState& restart) {
  wire::OpenMessage m;
  m.my_as = static_cast<uint16_t>(local.local_as > 0xffff ? wire::kAsTrans : local.local_as);
  m.hold_time = local.hold_time;
  m.bgp_id = local.router_id;
  for (net::Family f : kFamilies) {
    if (local.families[Idx(f)]) m.capabilities.push_back(wire::MultiprotocolCap{AfiOf(f), 1});
  }
  if (local.route_refresh) {
    m.capabilities.push_back(wire::RouteRefreshCap{});
    m.capabilities.push_back(wire::EnhancedRouteRefreshCap{});
  }
  if (local.extended_message) m.capabilities.push_back(wire::ExtendedMessageCap{});
  m.capabilities.push_back(wire::FourOctetAsCap{local.local_as});
  AddPathCap ap;
  for (net::Family f : kFamilies) {
    const uint8_t dir = (local.add_path_receive[Idx(f)] ? AddPathCap::kReceive : 0) |
                        (local.add_path_send[Idx(f)] ? AddPathCap::kSend : 0);
    if (dir && local.families[Idx(f)]) ap.families.push_back({AfiOf(f), 1, dir});
  }
  if (!ap.families.empty()) m.capabilities.push_back(ap);
  if (local.graceful_restart) {
    wire::GracefulRestartCap gr;
    gr.restart_time = local.graceful_restart_time;
    // Restart time 0 and no families: "I send and understand End-of-RIB" (RFC 4724 §3),
    // without asking the peer to keep our routes when the session drops.
    if (local.graceful_restart_time > 0) {
      for (net::Family f : kFamilies) {
        if (local.families[Idx(f)] && local.graceful_restart_families[Idx(f)])
          gr.families.push_back({AfiOf(f), 1, restart.forwarding_preserved[Idx(f)]});
      }
    }
    // §4.1: R after our restart, so that the peer sends its routes without waiting for our
    // End-of-RIB (we wait for its). Meaningless without families: not set then.
    gr.restart_state = restart.restarting && !gr.families.empty();
    // RFC 8538 §2: N, a NOTIFICATION (but Cease / Hard Reset) ends the session as a restart
    // too, when the peer sets it as well. Only with families: otherwise nothing is kept.
    gr.notification = !gr.families.empty();
    m.capabilities.push_back(gr);
  }
  if (!local.hostname.empty()) m.capabilities.push_back(wire::FqdnCap{local.hostname, ""});
  return m;
}

std::variant<Negotiated, NotificationMessage> Negotiate(const LocalSettings& local, const wire::OpenMessage& peer) {
  Negotiated n;
  const auto* as4 = peer.Find<wire::FourOctetAsCap>();
  n.four_octet_as = as4 != nullptr;
  n.peer_as = peer.AsNumber();
  // RFC 4271 §6.2 / RFC 6793 §4.1: the AS the peer says it is must be the configured one.
  if (local.remote_as != 0 && n.peer_as != local.remote_as) {
    return OpenError(wire::open_error::kBadPeerAs);
  }
  // RFC 6286 §2.2: zero is never valid; an internal peer may not share our identifier.
  n.peer_router_id = peer.bgp_id;
  if (peer.bgp_id == 0 || (local.ibgp() && peer.bgp_id == local.router_id)) {
    const uint32_t id = peer.bgp_id;
    return OpenError(wire::open_error::kBadBgpIdentifier,
                     {uint8_t(id >> 24), uint8_t(id >> 16), uint8_t(id >> 8), uint8_t(id)});
  }
  // RFC 4271 §4.2: hold time 0, or at least 3 seconds.
  if (peer.hold_time == 1 || peer.hold_time == 2) {
    return OpenError(wire::open_error::kUnacceptableHoldTime);
  }
  n.hold_time = std::min(local.hold_time, peer.hold_time);
  n.keepalive = n.hold_time == 0 ? 0 : static_cast<uint16_t>(n.hold_time / 3);
  if (local.keepalive != 0 && n.hold_time != 0) n.keepalive = std::min(n.keepalive, local.keepalive);
  if (n.hold_time != 0 && n.keepalive == 0) n.keepalive = 1;

  // Families: without any MP capability, the peer speaks IPv4 unicast only (RFC 4760 §8).
  std::array<bool, net::kFamilyCount> peer_families{};
  bool any_mp = false;
  for (const auto& c : peer.capabilities) {
    if (const auto* mp = std::get_if<wire::MultiprotocolCap>(&c)) {
      any_mp = true;
      if (auto f = net::FamilyFromAfiSafi(mp->afi, mp->safi)) peer_families[Idx(*f)] = true;
    } else if (std::holds_alternative<wire::RouteRefreshCap>(c)) {
      n.route_refresh = local.route_refresh;
    } else if (std::holds_alternative<wire::EnhancedRouteRefreshCap>(c)) {
      n.enhanced_route_refresh = local.route_refresh;
    } else if (std::holds_alternative<wire::ExtendedMessageCap>(c)) {
      n.extended_message = local.extended_message;
    } else if (const auto* gr = std::get_if<wire::GracefulRestartCap>(&c)) {
      n.graceful_restart = local.graceful_restart;
      PeerGracefulRestart& p = n.peer_graceful_restart;
      p.offered = true;
      p.restart_state = gr->restart_state;
      p.notification = gr->notification;
      p.restart_time = gr->restart_time;
      for (const auto& e : gr->families) {
        if (auto f = net::FamilyFromAfiSafi(e.afi, e.safi)) {
          p.families[Idx(*f)] = true;
          p.forwarding_preserved[Idx(*f)] = e.forwarding_preserved;
        }
      }
    } else if (const auto* fq = std::get_if<wire::FqdnCap>(&c)) {
      n.peer_hostname = fq->hostname;
    } else if (const auto* enh = std::get_if<wire::ExtendedNextHopCap>(&c)) {
      for (const auto& e : enh->entries) {
        if (e.nexthop_afi == 2 && e.nlri_safi == 1 && e.nlri_afi == 1) n.extended_nexthop[0] = true;
      }
    }
  }
  if (!any_mp) peer_families[Idx(net::Family::kIpv4Unicast)] = true;
  bool any_common = false;
  for (net::Family f : kFamilies) {
    n.families[Idx(f)] = local.families[Idx(f)] && peer_families[Idx(f)];
    any_common |= n.families[Idx(f)];
  }
  if (!any_common) {
    // RFC 5492 §3: tell the peer which capability we could not do without.
    wire::Bytes data;
    for (net::Family f : kFamilies) {
      if (!local.families[Idx(f)]) continue;
      data.insert(data.end(), {1, 4, 0, static_cast<uint8_t>(AfiOf(f)), 0, 1});
    }
    return OpenError(wire::open_error::kUnsupportedCapability, std::move(data));
  }
  // RFC 4724 §4.2: we keep the peer's paths across its restart in the families it listed
  // with a restart time, when we list them too (our helper role is on for them).
  if (local.graceful_restart && local.graceful_restart_time > 0 && n.peer_graceful_restart.restart_time > 0) {
    for (net::Family f : kFamilies) {
      n.graceful_restart_retain[Idx(f)] = n.families[Idx(f)] && local.graceful_restart_families[Idx(f)] &&
                                          n.peer_graceful_restart.families[Idx(f)];
    }
  }
  if (const auto* ap = peer.Find<AddPathCap>()) {
    for (const auto& e : ap->families) {
      auto f = net::FamilyFromAfiSafi(e.afi, e.safi);
      if (!f || !n.families[Idx(*f)]) continue;
      // RFC 7911 §4: we receive path ids when we asked to receive and the peer can send.
      n.add_path_receive[Idx(*f)] = local.add_path_receive[Idx(*f)] && (e.direction & AddPathCap::kSend);
      n.add_path_send[Idx(*f)] = local.add_path_send[Idx(*f)] && (e.direction & AddPathCap::kReceive);
    }
  }
  return n;
}

bool OutboundWinsCollision(uint32_t local_router_id, uint32_t peer_router_id) {
  // RFC 4271 §6.8: compare as host-order integers; the higher identifier's connection wins.
  return local_router_id > peer_router_id;
}

}  // namespace bagd::fsm
