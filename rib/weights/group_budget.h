// A budget on the number of next-hop groups the FIB holds (issue 18), with least-error
// merging when the groups the routes want do not fit (docs/weights.md, "Group budget").
//
// The registry (nexthop_group_registry.h) makes one exact group per distinct weighted
// next-hop set: the *wanted* groups. A switch ASIC holds a few hundred to a few thousand
// (SONiC: MAX_NEXTHOP_GROUP_COUNT). GroupBudget sits between the registry's FibUpdate and
// the FIB: it decides which groups are *installed* (the slots) and serves every wanted group
// by one of them: its own, or a merged one, the installed group over the same next hops
// (subset/superset only where the scope allows) whose shares are closest to its own.
//
// Invariants (tests/rib/group_budget_test.cc checks them on random inputs):
// - Never more than `max_groups` groups in the FIB at any moment: a FibUpdate is applied
//   make-before-break (creates, route moves, then deletes), so the groups it creates are
//   counted on top of every group that exists before it, including those it deletes.
//   Replacing a group's members or weights under its id is in place (kernel NLM_F_REPLACE,
//   SONiC NhgOrch member updates) and needs no extra slot.
// - `reserve` slots are kept free in steady state, so that a group that must move (its
//   next-hop set changed under prefixes that still share it) has room to be made before the
//   old one is broken. Only a wanted group that nothing installed can serve uses them.
// - Every prefix is routed, unless its next hops have nothing in common with any installed
//   group and the table is full (then `unrouted` counts it and a notice says so).
// - A next hop the prefix does not have never carries its traffic, unless the scope is
//   kSuperset.
//
// The merge rule: among the installed groups compatible with a wanted group, the one with
// the smallest share error, the largest relative error of one member's share
// |p_served - p_own| / p_own against the wanted group's own installed weights. Which
// wanted groups get a slot is chosen greedily to minimise the largest error over the
// affected traffic (farthest-first, Gonzalez's k-center heuristic): the group worst served
// gets the next slot; ties go to the one carrying more traffic (prefixes or bandwidth).
//
// Merges are revisited, damped like a bandwidth increase: a merged group is promoted to its
// own slot, or moves to a better one, only after `improve_after` without a move and only
// when its error improves by at least `min_gain`. With slots free (a group went away) the
// worst merge takes one; with the table full, a *swap* takes the slot whose users lose least
// (they move to their next best slot, none ending worse than the promoted group's error less
// `min_gain`) and gives it to the worst merge, make-before-break in the reserve, at most
// `swaps_per_revisit` per update, so the result does not depend on the order the groups
// arrived in. Moves that correctness needs (the group it used changed its next hops) are
// at once.
//
// Pure: no I/O; time is an argument.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/container/inlined_vector.h"
#include "absl/container/node_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/time/time.h"
#include "rib/fib_update.h"

namespace bagd::rib {

enum class MergeScope : uint8_t {
  kSameNextHops,  // a merged group has exactly the prefix's next hops (default)
  kSubset,        // or some of them only (the others carry nothing for it)
  kSuperset,      // or subsets, or more next hops than the prefix has (they carry its traffic)
};
const char* MergeScopeName(MergeScope s);  // "same-next-hops", "subset", "superset"

enum class MergeWeight : uint8_t {
  kPrefixes,   // a wanted group counts as many prefixes as use it (default)
  kBandwidth,  // ... times the bandwidth its members advertise
};

struct GroupBudgetConfig {
  uint32_t max_groups = 0;  // the effective limit; 0: no budget
  uint32_t reserve = 2;     // slots kept free for make-before-break moves
  MergeScope scope = MergeScope::kSameNextHops;
  MergeWeight weight_by = MergeWeight::kPrefixes;
  absl::Duration improve_after = absl::Seconds(30);  // a merge is revisited after this long
  double min_gain = 0.05;                            // ... and only for this much less error
  // A full table moves at most this many slots between wanted groups per revisit (a swap:
  // the new slot made in the reserve before the old one is deleted; also bounded by the
  // reserve's free slots). 0: no swaps, a full table keeps its slots where they are.
  uint32_t swaps_per_revisit = 2;
  friend bool operator==(const GroupBudgetConfig&, const GroupBudgetConfig&) = default;
};

// How a wanted group is served.
struct GroupServing {
  GroupId slot = 0;        // the installed group (FIB id); 0: unrouted
  GroupId template_id = 0; // the wanted group whose weights the slot has (0: none any more)
  bool merged = false;     // served by a group whose weights are not its own
  double error = 0;        // largest relative share error against its own weights
};

struct GroupBudgetTotals {
  size_t wanted = 0;          // distinct groups the routes want
  size_t installed = 0;       // groups in the FIB
  size_t merged = 0;          // wanted groups served by another group's weights
  size_t merged_prefixes = 0;
  size_t unrouted_prefixes = 0;
  double worst_error = 0;     // largest share error of a merged group
  double weighted_error = 0;  // share error averaged over the traffic (MergeWeight)
  uint64_t route_moves = 0;   // installed routes repointed to another installed group
  uint64_t promotions = 0;    // merged groups that got their own slot on a revisit (swaps too)
  uint64_t swaps = 0;         // ... of those, by taking a slot from other groups (full table)
  size_t peak = 0;            // most groups in the FIB during the last update
};

// The share error of serving a group whose own installed members are `own` with `served`:
// max over `own`'s members of |p_served - p_own| / p_own (a member `served` lacks gets 0).
double ShareError(const std::vector<FibGroupMember>& own, const std::vector<FibGroupMember>& served);

class GroupBudget {
 public:
  explicit GroupBudget(GroupBudgetConfig config) : config_(config) {}

  // `wanted`: the registry's update for its exact groups (ids are wanted-group ids).
  // `bandwidth`: the bandwidth one prefix of a wanted group stands for (kBandwidth).
  // Returns what the FIB must do: slots and routes pointing at them.
  FibUpdate Apply(const FibUpdate& wanted, absl::FunctionRef<double(GroupId)> bandwidth, absl::Time now);
  // When a merge may be revisited next (free slots and a merge old enough); nullopt: none.
  std::optional<absl::Time> NextDue(absl::Time now) const;
  // New knobs; a lower limit merges down at the next Apply (deletes only: no peak).
  void Reconfigure(const GroupBudgetConfig& config) {
    config_ = config;
    swap_dirty_ = true;  // what a swap may gain or cost changed
  }
  // The limit turned on while the FIB holds every exact group (a reload; before the first
  // Apply): `groups` as the FIB has them (ids are wanted-group ids) and the routes on them.
  // The next Apply keeps the best of them as slots, under their own ids and in place (no
  // group is created for it), moves the routes of the others onto those and deletes them:
  // the FIB never holds more groups than it did.
  void Adopt(const std::vector<FibGroup>& groups, const std::vector<std::pair<net::Prefix, GroupId>>& routes);
  // The slot a route is installed on (0: none): for turning the limit off.
  GroupId InstalledSlot(const net::Prefix& p) const {
    auto it = routes_.find(p);
    return it == routes_.end() ? 0 : it->second.installed;
  }
  const GroupBudgetConfig& config() const { return config_; }

  std::optional<GroupServing> Serving(GroupId wanted) const;
  GroupBudgetTotals Totals() const;
  size_t installed() const { return slots_.size(); }
  std::vector<std::string> TakeNotices() { return std::exchange(notices_, {}); }
  // The slots as installed (id, members), by id: for tests.
  std::vector<FibGroup> Slots() const;
  // The members of one installed group; null if there is no such slot.
  const std::vector<FibGroupMember>* SlotMembers(GroupId slot) const {
    auto it = slots_.find(slot);
    return it == slots_.end() ? nullptr : &it->second.members;
  }

 private:
  // Its next hops are its class's; weights and shares parallel to them (no allocation up to
  // 8 next hops: a full table has one entry per distinct weighted set).
  struct Wanted {
    GroupId id = 0;
    absl::InlinedVector<uint32_t, 8> weights;
    absl::InlinedVector<double, 8> share;  // weight shares
    uint32_t nh_class = 0;
    uint32_t prefixes = 0;
    uint32_t installed_routes = 0;  // its prefixes whose route is in the FIB
    double bw = 1;               // per prefix
    GroupId slot = 0;
    double error = 0;
    absl::Time since = absl::InfinitePast();  // when it got its current slot
    bool fallback = false;  // served by a subset the scope does not allow (last resort)
  };
  struct Route {
    Wanted* wanted = nullptr;  // its entry in wanted_ (stable: a node map); null: withdrawn in this update
    GroupId installed = 0;     // the slot the FIB has it on; 0: none
  };
  struct Slot {
    GroupId id = 0;
    std::vector<FibGroupMember> members;
    std::vector<double> share;
    uint32_t nh_class = 0;
    GroupId tmpl = 0;                    // the wanted group it copies; 0: none
    absl::flat_hash_set<GroupId> users;  // wanted groups it serves (the template too)
    bool announced = false;
    std::string content;  // key in by_content_
  };
  struct NhClass {
    std::vector<net::IpAddress> next_hops;  // sorted
    std::vector<GroupId> slots;
  };

  uint32_t ClassOf(const std::vector<FibGroupMember>& members);
  static std::string ContentKey(uint32_t nh_class, std::span<const uint32_t> weights);
  // Takes `members`' weights and shares (next hops: its class's).
  static void SetWeights(Wanted& w, const std::vector<FibGroupMember>& members);
  // Error of serving `w` with `s`; nullopt if the scope forbids it (`any_subset`: subsets are
  // allowed whatever the scope, the last resort before unrouted).
  std::optional<double> ErrorOf(const Wanted& w, const Slot& s, double bound, bool any_subset = false) const;
  bool Compatible(uint32_t wanted_class, uint32_t slot_class, bool any_subset) const;
  double Traffic(const Wanted& w) const;
  GroupId NewSlot(GroupId tmpl);
  void SetContent(Slot& s, uint32_t nh_class, std::span<const uint32_t> weights, std::span<const double> share);
  void Assign(GroupId wid, Wanted& w, GroupId slot, double error, absl::Time now);
  void Unassign(GroupId wid, Wanted& w);
  // Errors of the users of `s` after its content changed; a user it can no longer serve
  // is appended to `unplaced`.
  void RefreshUsers(Slot& s, std::vector<GroupId>& unplaced);
  void FreeEmpty();
  void Retemplate(Slot& s);
  // `find`: the wanted group of an id (null: none), as wanted_.find but maybe quicker.
  void Place(std::vector<GroupId> unplaced, absl::Time now, absl::FunctionRef<Wanted*(GroupId)> find);
  Wanted* FindWanted(GroupId id) {
    auto it = wanted_.find(id);
    return it == wanted_.end() ? nullptr : &it->second;
  }
  void Shrink(absl::Time now);
  void Revisit(absl::Time now);
  // For the swaps' victim search (same-next-hops scope): per slot, the other slots of its
  // next-hop set by their share error against it, nearest first. Built when a swap needs it,
  // kept up to date as swaps make and delete slots, dropped when anything else changes slots.
  void BuildNear();
  void NearInsert(GroupId id);
  void NearErase(GroupId id);
  void DropNear();
  // Others that slot `sid` serves at least min_gain better follow it, if their merge is old
  // enough (`cands`: the merged groups a revisit looks at).
  void Follow(GroupId sid, GroupId promoted, std::span<const GroupId> cands, absl::Time now);
  // The least error of serving `w` by an installed group other than `except` or by `extra`
  // (if not null; a slot about to be made): stops at once when it finds one of at most
  // `enough`. kInf if nothing may serve it. `at`: that group (0: `extra`).
  double NextBest(const Wanted& w, GroupId except, const Slot* extra, double enough, GroupId* at = nullptr) const;
  // A swap for merged group `cid` (error `c.error`): the slot whose users lose least by
  // moving to their next best (a slot of `cid`'s own weights included), if that is at most
  // `bound`; made and returns true. `unblock`: the earliest time a slot held down now may go.
  bool Swap(GroupId cid, Wanted& c, double bound, std::span<const GroupId> cands, absl::Time now,
            std::optional<absl::Time>& unblock);
  size_t VoluntaryRoom() const;  // new slots the steady state may take now
  size_t HardRoom() const;       // new slots this update may create at all (or revive, adopting)
  void PlaceAdopted(absl::FunctionRef<double(GroupId)> bandwidth, absl::Time now);

  GroupBudgetConfig config_;
  GroupId next_slot_ = kFirstSlotId;
  absl::node_hash_map<GroupId, Wanted> wanted_;  // a node map: routes_ points at the entries
  absl::node_hash_map<GroupId, Slot> slots_;
  absl::flat_hash_map<std::string, GroupId> by_content_;
  std::vector<NhClass> classes_;
  absl::flat_hash_map<std::string, uint32_t> class_index_;
  uint32_t last_class_ = UINT32_MAX;  // ClassOf's previous answer
  absl::flat_hash_map<net::Prefix, Route> routes_;
  mutable absl::flat_hash_map<uint64_t, uint8_t> relation_;  // (wanted class, slot class) -> Relation
  // This update.
  size_t before_ = 0;   // slots in the FIB when it started
  size_t created_ = 0;  // slots it creates
  absl::flat_hash_set<GroupId> moved_;        // wanted groups whose slot changed
  absl::flat_hash_set<GroupId> maybe_empty_;  // slots that lost a user
  absl::flat_hash_set<GroupId> unrouted_;     // wanted groups nothing serves
  absl::flat_hash_set<GroupId> slot_lost_template_;
  absl::flat_hash_set<GroupId> dirty_slots_;  // content to (re)write
  std::vector<GroupId> freed_;                // slots to delete (after the routes)
  absl::flat_hash_set<GroupId> adopted_;      // exact groups in the FIB, not yet kept or retired (Adopt)
  bool adopting_ = false;                     // Place keeps adopted groups instead of creating
  std::vector<std::string> notices_;
  uint64_t moves_ = 0, promotions_ = 0, swaps_ = 0;
  // A full table: whether anything changed since a revisit last found no swap worth making
  // (at `swap_tried_at_`); if not, it is tried again only for merges that became old enough
  // since, or at `swap_retry_` (a slot held down then may go).
  bool swap_dirty_ = true;
  // At most the earliest time a group still on its slot got it (Revisit makes it exact).
  absl::Time since_floor_ = absl::InfiniteFuture();
  bool near_valid_ = false;
  bool near_follow_ = false;  // a swap is making a slot: added to the rows (else they are dropped)
  size_t near_gone_ = 0;       // slots deleted since the rows were built (left in them)
  absl::flat_hash_map<GroupId, std::vector<std::pair<double, GroupId>>> near_;
  absl::Time swap_tried_at_ = absl::InfinitePast();
  std::optional<absl::Time> swap_retry_;
  size_t peak_ = 0;

 public:
  // Slot ids are apart from the registry's ids (which count up from 1), so a slot never
  // shares an id with a wanted group by accident.
  static constexpr GroupId kFirstSlotId = 0x40000000;
};

}  // namespace bagd::rib
