#include "bgpd/daemon/rib_view.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace bagd::daemon {

namespace {

using control::v1::RoutePath;

std::string CommunityText(uint32_t c) { return absl::StrFormat("%d:%d", c >> 16, c & 0xffff); }

std::string ExtCommunityText(const wire::ExtendedCommunity& ec) {
  if (auto lb = wire::LinkBandwidth::FromExtendedCommunity(ec)) return lb->ToString();
  return absl::StrFormat("0x%016x", ec.raw);
}

}  // namespace

void FillPathAttributes(const rib::InternedAttributes& x, bool with_next_hop, RoutePath& out) {
  if (with_next_hop) out.set_next_hop(x.next_hop.ToString());
  if (x.link_local_next_hop) out.set_link_local_next_hop(x.link_local_next_hop->ToString());
  out.set_origin(wire::OriginName(static_cast<wire::Origin>(x.origin)));
  if (x.attrs.as_path) out.set_as_path(x.attrs.as_path->ToString());
  out.set_local_pref(x.local_pref);
  out.set_has_med(x.has_med);
  out.set_med(x.med);
  for (uint32_t c : x.attrs.communities) out.add_communities(CommunityText(c));
  for (const auto& lc : x.attrs.large_communities)
    out.add_large_communities(absl::StrFormat("%d:%d:%d", lc.global_admin, lc.local1, lc.local2));
  for (const auto& ec : x.attrs.extended_communities) out.add_extended_communities(ExtCommunityText(ec));
  if (x.link_bandwidth.chosen) {
    out.set_has_link_bandwidth(true);
    out.set_link_bandwidth_bps(x.link_bandwidth.chosen->bits_per_second());
  }
  if (x.originator_id) out.set_originator_id(net::IpAddress::V4(*x.originator_id).ToString());
  for (uint32_t c : x.attrs.cluster_list) out.add_cluster_list(net::IpAddress::V4(c).ToString());
  out.set_atomic_aggregate(x.attrs.atomic_aggregate);
}

void FillPath(const rib::Rib& rib, const rib::Destination& d, size_t i, RoutePath& out) {
  const rib::Path& p = d.paths()[i];
  const rib::PeerInfo& peer = rib.peer(p.peer);
  out.set_peer(peer.local ? "local" : peer.name);
  out.set_peer_as(peer.asn);
  out.set_path_id(p.path_id);
  out.set_best(static_cast<int>(i) == d.best());
  out.set_multipath(d.in_multipath(i));
  if (static_cast<int>(i) != d.best()) {
    const rib::DecisionStep step = rib.LostAt(d, i);
    out.set_decision_step(rib::DecisionStepName(step));
    out.set_lost_reason(rib::DecisionStepReason(step));
  }
  FillPathAttributes(*p.attrs, !peer.local, out);
}

namespace {

void FillRoute(const rib::Rib& rib, const net::Prefix& prefix, const rib::Destination& d, control::v1::Route& out) {
  out.set_prefix(prefix.ToString());
  // The RIB keeps them in decision order, the best first.
  for (size_t i = 0; i < d.size(); ++i) FillPath(rib, d, i, *out.add_paths());
}

}  // namespace

std::optional<net::Prefix> FindRoute(const rib::Rib& rib, const std::string& q) {
  if (q.find('/') != std::string::npos) {
    auto p = net::Prefix::Parse(q);
    if (!p.ok() || rib.Find(*p) == nullptr) return std::nullopt;
    return *p;
  }
  auto addr = net::IpAddress::Parse(q);
  if (!addr.ok()) return std::nullopt;
  // Longest match.
  for (int len = addr->is_v4() ? 32 : 128; len >= 0; --len) {
    const net::Prefix p = net::Prefix::Make(addr->afi(), addr->bytes(), static_cast<uint8_t>(len));
    if (rib.Find(p) != nullptr) return p;
  }
  return std::nullopt;
}

absl::StatusOr<control::ControlBackend::RoutesPage> ListRoutesPage(const rib::Rib& rib,
                                                                   const control::v1::ListRoutesRequest& request,
                                                                   size_t max_routes,
                                                                   const rib::NextHopGroupRegistry* groups) {
  control::ControlBackend::RoutesPage page;
  auto fill = [&](const net::Prefix& p, const rib::Destination& d) {
    control::v1::Route& r = page.routes.emplace_back();
    FillRoute(rib, p, d, r);
    if (groups) {
      if (const rib::NextHopGroup* g = groups->GroupOf(p)) r.set_nexthop_group(g->id);
    }
  };
  const std::string& q = request.prefix();
  if (!q.empty()) {
    if (q.find('/') != std::string::npos) {
      if (auto p = net::Prefix::Parse(q); !p.ok()) return p.status();
    } else if (auto a = net::IpAddress::Parse(q); !a.ok()) {
      return a.status();
    }
    if (auto p = FindRoute(rib, q); p && max_routes > 0) fill(*p, *rib.Find(*p));
    return page;
  }
  const bool v4_only = request.family() == "ipv4-unicast";
  const bool v6_only = request.family() == "ipv6-unicast";
  std::optional<net::Prefix> after;
  if (!request.after().empty()) {
    auto p = net::Prefix::Parse(request.after());
    if (!p.ok()) return p.status();
    after = *p;
  }
  if (v6_only && (!after || after->afi() == net::Afi::kIpv4)) {
    // Every IPv6 prefix comes after the last possible IPv4 one: skip the IPv4 table.
    const uint8_t ones[4] = {0xff, 0xff, 0xff, 0xff};
    after = net::Prefix::Make(net::Afi::kIpv4, ones, 32);
  }
  // A page ends after max_routes prefixes, or earlier once it holds this many paths (a
  // prefix may have thousands), so a page stays a bounded amount of work and memory.
  const size_t max_paths = 4 * std::max<size_t>(max_routes, 1);
  size_t paths = 0;
  rib.ForEachAfter(after, [&](const net::Prefix& prefix, const rib::Destination& d) {
    if (v4_only && prefix.family() != net::Family::kIpv4Unicast) return false;  // IPv6 follows: done
    if (page.routes.size() >= max_routes || (!page.routes.empty() && paths >= max_paths)) {
      page.more = true;  // one more route after this page
      return false;
    }
    fill(prefix, d);
    paths += d.paths().size();
    return true;
  });
  return page;
}

control::v1::RibSummary RibSummary(const rib::Rib& rib, const rib::AttributeStore& store) {
  control::v1::RibSummary s;
  size_t multipath[net::kFamilyCount] = {};
  rib.ForEach([&](const net::Prefix& prefix, const rib::Destination& d) {
    if (__builtin_popcount(d.multipath()) > 1) ++multipath[static_cast<int>(prefix.family())];
  });
  for (int f = 0; f < net::kFamilyCount; ++f) {
    const auto fam = static_cast<net::Family>(f);
    auto* fs = s.add_families();
    fs->set_family(net::FamilyName(fam));
    fs->set_prefixes(rib.prefix_count(fam));
    size_t paths = 0;
    for (rib::PeerIndex p = 0; p < rib.peer_count(); ++p) paths += rib.paths_of(p, fam);
    fs->set_paths(paths);
    fs->set_multipath_prefixes(multipath[f]);
  }
  for (rib::PeerIndex p = 0; p < rib.peer_count(); ++p) {
    const rib::PeerInfo& info = rib.peer(p);
    auto* ps = s.add_peers();
    ps->set_peer(info.local ? "local" : info.name);
    ps->set_peer_as(info.asn);
    ps->set_paths_ipv4(rib.paths_of(p, net::Family::kIpv4Unicast));
    ps->set_paths_ipv6(rib.paths_of(p, net::Family::kIpv6Unicast));
    ps->set_rejected_as_loop(rib.stats(p).rejected_as_loop);
    ps->set_rejected_next_hop(rib.stats(p).rejected_next_hop);
    ps->set_withdrawn(rib.stats(p).withdrawn);
    ps->set_rejected_path_limit(rib.stats(p).rejected_path_limit);
  }
  s.set_attribute_sets(store.size());
  const size_t memory = rib.memory_bytes() + store.memory_bytes();
  s.set_memory_bytes(memory);
  s.set_bytes_per_path(rib.path_count() ? memory / rib.path_count() : 0);
  return s;
}

}  // namespace bagd::daemon

namespace bagd::daemon {

namespace {

// Where a member's applied bandwidth comes from, for bagctl: "local link lag1 300G <
// advertised 400G" (the LAG is the bottleneck), "advertised 400G <= local link lag1 800G".
std::string AppliedFrom(const rib::NextHopGroup::Member& m, const rib::LocalLink* local) {
  if (local == nullptr || !local->known) return "advertised";
  const std::string link = absl::StrCat("local link ", local->name, " ", wire::FormatBitsPerSecond(local->bps));
  const std::string advertised = absl::StrCat("advertised ", wire::FormatBitsPerSecond(m.hold.applied()));
  if (m.source == rib::BandwidthSource::kLocalLink) {
    return m.local_capped ? absl::StrCat(link, " (no link bandwidth advertised)")
                          : absl::StrCat(link, " (no link bandwidth advertised; link down: not used)");
  }
  if (m.source != rib::BandwidthSource::kCommunity && m.source != rib::BandwidthSource::kDefault) {
    return absl::StrCat(rib::BandwidthSourceName(m.source), " (", link, " not used)");
  }
  return m.local_capped ? absl::StrCat(link, " < ", advertised) : absl::StrCat(advertised, " <= ", link);
}

void FillGroup(const rib::NextHopGroup& g, absl::Time now, const rib::DampingConfig& damping,
               const rib::NextHopGroupRegistry& groups, control::v1::NextHopGroup& out) {
  out.set_id(g.id);
  out.set_family(net::FamilyName(g.family));
  out.set_prefixes(g.prefixes);
  out.set_max_error(g.max_error);
  out.set_all_drained(g.all_drained);
  if (g.follow) {
    out.set_early_followed(true);
    out.set_early_follows(g.follow->follows);
    out.set_early_checking(g.follow->walking);
    out.set_early_reverted(g.follow->reverted);
    out.set_early_check_due_unix_ms(absl::ToUnixMillis(g.follow->due(groups.config().early.check_delay)));
  }
  uint64_t sum = 0;
  for (const auto& m : g.members) sum += m.weight;
  for (size_t i = 0; i < g.members.size(); ++i) {
    const rib::NextHopGroup::Member& m = g.members[i];
    control::v1::NextHopGroupMember& o = *out.add_members();
    o.set_next_hop(m.next_hop.ToString());
    o.set_bandwidth_bps(m.bps);
    o.set_bandwidth_source(rib::BandwidthSourceName(m.source));
    if (m.link_bandwidth) o.set_link_bandwidth(m.link_bandwidth->ToString());
    o.set_applied_bandwidth_bps(m.effective);
    // Local capacity: only for a member over a LAG (the others' output stays as it was).
    if (const rib::LocalLink* local = groups.local_link(m.local_source)) {
      o.set_local_capacity_source(local->name);
      if (local->known) o.set_local_capacity_bps(local->bps);
      o.set_local_capped(m.local_capped);
      o.set_advertised_applied_bps(m.hold.applied());
      o.set_applied_from(AppliedFrom(m, local));
    }
    o.set_share(m.share);
    o.set_weight(m.weight);
    o.set_weight_share(sum ? static_cast<double>(m.weight) / static_cast<double>(sum) : 0);
    o.set_error(m.error);
    o.set_target_weight(i < g.key_weights.size() ? g.key_weights[i] : 0);
    o.set_damping_state(rib::HoldDownStateName(m.hold.state()));
    if (m.hold.state() != rib::HoldDownState::kStable) o.set_pending_until_unix_ms(absl::ToUnixMillis(m.hold.due()));
    o.set_penalty(m.hold.Penalty(now, damping));
    o.set_next_increase_hold_down_s(absl::ToDoubleSeconds(m.hold.IncreaseHoldDown(now, damping)));
  }
}

// How the budget serves `g` (nothing without one).
void FillServing(const rib::NextHopGroup& g, const rib::NextHopGroupRegistry& groups,
                 const std::function<std::optional<uint32_t>(rib::GroupId)>& fib_object,
                 control::v1::NextHopGroup& out) {
  const rib::GroupBudget* b = groups.budget();
  if (fib_object) out.set_fib_object(fib_object(g.id).value_or(0));
  if (b == nullptr) return;
  const auto s = b->Serving(g.id);
  if (!s) return;
  out.set_served_by(s->slot);
  // Not installed (the table is full and nothing uses only its next hops): merged into
  // nothing, all of its share missing.
  out.set_merged(s->merged || s->slot == 0);
  out.set_merge_error(s->slot == 0 ? 1.0 : s->error);
  out.set_served_as(s->template_id);
  if (fib_object) out.set_fib_object(s->slot != 0 ? fib_object(s->slot).value_or(0) : 0);
  if (const auto* members = b->SlotMembers(s->slot)) {
    uint64_t sum = 0;
    for (const auto& m : *members) sum += m.weight;
    for (const auto& m : *members) {
      auto* o = out.add_served_members();
      o->set_next_hop(m.next_hop.ToString());
      o->set_weight(m.weight);
      o->set_weight_share(sum ? static_cast<double>(m.weight) / static_cast<double>(sum) : 0);
    }
  }
}

void FillBudget(const rib::GroupBudget& b, control::v1::NextHopGroupBudget& out) {
  const rib::GroupBudgetConfig& c = b.config();
  const rib::GroupBudgetTotals t = b.Totals();
  out.set_max_groups(c.max_groups);
  out.set_reserve(c.reserve);
  out.set_merge_scope(rib::MergeScopeName(c.scope));
  out.set_merge_weight(c.weight_by == rib::MergeWeight::kBandwidth ? "bandwidth" : "prefixes");
  out.set_wanted(t.wanted);
  out.set_installed(t.installed);
  out.set_merged(t.merged);
  out.set_merged_prefixes(t.merged_prefixes);
  out.set_unrouted_prefixes(t.unrouted_prefixes);
  out.set_worst_error(t.worst_error);
  out.set_weighted_error(t.weighted_error);
  out.set_route_moves(t.route_moves);
  out.set_promotions(t.promotions);
  out.set_swaps(t.swaps);
  out.set_peak(t.peak);
}

}  // namespace

void FillFibGroupCap(const rib::FibGroupCap& cap, control::v1::ListNextHopGroupsResponse& out) {
  if (cap.limit == 0 && cap.refused_total == 0) return;
  control::v1::NextHopGroupBudget& b = *out.mutable_budget();
  b.set_fib_limit(cap.limit);
  b.set_fib_groups(cap.groups);
  b.set_fib_refused(cap.refused_total);
  b.set_fib_waiting_groups(cap.refused_now);
  b.set_fib_waiting_routes(cap.waiting_routes);
  b.set_fib_rebound(cap.rebound_total);
}

void FillFibRepair(const rib::FibRepairStatus& st, control::v1::ListNextHopGroupsResponse& out) {
  control::v1::FibRepair& r = *out.mutable_fib_repair();
  r.set_routes_deleted(st.repairs[0][0]);
  r.set_routes_changed(st.repairs[0][1]);
  r.set_routes_audit(st.repairs[0][2]);
  r.set_groups_deleted(st.repairs[1][0]);
  r.set_groups_changed(st.repairs[1][1]);
  r.set_groups_audit(st.repairs[1][2]);
  r.set_nexthops_deleted(st.repairs[2][0]);
  r.set_nexthops_changed(st.repairs[2][1]);
  r.set_nexthops_audit(st.repairs[2][2]);
  r.set_held_now(st.held_now);
  r.set_held_total(st.held_total);
  r.set_audits(st.audits);
  r.set_audit_interval(st.audit_interval_s);
  r.set_stale_answers(st.stale_answers);
  r.set_conflicts_now(st.conflicts_now);
  r.set_conflicts_total(st.conflicts_total);
  for (const net::Prefix& p : st.conflicts) r.add_conflicts(p.ToString());
}

absl::StatusOr<control::v1::ListNextHopGroupsResponse> ListNextHopGroups(
    const rib::Rib& rib, const rib::NextHopGroupRegistry& groups, const control::v1::ListNextHopGroupsRequest& request,
    absl::Time now, const std::function<std::optional<uint32_t>(rib::GroupId)>& fib_object) {
  control::v1::ListNextHopGroupsResponse resp;
  const rib::WeightsConfig& c = groups.config();
  const rib::DampingConfig& d = c.damping;
  auto* s = resp.mutable_settings();
  s->set_max_weight(c.limits.max_weight);
  s->set_group_budget(c.limits.budget);
  s->set_decrease_delay_s(absl::ToDoubleSeconds(d.decrease_delay));
  s->set_increase_hold_down_s(absl::ToDoubleSeconds(d.increase_hold_down));
  s->set_min_change_percent(d.min_change_percent);
  s->set_max_hold_down_s(absl::ToDoubleSeconds(d.max_hold_down));
  s->set_half_life_s(absl::ToDoubleSeconds(d.half_life));
  const rib::WeightCounters& k = groups.counters();
  auto* o = resp.mutable_counters();
  o->set_applied(k.applied);
  o->set_held(k.held);
  o->set_suppressed(k.suppressed);
  o->set_group_updates(k.group_updates);
  o->set_route_updates(k.route_updates);
  o->set_early_follows(k.early_reweights);
  o->set_early_checked(k.early_checked);
  o->set_early_moved(k.early_moved);
  o->set_early_reverted(k.early_reverted);
  if (groups.budget() != nullptr) FillBudget(*groups.budget(), *resp.mutable_budget());
  if (request.id() != 0) {
    const rib::NextHopGroup* g = groups.Find(request.id());
    if (!g) return absl::NotFoundError(absl::StrFormat("no next-hop group %d", request.id()));
    FillGroup(*g, now, d, groups, *resp.add_groups());
    FillServing(*g, groups, fib_object, *resp.mutable_groups(0));
    return resp;
  }
  if (!request.prefix().empty()) {
    auto p = FindRoute(rib, request.prefix());
    if (!p) return absl::NotFoundError(absl::StrFormat("no route for %s", request.prefix()));
    const rib::NextHopGroup* g = groups.GroupOf(*p);
    if (!g) return absl::NotFoundError(absl::StrFormat("route %s has no next-hop group", p->ToString()));
    FillGroup(*g, now, d, groups, *resp.add_groups());
    FillServing(*g, groups, fib_object, *resp.mutable_groups(0));
    return resp;
  }
  for (const rib::NextHopGroup* g : groups.Groups()) {
    FillGroup(*g, now, d, groups, *resp.add_groups());
    FillServing(*g, groups, fib_object, *resp.mutable_groups(resp.groups_size() - 1));
  }
  return resp;
}

}  // namespace bagd::daemon
