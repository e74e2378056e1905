// The config (conf/bagd.proto, defaults applied by conf/) turned into what each stage of
// the daemon takes: the sessions' PeerConfigs, the weights stage's settings, a neighbor's
// link-bandwidth export and policy chains, the originated networks. Pure: no I/O but a
// neighbor's password_file.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "bgpd/session/peer.h"
#include "conf/bagd.pb.h"
#include "policy/policy.h"
#include "rib/prefix_limit.h"
#include "rib/weights/link_bandwidth_export.h"
#include "rib/weights/nexthop_group_registry.h"

namespace bagd::daemon {

// A neighbor's graceful restart after the router's and the built-in defaults (config
// before or after conf::ApplyDefaults). families: which the neighbor's GR covers (all when
// none is listed); intersected with its negotiated families where used.
struct GracefulRestartSettings {
  bool enabled = true;
  uint32_t restart_time = 120;
  uint32_t stale_routes_time = 360;
  std::array<bool, net::kFamilyCount> families{true, true};
};
GracefulRestartSettings GracefulRestartOf(const config::v1::Router& router, const config::v1::Neighbor& n);

absl::StatusOr<std::vector<session::PeerConfig>> PeerConfigs(const config::v1::Config& config);
// The weights stage's settings (link bandwidth policy per family, FIB limits, damping).
// `backend_max_weight` applies when the config leaves fib.max_weight at 0; the group limit
// is the smaller of fib.max_groups and `backend_max_groups` (0: the backend cannot tell).
absl::StatusOr<rib::WeightsConfig> WeightsConfigOf(const config::v1::Config& config,
                                                   uint32_t backend_max_weight = 65535,
                                                   uint32_t backend_max_groups = 0);
// A neighbor's maximum prefixes per family (index net::Family; limit 0: none).
std::array<rib::PrefixLimitConfig, net::kFamilyCount> PrefixLimitsOf(const config::v1::Neighbor& n);
// A neighbor's link-bandwidth export settings.
absl::StatusOr<rib::LinkBandwidthExport> LinkBandwidthExportOf(const config::v1::NeighborLinkBandwidth& n);

// The decision process's settings (multipath).
rib::DecisionConfig DecisionConfigOf(const config::v1::Config& config);
// A reload from `before` to `after` changes how every route is weighed (link-bandwidth
// policy, FIB limits): the weights stage reweighs them all at once.
bool ReweighOnReload(const config::v1::Config& before, const config::v1::Config& after);

// A prefix of `networks`: originated by this router.
struct Network {
  net::Nlri nlri;
  std::optional<double> link_bandwidth_bps;
  std::string capacity_source;  // the link bandwidth follows this source's live capacity
};
absl::StatusOr<std::vector<Network>> NetworksOf(const config::v1::Config& config);

// One neighbor's import or export chain for one family (docs/policy.md): its policies in
// order, compiled (pointers into the PolicySet they came from, which must outlive them), and
// what a route none of them decided gets.
struct PolicyChain {
  std::vector<const policy::CompiledPolicy*> policies;
  policy::Verdict default_verdict = policy::Verdict::kAccept;
  bool depends_on_prefix = false;  // some policy tests the prefix: no per-attribute-set shortcut
  // The chain's meaning as text (names, the policies' and sets' definitions, the default):
  // two chains with the same fingerprint treat every route the same.
  std::string fingerprint;
  // Nothing to evaluate: every route passes unchanged.
  bool passes_everything() const { return policies.empty() && default_verdict == policy::Verdict::kAccept; }
  bool rejects_everything() const { return policies.empty() && default_verdict == policy::Verdict::kReject; }
  // "import [from-spines, sane] then reject" for logs and bagctl.
  std::string Describe() const;
};
struct NeighborPolicies {
  std::array<PolicyChain, net::kFamilyCount> import;   // by net::Family
  std::array<PolicyChain, net::kFamilyCount> export_;  // by net::Family
  bool soft_reconfiguration_inbound = false;
};
// `neighbor` as the loader left it (defaults applied: default_import/default_export set).
absl::StatusOr<NeighborPolicies> PoliciesOf(const config::v1::Config& config, const config::v1::Neighbor& neighbor,
                                            const policy::PolicySet& set);

}  // namespace bagd::daemon
