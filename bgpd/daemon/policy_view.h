// The routing policies and one neighbor's routes as the control API shows them (design.md
// rule 5: decisions carry their reasons):
//   bagctl policy test NAME PREFIX ...     TestPolicy: one policy on a made-up route, traced
//   bagctl show policies [NAME]            ListPolicies: per-statement hit counters
//   bagctl show routes --neighbor ADDR --received | --accepted | --advertised
// and the hit counters for Prometheus (bagd_policy_statement_hits_total).
// Free functions of explicit data, as rib_view.h: no speaker, so each is tested on its own.
// They run on the thread that owns the data (the routing core's; ControlAdapter posts there).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "bgpd/control/control.pb.h"
#include "bgpd/control/control_server.h"
#include "bgpd/daemon/routing_metrics.h"
#include "rib/adj_rib_out.h"
#include "policy/policy.h"
#include "rib/adj_rib_in.h"
#include "net/prefix_map.h"
#include "rib/rib.h"

namespace bagd::daemon {

// What the explain RPCs read from the running daemon. Implemented by daemon::Speaker; the
// calls are made on its event thread, and the pointers they return are used only until
// the call that asked for them returns.
class NeighborRibs {  // implemented by daemon::Speaker
 public:
  virtual ~NeighborRibs() = default;
  virtual const policy::PolicySet* policies() const = 0;  // null before Configure
  // The RIB's index of the configured neighbor with this address (canonical text, as
  // control::CanonicalNeighborAddress gives it); nullopt when no neighbor has it.
  virtual std::optional<rib::PeerIndex> RibIndexOf(const std::string& canonical_address) const = 0;
  // The neighbor's routes as received, before import policy; null: soft reconfiguration
  // inbound is off for it (nothing is kept).
  virtual const rib::AdjRibIn* ReceivedRoutes(rib::PeerIndex) const = 0;
  // Our Adj-RIB-Out to the neighbor: prefix -> the attributes as exported (after export
  // policy and the rewrite). Null: nothing is advertised to it (no session); shown as empty.
  virtual const rib::AdjRibOut* AdvertisedRoutes(rib::PeerIndex) const = 0;
};

// ---- bagctl policy test ----

// The route TestPolicy evaluates: `request.attributes()` parsed (canonical request,
// control::CanonicalTestPolicyRequest). Origin IGP and an empty AS path unless given; the
// next hop defaults to the neighbor; an IPv6 prefix or next hop goes in MP_REACH_NLRI.
// InvalidArgument naming the attribute and saying what to write.
absl::StatusOr<wire::PathAttributes> TestRouteAttributes(const control::v1::TestPolicyRequest& request);

// Evaluates the policy `request.policy()` of `set` on the route `request` describes, with a
// trace, counting no hits (policy::EvaluateOptions{.count_hits = false}). NotFound naming the
// defined policies when there is no such policy; InvalidArgument as TestRouteAttributes.
absl::StatusOr<control::v1::TestPolicyResponse> TestPolicy(const policy::PolicySet& set,
                                                           const control::v1::TestPolicyRequest& request);

// ---- bagctl show policies ----

// Every policy of `set` by name (or the one `request.name()` names: NotFound if none), each
// statement with its hits since `set` was compiled.
absl::StatusOr<control::v1::ListPoliciesResponse> ListPolicies(const policy::PolicySet& set,
                                                               const control::v1::ListPoliciesRequest& request);

// ---- bagctl show routes --neighbor ADDR --received | --accepted | --advertised ----
//
// Pages as daemon::ListRoutesPage (rib_view.h) builds them, for a canonical request
// (control::CanonicalListRoutesRequest): a prefix (exact) or an address (the most specific
// prefix covering it that is in the view), else the family filter and the `after` cursor;
// at most `max_routes` routes in table order, `more` when further routes follow. The paths
// are rendered by rib_view.h's FillPath / FillPathAttributes.

// What the neighbor `from` sent, before import policy (soft_reconfiguration_inbound), one
// path per path id. The Adj-RIB-In is a hash table: each page walks it once (O(n)) and
// orders only what the page takes, so a page costs about what a RIB walk of n costs.
absl::StatusOr<control::ControlBackend::RoutesPage> ReceivedRoutesPage(const rib::AdjRibIn& received,
                                                                       const rib::PeerInfo& from,
                                                                       const control::v1::ListRoutesRequest& request,
                                                                       size_t max_routes);
// The paths of `peer` in `rib` (after import policy), with best / multipath / why not best.
// Prefixes without a path of `peer` are skipped (the walk goes on until the page is full).
absl::StatusOr<control::ControlBackend::RoutesPage> AcceptedRoutesPage(const rib::Rib& rib, rib::PeerIndex peer,
                                                                       const control::v1::ListRoutesRequest& request,
                                                                       size_t max_routes);
// Our Adj-RIB-Out to `to`: one path per prefix, its peer the neighbor it goes to.
absl::StatusOr<control::ControlBackend::RoutesPage> AdvertisedRoutesPage(
    const rib::AdjRibOut& advertised, const rib::PeerInfo& to,
    const control::v1::ListRoutesRequest& request, size_t max_routes);

// ---- what ControlAdapter calls (on the event thread) ----
// `ribs` null (a ControlAdapter built without NeighborRibs): Unimplemented. No policies
// yet (before Configure): FailedPrecondition. (Not Unavailable: ControlClient reports that
// as "cannot reach bagd".)
absl::StatusOr<control::v1::TestPolicyResponse> ServeTestPolicy(const NeighborRibs* ribs,
                                                                const control::v1::TestPolicyRequest& request);
absl::StatusOr<control::v1::ListPoliciesResponse> ServeListPolicies(const NeighborRibs* ribs,
                                                                    const control::v1::ListPoliciesRequest& request);
// A neighbor view (request.view() != VIEW_RIB): NotFound for an unknown neighbor,
// FailedPrecondition for VIEW_RECEIVED without soft reconfiguration inbound (saying how to
// enable it), an empty page for VIEW_ADVERTISED when nothing is advertised.
absl::StatusOr<control::ControlBackend::RoutesPage> ServeNeighborRoutesPage(
    const NeighborRibs* ribs, const rib::Rib& rib, const control::v1::ListRoutesRequest& request, size_t max_routes);

// ---- Prometheus: bagd_policy_statement_hits_total{policy,statement} ----
//
// CompiledPolicy::hits(i) counts from 0 in each compiled PolicySet; the Prometheus counter
// of a (policy, statement) name pair never goes down. SyncPolicyMetrics adds to each
// counter what the statement hit since the last sync of the same CompiledPolicy, which
// `synced` remembers. So across a reload the counter goes on from where it was, by the new
// set's hits. Two statements of one policy with the same name share one counter (they sum).
//
// On the thread that evaluates (the routing core's):
//   - now and then (e.g. every few seconds, or before a scrape): SyncPolicyMetrics(running);
//   - at a reload: SyncPolicyMetrics(old) for its last hits, then synced.Reloaded(), then
//     replace the set. (Without Reloaded(), a new CompiledPolicy at the address of an old one
//     would be taken for it; a hit count below the one remembered is still taken as a new
//     set and counted from 0, but hits above it would be missed.)
class PolicyHitsSynced {
 public:
  void Reloaded() { synced_.clear(); }
  size_t size() const { return synced_.size(); }

 private:
  friend void SyncPolicyMetrics(const policy::PolicySet&, RoutingMetrics&, PolicyHitsSynced&);
  absl::flat_hash_map<std::pair<const policy::CompiledPolicy*, size_t>, uint64_t> synced_;
};
void SyncPolicyMetrics(const policy::PolicySet& set, RoutingMetrics& metrics, PolicyHitsSynced& synced);

}  // namespace bagd::daemon
