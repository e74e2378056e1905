// TCP socket options BGP needs on Linux: TCP-MD5 (RFC 2385), GTSM (RFC 5082) and the TTL
// for eBGP (single hop or multihop). They act on native descriptors so they work for
// listening, connecting and accepted sockets alike.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "net/ip_prefix.h"

namespace bagd::session {

// Installs (or, with an empty key, removes) the MD5 key for `peer` on `fd`. On a listening
// socket this is per peer address; the kernel then drops unsigned or badly signed segments.
absl::Status SetTcpMd5(int fd, const net::IpAddress& peer, const std::string& key);

// Sets the TTL / hop limit of packets we send.
absl::Status SetTtl(int fd, bool ipv6, int ttl);

// GTSM: send with TTL 255 and accept only packets with TTL >= 256 - hops.
absl::Status SetGtsm(int fd, bool ipv6, int hops);

// The least TTL / hop limit a socket takes (IP_MINTTL / IPV6_MINHOPCOUNT), 0 = any. On a
// listening socket the kernel drops SYNs below it, and accepted sockets inherit it.
absl::Status SetMinTtl(int fd, bool ipv6, int min_ttl);

// Asks a listening socket to keep each connection's SYN (TCP_SAVE_SYN, Linux 4.2), so the
// TTL it arrived with can be checked on the accepted socket before any of its bytes are
// read: IP_MINTTL set after accept() comes too late for what the peer already sent.
absl::Status EnableSavedSyn(int listen_fd);

// The TTL (IPv4) or hop limit (IPv6) of the SYN that opened the accepted connection `fd`
// (TCP_SAVED_SYN; the kernel hands it out once). An error when the listener did not save
// it or the kernel lacks the option.
absl::StatusOr<int> SavedSynTtl(int fd);

}  // namespace bagd::session
