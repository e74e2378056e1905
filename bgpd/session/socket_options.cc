#include "bgpd/session/socket_options.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

#ifndef IPV6_MINHOPCOUNT
#define IPV6_MINHOPCOUNT 73  // linux/in6.h; glibc's netinet/in.h lacks it
#endif

namespace bagd::session {
namespace {

absl::Status Errno(const char* what) {
  return absl::ErrnoToStatus(errno, what);
}

}  // namespace

absl::Status SetTcpMd5(int fd, const net::IpAddress& peer, const std::string& key) {
  if (key.size() > TCP_MD5SIG_MAXKEYLEN) {
    return absl::InvalidArgumentError(absl::StrCat("TCP-MD5 key longer than ", TCP_MD5SIG_MAXKEYLEN, " octets"));
  }
  struct tcp_md5sig md5 {};
  // A dual-stack socket sees IPv4 peers as v4-mapped IPv6 addresses; bagd uses one
  // socket per family, so the peer's own family is right.
  if (peer.is_v4()) {
    auto* sin = reinterpret_cast<sockaddr_in*>(&md5.tcpm_addr);
    sin->sin_family = AF_INET;
    std::memcpy(&sin->sin_addr, peer.bytes(), 4);
  } else {
    auto* sin6 = reinterpret_cast<sockaddr_in6*>(&md5.tcpm_addr);
    sin6->sin6_family = AF_INET6;
    std::memcpy(&sin6->sin6_addr, peer.bytes(), 16);
  }
  md5.tcpm_keylen = static_cast<uint16_t>(key.size());
  std::memcpy(md5.tcpm_key, key.data(), key.size());
  if (setsockopt(fd, IPPROTO_TCP, TCP_MD5SIG, &md5, sizeof md5) != 0) {
    if (key.empty() && errno == ENOENT) return absl::OkStatus();  // nothing to remove
    return Errno("setsockopt(TCP_MD5SIG)");
  }
  return absl::OkStatus();
}

absl::Status SetTtl(int fd, bool ipv6, int ttl) {
  const int r = ipv6 ? setsockopt(fd, IPPROTO_IPV6, IPV6_UNICAST_HOPS, &ttl, sizeof ttl)
                     : setsockopt(fd, IPPROTO_IP, IP_TTL, &ttl, sizeof ttl);
  return r == 0 ? absl::OkStatus() : Errno(ipv6 ? "setsockopt(IPV6_UNICAST_HOPS)" : "setsockopt(IP_TTL)");
}

absl::Status SetGtsm(int fd, bool ipv6, int hops) {
  if (auto st = SetTtl(fd, ipv6, 255); !st.ok()) return st;
  const int min = 256 - hops;
  const int r = ipv6 ? setsockopt(fd, IPPROTO_IPV6, IPV6_MINHOPCOUNT, &min, sizeof min)
                     : setsockopt(fd, IPPROTO_IP, IP_MINTTL, &min, sizeof min);
  return r == 0 ? absl::OkStatus() : Errno(ipv6 ? "setsockopt(IPV6_MINHOPCOUNT)" : "setsockopt(IP_MINTTL)");
}

absl::Status SetMinTtl(int fd, bool ipv6, int min_ttl) {
  const int r = ipv6 ? setsockopt(fd, IPPROTO_IPV6, IPV6_MINHOPCOUNT, &min_ttl, sizeof min_ttl)
                     : setsockopt(fd, IPPROTO_IP, IP_MINTTL, &min_ttl, sizeof min_ttl);
  return r == 0 ? absl::OkStatus() : Errno(ipv6 ? "setsockopt(IPV6_MINHOPCOUNT)" : "setsockopt(IP_MINTTL)");
}

absl::Status EnableSavedSyn(int listen_fd) {
  const int one = 1;  // 1: from the network header on (2 would add the link-layer header)
  if (setsockopt(listen_fd, IPPROTO_TCP, TCP_SAVE_SYN, &one, sizeof one) != 0) return Errno("setsockopt(TCP_SAVE_SYN)");
  return absl::OkStatus();
}

absl::StatusOr<int> SavedSynTtl(int fd) {
  // An IPv6 header with extension headers and a TCP header with options fit in 512.
  uint8_t syn[512];
  socklen_t len = sizeof syn;
  if (getsockopt(fd, IPPROTO_TCP, TCP_SAVED_SYN, syn, &len) != 0) return Errno("getsockopt(TCP_SAVED_SYN)");
  if (len < 1) return absl::NotFoundError("no SYN was saved for this connection");
  // The network header: IPv4's TTL is octet 8, IPv6's hop limit octet 7 (RFC 791, 8200).
  const int version = syn[0] >> 4;
  if (version == 4 && len >= 20) return syn[8];
  if (version == 6 && len >= 40) return syn[7];
  return absl::DataLossError(absl::StrCat("saved SYN of ", len, " octets is not an IP header (version ", version, ")"));
}

}  // namespace bagd::session
