#include <catch2/catch.hpp>

#include "net/ip_prefix.h"

using namespace bagd::net;

TEST_CASE("Prefix parses, masks host bits and prints", "[wire][prefix]") {
  auto p = Prefix::Parse("10.1.2.3/24");
  REQUIRE(p.ok());
  CHECK(p->ToString() == "10.1.2.0/24");
  CHECK(p->family() == Family::kIpv4Unicast);
  CHECK(*p == *Prefix::Parse("10.1.2.0/24"));

  auto v6 = Prefix::Parse("2001:db8:1:2::1/48");
  REQUIRE(v6.ok());
  CHECK(v6->ToString() == "2001:db8:1::/48");
  CHECK(v6->family() == Family::kIpv6Unicast);

  CHECK(Prefix::Parse("10.0.0.1")->length() == 32);
  CHECK_FALSE(Prefix::Parse("10.0.0.0/33").ok());
  CHECK_FALSE(Prefix::Parse("banana/8").ok());
  CHECK_FALSE(Prefix::Parse("2001:db8::/129").ok());
}

TEST_CASE("IpAddress parses both families and knows link-local", "[wire][prefix]") {
  CHECK(IpAddress::Parse("192.0.2.1")->v4() == 0xc0000201u);
  CHECK(IpAddress::Parse("fe80::1")->IsIpv6LinkLocal());
  CHECK_FALSE(IpAddress::Parse("2001:db8::1")->IsIpv6LinkLocal());
  CHECK_FALSE(IpAddress::Parse("300.1.1.1").ok());
  CHECK(IpAddress::V4(0x0a000001).ToString() == "10.0.0.1");
}

TEST_CASE("Prefix stays compact", "[wire][prefix]") {
  STATIC_REQUIRE(sizeof(Prefix) == 18);
  STATIC_REQUIRE(sizeof(Nlri) <= 24);
}
