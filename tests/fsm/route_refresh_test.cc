// What a received ROUTE-REFRESH asks for (RFC 2918, RFC 7313), row by row.
#include <catch2/catch.hpp>

#include "bgpd/fsm/route_refresh.h"

using namespace bagd;
using namespace bagd::fsm;
namespace subtype = bagd::wire::route_refresh_subtype;

namespace {

LocalSettings Local() {
  LocalSettings l;
  l.route_refresh = true;
  l.graceful_restart = true;
  return l;
}

// IPv4 unicast only, route refresh and enhanced route refresh, graceful restart.
Negotiated Session() {
  Negotiated n;
  n.families = {true, false};
  n.route_refresh = true;
  n.enhanced_route_refresh = true;
  n.graceful_restart = true;
  return n;
}

// End-of-RIB received for IPv4, no refresh in progress.
InboundRefreshState AfterEndOfRib() {
  InboundRefreshState s;
  s.end_of_rib = {true, false};
  return s;
}

RefreshAction Classify(const wire::RouteRefreshMessage& m, const Negotiated& n = Session(),
                       const InboundRefreshState& s = AfterEndOfRib(), const LocalSettings& l = Local()) {
  return ClassifyRouteRefresh(l, n, m, s);
}

}  // namespace

TEST_CASE("Route refresh: a request is answered with the Adj-RIB-Out", "[fsm][route_refresh]") {
  SECTION("with enhanced route refresh: within BoRR/EoRR (RFC 7313 §4)") {
    const RefreshAction a = Classify({1, subtype::kRequest, 1, {}});
    CHECK(a.type == RefreshActionType::kResend);
    CHECK(a.family == net::Family::kIpv4Unicast);
    CHECK(a.enhanced);
    CHECK(a.reason.empty());
  }
  SECTION("without it: plain (RFC 2918)") {
    Negotiated n = Session();
    n.enhanced_route_refresh = false;
    const RefreshAction a = Classify({1, subtype::kRequest, 1, {}}, n);
    CHECK(a.type == RefreshActionType::kResend);
    CHECK_FALSE(a.enhanced);
  }
  SECTION("before the peer's End-of-RIB: still answered (only a BoRR waits for it)") {
    const RefreshAction a = Classify({1, subtype::kRequest, 1, {}}, Session(), InboundRefreshState{});
    CHECK(a.type == RefreshActionType::kResend);
  }
  SECTION("ORF entries (not negotiated): the whole table, with a note") {
    const RefreshAction a = Classify({1, subtype::kRequest, 1, {1, 0x40, 0, 0}});
    CHECK(a.type == RefreshActionType::kResend);
    CHECK_THAT(a.reason, Catch::Contains("4 octets of ORF entries not acted on"));
  }
  SECTION("IPv6 when both negotiated it") {
    Negotiated n = Session();
    n.families = {true, true};
    const RefreshAction a = Classify({2, subtype::kRequest, 1, {}}, n);
    CHECK(a.type == RefreshActionType::kResend);
    CHECK(a.family == net::Family::kIpv6Unicast);
  }
}

TEST_CASE("Route refresh: what is ignored, and why", "[fsm][route_refresh]") {
  struct Row {
    const char* what;
    wire::RouteRefreshMessage message;
    const char* reason;
  };
  const Row rows[] = {
      // RFC 2918 §4 / RFC 7313 §5: a family not advertised at session establishment.
      {"IPv6 not negotiated", {2, subtype::kRequest, 1, {}}, "AFI 2 SAFI 1 was not negotiated on this session"},
      {"a family bagd does not route", {1, subtype::kRequest, 128, {}}, "AFI 1 SAFI 128 was not negotiated"},
      {"an unknown AFI", {25, subtype::kBorr, 70, {}}, "AFI 25 SAFI 70 was not negotiated"},
      // RFC 7313 §5: a reserved subtype, whatever else it says.
      {"subtype 3", {1, 3, 1, {}}, "reserved Message Subtype 3"},
      {"subtype 255", {1, 255, 1, {}}, "reserved Message Subtype 255"},
      {"EoRR without a BoRR", {1, subtype::kEorr, 1, {}}, "EoRR for ipv4-unicast without a BoRR before it"},
  };
  for (const Row& r : rows) {
    INFO(r.what);
    const RefreshAction a = Classify(r.message);
    CHECK(a.type == RefreshActionType::kIgnore);
    CHECK_THAT(a.reason, Catch::Contains(r.reason));
  }
  SECTION("bagd did not offer route refresh") {
    LocalSettings l = Local();
    l.route_refresh = false;
    const RefreshAction a = Classify({1, subtype::kRequest, 1, {}}, Session(), AfterEndOfRib(), l);
    CHECK(a.type == RefreshActionType::kIgnore);
    CHECK_THAT(a.reason, Catch::Contains("did not offer the Route Refresh capability"));
  }
}

TEST_CASE("Route refresh: the peer's BoRR and EoRR (RFC 7313 §4.2)", "[fsm][route_refresh]") {
  SECTION("BoRR after End-of-RIB: its paths become stale") {
    const RefreshAction a = Classify({1, subtype::kBorr, 1, {}});
    CHECK(a.type == RefreshActionType::kBeginStale);
    CHECK(a.family == net::Family::kIpv4Unicast);
    CHECK(a.reason.empty());
  }
  SECTION("BoRR before End-of-RIB with graceful restart: ignored (RFC 7313 §4)") {
    const RefreshAction a = Classify({1, subtype::kBorr, 1, {}}, Session(), InboundRefreshState{});
    CHECK(a.type == RefreshActionType::kIgnore);
    CHECK_THAT(a.reason, Catch::Contains("BoRR before the End-of-RIB for ipv4-unicast"));
  }
  SECTION("BoRR before End-of-RIB without graceful restart: taken") {
    Negotiated n = Session();
    n.graceful_restart = false;
    CHECK(Classify({1, subtype::kBorr, 1, {}}, n, InboundRefreshState{}).type == RefreshActionType::kBeginStale);
  }
  SECTION("a second BoRR starts the refresh over") {
    InboundRefreshState s = AfterEndOfRib();
    s.refreshing = {true, false};
    const RefreshAction a = Classify({1, subtype::kBorr, 1, {}}, Session(), s);
    CHECK(a.type == RefreshActionType::kBeginStale);
    CHECK_THAT(a.reason, Catch::Contains("starts over"));
  }
  SECTION("EoRR during a refresh: the stale paths go") {
    InboundRefreshState s = AfterEndOfRib();
    s.refreshing = {true, false};
    const RefreshAction a = Classify({1, subtype::kEorr, 1, {}}, Session(), s);
    CHECK(a.type == RefreshActionType::kEndStale);
    CHECK(a.family == net::Family::kIpv4Unicast);
  }
  SECTION("a refresh of one family says nothing about the other") {
    Negotiated n = Session();
    n.families = {true, true};
    InboundRefreshState s;
    s.end_of_rib = {true, true};
    s.refreshing = {true, false};
    CHECK(Classify({2, subtype::kEorr, 1, {}}, n, s).type == RefreshActionType::kIgnore);
    CHECK(Classify({1, subtype::kEorr, 1, {}}, n, s).type == RefreshActionType::kEndStale);
  }
}
