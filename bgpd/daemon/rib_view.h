// The RIB as the control API shows it (bagctl show routes / show rib-summary).
#pragma once

#include <functional>
#include <optional>

#include "absl/status/statusor.h"
#include "bgpd/control/control.pb.h"
#include "bgpd/control/control_server.h"
#include "rib/rib.h"
#include "rib/weights/nexthop_group_registry.h"

namespace bagd::daemon {

// One page of `bagctl show routes` (ControlBackend::ListRoutesPage): the routes of
// `request` (checked by the control server) after `request.after()`, at most `max_routes`,
// fewer once the page holds 4 x max_routes paths; `more` when routes follow. A prefix or an
// address in `request` gives that one route (or none). `groups`, when given, names each
// route's next-hop group. The cost is the page's, not the table's: the walk starts at the
// cursor in the RIB's B-tree.
absl::StatusOr<control::ControlBackend::RoutesPage> ListRoutesPage(const rib::Rib& rib,
                                                                   const control::v1::ListRoutesRequest& request,
                                                                   size_t max_routes,
                                                                   const rib::NextHopGroupRegistry* groups = nullptr);
// The attributes of a path as RoutePath shows them (next hop, origin, AS path, LOCAL_PREF,
// MED, communities, link bandwidth, RFC 4456): what every route view shares. The next hop
// only `with_next_hop` (a local route has none).
void FillPathAttributes(const rib::InternedAttributes& attrs, bool with_next_hop, control::v1::RoutePath& out);
// Paths()[i] of `d`: its peer, path id, best / multipath, why it lost, and its attributes.
void FillPath(const rib::Rib& rib, const rib::Destination& d, size_t i, control::v1::RoutePath& out);
// The most specific prefix of the table covering `query` (a prefix: exactly it; an address:
// longest match); nullopt when there is none or `query` does not parse.
std::optional<net::Prefix> FindRoute(const rib::Rib& rib, const std::string& query);
// bagctl show nexthop-groups. `request` was checked by the control server.
// `fib_object` (optional) gives a group's id in the FIB.
absl::StatusOr<control::v1::ListNextHopGroupsResponse> ListNextHopGroups(
    const rib::Rib& rib, const rib::NextHopGroupRegistry& groups, const control::v1::ListNextHopGroupsRequest& request,
    absl::Time now, const std::function<std::optional<uint32_t>(rib::GroupId)>& fib_object = nullptr);
// The FIB sync's group cap into the budget totals (bagctl show nexthop-groups); nothing when
// the FIB has no cap.
void FillFibGroupCap(const rib::FibGroupCap& cap, control::v1::ListNextHopGroupsResponse& out);
// The FIB sync's repairs and conflicts (docs/fib.md, "Repair and audit").
void FillFibRepair(const rib::FibRepairStatus& st, control::v1::ListNextHopGroupsResponse& out);
control::v1::RibSummary RibSummary(const rib::Rib& rib, const rib::AttributeStore& store);

}  // namespace bagd::daemon
