// The daemon's Timer on Asio (AsioClock): a restart later than the outstanding wait keeps that
// wait and waits again for the rest (the hold timer restarts on every UPDATE), so these run on
// a real io_context with short real durations: it is the real clock that is under test. Every
// check is on the order of events and on lower bounds of the time, never on an upper bound a
// loaded machine could miss.
#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>
#include <chrono>

#include "bgpd/session/clock.h"

namespace bagd::session {
namespace {

using std::chrono::milliseconds;
using Steady = std::chrono::steady_clock;

TEST_CASE("AsioTimer: restarted later, it fires once, at the latest deadline", "[session][timer]") {
  boost::asio::io_context io;
  AsioClock clock(io);
  auto timer = clock.NewTimer();
  auto restarter = clock.NewTimer();
  const auto t0 = Steady::now();
  int fired = 0, stale = 0;
  Steady::time_point fired_at;
  timer->Start(milliseconds(30), [&] { ++stale; });
  // Restarted at ~10, 20 and 30 ms, each time for 40 ms from then: due at ~70 ms.
  int restarts = 0;
  std::function<void()> restart = [&] {
    timer->Start(milliseconds(40), [&] {
      ++fired;
      fired_at = Steady::now();
    });
    if (++restarts < 3) restarter->Start(milliseconds(10), restart);
  };
  restarter->Start(milliseconds(10), restart);
  io.run_for(std::chrono::seconds(2));
  CHECK(stale == 0);
  CHECK(fired == 1);
  CHECK(restarts == 3);
  CHECK(fired_at - t0 >= milliseconds(70));
  CHECK_FALSE(timer->running());
}

TEST_CASE("AsioTimer: restarted earlier, it fires at the earlier deadline", "[session][timer]") {
  boost::asio::io_context io;
  AsioClock clock(io);
  auto timer = clock.NewTimer();
  int late = 0, early = 0;
  timer->Start(std::chrono::hours(1), [&] { ++late; });
  timer->Start(milliseconds(5), [&] { ++early; });
  CHECK(timer->running());
  io.run_for(std::chrono::seconds(1));
  CHECK(early == 1);
  CHECK(late == 0);
  CHECK_FALSE(timer->running());
}

TEST_CASE("AsioTimer: stopped, it never fires, started again from its own handler, it fires again",
          "[session][timer]") {
  boost::asio::io_context io;
  AsioClock clock(io);
  auto timer = clock.NewTimer();
  int stopped = 0;
  timer->Start(milliseconds(5), [&] { ++stopped; });
  timer->Stop();
  CHECK_FALSE(timer->running());
  int ticks = 0;
  std::function<void()> tick = [&] {
    if (++ticks < 3) timer->Start(milliseconds(2), tick);
  };
  auto other = clock.NewTimer();
  other->Start(milliseconds(10), [&] { timer->Start(milliseconds(2), tick); });
  io.run_for(std::chrono::seconds(1));
  CHECK(stopped == 0);
  CHECK(ticks == 3);
  CHECK_FALSE(timer->running());
}

TEST_CASE("AsioTimer: destroyed with a wait outstanding, its handler is never called", "[session][timer]") {
  boost::asio::io_context io;
  AsioClock clock(io);
  int fired = 0;
  {
    auto timer = clock.NewTimer();
    timer->Start(milliseconds(1), [&] { ++fired; });
    timer->Start(milliseconds(5), [&] { ++fired; });  // later: the first wait stays outstanding
  }
  io.run_for(milliseconds(50));
  CHECK(fired == 0);
}

}  // namespace
}  // namespace bagd::session
