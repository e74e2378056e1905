#include "bgpd/daemon/policy_view.h"

#include <algorithm>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "bgpd/daemon/rib_view.h"
#include "conf/policy_text.h"
#include "conf/rate_text.h"

namespace bagd::daemon {

namespace {

using control::ControlBackend;
using control::v1::ListRoutesRequest;
using control::v1::TestPolicyRequest;
using RoutesPage = ControlBackend::RoutesPage;

// "65001 65002 {65003,65004} (65010 65011) [65012,65013]": wire::AsPath::ToString's text.
absl::StatusOr<wire::AsPath> ParseAsPath(absl::string_view text) {
  wire::AsPath path;
  const auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("AS path \"", text, "\": ", why,
                                                   " (write it as bagctl shows it: 65001 65002 {65003,65004})"));
  };
  size_t i = 0;
  while (i < text.size()) {
    const char c = text[i];
    if (c == ' ') {
      ++i;
      continue;
    }
    wire::AsSegmentType type = wire::AsSegmentType::kSequence;
    char close = 0;
    if (c == '{') type = wire::AsSegmentType::kSet, close = '}';
    if (c == '(') type = wire::AsSegmentType::kConfedSequence, close = ')';
    if (c == '[') type = wire::AsSegmentType::kConfedSet, close = ']';
    absl::string_view body;
    if (close != 0) {
      const size_t end = text.find(close, i + 1);
      if (end == absl::string_view::npos) return bad(absl::StrCat("'", std::string(1, c), "' is not closed"));
      body = text.substr(i + 1, end - i - 1);
      i = end + 1;
    } else {
      size_t end = text.find_first_of(" {([", i);
      if (end == absl::string_view::npos) end = text.size();
      body = text.substr(i, end - i);
      i = end;
    }
    std::vector<uint32_t> asns;
    for (absl::string_view part : absl::StrSplit(body, absl::ByAnyChar(" ,"), absl::SkipEmpty())) {
      uint32_t asn = 0;
      if (!std::all_of(part.begin(), part.end(), absl::ascii_isdigit) || !absl::SimpleAtoi(part, &asn)) {
        return bad(absl::StrCat("'", part, "' is not an AS number (0..4294967295)"));
      }
      asns.push_back(asn);
    }
    if (asns.empty()) return bad("an empty segment");
    // A sequence written in pieces ("65001 65002") is one segment.
    if (type == wire::AsSegmentType::kSequence && !path.segments.empty() &&
        path.segments.back().type == wire::AsSegmentType::kSequence && close == 0) {
      auto& last = path.segments.back().asns;
      last.insert(last.end(), asns.begin(), asns.end());
    } else {
      path.segments.push_back({type, std::move(asns)});
    }
  }
  return path;
}

absl::Status AddCommunity(const std::string& text, wire::PathAttributes& a) {
  auto c = conf::ParseCommunityText(text);
  if (!c.ok()) return absl::InvalidArgumentError(absl::StrCat("community ", c.status().message()));
  using Kind = conf::CommunityText::Kind;
  switch (c->kind) {
    case Kind::kStandard: a.communities.push_back(c->standard); break;
    case Kind::kLarge: a.large_communities.push_back({c->large[0], c->large[1], c->large[2]}); break;
    case Kind::kExtended: a.extended_communities.push_back({c->extended}); break;
    case Kind::kLinkBandwidth:
      a.extended_communities.push_back(
          wire::LinkBandwidth::FromBitsPerSecond(c->lb_asn, c->lb_bits_per_second, true).ToExtendedCommunity());
      break;
  }
  return absl::OkStatus();
}

control::v1::PolicyStatementTrace TraceProto(const policy::StatementTrace& t) {
  control::v1::PolicyStatementTrace out;
  out.set_statement(t.statement);
  out.set_matched(t.matched);
  if (t.failed) out.set_failed_condition(policy::ConditionName(*t.failed));
  for (const std::string& c : t.conditions) out.add_conditions(c);
  for (const std::string& a : t.applied) out.add_applied(a);
  return out;
}

// The test route as a RoutePath: interned in a store of its own (so the RIB's rendering,
// rib_view.h FillPathAttributes, shows it exactly as it would show a received path).
control::v1::RoutePath RenderTestRoute(const wire::PathAttributes& attrs, const TestPolicyRequest& r) {
  control::v1::RoutePath out;
  rib::AttributeStore store;
  {
    const rib::AttrRef ref = store.Intern(attrs);
    FillPathAttributes(*ref, attrs.next_hop.has_value() || attrs.mp_reach.has_value(), out);
  }
  if (r.source() == TestPolicyRequest::SOURCE_LOCAL) {
    out.set_peer("local");
  } else {
    out.set_peer(r.neighbor());
    if (r.source() != TestPolicyRequest::SOURCE_IBGP && attrs.as_path) out.set_peer_as(attrs.as_path->FirstAs());
  }
  return out;
}

absl::Status PolicyNotFound(const policy::PolicySet& set, const std::string& name) {
  const std::vector<std::string> names = set.names();
  if (names.empty()) {
    return absl::NotFoundError(absl::StrCat("no policy \"", name, "\" is defined: the config defines no policies"));
  }
  return absl::NotFoundError(absl::StrCat("no policy \"", name, "\" is defined; the defined policies are: ",
                                          absl::StrJoin(names, ", ")));
}

// ---- pages ----

struct Query {
  std::optional<net::Prefix> prefix;      // exactly this one
  std::optional<net::IpAddress> address;  // the most specific prefix covering it
  std::optional<net::Prefix> after;
  bool v4_only = false;
  bool v6_only = false;
  bool single() const { return prefix || address; }
};

absl::StatusOr<Query> QueryOf(const ListRoutesRequest& request) {
  Query q;
  const std::string& text = request.prefix();
  if (!text.empty()) {
    if (text.find('/') != std::string::npos) {
      auto p = net::Prefix::Parse(text);
      if (!p.ok()) return p.status();
      q.prefix = *p;
    } else {
      auto a = net::IpAddress::Parse(text);
      if (!a.ok()) return a.status();
      q.address = *a;
    }
    return q;
  }
  q.v4_only = request.family() == net::FamilyName(net::Family::kIpv4Unicast);
  q.v6_only = request.family() == net::FamilyName(net::Family::kIpv6Unicast);
  if (!request.after().empty()) {
    auto p = net::Prefix::Parse(request.after());
    if (!p.ok()) return p.status();
    q.after = *p;
  }
  if (q.v6_only && (!q.after || q.after->afi() == net::Afi::kIpv4)) {
    // Every IPv6 prefix comes after the last possible IPv4 one (as rib_view.cc does).
    const uint8_t ones[4] = {0xff, 0xff, 0xff, 0xff};
    q.after = net::Prefix::Make(net::Afi::kIpv4, ones, 32);
  }
  return q;
}

bool Covers(const net::Prefix& p, const net::IpAddress& a) {
  return p.afi() == a.afi() && net::Prefix::Make(a.afi(), a.bytes(), p.length()) == p;
}

// A page of an ordered table (the RIB, an Adj-RIB-Out): `in_view(prefix, value)` says
// whether the prefix has a path in the view, `fill(prefix, value, Route&)` adds its paths
// and returns how many.
template <typename Table, typename InView, typename Fill>
RoutesPage OrderedPage(const Table& table, const Query& q, size_t max_routes, InView in_view, Fill fill) {
  RoutesPage page;
  const auto add = [&](const net::Prefix& prefix, const auto& value) {
    control::v1::Route& r = page.routes.emplace_back();
    r.set_prefix(prefix.ToString());
    return fill(prefix, value, r);
  };
  if (q.single()) {
    if (max_routes == 0) return page;
    if (q.prefix) {
      if (const auto* v = table.Find(*q.prefix); v != nullptr && in_view(*q.prefix, *v)) add(*q.prefix, *v);
      return page;
    }
    for (int len = q.address->is_v4() ? 32 : 128; len >= 0; --len) {
      const net::Prefix p = net::Prefix::Make(q.address->afi(), q.address->bytes(), static_cast<uint8_t>(len));
      if (const auto* v = table.Find(p); v != nullptr && in_view(p, *v)) {
        add(p, *v);
        break;
      }
    }
    return page;
  }
  // As rib_view.cc: max_routes prefixes, or fewer once the page holds 4 x max_routes paths.
  const size_t max_paths = 4 * std::max<size_t>(max_routes, 1);
  size_t paths = 0;
  table.ForEachAfter(q.after, [&](const net::Prefix& prefix, const auto& value) {
    if (q.v4_only && prefix.family() != net::Family::kIpv4Unicast) return false;  // IPv6 follows: done
    if (!in_view(prefix, value)) return true;
    if (page.routes.size() >= max_routes || (!page.routes.empty() && paths >= max_paths)) {
      page.more = true;
      return false;
    }
    paths += add(prefix, value);
    return true;
  });
  return page;
}

}  // namespace

// ---- bagctl policy test ----

absl::StatusOr<wire::PathAttributes> TestRouteAttributes(const TestPolicyRequest& request) {
  auto prefix = net::Prefix::Parse(request.prefix());
  if (!prefix.ok()) return absl::InvalidArgumentError(absl::StrCat("prefix ", request.prefix(), ": ", prefix.status().message()));
  const control::v1::TestRouteAttributes& t = request.attributes();
  wire::PathAttributes a;

  const std::string origin = absl::AsciiStrToLower(t.origin());
  if (origin.empty() || origin == "igp") {
    a.origin = wire::Origin::kIgp;
  } else if (origin == "egp") {
    a.origin = wire::Origin::kEgp;
  } else if (origin == "incomplete") {
    a.origin = wire::Origin::kIncomplete;
  } else {
    return absl::InvalidArgumentError(absl::StrCat("origin \"", t.origin(), "\": igp, egp or incomplete"));
  }

  auto path = ParseAsPath(t.as_path());
  if (!path.ok()) return path.status();
  a.as_path = *std::move(path);

  for (const std::string& c : t.communities()) {
    if (absl::Status s = AddCommunity(c, a); !s.ok()) return s;
  }
  for (const std::string& c : t.large_communities()) {
    auto parsed = conf::ParseCommunityText(c);
    if (!parsed.ok() || parsed->kind != conf::CommunityText::Kind::kLarge) {
      return absl::InvalidArgumentError(
          absl::StrCat("large community \"", c, "\": three numbers 0..4294967295, GLOBAL:LOCAL1:LOCAL2, e.g. 65000:1:2"));
    }
    a.large_communities.push_back({parsed->large[0], parsed->large[1], parsed->large[2]});
  }

  if (!t.link_bandwidth().empty()) {
    // "10G", or "AS:10G"; a rate never contains ':'.
    absl::string_view rate = t.link_bandwidth();
    uint32_t asn = a.as_path->FirstAs();
    if (const size_t colon = rate.find(':'); colon != absl::string_view::npos) {
      const absl::string_view as_text = rate.substr(0, colon);
      if (as_text.empty() || !std::all_of(as_text.begin(), as_text.end(), absl::ascii_isdigit) ||
          !absl::SimpleAtoi(as_text, &asn)) {
        return absl::InvalidArgumentError(absl::StrCat("link bandwidth \"", t.link_bandwidth(),
                                                       "\": the AS before ':' is a number, e.g. 65001:10G"));
      }
      rate = rate.substr(colon + 1);
    }
    auto bps = conf::ParseRate(std::string_view(rate.data(), rate.size()));
    if (!bps.ok()) return absl::InvalidArgumentError(absl::StrCat("link bandwidth ", bps.status().message()));
    a.extended_communities.push_back(wire::LinkBandwidth::FromBitsPerSecond(asn, *bps, true).ToExtendedCommunity());
  }

  std::optional<net::IpAddress> next_hop;
  if (!t.next_hop().empty()) {
    auto nh = net::IpAddress::Parse(t.next_hop());
    if (!nh.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("next hop \"", t.next_hop(), "\" is not an address such as 192.0.2.1 or 2001:db8::1"));
    }
    next_hop = *nh;
  } else if (!request.neighbor().empty()) {
    auto nh = net::IpAddress::Parse(request.neighbor());
    if (nh.ok()) next_hop = *nh;
  }
  if (next_hop) {
    if (prefix->afi() == net::Afi::kIpv6 && next_hop->is_v4()) {
      return absl::InvalidArgumentError(absl::StrCat("next hop ", next_hop->ToString(), ": an IPv6 prefix (",
                                                     prefix->ToString(), ") needs an IPv6 next hop"));
    }
    if (prefix->afi() == net::Afi::kIpv4 && next_hop->is_v4()) {
      a.next_hop = *next_hop;
    } else {
      // RFC 4760 MP_REACH_NLRI; an IPv4 prefix with an IPv6 next hop is RFC 8950.
      wire::MpReach mp;
      mp.family = prefix->family();
      mp.next_hop = *next_hop;
      a.mp_reach = std::move(mp);
    }
  }
  if (t.has_med()) a.med = t.med();
  if (t.has_local_pref()) a.local_pref = t.local_pref();
  return a;
}

absl::StatusOr<control::v1::TestPolicyResponse> TestPolicy(const policy::PolicySet& set,
                                                           const TestPolicyRequest& request) {
  const policy::CompiledPolicy* policy = set.Find(request.policy());
  if (policy == nullptr) return PolicyNotFound(set, request.policy());
  auto attrs = TestRouteAttributes(request);
  if (!attrs.ok()) return attrs.status();

  policy::RouteContext route;
  route.prefix = *net::Prefix::Parse(request.prefix());  // TestRouteAttributes parsed it
  route.attributes = &*attrs;
  switch (request.source()) {
    case TestPolicyRequest::SOURCE_IBGP: route.source = policy::RouteSource::kIbgp; break;
    case TestPolicyRequest::SOURCE_LOCAL: route.source = policy::RouteSource::kLocal; break;
    default: route.source = policy::RouteSource::kEbgp; break;
  }
  if (!request.neighbor().empty()) {
    auto n = net::IpAddress::Parse(request.neighbor());
    if (!n.ok()) return absl::InvalidArgumentError(absl::StrCat("neighbor ", request.neighbor(), " is not an address"));
    route.neighbor = *n;
  }

  policy::Trace trace;
  const policy::PolicyResult result = policy::Evaluate(*policy, route, &trace, policy::EvaluateOptions{.count_hits = false});

  control::v1::TestPolicyResponse out;
  out.set_policy(policy->name());
  out.set_prefix(route.prefix.ToString());
  out.set_source(route.source == policy::RouteSource::kIbgp    ? "ibgp"
                 : route.source == policy::RouteSource::kLocal ? "local"
                                                               : "ebgp");
  if (route.neighbor) out.set_neighbor(route.neighbor->ToString());
  out.set_verdict(policy::VerdictName(result.verdict));
  if (result.statement >= 0) out.set_statement(policy->statement_name(static_cast<size_t>(result.statement)));
  for (const policy::StatementTrace& t : trace.statements) *out.add_trace() = TraceProto(t);
  *out.mutable_route() = RenderTestRoute(*attrs, request);
  const bool modified = result.modified && *result.modified != *attrs;
  out.set_modified(modified);
  if (result.verdict != policy::Verdict::kReject) *out.mutable_result() = RenderTestRoute(result.attributes(route), request);
  out.set_next_hop_self(result.deferred.next_hop_self);
  switch (result.deferred.link_bandwidth) {
    case policy::LinkBandwidthExport::kNone: break;
    case policy::LinkBandwidthExport::kCumulative: out.set_link_bandwidth_export("cumulative"); break;
    case policy::LinkBandwidthExport::kNumMultipaths: out.set_link_bandwidth_export("num-multipaths"); break;
  }
  return out;
}

// ---- bagctl show policies ----

absl::StatusOr<control::v1::ListPoliciesResponse> ListPolicies(const policy::PolicySet& set,
                                                               const control::v1::ListPoliciesRequest& request) {
  control::v1::ListPoliciesResponse out;
  if (!request.name().empty() && set.Find(request.name()) == nullptr) return PolicyNotFound(set, request.name());
  for (const std::string& name : set.names()) {
    if (!request.name().empty() && name != request.name()) continue;
    const policy::CompiledPolicy& p = *set.Find(name);
    control::v1::PolicyCounters& pc = *out.add_policies();
    pc.set_name(name);
    pc.set_depends_on_prefix(p.depends_on_prefix());
    for (size_t i = 0; i < p.statement_count(); ++i) {
      control::v1::PolicyStatementCounters& s = *pc.add_statements();
      s.set_name(p.statement_name(i));
      s.set_hits(p.hits(i));
    }
  }
  return out;
}

// ---- neighbor views ----

absl::StatusOr<RoutesPage> ReceivedRoutesPage(const rib::AdjRibIn& received, const rib::PeerInfo& from,
                                              const ListRoutesRequest& request, size_t max_routes) {
  auto q = QueryOf(request);
  if (!q.ok()) return q.status();
  struct Entry {
    net::Prefix prefix;
    uint32_t path_id;
    const rib::AttrRef* attrs;
  };
  const auto less = [](const Entry& a, const Entry& b) {
    if (a.prefix != b.prefix) return net::InTableOrder(a.prefix, b.prefix);
    return a.path_id < b.path_id;
  };
  std::vector<Entry> entries;
  const auto collect = [&](net::Family family) {
    received.ForEachIn(family, [&](const net::Nlri& n, const rib::AttrRef& attrs) {
      if (q->prefix && n.prefix != *q->prefix) return;
      if (q->address && !Covers(n.prefix, *q->address)) return;
      if (!q->single() && q->after && !net::InTableOrder(*q->after, n.prefix)) return;
      entries.push_back({n.prefix, n.path_id, &attrs});
    });
  };
  if (q->single()) {
    collect(q->prefix ? q->prefix->family() : (q->address->is_v4() ? net::Family::kIpv4Unicast : net::Family::kIpv6Unicast));
  } else {
    if (!q->v6_only) collect(net::Family::kIpv4Unicast);
    if (!q->v4_only) collect(net::Family::kIpv6Unicast);
  }

  RoutesPage page;
  if (q->address && !entries.empty()) {
    // The most specific prefix covering the address.
    uint8_t longest = 0;
    for (const Entry& e : entries) longest = std::max(longest, e.prefix.length());
    std::erase_if(entries, [&](const Entry& e) { return e.prefix.length() != longest; });
  }
  const size_t take = q->single() ? entries.size() : max_routes;  // paths: each route has one at least
  if (take == 0 || max_routes == 0) {
    page.more = !entries.empty();
    return page;
  }
  if (entries.size() > take) {
    // Order only what the page takes, then the rest of its last prefix's paths (ADD-PATH):
    // a prefix is never split between pages (the next one resumes after it).
    std::nth_element(entries.begin(), entries.begin() + static_cast<std::ptrdiff_t>(take), entries.end(), less);
    std::sort(entries.begin(), entries.begin() + static_cast<std::ptrdiff_t>(take), less);
    const net::Prefix last = entries[take - 1].prefix;
    const auto rest = entries.begin() + static_cast<std::ptrdiff_t>(take);
    const auto same = std::partition(rest, entries.end(), [&](const Entry& e) { return e.prefix == last; });
    std::sort(rest, same, less);
    page.more = same != entries.end();
    entries.erase(same, entries.end());
  } else {
    std::sort(entries.begin(), entries.end(), less);
  }
  for (const Entry& e : entries) {
    if (page.routes.empty() || page.routes.back().prefix() != e.prefix.ToString()) {
      page.routes.emplace_back().set_prefix(e.prefix.ToString());
    }
    control::v1::RoutePath& p = *page.routes.back().add_paths();
    p.set_peer(from.name);
    p.set_peer_as(from.asn);
    p.set_path_id(e.path_id);
    FillPathAttributes(**e.attrs, true, p);
  }
  return page;
}

absl::StatusOr<RoutesPage> AcceptedRoutesPage(const rib::Rib& rib, rib::PeerIndex peer,
                                              const ListRoutesRequest& request, size_t max_routes) {
  auto q = QueryOf(request);
  if (!q.ok()) return q.status();
  const auto in_view = [&](const net::Prefix&, const rib::Destination& d) {
    return std::any_of(d.paths().begin(), d.paths().end(), [&](const rib::Path& p) { return p.peer == peer; });
  };
  const auto fill = [&](const net::Prefix&, const rib::Destination& d, control::v1::Route& out) {
    std::vector<size_t> mine;
    for (size_t i = 0; i < d.paths().size(); ++i) {
      if (d.paths()[i].peer == peer) mine.push_back(i);
    }
    // The best first (if it is this neighbor's), then by path id.
    std::sort(mine.begin(), mine.end(), [&](size_t a, size_t b) {
      const bool best_a = static_cast<int>(a) == d.best(), best_b = static_cast<int>(b) == d.best();
      if (best_a != best_b) return best_a;
      return d.paths()[a].path_id < d.paths()[b].path_id;
    });
    for (size_t i : mine) FillPath(rib, d, i, *out.add_paths());
    return mine.size();
  };
  return OrderedPage(rib, *q, max_routes, in_view, fill);
}

absl::StatusOr<RoutesPage> AdvertisedRoutesPage(const rib::AdjRibOut& advertised,
                                                const rib::PeerInfo& to, const ListRoutesRequest& request,
                                                size_t max_routes) {
  auto q = QueryOf(request);
  if (!q.ok()) return q.status();
  const auto in_view = [&](const net::Prefix&, const rib::AdjRibOut::Entry& e) {
    return static_cast<bool>(advertised.attrs(e));
  };
  const auto fill = [&](const net::Prefix&, const rib::AdjRibOut::Entry& e, control::v1::Route& out) {
    control::v1::RoutePath& p = *out.add_paths();
    p.set_peer(to.name);
    p.set_peer_as(to.asn);
    FillPathAttributes(*advertised.attrs(e), true, p);
    return size_t{1};
  };
  return OrderedPage(advertised, *q, max_routes, in_view, fill);
}

// ---- ControlAdapter's calls ----

namespace {

constexpr const char* kNoExplain = "policy and neighbor route views are not available in this bagd";

absl::StatusOr<const policy::PolicySet*> RunningPolicies(const NeighborRibs* ribs) {
  // Not UNAVAILABLE: clients take that for "bagd is not reachable" (ControlClient says so).
  if (ribs == nullptr) return absl::UnimplementedError(kNoExplain);
  const policy::PolicySet* set = ribs->policies();
  if (set == nullptr) return absl::FailedPreconditionError("bagd has not loaded its configuration (and policies) yet");
  return set;
}

}  // namespace

absl::StatusOr<control::v1::TestPolicyResponse> ServeTestPolicy(const NeighborRibs* ribs,
                                                                const TestPolicyRequest& request) {
  auto set = RunningPolicies(ribs);
  if (!set.ok()) return set.status();
  return TestPolicy(**set, request);
}

absl::StatusOr<control::v1::ListPoliciesResponse> ServeListPolicies(const NeighborRibs* ribs,
                                                                    const control::v1::ListPoliciesRequest& request) {
  auto set = RunningPolicies(ribs);
  if (!set.ok()) return set.status();
  return ListPolicies(**set, request);
}

absl::StatusOr<RoutesPage> ServeNeighborRoutesPage(const NeighborRibs* ribs, const rib::Rib& rib,
                                                   const ListRoutesRequest& request, size_t max_routes) {
  if (ribs == nullptr) return absl::UnimplementedError(kNoExplain);
  const std::string& neighbor = request.neighbor();
  const std::optional<rib::PeerIndex> index = ribs->RibIndexOf(neighbor);
  if (!index || *index >= rib.peer_count()) {
    return absl::NotFoundError(absl::StrCat("no neighbor ", neighbor, " is configured"));
  }
  switch (request.view()) {
    case ListRoutesRequest::VIEW_RECEIVED: {
      const rib::AdjRibIn* received = ribs->ReceivedRoutes(*index);
      if (received == nullptr) {
        return absl::FailedPreconditionError(absl::StrCat(
            "bagd keeps no copy of the routes ", neighbor,
            " sent before import policy: set soft_reconfiguration_inbound: true on the neighbor in the config to "
            "keep them (--accepted shows its routes after import policy)"));
      }
      return ReceivedRoutesPage(*received, rib.peer(*index), request, max_routes);
    }
    case ListRoutesRequest::VIEW_ACCEPTED:
      return AcceptedRoutesPage(rib, *index, request, max_routes);
    case ListRoutesRequest::VIEW_ADVERTISED: {
      const rib::AdjRibOut* advertised = ribs->AdvertisedRoutes(*index);
      if (advertised == nullptr) return RoutesPage{};
      return AdvertisedRoutesPage(*advertised, rib.peer(*index), request, max_routes);
    }
    default:
      return absl::InvalidArgumentError("ServeNeighborRoutesPage: not a neighbor view");
  }
}

// ---- Prometheus ----

void SyncPolicyMetrics(const policy::PolicySet& set, RoutingMetrics& metrics, PolicyHitsSynced& synced) {
  for (const std::string& name : set.names()) {
    const policy::CompiledPolicy* p = set.Find(name);
    for (size_t i = 0; i < p->statement_count(); ++i) {
      const uint64_t hits = p->hits(i);
      const auto [it, first] = synced.synced_.try_emplace({p, i}, 0);
      uint64_t& seen = it->second;
      // The first sync creates the series, so a statement that never matched shows as 0.
      if (hits == seen && !first) continue;
      // Below what was seen: a new set at an old address (Reloaded() not called): from 0.
      const uint64_t add = hits > seen ? hits - seen : hits;
      metrics.PolicyHits(name, p->statement_name(i)).Increment(static_cast<double>(add));
      seen = hits;
    }
  }
}

}  // namespace bagd::daemon
