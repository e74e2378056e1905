// The sd_notify datagram protocol against a real Unix datagram socket the test binds, as
// systemd's would be; the watchdog on a ManualClock (no sleeps).
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <string>

#include "bgpd/daemon/service_notify.h"

namespace bagd::daemon {
namespace {

// A bound datagram socket: what systemd listens on. `name` starting with '@' is abstract.
class NotifySocket {
 public:
  explicit NotifySocket(std::string name) : name_(std::move(name)) {
    fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    REQUIRE(fd_ >= 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::memcpy(a.sun_path, name_.data(), name_.size());
    if (a.sun_path[0] == '@') a.sun_path[0] = '\0';
    const auto len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + name_.size());
    REQUIRE(bind(fd_, reinterpret_cast<sockaddr*>(&a), len) == 0);
  }
  ~NotifySocket() {
    close(fd_);
    if (name_[0] == '/') std::filesystem::remove(name_);
  }
  // The next datagram, or "" when none is waiting.
  std::string Receive() {
    char buf[4096];
    const ssize_t n = recv(fd_, buf, sizeof buf, 0);
    return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
  }
  const std::string& name() const { return name_; }

 private:
  std::string name_;
  int fd_ = -1;
};

std::string TempSocketPath() {
  return (std::filesystem::temp_directory_path() / ("bagd-notify-" + std::to_string(getpid()) + ".sock")).string();
}

TEST_CASE("ServiceEnvironment: systemd's variables", "[service]") {
  SECTION("not run by systemd") {
    auto e = ParseServiceEnvironment(nullptr, nullptr, nullptr, 100);
    REQUIRE(e.ok());
    CHECK(e->notify_socket.empty());
    CHECK_FALSE(e->watchdog.has_value());
  }
  SECTION("a watchdog for this process") {
    auto e = ParseServiceEnvironment("/run/systemd/notify", "30000000", "100", 100);
    REQUIRE(e.ok());
    CHECK(e->notify_socket == "/run/systemd/notify");
    REQUIRE(e->watchdog.has_value());
    CHECK(e->watchdog->count() == 30000000);
  }
  SECTION("a watchdog without WATCHDOG_PID is ours") {
    auto e = ParseServiceEnvironment("@notify", "5000000", nullptr, 100);
    REQUIRE(e.ok());
    CHECK(e->watchdog.has_value());
  }
  SECTION("another process's watchdog (inherited variables) is not ours") {
    auto e = ParseServiceEnvironment("/run/systemd/notify", "30000000", "99", 100);
    REQUIRE(e.ok());
    CHECK_FALSE(e->watchdog.has_value());
  }
  SECTION("bad values are errors that name the variable") {
    auto a = ParseServiceEnvironment("/run/systemd/notify", "soon", nullptr, 100);
    REQUIRE_FALSE(a.ok());
    CHECK(std::string(a.status().message()).find("WATCHDOG_USEC 'soon'") != std::string::npos);
    auto b = ParseServiceEnvironment("/run/systemd/notify", "0", nullptr, 100);
    CHECK_FALSE(b.ok());
    auto c = ParseServiceEnvironment("relative/path", nullptr, nullptr, 100);
    REQUIRE_FALSE(c.ok());
    CHECK(std::string(c.status().message()).find("NOTIFY_SOCKET 'relative/path'") != std::string::npos);
    auto d = ParseServiceEnvironment("/run/systemd/notify", "1000", "x", 100);
    CHECK_FALSE(d.ok());
    auto e = ParseServiceEnvironment(std::string(200, '/').c_str(), nullptr, nullptr, 100);
    CHECK_FALSE(e.ok());
  }
}

TEST_CASE("ServiceNotifier: READY, RELOADING and STOPPING as datagrams on a path socket", "[service]") {
  NotifySocket systemd(TempSocketPath());
  ServiceNotifier n(ServiceEnvironment{systemd.name(), std::nullopt});
  REQUIRE(n.enabled());
  n.Ready("3 neighbors");
  CHECK(systemd.Receive() == "READY=1\nSTATUS=3 neighbors");
  n.Reloading();
  const std::string reloading = systemd.Receive();
  CHECK(reloading.rfind("RELOADING=1\nMONOTONIC_USEC=", 0) == 0);
  CHECK(reloading.find("\nSTATUS=") != std::string::npos);
  n.Stopping();
  CHECK(systemd.Receive().rfind("STOPPING=1\n", 0) == 0);
  CHECK(systemd.Receive().empty());
}

TEST_CASE("ServiceNotifier: an abstract socket name (@...)", "[service]") {
  NotifySocket systemd("@bagd-notify-test-" + std::to_string(getpid()));
  ServiceNotifier n(ServiceEnvironment{systemd.name(), std::nullopt});
  REQUIRE(n.Notify("STATUS=hello").ok());
  CHECK(systemd.Receive() == "STATUS=hello");
}

TEST_CASE("ServiceNotifier: no service manager, no socket: nothing sent, nothing fails", "[service]") {
  ServiceNotifier off(ServiceEnvironment{});
  CHECK_FALSE(off.enabled());
  CHECK(off.Notify("READY=1").ok());
  session::ManualClock clock;
  off.StartWatchdog(clock);
  CHECK(clock.running_timers() == 0);

  // A socket that is gone (systemd restarted): an error from Notify, and the daemon goes on.
  ServiceNotifier gone(ServiceEnvironment{TempSocketPath() + ".missing", std::nullopt});
  CHECK_FALSE(gone.Notify("READY=1").ok());
  gone.Ready("x");  // logged once, not thrown
  gone.Ready("x");
}

TEST_CASE("ServiceNotifier: WATCHDOG=1 at start and every half of WATCHDOG_USEC, on the event clock", "[service]") {
  NotifySocket systemd(TempSocketPath());
  session::ManualClock clock;
  {
    ServiceNotifier n(ServiceEnvironment{systemd.name(), std::chrono::microseconds(2'000'000)});
    n.StartWatchdog(clock);
    CHECK(systemd.Receive() == "WATCHDOG=1");
    clock.Advance(999);
    CHECK(systemd.Receive().empty());
    clock.Advance(1);
    CHECK(systemd.Receive() == "WATCHDOG=1");
    clock.Advance(5000);  // five more periods
    int pings = 0;
    while (systemd.Receive() == "WATCHDOG=1") ++pings;
    CHECK(pings == 5);
    CHECK(n.watchdog_pings() == 7);
  }
  // The notifier is gone: its timer with it, nothing fires.
  CHECK(clock.running_timers() == 0);
  clock.Advance(5000);
  CHECK(systemd.Receive().empty());
}

}  // namespace
}  // namespace bagd::daemon
