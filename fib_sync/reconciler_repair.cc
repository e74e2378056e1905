// The reconciler's second job (docs/fib.md, "Repair and audit"): what others change under
// bagd. Notifications of other processes' changes (OnEvent) and a piecewise audit of the
// backend's dump (AuditBegin/AuditStep/FinishAudit) find bagd's objects deleted or changed,
// and other protocols' routes in the way; repairs are charged against a backoff (Charge,
// RequestRepair, ReleaseHeld) and conflicts left alone. reconciler.cc keeps the first job:
// desired state to the backend, make-before-break.
#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"
#include "fib_sync/reconciler.h"
#include "net/overloaded.h"

namespace bagd::fib {

namespace {

// Objects whose repairs are remembered for the backoff: a mass deletion (a table flushed by
// someone) is repaired at once without filling memory with a history per route.
constexpr size_t kMaxRepairHistory = 1 << 16;

}  // namespace

namespace {

class WholeDump final : public DumpCursor {
 public:
  explicit WholeDump(FibBackend& b) : b_(b) {}
  absl::StatusOr<bool> Next(size_t, FibState& out) override {
    auto st = b_.Dump();
    if (!st.ok()) return st.status();
    out = *std::move(st);
    return true;
  }

 private:
  FibBackend& b_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<DumpCursor>> FibBackend::StartDump() {
  return std::unique_ptr<DumpCursor>(new WholeDump(*this));
}

const char* RepairObjectName(RepairObject o) {
  switch (o) {
    case RepairObject::kRoute: return "route";
    case RepairObject::kGroup: return "group";
    case RepairObject::kNexthop: return "nexthop";
  }
  return "?";
}

const char* RepairCauseName(RepairCause c) {
  switch (c) {
    case RepairCause::kDeleted: return "deleted";
    case RepairCause::kChanged: return "changed";
    case RepairCause::kAudit: return "audit";
  }
  return "?";
}

void Reconciler::NoteConflict(const net::Prefix& p, const char* what) {
  if (!conflicts_.insert(p).second) return;
  ++stats_.conflicts_total;
  Report(absl::StrCat("route ", p.ToString(), ": a route of another protocol ", what,
                      "; bagd leaves it alone (a conflict), tries again at each audit and when that route goes"));
}

void Reconciler::SettleSuspects() {
  // An exclusive create found a route: bagd's own (the dump has it) or another protocol's.
  for (const net::Prefix& p : suspects_) {
    if (!confirmed_routes_.contains(p)) NoteConflict(p, "is there");
  }
  suspects_.clear();
}

absl::StatusOr<size_t> Reconciler::Audit(TimePoint now) {
  if (auto st = AuditBegin(now); !st.ok()) return st;
  while (true) {
    auto done = AuditStep(std::numeric_limits<size_t>::max(), now);
    if (!done.ok()) return done.status();
    if (*done) return audit_found_;
  }
}

absl::Status Reconciler::AuditBegin(TimePoint now) {
  auto cursor = backend_.StartDump();
  if (!cursor.ok()) return cursor.status();
  audit_cursor_ = *std::move(cursor);
  audit_objects_done_ = false;
  audit_found_ = 0;
  audit_matched_by_[0] = audit_matched_by_[1] = 0;
  audit_touched_.clear();
  audit_unknown_groups_.clear();
  audit_chunk_ = FibState{};
  audit_suspects_ = suspects_;
  (void)now;
  return absl::OkStatus();
}

void Reconciler::AbortAudit() {
  audit_cursor_.reset();
  audit_touched_.clear();
  audit_suspects_.clear();
  for (const ObjectId id : audit_unknown_groups_) {  // not known to be unused: left to the next one
    if (confirmed_.groups.contains(id) && !group_object_.contains(id) && !delete_groups_.contains(id)) {
      confirmed_.groups.erase(id);
      allocated_.erase(id);
    }
  }
  audit_unknown_groups_.clear();
  // (audit_chunk_ is left as it is: AuditStep may be walking it; the next step clears it.)
}

absl::StatusOr<bool> Reconciler::AuditStep(size_t max_routes, TimePoint now) {
  if (audit_cursor_ == nullptr) return absl::FailedPreconditionError("no audit running");
  audit_chunk_.routes.clear();
  auto done = audit_cursor_->Next(max_routes, audit_chunk_);
  if (!done.ok()) {
    AbortAudit();
    return done.status();
  }
  if (!audit_objects_done_) {
    audit_objects_done_ = true;
    AuditObjects(audit_chunk_, now);
  }
  for (const auto& [prefix, object] : audit_chunk_.routes) {
    if (audit_cursor_ == nullptr) return true;  // given up (too many changes meanwhile)
    AuditRoute(prefix, object, now);
  }
  if (audit_cursor_ == nullptr) return true;
  if (!*done) return false;
  FinishAudit();
  return true;
}

void Reconciler::AuditObjects(const FibState& d, TimePoint now) {
  ++stats_.audits;
  for (ObjectId id : d.foreign_ids) foreign_.insert(id);
  // Next hops and groups bagd believes installed, wants, and has no answer pending for.
  for (const auto& [gw, n] : nexthops_) {
    auto c = confirmed_.nexthops.find(n.id);
    if (c == confirmed_.nexthops.end() || Busy(n.id)) continue;
    auto k = d.nexthops.find(n.id);
    if (k != d.nexthops.end() && k->second == gw) continue;
    ++audit_found_;
    const bool gone = k == d.nexthops.end();
    const std::string what = absl::StrCat("next hop ", n.id, " via ", gw.ToString(),
                                          gone ? " is missing" : absl::StrCat(" is via ", k->second.ToString()));
    if (gone) {
      confirmed_.nexthops.erase(c);
    } else {
      c->second = k->second;
    }
    RequestRepair(RepairKey{RepairObject::kNexthop, n.id, {}}, RepairCause::kAudit, now, what);
  }
  for (const auto& [gid, g] : groups_) {
    if (g.id == 0 || !confirmed_.groups.contains(g.id) || Busy(g.id)) continue;
    auto believed = confirmed_.groups.at(g.id);
    std::sort(believed.begin(), believed.end());
    auto k = d.groups.find(g.id);
    std::vector<std::pair<ObjectId, uint32_t>> have;
    if (k != d.groups.end()) {
      have = k->second;
      std::sort(have.begin(), have.end());
    }
    if (k != d.groups.end() && have == believed) continue;
    ++audit_found_;
    std::string what = absl::StrCat("group ", g.id);
    if (k == d.groups.end()) {
      absl::StrAppend(&what, " is missing");
      confirmed_.groups.erase(g.id);  // its id stays bagd's (allocated): written again
    } else {
      absl::StrAppend(&what, " is");
      for (const auto& [nh, w] : have) absl::StrAppend(&what, " ", nh, "*", w);
      absl::StrAppend(&what, " (bagd wrote");
      for (const auto& [nh, w] : believed) absl::StrAppend(&what, " ", nh, "*", w);
      absl::StrAppend(&what, ")");
      confirmed_.groups[g.id] = k->second;
    }
    RequestRepair(RepairKey{RepairObject::kGroup, g.id, {}}, RepairCause::kAudit, now, what);
  }
  // Objects of bagd's protocol that bagd does not know: not wanted (the sweep's, or to delete
  // once the audit has seen which routes use them: FinishAudit).
  for (const auto& [id, members] : d.groups) {
    if (confirmed_.groups.contains(id) || allocated_.contains(id) || stale_groups_.contains(id)) continue;
    confirmed_.groups[id] = members;
    allocated_.insert(id);
    audit_unknown_groups_.push_back(id);
  }
  for (const auto& [id, gw] : d.nexthops) {
    if (confirmed_.nexthops.contains(id) || allocated_.contains(id) || stale_nexthops_.contains(id)) continue;
    confirmed_.nexthops[id] = gw;
    delete_nexthops_.insert(id);
    allocated_.insert(id);
  }
}

void Reconciler::AuditRoute(const net::Prefix& prefix, ObjectId object, TimePoint now) {
  if (audit_touched_.contains(prefix) || Busy(prefix)) return;  // changed since the audit began
  const ObjectId* believed = confirmed_routes_.Find(prefix);
  if (believed != nullptr && *believed == object) {
    ++audit_matched_by_[prefix.afi() == net::Afi::kIpv6];
    return;
  }
  const std::optional<ObjectId> before = believed ? std::optional<ObjectId>(*believed) : std::nullopt;
  SetConfirmedRoute(prefix, object);  // what is there now
  const auto want = WantedRouteObject(prefix);
  if (!before) {
    // A route of bagd's protocol bagd did not know of: its own (a missed notification, an
    // exclusive create that met it) or someone else's with bagd's protocol number.
    if (conflicts_.erase(prefix) > 0) conflict_retry_.erase(prefix);
    suspects_.erase(prefix);
    if (want && *want == object) return;  // just what bagd wants
    ++audit_found_;
    if (!routes_.contains(prefix) && stale_routes_.contains(prefix)) return;  // the sweep's
  } else {
    ++audit_found_;
  }
  if (routes_.contains(prefix)) {
    RequestRepair(RepairKey{RepairObject::kRoute, 0, prefix}, RepairCause::kAudit, now,
                  absl::StrCat("route ", prefix.ToString(), " points at ", object,
                               before ? absl::StrCat(" (bagd wrote ", *before, ")") : std::string(" (unknown to bagd)")));
  } else {
    dirty_routes_.TryEmplace(prefix);  // bagd's protocol, not wanted: deleted
  }
}

void Reconciler::FinishAudit() {
  for (const ObjectId id : audit_unknown_groups_) {
    if (confirmed_.groups.contains(id) && !group_object_.contains(id)) delete_groups_.insert(id);
  }
  audit_unknown_groups_.clear();
  // Suspects from before the audit that it did not find as bagd's: another protocol's routes.
  for (const net::Prefix& p : audit_suspects_) {
    if (suspects_.erase(p) > 0 && !confirmed_routes_.contains(p)) NoteConflict(p, "is there");
  }
  audit_suspects_.clear();
  // Routes bagd installed, left untouched by the audit and not in the dump: missing. They are
  // counted, not listed (listing them needs the whole dump at once): a resync finds them. The
  // kernel resumes an IPv6 dump by counting nodes from the root when its table changed between
  // two pieces (fib6_dump_table), so a bagd write to an IPv6 route during the audit may make
  // it skip or repeat others: IPv6 is then not counted this time.
  size_t excluded[2] = {0, 0};
  bool v6_changed = false;
  for (const net::Prefix& p : audit_touched_) {
    const int f = p.afi() == net::Afi::kIpv6;
    v6_changed |= f == 1;
    excluded[f] += confirmed_routes_.contains(p);
  }
  for (const auto& [p, gen] : route_gen_) {
    excluded[p.afi() == net::Afi::kIpv6] += confirmed_routes_.contains(p) && !audit_touched_.contains(p);
  }
  size_t missing = 0;
  for (int f = 0; f < 2; ++f) {
    if (f == 1 && v6_changed) continue;
    const size_t expected = confirmed_by_family_[f] - excluded[f];
    if (audit_matched_by_[f] < expected) missing += expected - audit_matched_by_[f];
  }
  if (missing > 0) {
    audit_found_ += missing;
    stats_.repairs[static_cast<int>(RepairObject::kRoute)][static_cast<int>(RepairCause::kAudit)] += missing;
    Report(absl::StrCat(missing, " routes bagd installed are missing (audit): resyncing to put them back"));
    resync_wanted_ = true;
  }
  // Conflicts are tried again, once each (exclusively): the other protocol's route may have
  // gone without a word. Those the dump showed as bagd's are no conflicts any more.
  for (const net::Prefix& p : conflicts_) {
    if (routes_.contains(p)) {
      dirty_routes_.TryEmplace(p);
      conflict_retry_.insert(p);
    }
  }
  AbortAudit();
}

std::string Reconciler::Charge(const RepairKey& key, RepairCause cause, TimePoint now) {
  RepairHistory& h = repair_history_[key];
  ++h.count;
  h.last = now;
  ++stats_.repairs[static_cast<int>(key.object)][static_cast<int>(cause)];
  if (h.count < options_.free_repairs) return "";
  // Someone keeps changing it: the next repair waits, longer each time.
  const uint32_t shift = std::min<uint32_t>(h.count - options_.free_repairs, 20);
  const auto wait =
      std::min<std::chrono::milliseconds>(options_.repair_backoff_first * (1u << shift), options_.repair_backoff_max);
  h.hold_until = now + wait;
  return absl::StrCat("; repaired ", h.count, " times in a row: the next repair of it waits ", wait.count(), " ms");
}

bool Reconciler::RequestRepair(const RepairKey& key, RepairCause cause, TimePoint now, const std::string& what) {
  if (repair_history_.size() >= kMaxRepairHistory && !repair_history_.contains(key)) {
    ++stats_.repairs[static_cast<int>(key.object)][static_cast<int>(cause)];
    Report(absl::StrCat(what, " (", RepairCauseName(cause), "): put back"));
    MakeDirty(key);
    return true;
  }
  RepairHistory& h = repair_history_[key];
  if (h.count > 0 && now - h.last > options_.repair_window && now >= h.hold_until) h = RepairHistory{};
  if (now < h.hold_until) {
    if (held_.emplace(key, cause).second) ++stats_.repairs_held;
    return false;
  }
  Report(absl::StrCat(what, " (", RepairCauseName(cause), "): put back", Charge(key, cause, now)));
  MakeDirty(key);
  return true;
}

void Reconciler::MakeDirty(const RepairKey& key) {
  switch (key.object) {
    case RepairObject::kRoute:
      if (routes_.contains(key.prefix) || confirmed_routes_.contains(key.prefix)) dirty_routes_.TryEmplace(key.prefix);
      break;
    case RepairObject::kGroup:
      if (auto o = group_object_.find(key.id); o != group_object_.end()) dirty_groups_.insert(o->second);
      break;
    case RepairObject::kNexthop:
      for (const auto& [gw, d] : nexthops_) {
        if (d.id == key.id) {
          dirty_nexthops_.insert(gw);
          rewrite_nexthops_.insert(gw);
        }
      }
      break;
  }
}

std::optional<TimePoint> Reconciler::ReleaseHeld(TimePoint now) {
  std::optional<TimePoint> next;
  std::vector<std::pair<RepairKey, RepairCause>> due;
  for (const auto& [key, cause] : held_) {
    const TimePoint at = repair_history_[key].hold_until;
    if (at <= now) {
      due.emplace_back(key, cause);
    } else if (!next || at < *next) {
      next = at;
    }
  }
  for (const auto& [key, cause] : due) {
    held_.erase(key);
    Charge(key, cause, now);
    MakeDirty(key);
  }
  // Histories quiet for a window with nothing held are forgotten (looked at once a second).
  if (now < next_prune_) return next;
  next_prune_ = now + std::chrono::seconds(1);
  absl::erase_if(repair_history_, [&](const auto& kv) {
    return now - kv.second.last > options_.repair_window && now >= kv.second.hold_until && !held_.contains(kv.first);
  });
  return next;
}

void Reconciler::Report(std::string line) {
  if (reports_.size() < kMaxErrorsReported) {
    reports_.push_back(std::move(line));
  } else {
    ++reports_dropped_;
  }
}

std::vector<std::string> Reconciler::TakeReports() {
  std::vector<std::string> out = std::move(reports_);
  reports_.clear();
  if (reports_dropped_ > 0) out.push_back(absl::StrCat("and ", reports_dropped_, " more"));
  reports_dropped_ = 0;
  return out;
}

bool Reconciler::OnEvent(const FibEvent& e, TimePoint now) {
  switch (e.kind) {
    case FibEvent::Kind::kCompleted:
      OnCompleted(e);
      return true;
    case FibEvent::Kind::kRouteChanged: {
      // Someone else deleted or rewrote a route of bagd's protocol.
      const std::optional<ObjectId> now_on = e.present ? std::optional<ObjectId>(e.id) : std::nullopt;
      const ObjectId* before = confirmed_routes_.Find(e.prefix);
      if (before == nullptr && !now_on) return false;  // nothing of ours was there
      SetConfirmedRoute(e.prefix, now_on);
      if (Busy(e.prefix)) return true;  // our own operation's answer decides
      const auto want = WantedRouteObject(e.prefix);
      if (!routes_.contains(e.prefix)) {
        if (now_on && !stale_routes_.contains(e.prefix)) dirty_routes_.TryEmplace(e.prefix);  // not ours to keep
        return true;
      }
      if (want && now_on && *now_on == *want) return true;
      if (e.by_kernel) {  // the kernel's own doing (a lost link): not someone else's change
        dirty_routes_.TryEmplace(e.prefix);
        return true;
      }
      RequestRepair(RepairKey{RepairObject::kRoute, 0, e.prefix},
                    e.present ? RepairCause::kChanged : RepairCause::kDeleted, now,
                    absl::StrCat("route ", e.prefix.ToString(),
                                 e.present ? (e.id == FibEvent::kNotAnObject ? " was rewritten by someone else (not to a "
                                                                               "next-hop object)"
                                                                             : absl::StrCat(" was repointed to ", e.id,
                                                                                            " by someone else"))
                                           : std::string(" was deleted by someone else")));
      return true;
    }
    case FibEvent::Kind::kGroupChanged: {
      if (!confirmed_.groups.contains(e.id) && !group_object_.contains(e.id)) return false;
      confirmed_.groups[e.id] = e.members;
      if (Busy(e.id)) return true;
      auto want = WantedMembers(e.id);
      if (!want) return true;  // being deleted, or a previous run's
      auto have = e.members;
      std::sort(have.begin(), have.end());
      if (have == *want) return true;
      std::string what = absl::StrCat("group ", e.id, " was replaced by someone else with");
      for (const auto& [nh, w] : have) absl::StrAppend(&what, " ", nh, "*", w);
      RequestRepair(RepairKey{RepairObject::kGroup, e.id, {}}, RepairCause::kChanged, now, what);
      return true;
    }
    case FibEvent::Kind::kNexthopChanged: {
      bool ours = false;
      for (const auto& [gw, d] : nexthops_) ours |= d.id == e.id;
      if (!ours || Busy(e.id)) return ours;
      RequestRepair(RepairKey{RepairObject::kNexthop, e.id, {}}, RepairCause::kChanged, now,
                    absl::StrCat("next hop ", e.id, " was replaced by someone else"));
      return true;
    }
    case FibEvent::Kind::kForeignRoute: {
      if (e.present) {
        // Another protocol's route took the place of bagd's (or sits where bagd wants one).
        const bool had = confirmed_routes_.contains(e.prefix);
        if (!had && !routes_.contains(e.prefix)) return false;
        if (had) SetConfirmedRoute(e.prefix, std::nullopt);
        dirty_routes_.Erase(e.prefix);
        NoteConflict(e.prefix, had ? "replaced bagd's" : "holds it");
        return true;
      }
      if (conflicts_.erase(e.prefix) == 0) return false;
      conflict_retry_.erase(e.prefix);
      if (routes_.contains(e.prefix)) dirty_routes_.TryEmplace(e.prefix);
      Report(absl::StrCat("route ", e.prefix.ToString(), ": the other protocol's route went; bagd installs its own"));
      return true;
    }
    case FibEvent::Kind::kNexthopDeleted: {
      if (confirmed_.groups.contains(e.id)) {
        // A group of ours deleted by someone else: the kernel took its routes with it (IPv4
        // without a word). Both are put back (FRR PRs 18722, 20747: silently lost routes).
        // Its routes are found by one walk of the table per burst (TakeGoneGroups).
        gone_groups_.insert(e.id);
        ConfirmGroupDeleted(e.id);
        auto o = group_object_.find(e.id);
        if (o == group_object_.end()) {
          stale_groups_.erase(e.id);  // a previous run's, or being deleted: nothing to put back
          return true;
        }
        allocated_.insert(e.id);  // still ours: written again under the same id
        if (Busy(e.id)) return true;
        if (e.by_kernel) {
          dirty_groups_.insert(o->second);
        } else {
          RequestRepair(RepairKey{RepairObject::kGroup, e.id, {}}, RepairCause::kDeleted, now,
                        absl::StrCat("group ", e.id, " was deleted by someone else, with its routes"));
        }
        return true;
      }
      if (confirmed_.nexthops.erase(e.id) == 0) return false;
      // The kernel took it out of every group too.
      for (auto& [id, members] : confirmed_.groups) {
        const auto before = members.size();
        std::erase_if(members, [&](const auto& m) { return m.first == e.id; });
        if (members.size() != before) {
          if (auto g = group_object_.find(id); g != group_object_.end()) dirty_groups_.insert(g->second);
        }
      }
      for (const auto& [gw, d] : nexthops_) {
        if (d.id == e.id) dirty_nexthops_.insert(gw);
      }
      // A group left without members takes its routes with it in the kernel: look again.
      resync_wanted_ = true;
      break;
    }
    case FibEvent::Kind::kLinkUp:
      for (const auto& [gw, d] : nexthops_) {
        if (!confirmed_.nexthops.contains(d.id)) dirty_nexthops_.insert(gw);
      }
      break;
    case FibEvent::Kind::kLinkDown:  // what it took with it shows in a dump
    case FibEvent::Kind::kResyncNeeded:
      resync_wanted_ = true;
      break;
  }
  return true;
}

}  // namespace bagd::fib
