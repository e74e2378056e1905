// "HOST:PORT" text, as configs write a TCP server's address ("127.0.0.1:6379",
// "[::1]:6379", "localhost:6379"). The one parser of it: the config validator (conf/) and
// the APPL_DB connection (fib_sync/sonic/) both use it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace bagd::net {

struct HostPort {
  std::string host;  // as written, without an IPv6 address's brackets; never empty
  uint16_t port = 0;  // 1..65535
};

// "HOST:PORT" with a single ':' or "[HOST]:PORT" (an IPv6 address has ':' of its own), a
// host that is not empty and a port 1..65535. What the host is (an address, a name) is the
// caller's to check. An InvalidArgument "'TEXT' is not ADDRESS:PORT" otherwise.
absl::StatusOr<HostPort> ParseHostPort(std::string_view text);

}  // namespace bagd::net
