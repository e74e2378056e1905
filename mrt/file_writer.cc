#include "mrt/file_writer.h"

#include <fcntl.h>
#include <fnmatch.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <unordered_map>
#include <vector>

#include "absl/strings/str_format.h"

namespace bagd::mrt {

MrtFileWriter::MrtFileWriter(size_t max_queued_bytes, std::function<void(const FileResult&)> on_done)
    : max_(max_queued_bytes), on_done_(std::move(on_done)) {
  thread_ = std::thread([this] { Run(); });
}

MrtFileWriter::~MrtFileWriter() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

MrtFileWriter::FileId MrtFileWriter::Open(std::string path, std::string keep_glob, int keep) {
  FileId id;
  {
    std::lock_guard<std::mutex> lock(mu_);
    id = next_id_++;
  }
  Push(Job{Op::kOpen, id, {}, std::move(path), std::move(keep_glob), keep});
  return id;
}

bool MrtFileWriter::Write(FileId file, wire::Bytes& chunk) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (queued_ + chunk.size() > max_) return false;
    queued_ += chunk.size();
    jobs_.push_back(Job{Op::kWrite, file, std::move(chunk), {}, {}, 0});
  }
  chunk.clear();
  cv_.notify_one();
  return true;
}

void MrtFileWriter::Close(FileId file, bool commit) { Push(Job{commit ? Op::kClose : Op::kAbort, file, {}, {}, {}, 0}); }

size_t MrtFileWriter::queued_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return queued_;
}

void MrtFileWriter::Push(Job job) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    jobs_.push_back(std::move(job));
  }
  cv_.notify_one();
}

namespace {

struct OpenFile {
  uint64_t id = 0;
  int fd = -1;
  std::string path, tmp, keep_glob;
  int keep = 0;
  uint64_t bytes = 0;
  absl::Status status;  // the first error; later writes are skipped
};

absl::Status Errno(const char* what, const std::string& path) {
  return absl::InternalError(absl::StrFormat("%s %s: %s", what, path, std::strerror(errno)));
}

void WriteAll(OpenFile& f, const wire::Bytes& data) {
  if (!f.status.ok() || f.fd < 0) return;
  size_t off = 0;
  while (off < data.size()) {
    const ssize_t n = ::write(f.fd, data.data() + off, data.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      f.status = Errno("cannot write", f.tmp);
      return;
    }
    off += static_cast<size_t>(n);
    f.bytes += static_cast<uint64_t>(n);
  }
}

}  // namespace

uint64_t RemoveOldFiles(const std::string& dir, const std::string& glob, int keep) {
  if (keep <= 0) return 0;
  std::error_code ec;
  std::vector<std::pair<std::filesystem::file_time_type, std::filesystem::path>> files;
  for (const auto& e : std::filesystem::directory_iterator(dir.empty() ? "." : dir, ec)) {
    if (!e.is_regular_file(ec)) continue;
    const std::string name = e.path().filename().string();
    if (::fnmatch(glob.c_str(), name.c_str(), 0) != 0) continue;
    files.emplace_back(e.last_write_time(ec), e.path());
  }
  if (files.size() <= static_cast<size_t>(keep)) return 0;
  std::sort(files.begin(), files.end());  // oldest first; names break ties
  uint64_t removed = 0;
  for (size_t i = 0; i + keep < files.size(); ++i) {
    if (std::filesystem::remove(files[i].second, ec)) ++removed;
  }
  return removed;
}

void MrtFileWriter::Run() {
  std::unordered_map<FileId, OpenFile> files;
  auto finish = [&](OpenFile& f, bool commit) {
    FileResult r;
    r.file = f.id;
    r.path = f.path;
    r.bytes = f.bytes;
    if (f.fd >= 0) {
      if (commit && f.status.ok() && ::fsync(f.fd) != 0) f.status = Errno("cannot sync", f.tmp);
      if (::close(f.fd) != 0 && f.status.ok()) f.status = Errno("cannot close", f.tmp);
    }
    if (!commit && f.status.ok()) f.status = absl::CancelledError(absl::StrFormat("%s: abandoned", f.path));
    if (f.status.ok() && ::rename(f.tmp.c_str(), f.path.c_str()) != 0) f.status = Errno("cannot rename to", f.path);
    if (!f.status.ok()) ::unlink(f.tmp.c_str());
    r.status = f.status;
    if (r.status.ok() && !f.keep_glob.empty()) {
      const std::filesystem::path p(f.path);
      r.removed = RemoveOldFiles(p.parent_path().string(), f.keep_glob, f.keep);
    }
    if (on_done_) on_done_(r);
  };
  for (;;) {
    Job job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stop_ || !jobs_.empty(); });
      if (jobs_.empty()) break;  // stop_ and nothing left
      job = std::move(jobs_.front());
      jobs_.pop_front();
      if (job.op == Op::kWrite) queued_ -= job.data.size();
    }
    switch (job.op) {
      case Op::kOpen: {
        OpenFile f;
        f.id = job.file;
        f.path = std::move(job.path);
        f.tmp = f.path + ".tmp";
        f.keep_glob = std::move(job.keep_glob);
        f.keep = job.keep;
        f.fd = ::open(f.tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (f.fd < 0) f.status = Errno("cannot create", f.tmp);
        files.emplace(job.file, std::move(f));
        break;
      }
      case Op::kWrite:
        if (auto it = files.find(job.file); it != files.end()) WriteAll(it->second, job.data);
        break;
      case Op::kClose:
      case Op::kAbort:
        if (auto it = files.find(job.file); it != files.end()) {
          finish(it->second, job.op == Op::kClose);
          files.erase(it);
        }
        break;
    }
  }
  for (auto& [id, f] : files) finish(f, false);  // stopped before their Close
}

}  // namespace bagd::mrt
