// What the APPL_DB backend tests share (tests/fib/appldb_backend_test.cc, the Redis path;
// tests/fib/appldb_zmq_test.cc, the ZMQ route path): addresses, routes, groups and the
// port names next hops resolve to.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "net/ip_prefix.h"
#include "rib/fib_update.h"

namespace bagd::fib::sonic::test {

inline net::IpAddress A(const char* s) { return *net::IpAddress::Parse(s); }

// Route i: a /32 in 10.100.0.0/14.
inline net::Prefix Route(int i) {
  const uint8_t b[4] = {10, static_cast<uint8_t>(100 + i / 65536), static_cast<uint8_t>(i / 256 % 256),
                        static_cast<uint8_t>(i % 256)};
  return net::Prefix::Make(net::Afi::kIpv4, b, 32);
}

inline rib::FibGroup Group(rib::GroupId id, std::vector<std::pair<const char*, uint32_t>> members) {
  rib::FibGroup g{id, {}};
  for (const auto& [nh, w] : members) g.members.push_back({A(nh), w});
  return g;
}

// Gateways 10.0.N.2 are on EthernetN*4, fd00:N::2 on PortChannel000N; anything else is not
// connected.
inline absl::StatusOr<std::string> Resolve(const net::IpAddress& gw) {
  const std::string s = gw.ToString();
  if (s.starts_with("10.0.") && s.ends_with(".2")) {
    const int n = std::stoi(s.substr(5, s.size() - 7));
    return "Ethernet" + std::to_string(n * 4);
  }
  if (s.starts_with("fd00:") && s.ends_with("::2")) return "PortChannel000" + s.substr(5, s.size() - 8);
  return absl::UnavailableError("not connected: " + s);
}

}  // namespace bagd::fib::sonic::test
