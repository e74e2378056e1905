// A restartable one-shot timer on the io_context. Stop() or a new Start() makes any pending
// expiry a no-op (a generation counter guards against expiries already queued).
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <functional>

#include "bgpd/session/lifetime.h"

namespace bagd::session {

class Timer {
 public:
  explicit Timer(boost::asio::io_context& io) : timer_(io) {}
  Timer(const Timer&) = delete;
  Timer& operator=(const Timer&) = delete;

  void Start(std::chrono::milliseconds after, std::function<void()> fire) {
    const uint64_t gen = ++generation_;
    running_ = true;
    timer_.expires_after(after);
    timer_.async_wait([this, gen, fire = std::move(fire), alive = lifetime_.watch()](const boost::system::error_code& ec) {
      if (ec || alive.expired() || gen != generation_) return;
      running_ = false;
      fire();
    });
  }
  void Stop() {
    ++generation_;
    running_ = false;
    timer_.cancel();
  }
  bool running() const { return running_; }
  ~Timer() { timer_.cancel(); }

 private:
  boost::asio::steady_timer timer_;
  uint64_t generation_ = 0;
  bool running_ = false;
  Lifetime lifetime_;  // declared last: expires before timer_ is destroyed
};

}  // namespace bagd::session
