#include "fib_sync/sonic/route_persister.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "fib_sync/sonic/appldb_schema.h"

namespace bagd::fib::sonic {

RoutePersister::RoutePersister(RedisAddress address, std::chrono::milliseconds io_timeout, std::string protocol)
    : address_(std::move(address)), io_timeout_(io_timeout), protocol_(std::move(protocol)) {
  thread_ = std::thread([this] { Run(); });
}

RoutePersister::~RoutePersister() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
  }
  work_.notify_all();
  thread_.join();
}

void RoutePersister::Push(std::vector<Entry> batch) {
  if (batch.empty()) return;
  {
    std::lock_guard<std::mutex> l(mu_);
    queue_.push_back(std::move(batch));
  }
  work_.notify_one();
}

void RoutePersister::Hold() {
  std::lock_guard<std::mutex> l(mu_);
  ++held_;
}

void RoutePersister::Release() {
  {
    std::lock_guard<std::mutex> l(mu_);
    --held_;
  }
  work_.notify_all();
}

void RoutePersister::WaitIdle() {
  std::unique_lock<std::mutex> l(mu_);
  idle_.wait(l, [this] { return queue_.empty() && !busy_; });
}

void RoutePersister::Run() {
  // Background work: when CPUs are short, orchagent's path (bagd's event thread) goes first
  // and the persistence write catches up after (as nice 10; Linux nices threads one by one).
  setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), 10);
  std::unique_lock<std::mutex> l(mu_);
  for (;;) {
    work_.wait(l, [this] { return stop_ || (!queue_.empty() && held_ == 0); });
    if (queue_.empty()) return;  // stopping, nothing left
    std::vector<Entry> batch = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    l.unlock();
    Write(batch);
    l.lock();
    busy_ = false;
    if (queue_.empty()) idle_.notify_all();
  }
}

void RoutePersister::Write(const std::vector<Entry>& batch) {
  if (conn_ == nullptr || !conn_->ok()) {
    conn_.reset();
    auto c = RedisConnection::Connect(address_, io_timeout_);
    if (c.ok()) {
      auto r = (*c)->Command({"CLIENT", "SETNAME", "bagd-persist"});
      if (r.ok()) conn_ = std::move(*c);
    }
    if (conn_ == nullptr) {
      failed_ += batch.size();
      lost_ = true;
      return;
    }
  }
  const std::string main = absl::StrCat(kRouteTable, ":");
  constexpr size_t kRound = 1024;  // commands sent together, then their replies read
  std::string resp;
  for (size_t r0 = 0; r0 < batch.size(); r0 += kRound) {
    const size_t r1 = std::min(batch.size(), r0 + kRound);
    resp.clear();
    for (size_t k = r0; k < r1; ++k) {
      const Entry& e = batch[k];
      const std::string key = main + e.key;
      if (e.group.empty()) {
        AppendResp(resp, {"DEL", key});
      } else {
        AppendResp(resp, {"HSET", key}, RouteFields(e.group, protocol_));
      }
    }
    auto r = conn_->PipelineFormatted(resp, r1 - r0);
    for (const RedisReply& x : r.replies) ++(x.is_error() ? failed_ : written_);
    if (!r.status.ok()) {
      failed_ += batch.size() - r0 - r.replies.size();
      lost_ = true;
      conn_.reset();
      return;
    }
    if (r.replies.size() != r1 - r0) lost_ = true;
  }
}

}  // namespace bagd::fib::sonic
