#include "fib_sync/sonic/kernel_interfaces.h"

#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include "absl/strings/str_cat.h"
#include "fib_sync/netlink_socket.h"

namespace bagd::fib::sonic {

absl::StatusOr<std::unique_ptr<KernelInterfaces>> KernelInterfaces::Open() {
  const int fd = OpenRouteSocket(1 << 20);
  if (fd < 0) return Errno("netlink socket", errno);
  return std::unique_ptr<KernelInterfaces>(new KernelInterfaces(fd));
}

KernelInterfaces::~KernelInterfaces() { close(fd_); }

absl::StatusOr<std::string> KernelInterfaces::Towards(const net::IpAddress& gateway) {
  auto r = RouteTowards(fd_, seq_++, gateway);
  if (!r.ok()) return r.status();
  // The gateway must be on a connected network, as for the kernel's own next hops.
  if (r->gateway && !(*r->gateway == gateway)) {
    return absl::UnavailableError(
        absl::StrCat("gateway ", gateway.ToString(), " is not on a connected network (reached via ", r->gateway->ToString(), ")"));
  }
  char name[IF_NAMESIZE] = {};
  if (if_indextoname(r->oif, name) == nullptr) return Errno(absl::StrCat("interface ", r->oif), errno);
  return std::string(name);
}

}  // namespace bagd::fib::sonic
