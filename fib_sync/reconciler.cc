#include "fib_sync/reconciler.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"
#include "net/overloaded.h"

namespace bagd::fib {

namespace {

// A group's routes go with the group (FibCapabilities::group_delete_removes_routes) when at
// least this many of them go and they are at least 1/kWithGroupShare of the table: the kernel
// then walks its whole table once (~0.09 us an entry, 1M routes) instead of taking a delete per
// route (~6 us each); below that, per-route deletes are cheaper.
constexpr size_t kWithGroupMin = 4096;
constexpr size_t kWithGroupShare = 64;

}  // namespace

std::string Describe(const FibOp& op) {
  return std::visit(net::Overloaded{
                        [](const NexthopOp& n) {
                          return n.remove ? absl::StrCat("delete next hop ", n.id)
                                          : absl::StrCat("next hop ", n.id, " via ", n.gateway.ToString());
                        },
                        [](const GroupOp& g) {
                          if (g.remove) return absl::StrCat("delete group ", g.id);
                          std::string s = absl::StrCat("group ", g.id, " =");
                          for (const auto& [id, w] : g.members) absl::StrAppend(&s, " ", id, "*", w);
                          return s;
                        },
                        [](const RouteOp& r) {
                          return r.remove ? absl::StrCat("delete route ", r.prefix.ToString())
                                          : absl::StrCat("route ", r.prefix.ToString(), " -> group ", r.group);
                        },
                    },
                    op);
}

uint64_t GenerationOf(const FibOp& op) {
  return std::visit([](const auto& o) { return o.generation; }, op);
}

namespace {
constexpr absl::string_view kInProgressUrl = "bagd.fib/in-progress";
}  // namespace

absl::Status InProgress() {
  absl::Status st(absl::StatusCode::kUnavailable, "sent; the answer comes later");
  st.SetPayload(kInProgressUrl, absl::Cord("1"));
  return st;
}

bool IsInProgress(const absl::Status& st) { return !st.ok() && st.GetPayload(kInProgressUrl).has_value(); }


absl::Status Reconciler::Start() {
  auto state = backend_.Dump();
  if (!state.ok()) return state.status();
  TakeConfirmed(*std::move(state));
  for (const auto& [id, gw] : confirmed_.nexthops) stale_nexthops_.insert(id);
  for (const auto& [id, members] : confirmed_.groups) stale_groups_.insert(id);
  confirmed_routes_.ForEach([&](const net::Prefix& prefix, ObjectId) { stale_routes_.TryEmplace(prefix); });
  return absl::OkStatus();
}

bool Reconciler::InUse(ObjectId id) const {
  return allocated_.contains(id) || confirmed_.nexthops.contains(id) || confirmed_.groups.contains(id) ||
         foreign_.contains(id);
}

ObjectId Reconciler::Allocate() {
  ObjectId id = std::max(next_id_, options_.id_base);
  while (InUse(id)) ++id;
  next_id_ = id + 1;
  allocated_.insert(id);
  return id;
}

ObjectId Reconciler::NexthopFor(const net::IpAddress& gateway) {
  auto it = nexthops_.find(gateway);
  if (it != nexthops_.end()) {
    ++it->second.refs;
    return it->second.id;
  }
  std::optional<ObjectId> id;
  // One of ours already in the backend (from a previous run, or waiting to be deleted)?
  for (const auto& [oid, gw] : confirmed_.nexthops) {
    if (gw == gateway && !allocated_.contains(oid)) {
      id = oid;
      if (stale_nexthops_.erase(oid)) ++stats_.adopted;
      delete_nexthops_.erase(oid);
      allocated_.insert(oid);
      break;
    }
  }
  if (!id) id = Allocate();
  nexthops_[gateway] = DesiredNexthop{*id, 1};
  dirty_nexthops_.insert(gateway);
  return *id;
}

void Reconciler::ReleaseNexthop(const net::IpAddress& gateway) {
  auto it = nexthops_.find(gateway);
  if (it == nexthops_.end() || --it->second.refs > 0) return;
  const ObjectId id = it->second.id;
  nexthops_.erase(it);
  dirty_nexthops_.erase(gateway);
  if (confirmed_.nexthops.contains(id)) {
    delete_nexthops_.insert(id);  // allocated_ keeps the id until it is gone
  } else {
    allocated_.erase(id);
  }
}

std::vector<std::pair<ObjectId, uint32_t>> Reconciler::KernelMembers(const DesiredGroup& g, bool confirmed_only) const {
  std::vector<std::pair<ObjectId, uint32_t>> out;
  for (const auto& m : g.members) {
    auto it = nexthops_.find(m.next_hop);
    if (it == nexthops_.end()) continue;
    if (confirmed_only && confirmed_.nexthops.find(it->second.id) == confirmed_.nexthops.end()) continue;
    out.emplace_back(it->second.id, m.weight);
  }
  std::sort(out.begin(), out.end());
  return out;
}

void Reconciler::Bind(rib::GroupId gid, DesiredGroup& g) {
  if (g.id != 0) return;
  if (auto id = ClaimGroup(g)) {
    g.id = *id;
  } else {
    g.id = Allocate();
  }
  group_object_[g.id] = gid;
}

std::optional<ObjectId> Reconciler::ClaimGroup(const DesiredGroup& g) {
  const auto want = KernelMembers(g, false);
  for (ObjectId id : stale_groups_) {
    auto have = confirmed_.groups.at(id);
    std::sort(have.begin(), have.end());
    if (have == want) {
      stale_groups_.erase(id);
      allocated_.insert(id);
      ++stats_.adopted;
      return id;
    }
  }
  return std::nullopt;
}

void Reconciler::Update(const rib::FibUpdate& u) {
  for (const rib::FibGroup& fg : u.group_upserts) {
    auto it = groups_.find(fg.id);
    if (it != groups_.end()) {
      DesiredGroup& g = it->second;
      for (const auto& m : fg.members) NexthopFor(m.next_hop);
      for (const auto& m : g.members) ReleaseNexthop(m.next_hop);
      g.members = fg.members;
    } else {
      // No object yet: it is bound when the group is first written (Bind), by the members
      // it has then. While the FIB stage holds flushes after a restart, a group changes
      // many times (peers return one by one); claiming an old object by the first,
      // partial set would keep the wrong one and leave the right one to the sweep.
      DesiredGroup g{0, fg.members};
      for (const auto& m : fg.members) NexthopFor(m.next_hop);
      groups_[fg.id] = std::move(g);
    }
    dirty_groups_.insert(fg.id);
  }
  for (const auto& [prefix, gid] : u.route_upserts) {
    *routes_.TryEmplace(prefix).first = gid;
    dirty_routes_.TryEmplace(prefix);
    stale_routes_.Erase(prefix);
  }
  for (const net::Prefix& prefix : u.route_deletes) {
    conflicts_.erase(prefix);
    conflict_retry_.erase(prefix);
    suspects_.erase(prefix);
    routes_.Erase(prefix);
    dirty_routes_.TryEmplace(prefix);
    stale_routes_.Erase(prefix);
  }
  for (const rib::GroupId gid : u.group_deletes) {
    auto it = groups_.find(gid);
    if (it == groups_.end()) continue;
    for (const auto& m : it->second.members) ReleaseNexthop(m.next_hop);
    const ObjectId id = it->second.id;
    groups_.erase(it);
    dirty_groups_.erase(gid);
    if (id == 0) continue;  // never written
    group_object_.erase(id);
    if (confirmed_.groups.contains(id)) {
      delete_groups_.insert(id);
    } else {
      allocated_.erase(id);
    }
  }
}

void Reconciler::SetConfirmedRoute(const net::Prefix& prefix, std::optional<ObjectId> group) {
  if (audit_cursor_ != nullptr) {
    audit_touched_.insert(prefix);
    if (audit_touched_.size() > kMaxAuditTouched) {
      // The table changes faster than the audit reads it (a session loss): give up this one.
      Report(absl::StrCat("audit given up: more than ", kMaxAuditTouched,
                          " routes changed while it ran; the next one compares again"));
      AbortAudit();
    }
  }
  if (ObjectId* it = confirmed_routes_.Find(prefix)) {
    if (--route_refs_[*it] == 0) route_refs_.erase(*it);
    if (!group) {
      confirmed_routes_.Erase(prefix);
      --confirmed_by_family_[prefix.afi() == net::Afi::kIpv6];
      return;
    }
    *it = *group;
  } else if (group) {
    *confirmed_routes_.TryEmplace(prefix).first = *group;
    ++confirmed_by_family_[prefix.afi() == net::Afi::kIpv6];
  }
  if (group) ++route_refs_[*group];
}

void Reconciler::TakeConfirmed(FibState state) {
  AbortAudit();  // an audit under way compares against what is replaced here
  gone_groups_.clear();
  confirmed_routes_.clear();
  confirmed_by_family_[0] = confirmed_by_family_[1] = 0;
  for (const auto& [prefix, id] : state.routes) {
    *confirmed_routes_.TryEmplace(prefix).first = id;
    ++confirmed_by_family_[prefix.afi() == net::Afi::kIpv6];
  }
  state.routes = {};  // kept once, ordered (~17 bytes a route; the dump's hash map ~52 MB a full table)
  confirmed_ = std::move(state);
  foreign_ = std::set<ObjectId>(confirmed_.foreign_ids.begin(), confirmed_.foreign_ids.end());
  route_refs_.clear();
  confirmed_routes_.ForEach([&](const net::Prefix&, ObjectId id) { ++route_refs_[id]; });
}

void Reconciler::Record(FlushResult& r, const FibOp& op, const absl::Status& st) {
  if (st.ok()) {
    ++r.applied;
    ++stats_.applied;
  } else {
    ++r.failed;
    ++stats_.failed;
    if (r.errors.size() < kMaxErrorsReported) r.errors.push_back(absl::StrCat(Describe(op), ": ", st.message()));
  }
  std::visit(net::Overloaded{[&](const NexthopOp&) { ++r.nexthop_ops; }, [&](const GroupOp&) { ++r.group_ops; },
                        [&](const RouteOp&) { ++r.route_ops; }},
             op);
}

std::vector<absl::Status> Reconciler::Apply(std::vector<FibOp>& ops, FlushResult& r) {
  if (ops.empty()) return {};
  for (FibOp& op : ops) {
    std::visit([&](auto& o) { o.generation = next_generation_++; }, op);
  }
  std::vector<absl::Status> st = backend_.Apply(ops);
  st.resize(ops.size(), absl::InternalError("the backend gave no status"));
  for (size_t i = 0; i < ops.size(); ++i) {
    if (IsInProgress(st[i])) {
      // The answer comes as a FibEvent::kCompleted: until then the object gets no other
      // operation, and only that answer settles it.
      const uint64_t gen = GenerationOf(ops[i]);
      std::visit(net::Overloaded{[&](const NexthopOp& o) { object_gen_[o.id] = gen; },
                                  [&](const GroupOp& o) { object_gen_[o.id] = gen; },
                                  [&](const RouteOp& o) { route_gen_[o.prefix] = gen; }},
                 ops[i]);
      in_flight_.emplace(gen, ops[i]);
      ++stats_.in_flight;
      continue;
    }
    Record(r, ops[i], st[i]);
  }
  return st;
}

void Reconciler::Settle(const FibOp& op) {
  std::visit(
      net::Overloaded{
          [&](const NexthopOp& n) {
            if (n.remove) {
              confirmed_.nexthops.erase(n.id);
              delete_nexthops_.erase(n.id);
              bool wanted = false;
              for (const auto& [gw, d] : nexthops_) wanted |= d.id == n.id;
              if (!wanted) allocated_.erase(n.id);
              return;
            }
            confirmed_.nexthops[n.id] = n.gateway;
            auto d = nexthops_.find(n.gateway);
            if (d != nexthops_.end() && d->second.id == n.id) {
              dirty_nexthops_.erase(n.gateway);
              rewrite_nexthops_.erase(n.gateway);
            }
            // Groups that wanted this next hop can now have it.
            for (const auto& [gid, g] : groups_) {
              for (const auto& m : g.members) {
                if (m.next_hop == n.gateway) dirty_groups_.insert(gid);
              }
            }
          },
          [&](const GroupOp& g) {
            if (g.remove) {
              ConfirmGroupDeleted(g.id);
              return;
            }
            confirmed_.groups[g.id] = g.members;
            auto want = WantedMembers(g.id);
            auto have = g.members;
            std::sort(have.begin(), have.end());
            if (want && *want == have) dirty_groups_.erase(group_object_.at(g.id));
          },
          [&](const RouteOp& rt) {
            SetConfirmedRoute(rt.prefix, rt.remove ? std::nullopt : std::optional<ObjectId>(rt.group));
            const auto want = WantedRouteObject(rt.prefix);
            if (rt.remove ? !routes_.contains(rt.prefix) : (want && *want == rt.group)) dirty_routes_.Erase(rt.prefix);
          },
      },
      op);
}

void Reconciler::OnCompleted(const FibEvent& e) {
  auto it = in_flight_.find(e.generation);
  if (it == in_flight_.end()) {
    ++stats_.stale_answers;  // an answer to nothing we wait for (a resync came between)
    return;
  }
  const FibOp op = std::move(it->second);
  in_flight_.erase(it);
  // Only the object's latest operation settles it.
  bool latest = false;
  std::visit(net::Overloaded{[&](const RouteOp& o) {
                                auto g = route_gen_.find(o.prefix);
                                latest = g != route_gen_.end() && g->second == e.generation;
                                if (latest) route_gen_.erase(g);
                              },
                              [&](const auto& o) {
                                auto g = object_gen_.find(o.id);
                                latest = g != object_gen_.end() && g->second == e.generation;
                                if (latest) object_gen_.erase(g);
                              }},
             op);
  if (!latest) {
    ++stats_.stale_answers;
    return;
  }
  FlushResult ignored;
  Record(ignored, op, e.status);
  if (e.status.ok()) {
    Settle(op);
  } else if (ignored.errors.size() > 0) {
    Report(ignored.errors.front());
  }
}

std::optional<std::vector<std::pair<ObjectId, uint32_t>>> Reconciler::WantedMembers(ObjectId object) const {
  auto o = group_object_.find(object);
  if (o == group_object_.end()) return std::nullopt;
  auto g = groups_.find(o->second);
  if (g == groups_.end()) return std::nullopt;
  return KernelMembers(g->second, false);
}

std::optional<ObjectId> Reconciler::WantedRouteObject(const net::Prefix& prefix) const {
  const rib::GroupId* want = routes_.Find(prefix);
  if (want == nullptr) return std::nullopt;
  auto g = groups_.find(*want);
  if (g == groups_.end() || g->second.id == 0) return std::nullopt;
  return g->second.id;
}

void Reconciler::TakeGoneGroups() {
  if (gone_groups_.empty()) return;
  std::vector<net::Prefix> gone;
  confirmed_routes_.ForEach([&](const net::Prefix& p, ObjectId id) {
    if (gone_groups_.contains(id)) gone.push_back(p);
  });
  gone_groups_.clear();
  for (const net::Prefix& p : gone) {
    SetConfirmedRoute(p, std::nullopt);
    if (routes_.contains(p)) dirty_routes_.TryEmplace(p);
  }
}

FlushResult Reconciler::Flush() {
  TakeGoneGroups();
  FlushResult r;
  const std::set<rib::GroupId> refused_before = refused_;
  // 1. Next hops.
  {
    std::vector<FibOp> ops;
    std::vector<net::IpAddress> gws;
    for (auto it = dirty_nexthops_.begin(); it != dirty_nexthops_.end();) {
      auto d = nexthops_.find(*it);
      auto c = d == nexthops_.end() ? confirmed_.nexthops.end() : confirmed_.nexthops.find(d->second.id);
      if (d == nexthops_.end() ||
          (c != confirmed_.nexthops.end() && c->second == *it && !rewrite_nexthops_.contains(*it))) {
        it = dirty_nexthops_.erase(it);
        continue;
      }
      if (Busy(d->second.id)) {  // its answer is still to come
        ++it;
        continue;
      }
      ops.push_back(NexthopOp{d->second.id, *it, false});
      gws.push_back(*it);
      ++it;
    }
    const auto st = Apply(ops, r);
    for (size_t i = 0; i < st.size(); ++i) {
      if (st[i].ok()) Settle(ops[i]);
    }
  }
  // 2-5. Groups, routes, unused groups. Under the cap, a flush whose deletes freed slots
  // for groups it had to refuse, or whose route moves left a group's routes all wanting a
  // refused one, goes round again (a few times at most).
  FlushGroups(r);
  size_t progress = FlushRoutes(r);
  progress += DeleteUnusedGroups(r);
  for (int round = 0; round < 8 && !refused_.empty() && progress > 0; ++round) {
    FlushGroups(r);
    progress = FlushRoutes(r);
    progress += DeleteUnusedGroups(r);
  }
  r.groups_refused = refused_.size();
  for (const rib::GroupId gid : refused_) {
    if (refused_before.contains(gid)) continue;  // said already; still waiting
    ++stats_.groups_refused;
    if (r.errors.size() < kMaxErrorsReported) {
      r.errors.push_back(absl::StrCat("next-hop group ", gid, " not created: the FIB holds ", confirmed_.groups.size(),
                                      " groups and its limit is ", options_.max_groups,
                                      " (fib.max_groups or the backend's); its routes stay on the group they have "
                                      "(new ones wait uninstalled) and it is created as soon as a group is deleted"));
    }
  }
  // 6. Next hops no group uses any more.
  {
    std::set<ObjectId> used;
    for (const auto& [id, members] : confirmed_.groups) {
      for (const auto& [nh, w] : members) used.insert(nh);
    }
    std::vector<FibOp> ops;
    for (auto it = delete_nexthops_.begin(); it != delete_nexthops_.end();) {
      if (!confirmed_.nexthops.contains(*it)) {
        allocated_.erase(*it);
        it = delete_nexthops_.erase(it);
        continue;
      }
      if (!used.contains(*it) && !Busy(*it)) ops.push_back(NexthopOp{*it, {}, true});
      ++it;
    }
    const auto st = Apply(ops, r);
    for (size_t i = 0; i < st.size(); ++i) {
      if (st[i].ok()) Settle(ops[i]);
    }
  }
  return r;
}

void Reconciler::FlushGroups(FlushResult& r) {
  // Groups, with the members whose next hops exist (a group missing one stays dirty).
  struct Pending {
    rib::GroupId gid;
    GroupOp op;
    bool complete;
  };
  std::vector<Pending> writes, creates;  // in place (no slot needed) / new objects
  for (auto it = dirty_groups_.begin(); it != dirty_groups_.end();) {
    auto d = groups_.find(*it);
    if (d == groups_.end()) {
      it = dirty_groups_.erase(it);
      continue;
    }
    Bind(*it, d->second);
    if (Busy(d->second.id)) {  // its answer is still to come
      ++it;
      continue;
    }
    auto members = KernelMembers(d->second, true);
    const bool complete = members.size() == d->second.members.size();
    auto c = confirmed_.groups.find(d->second.id);
    std::vector<std::pair<ObjectId, uint32_t>> have;
    if (c != confirmed_.groups.end()) {
      have = c->second;
      std::sort(have.begin(), have.end());
    }
    if (members.empty() || (c != confirmed_.groups.end() && have == members)) {
      if (complete && !members.empty()) {
        it = dirty_groups_.erase(it);
      } else {
        ++it;
      }
      continue;
    }
    Pending p{*it, GroupOp{d->second.id, std::move(members), false}, complete};
    (c != confirmed_.groups.end() ? writes : creates).push_back(std::move(p));
    ++it;
  }
  refused_.clear();
  if (options_.max_groups != 0) {
    auto room = [&]() -> size_t {
      return confirmed_.groups.size() >= options_.max_groups ? 0 : options_.max_groups - confirmed_.groups.size();
    };
    if (creates.size() > room()) FreeUnused(creates.size() - room(), r);
    size_t admitted = 0;
    std::vector<Pending> fit;
    TakeOver index;
    for (Pending& p : creates) {
      if (admitted < room()) {
        ++admitted;
        fit.push_back(std::move(p));
      } else if (auto id = Rebind(p.gid, groups_.at(p.gid), index)) {
        // In place into the object its routes are on: no slot.
        p.op.id = *id;
        ++r.groups_rebound;
        ++stats_.groups_rebound;
        writes.push_back(std::move(p));
      } else {
        refused_.insert(p.gid);
      }
    }
    creates = std::move(fit);
  }
  std::vector<FibOp> ops;
  std::vector<std::pair<rib::GroupId, bool>> meta;  // group, complete
  for (auto* list : {&writes, &creates}) {
    for (Pending& p : *list) {
      ops.push_back(std::move(p.op));
      meta.emplace_back(p.gid, p.complete);
    }
  }
  const auto st = Apply(ops, r);
  for (size_t i = 0; i < st.size(); ++i) {
    if (!st[i].ok()) continue;
    const GroupOp& op = std::get<GroupOp>(ops[i]);
    confirmed_.groups[op.id] = op.members;
    if (meta[i].second) dirty_groups_.erase(meta[i].first);
  }
}

size_t Reconciler::FreeUnused(size_t need, FlushResult& r) {
  // Safe for traffic: no confirmed route uses them. Groups bagd deleted first, then a
  // previous run's that nothing claimed (the sweep would delete them anyway; one claimed
  // later costs a create instead).
  std::vector<FibOp> ops;
  for (const std::set<ObjectId>* from : {&delete_groups_, &stale_groups_}) {
    for (const ObjectId id : *from) {
      if (ops.size() == need) break;
      if (confirmed_.groups.contains(id) && !route_refs_.contains(id) && !Busy(id)) ops.push_back(GroupOp{id, {}, true});
    }
  }
  const auto st = Apply(ops, r);
  size_t freed = 0;
  for (size_t i = 0; i < st.size(); ++i) {
    if (!st[i].ok()) continue;
    const ObjectId id = std::get<GroupOp>(ops[i]).id;
    if (stale_groups_.erase(id) > 0) ++stats_.swept;
    ConfirmGroupDeleted(id);
    ++freed;
  }
  return freed;
}

std::optional<ObjectId> Reconciler::Rebind(rib::GroupId want, DesiredGroup& g, TakeOver& index) {
  // An object nobody wants any more (being deleted, or a previous run's), every one of
  // whose confirmed routes wants `want`: replacing it in place moves them all at once.
  if (!index.built) {
    index.built = true;
    struct On {
      rib::GroupId want = 0;
      size_t routes = 0;
      bool mixed = false;
    };
    absl::flat_hash_map<ObjectId, On> on;
    for (const std::set<ObjectId>* from : {&delete_groups_, &stale_groups_}) {
      for (const ObjectId id : *from) {
        if (confirmed_.groups.contains(id) && route_refs_.contains(id)) on.try_emplace(id);
      }
    }
    if (!on.empty()) {
      confirmed_routes_.ForEach([&](const net::Prefix& prefix, ObjectId id) {
        auto o = on.find(id);
        if (o == on.end()) return;
        const rib::GroupId* w = routes_.Find(prefix);
        const rib::GroupId gid = w == nullptr ? 0 : *w;
        if (o->second.routes++ == 0) {
          o->second.want = gid;
        } else if (o->second.want != gid) {
          o->second.mixed = true;
        }
      });
    }
    for (const auto& [id, o] : on) {
      if (!o.mixed && o.want != 0 && o.routes == route_refs_.at(id)) {
        auto [it, fresh] = index.object_of.try_emplace(o.want, id);
        if (!fresh) it->second = std::min(it->second, id);  // deterministic
      }
    }
  }
  auto it = index.object_of.find(want);
  if (it == index.object_of.end()) return std::nullopt;
  const ObjectId id = it->second;
  index.object_of.erase(it);
  // `g`'s own id was never written (it is a create): give it back.
  if (g.id != 0 && !confirmed_.groups.contains(g.id)) {
    group_object_.erase(g.id);
    allocated_.erase(g.id);
  }
  g.id = id;
  group_object_[id] = want;
  allocated_.insert(id);
  delete_groups_.erase(id);
  stale_groups_.erase(id);
  return id;
}

void Reconciler::ConfirmGroupDeleted(ObjectId id) {
  confirmed_.groups.erase(id);
  delete_groups_.erase(id);
  allocated_.erase(id);
}

size_t Reconciler::FlushRoutes(FlushResult& r) {
  // Routes: add or repoint to a confirmed group; delete what is not wanted. Every upsert of
  // the flush goes before its first delete (make-before-break), and both go to the backend in
  // chunks of options_.route_chunk operations: a table-wide change (a full table's session
  // loss) holds one chunk of operations and statuses at a time, not one per route.
  // The dirty routes are walked in table order, a chunk at a time: each walk stops when its
  // chunk is full, the chunk is applied (which erases what succeeded), and the next walk goes
  // on after the last prefix the previous one saw.
  waiting_routes_ = 0;
  const size_t chunk = std::max<size_t>(1, options_.route_chunk);
  std::vector<FibOp> ops;
  ops.reserve(std::min(chunk, dirty_routes_.size()));
  std::vector<net::Prefix> settled;  // dirty routes with nothing to do, erased after each walk
  size_t done = 0;
  auto apply = [&] {
    const auto st = Apply(ops, r);
    for (size_t i = 0; i < st.size(); ++i) {
      const RouteOp& op = std::get<RouteOp>(ops[i]);
      if (op.exclusive && absl::IsAlreadyExists(st[i])) {
        dirty_routes_.Erase(op.prefix);
        if (conflict_retry_.erase(op.prefix) > 0) continue;  // the other protocol's route is still there
        // A route bagd does not know as its own is there: ours (a notification read late, a
        // missed one) or another protocol's. An audit says which (audit_wanted()); until then
        // it is not tried again.
        suspects_.insert(op.prefix);
        continue;
      }
      if (!st[i].ok()) continue;
      if (!op.remove && conflicts_.erase(op.prefix) > 0) {
        conflict_retry_.erase(op.prefix);
        Report(absl::StrCat("route ", op.prefix.ToString(), ": no other protocol's route holds it any more; installed"));
      }
      SetConfirmedRoute(op.prefix, op.remove ? std::nullopt : std::optional<ObjectId>(op.group));
      dirty_routes_.Erase(op.prefix);
      ++done;
    }
    ops.clear();
  };
  // Walks the dirty routes; `visit(prefix)` adds to ops or settled. A walk stops when either
  // is full: the settled ones are erased, and a full chunk of ops (or the last) is applied.
  auto walk = [&](auto&& visit) {
    std::optional<net::Prefix> after;
    for (bool more = true; more;) {
      more = false;
      dirty_routes_.ForEachAfter(after, [&](const net::Prefix& prefix, bool) {
        after = prefix;
        visit(prefix);
        if (ops.size() < chunk && settled.size() < chunk) return true;
        more = true;
        return false;
      });
      for (const net::Prefix& p : settled) dirty_routes_.Erase(p);
      settled.clear();
      if (!more || ops.size() >= chunk) apply();
    }
  };
  // Routes to delete (in the second walk), counted here by the group they sit on.
  absl::flat_hash_map<ObjectId, size_t> deletes_of;
  walk([&](const net::Prefix& prefix) {
    if (Busy(prefix)) return;  // its answer is still to come
    const ObjectId* current = confirmed_routes_.Find(prefix);
    const rib::GroupId* want = routes_.Find(prefix);
    if (want == nullptr) {
      if (current == nullptr || stale_routes_.contains(prefix)) {
        settled.push_back(prefix);  // nothing to delete (or the sweep's to decide)
        return;
      }
      ++deletes_of[*current];
      return;
    }
    auto g = groups_.find(*want);
    if (g == groups_.end() || !confirmed_.groups.contains(g->second.id)) {  // group not installed yet
      if (refused_.contains(*want)) ++waiting_routes_;
      return;
    }
    if (current != nullptr && *current == g->second.id) {
      settled.push_back(prefix);
      return;
    }
    if (current == nullptr &&
        (suspects_.contains(prefix) || (conflicts_.contains(prefix) && !conflict_retry_.contains(prefix)))) {
      settled.push_back(prefix);  // another protocol's route holds it: left alone (Audit tries again)
      return;
    }
    // Replace only what is ours; anything else is created exclusively.
    ops.push_back(RouteOp{prefix, g->second.id, false, current == nullptr});
  });
  if (deletes_of.empty()) return done;
  // Groups that go with every route on them (a full table's session loss): one group delete
  // removes them all where the backend can.
  const absl::flat_hash_set<ObjectId> with_group = GroupsGoingWithTheirRoutes(deletes_of);
  walk([&](const net::Prefix& prefix) {
    if (routes_.contains(prefix) || stale_routes_.contains(prefix) || Busy(prefix)) return;
    if (const ObjectId* current = confirmed_routes_.Find(prefix)) {
      if (!with_group.contains(*current)) ops.push_back(RouteOp{prefix, *current, true});
    }
  });
  if (with_group.empty()) return done;
  std::vector<FibOp> group_ops;
  for (const ObjectId id : with_group) group_ops.push_back(GroupOp{id, {}, true});
  const auto st = Apply(group_ops, r);
  absl::flat_hash_set<ObjectId> gone;
  for (size_t i = 0; i < st.size(); ++i) {
    if (!st[i].ok()) continue;  // its routes stay dirty: the next flush tries again
    const ObjectId id = std::get<GroupOp>(group_ops[i]).id;
    gone.insert(id);
    ConfirmGroupDeleted(id);
  }
  if (gone.empty()) return done;
  // (The predicate changes the confirmed routes, never the dirty set it walks.)
  dirty_routes_.EraseIf([&](const net::Prefix& prefix, bool) {
    const ObjectId* current = confirmed_routes_.Find(prefix);
    if (current == nullptr || !gone.contains(*current) || routes_.contains(prefix)) {
      return false;
    }
    SetConfirmedRoute(prefix, std::nullopt);
    ++r.routes_removed_with_group;
    ++stats_.routes_removed_with_group;
    ++done;
    return true;
  });
  return done;
}

absl::flat_hash_set<ObjectId> Reconciler::GroupsGoingWithTheirRoutes(
    const absl::flat_hash_map<ObjectId, size_t>& deletes_of) const {
  absl::flat_hash_set<ObjectId> out;
  if (!backend_.Capabilities().group_delete_removes_routes) return out;
  for (const auto& [id, n] : deletes_of) {
    // Every confirmed route on it goes (none stays, none is a previous run's), the group
    // itself is to be deleted, and there are enough of them to pay for the kernel's walk.
    auto refs = route_refs_.find(id);
    if (refs == route_refs_.end() || refs->second != n || !delete_groups_.contains(id)) continue;
    if (n >= kWithGroupMin && n * kWithGroupShare >= confirmed_routes_.size()) out.insert(id);
  }
  return out;
}

size_t Reconciler::DeleteUnusedGroups(FlushResult& r) {
  // Groups no confirmed route uses any more.
  std::vector<FibOp> ops;
  for (auto it = delete_groups_.begin(); it != delete_groups_.end();) {
    if (!confirmed_.groups.contains(*it)) {
      allocated_.erase(*it);
      it = delete_groups_.erase(it);
      continue;
    }
    if (!route_refs_.contains(*it) && !Busy(*it)) ops.push_back(GroupOp{*it, {}, true});
    ++it;
  }
  const auto st = Apply(ops, r);
  size_t freed = 0;
  for (size_t i = 0; i < st.size(); ++i) {
    if (!st[i].ok()) continue;
    ConfirmGroupDeleted(std::get<GroupOp>(ops[i]).id);
    ++freed;
  }
  return freed;
}

void Reconciler::Sweep() {
  stale_routes_.ForEach([&](const net::Prefix& p, bool) {
    if (!routes_.contains(p)) dirty_routes_.TryEmplace(p);
  });
  stats_.swept += stale_routes_.size() + stale_groups_.size() + stale_nexthops_.size();
  stale_routes_.clear();
  for (ObjectId id : stale_groups_) {
    delete_groups_.insert(id);
    allocated_.insert(id);
  }
  stale_groups_.clear();
  for (ObjectId id : stale_nexthops_) {
    delete_nexthops_.insert(id);
    allocated_.insert(id);
  }
  stale_nexthops_.clear();
}

void Reconciler::ForgetInFlight() {
  // A dump is the truth now: answers still to come are for operations of before it.
  in_flight_.clear();
  object_gen_.clear();
  route_gen_.clear();
}

absl::Status Reconciler::Resync() {
  auto state = backend_.Dump();
  if (!state.ok()) return state.status();
  ++stats_.resyncs;
  resync_wanted_ = false;
  ForgetInFlight();
  TakeConfirmed(*std::move(state));
  SettleSuspects();
  // Everything desired is looked at again; Flush() acts only where the backend differs.
  for (const auto& [gw, d] : nexthops_) dirty_nexthops_.insert(gw);
  for (const auto& [gid, g] : groups_) dirty_groups_.insert(gid);
  routes_.ForEach([&](const net::Prefix& prefix, rib::GroupId) { dirty_routes_.TryEmplace(prefix); });
  MarkUnwanted();
  return absl::OkStatus();
}

void Reconciler::MarkUnwanted() {
  // What we own and no longer want goes (unless it waits for the sweep).
  confirmed_routes_.ForEach([&](const net::Prefix& prefix, ObjectId) {
    if (!routes_.contains(prefix) && !stale_routes_.contains(prefix)) dirty_routes_.TryEmplace(prefix);
  });
  for (const auto& [id, members] : confirmed_.groups) {
    if (!group_object_.contains(id) && !stale_groups_.contains(id)) delete_groups_.insert(id);
  }
  std::set<ObjectId> wanted_nexthops;
  for (const auto& [gw, d] : nexthops_) wanted_nexthops.insert(d.id);
  for (const auto& [id, gw] : confirmed_.nexthops) {
    if (!wanted_nexthops.contains(id) && !stale_nexthops_.contains(id)) delete_nexthops_.insert(id);
  }
}

bool Reconciler::dirty() const {
  return !dirty_nexthops_.empty() || !dirty_groups_.empty() || !dirty_routes_.empty() || !delete_groups_.empty() ||
         !delete_nexthops_.empty();
}

size_t Reconciler::pending() const {
  return dirty_nexthops_.size() + dirty_groups_.size() + dirty_routes_.size() + delete_groups_.size() +
         delete_nexthops_.size();
}

std::optional<ObjectId> Reconciler::GroupObject(rib::GroupId group) const {
  auto it = groups_.find(group);
  if (it == groups_.end() || !confirmed_.groups.contains(it->second.id)) return std::nullopt;
  return it->second.id;
}

}  // namespace bagd::fib
