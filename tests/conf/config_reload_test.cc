// conf/config_reload.h and the regular-file rule of LoadConfigFile: a configuration that is
// a FIFO (`--config /dev/stdin`, `<(...)`) is refused at once, never waited for, and a reload
// runs off the calling (event) thread.
#include "conf/config_reload.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <deque>
#include <future>
#include <sstream>
#include <thread>

#include "tests/conf/conf_test_support.h"

using namespace bagd::conf;
using namespace bagd::conf::testing;
using Catch::Matchers::Contains;
using namespace std::chrono_literals;

namespace {

// Opens `fifo` for writing and closes it: a reader blocked in open() or read() of it then
// returns (EOF). Keeps a test that fails from hanging for ever.
void UnblockFifoReader(const std::string& fifo) {
  for (int i = 0; i < 100; ++i) {
    const int fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
    if (fd >= 0) {
      ::close(fd);
      return;
    }
    std::this_thread::sleep_for(10ms);  // no reader yet (ENXIO): it may not have opened it yet
  }
}

// A stand-in for the event loop: closures posted from the worker, run when the test says.
class PostQueue {
 public:
  void Post(std::function<void()> f) {
    {
      std::lock_guard lock(mu_);
      queue_.push_back(std::move(f));
    }
    cv_.notify_all();
  }
  // Runs the first posted closure; false if none came within `timeout`.
  bool RunOne(std::chrono::milliseconds timeout) {
    std::function<void()> f;
    {
      std::unique_lock lock(mu_);
      if (!cv_.wait_for(lock, timeout, [&] { return !queue_.empty(); })) return false;
      f = std::move(queue_.front());
      queue_.pop_front();
    }
    f();
    return true;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
};

}  // namespace

TEST_CASE("a FIFO as the configuration is refused at once, with the reason", "[conf][file][fifo]") {
  TempDir dir;
  const std::string fifo = dir.path() + "/bagd.textproto";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  // Nobody writes to it: open() without O_NONBLOCK would wait for ever.
  auto loading = std::async(std::launch::async, [&] { return LoadConfigFile(fifo); });
  const bool returned = loading.wait_for(2s) == std::future_status::ready;
  if (!returned) UnblockFifoReader(fifo);
  REQUIRE(returned);
  const LoadedConfig loaded = loading.get();
  REQUIRE(loaded.errors.size() == 1);
  CHECK(loaded.errors[0].line == 0);
  CHECK_THAT(loaded.errors[0].ToString(), Contains(fifo + ": cannot read configuration: it is a FIFO"));
  CHECK_THAT(loaded.errors[0].message, Contains("not a regular file"));
}

TEST_CASE("CheckConfig (bagd --check) still reads a configuration from a pipe", "[conf][file][fifo]") {
  TempDir dir;
  const std::string fifo = dir.path() + "/generated.textproto";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  std::thread writer([&] {
    const int fd = ::open(fifo.c_str(), O_WRONLY);
    const std::string text = WithRouter("neighbors { address: \"192.0.2.2\" remote_as: 65002 default_import: DEFAULT_ACTION_ACCEPT default_export: DEFAULT_ACTION_ACCEPT }\n");
    CHECK(::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()));
    ::close(fd);
  });
  std::ostringstream out;
  CHECK(CheckConfig(fifo, out) == 0);
  writer.join();
  CHECK(out.str() == fifo + ": configuration OK (1 neighbor)\n");
}

TEST_CASE("ConfigReloader: loads on its own thread and posts the result", "[conf][reload]") {
  TempDir dir;
  PostQueue events;
  std::vector<LoadedConfig> results;
  std::vector<std::thread::id> applied_on;

  SECTION("a regular file: the complete configuration") {
    const std::string path = dir.Write("bagd.textproto", WithRouter("neighbors { address: \"192.0.2.2\" remote_as: 65002 }\n"));
    ConfigReloader reloader(path, [&](std::function<void()> f) { events.Post(std::move(f)); },
                            [&](LoadedConfig c) {
                              applied_on.push_back(std::this_thread::get_id());
                              results.push_back(std::move(c));
                            });
    reloader.Request();
    REQUIRE(events.RunOne(5s));
    REQUIRE(results.size() == 1);
    CHECK(results[0].ok());
    CHECK(results[0].config.neighbors_size() == 1);
    CHECK(applied_on[0] == std::this_thread::get_id());  // applied where the closures run
  }

  SECTION("a FIFO nobody writes to: Request returns at once, the refusal arrives") {
    const std::string fifo = dir.path() + "/bagd.textproto";
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    ConfigReloader reloader(fifo, [&](std::function<void()> f) { events.Post(std::move(f)); },
                            [&](LoadedConfig c) { results.push_back(std::move(c)); });
    const auto start = std::chrono::steady_clock::now();
    reloader.Request();
    CHECK(std::chrono::steady_clock::now() - start < 100ms);
    const bool answered = events.RunOne(2s);
    if (!answered) UnblockFifoReader(fifo);  // the worker is stuck: let the destructor join
    REQUIRE(answered);
    REQUIRE(results.size() == 1);
    REQUIRE(results[0].errors.size() == 1);
    CHECK_THAT(results[0].errors[0].message, Contains("it is a FIFO"));
  }

  SECTION("a burst of requests is coalesced, the last contents win") {
    const std::string path = dir.Write("bagd.textproto", WithRouter(""));
    ConfigReloader reloader(path, [&](std::function<void()> f) { events.Post(std::move(f)); },
                            [&](LoadedConfig c) { results.push_back(std::move(c)); });
    for (int i = 0; i < 50; ++i) reloader.Request();
    dir.Write("bagd.textproto", WithRouter("neighbors { address: \"192.0.2.2\" remote_as: 65002 }\n"));
    reloader.Request();
    // At least one load, at most one per request; the last one sees the new file.
    REQUIRE(events.RunOne(5s));
    while (events.RunOne(500ms)) {
    }
    CHECK(results.size() >= 1);
    CHECK(results.size() <= 51);
    CHECK(reloader.loads_started() == results.size());
    REQUIRE(results.back().ok());
    CHECK(results.back().config.neighbors_size() == 1);
  }
}
