// Checks of what a control client asks for, done by the server before the daemon sees it,
// so every ControlBackend receives canonical addresses and sendable messages.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "bgpd/control/control.pb.h"

namespace bagd::control {

// RFC 9003 §2: the shutdown communication is at most 255 octets of UTF-8.
inline constexpr size_t kMaxShutdownMessageOctets = 255;

// The canonical text of a neighbor address ("2001:DB8:0::1" -> "2001:db8::1"), so a
// backend can compare addresses as strings. InvalidArgument if `text` is not an address.
absl::StatusOr<std::string> CanonicalNeighborAddress(std::string_view text);

// OK, or InvalidArgument if `message` is longer than 255 octets or not valid UTF-8.
absl::Status CheckShutdownMessage(std::string_view message);

// OK for a ClearNeighbor mode bagd carries out; InvalidArgument for MODE_UNSPECIFIED (a
// request that left the field out must not reset a session) or a value this bagd does not
// know (a newer client).
absl::Status CheckClearMode(v1::ClearNeighborRequest::Mode mode);

// The canonical text of a route filter: a prefix ("192.0.2.7/24" -> "192.0.2.0/24",
// "2001:DB8::/32" -> "2001:db8::/32") or an address without a length ("2001:DB8::1" ->
// "2001:db8::1", meaning the most specific route covering it). InvalidArgument otherwise.
absl::StatusOr<std::string> CanonicalRoutePrefix(std::string_view text);

// `request` with its prefix canonical (CanonicalRoutePrefix) and, when a prefix is given,
// its family filled in from it. InvalidArgument for a prefix that does not parse, a family
// other than "ipv4-unicast" / "ipv6-unicast" / empty, or a prefix of the other family.
// `after`, when given, must be a prefix with a length (made canonical too) and excludes
// `prefix`; `page_size` becomes 1..kMaxRoutesPageSize (0: kDefaultRoutesPageSize). The
// neighbor views need `neighbor` (made canonical, CanonicalNeighborAddress), VIEW_RIB takes
// none, and an unknown view is InvalidArgument.
absl::StatusOr<v1::ListRoutesRequest> CanonicalListRoutesRequest(const v1::ListRoutesRequest& request);

// "received", "accepted", "advertised"; "routing table" for VIEW_RIB.
const char* RouteViewName(v1::ListRoutesRequest::View view);
// NOT_FOUND's message for a canonical ListRoutes request with a prefix that found nothing:
// "no route for 203.0.113.0/24 in the routing table", "no route covers 203.0.113.9 among
// the routes received from 192.0.2.2 (before import policy)".
std::string RoutesNotFoundMessage(const v1::ListRoutesRequest& request);

// `request` with its prefix and neighbor canonical. InvalidArgument without a policy name,
// for a prefix without a length or that does not parse, a neighbor that is no address,
// a neighbor with SOURCE_LOCAL, or an unknown source. The attributes are checked where the
// route is built (bgpd/daemon/policy_view.h).
absl::StatusOr<v1::TestPolicyRequest> CanonicalTestPolicyRequest(const v1::TestPolicyRequest& request);

// ListRoutes pages (control.proto): the default and the largest number of routes per message.
inline constexpr uint32_t kDefaultRoutesPageSize = 1000;
inline constexpr uint32_t kMaxRoutesPageSize = 5000;

// `request` with its prefix canonical (CanonicalRoutePrefix: a prefix with its host bits
// cleared, or an address for the most specific route covering it). InvalidArgument when
// both `id` and `prefix` are given (they are exclusive) or the prefix does not parse.
absl::StatusOr<v1::ListNextHopGroupsRequest> CanonicalListNextHopGroupsRequest(
    const v1::ListNextHopGroupsRequest& request);

}  // namespace bagd::control
