// Live capacity from link states: explicit members and bond members (IFLA_MASTER), carrier,
// configured speeds. (The bond attributes themselves are decoded in netlink_messages_test.)
#include <catch2/catch.hpp>

#include "fib_sync/capacity.h"

namespace bagd::fib {
namespace {

LinkState Link(uint32_t ifindex, const char* name, bool up, double gbps, uint32_t master = 0) {
  return LinkState{ifindex, name, up, master, gbps * 1e9};
}

TEST_CASE("capacity of an explicit member list", "[fib][capacity]") {
  CapacityTracker t({{"lag1", "", {"m0", "m1", "m2", "m3"}, std::nullopt}});
  for (uint32_t i = 0; i < 4; ++i) t.Update(Link(10 + i, ("m" + std::to_string(i)).c_str(), true, 100));
  t.Update(Link(20, "eth9", true, 400));  // not a member
  CHECK(t.Capacity("lag1") == 400e9);
  // Two members lose carrier.
  CHECK(t.Update(Link(10, "m0", false, 100)) == std::vector<std::string>{"lag1"});
  CHECK(t.Update(Link(11, "m1", false, 100)) == std::vector<std::string>{"lag1"});
  CHECK(t.Capacity("lag1") == 200e9);
  // A change elsewhere changes nothing.
  CHECK(t.Update(Link(20, "eth9", false, 400)).empty());
  // A member removed altogether.
  CHECK(t.Remove(12) == std::vector<std::string>{"lag1"});
  CHECK(t.Capacity("lag1") == 100e9);
  const auto members = t.Members("lag1");
  REQUIRE(members.size() == 4);
  CHECK_FALSE(members[2].present);
  CHECK(members[3].up);
}

TEST_CASE("capacity of a bond: members found by their master", "[fib][capacity]") {
  CapacityTracker t({{"lag1", "bond0", {}, 25e9}});  // member_speed overrides ethtool
  t.Update(Link(5, "bond0", true, 0));
  t.Update(Link(6, "eth1", true, 10, 5));
  t.Update(Link(7, "eth2", true, 10, 5));
  t.Update(Link(8, "eth3", true, 10));  // not enslaved
  CHECK(t.Capacity("lag1") == 50e9);
  CHECK(t.IsMember(Link(6, "eth1", true, 10, 5)));
  CHECK_FALSE(t.IsMember(Link(8, "eth3", true, 10)));
  // eth3 joins the bond, eth1 leaves it.
  CHECK(t.Update(Link(8, "eth3", true, 10, 5)) == std::vector<std::string>{"lag1"});
  t.Update(Link(6, "eth1", true, 10, 0));
  CHECK(t.Capacity("lag1") == 50e9);
  CHECK(t.Members("lag1").size() == 2);
  // Without the bond there are no members.
  t.Remove(5);
  CHECK(t.Capacity("lag1") == 0);
}

}  // namespace
}  // namespace bagd::fib
