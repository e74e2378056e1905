#include "bgpd/session/clock.h"

#include <cassert>

namespace bagd::session {

namespace {

// One steady_timer, reused for every Start. The hold timer restarts on each message (a
// million times for a table sent one prefix per UPDATE), each time later than the wait already
// outstanding: that wait is left alone and, when it wakes before the new deadline, it waits
// again for the rest. A Start earlier than the outstanding wait re-arms it at once. So a
// timer still fires at its latest deadline and never before it, with one wait per period
// instead of a cancellation and a new wait (and a completion handler run) per message.
class AsioTimer final : public Timer {
 public:
  explicit AsioTimer(boost::asio::io_context& io) : timer_(io) {}
  ~AsioTimer() override { timer_.cancel(); }

  void Start(std::chrono::milliseconds after, std::function<void()> fire) override {
    running_ = true;
    deadline_ = Clock::now() + after;
    fire_ = std::move(fire);
    if (waiting_ && armed_for_ <= deadline_) return;  // the outstanding wait wakes first
    Arm();
  }
  void Stop() override {
    running_ = false;
    fire_ = nullptr;
    if (waiting_) {
      ++arm_;  // the outstanding wait's completion is stale
      waiting_ = false;
      timer_.cancel();
    }
  }
  bool running() const override { return running_; }

 private:
  using Clock = std::chrono::steady_clock;

  void Arm() {
    const uint64_t arm = ++arm_;  // a completion of an earlier wait, queued already, is stale
    waiting_ = true;
    armed_for_ = deadline_;
    timer_.expires_at(deadline_);
    // The watch guards against the timer being destroyed while the completion is queued.
    timer_.async_wait([this, arm, alive = lifetime_.watch()](const boost::system::error_code& ec) {
      if (alive.expired() || arm != arm_) return;
      waiting_ = false;
      if (ec || !running_) return;
      if (Clock::now() < deadline_) return Arm();  // restarted meanwhile: the rest of the wait
      running_ = false;
      std::function<void()> fire = std::move(fire_);  // it may Start this timer again
      fire_ = nullptr;
      fire();
    });
  }

  boost::asio::steady_timer timer_;
  Clock::time_point deadline_{};   // when it fires (the latest Start's)
  Clock::time_point armed_for_{};  // the expiry of the outstanding wait
  std::function<void()> fire_;
  uint64_t arm_ = 0;
  bool waiting_ = false;  // a wait is outstanding
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
