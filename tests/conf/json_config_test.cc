// JSON configurations: protobuf's JSON mapping, errors located by line:col.
#include <catch2/catch.hpp>

#include "conf/config_loader.h"
#include "google/protobuf/util/message_differencer.h"
#include "tests/conf/conf_test_support.h"

using namespace bagd::conf;
using namespace bagd::conf::testing;
using Catch::Matchers::Contains;

namespace {

// Line 1 is "{", the router on line 2, neighbors from line 3.
std::string Json(const std::string& neighbors) {
  return "{\n"
         "  \"router\": {\"asn\": 65001, \"routerId\": \"192.0.2.1\"},\n"
         "  \"neighbors\": [\n" +
         neighbors + "\n  ]\n}\n";
}

}  // namespace

TEST_CASE("JSON is detected by its first non-space character", "[conf][json]") {
  const LoadedConfig loaded =
      ParseConfig("\n\n   " + Json("    {\"address\": \"192.0.2.2\", \"remoteAs\": 65002}"), "j");
  for (const ConfigError& e : loaded.errors) UNSCOPED_INFO(e.ToString());
  REQUIRE(loaded.ok());
  CHECK(loaded.config.neighbors(0).remote_as() == 65002);
}

TEST_CASE("JSON syntax errors: line:col from the parser's context", "[conf][json]") {
  SECTION("a missing comma") {
    const LoadedConfig loaded =
        ParseConfig(Json("    {\"address\": \"192.0.2.2\" \"remoteAs\": 65002}"), "j");
    REQUIRE(loaded.errors.size() == 1);
    CHECK(Located(loaded.errors)[0] == "4:29: JSON: Expected , or } after key:value pair.");
  }
  SECTION("the end of the text comes too early") {
    const LoadedConfig loaded = ParseConfig("{\n  \"router\": {\"asn\": 65001\n", "j");
    REQUIRE(loaded.errors.size() == 1);
    CHECK(loaded.errors[0].line == 2);
    CHECK(loaded.errors[0].column == 26);  // just after "65001"
    CHECK_THAT(loaded.errors[0].message, Contains("Unexpected end of string"));
  }
  SECTION("an array is not a configuration") {
    const LoadedConfig loaded = ParseConfig("  [1]", "j");
    REQUIRE(loaded.errors.size() == 1);
    CHECK(Located(loaded.errors)[0] ==
          "1:3: JSON: the configuration must be an object { ... }, not an array");
  }
}

TEST_CASE("JSON field errors are located at the key", "[conf][json]") {
  SECTION("unknown field, with a suggestion") {
    const LoadedConfig loaded =
        ParseConfig(Json("    {\"address\": \"192.0.2.2\", \"remoteAs\": 65002},\n"
                         "    {\"address\": \"192.0.2.3\", \"remoteAsn\": 65003}"),
                    "j");
    REQUIRE(loaded.errors.size() == 1);
    CHECK(Located(loaded.errors)[0] ==
          "5:30: JSON: unknown field \"remoteAsn\" in Neighbor: did you mean \"remote_as\"?");
  }
  SECTION("wrong value type") {
    const LoadedConfig loaded = ParseConfig(
        Json("    {\"address\": \"192.0.2.2\", \"timers\": {\"holdTime\": \"x\"}}"), "j");
    REQUIRE(loaded.errors.size() == 1);
    CHECK(Located(loaded.errors)[0] ==
          "4:41: JSON: neighbors[0].timers.hold_time: invalid value \"x\": expected a whole "
          "number 0..4294967295");
  }
  SECTION("unknown enum value lists the values") {
    const LoadedConfig loaded = ParseConfig(
        Json(
            "    {\"address\": \"192.0.2.2\", \"address_families\": [\"IPV4_UNICAST\", \"IPV4\"]}"),
        "j");
    REQUIRE(loaded.errors.size() == 1);
    CHECK(Located(loaded.errors)[0] ==
          "4:67: JSON: neighbors[0].address_families[1]: invalid value \"IPV4\": use "
          "IPV4_UNICAST, IPV6_UNICAST");
  }
}

TEST_CASE("JSON semantic errors are located like text ones", "[conf][json]") {
  const LoadedConfig loaded =
      ParseConfig(Json("    {\"address\": \"192.0.2.2\", \"remoteAs\": 65002,\n"
                       "     \"timers\": {\"hold_time\": 2}},\n"
                       "    {\"remoteAs\": 65003,\n"
                       "     \"address\": \"192.0.2.2\"},\n"
                       "    {\"address\": \"192.0.2.4\"}"),
                  "j");
  CHECK(Located(loaded.errors) ==
        std::vector<std::string>{
            "5:17: neighbor 192.0.2.2: hold_time 2 is not allowed: use 0 (no keepalives) or "
            "3..65535 (RFC 4271 §4.2)",
            "7:6: neighbor 192.0.2.2 is already configured at line 4: each neighbor address may "
            "appear only once",
            "8:5: neighbor 192.0.2.4: remote_as is required (the neighbor's AS number; equal to "
            "router asn for iBGP)"});
}

TEST_CASE("text and JSON spellings of one config give equal protos", "[conf][json]") {
  const LoadedConfig text = ParseConfig(R"(
    router { asn: 65001 router_id: "192.0.2.1" hold_time: 30 log_level: LOG_LEVEL_DEBUG
             listen { address: "192.0.2.1" } }
    neighbors { address: "2001:db8::2" remote_as: 65002 password: "k" ttl_security: 1
                timers { keepalive: 5 } address_families: [IPV4_UNICAST, IPV6_UNICAST] }
    fib { backend: BACKEND_NONE }
  )",
                                        "t");
  // lowerCamelCase and snake_case keys mixed, as protobuf's JSON mapping allows.
  const LoadedConfig json = ParseConfig(R"({
    "router": {"asn": 65001, "router_id": "192.0.2.1", "holdTime": 30, "logLevel": "LOG_LEVEL_DEBUG",
               "listen": [{"address": "192.0.2.1"}]},
    "neighbors": [{"address": "2001:db8::2", "remoteAs": 65002, "password": "k", "ttlSecurity": 1,
                   "timers": {"keepalive": 5}, "addressFamilies": ["IPV4_UNICAST", "IPV6_UNICAST"]}],
    "fib": {"backend": "BACKEND_NONE"}
  })",
                                        "j");
  REQUIRE(text.ok());
  REQUIRE(json.ok());
  CHECK(google::protobuf::util::MessageDifferencer::Equals(text.config, json.config));
  CHECK(json.config.neighbors(0).timers().hold_time() == 30);
}
