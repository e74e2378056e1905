// conf/metrics_listen.h: bagd's --metrics-listen option.
#include "conf/metrics_listen.h"

#include <catch2/catch.hpp>

using bagd::conf::ParseMetricsListen;

TEST_CASE("metrics_listen option: a bare port binds loopback, not every address", "[conf][metrics_listen]") {
  const auto m = ParseMetricsListen("9180");
  REQUIRE(m.ok());
  CHECK(m->address == "127.0.0.1");
  CHECK(m->port == 9180);
  CHECK(m->port_only);
  CHECK(m->HostPort() == "127.0.0.1:9180");
}

TEST_CASE("metrics_listen option: ADDR:PORT binds exactly that", "[conf][metrics_listen]") {
  struct Case {
    const char* text;
    const char* host_port;
    bool v6;
  };
  for (const Case& c : {Case{"127.0.0.1:9180", "127.0.0.1:9180", false}, Case{"0.0.0.0:1", "0.0.0.0:1", false},
                        Case{"192.0.2.1:65535", "192.0.2.1:65535", false}, Case{"[::1]:9180", "[::1]:9180", true},
                        Case{"[::]:9180", "[::]:9180", true}, Case{"[2001:db8::1]:80", "[2001:db8::1]:80", true}}) {
    INFO(c.text);
    const auto m = ParseMetricsListen(c.text);
    REQUIRE(m.ok());
    CHECK_FALSE(m->port_only);
    CHECK(m->v6 == c.v6);
    CHECK(m->HostPort() == c.host_port);
  }
}

TEST_CASE("metrics_listen option: mistakes are named", "[conf][metrics_listen]") {
  struct Case {
    const char* text;
    const char* says;
  };
  for (const Case& c : {Case{"0", "port \"0\" is not a port number 1..65535"},
                        Case{"70000", "port \"70000\" is not a port number"},
                        Case{"91a0", "port \"91a0\" is not a port number"},
                        Case{"", "port \"\" is not a port number"},
                        Case{":9180", "the address is empty"},
                        Case{"localhost:9180", "\"localhost\" is not an IPv4 or IPv6 address"},
                        Case{"::1:9180", "an IPv6 address must be written in brackets"},
                        Case{"[::1]9180", "must be followed by :PORT"},
                        Case{"[127.0.0.1]:9180", "brackets are for IPv6 addresses only"},
                        Case{"127.0.0.1:", "port \"\" is not a port number"},
                        Case{"127.0.0.1:-1", "port \"-1\" is not a port number"}}) {
    INFO(c.text);
    const auto m = ParseMetricsListen(c.text);
    REQUIRE_FALSE(m.ok());
    CHECK_THAT(std::string(m.status().message()), Catch::Contains(c.says));
    CHECK_THAT(std::string(m.status().message()), Catch::StartsWith("--metrics-listen "));
  }
}
