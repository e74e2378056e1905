// The `--metrics-listen` option of bagd: where the Prometheus endpoint listens.
//
// "ADDR:PORT" ("127.0.0.1:9180", "0.0.0.0:9180", "[::1]:9180", "[::]:9180") binds exactly
// that. A bare port ("9180") binds the loopback address 127.0.0.1 only: metrics tell a lot
// about the network (neighbors, prefixes, failures), so serving them to every host must be
// asked for with an explicit 0.0.0.0 or ::. (prometheus-cpp/civetweb would bind every
// address for a bare port.) bagd logs the address it binds, and refuses IPv6 when its
// civetweb has no IPv6 support (bgpd/main.cc).
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace bagd::conf {

struct MetricsListen {
  std::string address;  // the IP literal bound, without brackets
  uint16_t port = 0;
  bool port_only = false;  // the option was a bare port: loopback chosen
  bool v6 = false;
  // "127.0.0.1:9180" / "[::1]:9180": for prometheus::Exposer (civetweb) and for URLs.
  std::string HostPort() const;
};

inline constexpr const char* kMetricsDefaultAddress = "127.0.0.1";

// An error names what is wrong and what to write instead.
absl::StatusOr<MetricsListen> ParseMetricsListen(const std::string& text);

}  // namespace bagd::conf
