// A reload as data (SIGHUP, docs/config.md "Reload"): what changes from the running config
// to the next one, decided in one pure function, before anything changes. The speaker does
// the session half of it (neighbors stopped, created, changed in place), then hands the
// routing half to Pipeline::Apply; the replay tests (tests/replay) call the same two.
//
//   PlanReload(running, next) ──► ReloadPlan ──► Speaker: sessions (Cease, new Peers, ApplyInPlace)
//                                             └► Pipeline::Apply: policies, link-bandwidth export,
//                                                networks, local capacity, weights
//
// An error (a config that does not compile, a change that cannot apply while running, such
// as router.asn) leaves nothing half done: there is no plan.
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "bgpd/daemon/config_translation.h"
#include "bgpd/session/peer.h"
#include "conf/bagd.pb.h"
#include "policy/policy.h"
#include "rib/weights/link_bandwidth_export.h"
#include "rib/weights/nexthop_group_registry.h"

namespace bagd::daemon {

// One neighbor of the next config.
struct NeighborPlan {
  enum class Kind {
    kAdded,  // not in the running config: a new session
    kReset,  // its session settings changed (PeerConfig::SameSession is false): Cease / Other
             // Configuration Change (RFC 4486), its routes go, a new session with the new settings
    kKept,   // the session stays: the changes (if any) apply in place
  };
  Kind kind = Kind::kKept;
  std::string name;  // canonical address (PeerConfig::Name)
  session::PeerConfig peer;
  NeighborPolicies policies;  // chains point into ReloadPlan::policies
  rib::LinkBandwidthExport lb_export;
  // The fields of its config::v1::Neighbor that differ from the running one (empty for
  // kAdded, and for kReset/kKept when only router-wide defaults changed it).
  std::vector<std::string> changed_fields;
  // local_capacity_source when it caps this neighbor's weights ("" : none; a neighbor with
  // local_capacity IGNORE has none).
  std::string local_capacity_source;
};

struct ReloadPlan {
  // The next config's compiled policies; every NeighborPlan's chains point into it.
  std::shared_ptr<const policy::PolicySet> policies;
  // Neighbors (canonical addresses) in the running config and not in the next: Cease /
  // Peer De-configured, their routes withdrawn, then gone. In the running config's order.
  std::vector<std::string> removed;
  // Every neighbor of the next config, in its order (the order new RIB indices are taken).
  std::vector<NeighborPlan> neighbors;

  // Own routes (`networks` and the control API's).
  std::vector<Network> networks;          // the next config's `networks`, originated (an unchanged one is a no-op)
  std::vector<net::Nlri> withdrawn;       // running `networks` in neither the next file nor the API's list
  std::vector<Network> api_networks;      // the control API's list after the reload
  std::vector<net::Prefix> api_replaced;  // API networks now in the file: the file's entry replaces them

  // The weights stage: new settings, and whether every route is weighed again at once
  // (ReweighOnReload: link-bandwidth policy or FIB limits changed).
  rib::WeightsConfig weights;
  bool reweigh = false;

  // What changed but needs a restart of bagd, one line each for the log and the control
  // API ("router.listen (the listening sockets)").
  std::vector<std::string> needs_restart;
  // The running config after the reload: the next one, except what needs a restart, which
  // keeps its running values.
  config::v1::Config running;

  // Counts for the summary line.
  size_t added() const;
  size_t reset() const;
  size_t updated() const;  // kKept with changed_fields
};

// `api_networks`: the control API's networks now. `backend_max_weight`/`backend_max_groups`
// as for WeightsConfigOf. Errors: the next config's policies, neighbors, networks or weights
// do not compile, or router.asn / router.router_id changed (FailedPrecondition: restart bagd).
//
// `running_peers` (optional): the running sessions' PeerConfigs (Peer::config()), matched
// by Name(). Given, a neighbor's session is compared (PeerConfig::SameSession) with its
// running session's; empty, with PeerConfigs(running), built now. They differ where
// PeerConfigs reads the system: a password_file whose content changed under the same path
// (the new key needs a new session) and the host name carried in the OPEN. A running
// neighbor missing from a non-empty `running_peers` is compared as a changed session.
absl::StatusOr<ReloadPlan> PlanReload(const config::v1::Config& running, const config::v1::Config& next,
                                      std::span<const Network> api_networks, uint32_t backend_max_weight = 65535,
                                      uint32_t backend_max_groups = 0,
                                      std::span<const session::PeerConfig> running_peers = {});

// The names of the fields that differ between two messages of one type ("timers",
// "password").
std::vector<std::string> ChangedFields(const google::protobuf::Message& a, const google::protobuf::Message& b);

}  // namespace bagd::daemon
