#include "bgpd/daemon/service_notify.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "bgpd/session/log.h"

namespace bagd::daemon {

absl::StatusOr<ServiceEnvironment> ParseServiceEnvironment(const char* notify_socket, const char* watchdog_usec,
                                                           const char* watchdog_pid, pid_t self) {
  ServiceEnvironment env;
  if (notify_socket != nullptr) env.notify_socket = notify_socket;
  if (!env.notify_socket.empty() && env.notify_socket[0] != '/' && env.notify_socket[0] != '@') {
    return absl::InvalidArgumentError(
        absl::StrCat("NOTIFY_SOCKET '", env.notify_socket, "' is neither a path nor an abstract socket name (@...)"));
  }
  if (env.notify_socket.size() >= sizeof(sockaddr_un{}.sun_path)) {
    return absl::InvalidArgumentError(absl::StrCat("NOTIFY_SOCKET is longer than a Unix socket address can be (",
                                                   sizeof(sockaddr_un{}.sun_path) - 1, " bytes)"));
  }
  if (watchdog_usec == nullptr || *watchdog_usec == '\0') return env;
  if (watchdog_pid != nullptr && *watchdog_pid != '\0') {
    int64_t pid = 0;
    if (!absl::SimpleAtoi(watchdog_pid, &pid) || pid <= 0) {
      return absl::InvalidArgumentError(absl::StrCat("WATCHDOG_PID '", watchdog_pid, "' is not a process id"));
    }
    if (pid != self) return env;  // the watchdog is another process's
  }
  uint64_t usec = 0;
  if (!absl::SimpleAtoi(watchdog_usec, &usec) || usec == 0) {
    return absl::InvalidArgumentError(absl::StrCat("WATCHDOG_USEC '", watchdog_usec, "' is not a positive number of microseconds"));
  }
  env.watchdog = std::chrono::microseconds(usec);
  return env;
}

absl::StatusOr<std::unique_ptr<ServiceNotifier>> ServiceNotifier::FromEnvironment(bool unset) {
  auto env = ParseServiceEnvironment(std::getenv("NOTIFY_SOCKET"), std::getenv("WATCHDOG_USEC"),
                                     std::getenv("WATCHDOG_PID"), getpid());
  if (unset) {
    unsetenv("NOTIFY_SOCKET");
    unsetenv("WATCHDOG_USEC");
    unsetenv("WATCHDOG_PID");
  }
  if (!env.ok()) return env.status();
  return std::make_unique<ServiceNotifier>(std::move(*env));
}

ServiceNotifier::ServiceNotifier(ServiceEnvironment env) : env_(std::move(env)) {
  if (enabled()) fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
}

ServiceNotifier::~ServiceNotifier() {
  watchdog_timer_.reset();
  if (fd_ >= 0) close(fd_);
}

absl::Status ServiceNotifier::Notify(absl::string_view state) {
  if (!enabled()) return absl::OkStatus();
  if (fd_ < 0) return absl::UnavailableError(absl::StrCat("socket: ", std::strerror(errno)));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, env_.notify_socket.data(), env_.notify_socket.size());
  if (addr.sun_path[0] == '@') addr.sun_path[0] = '\0';  // the abstract namespace
  const socklen_t len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + env_.notify_socket.size());
  const ssize_t n = sendto(fd_, state.data(), state.size(), MSG_NOSIGNAL, reinterpret_cast<const sockaddr*>(&addr), len);
  if (n < 0) return absl::UnavailableError(absl::StrCat("NOTIFY_SOCKET ", env_.notify_socket, ": ", std::strerror(errno)));
  return absl::OkStatus();
}

void ServiceNotifier::Send(absl::string_view state) {
  if (auto st = Notify(state); !st.ok()) {
    if (!warned_) log::Warning("service manager: %s (further failures are not logged)", st.message());
    warned_ = true;
  }
}

void ServiceNotifier::Ready(absl::string_view status) { Send(absl::StrCat("READY=1\nSTATUS=", status)); }

void ServiceNotifier::Reloading() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  const uint64_t usec = static_cast<uint64_t>(ts.tv_sec) * 1000000 + static_cast<uint64_t>(ts.tv_nsec) / 1000;
  Send(absl::StrCat("RELOADING=1\nMONOTONIC_USEC=", usec, "\nSTATUS=reloading the configuration"));
}

void ServiceNotifier::Stopping() { Send("STOPPING=1\nSTATUS=sending Cease to every neighbor"); }

void ServiceNotifier::Status(absl::string_view status) { Send(absl::StrCat("STATUS=", status)); }

void ServiceNotifier::StartWatchdog(session::Clock& clock) {
  if (!enabled() || !env_.watchdog) return;
  // Half the timeout, as sd_watchdog_enabled(3) advises; at least a millisecond.
  watchdog_period_ = std::max(std::chrono::milliseconds(1),
                              std::chrono::duration_cast<std::chrono::milliseconds>(*env_.watchdog / 2));
  watchdog_timer_ = clock.NewTimer();
  log::Info("service manager: watchdog every %dms (WatchdogSec %dms)", watchdog_period_.count(),
            std::chrono::duration_cast<std::chrono::milliseconds>(*env_.watchdog).count());
  Ping();
}

void ServiceNotifier::Ping() {
  Send("WATCHDOG=1");
  ++pings_;
  // The timer belongs to this object: destroying it makes a pending expiry a no-op.
  watchdog_timer_->Start(watchdog_period_, [this] { Ping(); });
}

}  // namespace bagd::daemon
