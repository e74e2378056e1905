#include "bgpd/daemon/fib_stage.h"

#include <boost/asio/post.hpp>

#include "absl/strings/str_cat.h"
#include "bgpd/session/log.h"

namespace bagd::daemon {


FibStage::FibStage(boost::asio::io_context& io, std::unique_ptr<fib::FibBackend> backend, FibStageOptions options)
    : io_(io),
      backend_(std::move(backend)),
      options_(options),
      reconciler_(*backend_, options.reconciler),
      retry_timer_(io),
      sweep_timer_(io),
      resync_timer_(io),
      hold_timer_(io),
      audit_timer_(io),
      held_timer_(io),
      retry_delay_(options.retry_first) {
  backend_->SetEventHandler([this](const fib::FibEvent& e) { OnEvent(e); });
}

FibStage::~FibStage() {
  *alive_ = false;
  if (events_) events_->release();  // the backend closes its own socket
}

absl::Status FibStage::Start() {
  if (auto st = reconciler_.Start(); !st.ok()) return st;
  const fib::FibState& s = reconciler_.confirmed();
  const auto& routes = reconciler_.confirmed_routes();
  log::Info("fib: %d next hops, %d groups and %d routes of a previous run found; kept while the new state claims them",
            s.nexthops.size(), s.groups.size(), routes.size());
  found_previous_run_ = !s.nexthops.empty() || !s.groups.empty() || !routes.empty();
  routes.ForEach([&](const net::Prefix& prefix, fib::ObjectId) { ++previous_routes_[static_cast<int>(prefix.family())]; });
  ArmAudit();
  if (reconciler_.stale_count() == 0) {
    released_ = true;  // nothing to wait for, nothing to sweep
    return absl::OkStatus();
  }
  if (options_.startup_hold.count() > 0) {
    holding_ = true;
    hold_timer_.expires_after(options_.startup_hold);
    hold_timer_.async_wait([this](const boost::system::error_code& ec) {
      if (ec || released_) return;
      log::Info("fib: not every neighbor sent End-of-RIB within %ds (fib.restart_hold_time); installing what is known",
                options_.startup_hold.count());
      Release();
    });
  }
  if (options_.sweep_after.count() > 0) {
    sweep_timer_.expires_after(std::max(options_.sweep_after, options_.startup_hold));
    sweep_timer_.async_wait([this](const boost::system::error_code& ec) {
      if (ec || released_) return;
      Release();
    });
  }
  return absl::OkStatus();
}

void FibStage::WatchEvents(int fd, std::function<void()> read) {
  // The descriptor stays the backend's: release() before the stream_descriptor goes.
  events_ = std::make_unique<boost::asio::posix::stream_descriptor>(io_, fd);
  read_events_ = std::move(read);
  WaitEvents();
}

void FibStage::WaitEvents() {
  events_->async_wait(boost::asio::posix::stream_descriptor::wait_read, [this](const boost::system::error_code& ec) {
    if (ec) return;
    read_events_();
    WaitEvents();
    if (flush_posted_) {  // the burst is read: one flush for all of it
      flush_posted_ = false;
      Flush();
    }
  });
}

void FibStage::Apply(const rib::FibUpdate& update) {
  reconciler_.Update(update);
  if (!holding_) Flush();
}

void FibStage::SetGroupLimit(uint32_t max_groups) {
  if (max_groups == reconciler_.max_groups()) return;
  log::Info("fib: at most %d next-hop groups in the FIB%s", max_groups, max_groups == 0 ? " (no limit)" : "");
  reconciler_.SetMaxGroups(max_groups);
  if (reconciler_.refused_groups() > 0) Flush();
}

std::optional<rib::FibGroupCap> FibStage::GroupCap() const {
  rib::FibGroupCap c;
  c.limit = reconciler_.max_groups();
  c.groups = reconciler_.group_count();
  c.refused_total = reconciler_.stats().groups_refused;
  c.refused_now = reconciler_.refused_groups();
  c.waiting_routes = reconciler_.waiting_routes();
  c.rebound_total = reconciler_.stats().groups_rebound;
  return c;
}

void FibStage::Release() {
  if (released_) return;
  released_ = true;
  holding_ = false;
  hold_timer_.cancel();
  sweep_timer_.cancel();
  // The new state claimed what it wants as it was written; the rest goes now, in the same
  // flush (make-before-break order: new routes first, then deletes).
  Flush();
  if (reconciler_.stale_count() > 0) {
    log::Info("fib: deleting %d objects of a previous run that nothing claimed", reconciler_.stale_count());
    reconciler_.Sweep();
    Flush();
  }
}

void FibStage::RemoveAll() {
  auto state = backend_->Dump();
  if (!state.ok()) {
    log::Warning("fib: cannot read what to remove: %s", state.status().ToString());
    return;
  }
  std::vector<fib::FibOp> ops;
  for (const auto& [prefix, id] : state->routes) ops.push_back(fib::RouteOp{prefix, id, true});
  for (const auto& [id, members] : state->groups) ops.push_back(fib::GroupOp{id, {}, true});
  for (const auto& [id, gw] : state->nexthops) ops.push_back(fib::NexthopOp{id, gw, true});
  size_t failed = 0;
  for (const absl::Status& st : backend_->Apply(ops)) failed += !st.ok();
  log::Info("fib: removed %d objects (%d failed)", ops.size() - failed, failed);
}

namespace {

// A reconciler error is "<operation>: <the backend's error>" (fib::Describe never writes
// ": ", IPv6 addresses have no space after their colons).
control::v1::Event ErrorEvent(const std::string& text, size_t failed, size_t pending) {
  control::v1::Event out;
  control::v1::FibErrorEvent& f = *out.mutable_fib();
  const size_t colon = text.find(": ");
  f.set_operation(colon == std::string::npos ? text : text.substr(0, colon));
  f.set_error(colon == std::string::npos ? "" : text.substr(colon + 2));
  f.set_failed(failed);
  f.set_pending(pending);
  return out;
}

}  // namespace

void FibStage::Flush() {
  if (holding_) return;
  const auto t0 = std::chrono::steady_clock::now();
  const fib::FlushResult r = reconciler_.Flush();
  if (FibMetrics* m = options_.metrics) {
    if (r.applied > 0 || r.failed > 0) {
      m->FibApplySeconds().Observe(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    if (r.failed > 0) m->FibFailures().Increment(static_cast<double>(r.failed));
    m->FibPending().Set(static_cast<double>(reconciler_.pending()));
    const double refused = static_cast<double>(reconciler_.stats().groups_refused) - m->FibGroupsRefused().Value();
    if (refused > 0) m->FibGroupsRefused().Increment(refused);
    if (r.routes_removed_with_group > 0) {
      m->FibRoutesRemovedWithGroup().Increment(static_cast<double>(r.routes_removed_with_group));
    }
    m->FibGroupGauge("limit").Set(reconciler_.max_groups());
    m->FibGroupGauge("groups").Set(static_cast<double>(reconciler_.group_count()));
    m->FibGroupGauge("waiting").Set(static_cast<double>(reconciler_.refused_groups()));
    m->FibGroupGauge("waiting_routes").Set(static_cast<double>(reconciler_.waiting_routes()));
  }
  if (r.applied > 0 || r.failed > 0) {
    log::Debug("fib: %d operations applied (%d next hop, %d group, %d route), %d failed%s", r.applied, r.nexthop_ops,
               r.group_ops, r.route_ops, r.failed,
               r.routes_removed_with_group == 0
                   ? std::string()
                   : absl::StrCat("; ", r.routes_removed_with_group, " routes removed with their groups"));
  }
  for (const std::string& e : r.errors) {
    log::Warning("fib: %s", e);
    if (options_.events != nullptr) options_.events->Publish(ErrorEvent(e, r.failed, reconciler_.pending()));
  }
  // The retry backoff starts afresh only when something went through: routes waiting for a
  // group that is held back (a repair's backoff) or refused (max_groups) do not make it spin.
  if (r.failed == 0 && r.applied > 0) retry_delay_ = options_.retry_first;
  if (reconciler_.audit_wanted() && !audit_soon_) {
    // An exclusive create met a route bagd did not know of: an audit says whose it is.
    audit_soon_ = true;
    boost::asio::post(io_, [this, alive = alive_] {
      if (!*alive) return;
      audit_soon_ = false;
      if (!holding_) AuditNow();
    });
  }
  if (reconciler_.resync_wanted() && !resync_armed_) {
    // Debounced: a link going down deletes many next hops in a row.
    resync_armed_ = true;
    resync_timer_.expires_after(std::chrono::milliseconds(100));
    resync_timer_.async_wait([this](const boost::system::error_code& ec) {
      if (ec) return;
      resync_armed_ = false;
      if (options_.metrics) options_.metrics->FibResyncs().Increment();
      if (auto st = reconciler_.Resync(); !st.ok()) {
        log::Warning("fib: resync failed: %s", st.ToString());
      }
      Flush();
    });
  }
  LogReports();
  if (reconciler_.dirty()) ScheduleRetry();
}

void FibStage::ScheduleRetry() {
  if (retry_armed_) return;
  retry_armed_ = true;
  retry_timer_.expires_after(retry_delay_);
  retry_delay_ = std::min(retry_delay_ * 2, options_.retry_max);
  retry_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec) return;
    retry_armed_ = false;
    if (options_.metrics) options_.metrics->FibRetries().Increment();
    Flush();
  });
}

void FibStage::OnEvent(const fib::FibEvent& e) {
  // e.g. the kernel telling us about a change to nothing of ours
  if (!reconciler_.OnEvent(e, std::chrono::steady_clock::now())) return;
  if (e.kind == fib::FibEvent::Kind::kResyncNeeded) log::Warning("fib: notifications were lost; resyncing");
  if (e.kind == fib::FibEvent::Kind::kNexthopDeleted) log::Info("fib: next hop %d was deleted under us", e.id);
  if (e.kind == fib::FibEvent::Kind::kLinkDown) log::Debug("fib: link %d is down", e.id);
  FlushSoon();
}

void FibStage::FlushSoon() {
  if (flush_posted_) return;
  flush_posted_ = true;
  // Read-loop events are flushed when the burst is read (WaitEvents); others (a backend's
  // own service loop) get a posted flush.
  boost::asio::post(io_, [this, alive = alive_] {
    if (!*alive || !flush_posted_) return;
    flush_posted_ = false;
    Flush();
  });
}

void FibStage::LogReports() {
  for (const std::string& line : reconciler_.TakeReports()) log::Warning("fib: %s", line);
  if (FibMetrics* m = options_.metrics) {
    const fib::ReconcilerStats& st = reconciler_.stats();
    for (int o = 0; o < fib::kRepairObjects; ++o) {
      for (int c = 0; c < fib::kRepairCauses; ++c) {
        const uint64_t now = st.repairs[o][c];
        if (now == exported_repairs_[o][c]) continue;
        m->FibRepairs(fib::RepairObjectName(static_cast<fib::RepairObject>(o)),
                      fib::RepairCauseName(static_cast<fib::RepairCause>(c)))
            .Increment(static_cast<double>(now - exported_repairs_[o][c]));
        exported_repairs_[o][c] = now;
      }
    }
    m->FibConflicts().Set(static_cast<double>(reconciler_.conflicts().size()));
    m->FibRepairsHeld().Set(static_cast<double>(reconciler_.held_repairs()));
  }
  ArmHeld();
}

void FibStage::ArmHeld() {
  const auto next = reconciler_.ReleaseHeld(std::chrono::steady_clock::now());
  if (!next || (held_armed_at_ && held_at_ <= *next)) return;
  held_armed_at_ = true;
  held_at_ = *next;
  held_timer_.expires_at(*next);
  held_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec) return;
    held_armed_at_ = false;
    reconciler_.ReleaseHeld(std::chrono::steady_clock::now());
    Flush();
  });
}

void FibStage::SetAuditInterval(std::chrono::seconds interval) {
  if (interval == options_.audit_interval) return;
  options_.audit_interval = interval;
  audit_timer_.cancel();
  ArmAudit();
}

void FibStage::ArmAudit() {
  if (options_.audit_interval.count() <= 0) return;
  audit_timer_.expires_after(options_.audit_interval);
  audit_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec) return;
    // After a restart the previous run's objects are not compared until the stage writes.
    if (!holding_) AuditNow();
    ArmAudit();
  });
}

bool FibStage::AuditNow() {
  if (reconciler_.auditing()) return false;
  audit_started_ = std::chrono::steady_clock::now();
  if (auto st = reconciler_.AuditBegin(audit_started_); !st.ok()) {
    log::Warning("fib: audit failed to start: %s", st.ToString());
    return false;
  }
  audit_run_ = AuditFigures{};
  AuditStep(++audit_seq_);
  return true;
}

void FibStage::AuditStep(uint64_t seq) {
  // A resync replaced what it compared against, or another audit began since.
  if (!reconciler_.auditing() || seq != audit_seq_) return;
  const auto t0 = std::chrono::steady_clock::now();
  auto done = reconciler_.AuditStep(std::max<size_t>(1, options_.audit_step), t0);
  const auto t1 = std::chrono::steady_clock::now();
  ++audit_run_.steps;
  audit_run_.longest_step = std::max(audit_run_.longest_step, std::chrono::duration<double>(t1 - t0).count());
  if (!done.ok()) {
    log::Warning("fib: audit failed: %s", done.status().ToString());
    return;
  }
  if (!*done) {
    boost::asio::post(io_, [this, alive = alive_, seq] {
      if (*alive) AuditStep(seq);
    });
    return;
  }
  audit_run_.found = reconciler_.audit_found();
  audit_run_.seconds = std::chrono::duration<double>(t1 - audit_started_).count();
  last_audit_ = audit_run_;
  if (options_.metrics) {
    options_.metrics->FibAudits().Increment();
    options_.metrics->FibAuditSeconds().Set(last_audit_.seconds);
  }
  if (last_audit_.found > 0) {
    log::Warning("fib: audit found %d objects that differ from what bagd installed (%.3f s); repairing",
                 last_audit_.found, last_audit_.seconds);
  } else {
    log::Debug("fib: audit: the backend holds what bagd installed (%.3f s in %d pieces, the longest %.1f ms)",
               last_audit_.seconds, last_audit_.steps, last_audit_.longest_step * 1e3);
  }
  Flush();
}

std::optional<rib::FibRepairStatus> FibStage::RepairStatus() const {
  rib::FibRepairStatus s;
  const fib::ReconcilerStats& st = reconciler_.stats();
  for (int o = 0; o < 3; ++o) {
    for (int c = 0; c < 3; ++c) s.repairs[o][c] = st.repairs[o][c];
  }
  s.held_now = reconciler_.held_repairs();
  s.held_total = st.repairs_held;
  s.audits = st.audits;
  s.stale_answers = st.stale_answers;
  s.conflicts_total = st.conflicts_total;
  s.conflicts_now = reconciler_.conflicts().size();
  for (const net::Prefix& p : reconciler_.conflicts()) {
    if (s.conflicts.size() >= 100) break;
    s.conflicts.push_back(p);
  }
  s.audit_interval_s = static_cast<uint32_t>(options_.audit_interval.count());
  return s;
}

}  // namespace bagd::daemon
