// The RIB: every path bagd received, per prefix (Adj-RIB-In and Loc-RIB in one table, as
// BIRD does), the best path and the multipath set of each prefix, and the changes since
// they were last taken. Pure: no I/O, no clock; the session layer feeds it.
//
// Memory per path is kept small (design.md rule 10): a destination holds its paths inline
// when there is one, a path is 16 bytes (peer index, path id, interned attribute reference).
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "rib/attribute_store.h"
#include "rib/decision.h"

namespace bagd::rib {

using PeerIndex = uint32_t;

struct Path {
  PeerIndex peer = 0;
  uint32_t path_id = 0;
  AttrRef attrs;
  friend bool operator==(const Path& a, const Path& b) {
    return a.peer == b.peer && a.path_id == b.path_id && a.attrs == b.attrs;
  }
};

struct Destination {
  absl::InlinedVector<Path, 1> paths;
  int16_t best = -1;       // index into paths, -1 when there is none
  uint64_t multipath = 0;  // bit i: paths[i] is in the multipath set (the best included)
};

// One prefix whose best path or multipath set changed, with what it was before.
struct RouteChange {
  wire::Prefix prefix;
  std::vector<Path> old_multipath;  // old best first; empty: the prefix was unreachable
  std::vector<Path> new_multipath;  // new best first; empty: the prefix is gone
};

struct PeerInfo {
  PathSource source;
  uint32_t asn = 0;
  std::string name;
  bool local = false;  // this router's own routes (config `networks`): no next hop to check
};

struct ImportStats {
  uint64_t accepted = 0;
  uint64_t withdrawn = 0;
  uint64_t rejected_as_loop = 0;
  uint64_t rejected_next_hop = 0;
};

class Rib {
 public:
  Rib(uint32_t local_as, DecisionConfig config) : local_as_(local_as), config_(config) {}

  PeerIndex AddPeer(PeerInfo info);
  const PeerInfo& peer(PeerIndex p) const { return peers_[p]; }
  // The session learned the peer's BGP identifier (at Established).
  void UpdatePeerSource(PeerIndex p, const PathSource& source) { peers_[p].source = source; }
  void SetDecisionConfig(const DecisionConfig& c);  // re-runs the decision everywhere

  // The NLRI of one UPDATE from `peer`. Paths that fail loop detection (our AS in the
  // AS_PATH, RFC 4271 §9.1.2) or next-hop validation replace nothing and are counted.
  void Announce(PeerIndex peer, std::span<const wire::Nlri> nlri, const AttrRef& attrs);
  void Withdraw(PeerIndex peer, std::span<const wire::Nlri> nlri);
  // The session went down: every path from the peer goes.
  void PeerDown(PeerIndex peer);

  // The prefixes whose best/multipath changed since the last call (coalesced).
  std::vector<RouteChange> TakeChanges();

  const Destination* Find(const wire::Prefix& prefix) const;
  // For the step that made `paths[i]` lose to the best (kNone for the best itself).
  DecisionStep LostAt(const Destination& d, size_t i) const;
  Candidate CandidateOf(const Path& p) const;
  // The multipath set of `d`, best first (empty when it has no best path).
  std::vector<Path> MultipathOf(const Destination& d) const;

  size_t prefix_count() const { return table_.size(); }
  size_t prefix_count(wire::Family f) const { return prefixes_[static_cast<int>(f)]; }
  size_t path_count() const { return path_count_; }
  size_t paths_of(PeerIndex p) const {
    return p < per_peer_.size() ? per_peer_[p][0] + per_peer_[p][1] : 0;
  }
  size_t paths_of(PeerIndex p, wire::Family f) const {
    return p < per_peer_.size() ? per_peer_[p][static_cast<int>(f)] : 0;
  }
  size_t peer_count() const { return peers_.size(); }
  uint64_t decision_runs() const { return decision_runs_; }
  const ImportStats& stats(PeerIndex p) const { return peer_stats_[p]; }
  size_t memory_bytes() const;
  const absl::flat_hash_map<wire::Prefix, Destination>& table() const { return table_; }

 private:
  void Select(const wire::Prefix& prefix, Destination& d, bool record);
  void Remove(const wire::Prefix& prefix, Destination& d, size_t index);

  uint32_t local_as_;
  DecisionConfig config_;
  std::vector<PeerInfo> peers_;
  std::vector<std::array<size_t, wire::kFamilyCount>> per_peer_;
  size_t prefixes_[wire::kFamilyCount] = {};
  uint64_t decision_runs_ = 0;
  std::vector<ImportStats> peer_stats_;
  absl::flat_hash_map<wire::Prefix, Destination> table_;
  size_t path_count_ = 0;
  // Coalesced changes: the multipath set before the first change since TakeChanges().
  absl::flat_hash_map<wire::Prefix, std::vector<Path>> pending_;
};

}  // namespace bagd::rib
