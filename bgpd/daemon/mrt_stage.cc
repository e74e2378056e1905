#include "bgpd/daemon/mrt_stage.h"

#include <time.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "bgpd/session/log.h"
#include "mrt/mrt_record.h"
#include "mrt/path_template.h"

namespace bagd::daemon {

namespace {
constexpr const char* kTable = "table";
constexpr const char* kUpdates = "updates";
// A slice of a table dump encodes this many paths between two looks at the time.
constexpr size_t kPathsPerStep = 2048;
// A slice stops growing here even within its time budget (the writer's chunk size).
// (1 MiB: a fresh buffer per slice costs page faults; 4 MiB slices measured 15 ms of CPU.)
constexpr size_t kMaxSliceBytes = 1u << 20;
constexpr std::chrono::milliseconds kQueueFullRetry{5};

// The io thread's CPU time: a slice's wall time also counts the time the kernel ran others.
int64_t ThreadCpuMicros() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return int64_t{ts.tv_sec} * 1000000 + ts.tv_nsec / 1000;
}
}  // namespace

struct MrtStage::TableJob {
  mrt::MrtFileWriter::FileId file = 0;
  std::string path;
  std::unique_ptr<mrt::RibDumpEncoder> encoder;
  DumpDone done;
  std::unique_ptr<session::Timer> timer;
  wire::Bytes pending;  // encoded, not yet taken by the writer (its queue was full)
  int64_t started_steady_ms = 0;
  uint64_t peers = 0;
  int64_t longest_slice_us = 0;
  int64_t longest_slice_cpu_us = 0;
  bool encoded = false;  // every record is with the writer; waiting for the rename
};

MrtStage::MrtStage(Options options) : options_(std::move(options)) {
  if (options_.registry) {
    auto& reg = *options_.registry;
    files_ = &prometheus::BuildCounter()
                  .Name("bagd_mrt_files_total")
                  .Help("MRT files finished, by kind (table, updates) and result (written, failed)")
                  .Register(reg);
    records_ = &prometheus::BuildCounter()
                    .Name("bagd_mrt_records_total")
                    .Help("MRT records encoded, by kind (table, updates)")
                    .Register(reg);
    bytes_ = &prometheus::BuildCounter()
                  .Name("bagd_mrt_bytes_total")
                  .Help("Octets written to MRT files that were renamed into place, by kind")
                  .Register(reg);
    errors_ = &prometheus::BuildCounter()
                   .Name("bagd_mrt_errors_total")
                   .Help("MRT files that could not be written (full disk, I/O error, bad path), by kind")
                   .Register(reg);
    dropped_ = &prometheus::BuildCounter()
                    .Name("bagd_mrt_messages_dropped_total")
                    .Help("Received messages left out of the MRT updates log: the writer's queue was full")
                    .Register(reg)
                    .Add({});
    longest_slice_ = &prometheus::BuildGauge()
                          .Name("bagd_mrt_dump_longest_slice_seconds")
                          .Help("The longest the event thread spent encoding in one slice of the last table dump")
                          .Register(reg)
                          .Add({});
    queue_gauge_ = &prometheus::BuildGauge()
                        .Name("bagd_mrt_queue_bytes")
                        .Help("Octets waiting for the MRT writer thread (sampled at each slice and flush)")
                        .Register(reg)
                        .Add({});
  }
  writer_ = std::make_unique<mrt::MrtFileWriter>(
      options_.queue_bytes, [post = options_.post, alive = lifetime_.watch(), this](const mrt::FileResult& r) {
        // On the writer thread: hand the result to the io thread.
        post([alive, this, r] {
          if (!alive.expired()) OnFileDone(r);
        });
      });
  table_timer_ = options_.clock->NewTimer();
  rotate_timer_ = options_.clock->NewTimer();
  flush_timer_ = options_.clock->NewTimer();
}

MrtStage::~MrtStage() {
  table_timer_.reset();
  rotate_timer_.reset();
  flush_timer_.reset();
  for (auto& job : jobs_) job->timer.reset();
  writer_.reset();  // joins; what it posts finds the Lifetime expired
}

size_t MrtStage::SliceBytes() const { return std::min(kMaxSliceBytes, options_.queue_bytes / 4); }

int64_t MrtStage::NowMicros() const {
  return options_.unix_micros ? options_.unix_micros() : absl::ToUnixMicros(absl::Now());
}

std::chrono::milliseconds MrtStage::UntilBoundary(uint32_t interval_s) const {
  const int64_t now_ms = NowMicros() / 1000;
  const int64_t period = int64_t{interval_s} * 1000;
  const int64_t next = (now_ms / period + 1) * period;
  return std::chrono::milliseconds(next - now_ms);
}

void MrtStage::DumpTable(std::string path, DumpDone done, std::string keep_glob, int keep) {
  if (path.empty() || path[0] != '/') {
    MrtDumpResult r;
    r.path = path;
    r.status = absl::InvalidArgumentError(
        absl::StrCat("\"", path, "\" is not an absolute path: bagd writes the file itself, on its own host"));
    if (done) done(r);
    return;
  }
  auto job = std::make_unique<TableJob>();
  job->path = path;
  job->done = std::move(done);
  job->timer = options_.clock->NewTimer();
  job->started_steady_ms = options_.clock->SteadyMs();
  mrt::RibDumpOptions dump = options_.dump_options ? options_.dump_options() : mrt::RibDumpOptions{};
  dump.timestamp = static_cast<uint32_t>(NowMicros() / 1000000);
  job->encoder = std::make_unique<mrt::RibDumpEncoder>(std::move(dump));
  job->file = writer_->Open(std::move(path), std::move(keep_glob), keep);
  const rib::Rib& rib = options_.rib();
  job->peers = std::min<size_t>(rib.peer_count(), mrt::kMaxRibEntries);
  job->encoder->Begin(rib, job->pending);
  TableJob* raw = job.get();
  jobs_.push_back(std::move(job));
  // The first slice runs behind what the io thread has queued, like every other.
  raw->timer->Start(std::chrono::milliseconds(0), [this, raw] { RunSlice(raw); });
}

void MrtStage::RunSlice(TableJob* job) {
  // (The timer belongs to the job, the job to this stage: a removed job or stage never
  // fires, Timer's contract.)
  if (!job->pending.empty() && !writer_->Write(job->file, job->pending)) {
    job->timer->Start(kQueueFullRetry, [this, job] { RunSlice(job); });
    return;
  }
  if (queue_gauge_) queue_gauge_->Set(static_cast<double>(writer_->queued_bytes()));
  // Room for a slice in the writer's queue, else wait: the writer is behind (a slow disk).
  if (writer_->queued_bytes() + SliceBytes() > writer_->max_queued_bytes()) {
    job->timer->Start(kQueueFullRetry, [this, job] { RunSlice(job); });
    return;
  }
  const auto start = std::chrono::steady_clock::now();
  const int64_t cpu_start = ThreadCpuMicros();
  const rib::Rib& rib = options_.rib();
  // The slice's buffer at its full size at once: no doubling copies while it fills.
  job->pending.reserve(SliceBytes() + (64u << 10));
  const uint64_t records_before = job->encoder->counts().records;
  bool done = false;
  while (!done) {
    done = job->encoder->Next(rib, job->pending, kPathsPerStep);
    if (std::chrono::steady_clock::now() - start >= options_.slice_budget || job->pending.size() >= SliceBytes()) {
      break;
    }
  }
  const int64_t took_us =
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start).count();
  job->longest_slice_us = std::max(job->longest_slice_us, took_us);
  job->longest_slice_cpu_us = std::max(job->longest_slice_cpu_us, ThreadCpuMicros() - cpu_start);
  if (records_) records_->Add({{"kind", kTable}}).Increment(static_cast<double>(job->encoder->counts().records - records_before));
  if (!job->pending.empty() && !writer_->Write(job->file, job->pending)) {
    // Kept in `pending`; the next slice hands it over first.
  }
  if (done && job->pending.empty()) {
    job->encoded = true;
    writer_->Close(job->file, /*commit=*/true);
    return;  // OnFileDone finishes the job
  }
  job->timer->Start(std::chrono::milliseconds(done ? kQueueFullRetry.count() : 0), [this, job] { RunSlice(job); });
}

void MrtStage::OnFileDone(const mrt::FileResult& r) {
  auto it = std::find_if(jobs_.begin(), jobs_.end(), [&](const auto& j) { return j->file == r.file; });
  const char* kind = it != jobs_.end() ? kTable : kUpdates;
  if (files_) files_->Add({{"kind", kind}, {"result", r.status.ok() ? "written" : "failed"}}).Increment();
  if (r.status.ok()) {
    if (bytes_) bytes_->Add({{"kind", kind}}).Increment(static_cast<double>(r.bytes));
  } else {
    if (errors_) errors_->Add({{"kind", kind}}).Increment();
    log::Error("mrt: %s file %s not written: %s", kind, r.path, r.status.message());
  }
  if (r.removed > 0) log::Info("mrt: removed %d old %s files (keep %d)", r.removed, kind, config_.keep());
  if (it == jobs_.end()) {
    if (r.status.ok()) log::Info("mrt: updates file %s written, %d octets", r.path, r.bytes);
    return;
  }
  std::unique_ptr<TableJob> job = std::move(*it);
  jobs_.erase(it);
  MrtDumpResult result;
  result.status = r.status;
  result.path = r.path;
  result.counts = job->encoder->counts();
  result.peers = job->peers;
  result.bytes = r.bytes;
  result.seconds = static_cast<double>(options_.clock->SteadyMs() - job->started_steady_ms) / 1000.0;
  result.longest_slice_seconds = static_cast<double>(job->longest_slice_us) / 1e6;
  result.longest_slice_cpu_seconds = static_cast<double>(job->longest_slice_cpu_us) / 1e6;
  if (longest_slice_) longest_slice_->Set(result.longest_slice_seconds);
  if (r.status.ok()) {
    log::Info("mrt: table dump %s: %d prefixes, %d paths, %d octets in %.3f s (longest slice %.1f ms, %.1f ms CPU)",
              r.path, result.counts.prefixes, result.counts.paths, r.bytes, result.seconds,
              result.longest_slice_seconds * 1000, result.longest_slice_cpu_seconds * 1000);
  }
  if (job->done) job->done(result);
}

void MrtStage::Configure(const config::v1::Mrt& config) {
  const bool updates_changed = config.updates_interval() != config_.updates_interval() ||
                               config.updates_path() != config_.updates_path();
  config_ = config;
  ScheduleTable();
  if (updates_changed) {
    CloseUpdates();
    rotate_timer_->Stop();
    flush_timer_->Stop();
    if (config_.updates_interval() > 0 && !config_.updates_path().empty()) {
      StartUpdatesFile();
      rotate_timer_->Start(UntilBoundary(config_.updates_interval()), [this] { RotateUpdates(); });
      flush_timer_->Start(options_.updates_flush, [this] { FlushUpdates(); });
    }
  }
}

void MrtStage::Stop() {
  CloseUpdates();
  table_timer_->Stop();
  rotate_timer_->Stop();
  flush_timer_->Stop();
}

void MrtStage::ScheduleTable() {
  table_timer_->Stop();
  if (config_.table_interval() == 0 || config_.table_path().empty()) return;
  table_timer_->Start(UntilBoundary(config_.table_interval()), [this] {
    const std::string path =
        mrt::ExpandPathTemplate(config_.table_path(), NowMicros() / 1000000);
    DumpTable(path, nullptr, mrt::PathTemplateGlob(config_.table_path()), static_cast<int>(config_.keep()));
    ScheduleTable();
  });
}

void MrtStage::StartUpdatesFile() {
  const int64_t now_s = NowMicros() / 1000000;
  updates_path_ = mrt::ExpandPathTemplate(config_.updates_path(), now_s);
  updates_file_ =
      writer_->Open(updates_path_, mrt::PathTemplateGlob(config_.updates_path()), static_cast<int>(config_.keep()));
  logged_drop_ = false;
}

void MrtStage::RotateUpdates() {
  CloseUpdates();
  if (config_.updates_interval() == 0) return;
  StartUpdatesFile();
  rotate_timer_->Start(UntilBoundary(config_.updates_interval()), [this] { RotateUpdates(); });
}

void MrtStage::CloseUpdates() {
  if (updates_file_ == 0) return;
  FlushUpdates();
  writer_->Close(updates_file_, /*commit=*/true);
  updates_file_ = 0;
}

void MrtStage::OnMrtMessage(const session::MrtReceivedMessage& m) {
  if (updates_file_ == 0) return;
  mrt::ReceivedMessage r;
  r.unix_micros = NowMicros();
  r.peer_as = m.peer_as;
  r.local_as = m.local_as;
  r.peer_address = m.peer_address;
  r.local_address = m.local_address;
  r.four_octet_as = m.four_octet_as;
  r.add_path = m.add_path;
  r.message = m.message;
  mrt::AppendBgp4mpMessage(updates_buffer_, r);
  Appended();
}

void MrtStage::Appended() {
  ++buffered_messages_;
  if (updates_buffer_.size() >= options_.updates_buffer_bytes) FlushUpdates();
}

void MrtStage::OnMrtStateChange(const session::MrtStateChange& s) {
  if (updates_file_ == 0) return;
  mrt::StateChange r;
  r.unix_micros = NowMicros();
  r.peer_as = s.peer_as;
  r.local_as = s.local_as;
  r.peer_address = s.peer_address;
  r.local_address = s.local_address;
  r.old_state = s.old_state;
  r.new_state = s.new_state;
  mrt::AppendBgp4mpStateChange(updates_buffer_, r);
  Appended();
}

void MrtStage::FlushUpdates() {
  if (updates_file_ != 0 && config_.updates_interval() > 0 && !flush_timer_->running()) {
    flush_timer_->Start(options_.updates_flush, [this] { FlushUpdates(); });
  }
  if (buffered_messages_ == 0) return;
  const uint64_t n = buffered_messages_;
  buffered_messages_ = 0;
  if (updates_file_ != 0 && writer_->Write(updates_file_, updates_buffer_)) {
    messages_logged_ += n;
    if (records_) records_->Add({{"kind", kUpdates}}).Increment(static_cast<double>(n));
  } else {
    messages_dropped_ += n;
    if (dropped_) dropped_->Increment(static_cast<double>(n));
    if (!logged_drop_) {
      log::Warning("mrt: the writer's queue is full (%d of %d octets, %d more to add); dropping received messages "
                   "from the updates log %s (counted in bagd_mrt_messages_dropped_total)",
                   writer_->queued_bytes(), writer_->max_queued_bytes(), updates_buffer_.size(), updates_path_);
      logged_drop_ = true;
    }
  }
  updates_buffer_.clear();
  if (queue_gauge_) queue_gauge_->Set(static_cast<double>(writer_->queued_bytes()));
}

}  // namespace bagd::daemon
