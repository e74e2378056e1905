// conf/config_defaults.h: ApplyDefaults and the timer inheritance.
#include "conf/config_defaults.h"

#include <catch2/catch.hpp>

#include "conf/config_loader.h"
#include "google/protobuf/util/message_differencer.h"
#include "tests/conf/conf_test_support.h"

using namespace bagd::conf;
using namespace bagd::conf::testing;
namespace v1 = bagd::config::v1;

namespace {

v1::Config Parsed(const std::string& text) {
  const LoadedConfig loaded = ParseConfig(text, "t");
  for (const ConfigError& e : loaded.errors) UNSCOPED_INFO(e.ToString());
  REQUIRE(loaded.ok());
  return loaded.config;
}

}  // namespace

TEST_CASE("router defaults", "[conf][defaults]") {
  v1::Config c;
  ApplyDefaults(c);
  const v1::Router& r = c.router();
  REQUIRE(r.listen_size() == 2);
  CHECK(r.listen(0).address() == "0.0.0.0");
  CHECK(r.listen(0).port() == 179);
  CHECK(r.listen(1).address() == "::");
  CHECK(r.listen(1).port() == 179);
  CHECK(r.has_hold_time());
  CHECK(r.hold_time() == 90);
  CHECK(r.keepalive() == 30);
  CHECK(r.connect_retry() == 5);
  CHECK(r.log_level() == v1::LOG_LEVEL_INFO);
  CHECK(c.link_bandwidth().mode() == v1::LinkBandwidth::MODE_WEIGHTED);
  CHECK(c.link_bandwidth().missing() == v1::LinkBandwidth::MISSING_EQUAL_COST);
  CHECK(c.fib().backend() == v1::Fib::BACKEND_NETLINK);
  CHECK(c.fib().kernel_table() == 254);
  CHECK(c.fib().appldb_socket() == "/var/run/redis/redis.sock");
  CHECK_FALSE(c.has_multipath());  // decided in issue 4
}

TEST_CASE("listen: given addresses are kept, port 0 becomes 179", "[conf][defaults]") {
  const v1::Config c = Parsed(R"(router { asn: 65001 router_id: "192.0.2.1"
      listen { address: "192.0.2.1" } listen { address: "::1" port: 1179 } })");
  REQUIRE(c.router().listen_size() == 2);
  CHECK(c.router().listen(0).port() == 179);
  CHECK(c.router().listen(1).port() == 1179);
}

TEST_CASE("neighbor timers inherit from the router", "[conf][defaults]") {
  const v1::Config c = Parsed(R"(
    router { asn: 65001 router_id: "192.0.2.1" hold_time: 30 keepalive: 7 connect_retry: 11 }
    neighbors { address: "192.0.2.2" remote_as: 65002 }                                  # all inherited
    neighbors { address: "192.0.2.3" remote_as: 65002 timers { hold_time: 12 } }         # keepalive 12/3
    neighbors { address: "192.0.2.4" remote_as: 65002 timers { keepalive: 2 } }          # hold from router
    neighbors { address: "192.0.2.5" remote_as: 65002 timers { hold_time: 0 } }          # no keepalives
    neighbors { address: "192.0.2.6" remote_as: 65002 timers { connect_retry: 1 } }
  )");
  auto timers = [&](int i) {
    const v1::Timers& t = c.neighbors(i).timers();
    return std::vector<uint32_t>{t.hold_time(), t.keepalive(), t.connect_retry()};
  };
  CHECK(timers(0) == std::vector<uint32_t>{30, 7, 11});
  CHECK(timers(1) == std::vector<uint32_t>{12, 4, 11});
  CHECK(timers(2) == std::vector<uint32_t>{30, 2, 11});
  CHECK(timers(3) == std::vector<uint32_t>{0, 0, 11});
  CHECK(timers(4) == std::vector<uint32_t>{30, 7, 1});
  // Every field is present after defaults, even those whose value is 0.
  CHECK(c.neighbors(3).timers().has_hold_time());
  CHECK(c.neighbors(3).timers().has_keepalive());
}

TEST_CASE("router hold_time 0 means no keepalives by default", "[conf][defaults]") {
  const v1::Config c = Parsed(R"(router { asn: 65001 router_id: "192.0.2.1" hold_time: 0 }
                                 neighbors { address: "192.0.2.2" remote_as: 65002 })");
  CHECK(c.router().hold_time() == 0);
  CHECK(c.router().keepalive() == 0);
  CHECK(c.neighbors(0).timers().hold_time() == 0);
  CHECK(c.neighbors(0).timers().keepalive() == 0);
}

TEST_CASE("neighbor port and address families", "[conf][defaults]") {
  const v1::Config c = Parsed(R"(router { asn: 65001 router_id: "192.0.2.1" }
    neighbors { address: "192.0.2.2" remote_as: 65002 }
    neighbors { address: "2001:db8::2" remote_as: 65002 port: 1179 }
    neighbors { address: "192.0.2.3" remote_as: 65002 address_families: IPV6_UNICAST })");
  CHECK(c.neighbors(0).port() == 179);
  CHECK(c.neighbors(1).port() == 1179);
  auto families = [&](int i) {
    return std::vector<int>(c.neighbors(i).address_families().begin(),
                            c.neighbors(i).address_families().end());
  };
  CHECK(families(0) == std::vector<int>{v1::IPV4_UNICAST});  // FRR: bgp default ipv4-unicast
  CHECK(families(1) == std::vector<int>{v1::IPV6_UNICAST});  // the neighbor's own family
  CHECK(families(2) == std::vector<int>{v1::IPV6_UNICAST});  // as configured
}

TEST_CASE("ApplyDefaults is idempotent", "[conf][defaults]") {
  const LoadedConfig loaded = LoadConfigFile(SourcePath("conf/examples/bag-router.textproto"));
  REQUIRE(loaded.ok());
  v1::Config again = loaded.config;
  ApplyDefaults(again);
  CHECK(google::protobuf::util::MessageDifferencer::Equals(loaded.config, again));
}

TEST_CASE("no defaults are applied to a config with errors", "[conf][defaults]") {
  const LoadedConfig loaded = ParseConfig("router { asn: 65001 }", "t");
  REQUIRE_FALSE(loaded.ok());
  CHECK(loaded.config.router().listen_size() == 0);
  CHECK_FALSE(loaded.config.router().has_hold_time());
}
