// The link bandwidth, damping and fib weight settings: what is accepted, what is located
// where (text and JSON). One error per rule is in tests/data/config/; this file has the
// valid neighbours of each rule and the cases a single file cannot show.
#include <catch2/catch.hpp>

#include "conf/config_loader.h"
#include "conf/config_validator.h"
#include "tests/conf/conf_test_support.h"

using namespace bagd::conf;
using namespace bagd::conf::testing;
using Catch::Matchers::Contains;
namespace v1 = bagd::config::v1;

namespace {

std::vector<std::string> ErrorsOf(const std::string& text) {
  return Located(ParseConfig(text, "t").errors);
}

}  // namespace

TEST_CASE("valid link bandwidth settings load", "[conf][link_bandwidth]") {
  const char* configs[] = {
      // Every export mode, with what it needs.
      R"(neighbors { address: "192.0.2.2" remote_as: 65002 link_bandwidth { mode: EXPORT_AUTO } }
         neighbors { address: "192.0.2.3" remote_as: 65002 link_bandwidth { mode: EXPORT_NONE } }
         neighbors { address: "192.0.2.4" remote_as: 65002 link_bandwidth { mode: EXPORT_PASS } }
         neighbors { address: "192.0.2.5" remote_as: 65002
                     link_bandwidth { mode: EXPORT_FIXED rate: "0" } }
         neighbors { address: "192.0.2.6" remote_as: 65002
                     link_bandwidth { mode: EXPORT_FIXED rate: "1000T" } }
         neighbors { address: "192.0.2.7" remote_as: 65002 link_bandwidth {
                       mode: EXPORT_CUMULATIVE encoding: ENCODING_NON_TRANSITIVE } }
         neighbors { address: "192.0.2.8" remote_as: 65002 link_bandwidth {
                       mode: EXPORT_NUM_MULTIPATHS reference: "25Gbit/s"
                       readvertise_threshold_percent: 0 readvertise_interval: 0 } }
         neighbors { address: "192.0.2.9" remote_as: 65002 link_bandwidth {
                       readvertise_threshold_percent: 100 readvertise_interval: 3600 } })",
      // A family that inherits MISSING_DEFAULT_WEIGHT and the default bandwidth.
      R"(link_bandwidth { missing: MISSING_DEFAULT_WEIGHT default_bandwidth: "10G"
                          families { family: IPV6_UNICAST mode: MODE_IGNORE } })",
      // A family that sets MISSING_DEFAULT_WEIGHT and inherits the default bandwidth.
      R"(link_bandwidth { default_bandwidth: "1G"
                          families { family: IPV4_UNICAST missing: MISSING_DEFAULT_WEIGHT } })",
      // A family with its own default bandwidth; the global "0" is not used by anyone.
      R"(link_bandwidth { default_bandwidth: "0"
                          families { family: IPV4_UNICAST missing: MISSING_DEFAULT_WEIGHT
                                     default_bandwidth: "100M" }
                          families { family: IPV6_UNICAST missing: MISSING_SKIP } })",
      // A family that opts out of the global MISSING_DEFAULT_WEIGHT.
      R"(link_bandwidth { missing: MISSING_DEFAULT_WEIGHT default_bandwidth: "10G"
                          families { family: IPV6_UNICAST missing: MISSING_EQUAL_COST } })",
      R"(networks { prefix: "10.100.0.0/24" link_bandwidth: "400G" }
         networks { prefix: "2001:db8::/32" link_bandwidth: "2.5Gbps" })",
      // The ends of every range.
      R"(damping { decrease_delay: 3600 increase_hold_down: 3600 min_change_percent: 100
                   max_hold_down: 86400 half_life: 86400 })",
      R"(damping { decrease_delay: 0 increase_hold_down: 0 min_change_percent: 0
                   max_hold_down: 0 half_life: 1 })",
      R"(damping { increase_hold_down: 900 max_hold_down: 900 })",
      R"(damping { increase_hold_down: 3600 })",  // max_hold_down defaults to 3600, not 600
      R"(fib { max_weight: 65535 group_budget: 65536 })",
      R"(fib { max_weight: 1 group_budget: 2 })",
      R"(fib { max_weight: 255 group_budget: 64 })",
  };
  for (const char* config : configs) {
    INFO(config);
    CHECK(ErrorsOf(WithRouter(config)).empty());
  }
}

TEST_CASE("damping: max_hold_down is checked against the default increase_hold_down",
          "[conf][damping]") {
  CHECK(ErrorsOf(WithRouter("damping {\n  max_hold_down: 10\n}")) ==
        std::vector<std::string>{
            "3:3: damping: max_hold_down 10 is less than increase_hold_down 30 (the default): "
            "the hold-down only grows from increase_hold_down up to max_hold_down; use a "
            "max_hold_down of 30..86400 seconds"});
  // Of the two, the one written later is reported.
  CHECK(ErrorsOf(WithRouter("damping {\n  max_hold_down: 10\n  increase_hold_down: 20\n}")) ==
        std::vector<std::string>{
            "4:3: damping: max_hold_down 10 is less than increase_hold_down 20: the hold-down "
            "only grows from increase_hold_down up to max_hold_down; use a max_hold_down of "
            "20..86400 seconds"});
  // An increase_hold_down that is out of range itself is the one error.
  CHECK(ErrorsOf(WithRouter("damping { increase_hold_down: 5000 max_hold_down: 4000 }")) ==
        std::vector<std::string>{
            "2:11: damping: increase_hold_down 5000 is out of range: use 0..3600 seconds"});
}

TEST_CASE("damping: new_path_settle is 0..3600 seconds", "[conf][damping]") {
  CHECK(ErrorsOf(WithRouter("damping { new_path_settle: 3600 }")).empty());
  CHECK(ErrorsOf(WithRouter("damping { new_path_settle: 4000 }")) ==
        std::vector<std::string>{"2:11: damping: new_path_settle 4000 is out of range: use 0..3600 seconds"});
}

TEST_CASE("an explicit 0 is not a missing value where 0 is out of range", "[conf][damping]") {
  CHECK(ErrorsOf(WithRouter("damping { half_life: 0 }")) ==
        std::vector<std::string>{
            "2:11: damping: half_life 0 is out of range: use 1..86400 seconds"});
  // JSON has presence too.
  const LoadedConfig json = ParseConfig(
      "{\n\"router\": {\"asn\": 65001, \"routerId\": \"192.0.2.1\"},\n"
      "\"damping\": {\"halfLife\": 0}\n}",
      "j");
  CHECK(Located(json.errors) ==
        std::vector<std::string>{
            "3:13: damping: half_life 0 is out of range: use 1..86400 seconds"});
}

TEST_CASE("JSON: link bandwidth errors are located at the key", "[conf][json][link_bandwidth]") {
  const LoadedConfig loaded = ParseConfig(R"({
  "router": {"asn": 65001, "routerId": "192.0.2.1"},
  "neighbors": [
    {"address": "192.0.2.2", "remoteAs": 65002,
     "linkBandwidth": {"mode": "EXPORT_FIXED", "rate": "10Q"}},
    {"address": "192.0.2.3", "remoteAs": 65002,
     "linkBandwidth": {"mode": "EXPORT_NUM_MULTIPATHS"}}
  ],
  "linkBandwidth": {"families": [{"family": "IPV4_UNICAST"}, {"family": "IPV4_UNICAST"}]},
  "networks": [{"prefix": "10.0.0.0/8", "link_bandwidth": "1P"}],
  "fib": {"groupBudget": 1}
})",
                                          "j");
  CHECK(Located(loaded.errors) ==
        std::vector<std::string>{
            "5:48: neighbor 192.0.2.2: link_bandwidth rate \"10Q\": unknown unit 'Q': use a "
            "number with K, M, G or T (bits per second), e.g. \"100G\"",
            "7:24: neighbor 192.0.2.3: link_bandwidth mode EXPORT_NUM_MULTIPATHS needs "
            "reference, the rate per path of the multipath set, e.g. reference: \"100G\"",
            "9:63: link_bandwidth: family IPV4_UNICAST is already configured at line 9: each "
            "family may appear only once",
            "10:41: network 10.0.0.0/8: link_bandwidth \"1P\": unknown unit 'P': use a number "
            "with K, M, G or T (bits per second), e.g. \"100G\"",
            "11:11: fib: group_budget 1 is out of range: use 2..65536 (the weight sum a group "
            "may use, e.g. the hardware's ECMP table size: 64, 128, 256 or 512), or 0 for no "
            "limit"});
}

TEST_CASE("unknown enum values list the values of the field's own enum", "[conf][text]") {
  // `mode` is a LinkBandwidth.Mode at the top level and in a family, an Export in a
  // neighbor's link_bandwidth: the block the value is in decides.
  const std::string neighbor_mode =
      "use EXPORT_AUTO, EXPORT_NONE, EXPORT_PASS, EXPORT_FIXED, EXPORT_CUMULATIVE, "
      "EXPORT_NUM_MULTIPATHS";
  const std::string lb_mode = "use MODE_IGNORE, MODE_WEIGHTED";
  struct Case {
    std::string text;
    std::string message;
  };
  const Case cases[] = {
      {"neighbors { link_bandwidth { mode: FIXED } }",
       "unknown value FIXED for mode: " + neighbor_mode},
      {"neighbors: [{ address: \"192.0.2.2\" }, { link_bandwidth: < mode: FIXED > }]",
       "unknown value FIXED for mode: " + neighbor_mode},
      {"neighbors { description: \"a { b\" # } {\n link_bandwidth { mode: X } }",
       "unknown value X for mode: " + neighbor_mode},
      {"link_bandwidth { mode: WEIGHTED }", "unknown value WEIGHTED for mode: " + lb_mode},
      {"neighbors { link_bandwidth { } } link_bandwidth { mode: X }",
       "unknown value X for mode: " + lb_mode},
      {"link_bandwidth { families [{ mode: X }] }", "unknown value X for mode: " + lb_mode},
      {"neighbors { link_bandwidth { encoding: TRANSITIVE } }",
       "unknown value TRANSITIVE for encoding: use ENCODING_TRANSITIVE, ENCODING_NON_TRANSITIVE"},
      {"fib { backend: NETLINK }",
       "unknown value NETLINK for backend: use BACKEND_NETLINK, BACKEND_SONIC_APPLDB, "
       "BACKEND_NONE"},
  };
  for (const Case& c : cases) {
    INFO(c.text);
    const LoadedConfig loaded = ParseConfig(WithRouter(c.text), "t");
    REQUIRE(loaded.errors.size() == 1);
    CHECK(loaded.errors[0].message == c.message);
  }
}

TEST_CASE("ValidateConfig without a locator: the same errors, at line 0",
          "[conf][link_bandwidth]") {
  v1::Config config;
  config.mutable_router()->set_asn(65001);
  config.mutable_router()->set_router_id("192.0.2.1");
  v1::Neighbor& n = *config.add_neighbors();
  n.set_address("192.0.2.2");
  n.set_remote_as(65002);
  n.mutable_link_bandwidth()->set_mode(v1::NeighborLinkBandwidth::EXPORT_FIXED);
  config.mutable_damping()->set_half_life(0);
  const std::vector<ConfigError> errors = ValidateConfig(config, "built", nullptr);
  REQUIRE(errors.size() == 2);
  CHECK(errors[0].ToString() ==
        "built: neighbor 192.0.2.2: link_bandwidth mode EXPORT_FIXED needs rate, the rate to "
        "send, e.g. rate: \"100G\"");
  CHECK(errors[1].ToString() ==
        "built: damping: half_life 0 is out of range: use 1..86400 seconds");
}

TEST_CASE("SONiC APPL_DB settings: valid ones load, bad ones say why", "[conf][appldb]") {
  for (const char* ok : {
           "fib { backend: BACKEND_SONIC_APPLDB }",
           "fib { backend: BACKEND_SONIC_APPLDB appldb_socket: \"/tmp/r.sock\" confirm: CONFIRM_NONE }",
           "fib { backend: BACKEND_SONIC_APPLDB appldb_address: \"127.0.0.1:6379\" appldb_protocol: \"bagd-2\" "
           "confirm: CONFIRM_RESPONSE_CHANNEL confirm_timeout: 3600 }",
           "fib { appldb_address: \"[::1]:6379\" }",
           "fib { appldb_address: \"localhost:1\" }",
           "fib { appldb_route_path: ROUTE_PATH_ZMQ appldb_zmq_endpoint: \"tcp://127.0.0.1:8101\" }",
           "fib { appldb_route_path: ROUTE_PATH_REDIS appldb_zmq_endpoint: \"ipc:///run/orch.sock\" }",
       }) {
    INFO(ok);
    CHECK(ErrorsOf(WithRouter(ok)).empty());
  }
  struct Case {
    const char* text;
    const char* message;
  };
  for (const Case& c : std::vector<Case>{
           {"fib { appldb_address: \"redis:6379\" }", "fib: appldb_address 'redis:6379' is not ADDRESS:PORT"},
           {"fib { appldb_address: \"::1:6379\" }", "is not ADDRESS:PORT"},
           {"fib { appldb_address: \"127.0.0.1:0\" }", "is not ADDRESS:PORT"},
           {"fib { appldb_address: \"127.0.0.1:65536\" }", "is not ADDRESS:PORT"},
           {"fib { appldb_address: \"[::1]\" }", "is not ADDRESS:PORT"},
           {"fib { appldb_protocol: \"b a g d\" }", "must be 1..32 characters"},
           {"fib { appldb_protocol: \"123456789012345678901234567890123\" }", "must be 1..32 characters"},
           {"fib { appldb_protocol: \"bgp\" }", "is what fpmsyncd writes for FRR's routes"},
           {"fib { confirm_timeout: 3601 }", "fib: confirm_timeout 3601 is out of range: use 1..3600 seconds"},
           {"fib { appldb_pop_batch: 0 }", "fib: appldb_pop_batch 0 is out of range: use 1..65536"},
           {"fib { appldb_pop_batch: 65537 }", "fib: appldb_pop_batch 65537 is out of range"},
           {"fib { confirm: RESPONSE }", "unknown value RESPONSE for confirm: use CONFIRM_NONE, CONFIRM_RESPONSE_CHANNEL"},
           {"fib { appldb_zmq_endpoint: \"127.0.0.1:8100\" }",
            "fib: appldb_zmq_endpoint '127.0.0.1:8100' is not a ZMQ endpoint orchagent binds: use tcp://HOST:PORT"},
           {"fib { appldb_zmq_endpoint: \"tcp://127.0.0.1\" }", "is not a ZMQ endpoint"},
           {"fib { appldb_route_path: ZMQ }", "unknown value ZMQ for appldb_route_path"},
       }) {
    INFO(c.text);
    const LoadedConfig loaded = ParseConfig(WithRouter(c.text), "t");
    REQUIRE(loaded.errors.size() == 1);
    CHECK_THAT(loaded.errors[0].message, Contains(c.message));
  }
}
