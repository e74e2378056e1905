#include <catch2/catch.hpp>

#include "net/host_port.h"

using namespace bagd::net;

TEST_CASE("host:port text: an IPv6 host in brackets, any other with one ':', a port 1..65535", "[net][host_port]") {
  auto a = ParseHostPort("127.0.0.1:6379");
  REQUIRE(a.ok());
  CHECK(a->host == "127.0.0.1");
  CHECK(a->port == 6379);
  auto b = ParseHostPort("[::1]:65535");
  REQUIRE(b.ok());
  CHECK(b->host == "::1");
  CHECK(b->port == 65535);
  // What the host is, is the caller's to check.
  auto c = ParseHostPort("redis:1");
  REQUIRE(c.ok());
  CHECK(c->host == "redis");
  CHECK(c->port == 1);
  for (const char* bad : {"", "127.0.0.1", ":6379", "[]:6379", "127.0.0.1:", "127.0.0.1:0", "127.0.0.1:65536", "::1:6379",
                          "[::1]", "[::1]6379", "[::1:6379", "host:port"}) {
    INFO(bad);
    const auto r = ParseHostPort(bad);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().message() == std::string("'") + bad + "' is not ADDRESS:PORT");
  }
}
