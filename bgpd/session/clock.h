// Time for the session layer as an input (design.md rule 4): a Clock gives the time and
// makes timers. The daemon runs on AsioClock (the io_context's steady clock); tests and the
// session fuzzer use ManualClock, whose Advance() fires what is due, in order, with no sleep.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <utility>

#include "bgpd/session/lifetime.h"

namespace bagd::session {

// A restartable one-shot timer. Stop(), a new Start() or destroying it makes a pending
// expiry a no-op.
class Timer {
 public:
  virtual ~Timer() = default;
  virtual void Start(std::chrono::milliseconds after, std::function<void()> fire) = 0;
  virtual void Stop() = 0;
  virtual bool running() const = 0;
};

class Clock {
 public:
  virtual ~Clock() = default;
  virtual int64_t SteadyMs() const = 0;  // monotonic: timers and the FSM's time stamps
  virtual int64_t WallMs() const = 0;    // Unix time, for what bagctl shows
  virtual std::unique_ptr<Timer> NewTimer() = 0;
};

class AsioClock final : public Clock {
 public:
  explicit AsioClock(boost::asio::io_context& io) : io_(io) {}
  int64_t SteadyMs() const override;
  int64_t WallMs() const override;
  std::unique_ptr<Timer> NewTimer() override;

 private:
  boost::asio::io_context& io_;
};

class ManualClock final : public Clock {
 public:
  explicit ManualClock(int64_t wall_start_ms = 1'700'000'000'000) : wall_start_ms_(wall_start_ms) {}
  ~ManualClock() override;
  int64_t SteadyMs() const override { return now_ms_; }
  int64_t WallMs() const override { return wall_start_ms_ + now_ms_; }
  std::unique_ptr<Timer> NewTimer() override;

  // Moves time on by `ms`, firing every timer due on the way in order of expiry (ties in
  // order of Start). A timer started by a firing one fires too if it is due in the window.
  void Advance(int64_t ms);
  // Time of the next expiry, if any timer runs.
  std::optional<int64_t> NextDueMs() const;
  size_t running_timers() const { return due_.size(); }

 private:
  class ManualTimer;
  friend class ManualTimer;
  int64_t now_ms_ = 0;
  int64_t wall_start_ms_;
  uint64_t sequence_ = 0;
  std::map<std::pair<int64_t, uint64_t>, ManualTimer*> due_;
};

}  // namespace bagd::session
