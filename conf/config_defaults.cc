#include "conf/config_defaults.h"

#include <algorithm>
#include <string>
#include <vector>

namespace bagd::conf {

namespace v1 = bagd::config::v1;

EffectiveTimers RouterTimers(const v1::Router& router) {
  EffectiveTimers t;
  t.hold_time = router.has_hold_time() ? router.hold_time() : kDefaultHoldTime;
  // RFC 4271 §10: "suggested value for the KeepaliveTime is 1/3 of the HoldTime".
  t.keepalive = router.has_keepalive() ? router.keepalive() : t.hold_time / 3;
  t.connect_retry = router.connect_retry() != 0 ? router.connect_retry() : kDefaultConnectRetry;
  return t;
}

EffectiveTimers NeighborTimers(const v1::Router& router, const v1::Neighbor& neighbor) {
  const EffectiveTimers from_router = RouterTimers(router);
  const v1::Timers& own = neighbor.timers();
  EffectiveTimers t;
  t.hold_time_inherited = !own.has_hold_time();
  t.hold_time = own.has_hold_time() ? own.hold_time() : from_router.hold_time;
  if (own.has_keepalive()) {
    t.keepalive = own.keepalive();
  } else if (own.has_hold_time()) {
    t.keepalive = own.hold_time() / 3;
  } else {
    t.keepalive = from_router.keepalive;
  }
  t.connect_retry = own.connect_retry() != 0 ? own.connect_retry() : from_router.connect_retry;
  return t;
}

namespace {

bool LooksLikeIpv6(const std::string& address) { return address.find(':') != std::string::npos; }

}  // namespace

void ApplyNeighborDefaults(const v1::Router& router, v1::Neighbor& neighbor) {
  const v1::GracefulRestart& gr = router.graceful_restart();
  if (neighbor.port() == 0) neighbor.set_port(kBgpPort);
  // Computed before writing: NeighborTimers() looks at which fields the user set.
  const EffectiveTimers t = NeighborTimers(router, neighbor);
  v1::Timers& timers = *neighbor.mutable_timers();
  timers.set_hold_time(t.hold_time);
  timers.set_keepalive(t.keepalive);
  timers.set_connect_retry(t.connect_retry);
  if (neighbor.address_families().empty()) {
    neighbor.add_address_families(LooksLikeIpv6(neighbor.address()) ? v1::IPV6_UNICAST
                                                                    : v1::IPV4_UNICAST);
  }
  // Graceful restart: the router's settings for what the neighbor leaves out; its families
  // are those of the neighbor's address families it selects (all by default).
  {
    v1::GracefulRestart& ngr = *neighbor.mutable_graceful_restart();
    if (!ngr.has_enabled()) ngr.set_enabled(gr.enabled());
    if (!ngr.has_restart_time()) ngr.set_restart_time(gr.restart_time());
    if (!ngr.has_stale_routes_time()) ngr.set_stale_routes_time(gr.stale_routes_time());
    std::vector<int> selected(ngr.families().begin(), ngr.families().end());
    if (selected.empty()) selected.assign(gr.families().begin(), gr.families().end());
    if (selected.empty()) selected.assign(neighbor.address_families().begin(), neighbor.address_families().end());
    ngr.clear_families();
    for (int af : neighbor.address_families()) {
      if (std::find(selected.begin(), selected.end(), af) != selected.end()) {
        ngr.add_families(static_cast<v1::AddressFamily>(af));
      }
    }
  }
  // The end of the policy chains: RFC 8212 §3 unless the router opts out.
  const bool ebgp = neighbor.remote_as() != router.asn();
  const bool requires_policy = router.ebgp_requires_policy();
  const v1::DefaultAction end = ebgp && requires_policy ? v1::DEFAULT_ACTION_REJECT : v1::DEFAULT_ACTION_ACCEPT;
  if (neighbor.default_import() == v1::DEFAULT_ACTION_UNSPECIFIED) neighbor.set_default_import(end);
  if (neighbor.default_export() == v1::DEFAULT_ACTION_UNSPECIFIED) neighbor.set_default_export(end);
  // Local capacity caps when a source is given (docs/capacity.md); written for every
  // neighbor, so no enum is left unspecified (it does nothing without a source).
  if (neighbor.local_capacity() == v1::LOCAL_CAPACITY_UNSPECIFIED) neighbor.set_local_capacity(v1::LOCAL_CAPACITY_CAP);
  v1::NeighborLinkBandwidth& export_lb = *neighbor.mutable_link_bandwidth();
  if (export_lb.mode() == v1::NeighborLinkBandwidth::EXPORT_UNSPECIFIED) {
    export_lb.set_mode(v1::NeighborLinkBandwidth::EXPORT_AUTO);
  }
  if (export_lb.encoding() == v1::NeighborLinkBandwidth::ENCODING_UNSPECIFIED) {
    export_lb.set_encoding(v1::NeighborLinkBandwidth::ENCODING_TRANSITIVE);
  }
  if (!export_lb.has_readvertise_threshold_percent()) {
    export_lb.set_readvertise_threshold_percent(kDefaultReadvertiseThresholdPercent);
  }
  if (!export_lb.has_readvertise_interval()) {
    export_lb.set_readvertise_interval(kDefaultReadvertiseInterval);
  }
  for (v1::MaxPrefixes& limit : *neighbor.mutable_max_prefixes()) {
    if (!limit.has_warning_threshold_percent()) {
      limit.set_warning_threshold_percent(kDefaultPrefixWarningPercent);
    }
  }
}

void ApplyDefaults(v1::Config& config) {
  v1::Router& router = *config.mutable_router();
  if (router.listen().empty()) {
    for (const char* any : {"0.0.0.0", "::"}) {
      v1::Listen& listen = *router.add_listen();
      listen.set_address(any);
      listen.set_port(kBgpPort);
    }
  }
  for (v1::Listen& listen : *router.mutable_listen()) {
    if (listen.port() == 0) listen.set_port(kBgpPort);
  }
  const EffectiveTimers router_timers = RouterTimers(router);
  router.set_hold_time(router_timers.hold_time);
  router.set_keepalive(router_timers.keepalive);
  router.set_connect_retry(router_timers.connect_retry);
  if (router.log_level() == v1::LOG_LEVEL_UNSPECIFIED) router.set_log_level(v1::LOG_LEVEL_INFO);
  if (!router.has_ebgp_requires_policy()) router.set_ebgp_requires_policy(true);  // RFC 8212
  v1::GracefulRestart& gr = *router.mutable_graceful_restart();
  if (!gr.has_enabled()) gr.set_enabled(true);
  if (!gr.has_restart_time()) gr.set_restart_time(kDefaultGracefulRestartTime);
  if (!gr.has_stale_routes_time()) gr.set_stale_routes_time(kDefaultStaleRoutesTime);

  for (v1::Neighbor& neighbor : *config.mutable_neighbors()) ApplyNeighborDefaults(router, neighbor);
  for (v1::NeighborGroup& group : *config.mutable_neighbor_groups()) {
    if (!group.has_listen_limit()) group.set_listen_limit(kDefaultListenLimit);
  }

  v1::LinkBandwidth& lb = *config.mutable_link_bandwidth();
  if (lb.mode() == v1::LinkBandwidth::MODE_UNSPECIFIED)
    lb.set_mode(v1::LinkBandwidth::MODE_WEIGHTED);
  if (lb.missing() == v1::LinkBandwidth::MISSING_UNSPECIFIED) {
    lb.set_missing(v1::LinkBandwidth::MISSING_EQUAL_COST);
  }
  // A listed family inherits what it leaves unset, so the daemon reads each family as is.
  for (v1::FamilyLinkBandwidth& family : *lb.mutable_families()) {
    if (family.mode() == v1::LinkBandwidth::MODE_UNSPECIFIED) family.set_mode(lb.mode());
    if (family.missing() == v1::LinkBandwidth::MISSING_UNSPECIFIED) {
      family.set_missing(lb.missing());
    }
    if (family.default_bandwidth().empty()) family.set_default_bandwidth(lb.default_bandwidth());
  }

  v1::Damping& damping = *config.mutable_damping();
  if (!damping.has_decrease_delay()) damping.set_decrease_delay(kDefaultDecreaseDelay);
  if (!damping.has_increase_hold_down()) damping.set_increase_hold_down(kDefaultIncreaseHoldDown);
  if (!damping.has_min_change_percent()) damping.set_min_change_percent(kDefaultMinChangePercent);
  if (!damping.has_max_hold_down()) {
    damping.set_max_hold_down(std::max(kDefaultMaxHoldDown, damping.increase_hold_down()));
  }
  if (!damping.has_half_life()) damping.set_half_life(kDefaultHalfLife);
  if (!damping.has_early_reweight()) damping.set_early_reweight(true);
  if (!damping.has_early_reweight_check()) damping.set_early_reweight_check(kDefaultEarlyReweightCheck);
  if (!damping.has_new_path_settle()) damping.set_new_path_settle(kDefaultNewPathSettle);

  v1::Fib& fib = *config.mutable_fib();
  if (fib.backend() == v1::Fib::BACKEND_UNSPECIFIED) fib.set_backend(v1::Fib::BACKEND_NETLINK);
  if (fib.kernel_table() == 0) fib.set_kernel_table(kDefaultKernelTable);
  if (fib.appldb_socket().empty()) fib.set_appldb_socket(std::string(kDefaultAppldbSocket));
  if (fib.kernel_protocol() == 0) fib.set_kernel_protocol(kDefaultKernelProtocol);
  if (fib.group_type() == v1::Fib::GROUP_TYPE_UNSPECIFIED) fib.set_group_type(v1::Fib::GROUP_TYPE_HASH_THRESHOLD);
  if (fib.resilient_buckets() == 0) fib.set_resilient_buckets(kDefaultResilientBuckets);
  if (!fib.has_resilient_idle_timer()) fib.set_resilient_idle_timer(kDefaultResilientIdleTimer);
  if (!fib.has_retain_on_exit()) fib.set_retain_on_exit(true);
  if (!fib.has_restart_hold_time()) fib.set_restart_hold_time(kDefaultRestartHoldTime);
  if (!fib.has_audit_interval()) fib.set_audit_interval(kDefaultFibAuditInterval);
  if (!fib.has_restart_neighbor_wait()) {
    fib.set_restart_neighbor_wait(std::min(kDefaultRestartNeighborWait, fib.restart_hold_time()));
  }
  // The group budget's knobs (max_groups stays 0: the backend's limit, or none).
  if (!fib.has_group_reserve()) fib.set_group_reserve(kDefaultFibGroupReserve);
  if (!fib.has_group_swaps_per_revisit()) fib.set_group_swaps_per_revisit(kDefaultGroupSwapsPerRevisit);
  if (fib.group_merge() == v1::Fib::GROUP_MERGE_UNSPECIFIED) fib.set_group_merge(v1::Fib::GROUP_MERGE_SAME_NEXT_HOPS);
  if (fib.group_merge_weight() == v1::Fib::GROUP_MERGE_WEIGHT_UNSPECIFIED) {
    fib.set_group_merge_weight(v1::Fib::GROUP_MERGE_WEIGHT_PREFIXES);
  }
  if (fib.appldb_protocol().empty()) fib.set_appldb_protocol(std::string(kDefaultAppldbProtocol));
  if (fib.confirm() == v1::Fib::CONFIRM_UNSPECIFIED) fib.set_confirm(v1::Fib::CONFIRM_NONE);
  if (!fib.has_confirm_timeout()) fib.set_confirm_timeout(kDefaultAppldbConfirmTimeout);
  if (!fib.has_appldb_pop_batch()) fib.set_appldb_pop_batch(kDefaultAppldbPopBatch);
  if (fib.appldb_route_path() == v1::Fib::ROUTE_PATH_UNSPECIFIED) fib.set_appldb_route_path(v1::Fib::ROUTE_PATH_AUTO);
}

}  // namespace bagd::conf
