// Next-hop groups shared by every prefix with the same weighted next-hop set (design.md
// rule 6), with hold-down damping of each member's bandwidth (rib/weights/hold_down.h).
//
// A group's key is canonical: its family and the sorted (next hop, target weight) pairs,
// the target weights being the quantized bandwidths the members advertise now. Prefixes
// whose multipath sets have the same key point at one group, refcounted.
//
// A weight change is one group operation, however many prefixes use the group: when every
// prefix of a group moves to the same new key in one batch (a peer re-announcing its routes
// with a new link bandwidth, a next hop leaving with its session), the group is re-keyed in
// place: same id, new members/weights, no route touched (prefixes of it left with no path
// in the same batch just leave it). The weights it installs are
// computed from the damped (applied) bandwidths, so they can lag the key while an increase
// is held down. When only some prefixes move, they move to another group (which inherits
// the damping state of the members it shares with the group they left).
//
// Early reweight (WeightsConfig::early, docs/weights.md): when only some prefixes of a group
// move to a key with the same next hops and other bandwidths (the first UPDATEs of a peer
// whose LAG lost members), the group follows them in place at once, and its other prefixes
// are checked later, in slices (TakeCheckSlice, Check): one that does not show the new
// bandwidths goes to the group of its own key, with the damping state the group had before.
//
// Pure: no I/O, time is an argument. The caller batches route changes (a burst of UPDATEs
// becomes one Update call) and calls Expire() at NextDue().
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/container/inlined_vector.h"
#include "absl/container/node_hash_map.h"
#include "absl/time/time.h"
#include "rib/fib_update.h"
#include "rib/rib.h"
#include "rib/weights/group_budget.h"
#include "rib/weights/hold_down.h"
#include "rib/weights/member_bandwidth.h"
#include "rib/weights/quantize.h"

namespace bagd::rib {

// One route's multipath set, as the weights stage needs it. No members: the route is gone
// (or has no next hop to install, like our own `networks`).
struct PrefixMembers {
  net::Prefix prefix;
  absl::InlinedVector<MemberInput, 4> members;  // no allocation for the usual ECMP widths
};

// Which local capacity source (an index, -1: none) each neighbor's paths come over, by RIB
// peer index (Neighbor.local_capacity_source with LOCAL_CAPACITY_CAP). Peers past the end
// have none.
using LocalSourceOfPeer = std::vector<int16_t>;
inline int16_t LocalSourceOf(const LocalSourceOfPeer& table, PeerIndex peer) {
  return peer < table.size() ? table[peer] : int16_t{-1};
}

// The members of `prefix`'s multipath set as the RIB has it now. Our own routes (config
// `networks`) have no next hop to install and are left out.
PrefixMembers MembersOf(const Rib& rib, const net::Prefix& prefix, const LocalSourceOfPeer& local = {});
// Whether `prefix` has any member now (MembersOf would not be empty), without building them.
bool HasMembers(const Rib& rib, const net::Prefix& prefix);

// What NextHopGroupRegistry::Update reads: a prefix and a view of its members.
struct MembersView {
  net::Prefix prefix;
  std::span<const MemberInput> members;
};

// A batch of prefixes with their members as the RIB has them, the members in one pool where
// neighbouring prefixes with the same members share one copy: ~40 bytes per prefix however
// wide the sets (48 while it is built), so a session loss or a reload with a full table
// stays small.
class MembersBatch {
 public:
  void Add(const Rib& rib, const net::Prefix& prefix, const LocalSourceOfPeer& local = {});
  // The views, valid until the next Add or Clear.
  std::span<const MembersView> View();
  size_t size() const { return views_.size(); }
  void Clear();  // keeps the storage for the next batch, unless it was a big one
  // Room for `prefixes` more (a big batch then takes exactly its size, not up to twice).
  void Reserve(size_t prefixes) {
    views_.reserve(views_.size() + prefixes);
    where_.reserve(where_.size() + prefixes);
  }

 private:
  // views_[i].members is set by View(), from where_[i] (first, count in pool_): the pool
  // moves while it grows.
  std::vector<MembersView> views_;
  std::vector<std::pair<uint32_t, uint32_t>> where_;
  std::vector<MemberInput> pool_;
  MemberInput scratch_[Destination::kMaxMultipathIndex];
};

// Early reweight (docs/weights.md, "Early reweight"): a group follows the bandwidths the
// first of its re-announced prefixes show; the rest are checked `check_delay` after the last
// batch that showed the new bandwidths (at most 10 x check_delay after the first).
struct EarlyReweightConfig {
  bool enabled = true;
  absl::Duration check_delay = absl::Seconds(2);
};

struct WeightsConfig {
  std::array<BandwidthPolicy, net::kFamilyCount> policy;  // by net::Family
  QuantizeLimits limits;                                   // what the FIB can hold
  DampingConfig damping;
  // How many groups the FIB holds (0: no limit) and how groups that do not fit are merged
  // (rib/weights/group_budget.h). Reloadable, also on and off (Reconfigure).
  GroupBudgetConfig budget;
  EarlyReweightConfig early;
};

struct NextHopGroup {
  struct Member {
    net::IpAddress next_hop;
    double bps = 0;  // what the member advertises now (after the missing-LB policy)
    BandwidthSource source = BandwidthSource::kCommunity;
    std::optional<wire::LinkBandwidth> link_bandwidth;  // as received
    MemberHoldDown hold;
    // Local capacity (docs/capacity.md): the source the member is reached over (-1: none)
    // and the bandwidth the weight is computed from, min(hold.applied(), local capacity),
    // or the local capacity alone for a kLocalLink member.
    int16_t local_source = -1;
    double effective = 0;
    // Why `effective` is what it is: the local capacity is below what is advertised (or
    // stands in for a missing community).
    bool local_capped = false;
    uint32_t weight = 0;     // installed weight; 0: not in the FIB group
    double share = 0;        // ideal share of the applied bandwidth
    double error = 0;        // |weight share - share| / share
  };
  GroupId id = 0;
  net::Family family = net::Family::kIpv4Unicast;
  std::vector<Member> members;        // sorted by next hop
  std::vector<uint32_t> key_weights;  // target weights, parallel to members
  std::string key;                    // canonical key (family, next hops, target weights)
  uint32_t prefixes = 0;              // routes using the group
  double max_error = 0;               // of the installed weights
  bool all_drained = false;           // every member advertised 0; equal weights instead
  std::vector<FibGroupMember> installed;  // what was last handed to the FIB
  bool announced = false;                 // handed to the FIB at least once
  // Early reweight: the group followed the bandwidths some of its prefixes showed; the
  // others are checked at `due`, in slices from `cursor`: a first walk counts the prefixes
  // that show the group's key, its old key and another. When most kept the old key (a peer
  // that re-announced only some prefixes), the group goes back to `before` in place and the
  // changed ones (kept while they are the fewer) move to a group of their own. A second walk,
  // when one is needed, moves each prefix that does not show the group's key to its own.
  struct Follow {
    // The members as they were: the state of a prefix that did not change (after a revert,
    // the followed members: the state of the prefixes that did).
    std::vector<Member> before;
    std::string before_key;
    std::vector<uint32_t> before_key_weights;
    bool before_all_drained = false;
    absl::Time since;    // the first follow of this round
    absl::Time touched;  // the last batch that showed the group's new key
    bool walking = false;
    bool walk_done = false;  // the last slice of this walk is out
    std::optional<net::Prefix> cursor;
    absl::Time walk_started;  // the first slice of the counting walk
    bool counted = false;     // the counting walk is over: this walk moves prefixes
    bool reverted = false;    // the group went back to `before` (the majority did not change)
    // The counting walk: prefixes that show the group's key, the key it had before, another.
    uint64_t same = 0;
    uint64_t at_before = 0;
    uint64_t elsewhere = 0;
    std::vector<net::Prefix> followers;  // those that show the group's key, while they are the fewer
    uint32_t follows = 0;  // follows in this round
    absl::Time due(absl::Duration delay) const { return std::min(std::max(since, touched) + delay, since + 10 * delay); }
  };
  std::optional<Follow> follow;
};

struct WeightCounters {
  uint64_t applied = 0;     // member bandwidth changes that reached the weights
  uint64_t held = 0;        // changes that had to wait (increase hold-down, decrease delay)
  uint64_t suppressed = 0;  // changes below min_change_percent, never applied
  uint64_t group_updates = 0;  // group upserts handed to the FIB
  uint64_t route_updates = 0;  // route upserts and deletes handed to the FIB
  uint64_t early_reweights = 0;  // a group followed some of its prefixes' new bandwidths
  uint64_t early_checked = 0;    // prefixes read again by the check
  uint64_t early_moved = 0;      // of them, moved to the group of their own bandwidths
  uint64_t early_reverted = 0;   // groups put back: most of their prefixes had not changed
};

// One slice of an early-reweight check: prefixes of `group` to read from the RIB again.
struct CheckSlice {
  GroupId group = 0;
  std::vector<net::Prefix> prefixes;
};

// One local capacity source as the weights see it: its name (display) and its capacity after
// the source's own damping (bgpd/daemon/local_capacity.h); unknown until first set.
struct LocalLink {
  std::string name;
  double bps = 0;
  bool known = false;
};

class NextHopGroupRegistry {
 public:
  explicit NextHopGroupRegistry(WeightsConfig config) : config_(std::move(config)) {
    if (config_.budget.max_groups > 0) budget_.emplace(config_.budget);
  }

  // Routes whose multipath set changed (each prefix at most once per call). `immediate`:
  // the change comes from the operator (a policy or limit reload), not from the network, so
  // bandwidth changes apply at once instead of through the hold-down.
  void Update(std::span<const MembersView> changes, absl::Time now, bool immediate = false);
  void Update(std::span<const PrefixMembers> changes, absl::Time now, bool immediate = false);
  // Applies held changes that are due.
  void Expire(absl::Time now);
  // Early reweight: the next slice (at most `max` prefixes, in table order) of the prefixes
  // of a group whose check is due; nullopt if none is. The caller reads their members and
  // hands them to Check (a slice may be empty when the group's prefixes are sparse).
  std::optional<CheckSlice> TakeCheckSlice(absl::Time now, size_t max);
  // The members of a slice's prefixes. The first walk over the group counts how many show
  // its key; the second moves each that does not match the group to the group of its own key
  // (after the group went back to its old key, if most had not changed). The check ends with
  // the last slice of the second walk, or of the first when every prefix matched.
  void Check(GroupId group, std::span<const MembersView> members, absl::Time now);
  // The earliest time a held change is due, or a merge may be revisited; nullopt if none is.
  std::optional<absl::Time> NextDue() const;
  // What to install since the last call, make-before-break ordered.
  FibUpdate TakeFibUpdate();
  // A config reload: damping timers, policies and limits change; groups and their routes stay.
  // The group budget turns on (max_groups from 0) or off in place: on, the exact groups the
  // FIB holds are adopted and merged down with deletes and route moves only; off, every
  // route gets its own group again, made before the slots go. Call it with no FibUpdate
  // pending (after TakeFibUpdate), as the weights stage does.
  void Reconfigure(const WeightsConfig& config, absl::Time now);
  // Without a FIB (backend none), groups and routes are kept for bagctl but no FibUpdate is
  // collected: a full table would otherwise be queued as route upserts nobody takes.
  void set_fib_tracking(bool on) { track_fib_ = on; }
  // Log lines the caller should print (a set whose members all drained, ...).
  std::vector<std::string> TakeNotices();
  // Local capacity: the sources members may name (MemberInput::local_source indexes this
  // list; a reload may rename, the caller then re-resolves every route).
  void SetLocalSources(std::vector<std::string> names);
  // Source `index` now has `bps` (already damped by the caller): every group with a member
  // over it is weighed again in place (same id, one group operation, no route touched).
  void SetLocalCapacity(int16_t index, double bps);
  const LocalLink* local_link(int16_t index) const {
    return index >= 0 && static_cast<size_t>(index) < local_.size() ? &local_[index] : nullptr;
  }
  // Members whose weight comes from the local capacity now: below what they advertise, or
  // standing in for a missing community (bagd_local_capacity_capped_members).
  size_t local_capped_members() const;

  const NextHopGroup* GroupOf(const net::Prefix& prefix) const;
  const NextHopGroup* Find(GroupId id) const;
  std::vector<const NextHopGroup*> Groups() const;  // by id
  size_t group_count() const { return groups_.size(); }
  size_t route_count() const { return route_group_.size(); }
  double max_error() const;
  const WeightCounters& counters() const { return counters_; }
  const WeightsConfig& config() const { return config_; }
  // The group budget, when the FIB has a limit (and is tracked): how each wanted group is
  // served (merged or not, with its error) and the totals. Null without a limit, and
  // without a FIB (set_fib_tracking(false): nothing is installed, nothing to fit).
  const GroupBudget* budget() const { return budget_ && track_fib_ ? &*budget_ : nullptr; }

 private:
  struct Target {
    net::Family family = net::Family::kIpv4Unicast;
    ResolvedBandwidths resolved;
    std::vector<uint32_t> weights;  // parallel to resolved.members
    std::string key;                // canonical key bytes; empty: no route
  };
  Target Resolve(const MembersView& p);
  std::vector<uint32_t> TargetWeights(const ResolvedBandwidths& r);
  // `parent`: the members of the group the first prefix comes from (their damping state is
  // inherited), or null.
  NextHopGroup& Create(const Target& t, const std::vector<NextHopGroup::Member>* parent, absl::Time now,
                       bool immediate);
  void UpdateImpl(std::span<const MembersView> changes, absl::Time now, bool immediate, bool check);
  // A new group's id, family and key, registered by key; the caller fills in the rest.
  NextHopGroup& NewGroup(net::Family family, const std::string& key);
  // Each change's target (`target_of`, an index into `unique`), each distinct member set
  // resolved once.
  void ResolveTargets(std::span<const MembersView> changes, std::vector<Target>& unique,
                      std::vector<uint32_t>& target_of);
  // Early reweight, the counting walk: tallies a slice of `g`'s prefixes; at its end decides
  // what the moving walk moves (and reverts `g` when most did not change).
  void CountSlice(NextHopGroup& g, std::span<const MembersView> members);
  void EndCount(NextHopGroup& g);
  // Early reweight: `g` follows the most common key among `moves` that has its next hops.
  void MaybeFollow(NextHopGroup& g, std::span<const size_t> moves, std::span<const uint32_t> target_of,
                   std::span<const Target> unique, absl::Time now, bool immediate);
  // Moves `g` to the members and key of `t` (damped unless `immediate`), keeping its id.
  void Rekey(NextHopGroup& g, const Target& t, absl::Time now, bool immediate);
  void Count(HoldDownOutcome o);
  // Recomputes the installed weights from the applied bandwidths; marks it dirty if changed.
  void Reweigh(NextHopGroup& g);
  void Attach(const net::Prefix& prefix, NextHopGroup& g);
  // `prefix` has no group any more: its route goes (from the FIB too, if it had one).
  void Unroute(const net::Prefix& prefix);
  void Detach(NextHopGroup& g);
  // What a member's weight is computed from: its applied bandwidth capped by its local link.
  void Effective(NextHopGroup::Member& m) const;
  // A member for `m` joining a group now: settling (docs/damping.md, "A new path settles")
  // unless its next hop flapped.
  NextHopGroup::Member Join(const MemberBandwidth& m, absl::Time now);
  // `next_hop` left a prefix's multipath set (its path withdrawn, its session down).
  void Lost(const net::IpAddress& next_hop, absl::Time now);

  WeightsConfig config_;
  std::optional<GroupBudget> budget_;
  absl::Time now_ = absl::InfinitePast();  // the latest time Update/Expire/Reconfigure saw
  GroupId next_id_ = 1;
  absl::node_hash_map<GroupId, NextHopGroup> groups_;  // stable addresses
  absl::flat_hash_map<std::string, GroupId> by_key_;
  net::PrefixMap<GroupId> route_group_;
  // Pending FIB work.
  absl::flat_hash_set<GroupId> dirty_groups_;
  // 0: delete. Ordered and ~17 bytes a route: a full table going puts every route here at
  // once (a hash map of a million prefixes held ~79 MB while it grew, the session loss's peak).
  net::PrefixMap<GroupId> dirty_routes_;
  std::vector<GroupId> deleted_groups_;
  // Quantization of target bandwidths, memoized: a burst of prefixes has few distinct sets.
  absl::flat_hash_map<std::vector<double>, std::vector<uint32_t>> quantized_;
  WeightCounters counters_;
  std::vector<std::string> notices_;
  std::vector<LocalLink> local_;  // by MemberInput::local_source
  // Next hops that left a multipath set: a penalty that grows by 1 per loss (all the prefixes
  // a session loss takes are one loss: only a loss after the next hop joined again counts)
  // and halves every half_life. A next hop that joins with a penalty above kFlappedPenalty
  // (lost twice within about two half-lives) does not settle: its increases are held.
  struct Loss {
    double penalty = 0;
    absl::Time at = absl::InfinitePast();
    bool joined_since = false;
  };
  absl::flat_hash_map<net::IpAddress, Loss> losses_;
  static constexpr double kFlappedPenalty = 1.5;
  bool track_fib_ = true;
};

}  // namespace bagd::rib
