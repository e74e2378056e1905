// The interface every FIB backend implements (design.md rule 7): the Linux kernel over
// rtnetlink (fib_sync/netlink_backend.h), SONiC's APPL_DB, and a recording backend for tests
// and `bagd --dry-run`. Free of netlink types: a backend speaks in next hops (a gateway),
// groups of next hops with weights, and routes that point at a group.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "net/ip_prefix.h"

namespace bagd::fib {

// Next hops and groups share one id space (as kernel nexthop objects do).
using ObjectId = uint32_t;

struct FibCapabilities {
  uint32_t max_weight = 65535;  // 255 on kernels before 6.12
  uint32_t max_members = 256;   // members per group bagd will ask for
  bool resilient_groups = false;
  // Most next-hop groups the target holds (SONiC: STATE_DB SWITCH_CAPABILITY|switch
  // MAX_NEXTHOP_GROUP_COUNT); 0 = the backend cannot tell (the kernel).
  uint32_t max_groups = 0;
  // Deleting a group also removes the routes that point at it (the kernel: one pass over its
  // table, no per-route notification for IPv4). SONiC's orchagent refuses such a delete.
  bool group_delete_removes_routes = false;
};

// Every operation carries a generation: the reconciler numbers what it sends, one number
// higher each time, and an answer counts only for the operation it answers. A backend that
// answers later (IsInProgress below) says which operation through FibEvent::kCompleted with
// its generation; an answer for an object that was written again since is not taken as the
// newer state installed (FRR PR 23022 is that bug).
struct NexthopOp {
  ObjectId id = 0;
  net::IpAddress gateway;
  bool remove = false;
  uint64_t generation = 0;
};

struct GroupOp {
  ObjectId id = 0;
  std::vector<std::pair<ObjectId, uint32_t>> members;  // (next hop id, weight >= 1), by id
  bool remove = false;
  uint64_t generation = 0;
};

struct RouteOp {
  net::Prefix prefix;
  ObjectId group = 0;
  bool remove = false;
  // Create only, never replace: the prefix holds no route bagd knows as its own, and a route
  // someone else put there must not be overwritten (the kernel: NLM_F_EXCL). A refusal is
  // absl::StatusCode::kAlreadyExists.
  bool exclusive = false;
  uint64_t generation = 0;
};

using FibOp = std::variant<NexthopOp, GroupOp, RouteOp>;
std::string Describe(const FibOp& op);  // "group 7 = 3*1 4*2", "route 10.0.0.0/24 -> 7", ...
uint64_t GenerationOf(const FibOp& op);

// The status a backend returns from Apply() for an operation it has sent but whose answer
// comes later, as a FibEvent::kCompleted with the operation's generation.
absl::Status InProgress();
bool IsInProgress(const absl::Status& st);

// What a backend holds that bagd owns (protocol / owner tag), and the ids others use.
struct FibState {
  std::map<ObjectId, net::IpAddress> nexthops;
  std::map<ObjectId, std::vector<std::pair<ObjectId, uint32_t>>> groups;
  absl::flat_hash_map<net::Prefix, ObjectId> routes;
  std::vector<ObjectId> foreign_ids;  // object ids in use by others: never allocated by bagd
};

// Something happened behind the reconciler's back, or an answer that came later.
// A backend reports changes that others made (another process, an operator's `ip`), never
// the echo of its own operations.
struct FibEvent {
  enum class Kind {
    kNexthopDeleted,  // e.g. the kernel removed it on link loss (and from every group)
    kLinkUp,          // a link came up: next hops that failed may now be created
    kLinkDown,        // a link went down: the kernel deleted its next hops without a word
    kResyncNeeded,    // notifications were lost (ENOBUFS): dump and compare everything
    // Someone else deleted (present = false) or rewrote a route of bagd's protocol at
    // `prefix`; `id` is the object it points at now (kNotAnObject: a gateway, not an object).
    kRouteChanged,
    // Someone else replaced bagd's group `id`: its members are now `members`.
    kGroupChanged,
    // Someone else replaced bagd's next hop `id` (its gateway or interface).
    kNexthopChanged,
    // A route of another protocol appeared at `prefix` (present) where it takes the place of
    // bagd's (same table and metric), or went away (not present).
    kForeignRoute,
    // The answer to the operation numbered `generation` (a backend that answers later).
    kCompleted,
  };
  static constexpr ObjectId kNotAnObject = 0xFFFFFFFF;
  static FibEvent Of(Kind kind, ObjectId id = 0) {
    FibEvent e;
    e.kind = kind;
    e.id = id;
    return e;
  }
  Kind kind = Kind::kResyncNeeded;
  ObjectId id = 0;
  net::Prefix prefix{};
  bool present = false;
  // The kernel did it itself (a link or next hop went away and took the route with it), not
  // another process: put back without counting it as a repair of someone else's change.
  bool by_kernel = false;
  std::vector<std::pair<ObjectId, uint32_t>> members;
  uint64_t generation = 0;
  absl::Status status;
};

// A dump read a piece at a time: the kernel's dump of a full table takes about a second, and
// read whole it would hold the event thread for all of it (an audit every 30 s).
class DumpCursor {
 public:
  virtual ~DumpCursor() = default;
  // Reads more of the dump into `out`: every next hop and group at the first call, then about
  // `max_routes` routes a call (added to out.routes). Returns true once the dump is complete.
  virtual absl::StatusOr<bool> Next(size_t max_routes, FibState& out) = 0;
};

class FibBackend {
 public:
  virtual ~FibBackend() = default;
  virtual FibCapabilities Capabilities() const = 0;
  // Applies `ops` in order; one status per op (a failed op does not stop the others).
  virtual std::vector<absl::Status> Apply(std::span<const FibOp> ops) = 0;
  // Everything the backend holds that bagd owns.
  virtual absl::StatusOr<FibState> Dump() = 0;
  // The same, a piece at a time (DumpCursor). The default reads Dump() whole at the first call.
  virtual absl::StatusOr<std::unique_ptr<DumpCursor>> StartDump();
  // Events are delivered through this callback (on the owner's thread).
  void SetEventHandler(std::function<void(const FibEvent&)> handler) { on_event_ = std::move(handler); }

 protected:
  void Emit(const FibEvent& e) {
    if (on_event_) on_event_(e);
  }

 private:
  std::function<void(const FibEvent&)> on_event_;
};

}  // namespace bagd::fib
