#include "policy/policy.h"

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "conf/policy_text.h"
#include "conf/rate_text.h"

namespace bagd::policy {

namespace v1 = bagd::config::v1;

namespace internal {

template <typename Set>
struct SetCondition {
  std::shared_ptr<const Set> set;  // null: no condition
  MatchType match = MatchType::kAny;
};

struct LinkBandwidthCondition {
  bool active = false;
  enum class Presence : uint8_t { kAny, kPresent, kAbsent } presence = Presence::kAny;
  std::optional<double> min, max;  // bits per second, inclusive
};

// Communities to add, remove or replace, per kind.
struct CommunityOp {
  v1::CommunityAction::Op op = v1::CommunityAction::OP_ADD;
  std::vector<uint32_t> standard;
  std::vector<wire::LargeCommunity> large;
  std::vector<wire::ExtendedCommunity> extended;
  std::string text;  // for traces: "add 65000:100 65000:1:2"
};

enum class LinkBandwidthOp : uint8_t { kNone, kSet, kRemove, kCap, kCumulative, kNumMultipaths };

struct Statement {
  std::string name;
  // Each condition as written, in test order, for traces (built at compile time).
  std::vector<std::pair<Condition, std::string>> described;
  // Conditions.
  uint8_t sources = 0;  // bit per RouteSource; 0: any
  SetCondition<NeighborSet> neighbor_set;
  uint8_t origins = 0;  // bit per wire::Origin; 0: any
  std::optional<uint32_t> as_path_length_min, as_path_length_max;
  SetCondition<PrefixSet> prefix_set;
  SetCondition<PrefixSet> next_hop_set;
  SetCondition<CommunitySet> community_set;
  LinkBandwidthCondition link_bandwidth;
  SetCondition<AsPathSet> as_path_set;
  // Actions.
  v1::Actions::Disposition disposition = v1::Actions::DISPOSITION_NEXT;
  std::optional<uint32_t> local_pref, med;
  std::vector<CommunityOp> communities;
  uint32_t prepend_asn = 0, prepend_count = 0;
  bool next_hop_self = false;
  std::optional<net::IpAddress> next_hop;
  LinkBandwidthOp lb_op = LinkBandwidthOp::kNone;
  double lb_bits_per_second = 0;
  uint32_t lb_asn = 0;
  bool lb_transitive = true;
};

}  // namespace internal

using internal::Statement;

namespace {

// --- compile ---------------------------------------------------------------------------------

struct Sets {
  absl::flat_hash_map<std::string, std::shared_ptr<const PrefixSet>> prefix, next_hop;
  absl::flat_hash_map<std::string, std::shared_ptr<const CommunitySet>> community;
  absl::flat_hash_map<std::string, std::shared_ptr<const AsPathSet>> as_path;
  absl::flat_hash_map<std::string, std::shared_ptr<const NeighborSet>> neighbor;
};

template <typename Set, typename Config, typename CompileFn>
absl::Status CompileSets(const google::protobuf::RepeatedPtrField<Config>& configs, CompileFn compile,
                         absl::flat_hash_map<std::string, std::shared_ptr<const Set>>& out) {
  for (const Config& c : configs) {
    absl::StatusOr<Set> set = compile(c);
    if (!set.ok()) return set.status();
    if (!out.emplace(c.name(), std::make_shared<const Set>(std::move(*set))).second) {
      return absl::InvalidArgumentError(absl::StrCat("set \"", c.name(), "\" is defined twice"));
    }
  }
  return absl::OkStatus();
}

MatchType ToMatchType(v1::SetMatchType t) {
  switch (t) {
    case v1::SET_MATCH_ALL: return MatchType::kAll;
    case v1::SET_MATCH_INVERT: return MatchType::kInvert;
    default: return MatchType::kAny;
  }
}

template <typename Set>
absl::Status Resolve(const v1::SetMatch& m, const absl::flat_hash_map<std::string, std::shared_ptr<const Set>>& sets,
                     const char* kind, internal::SetCondition<Set>& out) {
  const auto it = sets.find(m.set());
  if (it == sets.end()) return absl::InvalidArgumentError(absl::StrCat(kind, " set \"", m.set(), "\" is not defined"));
  out.set = it->second;
  out.match = ToMatchType(m.match());
  return absl::OkStatus();
}

absl::StatusOr<double> Rate(const std::string& text) { return conf::ParseRate(text); }

const char* MatchSuffix(MatchType m) {
  return m == MatchType::kInvert ? " (invert)" : m == MatchType::kAll ? " (all)" : "";
}

std::string Range(const std::optional<double>& min, const std::optional<double>& max) {
  return absl::StrCat(min ? wire::FormatBitsPerSecond(*min) : "", "..", max ? wire::FormatBitsPerSecond(*max) : "");
}

// The statement's conditions as text, in the order FirstFailed tests them.
void Describe(const v1::Conditions& c, Statement& st) {
  auto add = [&](Condition kind, auto&&... parts) { st.described.emplace_back(kind, absl::StrCat(parts...)); };
  auto enums = [](const auto& values, auto name) {
    std::vector<std::string> names;
    for (const int v : values) names.push_back(absl::AsciiStrToLower(name(v)));
    return absl::StrJoin(names, ",");
  };
  if (st.sources != 0) {
    add(Condition::kSource, "source ", enums(c.sources(), [](int v) {
          return v1::RouteSource_Name(v).substr(sizeof("ROUTE_SOURCE_") - 1);
        }));
  }
  if (st.neighbor_set.set) {
    add(Condition::kNeighborSet, "neighbor-set \"", c.neighbor_set().set(), "\"", MatchSuffix(st.neighbor_set.match));
  }
  if (st.origins != 0) {
    add(Condition::kOrigin, "origin ", enums(c.origins(), [](int v) { return v1::Origin_Name(v).substr(sizeof("ORIGIN_") - 1); }));
  }
  if (st.as_path_length_min || st.as_path_length_max) {
    add(Condition::kAsPathLength, "as-path-length ", st.as_path_length_min ? absl::StrCat(*st.as_path_length_min) : "",
        "..", st.as_path_length_max ? absl::StrCat(*st.as_path_length_max) : "");
  }
  if (st.prefix_set.set) {
    add(Condition::kPrefixSet, "prefix-set \"", c.prefix_set().set(), "\"", MatchSuffix(st.prefix_set.match));
  }
  if (st.next_hop_set.set) {
    add(Condition::kNextHopSet, "next-hop-set \"", c.next_hop_set().set(), "\"", MatchSuffix(st.next_hop_set.match));
  }
  if (st.community_set.set) {
    add(Condition::kCommunitySet, "community-set \"", c.community_set().set(), "\"", MatchSuffix(st.community_set.match));
  }
  if (st.link_bandwidth.active) {
    using P = internal::LinkBandwidthCondition::Presence;
    const internal::LinkBandwidthCondition& lb = st.link_bandwidth;
    add(Condition::kLinkBandwidth, "link-bandwidth ",
        lb.presence == P::kAbsent                ? "absent"
        : lb.min || lb.max                       ? Range(lb.min, lb.max)
        : lb.presence == P::kPresent ? "present" : "any");
  }
  if (st.as_path_set.set) {
    add(Condition::kAsPathSet, "as-path-set \"", c.as_path_set().set(), "\"", MatchSuffix(st.as_path_set.match));
  }
}

absl::Status CompileConditions(const v1::Conditions& c, const Sets& sets, Statement& st) {
  if (c.has_prefix_set()) {
    if (absl::Status s = Resolve(c.prefix_set(), sets.prefix, "prefix", st.prefix_set); !s.ok()) return s;
  }
  if (c.has_next_hop_set()) {
    if (absl::Status s = Resolve(c.next_hop_set(), sets.next_hop, "next-hop", st.next_hop_set); !s.ok()) return s;
  }
  if (c.has_community_set()) {
    if (absl::Status s = Resolve(c.community_set(), sets.community, "community", st.community_set); !s.ok()) return s;
  }
  if (c.has_as_path_set()) {
    if (absl::Status s = Resolve(c.as_path_set(), sets.as_path, "AS-path", st.as_path_set); !s.ok()) return s;
  }
  if (c.has_neighbor_set()) {
    if (absl::Status s = Resolve(c.neighbor_set(), sets.neighbor, "neighbor", st.neighbor_set); !s.ok()) return s;
  }
  for (const int o : c.origins()) {
    if (o < v1::ORIGIN_IGP || o > v1::ORIGIN_INCOMPLETE) return absl::InvalidArgumentError("origins: not an origin");
    st.origins |= 1 << (o - v1::ORIGIN_IGP);  // ORIGIN_IGP..INCOMPLETE = wire::Origin + 1
  }
  for (const int s : c.sources()) {
    if (s < v1::ROUTE_SOURCE_EBGP || s > v1::ROUTE_SOURCE_LOCAL) return absl::InvalidArgumentError("sources: not a source");
    st.sources |= 1 << (s - v1::ROUTE_SOURCE_EBGP);  // = RouteSource
  }
  if (c.as_path_length().has_min()) st.as_path_length_min = c.as_path_length().min();
  if (c.as_path_length().has_max()) st.as_path_length_max = c.as_path_length().max();
  if (c.has_link_bandwidth()) {
    const v1::LinkBandwidthCondition& lb = c.link_bandwidth();
    st.link_bandwidth.active = true;
    using P = internal::LinkBandwidthCondition::Presence;
    st.link_bandwidth.presence = lb.presence() == v1::LinkBandwidthCondition::PRESENCE_PRESENT ? P::kPresent
                                 : lb.presence() == v1::LinkBandwidthCondition::PRESENCE_ABSENT ? P::kAbsent
                                                                                               : P::kAny;
    for (auto [text, out] : {std::pair{&lb.min(), &st.link_bandwidth.min}, std::pair{&lb.max(), &st.link_bandwidth.max}}) {
      if (text->empty()) continue;
      const absl::StatusOr<double> rate = Rate(*text);
      if (!rate.ok()) return rate.status();
      *out = *rate;
    }
  }
  Describe(c, st);
  return absl::OkStatus();
}

absl::Status CompileActions(const v1::Actions& a, uint32_t router_asn, Statement& st) {
  st.disposition = a.disposition() == v1::Actions::DISPOSITION_UNSPECIFIED ? v1::Actions::DISPOSITION_NEXT
                                                                           : a.disposition();
  if (a.has_local_pref()) st.local_pref = a.local_pref();
  if (a.has_med()) st.med = a.med();
  for (const v1::CommunityAction& ca : a.communities()) {
    internal::CommunityOp op;
    op.op = ca.op();
    for (const std::string& text : ca.communities()) {
      const absl::StatusOr<conf::CommunityText> c = conf::ParseCommunityText(text);
      if (!c.ok()) return c.status();
      switch (c->kind) {
        case conf::CommunityText::Kind::kStandard: op.standard.push_back(c->standard); break;
        case conf::CommunityText::Kind::kLarge: op.large.push_back({c->large[0], c->large[1], c->large[2]}); break;
        case conf::CommunityText::Kind::kExtended: op.extended.push_back({c->extended}); break;
        case conf::CommunityText::Kind::kLinkBandwidth:
          return absl::InvalidArgumentError(absl::StrCat("\"", text, "\": use actions.link_bandwidth"));
      }
    }
    const char* verb = ca.op() == v1::CommunityAction::OP_ADD      ? "add"
                       : ca.op() == v1::CommunityAction::OP_REMOVE ? "remove"
                                                                   : "replace with";
    op.text = absl::StrCat("communities ", verb, " ", absl::StrJoin(ca.communities(), " "));
    st.communities.push_back(std::move(op));
  }
  if (a.as_path_prepend().repeat() > 0) {
    st.prepend_asn = a.as_path_prepend().asn() != 0 ? a.as_path_prepend().asn() : router_asn;
    st.prepend_count = a.as_path_prepend().repeat();
  }
  if (a.next_hop().self()) {
    st.next_hop_self = true;
  } else if (!a.next_hop().address().empty()) {
    const absl::StatusOr<net::IpAddress> nh = AddressFromText(a.next_hop().address());
    if (!nh.ok()) return nh.status();
    st.next_hop = *nh;
  }
  if (a.has_link_bandwidth()) {
    using Lb = v1::LinkBandwidthAction;
    const Lb& lb = a.link_bandwidth();
    st.lb_asn = lb.asn() != 0 ? lb.asn() : router_asn;
    st.lb_transitive = !lb.non_transitive();
    if (!lb.rate().empty()) {
      const absl::StatusOr<double> rate = Rate(lb.rate());
      if (!rate.ok()) return rate.status();
      st.lb_bits_per_second = *rate;
    }
    switch (lb.op()) {
      case Lb::OP_SET: st.lb_op = internal::LinkBandwidthOp::kSet; break;
      case Lb::OP_DRAIN:
        st.lb_op = internal::LinkBandwidthOp::kSet;
        st.lb_bits_per_second = 0;  // RFC 10005: 0 is valid, a drained link (weight 0)
        break;
      case Lb::OP_REMOVE: st.lb_op = internal::LinkBandwidthOp::kRemove; break;
      case Lb::OP_CAP: st.lb_op = internal::LinkBandwidthOp::kCap; break;
      case Lb::OP_CUMULATIVE: st.lb_op = internal::LinkBandwidthOp::kCumulative; break;
      case Lb::OP_NUM_MULTIPATHS: st.lb_op = internal::LinkBandwidthOp::kNumMultipaths; break;
      default: return absl::InvalidArgumentError("link_bandwidth: op is required");
    }
  }
  return absl::OkStatus();
}

// --- evaluate --------------------------------------------------------------------------------

const net::IpAddress* RouteNextHop(const wire::PathAttributes& a) {
  if (a.mp_reach) return &a.mp_reach->next_hop;
  if (a.next_hop) return &*a.next_hop;
  return nullptr;
}

// The first condition of `st` that does not hold, or nullopt when all do.
// `test_prefix` false: every condition but the prefix set (ConditionMemo).
std::optional<Condition> FirstFailed(const Statement& st, const RouteContext& route, const wire::PathAttributes& a,
                                     bool test_prefix = true) {
  if (st.sources != 0 && !(st.sources & (1 << static_cast<int>(route.source)))) return Condition::kSource;
  if (st.neighbor_set.set) {
    const bool in = route.neighbor && st.neighbor_set.set->Contains(*route.neighbor);
    if (in == (st.neighbor_set.match == MatchType::kInvert)) return Condition::kNeighborSet;
  }
  if (st.origins != 0 && !(a.origin && (st.origins & (1 << static_cast<int>(*a.origin))))) return Condition::kOrigin;
  if (st.as_path_length_min || st.as_path_length_max) {
    const size_t length = a.as_path ? a.as_path->Length() : 0;
    if ((st.as_path_length_min && length < *st.as_path_length_min) ||
        (st.as_path_length_max && length > *st.as_path_length_max)) {
      return Condition::kAsPathLength;
    }
  }
  if (test_prefix && st.prefix_set.set) {
    if (st.prefix_set.set->Contains(route.prefix) == (st.prefix_set.match == MatchType::kInvert)) {
      return Condition::kPrefixSet;
    }
  }
  if (st.next_hop_set.set) {
    const net::IpAddress* nh = RouteNextHop(a);
    const bool in = nh != nullptr && st.next_hop_set.set->Contains(*nh);
    if (in == (st.next_hop_set.match == MatchType::kInvert)) return Condition::kNextHopSet;
  }
  if (st.community_set.set && !st.community_set.set->Match(a, st.community_set.match)) return Condition::kCommunitySet;
  if (st.link_bandwidth.active) {
    const internal::LinkBandwidthCondition& c = st.link_bandwidth;
    const wire::LinkBandwidthSelection sel = a.SelectedLinkBandwidth();
    const bool present = sel.chosen.has_value();
    using P = internal::LinkBandwidthCondition::Presence;
    if (c.presence == P::kAbsent && present) return Condition::kLinkBandwidth;
    if ((c.presence == P::kPresent || c.min || c.max) && !present) return Condition::kLinkBandwidth;
    if (present) {
      const double bps = sel.chosen->bits_per_second();
      if ((c.min && bps < *c.min) || (c.max && bps > *c.max)) return Condition::kLinkBandwidth;
    }
  }
  if (st.as_path_set.set) {
    // One buffer per thread: rendering allocates only until it has grown to the longest path.
    thread_local std::string text;
    if (a.as_path) {
      RenderAsPath(*a.as_path, text);
    } else {
      text.clear();
    }
    if (!st.as_path_set.set->Match(text, st.as_path_set.match)) return Condition::kAsPathSet;
  }
  return std::nullopt;
}

template <typename T>
void AddUnique(std::vector<T>& to, const std::vector<T>& values) {
  for (const T& v : values) {
    if (std::find(to.begin(), to.end(), v) == to.end()) to.push_back(v);
  }
}

template <typename T>
void RemoveAll(std::vector<T>& from, const std::vector<T>& values) {
  std::erase_if(from, [&](const T& v) { return std::find(values.begin(), values.end(), v) != values.end(); });
}

bool IsLinkBandwidth(const wire::ExtendedCommunity& ec) {
  return wire::LinkBandwidth::FromExtendedCommunity(ec).has_value();
}

void ApplyCommunities(const internal::CommunityOp& op, wire::PathAttributes& a) {
  switch (op.op) {
    case v1::CommunityAction::OP_REPLACE:
      // The kinds the list names are replaced; an empty list clears the standard ones.
      if (!op.standard.empty() || (op.large.empty() && op.extended.empty())) a.communities.clear();
      if (!op.large.empty()) a.large_communities.clear();
      // Link bandwidth stays: it is changed by its own action (RFC 10005 §7.1 semantics).
      if (!op.extended.empty()) std::erase_if(a.extended_communities, [](const auto& ec) { return !IsLinkBandwidth(ec); });
      [[fallthrough]];
    case v1::CommunityAction::OP_ADD:
      AddUnique(a.communities, op.standard);
      AddUnique(a.large_communities, op.large);
      AddUnique(a.extended_communities, op.extended);
      break;
    default:  // OP_REMOVE
      RemoveAll(a.communities, op.standard);
      RemoveAll(a.large_communities, op.large);
      RemoveAll(a.extended_communities, op.extended);
      break;
  }
}

void Prepend(wire::PathAttributes& a, uint32_t asn, uint32_t count) {
  if (!a.as_path) a.as_path.emplace();
  auto& segments = a.as_path->segments;
  if (segments.empty() || segments.front().type != wire::AsSegmentType::kSequence) {
    segments.insert(segments.begin(), wire::AsPathSegment{wire::AsSegmentType::kSequence, {}});
  }
  auto& asns = segments.front().asns;
  asns.insert(asns.begin(), count, asn);
}

// Whether `nh` can be the next hop of a route with these attributes: MP_REACH holds either
// family (RFC 8950 puts IPv6 next hops on IPv4 routes), the IPv4 NEXT_HOP only IPv4.
bool NextHopFits(const wire::PathAttributes& a, const net::IpAddress& nh) { return a.mp_reach || nh.is_v4(); }

void SetNextHop(wire::PathAttributes& a, const net::IpAddress& nh) {
  if (a.mp_reach) {
    a.mp_reach->next_hop = nh;
    a.mp_reach->link_local.reset();  // it belonged to the old next hop's interface
  } else {
    a.next_hop = nh;
  }
}

// Applies the actions of a matched statement; copies the attributes on the first change.
void ApplyActions(const Statement& st, const RouteContext& route, PolicyResult& result, StatementTrace* trace) {
  auto attrs = [&]() -> wire::PathAttributes& {
    if (!result.modified) result.modified = *route.attributes;
    return *result.modified;
  };
  // Trace text is built only when a trace was asked for: the hot path formats nothing.
  const bool tracing = trace != nullptr;
  auto note = [&](auto&&... parts) {
    if (tracing) trace->applied.push_back(absl::StrCat(parts...));
  };
  if (st.local_pref) {
    attrs().local_pref = *st.local_pref;
    note("local-pref ", *st.local_pref);
  }
  if (st.med) {
    attrs().med = *st.med;
    note("med ", *st.med);
  }
  for (const internal::CommunityOp& op : st.communities) {
    ApplyCommunities(op, attrs());
    note(op.text);
  }
  if (st.prepend_count > 0) {
    Prepend(attrs(), st.prepend_asn, st.prepend_count);
    note("as-path prepend ", st.prepend_asn, " x", st.prepend_count);
  }
  if (st.next_hop && NextHopFits(result.attributes(route), *st.next_hop)) {
    SetNextHop(attrs(), *st.next_hop);
    if (tracing) note("next-hop ", st.next_hop->ToString());
  } else if (st.next_hop && tracing) {
    note("next-hop ", st.next_hop->ToString(), " not applied: the route's NEXT_HOP is IPv4 (no MP_REACH)");
  }
  if (st.next_hop_self) {
    result.deferred.next_hop_self = true;
    note("next-hop self (export stage)");
  }
  using Op = internal::LinkBandwidthOp;
  switch (st.lb_op) {
    case Op::kNone: break;
    case Op::kSet:
      attrs().ReplaceLinkBandwidth(wire::LinkBandwidth::FromBitsPerSecond(st.lb_asn, st.lb_bits_per_second, st.lb_transitive));
      if (tracing) note("link-bandwidth ", wire::FormatBitsPerSecond(st.lb_bits_per_second));
      break;
    case Op::kRemove:
      if (const wire::PathAttributes& now = result.attributes(route);
          std::any_of(now.extended_communities.begin(), now.extended_communities.end(), IsLinkBandwidth)) {
        attrs().ReplaceLinkBandwidth(std::nullopt);
      }
      note("link-bandwidth remove");
      break;
    case Op::kCap: {
      // Lower a claim above the cap; the sender's AS and encoding stay (it is still its link).
      const wire::LinkBandwidthSelection sel = result.attributes(route).SelectedLinkBandwidth();
      if (sel.chosen && sel.chosen->bits_per_second() > st.lb_bits_per_second) {
        const wire::LinkBandwidth capped = wire::LinkBandwidth::FromBitsPerSecond(
            sel.chosen->asn(), st.lb_bits_per_second, sel.chosen->transitive());
        attrs().ReplaceLinkBandwidth(capped);
        if (tracing) note("link-bandwidth capped ", wire::FormatBitsPerSecond(sel.chosen->bits_per_second()), " -> ",
             wire::FormatBitsPerSecond(st.lb_bits_per_second));
      } else {
        if (tracing) note("link-bandwidth cap ", wire::FormatBitsPerSecond(st.lb_bits_per_second), " (within)");
      }
      break;
    }
    case Op::kCumulative:
    case Op::kNumMultipaths:
      result.deferred.link_bandwidth =
          st.lb_op == Op::kCumulative ? LinkBandwidthExport::kCumulative : LinkBandwidthExport::kNumMultipaths;
      result.deferred.reference_bits_per_second = st.lb_bits_per_second;
      result.deferred.link_bandwidth_asn = st.lb_asn;
      result.deferred.link_bandwidth_transitive = st.lb_transitive;
      note(st.lb_op == Op::kCumulative ? "link-bandwidth cumulative (export stage)"
                                       : "link-bandwidth num-multipaths (export stage)");
      break;
  }
}

}  // namespace

// The statements of `policy` on the route as `result` holds it so far (a chain passes the
// attributes on); sets verdict and statement when one decides.
void EvaluateInto(const CompiledPolicy& policy, const RouteContext& route, PolicyResult& result, Trace* trace,
                  uint64_t hit_routes) {
  for (size_t i = 0; i < policy.statements_.size(); ++i) {
    const Statement& st = policy.statements_[i];
    std::optional<Condition> failed;
    if (route.memo != nullptr && trace == nullptr && !result.modified) {
      // The route's own attributes: what does not test the prefix was tested for an earlier
      // prefix of the run, or is tested now, once.
      auto& rest = route.memo->rest_;
      auto it = std::find_if(rest.begin(), rest.end(), [&](const auto& e) { return e.first == &st; });
      if (it == rest.end()) {
        rest.emplace_back(&st, !FirstFailed(st, route, *route.attributes, /*test_prefix=*/false));
        it = rest.end() - 1;
      }
      if (!it->second) {
        failed = Condition::kSource;  // some condition other than the prefix set failed
      } else if (st.prefix_set.set &&
                 st.prefix_set.set->Contains(route.prefix) == (st.prefix_set.match == MatchType::kInvert)) {
        failed = Condition::kPrefixSet;
      }
    } else {
      failed = FirstFailed(st, route, result.attributes(route));
    }
    StatementTrace* line = nullptr;
    if (trace != nullptr) {
      line = &trace->statements.emplace_back();
      line->policy = policy.name_;
      line->statement = st.name;
      line->matched = !failed;
      line->failed = failed;
      for (const auto& [kind, text] : st.described) {
        if (!failed || kind == *failed) line->conditions.push_back(text);
      }
    }
    if (failed) continue;
    policy.hits_[i] += hit_routes;
    if (st.disposition == v1::Actions::DISPOSITION_REJECT) {
      // A rejected route's attributes do not matter; nothing is applied.
      result.verdict = Verdict::kReject;
      result.statement = static_cast<int>(i);
      if (line != nullptr) line->applied.push_back("reject");
      return;
    }
    ApplyActions(st, route, result, line);
    if (st.disposition == v1::Actions::DISPOSITION_ACCEPT) {
      result.verdict = Verdict::kAccept;
      result.statement = static_cast<int>(i);
      if (line != nullptr) line->applied.push_back("accept");
      return;
    }
  }
}

PolicyResult Evaluate(const CompiledPolicy& policy, const RouteContext& route, Trace* trace, EvaluateOptions options) {
  PolicyResult result;
  EvaluateInto(policy, route, result, trace, options.count_hits ? options.routes : 0);
  if (result.verdict != Verdict::kNoDecision) result.policy = 0;
  return result;
}

PolicyResult EvaluateChain(std::span<const CompiledPolicy* const> chain, const RouteContext& route,
                           Verdict default_verdict, Trace* trace, EvaluateOptions options) {
  PolicyResult result;
  for (size_t p = 0; p < chain.size(); ++p) {
    EvaluateInto(*chain[p], route, result, trace, options.count_hits ? options.routes : 0);
    if (result.verdict != Verdict::kNoDecision) {
      result.policy = static_cast<int>(p);
      return result;
    }
  }
  result.verdict = default_verdict;
  return result;
}

CompiledPolicy::~CompiledPolicy() = default;
size_t CompiledPolicy::statement_count() const { return statements_.size(); }
const std::string& CompiledPolicy::statement_name(size_t i) const { return statements_[i].name; }

absl::StatusOr<PolicySet> PolicySet::Compile(const v1::Config& config) {
  Sets sets;
  const v1::DefinedSets& d = config.defined_sets();
  for (absl::Status s : {
           CompileSets(d.prefix_sets(), PrefixSet::Compile, sets.prefix),
           CompileSets(d.next_hop_sets(), PrefixSet::CompileNextHops, sets.next_hop),
           CompileSets(d.community_sets(), CommunitySet::Compile, sets.community),
           CompileSets(d.as_path_sets(), AsPathSet::Compile, sets.as_path),
           CompileSets(d.neighbor_sets(), NeighborSet::Compile, sets.neighbor),
       }) {
    if (!s.ok()) return s;
  }
  PolicySet out;
  for (const v1::Policy& p : config.policies()) {
    std::shared_ptr<CompiledPolicy> policy(new CompiledPolicy());
    policy->name_ = p.name();
    for (int i = 0; i < p.statements_size(); ++i) {
      const v1::Statement& s = p.statements(i);
      Statement st;
      st.name = s.name().empty() ? absl::StrCat("#", i + 1) : s.name();
      absl::Status status = CompileConditions(s.conditions(), sets, st);
      if (status.ok()) status = CompileActions(s.actions(), config.router().asn(), st);
      if (!status.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("policy \"", p.name(), "\" statement ", st.name, ": ", status.message()));
      }
      policy->depends_on_prefix_ |= st.prefix_set.set != nullptr;
      policy->depends_on_neighbor_ |= st.neighbor_set.set != nullptr || st.sources != 0;
      policy->statements_.push_back(std::move(st));
    }
    policy->hits_.assign(policy->statements_.size(), 0);
    if (!out.policies_.emplace(p.name(), std::move(policy)).second) {
      return absl::InvalidArgumentError(absl::StrCat("policy \"", p.name(), "\" is defined twice"));
    }
  }
  return out;
}

const CompiledPolicy* PolicySet::Find(std::string_view name) const {
  const auto it = policies_.find(absl::string_view(name.data(), name.size()));
  return it == policies_.end() ? nullptr : it->second.get();
}

const char* VerdictName(Verdict v) {
  switch (v) {
    case Verdict::kAccept: return "accept";
    case Verdict::kReject: return "reject";
    case Verdict::kNoDecision: return "no decision";
  }
  return "?";
}

const char* ConditionName(Condition c) {
  switch (c) {
    case Condition::kSource: return "source";
    case Condition::kNeighborSet: return "neighbor-set";
    case Condition::kOrigin: return "origin";
    case Condition::kAsPathLength: return "as-path-length";
    case Condition::kPrefixSet: return "prefix-set";
    case Condition::kNextHopSet: return "next-hop-set";
    case Condition::kCommunitySet: return "community-set";
    case Condition::kLinkBandwidth: return "link-bandwidth";
    case Condition::kAsPathSet: return "as-path-set";
  }
  return "?";
}

std::string Trace::ToString() const {
  std::string out;
  for (const StatementTrace& s : statements) {
    absl::StrAppend(&out, s.policy, " ", s.statement, ": ");
    const std::string conditions = absl::StrJoin(s.conditions, ", ");
    if (s.matched) {
      absl::StrAppend(&out, "matched", conditions.empty() ? "" : " (", conditions, conditions.empty() ? "" : ")",
                      s.applied.empty() ? "" : ": ", absl::StrJoin(s.applied, ", "), "\n");
    } else {
      absl::StrAppend(&out, "no match (", conditions.empty() ? ConditionName(*s.failed) : conditions, ")\n");
    }
  }
  return out;
}

}  // namespace bagd::policy
