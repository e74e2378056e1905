// Interfaces as the kernel sees them, for live capacity: a dump at start, then every
// RTM_NEWLINK / RTM_DELLINK; and an interface's speed from ethtool, asked by the owner for
// the members it cares about. The owner polls fd() and calls Read() when it is readable.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "fib_sync/capacity.h"

namespace bagd::fib {

class LinkWatcher {
 public:
  // `netns`: open the socket in /run/netns/NAME (tests); empty: ours.
  static absl::StatusOr<std::unique_ptr<LinkWatcher>> Open(const std::string& netns = "");
  ~LinkWatcher();

  using Callback = std::function<void(const LinkState& link, bool deleted)>;
  // Every link now (LinkState.speed_bps left 0: see Speed()).
  absl::Status Dump(const Callback& cb);
  int fd() const { return fd_; }
  // Every pending notification. A lost notification (ENOBUFS) is answered with a new dump.
  void Read(const Callback& cb);
  // The interface's speed in bits per second (ethtool), 0 when it reports none.
  double Speed(const std::string& name) const;

 private:
  LinkWatcher() = default;
  int fd_ = -1;        // notifications
  int query_fd_ = -1;  // dumps
  int ioctl_fd_ = -1;  // ethtool, in the same namespace
  uint32_t seq_ = 1;
};

}  // namespace bagd::fib
