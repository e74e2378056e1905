#include "bgpd/daemon/config_translation.h"

#include <unistd.h>

#include <algorithm>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "conf/bfd_settings.h"
#include "conf/config_defaults.h"
#include "conf/rate_text.h"

namespace bagd::daemon {

using session::PeerConfig;

namespace {

absl::StatusOr<uint32_t> RouterId(const std::string& text) {
  auto a = net::IpAddress::Parse(text);
  if (!a.ok() || !a->is_v4()) return absl::InvalidArgumentError(absl::StrCat("router_id '", text, "' is not an IPv4 address"));
  return a->v4();
}

namespace v1 = config::v1;

absl::StatusOr<double> Rate(const std::string& field, const std::string& text) {
  auto r = conf::ParseRate(text);
  if (!r.ok()) return absl::InvalidArgumentError(absl::StrCat(field, ": ", r.status().message()));
  return *r;
}

}  // namespace

std::array<rib::PrefixLimitConfig, net::kFamilyCount> PrefixLimitsOf(const config::v1::Neighbor& n) {
  std::array<rib::PrefixLimitConfig, net::kFamilyCount> out{};
  for (const auto& m : n.max_prefixes()) {
    const net::Family family =
        m.family() == config::v1::IPV6_UNICAST ? net::Family::kIpv6Unicast : net::Family::kIpv4Unicast;
    rib::PrefixLimitConfig& limit = out[static_cast<int>(family)];
    limit.limit = m.limit();
    limit.warning_threshold_percent = m.has_warning_threshold_percent() ? m.warning_threshold_percent() : conf::kDefaultPrefixWarningPercent;
    limit.warning_only = m.warning_only();
    limit.restart_interval_s = m.restart_interval();
  }
  return out;
}

GracefulRestartSettings GracefulRestartOf(const config::v1::Router& router, const config::v1::Neighbor& n) {
  const v1::GracefulRestart& r = router.graceful_restart();
  const v1::GracefulRestart& g = n.graceful_restart();
  GracefulRestartSettings s;
  s.enabled = g.has_enabled() ? g.enabled() : (r.has_enabled() ? r.enabled() : true);
  s.restart_time = g.has_restart_time() ? g.restart_time() : (r.has_restart_time() ? r.restart_time() : conf::kDefaultGracefulRestartTime);
  s.stale_routes_time = g.has_stale_routes_time() ? g.stale_routes_time()
                                                  : (r.has_stale_routes_time() ? r.stale_routes_time() : conf::kDefaultStaleRoutesTime);
  const auto& listed = !g.families().empty() ? g.families() : r.families();
  for (int i = 0; i < net::kFamilyCount; ++i) s.families[i] = listed.empty();
  for (int af : listed) {
    if (af == v1::IPV4_UNICAST) s.families[0] = true;
    if (af == v1::IPV6_UNICAST) s.families[1] = true;
  }
  return s;
}

absl::StatusOr<std::vector<PeerConfig>> PeerConfigs(const config::v1::Config& config) {
  std::vector<PeerConfig> out;
  const auto& router = config.router();
  auto rid = RouterId(router.router_id());
  if (!rid.ok()) return rid.status();
  for (const auto& n : config.neighbors()) {
    PeerConfig p;
    auto addr = net::IpAddress::Parse(n.address());
    if (!addr.ok()) return addr.status();
    p.address = *addr;
    p.port = static_cast<uint16_t>(n.port() ? n.port() : conf::kBgpPort);
    if (!n.local_address().empty()) {
      auto la = net::IpAddress::Parse(n.local_address());
      if (!la.ok()) return la.status();
      p.local_address = *la;
    }
    p.description = n.description();
    p.password = n.password();
    if (!n.password_file().empty()) {
      std::ifstream in(n.password_file());
      if (!in) return absl::NotFoundError(absl::StrCat("cannot read password_file ", n.password_file()));
      std::getline(in, p.password);
    }
    p.ttl_security = static_cast<int>(n.ttl_security());
    p.ebgp_multihop = static_cast<int>(n.ebgp_multihop());
    p.shutdown = n.shutdown();
    p.advertisement_interval_s = n.advertisement_interval();
    p.shutdown_message = n.shutdown_message();
    p.max_prefixes = PrefixLimitsOf(n);
    if (const auto bfd = conf::EffectiveBfd(config, n)) p.bfd_hold = bfd->hold_bgp_until_up;
    auto& f = p.fsm;
    f.passive = n.passive();
    f.local.local_as = router.asn();
    f.local.remote_as = n.remote_as();
    f.local.router_id = *rid;
    const auto& t = n.timers();
    f.local.hold_time = static_cast<uint16_t>(
        t.has_hold_time() ? t.hold_time() : (router.has_hold_time() ? router.hold_time() : conf::kDefaultHoldTime));
    f.local.keepalive = static_cast<uint16_t>(
        t.has_keepalive() ? t.keepalive() : (router.has_keepalive() ? router.keepalive() : 0));
    const uint32_t retry = t.connect_retry() ? t.connect_retry() : router.connect_retry();
    if (retry) f.connect_retry_s = retry;
    f.local.families = {false, false};
    for (int af : n.address_families()) {
      if (af == config::v1::IPV4_UNICAST) f.local.families[0] = true;
      if (af == config::v1::IPV6_UNICAST) f.local.families[1] = true;
    }
    if (n.address_families().empty()) f.local.families[0] = true;
    // The Graceful Restart capability always goes: End-of-RIB from every peer (the FIB waits
    // for it after a restart). With graceful restart on (the default) it carries the restart
    // time and the families (RFC 4724, both roles); off, restart time 0 and no families.
    const GracefulRestartSettings gr = GracefulRestartOf(router, n);
    f.local.graceful_restart = true;
    f.local.graceful_restart_time = gr.enabled ? static_cast<uint16_t>(gr.restart_time) : 0;
    for (int i = 0; i < net::kFamilyCount; ++i) f.local.graceful_restart_families[i] = gr.enabled && gr.families[i];
    p.stale_routes_time_s = gr.stale_routes_time;
    char host[256] = {};
    if (gethostname(host, sizeof host - 1) == 0) f.local.hostname = host;
    out.push_back(std::move(p));
  }
  return out;
}

absl::StatusOr<rib::WeightsConfig> WeightsConfigOf(const config::v1::Config& config, uint32_t backend_max_weight,
                                                   uint32_t backend_max_groups) {
  rib::WeightsConfig w;
  const v1::LinkBandwidth& lb = config.link_bandwidth();
  auto policy_of = [&](v1::LinkBandwidth::Mode mode, v1::LinkBandwidth::Missing missing,
                       const std::string& default_bandwidth) -> absl::StatusOr<rib::BandwidthPolicy> {
    rib::BandwidthPolicy p;
    p.use_link_bandwidth = mode != v1::LinkBandwidth::MODE_IGNORE;
    switch (missing) {
      case v1::LinkBandwidth::MISSING_SKIP: p.missing = rib::MissingBandwidth::kSkip; break;
      case v1::LinkBandwidth::MISSING_DEFAULT_WEIGHT: p.missing = rib::MissingBandwidth::kDefaultWeight; break;
      default: p.missing = rib::MissingBandwidth::kEqualCost; break;
    }
    if (!default_bandwidth.empty()) {
      auto r = Rate("link_bandwidth.default_bandwidth", default_bandwidth);
      if (!r.ok()) return r.status();
      p.default_bps = *r;
    }
    if (p.missing == rib::MissingBandwidth::kDefaultWeight && p.default_bps <= 0) {
      return absl::InvalidArgumentError("link_bandwidth: MISSING_DEFAULT_WEIGHT needs a default_bandwidth above 0");
    }
    return p;
  };
  auto global = policy_of(lb.mode(), lb.missing(), lb.default_bandwidth());
  if (!global.ok()) return global.status();
  w.policy = {*global, *global};
  for (const v1::FamilyLinkBandwidth& f : lb.families()) {
    const int index = f.family() == v1::IPV6_UNICAST ? 1 : 0;
    auto p = policy_of(f.mode() != v1::LinkBandwidth::MODE_UNSPECIFIED ? f.mode() : lb.mode(),
                       f.missing() != v1::LinkBandwidth::MISSING_UNSPECIFIED ? f.missing() : lb.missing(),
                       !f.default_bandwidth().empty() ? f.default_bandwidth() : lb.default_bandwidth());
    if (!p.ok()) return p.status();
    w.policy[index] = *p;
  }
  const v1::Fib& fib = config.fib();
  w.limits.max_weight = fib.max_weight() ? std::min(fib.max_weight(), backend_max_weight) : backend_max_weight;
  w.limits.budget = fib.group_budget();
  const v1::Damping& d = config.damping();
  w.damping.decrease_delay = absl::Seconds(d.has_decrease_delay() ? d.decrease_delay() : conf::kDefaultDecreaseDelay);
  w.damping.increase_hold_down = absl::Seconds(d.has_increase_hold_down() ? d.increase_hold_down() : conf::kDefaultIncreaseHoldDown);
  w.damping.min_change_percent = d.has_min_change_percent() ? d.min_change_percent() : conf::kDefaultMinChangePercent;
  w.damping.max_hold_down = absl::Seconds(d.has_max_hold_down() ? d.max_hold_down() : conf::kDefaultMaxHoldDown);
  w.damping.half_life = absl::Seconds(d.has_half_life() ? d.half_life() : conf::kDefaultHalfLife);
  w.early.enabled = !d.has_early_reweight() || d.early_reweight();
  w.early.check_delay =
      absl::Seconds(d.has_early_reweight_check() ? d.early_reweight_check() : conf::kDefaultEarlyReweightCheck);
  w.damping.new_path_settle =
      absl::Seconds(d.has_new_path_settle() ? d.new_path_settle() : conf::kDefaultNewPathSettle);
  // The group budget: the smaller of the config's limit and the backend's, where either is set.
  rib::GroupBudgetConfig& b = w.budget;
  b.max_groups = fib.max_groups();
  if (backend_max_groups != 0 && (b.max_groups == 0 || backend_max_groups < b.max_groups)) b.max_groups = backend_max_groups;
  b.reserve = fib.has_group_reserve() ? fib.group_reserve() : conf::kDefaultFibGroupReserve;
  b.swaps_per_revisit =
      fib.has_group_swaps_per_revisit() ? fib.group_swaps_per_revisit() : conf::kDefaultGroupSwapsPerRevisit;
  if (b.max_groups != 0 && b.reserve >= b.max_groups) b.reserve = b.max_groups - 1;  // a backend's small limit
  switch (fib.group_merge()) {
    case v1::Fib::GROUP_MERGE_SUBSET: b.scope = rib::MergeScope::kSubset; break;
    case v1::Fib::GROUP_MERGE_SUPERSET: b.scope = rib::MergeScope::kSuperset; break;
    default: b.scope = rib::MergeScope::kSameNextHops; break;
  }
  b.weight_by = fib.group_merge_weight() == v1::Fib::GROUP_MERGE_WEIGHT_BANDWIDTH ? rib::MergeWeight::kBandwidth
                                                                                  : rib::MergeWeight::kPrefixes;
  // A merge is revisited as a bandwidth increase is: after the increase hold-down, for a
  // gain of at least min_change_percent.
  b.improve_after = w.damping.increase_hold_down;
  b.min_gain = w.damping.min_change_percent / 100;
  return w;
}

absl::StatusOr<rib::LinkBandwidthExport> LinkBandwidthExportOf(const config::v1::NeighborLinkBandwidth& n) {
  rib::LinkBandwidthExport e;
  using M = rib::LinkBandwidthExportMode;
  switch (n.mode()) {
    case v1::NeighborLinkBandwidth::EXPORT_NONE: e.mode = M::kNone; break;
    case v1::NeighborLinkBandwidth::EXPORT_PASS: e.mode = M::kPass; break;
    case v1::NeighborLinkBandwidth::EXPORT_FIXED: e.mode = M::kFixed; break;
    case v1::NeighborLinkBandwidth::EXPORT_CUMULATIVE: e.mode = M::kCumulative; break;
    case v1::NeighborLinkBandwidth::EXPORT_NUM_MULTIPATHS: e.mode = M::kNumMultipaths; break;
    default: e.mode = M::kAuto; break;
  }
  if (!n.rate().empty()) {
    auto r = Rate("link_bandwidth.rate", n.rate());
    if (!r.ok()) return r.status();
    e.fixed_bps = *r;
  }
  if (!n.reference().empty()) {
    auto r = Rate("link_bandwidth.reference", n.reference());
    if (!r.ok()) return r.status();
    e.reference_bps = *r;
  }
  e.transitive = n.encoding() != v1::NeighborLinkBandwidth::ENCODING_NON_TRANSITIVE;
  e.readvertise_threshold_percent = n.has_readvertise_threshold_percent() ? n.readvertise_threshold_percent()
                                                                         : conf::kDefaultReadvertiseThresholdPercent;
  e.readvertise_interval = absl::Seconds(n.has_readvertise_interval() ? n.readvertise_interval() : conf::kDefaultReadvertiseInterval);
  return e;
}

absl::StatusOr<std::vector<Network>> NetworksOf(const config::v1::Config& config) {
  std::vector<Network> out;
  for (const auto& n : config.networks()) {
    auto p = net::Prefix::Parse(n.prefix());
    if (!p.ok()) return absl::InvalidArgumentError(absl::StrCat("network '", n.prefix(), "': ", p.status().message()));
    Network net{net::Nlri{*p, 0}, std::nullopt, n.capacity_source()};
    if (!n.link_bandwidth().empty()) {
      auto r = Rate(absl::StrCat("network ", n.prefix(), ": link_bandwidth"), n.link_bandwidth());
      if (!r.ok()) return r.status();
      net.link_bandwidth_bps = *r;
    }
    out.push_back(net);
  }
  return out;
}

rib::DecisionConfig DecisionConfigOf(const config::v1::Config& config) {
  rib::DecisionConfig decision;
  decision.maximum_paths_ebgp = std::max<uint32_t>(1, config.multipath().maximum_paths_ebgp());
  decision.maximum_paths_ibgp = std::max<uint32_t>(1, config.multipath().maximum_paths_ibgp());
  decision.as_path_multipath_relax = config.multipath().as_path_relax();
  return decision;
}

bool ReweighOnReload(const config::v1::Config& before, const config::v1::Config& after) {
  return after.link_bandwidth().SerializeAsString() != before.link_bandwidth().SerializeAsString() ||
         after.fib().max_weight() != before.fib().max_weight() ||
         after.fib().group_budget() != before.fib().group_budget();
}

std::string PolicyChain::Describe() const {
  std::string out;
  std::vector<std::string> names;
  for (const policy::CompiledPolicy* p : policies) names.push_back(p->name());
  if (!names.empty()) absl::StrAppend(&out, "[", absl::StrJoin(names, ", "), "] then ");
  absl::StrAppend(&out, default_verdict == policy::Verdict::kAccept ? "accept" : "reject");
  return out;
}

namespace {

absl::StatusOr<PolicyChain> ChainOf(const config::v1::Config& config, const google::protobuf::RepeatedPtrField<std::string>& names,
                                    v1::DefaultAction end, const policy::PolicySet& set, const std::string& what) {
  PolicyChain chain;
  chain.default_verdict = end == v1::DEFAULT_ACTION_REJECT ? policy::Verdict::kReject : policy::Verdict::kAccept;
  for (const std::string& name : names) {
    const policy::CompiledPolicy* p = set.Find(name);
    if (p == nullptr) return absl::InvalidArgumentError(absl::StrCat(what, ": policy \"", name, "\" is not defined"));
    chain.policies.push_back(p);
    chain.depends_on_prefix |= p->depends_on_prefix();
    for (const v1::Policy& def : config.policies()) {
      if (def.name() == name) absl::StrAppend(&chain.fingerprint, name, "=", def.SerializeAsString(), ";");
    }
  }
  // The sets the chain's statements name, as defined now (a change to another set changes
  // nothing for it).
  auto add_sets = [&](const auto& sets, auto referenced) {
    for (const auto& set : sets) {
      bool used = false;
      for (const v1::Policy& def : config.policies()) {
        if (std::find(names.begin(), names.end(), def.name()) == names.end()) continue;
        for (const v1::Statement& st : def.statements()) used |= referenced(st.conditions()) == set.name();
      }
      if (used) absl::StrAppend(&chain.fingerprint, "set ", set.name(), "=", set.SerializeAsString(), ";");
    }
  };
  const v1::DefinedSets& d = config.defined_sets();
  add_sets(d.prefix_sets(), [](const v1::Conditions& c) { return c.prefix_set().set(); });
  add_sets(d.community_sets(), [](const v1::Conditions& c) { return c.community_set().set(); });
  add_sets(d.as_path_sets(), [](const v1::Conditions& c) { return c.as_path_set().set(); });
  add_sets(d.neighbor_sets(), [](const v1::Conditions& c) { return c.neighbor_set().set(); });
  add_sets(d.next_hop_sets(), [](const v1::Conditions& c) { return c.next_hop_set().set(); });
  absl::StrAppend(&chain.fingerprint, "end=", static_cast<int>(chain.default_verdict));
  return chain;
}

}  // namespace

absl::StatusOr<NeighborPolicies> PoliciesOf(const config::v1::Config& config, const config::v1::Neighbor& n,
                                            const policy::PolicySet& set) {
  NeighborPolicies out;
  out.soft_reconfiguration_inbound = n.soft_reconfiguration_inbound();
  for (int f = 0; f < net::kFamilyCount; ++f) {
    const v1::AddressFamily af = f == static_cast<int>(net::Family::kIpv6Unicast) ? v1::IPV6_UNICAST : v1::IPV4_UNICAST;
    const auto* import_names = &n.import_policies();
    const auto* export_names = &n.export_policies();
    for (const v1::FamilyPolicies& fp : n.family_policies()) {
      if (fp.family() != af) continue;
      if (!fp.import_policies().empty()) import_names = &fp.import_policies();
      if (!fp.export_policies().empty()) export_names = &fp.export_policies();
    }
    const std::string what = absl::StrCat("neighbor ", n.address(), " ", net::FamilyName(static_cast<net::Family>(f)));
    auto in = ChainOf(config, *import_names, n.default_import(), set, absl::StrCat(what, " import"));
    if (!in.ok()) return in.status();
    auto ex = ChainOf(config, *export_names, n.default_export(), set, absl::StrCat(what, " export"));
    if (!ex.ok()) return ex.status();
    out.import[f] = *std::move(in);
    out.export_[f] = *std::move(ex);
  }
  return out;
}

}  // namespace bagd::daemon
