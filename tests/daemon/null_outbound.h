// A neighbor for tests and benchmarks that only receive from it: a daemon::Outbound whose
// session is never up for export (nothing is advertised to it) and that drops whatever it
// is handed. Shared by tests/scenario/scenario_test.cc and bench/fib_bench.cc; a subclass
// may override what it is sent (e.g. to fail a test that sends it an UPDATE).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bgpd/daemon/advertiser.h"

namespace bagd::test {

class NullOutbound : public daemon::Outbound {
 public:
  explicit NullOutbound(std::string name) : name_(std::move(name)) {}
  const std::string& name() const override { return name_; }
  bool established() const override { return false; }
  bool ebgp() const override { return true; }
  bool family_negotiated(net::Family) const override { return false; }
  wire::CodecContext EncodeContext() const override { return {}; }
  std::optional<net::IpAddress> LocalAddress() const override { return std::nullopt; }
  uint32_t advertisement_interval_s() const override { return 0; }
  void SendUpdates(std::vector<wire::Bytes>) override {}
  void SendRouteRefresh(const wire::RouteRefreshMessage&) override {}
  void Advertised(size_t) override {}

 private:
  std::string name_;
};

}  // namespace bagd::test
