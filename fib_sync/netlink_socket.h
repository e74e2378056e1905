// The rtnetlink socket plumbing the kernel backend, the link watcher and the APPL_DB backend's
// interface names share: opening a NETLINK_ROUTE socket (extended acks, strict dump checks,
// big buffers, notification groups), optionally inside a named network namespace, a
// request/answer loop, and the kernel's route lookup towards a gateway.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <string>

#include "absl/status/status.h"
#include "fib_sync/netlink/messages.h"

namespace bagd::fib {

// IFF_LOWER_UP (carrier): <linux/if.h> has it, but clashes with glibc's <net/if.h>.
inline constexpr uint32_t kIffLowerUp = 0x10000;

// `what: strerror(err)` as an Internal status.
absl::Status Errno(const std::string& what, int err);
// A kernel refusal as a Status a network engineer can act on: errno text and extack.
absl::Status KernelError(const netlink::ErrorMsg& e);

// Runs `fn` inside network namespace `name` (/run/netns/NAME), then returns to ours;
// an empty name runs it here. Sockets opened in `fn` stay in that namespace.
absl::Status InNamespace(const std::string& name, const std::function<void()>& fn);

// A NETLINK_ROUTE socket with NETLINK_EXT_ACK, NETLINK_CAP_ACK and NETLINK_GET_STRICT_CHK,
// `buffer` bytes of send and receive buffer (forced as root), subscribed to `groups`
// (RTNLGRP_*; then non-blocking). -1 with errno on failure.
int OpenRouteSocket(int buffer, std::initializer_list<int> groups = {});

// Sends `request` to the kernel on `fd`.
absl::Status SendToKernel(int fd, const netlink::Bytes& request);
// Reads answers on `fd`, calling `each` per message until it returns true.
absl::Status ReceiveUntil(int fd, const std::function<bool(netlink::Message&)>& each);
// Sends a dump or a single request with sequence number `seq` and returns its answers (the
// final ack or NLMSG_DONE excluded); a refusal is the kernel's error.
absl::StatusOr<std::vector<netlink::Message>> Request(int fd, const netlink::Bytes& request, uint32_t seq);

// The kernel's own route lookup for `gateway` (RTM_GETROUTE, sequence number `seq`): the
// first route of its answer with an outgoing interface (oif != 0), which says the interface
// that reaches the gateway. Unavailable "no route to gateway G: ..." when the kernel refuses
// the lookup, "no interface reaches gateway G" when no route of the answer has an interface.
absl::StatusOr<netlink::RouteMsg> RouteTowards(int fd, uint32_t seq, const net::IpAddress& gateway);

}  // namespace bagd::fib
