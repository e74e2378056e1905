// The FIB sync stage as the daemon runs it: the reconciler (fib_sync/) with a backend, the
// retry timer for what failed, the sweep of what a previous run left behind, and a resync
// when the backend says notifications were lost. Runs on the io_context thread.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <array>
#include <functional>
#include <memory>

#include "bgpd/control/event_hub.h"
#include "bgpd/daemon/fib_metrics.h"
#include "fib_sync/reconciler.h"
#include "rib/fib_update.h"

namespace bagd::daemon {

struct FibStageOptions {
  // After a restart nothing is written until Release() (every neighbor's initial table is
  // in) or this long after start (config fib.restart_hold_time); 0: no wait.
  std::chrono::seconds startup_hold{60};
  // Objects of a previous run that nothing claimed are deleted at Release(), or this long
  // after start when nothing released the stage before (startup_hold 0 and no
  // convergence); 0: only at Release().
  std::chrono::seconds sweep_after{120};
  // The periodic audit (config fib.audit_interval): what bagd owns in the backend is dumped
  // and compared, and what others changed is put back; 0: none (notifications only).
  std::chrono::seconds audit_interval{30};
  // Routes compared per piece of an audit (a piece of a 1M-route table: ~10 ms).
  size_t audit_step = 16384;
  std::chrono::milliseconds retry_first{200};
  std::chrono::milliseconds retry_max{10000};
  fib::ReconcilerOptions reconciler;
  // bagd_fib_* failures, retries, resyncs, pending operations, apply latency, the group
  // cap, repairs and audits (fib_metrics.h); may be null.
  FibMetrics* metrics = nullptr;
  // WatchEvents: a FibErrorEvent per operation the backend refused (at most 20 a pass, as
  // the log); may be null.
  control::EventSink* events = nullptr;
};

class FibStage final : public rib::FibSink {
 public:
  FibStage(boost::asio::io_context& io, std::unique_ptr<fib::FibBackend> backend, FibStageOptions options = {});
  ~FibStage();
  // Reads what the backend holds (adoption after a restart) and arms the sweep.
  absl::Status Start();
  // Backends with a notification socket (the kernel): watch it, and call `read` when it is
  // readable (the backend emits its events from there).
  void WatchEvents(int fd, std::function<void()> read);
  void Apply(const rib::FibUpdate& update) override;
  std::optional<uint32_t> ObjectOf(rib::GroupId g) const override { return reconciler_.GroupObject(g); }
  void InitialTablesIn() override { Release(); }
  // The reconciler's group cap (fib_sync/reconciler.h): the effective fib.max_groups. A
  // higher one lets refused groups in at once.
  void SetGroupLimit(uint32_t max_groups) override;
  std::optional<rib::FibGroupCap> GroupCap() const override;
  std::optional<rib::FibRepairStatus> RepairStatus() const override;
  // A reload may change the audit interval (0 stops it).
  void SetAuditInterval(std::chrono::seconds interval);
  // Starts an audit now (the timer calls it too): the dump is read and compared a piece at a
  // time (FibStageOptions::audit_step routes), the event thread running other work between
  // pieces. False when one is under way already or the dump cannot start.
  bool AuditNow();
  bool auditing() const { return reconciler_.auditing(); }
  struct AuditFigures {
    size_t found = 0;
    double seconds = 0;       // from its start to its end
    double longest_step = 0;  // the longest the event thread was held by one piece
    size_t steps = 0;
  };
  const AuditFigures& last_audit() const { return last_audit_; }
  // After a restart (the backend holds objects of a previous run), nothing is sent until
  // Release() — every neighbor's initial table is in — or `startup_hold` has passed, so the
  // new run claims the old objects whole instead of rebuilding them peer by peer. Release
  // then deletes what nothing claimed (the routes no neighbor re-announced), at once: their
  // neighbors have said (End-of-RIB) that their tables are complete. Once only.
  void Release();
  bool holding() const { return holding_; }
  // What Start() found of a previous run: its routes per family (index net::Family) and
  // whether it found anything at all. Graceful restart's R and F bits (RFC 4724 §4.1).
  bool found_previous_run() const { return found_previous_run_; }
  const std::array<size_t, net::kFamilyCount>& previous_routes() const { return previous_routes_; }
  // Removes everything bagd owns in the backend: routes, then groups, then next hops.
  void RemoveAll();
  const fib::Reconciler& reconciler() const { return reconciler_; }
  fib::FibBackend& backend() { return *backend_; }

 private:
  void Flush();
  void ScheduleRetry();
  void OnEvent(const fib::FibEvent& e);
  void WaitEvents();
  // Events come in bursts (a flush of 10k routes by someone else is 10k notifications): one
  // flush after the burst.
  void FlushSoon();
  void ArmAudit();
  void AuditStep(uint64_t seq);
  void ArmHeld();
  void LogReports();

  boost::asio::io_context& io_;
  std::unique_ptr<fib::FibBackend> backend_;
  FibStageOptions options_;
  fib::Reconciler reconciler_;
  boost::asio::steady_timer retry_timer_;
  boost::asio::steady_timer sweep_timer_;
  boost::asio::steady_timer resync_timer_;
  boost::asio::steady_timer hold_timer_;
  boost::asio::steady_timer audit_timer_;
  boost::asio::steady_timer held_timer_;
  bool flush_posted_ = false;
  bool audit_soon_ = false;
  uint64_t audit_seq_ = 0;
  AuditFigures last_audit_, audit_run_;
  std::chrono::steady_clock::time_point audit_started_{};
  bool held_armed_at_ = false;
  std::chrono::steady_clock::time_point held_at_{};
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
  uint64_t exported_repairs_[3][3] = {};
  std::chrono::milliseconds retry_delay_;
  std::unique_ptr<boost::asio::posix::stream_descriptor> events_;
  std::function<void()> read_events_;
  bool retry_armed_ = false;
  bool resync_armed_ = false;
  bool holding_ = false;
  bool released_ = false;
  bool found_previous_run_ = false;
  std::array<size_t, net::kFamilyCount> previous_routes_{};
};

}  // namespace bagd::daemon
