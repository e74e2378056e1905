#include "bgpd/control/control_requests.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "bgpd/control/utf8.h"
#include "net/ip_prefix.h"

namespace bagd::control {
namespace {

// The client's text, made safe to echo in an error message.
std::string Quoted(std::string_view text) {
  constexpr size_t kMax = 64;
  std::string shown = ToValidUtf8(text.substr(0, kMax));
  if (text.size() > kMax) shown += "...";
  return absl::StrCat("'", shown, "'");
}

constexpr const char* kPrefixExpected =
    "expected an IPv4 or IPv6 prefix or address such as 192.0.2.0/24, 2001:db8::/32 or 192.0.2.1";

}  // namespace

absl::StatusOr<std::string> CanonicalNeighborAddress(std::string_view text) {
  if (text.empty()) return absl::InvalidArgumentError("a neighbor address is required");
  auto addr = net::IpAddress::Parse(text);
  if (!addr.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        Quoted(text), " is not a neighbor address: expected an IPv4 or IPv6 address such as 192.0.2.1 or 2001:db8::1"));
  }
  return addr->ToString();
}

absl::Status CheckShutdownMessage(std::string_view message) {
  if (!IsValidUtf8(message)) {
    return absl::InvalidArgumentError("the shutdown message is not valid UTF-8 (RFC 9003 requires UTF-8)");
  }
  if (message.size() > kMaxShutdownMessageOctets) {
    return absl::InvalidArgumentError(absl::StrCat("the shutdown message is ", message.size(),
                                                   " octets of UTF-8; RFC 9003 allows at most ",
                                                   kMaxShutdownMessageOctets));
  }
  return absl::OkStatus();
}

absl::Status CheckClearMode(v1::ClearNeighborRequest::Mode mode) {
  if (mode == v1::ClearNeighborRequest::MODE_UNSPECIFIED) {
    return absl::InvalidArgumentError(
        "ClearNeighbor needs a mode: MODE_HARD (reset the session), MODE_SOFT_IN, MODE_SOFT_OUT or MODE_SOFT");
  }
  if (!v1::ClearNeighborRequest::Mode_IsValid(mode)) {
    return absl::InvalidArgumentError(absl::StrCat("ClearNeighbor mode ", static_cast<int>(mode),
                                                   " is unknown to this bagd (MODE_HARD, MODE_SOFT_IN, "
                                                   "MODE_SOFT_OUT or MODE_SOFT)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> CanonicalRoutePrefix(std::string_view text) {
  const size_t slash = text.find('/');
  auto addr = net::IpAddress::Parse(text.substr(0, slash));
  if (!addr.ok()) return absl::InvalidArgumentError(absl::StrCat(Quoted(text), " is not a prefix or address: ", kPrefixExpected));
  if (slash == std::string_view::npos) return addr->ToString();
  const std::string_view length_text = text.substr(slash + 1);
  const unsigned max_length = addr->is_v4() ? 32 : 128;
  // Digits only (SimpleAtoi would also take "+24" or " 24"), and no more than three.
  unsigned length = 0;
  bool ok = !length_text.empty() && length_text.size() <= 3;
  for (const char c : length_text) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) {
      ok = false;
      break;
    }
    length = length * 10 + static_cast<unsigned>(c - '0');
  }
  if (!ok || length > max_length) {
    return absl::InvalidArgumentError(absl::StrCat(Quoted(text), " is not a prefix: the length must be 0 to ",
                                                   max_length, " for ", addr->is_v4() ? "IPv4" : "IPv6"));
  }
  return net::Prefix::Make(addr->afi(), addr->bytes(), static_cast<uint8_t>(length)).ToString();
}

absl::StatusOr<v1::ListRoutesRequest> CanonicalListRoutesRequest(const v1::ListRoutesRequest& request) {
  v1::ListRoutesRequest out = request;
  const std::string& family = request.family();
  const char* const v4 = net::FamilyName(net::Family::kIpv4Unicast);
  const char* const v6 = net::FamilyName(net::Family::kIpv6Unicast);
  if (!family.empty() && family != v4 && family != v6) {
    return absl::InvalidArgumentError(
        absl::StrCat(Quoted(family), " is not an address family: expected ", v4, " or ", v6, " (or none for both)"));
  }
  out.set_page_size(request.page_size() == 0 ? kDefaultRoutesPageSize
                                             : std::min(request.page_size(), kMaxRoutesPageSize));
  if (!request.after().empty()) {
    if (!request.prefix().empty()) {
      return absl::InvalidArgumentError(absl::StrCat("give a prefix or a place to resume after, not both (prefix ",
                                                     Quoted(request.prefix()), ", after ", Quoted(request.after()), ")"));
    }
    if (request.after().find('/') == std::string::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("resume after ", Quoted(request.after()), ": a prefix with a length, e.g. 192.0.2.0/24"));
    }
    auto after = CanonicalRoutePrefix(request.after());
    if (!after.ok()) return after.status();
    out.set_after(*std::move(after));
  }
  if (!v1::ListRoutesRequest::View_IsValid(request.view())) {
    return absl::InvalidArgumentError(absl::StrCat("route view ", static_cast<int>(request.view()),
                                                   " is unknown to this bagd (VIEW_RIB, VIEW_RECEIVED, "
                                                   "VIEW_ACCEPTED or VIEW_ADVERTISED)"));
  }
  if (request.view() == v1::ListRoutesRequest::VIEW_RIB) {
    if (!request.neighbor().empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "a neighbor (", Quoted(request.neighbor()),
          ") needs a view of its routes: VIEW_RECEIVED, VIEW_ACCEPTED or VIEW_ADVERTISED "
          "(bagctl: --received, --accepted or --advertised)"));
    }
  } else {
    if (request.neighbor().empty()) {
      return absl::InvalidArgumentError(absl::StrCat(RouteViewName(request.view()),
                                                     " routes are a neighbor's: give its address (bagctl: --neighbor ADDRESS)"));
    }
    auto neighbor = CanonicalNeighborAddress(request.neighbor());
    if (!neighbor.ok()) return neighbor.status();
    out.set_neighbor(*std::move(neighbor));
  }
  if (request.prefix().empty()) return out;
  auto prefix = CanonicalRoutePrefix(request.prefix());
  if (!prefix.ok()) return prefix.status();
  const bool is_v4 = prefix->find(':') == std::string::npos;
  const char* const prefix_family = is_v4 ? v4 : v6;
  if (!family.empty() && family != prefix_family) {
    return absl::InvalidArgumentError(absl::StrCat(*prefix, " is an ", is_v4 ? "IPv4" : "IPv6",
                                                   " prefix, but the family asked for is ", family));
  }
  out.set_prefix(*std::move(prefix));
  out.set_family(prefix_family);
  return out;
}

const char* RouteViewName(v1::ListRoutesRequest::View view) {
  switch (view) {
    case v1::ListRoutesRequest::VIEW_RECEIVED: return "received";
    case v1::ListRoutesRequest::VIEW_ACCEPTED: return "accepted";
    case v1::ListRoutesRequest::VIEW_ADVERTISED: return "advertised";
    default: return "routing table";
  }
}

std::string RoutesNotFoundMessage(const v1::ListRoutesRequest& request) {
  const bool address = request.prefix().find('/') == std::string::npos;
  const std::string what = absl::StrCat(address ? "no route covers " : "no route for ", request.prefix());
  switch (request.view()) {
    case v1::ListRoutesRequest::VIEW_RECEIVED:
      return absl::StrCat(what, " among the routes received from ", request.neighbor(), " (before import policy)");
    case v1::ListRoutesRequest::VIEW_ACCEPTED:
      return absl::StrCat(what, " among the routes accepted from ", request.neighbor(), " (after import policy)");
    case v1::ListRoutesRequest::VIEW_ADVERTISED:
      return absl::StrCat(what, " among the routes advertised to ", request.neighbor());
    default:
      return absl::StrCat(what, " in the routing table");
  }
}

absl::StatusOr<v1::TestPolicyRequest> CanonicalTestPolicyRequest(const v1::TestPolicyRequest& request) {
  v1::TestPolicyRequest out = request;
  if (request.policy().empty()) return absl::InvalidArgumentError("a policy name is required");
  if (request.prefix().empty()) {
    return absl::InvalidArgumentError("a prefix is required, e.g. 192.0.2.0/24 or 2001:db8::/32");
  }
  if (request.prefix().find('/') == std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat(Quoted(request.prefix()), " is not a prefix: give it with a length, e.g. 192.0.2.0/24"));
  }
  auto prefix = CanonicalRoutePrefix(request.prefix());
  if (!prefix.ok()) return prefix.status();
  out.set_prefix(*std::move(prefix));
  if (!v1::TestPolicyRequest::Source_IsValid(request.source())) {
    return absl::InvalidArgumentError(absl::StrCat("route source ", static_cast<int>(request.source()),
                                                   " is unknown to this bagd (SOURCE_EBGP, SOURCE_IBGP or SOURCE_LOCAL)"));
  }
  if (!request.neighbor().empty()) {
    if (request.source() == v1::TestPolicyRequest::SOURCE_LOCAL) {
      return absl::InvalidArgumentError(
          absl::StrCat("a local route comes from no neighbor (neighbor ", Quoted(request.neighbor()), " given)"));
    }
    auto neighbor = CanonicalNeighborAddress(request.neighbor());
    if (!neighbor.ok()) return neighbor.status();
    out.set_neighbor(*std::move(neighbor));
  }
  return out;
}

absl::StatusOr<v1::ListNextHopGroupsRequest> CanonicalListNextHopGroupsRequest(
    const v1::ListNextHopGroupsRequest& request) {
  v1::ListNextHopGroupsRequest out = request;
  if (request.prefix().empty()) return out;
  if (request.id() != 0) {
    return absl::InvalidArgumentError(absl::StrCat("give a next-hop group id or a prefix, not both (id ", request.id(),
                                                   ", prefix ", Quoted(request.prefix()), ")"));
  }
  auto prefix = CanonicalRoutePrefix(request.prefix());
  if (!prefix.ok()) return prefix.status();
  out.set_prefix(*std::move(prefix));
  return out;
}

}  // namespace bagd::control
