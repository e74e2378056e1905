// The thread that puts MRT files on disk, so no write, fsync, rename or full disk ever
// touches the event thread. Each file is written to "<path>.tmp" and renamed to <path>
// once complete; a file whose write failed (a full disk, an I/O error) is removed and
// reported, never left half-written under its name.
//
// The queue between the callers and the thread is bounded in bytes: Write() refuses a chunk
// when it is full (the caller decides: a table dump waits and tries again, the updates log
// drops the message and counts it). Thread-safe; the callbacks run on the writer thread.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "wire/byte_io.h"

namespace bagd::mrt {

struct FileResult {
  uint64_t file = 0;     // MrtFileWriter::FileId
  std::string path;      // the final name
  absl::Status status;   // OK: renamed into place
  uint64_t bytes = 0;    // written
  uint64_t removed = 0;  // older files deleted by `keep`
};

class MrtFileWriter {
 public:
  using FileId = uint64_t;
  // `on_done`: once per Close()d file, on the writer thread.
  MrtFileWriter(size_t max_queued_bytes, std::function<void(const FileResult&)> on_done);
  // Finishes what is queued (files not closed yet are removed), then joins the thread.
  ~MrtFileWriter();
  MrtFileWriter(const MrtFileWriter&) = delete;
  MrtFileWriter& operator=(const MrtFileWriter&) = delete;

  // A new file; nothing is created before the thread gets to it. `keep_glob` non-empty:
  // after the rename, only the newest `keep` files matching it (fnmatch, in the file's
  // directory, by modification time) are kept.
  FileId Open(std::string path, std::string keep_glob = {}, int keep = 0);
  // Queues a chunk; false (and the chunk untouched) when the queue is full.
  bool Write(FileId file, wire::Bytes& chunk);
  // Queues the end: commit renames the file into place, !commit removes it.
  void Close(FileId file, bool commit);
  size_t queued_bytes() const;
  size_t max_queued_bytes() const { return max_; }

 private:
  enum class Op { kOpen, kWrite, kClose, kAbort };
  struct Job {
    Op op;
    FileId file;
    wire::Bytes data;
    std::string path, keep_glob;
    int keep = 0;
  };
  void Run();
  void Push(Job job);

  const size_t max_;
  std::function<void(const FileResult&)> on_done_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> jobs_;
  size_t queued_ = 0;
  bool stop_ = false;
  FileId next_id_ = 1;
  std::thread thread_;
};

// Deletes all but the newest `keep` regular files of `dir` whose names match `glob`
// (fnmatch); returns how many it removed. `keep` <= 0: none is removed.
uint64_t RemoveOldFiles(const std::string& dir, const std::string& glob, int keep);

}  // namespace bagd::mrt
