// The FIB reconciler (design.md rule 7, after Open/R's fib/): what bagd wants installed
// (desired), what the backend confirmed (confirmed), and the difference as dirty sets that
// Flush() turns into operations, make-before-break:
//   1. next hops to create,  2. groups to create or replace (only with confirmed next hops),
//   3. routes to add or repoint (only to confirmed groups),  4. routes to delete,
//   5. groups no confirmed route uses,  6. next hops no group uses.
// Route operations go in chunks (ReconcilerOptions::route_chunk), all upserts before any
// delete. Where the backend removes a group's routes with the group
// (FibCapabilities::group_delete_removes_routes: the kernel), a group that goes with every
// one of its routes, enough of them, is one group delete instead of a delete per route.
// A failed operation stays dirty and is retried by the next Flush(). Only what the backend
// confirmed is reported as installed.
//
// The group cap (`max_groups`, the backend's or the config's limit): a second line of
// defence behind the weights stage's budget (rib/weights/group_budget.h). The backend never
// holds more groups than the cap after any operation, stale ones of a previous run and ones
// waiting for their deletion included. When a flush wants more creates than there is room,
// it first deletes what no confirmed route uses (safe for traffic), then gives a group whose
// routes all sit on one group being deleted that group's object, replaced in place (the
// routes get what they want in one operation, no extra slot); a group still without room is
// refused: not created, counted (stats().groups_refused, refused_groups()), its routes stay
// where they are (or, new ones, uninstalled and counted in waiting_routes()), and it is
// tried again in the same flush once the flush's deletes free a slot, and at every flush.
//
// Restart without churn: Start() dumps what the backend holds that bagd owns. Those objects
// are "stale" until the new desired state claims them: a next hop by its gateway, a group by
// its members and weights when it is first written (not when it first appears: the desired
// state may change many times before the first Flush), a route by its prefix. A claimed
// object keeps its id and costs no operation. Sweep() (after the routes have converged)
// deletes what nobody claimed.
//
// Repair (docs/fib.md, "Repair and audit"): bagd owns its objects. A change someone else
// made (the backend's FibEvents: a route of bagd's deleted or repointed, a group replaced
// with other members or weights, a next hop replaced) makes the object dirty again, so the
// next flush puts back what bagd wants; Audit() dumps the backend and does the same for every
// difference, so a missed notification is found too. Routes of other protocols are never
// touched: a route bagd does not know as its own is created exclusively (RouteOp::exclusive),
// and a prefix held by another protocol's route is a conflict, shown and counted, tried again
// at each audit and when that route goes. One object that keeps being changed is repaired at
// once `free_repairs` times, then only after a backoff that doubles each time, until it has
// been left alone for `repair_window`.
//
// Answers (fib_backend.h): every operation is numbered. A backend may answer later
// (IsInProgress, then FibEvent::kCompleted); an object with an operation in flight gets no
// other until the answer comes, and an answer whose number is not the object's latest (a
// resync came between) changes nothing.
//
// Not thread-safe: runs on the owner's thread; the backend's events come back through OnEvent.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "fib_sync/fib_backend.h"
#include "rib/fib_update.h"
#include "net/prefix_map.h"

namespace bagd::fib {

struct ReconcilerOptions {
  // bagd allocates object ids from here up, skipping ids others use ("bagd" in hex: far
  // from the low ids FRR's zebra and iproute2 users pick).
  ObjectId id_base = 0x0BAD0000;
  // Most groups the backend may hold at any moment; 0: no cap (SetMaxGroups changes it).
  uint32_t max_groups = 0;
  // Route operations handed to the backend at a time (memory: a chunk of operations and
  // their statuses, whatever the number of routes a flush changes).
  size_t route_chunk = 8192;
  // Repairs of one object (a route, a group, a next hop) done at once within repair_window;
  // past that, each waits repair_backoff_first, doubling up to repair_backoff_max.
  uint32_t free_repairs = 3;
  std::chrono::seconds repair_window{60};
  std::chrono::milliseconds repair_backoff_first{1000};
  std::chrono::milliseconds repair_backoff_max{300000};
};

using TimePoint = std::chrono::steady_clock::time_point;

// What was repaired (bagd_fib_repairs_total{object,cause}).
enum class RepairObject : uint8_t { kRoute, kGroup, kNexthop };
inline constexpr int kRepairObjects = 3;
enum class RepairCause : uint8_t {
  kDeleted,  // a notification: someone deleted it
  kChanged,  // a notification: someone replaced it with something else
  kAudit,    // found by the periodic audit (a notification missed, or none exists)
};
inline constexpr int kRepairCauses = 3;
const char* RepairObjectName(RepairObject o);  // "route", "group", "nexthop"
const char* RepairCauseName(RepairCause c);    // "deleted", "changed", "audit"

struct FlushResult {
  size_t applied = 0;  // operations the backend confirmed
  size_t failed = 0;   // operations that failed (still dirty)
  size_t nexthop_ops = 0, group_ops = 0, route_ops = 0;
  size_t groups_refused = 0;  // group creates not sent: no room under max_groups (still dirty)
  size_t groups_rebound = 0;  // groups that took over the object of a group being deleted
  size_t routes_removed_with_group = 0;  // routes the backend removed with their group (no route op)
  std::vector<std::string> errors;  // "group 195887105 = ...: Invalid argument (weight)", at most 20
};

struct ReconcilerStats {
  uint64_t applied = 0;
  uint64_t failed = 0;
  uint64_t resyncs = 0;
  uint64_t adopted = 0;  // objects claimed from a previous run
  uint64_t swept = 0;    // objects of a previous run deleted by Sweep()
  uint64_t groups_refused = 0;  // times a group create was refused for want of room (max_groups)
  uint64_t groups_rebound = 0;  // groups written into the object of a group being deleted
  uint64_t routes_removed_with_group = 0;  // routes that went with their group's delete
  uint64_t repairs[kRepairObjects][kRepairCauses] = {};  // [RepairObject][RepairCause]
  uint64_t repairs_held = 0;     // repairs put off by the backoff of an object changed again and again
  uint64_t conflicts_total = 0;  // times a prefix was found held by another protocol's route
  uint64_t audits = 0;
  uint64_t stale_answers = 0;    // answers for an operation that was not the object's latest
  uint64_t in_flight = 0;        // operations sent whose answer comes later
};

class Reconciler {
 public:
  Reconciler(FibBackend& backend, ReconcilerOptions options = {}) : backend_(backend), options_(options) {}

  // Dumps the backend: what bagd owns becomes stale until claimed.
  absl::Status Start();
  // Desired-state changes from the weights stage.
  void Update(const rib::FibUpdate& update);
  // Applies what is dirty.
  FlushResult Flush();
  // Deletes stale objects nobody claimed (call once routes have converged after a start).
  void Sweep();
  // Dump and compare: anything that differs from desired becomes dirty (lost notifications,
  // a backend restart).
  absl::Status Resync();
  // Returns false when the event changes nothing bagd has (e.g. the notification of its own delete).
  // `now` paces repairs of an object changed again and again.
  bool OnEvent(const FibEvent& e, TimePoint now = {});
  // Dumps the backend and compares it with what bagd believes installed: each difference
  // from what bagd wants is repaired (cause kAudit) and reported; prefixes in conflict are
  // tried again. Returns the differences found.
  absl::StatusOr<size_t> Audit(TimePoint now);
  // The same a piece at a time (the event thread runs between pieces): AuditBegin starts a
  // dump, each AuditStep reads about `max_routes` more routes of it and compares them; true
  // when done (audit_found() is then the differences found). A route changed while the
  // audit runs is not compared; routes missing from the dump are counted at the end and put
  // back by a resync (resync_wanted()). Start, Resync and TakeConfirmed end an audit.
  absl::Status AuditBegin(TimePoint now);
  absl::StatusOr<bool> AuditStep(size_t max_routes, TimePoint now);
  bool auditing() const { return audit_cursor_ != nullptr; }
  // An exclusive create met a route bagd did not know of: an audit says whose it is.
  bool audit_wanted() const { return !suspects_.empty() && audit_cursor_ == nullptr; }
  size_t audit_found() const { return audit_found_; }
  // Repairs put off by an object's backoff whose time has come become dirty; returns when
  // the next one is due.
  std::optional<TimePoint> ReleaseHeld(TimePoint now);
  // What repairs and conflicts found since the last call, one line each (at most 20, then a
  // count), for the log.
  std::vector<std::string> TakeReports();
  // Prefixes held by another protocol's route (bagd's route is not installed there).
  const std::set<net::Prefix>& conflicts() const { return conflicts_; }
  size_t held_repairs() const { return held_.size(); }
  size_t in_flight() const { return in_flight_.size(); }

  // The group cap (ReconcilerOptions::max_groups); a reload may change it. 0: none.
  void SetMaxGroups(uint32_t max_groups) { options_.max_groups = max_groups; }
  uint32_t max_groups() const { return options_.max_groups; }
  // Groups the backend holds now (ours, a previous run's, and ones not deleted yet).
  size_t group_count() const { return confirmed_.groups.size(); }
  // Groups not created at the last flush for want of room, and the routes waiting for them.
  size_t refused_groups() const { return refused_.size(); }
  size_t waiting_routes() const { return waiting_routes_; }

  bool dirty() const;
  size_t pending() const;  // operations not yet confirmed: dirty objects and deletes to do
  bool resync_wanted() const { return resync_wanted_; }
  size_t stale_count() const { return stale_nexthops_.size() + stale_groups_.size() + stale_routes_.size(); }
  std::optional<ObjectId> GroupObject(rib::GroupId group) const;
  // What the backend holds that we own: its next hops and groups (routes: empty), and its
  // routes (prefix -> group object).
  const FibState& confirmed() const { return confirmed_; }
  const net::PrefixMap<ObjectId>& confirmed_routes() const { return confirmed_routes_; }
  const ReconcilerStats& stats() const { return stats_; }

 private:
  // Errors kept per FlushResult and reports kept between TakeReports calls.
  static constexpr size_t kMaxErrorsReported = 20;
  // An audit compares only what did not change while it ran; past this many changes it stops.
  static constexpr size_t kMaxAuditTouched = 1 << 18;
  struct DesiredNexthop {
    ObjectId id = 0;
    uint32_t refs = 0;  // groups using it
  };
  struct DesiredGroup {
    ObjectId id = 0;
    std::vector<rib::FibGroupMember> members;  // by next hop address
  };

  ObjectId Allocate();
  bool InUse(ObjectId id) const;
  ObjectId NexthopFor(const net::IpAddress& gateway);  // claims, reuses or allocates; refs++
  void ReleaseNexthop(const net::IpAddress& gateway);
  std::optional<ObjectId> ClaimGroup(const DesiredGroup& g);
  // Gives a group its object at its first write: an old one with the same content, or a new id.
  void Bind(rib::GroupId gid, DesiredGroup& g);
  void SetConfirmedRoute(const net::Prefix& prefix, std::optional<ObjectId> group);
  // A backend's dump becomes the confirmed state (Start, Resync).
  void TakeConfirmed(FibState state);
  std::vector<std::pair<ObjectId, uint32_t>> KernelMembers(const DesiredGroup& g, bool confirmed_only) const;
  void Record(FlushResult& r, const FibOp& op, const absl::Status& st);
  // Numbers the operations and sends them; an operation the backend answers later is
  // recorded in flight and its status is IsInProgress (callers treat it as not done).
  std::vector<absl::Status> Apply(std::vector<FibOp>& ops, FlushResult& r);
  // An operation whose success came (now or later, as the latest for its object) makes
  // the confirmed state what it wrote, and its object clean when that is what is wanted.
  void Settle(const FibOp& op);
  void OnCompleted(const FibEvent& e);
  void ForgetInFlight();
  void SettleSuspects();
  // A prefix held by another protocol's route: counted and reported once.
  void NoteConflict(const net::Prefix& p, const char* what);
  // Marks for deletion what bagd owns and no longer wants (unless the sweep decides).
  void MarkUnwanted();
  // (Checked per dirty route in a flush: nothing is hashed while no answer is pending.)
  bool Busy(ObjectId id) const { return !object_gen_.empty() && object_gen_.contains(id); }
  bool Busy(const net::Prefix& p) const { return !route_gen_.empty() && route_gen_.contains(p); }
  // A repair of an object someone else changed: true to do it now, false when its backoff
  // holds it (it is done by ReleaseHeld).
  struct RepairKey {
    RepairObject object = RepairObject::kRoute;
    ObjectId id = 0;
    net::Prefix prefix{};
    friend bool operator==(const RepairKey&, const RepairKey&) = default;
    template <typename H>
    friend H AbslHashValue(H h, const RepairKey& k) {
      return H::combine(std::move(h), k.object, k.id, k.prefix);
    }
  };
  bool RequestRepair(const RepairKey& key, RepairCause cause, TimePoint now, const std::string& what);
  // Counts a repair done now and sets the object's backoff; returns what to add to the report.
  std::string Charge(const RepairKey& key, RepairCause cause, TimePoint now);
  void MakeDirty(const RepairKey& key);
  void Report(std::string line);
  // The desired kernel members of group `gid`'s object, or nullopt when the group is not ours.
  std::optional<std::vector<std::pair<ObjectId, uint32_t>>> WantedMembers(ObjectId object) const;
  // What route `prefix` should point at (the object of its group), when it is wanted and its
  // group is installed.
  std::optional<ObjectId> WantedRouteObject(const net::Prefix& prefix) const;
  void FlushGroups(FlushResult& r);
  size_t FlushRoutes(FlushResult& r);  // returns the route operations applied
  size_t DeleteUnusedGroups(FlushResult& r);  // returns how many went
  // Of the groups the flush's route deletes sit on (`deletes_of`: group -> deletes), those to
  // delete whose confirmed routes all go, enough of them for one group delete (the backend
  // removing the routes with it) to be cheaper than a delete each.
  absl::flat_hash_set<ObjectId> GroupsGoingWithTheirRoutes(const absl::flat_hash_map<ObjectId, size_t>& deletes_of) const;
  // Under the cap: frees up to `need` slots by deleting groups no confirmed route uses.
  size_t FreeUnused(size_t need, FlushResult& r);
  // Under the cap: `want` (rib id) takes the object of a group being deleted (or a stale one)
  // whose confirmed routes all want it; returns that object, after rebinding.
  struct TakeOver {  // built at the first Rebind of a flush
    bool built = false;
    absl::flat_hash_map<rib::GroupId, ObjectId> object_of;  // group -> object all its routes sit on
  };
  std::optional<ObjectId> Rebind(rib::GroupId want, DesiredGroup& g, TakeOver& index);
  void ConfirmGroupDeleted(ObjectId id);

  FibBackend& backend_;
  ReconcilerOptions options_;
  // Desired.
  std::map<net::IpAddress, DesiredNexthop> nexthops_;
  absl::flat_hash_map<rib::GroupId, DesiredGroup> groups_;
  // The per-route tables are ordered PrefixMaps (~17 bytes a route in table order): a hash
  // map of a full table holds ~52 MB, and the dirty set grows to the whole table while the
  // kernel takes the first sync (~60 MB more while it rehashed).
  net::PrefixMap<rib::GroupId> routes_;
  // Confirmed (what the backend holds that we own); its routes are kept apart, ordered.
  FibState confirmed_;
  net::PrefixMap<ObjectId> confirmed_routes_;
  size_t confirmed_by_family_[2] = {0, 0};  // its IPv4 and IPv6 routes (an audit's count of what is missing)
  absl::flat_hash_map<ObjectId, uint32_t> route_refs_;  // confirmed routes per group
  std::set<ObjectId> foreign_;
  std::set<ObjectId> allocated_;                         // ids of desired objects (and ones being deleted)
  absl::flat_hash_map<ObjectId, rib::GroupId> group_object_;  // desired group object -> registry id
  // From the last start, not claimed yet.
  std::set<ObjectId> stale_nexthops_, stale_groups_;
  net::PrefixMap<bool> stale_routes_;  // the value is unused
  // Dirty.
  std::set<net::IpAddress> dirty_nexthops_;
  std::set<rib::GroupId> dirty_groups_;
  net::PrefixMap<bool> dirty_routes_;  // the value is unused
  std::set<ObjectId> delete_groups_, delete_nexthops_;
  bool resync_wanted_ = false;
  ObjectId next_id_ = 0;
  std::set<rib::GroupId> refused_;  // groups refused at the last flush (no room)
  size_t waiting_routes_ = 0;       // dirty routes whose group was refused
  // Repair.
  struct RepairHistory {
    uint32_t count = 0;   // repairs since the object was last quiet for repair_window
    TimePoint last{};     // the last repair
    TimePoint hold_until{};
  };
  absl::flat_hash_map<RepairKey, RepairHistory> repair_history_;
  absl::flat_hash_map<RepairKey, RepairCause> held_;
  std::set<net::IpAddress> rewrite_nexthops_;  // replaced by someone else: written again as they are
  std::set<net::Prefix> conflicts_;            // held by another protocol's route
  std::set<net::Prefix> conflict_retry_;       // conflicts the audit tries again once
  std::set<net::Prefix> suspects_;             // an exclusive create found a route there: whose?
  std::vector<std::string> reports_;
  absl::flat_hash_set<ObjectId> gone_groups_;  // deleted under bagd: their routes go at the next flush
  void TakeGoneGroups();
  TimePoint next_prune_{};
  size_t reports_dropped_ = 0;
  // The audit under way.
  void AuditObjects(const FibState& dumped, TimePoint now);
  void AuditRoute(const net::Prefix& prefix, ObjectId object, TimePoint now);
  void FinishAudit();
  void AbortAudit();
  std::unique_ptr<DumpCursor> audit_cursor_;
  FibState audit_chunk_;
  bool audit_objects_done_ = false;
  size_t audit_found_ = 0;
  size_t audit_matched_by_[2] = {0, 0};  // IPv4, IPv6 routes found as bagd believes them
  std::vector<ObjectId> audit_unknown_groups_;  // bagd's protocol, unknown: deleted at the end
  std::set<net::Prefix> audit_suspects_;        // suspects when it began
  absl::flat_hash_set<net::Prefix> audit_touched_;  // routes changed since it began
  // Answers.
  uint64_t next_generation_ = 1;
  absl::flat_hash_map<uint64_t, FibOp> in_flight_;        // generation -> the operation
  absl::flat_hash_map<ObjectId, uint64_t> object_gen_;    // next hop or group -> latest in flight
  absl::flat_hash_map<net::Prefix, uint64_t> route_gen_; // route -> latest in flight
  ReconcilerStats stats_;
};

}  // namespace bagd::fib
