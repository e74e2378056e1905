// The reconciler owns its objects (issue 40): what someone else deletes or changes is put
// back, from a notification or from the audit; another protocol's route is never
// overwritten (a conflict, reported, resolved when it goes); an object changed again and
// again is repaired with a backoff. And answers belong to the operation they answer: a
// backend that answers later and out of order never makes a newer state count as installed.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <deque>

#include "fib_sync/reconciler.h"
#include "fib_sync/recording_backend.h"
#include "tests/fib/reconciler_test_support.h"

namespace bagd::fib {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

using testing::A;
using testing::Group;
using testing::P;

FibEvent RouteChanged(const char* prefix, bool present, ObjectId id = 0) {
  FibEvent e = FibEvent::Of(FibEvent::Kind::kRouteChanged, id);
  e.prefix = P(prefix);
  e.present = present;
  return e;
}

FibEvent Foreign(const char* prefix, bool present) {
  FibEvent e = FibEvent::Of(FibEvent::Kind::kForeignRoute);
  e.prefix = P(prefix);
  e.present = present;
  return e;
}

std::vector<std::pair<ObjectId, uint32_t>> Sorted(std::vector<std::pair<ObjectId, uint32_t>> v) {
  std::sort(v.begin(), v.end());
  return v;
}

const TimePoint t0 = TimePoint{} + std::chrono::hours(1);

// One group of three next hops, weights 1:2:4, three routes on it: installed.
struct Installed {
  RecordingBackend b;
  Reconciler r{b};
  ObjectId group = 0;
  Installed() {
    REQUIRE(r.Start().ok());
    r.Update(Group(1, {{"10.0.0.1", 1}, {"10.0.0.2", 2}, {"10.0.0.3", 4}},
                   {"10.50.1.0/24", "10.50.2.0/24", "10.50.3.0/24"}));
    REQUIRE(r.Flush().failed == 0);
    group = *r.GroupObject(1);
    b.ClearLog();
    r.TakeReports();
  }
  uint64_t repairs(RepairObject o, RepairCause c) const {
    return r.stats().repairs[static_cast<int>(o)][static_cast<int>(c)];
  }
};

TEST_CASE("a route someone else deleted is put back, and only that route", "[fib][repair]") {
  Installed f;
  f.b.mutable_state().routes.erase(P("10.50.2.0/24"));  // ip route del 10.50.2.0/24 proto 186
  REQUIRE(f.r.OnEvent(RouteChanged("10.50.2.0/24", false), t0));
  CHECK(f.r.dirty());
  const FlushResult fr = f.r.Flush();
  CHECK(fr.route_ops == 1);
  CHECK(fr.group_ops == 0);
  CHECK(f.b.state().routes.at(P("10.50.2.0/24")) == f.group);
  CHECK(f.repairs(RepairObject::kRoute, RepairCause::kDeleted) == 1);
  const auto reports = f.r.TakeReports();
  REQUIRE(reports.size() == 1);
  CHECK_THAT(reports[0], Catch::Contains("route 10.50.2.0/24 was deleted by someone else"));
  CHECK_FALSE(f.r.dirty());
}

TEST_CASE("a route the kernel took itself (a lost link) is put back, not counted as someone's change",
          "[fib][repair]") {
  Installed f;
  f.b.mutable_state().routes.erase(P("10.50.2.0/24"));
  FibEvent e = RouteChanged("10.50.2.0/24", false);
  e.by_kernel = true;  // nlmsg_pid 0
  REQUIRE(f.r.OnEvent(e, t0));
  f.r.Flush();
  CHECK(f.b.state().routes.at(P("10.50.2.0/24")) == f.group);
  CHECK(f.repairs(RepairObject::kRoute, RepairCause::kDeleted) == 0);
  CHECK(f.r.TakeReports().empty());
}

TEST_CASE("a route repointed by someone else goes back to its group", "[fib][repair]") {
  Installed f;
  f.b.mutable_state().routes[P("10.50.1.0/24")] = FibEvent::kNotAnObject;  // ip route replace ... proto 186 via X
  REQUIRE(f.r.OnEvent(RouteChanged("10.50.1.0/24", true, FibEvent::kNotAnObject), t0));
  f.r.Flush();
  CHECK(f.b.state().routes.at(P("10.50.1.0/24")) == f.group);
  CHECK(f.repairs(RepairObject::kRoute, RepairCause::kChanged) == 1);
  // The group is what the route points at again, so the same notification with our object
  // changes nothing.
  REQUIRE(f.r.OnEvent(RouteChanged("10.50.1.0/24", true, f.group), t0));
  CHECK_FALSE(f.r.dirty());
}

TEST_CASE("a group overwritten with other weights is written back in one operation", "[fib][repair]") {
  Installed f;
  const auto wanted = Sorted(f.b.state().groups.at(f.group));
  auto equal = wanted;
  for (auto& m : equal) m.second = 9;  // ip nexthop replace id G group a,9/b,9/c,9
  f.b.mutable_state().groups[f.group] = equal;
  FibEvent e = FibEvent::Of(FibEvent::Kind::kGroupChanged, f.group);
  e.members = equal;
  REQUIRE(f.r.OnEvent(e, t0));
  const FlushResult fr = f.r.Flush();
  CHECK(fr.group_ops == 1);
  CHECK(fr.route_ops == 0);
  CHECK(Sorted(f.b.state().groups.at(f.group)) == wanted);
  CHECK(f.repairs(RepairObject::kGroup, RepairCause::kChanged) == 1);
}

TEST_CASE("a group deleted by someone else comes back with its routes", "[fib][repair]") {
  Installed f;
  // ip nexthop del id G: the kernel takes the routes with it.
  f.b.mutable_state().groups.erase(f.group);
  f.b.mutable_state().routes.clear();
  REQUIRE(f.r.OnEvent(FibEvent::Of(FibEvent::Kind::kNexthopDeleted, f.group), t0));
  const FlushResult fr = f.r.Flush();
  CHECK(fr.failed == 0);
  CHECK(f.b.state().groups.contains(f.group));  // the same id
  CHECK(f.b.state().routes.size() == 3);
  for (const auto& [p, id] : f.b.state().routes) CHECK(id == f.group);
  CHECK(f.repairs(RepairObject::kGroup, RepairCause::kDeleted) == 1);
}

TEST_CASE("the audit finds and repairs what no notification said", "[fib][repair][audit]") {
  Installed f;
  const auto wanted = Sorted(f.b.state().groups.at(f.group));
  f.b.mutable_state().routes.erase(P("10.50.3.0/24"));
  auto other = wanted;
  other[0].second = 100;
  f.b.mutable_state().groups[f.group] = other;
  auto found = f.r.Audit(t0);
  REQUIRE(found.ok());
  CHECK(*found == 2);
  // The group is written back at once; the missing route is found by count (the dump is
  // read a piece at a time), and a resync puts it back.
  CHECK(f.r.resync_wanted());
  REQUIRE(f.r.Resync().ok());
  f.r.Flush();
  CHECK(f.b.state().routes.at(P("10.50.3.0/24")) == f.group);
  CHECK(Sorted(f.b.state().groups.at(f.group)) == wanted);
  CHECK(f.repairs(RepairObject::kRoute, RepairCause::kAudit) == 1);
  CHECK(f.repairs(RepairObject::kGroup, RepairCause::kAudit) == 1);
  // Everything is as wanted: the next audit finds nothing and writes nothing.
  f.b.ClearLog();
  found = f.r.Audit(t0 + seconds(30));
  REQUIRE(found.ok());
  CHECK(*found == 0);
  f.r.Flush();
  CHECK(f.b.log().empty());
  CHECK(f.r.stats().audits == 2);
}

TEST_CASE("an audit a piece at a time skips what changes meanwhile and finds what is missing",
          "[fib][repair][audit]") {
  RecordingBackend b;
  Reconciler r(b);
  REQUIRE(r.Start().ok());
  std::vector<std::string> names;
  for (int i = 0; i < 100; ++i) names.push_back("10.70." + std::to_string(i) + ".0/24");
  std::vector<const char*> routes;
  for (const auto& n : names) routes.push_back(n.c_str());
  r.Update(Group(1, {{"10.0.0.1", 1}, {"10.0.0.2", 2}}, routes));
  r.Flush();
  const ObjectId g = *r.GroupObject(1);
  // The recording backend's dump comes whole: a cursor over it that hands out 10 routes a step.
  REQUIRE(r.AuditBegin(t0).ok());
  auto step = r.AuditStep(10, t0);
  REQUIRE(step.ok());
  CHECK(*step);  // the default cursor reads everything at once
  CHECK(r.audit_found() == 0);
  CHECK_FALSE(r.auditing());
  // While an audit runs, a route bagd moves is not taken as a difference.
  b.mutable_state().routes.erase(P("10.70.5.0/24"));  // missing, silently
  REQUIRE(r.AuditBegin(t0).ok());
  r.Update(Group(2, {{"10.0.0.1", 1}, {"10.0.0.2", 5}}, {"10.70.9.0/24"}));
  r.Flush();  // 10.70.9.0/24 moves to group 2 during the audit
  step = r.AuditStep(1000, t0);
  REQUIRE(step.ok());
  CHECK(*step);
  CHECK(r.audit_found() == 1);  // the missing route; the moved one is not a difference
  CHECK(b.state().routes.at(P("10.70.9.0/24")) == *r.GroupObject(2));
  REQUIRE(r.resync_wanted());
  REQUIRE(r.Resync().ok());
  r.Flush();
  CHECK(b.state().routes.at(P("10.70.5.0/24")) == g);
  CHECK_FALSE(r.dirty());
}

TEST_CASE("an IPv6 route changed while the audit runs makes it not count IPv6 routes missing",
          "[fib][repair][audit]") {
  // The kernel resumes an IPv6 dump by counting from the root when its table changed: a
  // change between two pieces may make it skip a route that is there.
  RecordingBackend b;
  Reconciler r(b);
  REQUIRE(r.Start().ok());
  r.Update(Group(1, {{"10.0.0.1", 1}, {"10.0.0.2", 2}}, {"2001:db8:1::/48", "2001:db8:2::/48", "10.80.0.0/24"}));
  r.Flush();
  REQUIRE(r.AuditBegin(t0).ok());
  b.mutable_state().routes.erase(P("2001:db8:2::/48"));  // as if the dump skipped it
  r.Update(Group(2, {{"10.0.0.1", 1}, {"10.0.0.2", 7}}, {"2001:db8:1::/48"}));
  r.Flush();  // bagd moves an IPv6 route meanwhile
  auto done = r.AuditStep(1000, t0);
  REQUIRE(done.ok());
  CHECK(*done);
  CHECK(r.audit_found() == 0);
  CHECK_FALSE(r.resync_wanted());
  // The next audit, with nothing changing, counts it.
  auto found = r.Audit(t0 + seconds(30));
  REQUIRE(found.ok());
  CHECK(*found == 1);
  CHECK(r.resync_wanted());
}

TEST_CASE("an unknown group of bagd's protocol is deleted only after the audit saw its routes",
          "[fib][repair][audit]") {
  Installed f;
  // Someone made a group with bagd's protocol number and pointed a route of bagd's protocol
  // at it: both unknown to bagd.
  f.b.mutable_state().groups[42] = f.b.state().groups.at(f.group);
  f.b.mutable_state().routes[P("10.99.0.0/24")] = 42;
  REQUIRE(f.r.AuditBegin(t0).ok());
  auto done = f.r.AuditStep(1000, t0);
  REQUIRE(done.ok());
  REQUIRE(*done);
  f.r.Flush();  // the route goes first, then the group (make-before-break order)
  CHECK_FALSE(f.b.state().routes.contains(P("10.99.0.0/24")));
  CHECK_FALSE(f.b.state().groups.contains(42));
  CHECK(f.b.state().routes.size() == 3);
}

TEST_CASE("an object someone keeps changing is repaired with a backoff", "[fib][repair]") {
  Installed f;
  const ReconcilerOptions o;
  auto delete_it = [&](TimePoint now) {
    f.b.mutable_state().routes.erase(P("10.50.1.0/24"));
    f.r.OnEvent(RouteChanged("10.50.1.0/24", false), now);
    f.r.Flush();
    return f.b.state().routes.contains(P("10.50.1.0/24"));
  };
  TimePoint now = t0;
  for (uint32_t i = 0; i < o.free_repairs; ++i) CHECK(delete_it(now));
  // Past free_repairs within the window: the next one waits repair_backoff_first.
  CHECK_FALSE(delete_it(now));
  CHECK(f.r.held_repairs() == 1);
  CHECK(f.r.stats().repairs_held == 1);
  CHECK_THAT(f.r.TakeReports().back(), Catch::Contains("the next repair of it waits 1000 ms"));
  auto next = f.r.ReleaseHeld(now + milliseconds(10));
  REQUIRE(next);
  CHECK(*next == now + o.repair_backoff_first);
  f.r.Flush();
  CHECK_FALSE(f.b.state().routes.contains(P("10.50.1.0/24")));
  CHECK_FALSE(f.r.ReleaseHeld(*next));  // due: repaired, nothing else held
  f.r.Flush();
  CHECK(f.b.state().routes.contains(P("10.50.1.0/24")));
  // And the next one waits twice as long (from that repair).
  now = *next;
  CHECK_FALSE(delete_it(now));
  next = f.r.ReleaseHeld(now);
  REQUIRE(next);
  CHECK(*next == now + 2 * o.repair_backoff_first);
  // Another route is not held by this one's history.
  f.b.mutable_state().routes.erase(P("10.50.2.0/24"));
  f.r.OnEvent(RouteChanged("10.50.2.0/24", false), now);
  f.r.Flush();
  CHECK(f.b.state().routes.contains(P("10.50.2.0/24")));
  // Held, then done at its time.
  CHECK_FALSE(f.r.ReleaseHeld(*next));
  f.r.Flush();
  CHECK(f.b.state().routes.contains(P("10.50.1.0/24")));
  // Left alone for a window, its history is forgotten: repaired at once again.
  now = *next + o.repair_window + o.repair_backoff_max;
  CHECK(delete_it(now));
}

TEST_CASE("another protocol's route is never overwritten: a conflict until it goes", "[fib][repair][conflict]") {
  Installed f;
  // ip route replace 10.50.2.0/24 via ... (protocol boot): bagd's route is gone.
  f.b.HoldByOtherProtocol(P("10.50.2.0/24"));
  REQUIRE(f.r.OnEvent(Foreign("10.50.2.0/24", true), t0));
  f.r.Flush();
  CHECK(f.r.conflicts().contains(P("10.50.2.0/24")));
  CHECK(f.r.stats().conflicts_total == 1);
  CHECK_FALSE(f.b.state().routes.contains(P("10.50.2.0/24")));
  // An audit tries once (exclusively), the other route is still there: still a conflict.
  REQUIRE(f.r.Audit(t0 + seconds(30)).ok());
  f.r.Flush();
  CHECK(f.r.conflicts().contains(P("10.50.2.0/24")));
  CHECK_FALSE(f.r.resync_wanted());
  // A new desired group for the prefix does not overwrite it either.
  rib::FibUpdate u = Group(2, {{"10.0.0.1", 1}, {"10.0.0.2", 1}}, {"10.50.2.0/24"});
  f.r.Update(u);
  f.r.Flush();
  CHECK(f.b.foreign_overwritten() == 0);
  // The other route goes: bagd's is installed.
  f.b.ReleaseOtherProtocol(P("10.50.2.0/24"));
  REQUIRE(f.r.OnEvent(Foreign("10.50.2.0/24", false), t0 + seconds(31)));
  f.r.Flush();
  CHECK(f.b.state().routes.at(P("10.50.2.0/24")) == *f.r.GroupObject(2));
  CHECK(f.r.conflicts().empty());
  CHECK(f.b.foreign_overwritten() == 0);
}

TEST_CASE("a conflict nobody told bagd of is found by the exclusive create and the dump", "[fib][repair][conflict]") {
  Installed f;
  f.b.HoldByOtherProtocol(P("10.50.3.0/24"));  // no notification
  auto found = f.r.Audit(t0);
  REQUIRE(found.ok());
  CHECK(*found == 1);  // bagd's route is missing from the dump
  CHECK(f.r.resync_wanted());
  REQUIRE(f.r.Resync().ok());
  f.r.Flush();  // exclusive create: ALREADY_EXISTS
  CHECK(f.b.foreign_overwritten() == 0);
  CHECK_FALSE(f.r.resync_wanted());  // no full resync for it: an audit decides
  CHECK(f.r.audit_wanted());
  REQUIRE(f.r.Audit(t0 + seconds(1)).ok());  // the dump has no route of bagd's there
  CHECK_FALSE(f.r.audit_wanted());
  CHECK(f.r.conflicts().contains(P("10.50.3.0/24")));
  f.r.Flush();
  CHECK(f.b.foreign_overwritten() == 0);
  CHECK_FALSE(f.r.dirty());
}

TEST_CASE("an exclusive create that meets bagd's own route adopts it", "[fib][repair][conflict]") {
  Installed f;
  // A stale "deleted" notification: the route is in fact still there.
  REQUIRE(f.r.OnEvent(RouteChanged("10.50.1.0/24", false), t0));
  f.r.Flush();  // exclusive create: ALREADY_EXISTS (it is ours)
  CHECK_FALSE(f.r.resync_wanted());
  REQUIRE(f.r.audit_wanted());
  auto found = f.r.Audit(t0);
  REQUIRE(found.ok());
  CHECK(*found == 0);  // just what bagd wants: adopted, no difference
  CHECK(f.r.conflicts().empty());
  CHECK_FALSE(f.r.audit_wanted());
  f.r.Flush();
  CHECK(f.r.confirmed_routes().contains(P("10.50.1.0/24")));
  CHECK_FALSE(f.r.dirty());
}

// A backend that answers later: every operation is in progress until the test delivers its
// answer (in any order); a success is applied to the recording backend underneath.
class DelayingBackend : public FibBackend {
 public:
  FibCapabilities Capabilities() const override { return inner.Capabilities(); }
  std::vector<absl::Status> Apply(std::span<const FibOp> ops) override {
    for (const FibOp& op : ops) pending.push_back(op);
    return std::vector<absl::Status>(ops.size(), InProgress());
  }
  absl::StatusOr<FibState> Dump() override { return inner.Dump(); }
  // Delivers the answer to pending[i] (and forgets it).
  void Answer(size_t i, absl::Status st = absl::OkStatus()) {
    const FibOp op = pending.at(i);
    pending.erase(pending.begin() + static_cast<ptrdiff_t>(i));
    if (st.ok()) st = inner.Apply(std::span<const FibOp>(&op, 1)).front();
    FibEvent e = FibEvent::Of(FibEvent::Kind::kCompleted);
    e.generation = GenerationOf(op);
    e.status = st;
    Emit(e);
  }
  void Send(const FibEvent& e) { Emit(e); }
  void AnswerAllReversed() {
    while (!pending.empty()) Answer(pending.size() - 1);
  }
  RecordingBackend inner;
  std::vector<FibOp> pending;
};

TEST_CASE("an object whose answer is pending gets no other operation", "[fib][answers]") {
  DelayingBackend b;
  Reconciler r(b);
  b.SetEventHandler([&](const FibEvent& e) { r.OnEvent(e, t0); });
  REQUIRE(r.Start().ok());
  r.Update(Group(1, {{"10.0.0.1", 1}, {"10.0.0.2", 3}}, {"10.1.0.0/24"}));
  r.Flush();
  REQUIRE(b.pending.size() == 2);  // the next hops; the group waits for them
  CHECK(r.in_flight() == 2);
  r.Flush();
  CHECK(b.pending.size() == 2);  // nothing sent twice
  b.AnswerAllReversed();
  r.Flush();
  REQUIRE(b.pending.size() == 1);  // the group
  const ObjectId g = std::get<GroupOp>(b.pending[0]).id;
  // The weights change while the group's write is in flight: not sent until it is answered.
  r.Update(Group(1, {{"10.0.0.1", 1}, {"10.0.0.2", 5}}));
  r.Flush();
  CHECK(b.pending.size() == 1);
  b.Answer(0);
  // The answer was for 1:3: the group is installed (1:3) but not clean: 1:5 is wanted.
  CHECK(r.dirty());
  CHECK(r.confirmed().groups.at(g) == std::vector<std::pair<ObjectId, uint32_t>>(
                                          std::get<GroupOp>(b.inner.log().back()).members));
  r.Flush();
  REQUIRE(b.pending.size() >= 1);
  CHECK(std::get<GroupOp>(b.pending[0]).members.back().second == 5);
  b.AnswerAllReversed();
  r.Flush();
  b.AnswerAllReversed();  // the route
  r.Flush();
  CHECK(b.pending.empty());
  CHECK_FALSE(r.dirty());
  CHECK(b.inner.state().routes.at(P("10.1.0.0/24")) == g);
  CHECK(r.stats().stale_answers == 0);
}

TEST_CASE("a late success for an operation a resync superseded marks nothing installed", "[fib][answers]") {
  DelayingBackend b;
  Reconciler r(b);
  b.SetEventHandler([&](const FibEvent& e) { r.OnEvent(e, t0); });
  REQUIRE(r.Start().ok());
  r.Update(Group(1, {{"10.0.0.1", 1}, {"10.0.0.2", 3}}));
  r.Flush();
  b.AnswerAllReversed();  // next hops
  r.Flush();
  REQUIRE(b.pending.size() == 1);  // group 1:3, generation n
  const FibOp late = b.pending[0];
  b.pending.clear();               // held back by the backend
  REQUIRE(r.Resync().ok());        // notifications were lost: the dump is the truth
  r.Update(Group(1, {{"10.0.0.1", 1}, {"10.0.0.2", 7}}));
  r.Flush();
  REQUIRE(b.pending.size() == 1);  // group 1:7, a newer generation
  CHECK(GenerationOf(b.pending[0]) > GenerationOf(late));
  // The late answer for 1:3 comes now, out of order, and says success.
  FibEvent e = FibEvent::Of(FibEvent::Kind::kCompleted);
  e.generation = GenerationOf(late);
  b.Send(e);
  CHECK(r.stats().stale_answers == 1);
  CHECK_FALSE(r.GroupObject(1));  // not installed: only 1:7's own answer can say so
  CHECK(r.dirty());
  // 1:7 fails: still not installed, and tried again.
  b.Answer(0, absl::UnavailableError("busy"));
  CHECK_FALSE(r.GroupObject(1));
  r.Flush();
  REQUIRE(b.pending.size() == 1);
  CHECK(std::get<GroupOp>(b.pending[0]).members.back().second == 7);
  b.Answer(0);
  REQUIRE(r.GroupObject(1));
  CHECK(r.confirmed().groups.at(*r.GroupObject(1)).back().second == 7);
  CHECK_FALSE(r.dirty());
}

TEST_CASE("answers in reverse order settle every route", "[fib][answers]") {
  DelayingBackend b;
  Reconciler r(b);
  b.SetEventHandler([&](const FibEvent& e) { r.OnEvent(e, t0); });
  REQUIRE(r.Start().ok());
  std::vector<std::string> prefixes;
  for (int i = 0; i < 50; ++i) prefixes.push_back("10.60." + std::to_string(i) + ".0/24");
  std::vector<const char*> routes;
  for (const auto& p : prefixes) routes.push_back(p.c_str());
  r.Update(Group(1, {{"10.0.0.1", 1}, {"10.0.0.2", 3}}, routes));
  for (int round = 0; round < 4 && r.dirty(); ++round) {
    r.Flush();
    b.AnswerAllReversed();
  }
  CHECK_FALSE(r.dirty());
  CHECK(r.in_flight() == 0);
  CHECK(b.inner.state().routes.size() == 50);
  CHECK(r.confirmed_routes().size() == 50);
}

}  // namespace
}  // namespace bagd::fib
