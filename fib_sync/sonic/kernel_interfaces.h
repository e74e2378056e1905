// The interface through which the kernel reaches a gateway, by name: SONiC's APPL_DB wants
// `ifname` per next hop, and on a SONiC host the kernel netdevs carry the SONiC port names
// (Ethernet0, PortChannel0001, Vlan1000). One RTM_GETROUTE per gateway (bagd has few
// next hops), answered by the kernel's own route lookup.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "net/ip_prefix.h"

namespace bagd::fib::sonic {

class KernelInterfaces {
 public:
  static absl::StatusOr<std::unique_ptr<KernelInterfaces>> Open();
  ~KernelInterfaces();
  absl::StatusOr<std::string> Towards(const net::IpAddress& gateway);

 private:
  explicit KernelInterfaces(int fd) : fd_(fd) {}
  int fd_;
  uint32_t seq_ = 1;
};

}  // namespace bagd::fib::sonic
