// Neighbor groups and listen ranges (conf/neighbor_groups.h): inheritance, override, the
// groups' own errors and the members' errors located and named, dynamic neighbors.
#include "conf/neighbor_groups.h"

#include <catch2/catch.hpp>
#include <sstream>

#include "conf/config_loader.h"
#include "tests/conf/conf_test_support.h"

using namespace bagd::conf;
using namespace bagd::conf::testing;
using Catch::Matchers::Contains;
namespace v1 = bagd::config::v1;

namespace {

const v1::Neighbor& NeighborAt(const LoadedConfig& loaded, const std::string& address) {
  for (const auto& n : loaded.config.neighbors()) {
    if (n.address() == address) return n;
  }
  FAIL("no neighbor " << address);
  std::abort();
}

// A group "spines" with most kinds of field set, used by the inheritance cases.
const char* const kSpines = R"(
policies { name: "in" statements { actions { disposition: DISPOSITION_ACCEPT } } }
policies { name: "out" statements { actions { disposition: DISPOSITION_ACCEPT } } }
policies { name: "in2" statements { actions { disposition: DISPOSITION_ACCEPT } } }
neighbor_groups {
  name: "spines"
  settings {
    remote_as: 65100
    passive: true
    timers { hold_time: 9 connect_retry: 7 }
    import_policies: "in"
    export_policies: "out"
    address_families: [IPV4_UNICAST, IPV6_UNICAST]
    soft_reconfiguration_inbound: true
    graceful_restart { enabled: false restart_time: 60 }
    link_bandwidth { mode: EXPORT_NONE }
  }
}
)";

}  // namespace

TEST_CASE("neighbor group: a member takes every setting of its group", "[conf][groups]") {
  const LoadedConfig loaded = ParseConfig(WithRouter(std::string(kSpines) + R"(
neighbors { address: "10.0.0.1" group: "spines" }
)"), "g.textproto");
  REQUIRE(Located(loaded.errors) == std::vector<std::string>{});
  const v1::Neighbor& n = NeighborAt(loaded, "10.0.0.1");
  CHECK(n.group() == "spines");
  CHECK(n.remote_as() == 65100);
  CHECK(n.passive());
  CHECK(n.timers().hold_time() == 9);
  CHECK(n.timers().keepalive() == 3);  // the defaults run on the merged neighbor: hold/3
  CHECK(n.timers().connect_retry() == 7);
  CHECK(n.import_policies().size() == 1);
  CHECK(n.import_policies(0) == "in");
  CHECK(n.address_families_size() == 2);
  CHECK(n.soft_reconfiguration_inbound());
  CHECK_FALSE(n.graceful_restart().enabled());
  CHECK(n.graceful_restart().restart_time() == 60);
  CHECK(n.link_bandwidth().mode() == v1::NeighborLinkBandwidth::EXPORT_NONE);
  // The group itself stays in the running config (dynamic neighbors are made from it).
  REQUIRE(loaded.config.neighbor_groups_size() == 1);
  CHECK(loaded.config.neighbor_groups(0).listen_limit() == kDefaultListenLimit);
  // No template is left among the neighbors.
  CHECK(loaded.config.neighbors_size() == 1);
}

TEST_CASE("neighbor group: what the neighbor sets wins, field by field", "[conf][groups]") {
  const LoadedConfig loaded = ParseConfig(WithRouter(std::string(kSpines) + R"(
neighbors {
  address: "10.0.0.2"
  group: "spines"
  remote_as: 65200
  passive: false
  timers { keepalive: 2 }
  import_policies: "in2"
  graceful_restart { enabled: true }
  link_bandwidth { mode: EXPORT_CUMULATIVE }
}
neighbors { address: "10.0.0.3" group: "spines" }
)"), "g.textproto");
  REQUIRE(Located(loaded.errors) == std::vector<std::string>{});
  const v1::Neighbor& n = NeighborAt(loaded, "10.0.0.2");
  CHECK(n.remote_as() == 65200);
  CHECK_FALSE(n.passive());              // written false: overrides the group's true
  CHECK(n.timers().hold_time() == 9);    // the group's, in a block the neighbor also sets
  CHECK(n.timers().keepalive() == 2);    // the neighbor's
  CHECK(n.timers().connect_retry() == 7);
  REQUIRE(n.import_policies().size() == 1);
  CHECK(n.import_policies(0) == "in2");  // a list replaces the group's list
  REQUIRE(n.export_policies().size() == 1);
  CHECK(n.export_policies(0) == "out");
  CHECK(n.graceful_restart().enabled());
  CHECK(n.graceful_restart().restart_time() == 60);
  CHECK(n.link_bandwidth().mode() == v1::NeighborLinkBandwidth::EXPORT_CUMULATIVE);
  // Its sibling keeps the group's values: nothing leaks between members.
  const v1::Neighbor& sibling = NeighborAt(loaded, "10.0.0.3");
  CHECK(sibling.remote_as() == 65100);
  CHECK(sibling.passive());
  CHECK(sibling.import_policies(0) == "in");
}

TEST_CASE("neighbor group: the same in JSON", "[conf][groups][json]") {
  const LoadedConfig loaded = ParseConfig(R"({
  "router": {"asn": 65001, "routerId": "192.0.2.1"},
  "neighborGroups": [{"name": "g", "settings": {"remoteAs": 65100, "passive": true, "timers": {"holdTime": 30}}}],
  "neighbors": [{"address": "10.0.0.1", "group": "g", "passive": false}]
})", "g.json");
  REQUIRE(Located(loaded.errors) == std::vector<std::string>{});
  const v1::Neighbor& n = NeighborAt(loaded, "10.0.0.1");
  CHECK(n.remote_as() == 65100);
  CHECK_FALSE(n.passive());
  CHECK(n.timers().hold_time() == 30);
}

TEST_CASE("neighbor group: the groups' own errors, at their lines", "[conf][groups][errors]") {
  const LoadedConfig loaded = ParseConfig(WithRouter(R"(neighbor_groups { name: "a" settings { remote_as: 65100 } }
neighbor_groups { name: "a" settings { remote_as: 65101 } }
neighbor_groups { name: "bad name!" }
neighbor_groups { name: "r" settings { remote_as: 1 address: "10.9.9.9" }
  listen_ranges: ["10.1.0.0/16", "10.1.2.3/16", "nope", "10.1.0.0/16"]
  listen_limit: 0 }
neighbor_groups { name: "m" settings { remote_as: 1 password: "k" } listen_ranges: "10.2.0.0/16" }
neighbors { address: "10.0.0.1" group: "missing" }
)"), "g.textproto");
  CHECK(Located(loaded.errors) ==
        std::vector<std::string>{
            "3:19: neighbor group \"a\" is already defined at line 2: each name may appear only once",
            "4:19: neighbor group \"bad name!\": name may hold letters, digits, '-', '_' and '.', at most 64 characters",
            "5:53: neighbor group \"r\": settings cannot set address: each neighbor has its own (a dynamic neighbor's "
            "is the address its connection comes from)",
            "6:34: neighbor group \"r\": listen range 10.1.2.3/16 has host bits set: use 10.1.0.0/16",
            "6:49: neighbor group \"r\": listen range \"nope\" is not a prefix (e.g. 10.1.0.0/16 or 2001:db8:1::/48)",
            "6:57: neighbor group \"r\": listen range 10.1.0.0/16 is already given at line 6: each range may belong "
            "to one group",
            "7:3: neighbor group \"r\": listen_limit 0 is out of range: use 1..65535",
            "8:53: neighbor group \"m\": password is not supported with listen_ranges: the kernel's TCP-MD5 key is "
            "per address; configure those neighbors one by one",
            "9:33: neighbor 10.0.0.1: group \"missing\" is not defined in neighbor_groups (defined: \"a\", \"m\", "
            "\"r\")"});
}

TEST_CASE("neighbor group: a member's error names the neighbor and the group, at the line that caused it",
          "[conf][groups][errors]") {
  // Line 2: the group's bad hold time; line 4: a member's own bad port.
  const LoadedConfig loaded = ParseConfig(WithRouter(R"(neighbor_groups { name: "spines"
  settings { remote_as: 65100 timers { hold_time: 2 } } }
neighbors { address: "10.0.0.1" group: "spines" }
neighbors { address: "10.0.0.2" group: "spines" port: 70000 timers { hold_time: 30 } }
)"), "g.textproto");
  const std::vector<std::string> errors = Located(loaded.errors);
  REQUIRE(errors.size() == 2);
  CHECK_THAT(errors[0], Contains("3:40: neighbor 10.0.0.1 (group spines): hold_time 2"));
  CHECK_THAT(errors[1], Contains("5:49: neighbor 10.0.0.2 (group spines): port 70000"));
  // `bagd --check` prints the same, with the file name.
  TempDir dir;
  const std::string path = dir.Write("g.textproto", WithRouter(R"(neighbor_groups { name: "spines"
  settings { remote_as: 65100 timers { hold_time: 2 } } }
neighbors { address: "10.0.0.1" group: "spines" }
)"));
  std::ostringstream out;
  CHECK(CheckConfig(path, out) == 1);
  CHECK_THAT(out.str(), Contains(path + ":3:40: neighbor 10.0.0.1 (group spines): hold_time 2"));
}

TEST_CASE("neighbor group: a group with listen ranges is checked as the neighbors it will make",
          "[conf][groups][errors]") {
  // remote_as is missing from the group: every dynamic neighbor would lack it.
  const LoadedConfig loaded = ParseConfig(WithRouter(R"(neighbor_groups { name: "fabric"
  listen_ranges: "10.1.0.0/16" }
)"), "g.textproto");
  const std::vector<std::string> errors = Located(loaded.errors);
  REQUIRE(errors.size() == 1);
  CHECK_THAT(errors[0], Contains("2:1: group fabric: remote_as is required"));
  // A group nobody uses is still checked.
  const LoadedConfig unused = ParseConfig(WithRouter(R"(neighbor_groups { name: "x"
  settings { remote_as: 65100 ttl_security: 300 } }
)"), "g.textproto");
  REQUIRE(unused.errors.size() == 1);
  CHECK_THAT(Located(unused.errors)[0], Contains("3:31: group x: ttl_security 300 is out of range"));
}

TEST_CASE("listen ranges: the longest range decides, and a dynamic neighbor is the group's settings",
          "[conf][groups][dynamic]") {
  const LoadedConfig loaded = ParseConfig(WithRouter(R"(
neighbor_groups { name: "wide" settings { remote_as: 65100 } listen_ranges: ["10.0.0.0/8", "2001:db8::/32"] }
neighbor_groups { name: "narrow" settings { remote_as: 65200 timers { hold_time: 9 } } listen_ranges: "10.1.0.0/16"
  listen_limit: 32 }
)"), "g.textproto");
  REQUIRE(Located(loaded.errors) == std::vector<std::string>{});
  auto at = [&](const char* text) { return MatchListenRange(loaded.config, *bagd::net::IpAddress::Parse(text)); };
  REQUIRE(at("10.1.2.3"));
  CHECK(at("10.1.2.3")->group == 1);
  CHECK(at("10.1.2.3")->range == "10.1.0.0/16");
  CHECK(at("10.2.0.1")->group == 0);
  CHECK(at("2001:db8::7")->group == 0);
  CHECK_FALSE(at("192.0.2.9"));
  CHECK_FALSE(at("2001:db9::1"));
  CHECK(loaded.config.neighbor_groups(1).listen_limit() == 32);

  const v1::Neighbor n = DynamicNeighbor(loaded.config, 1, *bagd::net::IpAddress::Parse("10.1.2.3"));
  CHECK(n.address() == "10.1.2.3");
  CHECK(n.group() == "narrow");
  CHECK(n.passive());
  CHECK(n.remote_as() == 65200);
  CHECK(n.timers().hold_time() == 9);
  CHECK(n.timers().keepalive() == 3);
  CHECK(n.port() == 179);
  REQUIRE(n.address_families_size() == 1);
  CHECK(n.address_families(0) == v1::IPV4_UNICAST);
  CHECK(n.default_import() == v1::DEFAULT_ACTION_REJECT);  // RFC 8212, as for a configured eBGP neighbor
  const v1::Neighbor v6 = DynamicNeighbor(loaded.config, 0, *bagd::net::IpAddress::Parse("2001:db8::7"));
  REQUIRE(v6.address_families_size() == 1);
  CHECK(v6.address_families(0) == v1::IPV6_UNICAST);
}
