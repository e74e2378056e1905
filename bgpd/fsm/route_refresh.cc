#include "bgpd/fsm/route_refresh.h"

#include "absl/strings/str_cat.h"

namespace bagd::fsm {

namespace subtype = wire::route_refresh_subtype;

RefreshAction ClassifyRouteRefresh(const LocalSettings& local, const Negotiated& negotiated,
                                   const wire::RouteRefreshMessage& m, const InboundRefreshState& state) {
  RefreshAction a;
  if (m.subtype != subtype::kRequest && m.subtype != subtype::kBorr && m.subtype != subtype::kEorr) {
    a.reason = absl::StrCat("reserved Message Subtype ", int{m.subtype}, " (RFC 7313 §5: the message is ignored)");
    return a;
  }
  // RFC 2918 §4, RFC 7313 §5: a family that was not advertised at session establishment is
  // ignored (so is one bagd does not route at all).
  const auto family = net::FamilyFromAfiSafi(m.afi, m.safi);
  if (!family || !negotiated.families[static_cast<int>(*family)]) {
    a.reason = absl::StrCat("AFI ", m.afi, " SAFI ", m.safi,
                            " was not negotiated on this session (RFC 2918 §4: the message is ignored)");
    return a;
  }
  a.family = *family;
  const int f = static_cast<int>(*family);
  // bagd offers Route Refresh and Enhanced Route Refresh together (BuildOpen); a peer may
  // only send what we offered (RFC 2918 §3, RFC 7313 §3).
  if (!local.route_refresh) {
    a.reason = "bagd did not offer the Route Refresh capability on this session";
    return a;
  }
  switch (m.subtype) {
    case subtype::kRequest:
      // RFC 7313 §4: the answer is wrapped in BoRR/EoRR when both sides offered Enhanced
      // Route Refresh. We sent End-of-RIB right after the initial table, so a BoRR never
      // precedes it (RFC 7313 §4, with Graceful Restart).
      a.type = RefreshActionType::kResend;
      a.enhanced = negotiated.enhanced_route_refresh;
      if (!m.orf.empty()) {
        a.reason = absl::StrCat(m.orf.size(),
                                " octets of ORF entries not acted on (bagd does not negotiate Outbound Route "
                                "Filtering, RFC 5291): the whole Adj-RIB-Out is sent");
      }
      return a;
    case subtype::kBorr:
      // RFC 7313 §4: a speaker that received the Graceful Restart capability ignores a BoRR
      // that comes before the family's End-of-RIB.
      if (negotiated.graceful_restart && !state.end_of_rib[f]) {
        a.reason = absl::StrCat("BoRR before the End-of-RIB for ", net::FamilyName(*family),
                                " (RFC 7313 §4: ignored with Graceful Restart)");
        return a;
      }
      a.type = RefreshActionType::kBeginStale;
      // The peer began again: everything it has is stale again, it re-sends everything.
      if (state.refreshing[f]) a.reason = "BoRR while a refresh was in progress: it starts over";
      return a;
    default:  // EoRR
      if (!state.refreshing[f]) {
        a.reason = absl::StrCat("EoRR for ", net::FamilyName(*family), " without a BoRR before it");
        return a;
      }
      a.type = RefreshActionType::kEndStale;
      return a;
  }
}

}  // namespace bagd::fsm
