// TCP socket options BGP needs on Linux: TCP-MD5 (RFC 2385), GTSM (RFC 5082) and the TTL
// for eBGP (single hop or multihop). They act on native descriptors so they work for
// listening, connecting and accepted sockets alike.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "bgpd/wire/ip_prefix.h"

namespace bagd::session {

// Installs (or, with an empty key, removes) the MD5 key for `peer` on `fd`. On a listening
// socket this is per peer address; the kernel then drops unsigned or badly signed segments.
absl::Status SetTcpMd5(int fd, const wire::IpAddress& peer, const std::string& key);

// Sets the TTL / hop limit of packets we send.
absl::Status SetTtl(int fd, bool ipv6, int ttl);

// GTSM: send with TTL 255 and accept only packets with TTL >= 256 - hops.
absl::Status SetGtsm(int fd, bool ipv6, int hops);

}  // namespace bagd::session
