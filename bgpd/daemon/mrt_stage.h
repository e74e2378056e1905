// MRT files from the running daemon (docs/mrt.md): `bagctl dump mrt FILE`, the periodic
// table dumps and the updates log of config `mrt { ... }`.
//
// Off the hot path, by construction:
// - A table dump is encoded on the io thread in slices (mrt::RibDumpEncoder), each bounded
//   by time (slice_budget, 5 ms by default), each posted behind whatever the io thread has
//   queued (socket reads, timers), so ingest and keepalives never wait more than one slice.
//   Encoding on the io thread needs no copy of the table and no lock on the RIB (it is not
//   thread-safe: interned attributes are refcounted without atomics); a snapshot for a
//   worker would itself be a 1M-path walk on the io thread. The bytes go to the writer
//   thread (mrt::MrtFileWriter), which does every write(2), fsync and rename.
// - The writer's queue is bounded (queue_bytes). A table dump waits for room (a timer, not
//   a block); the updates log drops what does not fit and counts it.
// - Every handler (slice timers, the writer's completions, posted from its thread) checks
//   this stage's Lifetime before touching it.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "bgpd/session/clock.h"
#include "bgpd/session/lifetime.h"
#include "bgpd/session/mrt_tap.h"
#include "conf/bagd.pb.h"
#include "mrt/file_writer.h"
#include "mrt/rib_dump.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/registry.h"
#include "rib/rib.h"

namespace bagd::daemon {

struct MrtDumpResult {
  absl::Status status;
  std::string path;
  mrt::RibDumpCounts counts;
  uint64_t peers = 0;
  uint64_t bytes = 0;
  double seconds = 0;
  double longest_slice_seconds = 0;  // the longest stretch the io thread spent encoding (wall)
  double longest_slice_cpu_seconds = 0;  // the most CPU time of the io thread one slice used
};

class MrtStage final : public session::MrtMessageTap {
 public:
  struct Options {
    session::Clock* clock = nullptr;  // timers and SteadyMs (required)
    // Runs a closure on the io thread; called from the writer thread (required).
    std::function<void(std::function<void()>)> post;
    std::function<const rib::Rib&()> rib;  // required
    // The dump's collector id, view name and per-peer facts; the timestamp is set here.
    std::function<mrt::RibDumpOptions()> dump_options;
    std::shared_ptr<prometheus::Registry> registry;  // may be null
    std::function<int64_t()> unix_micros;  // wall clock; default: absl::Now()
    size_t queue_bytes = 32u << 20;
    std::chrono::microseconds slice_budget{5000};
    size_t updates_buffer_bytes = 256u << 10;  // the updates log hands the writer chunks this big
    std::chrono::milliseconds updates_flush{1000};  // ... or this old
  };
  explicit MrtStage(Options options);
  ~MrtStage() override;
  MrtStage(const MrtStage&) = delete;
  MrtStage& operator=(const MrtStage&) = delete;

  using DumpDone = std::function<void(const MrtDumpResult&)>;
  // A TABLE_DUMP_V2 of the whole RIB into `path` (absolute: InvalidArgument through `done`
  // otherwise); `done` runs on the io thread once the file is renamed into place, or failed.
  void DumpTable(std::string path, DumpDone done, std::string keep_glob = {}, int keep = 0);
  // Applies config `mrt` (validated): re-arms the periodic dumps and the updates log. An
  // updates file that is open is closed (and kept) when the log goes off or its template
  // or interval changes.
  void Configure(const config::v1::Mrt& config);
  // Shutdown: closes the updates file with what it has; stops the periodic dumps.
  void Stop();

  // session::MrtMessageTap: the updates log.
  bool mrt_enabled() const override { return updates_file_ != 0; }
  void OnMrtMessage(const session::MrtReceivedMessage& m) override;
  void OnMrtStateChange(const session::MrtStateChange& s) override;

  uint64_t messages_logged() const { return messages_logged_; }
  uint64_t messages_dropped() const { return messages_dropped_; }
  size_t dumps_running() const { return jobs_.size(); }
  const mrt::MrtFileWriter& writer() const { return *writer_; }

 private:
  struct TableJob;
  void RunSlice(TableJob* job);
  void OnFileDone(const mrt::FileResult& r);
  void ScheduleTable();
  void StartUpdatesFile();
  void RotateUpdates();
  void FlushUpdates();
  // A record went into the updates buffer: counted, and the buffer written out once full.
  void Appended();
  void CloseUpdates();
  int64_t NowMicros() const;
  size_t SliceBytes() const;  // the most a slice encodes: 1 MiB, or a quarter of a small queue
  // Milliseconds from now until the next multiple of `interval_s` in Unix time (dumps and
  // files start on the clock: 00:00, 00:15, ... for 900 s, as collectors name them).
  std::chrono::milliseconds UntilBoundary(uint32_t interval_s) const;

  Options options_;
  config::v1::Mrt config_;
  std::vector<std::unique_ptr<TableJob>> jobs_;
  std::unique_ptr<session::Timer> table_timer_;
  std::unique_ptr<session::Timer> rotate_timer_;
  std::unique_ptr<session::Timer> flush_timer_;
  mrt::MrtFileWriter::FileId updates_file_ = 0;
  std::string updates_path_;
  wire::Bytes updates_buffer_;
  uint64_t buffered_messages_ = 0;
  uint64_t messages_logged_ = 0, messages_dropped_ = 0;
  bool logged_drop_ = false;  // one log line per updates file while dropping

  prometheus::Family<prometheus::Counter>* files_ = nullptr;
  prometheus::Family<prometheus::Counter>* records_ = nullptr;
  prometheus::Family<prometheus::Counter>* bytes_ = nullptr;
  prometheus::Family<prometheus::Counter>* errors_ = nullptr;
  prometheus::Counter* dropped_ = nullptr;
  prometheus::Gauge* longest_slice_ = nullptr;
  prometheus::Gauge* queue_gauge_ = nullptr;

  session::Lifetime lifetime_;
  // Last: destroyed first, so its thread is joined before the rest goes; what it posts
  // after that finds the Lifetime expired.
  std::unique_ptr<mrt::MrtFileWriter> writer_;
};

}  // namespace bagd::daemon
