// The RIB: every path bagd received, per prefix (Adj-RIB-In and Loc-RIB in one table, as
// BIRD does), the best path and the multipath set of each prefix, and the changes since
// they were last taken. Pure: no I/O, no clock; the session layer feeds it.
//
// Memory per path is kept small (design.md rule 10): a destination is 24 bytes and holds its
// path inline when there is one, a path is 16 bytes (peer index, path id, interned attribute
// reference), and the table is a B-tree per family with 8-byte IPv4 keys (net/prefix_map.h).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/functional/function_ref.h"
#include "wire/message.h"
#include "rib/attribute_store.h"
#include "rib/decision.h"
#include "net/prefix_map.h"

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

// A multipath set, best first. Inline up to 4 paths (the common ECMP widths), so a change
// set of a thousand prefixes is one allocation, not two per prefix.
using PathSet = absl::InlinedVector<Path, 4>;

// The paths of one prefix, kept in decision order (rib/decision.h: the best first), and which
// of them are the multipath set: 24 bytes, the only path inline (a single-path prefix needs
// no other allocation), more on the heap. A new path finds its place by binary search, and
// the multipath set is looked at again only when a change reaches into it, so the cost of a
// path does not grow with the paths per prefix.
class Destination {
 public:
  Destination() {}
  Destination(const Destination&) = delete;
  Destination& operator=(const Destination&) = delete;
  Destination(Destination&& o) noexcept { Take(o); }
  Destination& operator=(Destination&& o) noexcept {
    if (this != &o) {
      Clear();
      Take(o);
    }
    return *this;
  }
  ~Destination() { Clear(); }

  std::span<const Path> paths() const { return {data(), size_}; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  int best() const { return size_ == 0 ? -1 : 0; }  // index into paths(), -1 when there is none
  // Bit i: paths()[i] is in the multipath set (the best included). Only the first
  // kMaxMultipathIndex paths of a prefix in decision order can be.
  uint32_t multipath() const { return multipath_; }
  bool in_multipath(size_t i) const { return i < kMaxMultipathIndex && (multipath_ >> i & 1); }
  // f(const Path&) for the multipath set, the best first.
  template <typename F>
  void ForEachMultipath(F&& f) const {
    const Path* p = data();
    for (uint32_t rest = multipath_; rest != 0; rest &= rest - 1) f(p[__builtin_ctz(rest)]);
  }
  static constexpr size_t kMaxMultipathIndex = 32;

 private:
  friend class Rib;
  Path* data() { return heap_shift_ ? many_ : &one_; }
  const Path* data() const { return heap_shift_ ? many_ : &one_; }
  bool PushBack(Path p);  // false: the prefix already has the most paths it can hold
  bool InsertAt(size_t i, Path p);  // the same, at index i
  void Erase(size_t i);
  // Moves paths()[from] to index `to`, the paths between shifting by one.
  void Move(size_t from, size_t to);
  bool mixed_order() const { return flags_ & kMixedOrder; }
  // Some class of the prefix's paths is ranked by deterministic MED (rib/decision.h), not
  // by DecisionOrder: every change re-sorts the paths.
  static constexpr uint8_t kMixedOrder = 1;
  void Clear();
  void Take(Destination& o) noexcept;

  union {
    Path one_;    // size_ <= 1 and heap_shift_ == 0
    Path* many_;  // heap_shift_ > 0: room for 1 << heap_shift_ paths
  };
  uint16_t size_ = 0;
  uint8_t heap_shift_ = 0;
  uint8_t flags_ = 0;
  uint32_t multipath_ = 0;  // the best, paths()[0], is bit 0 when there are paths
};

// One prefix whose best path or multipath set changed, with what it was before.
struct RouteChange {
  net::Prefix prefix;
  PathSet old_multipath;  // old best first; empty: the prefix was unreachable
  PathSet new_multipath;  // new best first; empty: the prefix is gone
};

// The contract between the RIB and the stages after it (the weights stage): every change
// set the RIB hands on, in order, once the peers have been given it. A listener may look the
// prefixes up in the RIB again while it is called, or later (the RIB is the state; a change
// set says where it moved).
class RouteChangeListener {
 public:
  virtual ~RouteChangeListener() = default;
  virtual void OnRouteChanges(std::span<const RouteChange> changes) = 0;
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
  uint64_t rejected_path_limit = 0;  // a prefix already had 65535 paths
};

// One decoded UPDATE as what it withdraws and what it announces, in that order: `withdraw`
// for each run of withdrawn NLRI, `announce` for each run of announced NLRI of one family
// with its attributes interned in `store`. The NEXT_HOP attribute is the next hop of the NLRI
// field only (RFC 4271 §5.1.3) and MP_REACH_NLRI's next hop that of its own NLRI only (RFC
// 4760 §3, which also says NEXT_HOP is ignored for MP NLRI): an UPDATE carrying both kinds of
// NLRI is interned as two attribute sets. RFC 7606 treat-as-withdraw withdraws the announced
// NLRI. Rib::ApplyUpdate and the routing core's import (policy before the RIB) both use it.
void SplitUpdate(const wire::UpdateMessage& update, AttributeStore& store,
                 absl::FunctionRef<void(std::span<const net::Nlri>)> withdraw,
                 absl::FunctionRef<void(std::span<const net::Nlri>, const AttrRef&)> announce);

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
  void Announce(PeerIndex peer, std::span<const net::Nlri> nlri, const AttrRef& attrs);
  void Withdraw(PeerIndex peer, std::span<const net::Nlri> nlri);
  // One decoded UPDATE from `peer` (SplitUpdate): its withdrawals, then its announcements.
  void ApplyUpdate(PeerIndex peer, const wire::UpdateMessage& update, AttributeStore& store);
  // The session went down: every path from the peer goes.
  void PeerDown(PeerIndex peer);
  // The same in slices: the peer's paths in at most `max_prefixes` prefixes from `from` on
  // (nullopt: the start), so the caller can take the changes between slices instead of
  // holding a whole table's change set. Returns where to go on, nullopt when done.
  std::optional<net::Prefix> PeerDownFrom(PeerIndex peer, const std::optional<net::Prefix>& from, size_t max_prefixes);

  // The prefixes whose best/multipath changed since the last call (coalesced), in prefix
  // order (net/prefix_map.h: IPv4 first).
  std::vector<RouteChange> TakeChanges();
  size_t pending_changes() const { return pending_.size(); }
  // Hands a taken change set back once consumed: its storage records the next changes, so a
  // stream of UPDATEs does not map fresh pages for every one (~170 KiB per packed UPDATE).
  void Recycle(std::vector<RouteChange>&& used);

  const Destination* Find(const net::Prefix& prefix) const;
  // For the step that made `paths[i]` lose to the best (kNone for the best itself).
  DecisionStep LostAt(const Destination& d, size_t i) const;
  Candidate CandidateOf(const Path& p) const;
  // The multipath set of `d`, best first (empty when it has no best path).
  PathSet MultipathOf(const Destination& d) const;

  size_t prefix_count() const { return table_.size(); }
  // f(const net::Prefix&, const Destination&) for every prefix, in prefix order.
  template <typename F>
  void ForEach(F&& f) const {
    table_.ForEach(f);
  }
  // f(const net::Prefix&, const Destination&) for the prefixes after `after` in prefix
  // order (all when nullopt), until f returns false: a walk that can stop and resume.
  template <typename F>
  void ForEachAfter(const std::optional<net::Prefix>& after, F&& f) const {
    table_.ForEachAfter(after, f);
  }
  // Every path `peer` has in `family`, in table order: what an Enhanced Route Refresh marks
  // stale at BoRR (rib/stale_paths.h). One walk of the family's table.
  std::vector<net::Nlri> PathsOf(PeerIndex peer, net::Family family) const;
  size_t prefix_count(net::Family f) const { return prefixes_[static_cast<int>(f)]; }
  size_t path_count() const { return path_count_; }
  size_t paths_of(PeerIndex p) const {
    return p < per_peer_.size() ? per_peer_[p][0] + per_peer_[p][1] : 0;
  }
  size_t paths_of(PeerIndex p, net::Family f) const {
    return p < per_peer_.size() ? per_peer_[p][static_cast<int>(f)] : 0;
  }
  size_t peer_count() const { return peers_.size(); }
  uint64_t decision_runs() const { return decision_runs_; }
  const ImportStats& stats(PeerIndex p) const { return peer_stats_[p]; }
  size_t memory_bytes() const;

 private:
  // The decision from scratch: the paths in decision order (deterministic MED where a class
  // needs it), then the multipath set.
  void Sort(Destination& d) const;
  uint32_t MultipathBits(const Destination& d) const;
  // Whether a path entering or leaving `d` at `index` can change its multipath set (false:
  // the change is past the paths the set is chosen from). `in_best_class`: the path ties
  // with the best on local-pref, AS-path length and origin.
  bool ReachesMultipath(const Destination& d, size_t index, bool in_best_class) const;
  // The same for the path at paths()[index], as it is now (leaving or moving).
  bool ReachesMultipath(const Destination& d, size_t index) const {
    return ReachesMultipath(d, index, SameClass(d.data()[index], d.data()[0]));
  }
  // Where `p` goes in `d` (in decision order; `skip`: a path of `d` to leave out, the one
  // `p` replaces), and whether its class stays in plain decision order with it.
  size_t PlaceOf(const Destination& d, const Path& p, size_t skip) const;
  bool StaysPlain(const Destination& d, const Path& p, size_t skip) const;
  bool Before(const Path& a, const Path& b) const;
  bool SameClass(const Path& a, const Path& b) const;
  // After a change to `d` (its set before it: `before`), re-takes the multipath set (and
  // re-sorts a mixed-order prefix) and records the change if the set moved.
  void Decide(const net::Prefix& prefix, Destination& d, PathSet before);
  void Remove(const net::Prefix& prefix, Destination& d, size_t index);

  uint32_t local_as_;
  DecisionConfig config_;
  std::vector<PeerInfo> peers_;
  std::vector<std::array<size_t, net::kFamilyCount>> per_peer_;
  size_t prefixes_[net::kFamilyCount] = {};
  uint64_t decision_runs_ = 0;
  std::vector<ImportStats> peer_stats_;
  net::PrefixMap<Destination> table_;
  size_t path_count_ = 0;
  // The changes in the order they happened; a prefix may appear more than once (the first
  // entry's old set is the one before TakeChanges(), the last one's new set is current).
  std::vector<RouteChange> pending_;
  std::vector<RouteChange> spare_;  // empty, with capacity (Recycle)
};

}  // namespace bagd::rib
