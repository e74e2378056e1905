// The pure part of the APPL_DB backend: key names, group names, route key spelling, field
// sets, reading entries back, the staging script's arguments and the response channel JSON.
#include <catch2/catch.hpp>

#include "fib_sync/sonic/appldb_schema.h"
#include "fib_sync/sonic/redis_connection.h"

namespace bagd::fib::sonic {
namespace {

net::Prefix P(const char* s) { return *net::Prefix::Parse(s); }
net::IpAddress A(const char* s) { return *net::IpAddress::Parse(s); }

std::string FieldOf(const Fields& f, const std::string& name) {
  for (const auto& [k, v] : f) {
    if (k == name) return v;
  }
  return "<absent>";
}

TEST_CASE("appldb: table key names follow the ProducerStateTable layout", "[appldb]") {
  const TableKeys t = KeysOf("ROUTE_TABLE");
  CHECK(t.key_set == "ROUTE_TABLE_KEY_SET");
  CHECK(t.del_set == "ROUTE_TABLE_DEL_SET");
  CHECK(t.staging == "_ROUTE_TABLE:");
  CHECK(t.main == "ROUTE_TABLE:");
  CHECK(t.channel == "ROUTE_TABLE_CHANNEL@0");
  CHECK(KeysOf("NEXTHOP_GROUP_TABLE").channel == "NEXTHOP_GROUP_TABLE_CHANNEL@0");
}

TEST_CASE("appldb: group names carry bagd's prefix and the object id", "[appldb]") {
  CHECK(GroupName(195887105) == "bagd-195887105");
  CHECK(GroupIdOf("bagd-195887105") == 195887105u);
  CHECK(GroupIdOf("bagd-4294967295") == 4294967295u);
  for (const char* bad : {"195887105", "bagd-", "bagd-0", "bagd-007", "bagd-12a", "bagd-4294967296", "bagd--1",
                          "BAGD-1", "bagd-99999999999"}) {
    INFO(bad);
    CHECK_FALSE(GroupIdOf(bad).has_value());
  }
}

TEST_CASE("appldb: route keys are spelled as fpmsyncd spells them", "[appldb]") {
  CHECK(RouteKey(P("10.1.0.0/24")) == "10.1.0.0/24");
  CHECK(RouteKey(P("10.1.0.7/32")) == "10.1.0.7");
  CHECK(RouteKey(P("0.0.0.0/0")) == "0.0.0.0/0");
  CHECK(RouteKey(P("2001:db8::/64")) == "2001:db8::/64");
  CHECK(RouteKey(P("2001:db8::1/128")) == "2001:db8::1");
  for (const char* k : {"10.1.0.0/24", "10.1.0.7", "2001:db8::/64", "2001:db8::1", "0.0.0.0/0"}) {
    auto p = ParseRouteKey(k);
    REQUIRE(p.ok());
    CHECK(RouteKey(*p) == k);
  }
  CHECK(ParseRouteKey("10.1.0.7/32")->length() == 32);  // the other spelling is still read
  CHECK_FALSE(ParseRouteKey("Vrf-red:10.0.0.0/24").ok());
  CHECK_FALSE(ParseRouteKey("10.0.0.1/24").ok());  // host bits: not a spelling bagd writes
  CHECK_FALSE(ParseRouteKey("resync").ok());
  CHECK_FALSE(ParseRouteKey("").ok());
  CHECK_FALSE(ParseRouteKey("10.0.0.0/33").ok());
}

TEST_CASE("appldb: a group writes every field, members in order", "[appldb]") {
  const Fields f = GroupFields({{A("10.0.1.2"), "Ethernet0", 3}, {A("10.0.2.2"), "PortChannel0001", 1}});
  CHECK(FieldOf(f, "nexthop") == "10.0.1.2,10.0.2.2");
  CHECK(FieldOf(f, "ifname") == "Ethernet0,PortChannel0001");
  CHECK(FieldOf(f, "weight") == "3,1");
  CHECK(FieldOf(f, "nexthop_group").empty());
  CHECK(FieldOf(f, "mpls_nh").empty());
  CHECK(FieldOf(f, "seg_src").empty());
}

TEST_CASE("appldb: a route names its group and clears the inline fields", "[appldb]") {
  const Fields f = RouteFields("bagd-7", "bagd");
  CHECK(FieldOf(f, "nexthop_group") == "bagd-7");
  CHECK(FieldOf(f, "protocol") == "bagd");
  // Present and empty: staged fields merge, and a route with both nexthop_group and
  // nexthop/ifname is dropped by orchagent.
  for (const char* name : {"nexthop", "ifname", "weight", "blackhole"}) {
    INFO(name);
    CHECK(FieldOf(f, name).empty());
  }
}

TEST_CASE("appldb: groups read back", "[appldb]") {
  using M = std::map<std::string, std::string>;
  auto g = ParseGroup(M{{"nexthop", "10.0.1.2,2001:db8::2"}, {"ifname", "Ethernet0,Ethernet4"}, {"weight", "3,65535"}});
  REQUIRE(g.ok());
  REQUIRE(g->size() == 2);
  CHECK((*g)[0].gateway == A("10.0.1.2"));
  CHECK((*g)[1].ifname == "Ethernet4");
  CHECK((*g)[1].weight == 65535);
  // Weights whose count differs from the next hops' are ignored, as orchagent does.
  auto ignored = ParseGroup(M{{"nexthop", "10.0.1.2,10.0.2.2"}, {"ifname", "E0,E1"}, {"weight", "3"}});
  REQUIRE(ignored.ok());
  CHECK((*ignored)[0].weight == 1);
  CHECK((*ignored)[1].weight == 1);
  auto no_weight = ParseGroup(M{{"nexthop", "10.0.1.2"}, {"ifname", "E0"}, {"weight", ""}});
  REQUIRE(no_weight.ok());
  CHECK((*no_weight)[0].weight == 1);
  // Bad input is an error with a reason, never a crash.
  CHECK_FALSE(ParseGroup(M{}).ok());
  CHECK_FALSE(ParseGroup(M{{"nexthop", "10.0.1.2,10.0.2.2"}, {"ifname", "E0"}}).ok());
  CHECK_FALSE(ParseGroup(M{{"nexthop", "10.0.1.x"}, {"ifname", "E0"}}).ok());
  CHECK_FALSE(ParseGroup(M{{"nexthop", "10.0.1.2"}, {"ifname", "E0"}, {"weight", "heavy"}}).ok());
  CHECK_FALSE(ParseGroup(M{{"nexthop", "10.0.1.2"}, {"ifname", "E0"}, {"weight", "99999999999"}}).ok());
  CHECK_FALSE(ParseGroup(M{{"nexthop_group", "bagd-1,bagd-2"}}).ok());
}

TEST_CASE("appldb: the staging command lists KEYS, the pop batch, then per-key op, key, count, pairs", "[appldb]") {
  const std::vector<Write> w = {
      {"10.0.0.0/24", false, {{"nexthop_group", "bagd-1"}, {"protocol", "bagd"}}},
      {"10.0.1.0/24", true, {}},
      {"10.0.2.0/24", false, {{"a", "b"}}},
  };
  const auto argv = StageCommand("SHA", KeysOf("ROUTE_TABLE"), w, 0, 2, 128);
  const std::vector<std::string> want = {
      "EVALSHA", "SHA", "4", "ROUTE_TABLE_CHANNEL@0", "ROUTE_TABLE_KEY_SET", "ROUTE_TABLE_DEL_SET", "_ROUTE_TABLE:",
      "128",
      "S", "10.0.0.0/24", "2", "nexthop_group", "bagd-1", "protocol", "bagd",
      "D", "10.0.1.0/24", "0"};
  CHECK(argv == want);
  CHECK(StageCommand("SHA", KeysOf("ROUTE_TABLE"), w, 2, 3, 128).size() == 8 + 5);
  CHECK(StageCommand("SHA", KeysOf("ROUTE_TABLE"), w, 2, 3, 0)[7] == "1");  // never a batch of 0
}

TEST_CASE("appldb: response channel messages", "[appldb]") {
  auto r = ParseResponse(R"(["SWSS_RC_SUCCESS","10.1.0.0/24","err_str","SWSS_RC_SUCCESS","protocol","bagd"])");
  REQUIRE(r.ok());
  CHECK(r->ok());
  CHECK(r->key == "10.1.0.0/24");
  CHECK(r->fields.at("protocol") == "bagd");
  auto del = ParseResponse(R"(["SWSS_RC_SUCCESS","10.1.0.0/24","err_str","SWSS_RC_SUCCESS"])");
  REQUIRE(del.ok());
  CHECK(del->fields.size() == 1);
  auto full = ParseResponse(R"(["SWSS_RC_FULL","10.1.0.0/24","err_str","[SAI] table full"])");
  REQUIRE(full.ok());
  CHECK_FALSE(full->ok());
  for (const char* bad : {"", "not json", "{}", "[]", R"(["SWSS_RC_SUCCESS"])", R"(["A","k","f"])",
                          R"(["A",1])", R"(["A","k",["x"],"y"])", "[\"A\",\"k\""}) {
    INFO(bad);
    CHECK_FALSE(ParseResponse(bad).ok());
  }
}

TEST_CASE("appldb: Redis TCP addresses", "[appldb]") {
  auto a = ParseRedisTcpAddress("127.0.0.1:6379");
  REQUIRE(a.ok());
  CHECK(a->host == "127.0.0.1");
  CHECK(a->port == 6379);
  CHECK(a->ToString() == "127.0.0.1:6379");
  auto b = ParseRedisTcpAddress("[::1]:7000");
  REQUIRE(b.ok());
  CHECK(b->host == "::1");
  CHECK(b->port == 7000);
  CHECK(RedisAddress{"/var/run/redis/redis.sock", "", 0}.ToString() == "unix:/var/run/redis/redis.sock");
  for (const char* bad : {"", "127.0.0.1", ":6379", "127.0.0.1:", "127.0.0.1:0", "127.0.0.1:65536", "::1:6379",
                          "[::1]", "[::1]6379", "host:port"}) {
    INFO(bad);
    CHECK_FALSE(ParseRedisTcpAddress(bad).ok());
  }
}

}  // namespace
}  // namespace bagd::fib::sonic
