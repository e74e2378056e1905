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

namespace nl = netlink;

absl::StatusOr<std::unique_ptr<KernelInterfaces>> KernelInterfaces::Open() {
  const int fd = OpenRouteSocket(1 << 20);
  if (fd < 0) return Errno("netlink socket", errno);
  return std::unique_ptr<KernelInterfaces>(new KernelInterfaces(fd));
}

KernelInterfaces::~KernelInterfaces() { close(fd_); }

absl::StatusOr<std::string> KernelInterfaces::Towards(const net::IpAddress& gateway) {
  nl::Bytes req;
  const uint32_t seq = seq_++;
  nl::AppendRouteLookup(req, seq, gateway);
  auto answer = Request(fd_, req, seq);
  if (!answer.ok()) {
    return absl::UnavailableError(absl::StrCat("no route to gateway ", gateway.ToString(), ": ", answer.status().message()));
  }
  for (const nl::Message& m : *answer) {
    const auto* r = std::get_if<nl::RouteMsg>(&m.body);
    if (r == nullptr || r->oif == 0) continue;
    // The gateway must be on a connected network, as for the kernel's own next hops.
    if (r->gateway && !(*r->gateway == gateway)) {
      return absl::UnavailableError(
          absl::StrCat("gateway ", gateway.ToString(), " is not on a connected network (reached via ", r->gateway->ToString(), ")"));
    }
    char name[IF_NAMESIZE] = {};
    if (if_indextoname(r->oif, name) == nullptr) return Errno(absl::StrCat("interface ", r->oif), errno);
    return std::string(name);
  }
  return absl::UnavailableError(absl::StrCat("no interface reaches gateway ", gateway.ToString()));
}

}  // namespace bagd::fib::sonic
