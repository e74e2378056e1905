#include "bgpd/session/clock.h"

#include <cassert>

namespace bagd::session {

namespace {

// One steady_timer, reused for every Start (the hold timer restarts on each message).
class AsioTimer final : public Timer {
 public:
  explicit AsioTimer(boost::asio::io_context& io) : timer_(io) {}
  ~AsioTimer() override { timer_.cancel(); }

  void Start(std::chrono::milliseconds after, std::function<void()> fire) override {
    const uint64_t gen = ++generation_;
    running_ = true;
    timer_.expires_after(after);
    // The generation guards against an expiry already queued when Stop() or a new Start()
    // ran; the watch against the timer being destroyed meanwhile.
    timer_.async_wait([this, gen, fire = std::move(fire), alive = lifetime_.watch()](const boost::system::error_code& ec) {
      if (ec || alive.expired() || gen != generation_) return;
      running_ = false;
      fire();
    });
  }
  void Stop() override {
    ++generation_;
    running_ = false;
    timer_.cancel();
  }
  bool running() const override { return running_; }

 private:
  boost::asio::steady_timer timer_;
  uint64_t generation_ = 0;
  bool running_ = false;
  Lifetime lifetime_;  // declared last: expires before timer_ is destroyed
};

int64_t Ms(std::chrono::nanoseconds d) { return std::chrono::duration_cast<std::chrono::milliseconds>(d).count(); }

}  // namespace

int64_t AsioClock::SteadyMs() const { return Ms(std::chrono::steady_clock::now().time_since_epoch()); }
int64_t AsioClock::WallMs() const { return Ms(std::chrono::system_clock::now().time_since_epoch()); }
std::unique_ptr<Timer> AsioClock::NewTimer() { return std::make_unique<AsioTimer>(io_); }

class ManualClock::ManualTimer final : public Timer {
 public:
  explicit ManualTimer(ManualClock& clock) : clock_(clock) {}
  ~ManualTimer() override { Stop(); }

  void Start(std::chrono::milliseconds after, std::function<void()> fire) override {
    Stop();
    fire_ = std::move(fire);
    key_ = {clock_.now_ms_ + after.count(), ++clock_.sequence_};
    clock_.due_.emplace(key_, this);
    running_ = true;
  }
  void Stop() override {
    if (!running_) return;
    clock_.due_.erase(key_);
    running_ = false;
  }
  bool running() const override { return running_; }

 private:
  friend class ManualClock;
  ManualClock& clock_;
  std::function<void()> fire_;
  std::pair<int64_t, uint64_t> key_{};
  bool running_ = false;
};

ManualClock::~ManualClock() {
  // Timers must not outlive their clock; a leftover entry is a test bug.
  assert(due_.empty());
}

std::unique_ptr<Timer> ManualClock::NewTimer() { return std::make_unique<ManualTimer>(*this); }

std::optional<int64_t> ManualClock::NextDueMs() const {
  if (due_.empty()) return std::nullopt;
  return due_.begin()->first.first;
}

void ManualClock::Advance(int64_t ms) {
  const int64_t until = now_ms_ + ms;
  while (!due_.empty() && due_.begin()->first.first <= until) {
    auto it = due_.begin();
    ManualTimer* t = it->second;
    now_ms_ = std::max(now_ms_, it->first.first);
    due_.erase(it);
    t->running_ = false;
    // Moved out first: the callback may restart (or destroy) the timer.
    std::function<void()> fire = std::move(t->fire_);
    fire();
  }
  now_ms_ = until;
}

}  // namespace bagd::session
