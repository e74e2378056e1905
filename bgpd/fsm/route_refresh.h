// What a ROUTE-REFRESH received on an Established session asks for (RFC 2918, RFC 7313):
// a pure decision from what was negotiated, the message and where the peer's own refresh
// stands; the speaker carries it out (re-sends its Adj-RIB-Out, or marks and sweeps the
// peer's stale paths).
#pragma once

#include <array>
#include <string>

#include "bgpd/fsm/negotiation.h"
#include "wire/message.h"

namespace bagd::fsm {

// Where the peer's side of route refresh stands, per family (index net::Family).
struct InboundRefreshState {
  // End-of-RIB received on this session (RFC 4724).
  std::array<bool, net::kFamilyCount> end_of_rib{};
  // A BoRR received and no EoRR yet: the peer is re-sending its routes (RFC 7313 §4.2).
  std::array<bool, net::kFamilyCount> refreshing{};
};

enum class RefreshActionType {
  kIgnore,      // nothing to do; `reason` says why (logged)
  kResend,      // re-send our Adj-RIB-Out for `family`, wrapped in BoRR/EoRR when `enhanced`
  kBeginStale,  // BoRR: the peer's paths in `family` are stale until it announces them again
  kEndStale,    // EoRR: remove the peer's paths in `family` that are still stale
};

struct RefreshAction {
  RefreshActionType type = RefreshActionType::kIgnore;
  net::Family family = net::Family::kIpv4Unicast;
  bool enhanced = false;  // kResend: Enhanced Route Refresh was negotiated (RFC 7313 §4)
  // kIgnore: why. Otherwise something worth a log line, or empty (e.g. ORF entries that
  // are not acted on, a BoRR that restarts a refresh in progress).
  std::string reason;
};

// A ROUTE-REFRESH (decoded: a length error never gets here, RFC 7313 §5 answers it with
// NOTIFICATION 7/1 from the codec) from a peer on an Established session.
RefreshAction ClassifyRouteRefresh(const LocalSettings& local, const Negotiated& negotiated,
                                   const wire::RouteRefreshMessage& message, const InboundRefreshState& state);

}  // namespace bagd::fsm
