// The systemd service protocol (sd_notify(3), without libsystemd: it is one datagram per
// message). With `Type=notify` systemd passes $NOTIFY_SOCKET, a Unix datagram socket (a path,
// or "@name" in the abstract namespace), and reads newline-separated KEY=VALUE assignments
// from it: READY=1 once bagd serves (listeners and control socket up), RELOADING=1 and READY=1
// around a SIGHUP, STOPPING=1 at shutdown, STATUS=... for `systemctl status`. With
// `WatchdogSec=` it also passes $WATCHDOG_USEC (and $WATCHDOG_PID): bagd then sends
// WATCHDOG=1 from the event thread every half of that, so a stuck event loop gets the
// service restarted. Outside systemd (no $NOTIFY_SOCKET) every call does nothing.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include "absl/strings/string_view.h"

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "bgpd/session/clock.h"

namespace bagd::daemon {

// What the environment says (pure: the values are passed in, so it can be tested).
struct ServiceEnvironment {
  std::string notify_socket;                           // empty: not run by systemd's notify
  std::optional<std::chrono::microseconds> watchdog;  // WATCHDOG_USEC, for this process
};
// `watchdog_pid` (WATCHDOG_PID, may be null) names the process the watchdog is for: another
// one's (a child inherited the variables) means no watchdog here. A WATCHDOG_USEC that is not
// a positive number is an error, with the variable named.
absl::StatusOr<ServiceEnvironment> ParseServiceEnvironment(const char* notify_socket, const char* watchdog_usec,
                                                           const char* watchdog_pid, pid_t self);

class ServiceNotifier {
 public:
  // Reads the environment; `unset` (true by default, as sd_notify's unset_environment) removes
  // the variables so programs bagd starts do not inherit them.
  static absl::StatusOr<std::unique_ptr<ServiceNotifier>> FromEnvironment(bool unset = true);
  explicit ServiceNotifier(ServiceEnvironment env);
  ~ServiceNotifier();
  ServiceNotifier(const ServiceNotifier&) = delete;
  ServiceNotifier& operator=(const ServiceNotifier&) = delete;

  bool enabled() const { return !env_.notify_socket.empty(); }
  const std::optional<std::chrono::microseconds>& watchdog() const { return env_.watchdog; }

  // Sends `state` ("READY=1\nSTATUS=..."): one datagram. Not enabled: OK, nothing sent.
  absl::Status Notify(absl::string_view state);
  // The usual messages. Failures are logged once (a service manager that went away must not
  // fill the log), never fatal.
  void Ready(absl::string_view status);
  void Reloading();  // RELOADING=1 with MONOTONIC_USEC (systemd 253's notify-reload wants it)
  void Stopping();
  void Status(absl::string_view status);

  // WATCHDOG=1 now and every half of WATCHDOG_USEC on `clock` (the event thread's), until
  // this object goes. No watchdog configured: nothing.
  void StartWatchdog(session::Clock& clock);
  uint64_t watchdog_pings() const { return pings_; }

 private:
  void Send(absl::string_view state);
  void Ping();

  ServiceEnvironment env_;
  int fd_ = -1;
  bool warned_ = false;
  uint64_t pings_ = 0;
  std::unique_ptr<session::Timer> watchdog_timer_;
  std::chrono::milliseconds watchdog_period_{0};
};

}  // namespace bagd::daemon
