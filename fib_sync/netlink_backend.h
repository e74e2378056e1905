// The Linux kernel as a FIB backend, over raw rtnetlink (fib_sync/netlink/ encodes and
// decodes): one nexthop object per gateway, nexthop groups with 16-bit weights (8-bit on
// kernels before 6.12, detected at start), hash-threshold or resilient, and routes with
// RTA_NH_ID in one table, all marked with one protocol number that says bagd owns them.
//
// Batching: many requests per sendmsg (within the socket buffer), an ack asked only of the
// last one as a barrier, errors matched to operations by sequence number, with the kernel's
// extended-ack text. A reweight is one RTM_NEWNEXTHOP with NLM_F_REPLACE; routes are not
// touched. Notifications (nexthop deleted on link loss, links coming up, lost messages)
// arrive on a second socket: the owner polls event_fd() and calls ReadEvents().
#pragma once

#include <map>
#include <memory>
#include <string>

#include "fib_sync/fib_backend.h"
#include "fib_sync/netlink/messages.h"

namespace bagd::fib {

struct NetlinkOptions {
  uint8_t protocol = netlink::kProtocolBgp;  // marks what bagd owns (FRR's zebra uses 186 too)
  uint32_t table = netlink::kTableMain;
  bool resilient = false;  // resilient groups: a reweight moves as few flows as possible
  uint16_t buckets = 128;
  uint32_t idle_timer_s = 120;
  uint32_t unbalanced_timer_s = 0;
  int socket_buffer = 32 << 20;  // SO_SNDBUF/SO_RCVBUF (forced as root)
  int event_buffer = 8 << 20;    // the notification socket's receive buffer
  size_t batch_bytes = 64 << 10; // requests per sendmsg
  std::string netns;             // open the sockets in /run/netns/NAME (tests); empty: ours
  // 0: detect (16-bit weights on Linux 6.12 and later), else force 8 or 16.
  int weight_bits = 0;
};

class NetlinkBackend : public FibBackend {
 public:
  static absl::StatusOr<std::unique_ptr<NetlinkBackend>> Open(const NetlinkOptions& options);
  ~NetlinkBackend() override;

  FibCapabilities Capabilities() const override;
  std::vector<absl::Status> Apply(std::span<const FibOp> ops) override;
  absl::StatusOr<FibState> Dump() override;
  // A dump a piece at a time, on a socket of its own (netlink_backend.cc: NetlinkDumpCursor).
  absl::StatusOr<std::unique_ptr<DumpCursor>> StartDump() override;

  // Notifications: readable when the kernel has something to say.
  int event_fd() const { return event_fd_; }
  // Reads every pending notification and emits FibEvents: kNexthopDeleted, kLinkUp/Down,
  // kResyncNeeded on ENOBUFS, and what someone else did to bagd's objects (kRouteChanged,
  // kGroupChanged, kNexthopChanged) or where bagd's routes go (kForeignRoute). The echoes of
  // bagd's own requests are dropped in the kernel by a socket filter.
  void ReadEvents();

  struct Counters {
    uint64_t messages = 0;  // requests sent
    uint64_t sends = 0;     // sendmsg calls
    uint64_t errors = 0;    // requests the kernel refused
  };
  const Counters& counters() const { return counters_; }
  netlink::WeightWidth weight_width() const { return width_; }

 private:
  NetlinkBackend(const NetlinkOptions& options) : options_(options) {}
  // Sends `batch` (requests with sequence numbers first_seq..last_seq; the last asks for an
  // ack) and reads answers until that ack; errors land in `errors` by sequence number.
  absl::Status Transact(const netlink::Bytes& batch, uint32_t last_seq, std::map<uint32_t, absl::Status>& errors);
  absl::StatusOr<uint32_t> InterfaceTowards(const net::IpAddress& gateway);
  absl::Status Encode(const FibOp& op, netlink::Bytes& batch, uint32_t seq);

  NetlinkOptions options_;
  int fd_ = -1;
  int event_fd_ = -1;
  uint32_t own_port_ = 0;  // the request socket's netlink port: notifications it causes are ours
  uint32_t seq_ = 1;
  netlink::WeightWidth width_ = netlink::WeightWidth::k16Bit;
  Counters counters_;
};

}  // namespace bagd::fib
