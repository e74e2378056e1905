// The BFD settings (Neighbor.bfd, bfd_profiles): what loads, the errors with line:column, and
// how a neighbor's fields, its profile and the defaults combine.
#include <catch2/catch.hpp>

#include "conf/bfd_settings.h"
#include "conf/config_loader.h"
#include "tests/conf/conf_test_support.h"

using namespace bagd::conf;
using namespace bagd::conf::testing;

namespace {

LoadedConfig Load(const std::string& text) { return ParseConfig(WithRouter(text), "t"); }

}  // namespace

TEST_CASE("bfd config: valid settings load and combine with their profile", "[conf][bfd]") {
  auto loaded = Load(R"(
bfd_profiles { name: "fast" min_tx: 50 min_rx: 50 multiplier: 3 }
bfd_profiles { name: "strict" hold_bgp_until_up: true passive: true }
neighbors { address: "192.0.2.2" remote_as: 65002 bfd {} }
neighbors { address: "192.0.2.3" remote_as: 65002 bfd { profile: "fast" min_rx: 100 } }
neighbors { address: "2001:db8::3" remote_as: 65002 bfd { profile: "strict" multihop: true multiplier: 1 } }
neighbors { address: "192.0.2.4" remote_as: 65002 bfd { min_tx: 10 min_rx: 60000 multiplier: 255 } }
neighbors { address: "192.0.2.5" remote_as: 65002 }
)");
  REQUIRE(loaded.errors.empty());
  const auto& c = loaded.config;
  const auto plain = EffectiveBfd(c, c.neighbors(0));
  REQUIRE(plain);
  CHECK(*plain == BfdSettings{});
  CHECK(plain->min_tx_ms == 300);
  CHECK(plain->multiplier == 3);
  const auto fast = EffectiveBfd(c, c.neighbors(1));
  REQUIRE(fast);
  CHECK(fast->min_tx_ms == 50);
  CHECK(fast->min_rx_ms == 100);  // the neighbor's field wins
  const auto strict = EffectiveBfd(c, c.neighbors(2));
  REQUIRE(strict);
  CHECK(strict->hold_bgp_until_up);
  CHECK(strict->passive);
  CHECK(strict->multihop);
  CHECK(strict->multiplier == 1);
  CHECK(strict->min_tx_ms == 300);
  CHECK_FALSE(EffectiveBfd(c, c.neighbors(4)).has_value());
}

TEST_CASE("bfd config: errors name the line and column", "[conf][bfd]") {
  auto loaded = Load(R"(bfd_profiles { name: "fast" min_tx: 5 }
bfd_profiles { name: "fast" }
bfd_profiles { multiplier: 0 }
neighbors { address: "192.0.2.2" remote_as: 65002 bfd { profile: "nope" min_rx: 60001 } }
)");
  const auto errors = Located(loaded.errors);
  REQUIRE(errors.size() == 6);
  CHECK(errors[0] == "2:29: bfd profile \"fast\": bfd min_tx 5 is out of range: use 10..60000 milliseconds");
  CHECK(errors[1] == "3:16: bfd profile \"fast\" is already defined at line 2: each name may appear only once");
  CHECK(errors[2] == "4:1: bfd_profiles #3: name is required");
  CHECK(errors[3] ==
        "4:16: bfd profile \"\": bfd multiplier 0 is out of range: use 1..255 (RFC 5880 Detect Mult; 3 is usual)");
  CHECK(errors[4] == "5:57: neighbor 192.0.2.2: bfd profile \"nope\" is not defined in bfd_profiles");
  CHECK(errors[5] == "5:73: neighbor 192.0.2.2: bfd min_rx 60001 is out of range: use 10..60000 milliseconds");
}

TEST_CASE("bfd config: a neighbor group carries bfd to its members, merged field by field", "[conf][bfd]") {
  auto loaded = Load(R"(
bfd_profiles { name: "fast" min_tx: 50 min_rx: 50 }
neighbor_groups { name: "spines" settings { remote_as: 65002 bfd { profile: "fast" hold_bgp_until_up: true } } }
neighbors { address: "192.0.2.2" group: "spines" }
neighbors { address: "192.0.2.3" group: "spines" bfd { min_rx: 100 } }
)");
  REQUIRE(loaded.errors.empty());
  const auto& c = loaded.config;
  const auto a = EffectiveBfd(c, c.neighbors(0));
  REQUIRE(a);
  CHECK(a->min_tx_ms == 50);
  CHECK(a->min_rx_ms == 50);
  CHECK(a->hold_bgp_until_up);
  const auto b = EffectiveBfd(c, c.neighbors(1));
  REQUIRE(b);
  CHECK(b->min_tx_ms == 50);
  CHECK(b->min_rx_ms == 100);
  CHECK(b->hold_bgp_until_up);
}

TEST_CASE("bfd config: micro_bfd on a capacity source loads and combines with its profile", "[conf][bfd][micro_bfd]") {
  auto loaded = Load(R"(
bfd_profiles { name: "fast" min_tx: 50 min_rx: 50 multiplier: 4 multihop: true passive: true }
capacity_sources { name: "lag1" members: ["eth1", "eth2"]
  micro_bfd { local_address: "10.9.0.1" neighbor_address: "10.9.0.2" profile: "fast" min_rx: 100 } }
capacity_sources { name: "lag2" members: ["eth3"]
  micro_bfd { local_address: "2001:db8::1" neighbor_address: "2001:db8::2" require_up: true } }
capacity_sources { name: "lag3" members: ["eth4"] }
)");
  REQUIRE(loaded.errors.empty());
  const auto& c = loaded.config;
  const auto a = EffectiveMicroBfd(c, c.capacity_sources(0));
  REQUIRE(a);
  CHECK(a->timers.min_tx_ms == 50);
  CHECK(a->timers.min_rx_ms == 100);  // the source's field wins
  CHECK(a->timers.multiplier == 4);
  CHECK_FALSE(a->timers.multihop);  // a profile's role does not apply to a member
  CHECK_FALSE(a->timers.passive);
  CHECK(a->local_address == "10.9.0.1");
  CHECK(a->neighbor_address == "10.9.0.2");
  CHECK_FALSE(a->require_up);
  const auto b = EffectiveMicroBfd(c, c.capacity_sources(1));
  REQUIRE(b);
  CHECK(b->timers.min_tx_ms == 300);
  CHECK(b->timers.multiplier == 3);
  CHECK(b->require_up);
  CHECK_FALSE(EffectiveMicroBfd(c, c.capacity_sources(2)).has_value());
}

TEST_CASE("bfd config: micro_bfd errors name the line and column", "[conf][bfd][micro_bfd]") {
  auto loaded = Load(R"(capacity_sources { name: "lag1" bond: "bond0"
  micro_bfd { local_address: "10.9.0.1" neighbor_address: "10.9.0.2" } }
capacity_sources { name: "lag2" members: ["eth1"]
  micro_bfd { local_address: "10.9.0.1" neighbor_address: "2001:db8::2" profile: "nope" min_tx: 5 } }
capacity_sources { name: "lag3" members: ["eth2"]
  micro_bfd { neighbor_address: "10.9.0.300" multiplier: 0 } }
capacity_sources { name: "lag4" members: ["eth3"]
  micro_bfd { local_address: "10.9.0.1" neighbor_address: "10.9.0.1" } }
)");
  const auto errors = Located(loaded.errors);
  REQUIRE(errors.size() == 8);
  CHECK(errors[0] ==
        "3:3: capacity source lag1: micro_bfd: needs the members listed (`members`), not `bond`: bagd cannot send on "
        "one member of a Linux bond (docs/bfd.md \"Micro-BFD\")");
  // In the order of the text (line, column).
  CHECK(errors[1] ==
        "5:15: capacity source lag2: micro_bfd: local_address 10.9.0.1 is IPv4 but neighbor_address 2001:db8::2 is "
        "IPv6: give both in one family");
  CHECK(errors[2] == "5:73: capacity source lag2: micro_bfd: bfd profile \"nope\" is not defined in bfd_profiles");
  CHECK(errors[3] == "5:89: capacity source lag2: micro_bfd: bfd min_tx 5 is out of range: use 10..60000 milliseconds");
  CHECK(errors[4] == "7:3: capacity source lag3: micro_bfd: local_address is required (our address on the LAG)");
  CHECK(errors[5] ==
        "7:15: capacity source lag3: micro_bfd: neighbor_address \"10.9.0.300\" is not an IPv4 or IPv6 address");
  CHECK(errors[6] ==
        "7:46: capacity source lag3: micro_bfd: bfd multiplier 0 is out of range: use 1..255 (RFC 5880 Detect Mult; 3 "
        "is usual)");
  CHECK(errors[7] == "9:41: capacity source lag4: micro_bfd: neighbor_address is our local_address: give the far "
                     "end's address");
}
