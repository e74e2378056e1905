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

namespace bagd::fib {
namespace {

// Micro-BFD (RFC 7130): a member whose session failed counts as down although its carrier is
// up; Up brings it back; the far end's AdminDown is not a failure; require_up counts only Up.
TEST_CASE("capacity with micro-BFD: a failed member session counts as a lost carrier", "[fib][capacity][micro_bfd]") {
  CapacityTracker t({{"lag1", "", {"m0", "m1", "m2"}, std::nullopt}, {"lag2", "", {"n0"}, std::nullopt}});
  for (uint32_t i = 0; i < 3; ++i) t.Update(Link(10 + i, ("m" + std::to_string(i)).c_str(), true, 100));
  t.Update(Link(20, "n0", true, 100));
  CHECK(t.Capacity("lag1") == 300e9);
  // A liveness for a source without micro-BFD is ignored (a change on its way after a reload
  // removed it).
  CHECK(t.SetLiveness("lag1", "m0", BfdLiveness::kFailed).empty());
  CHECK(t.Capacity("lag1") == 300e9);

  // On, not Up yet: the members count (a far end without micro-BFD keeps its LAG).
  CHECK(t.SetMicroBfd("lag1", {"m0", "m1", "m2"}, false).empty());
  CHECK(t.Liveness("lag1", "m0") == BfdLiveness::kUnknown);
  CHECK(t.Liveness("lag2", "n0") == BfdLiveness::kNone);
  CHECK(t.SetLiveness("lag1", "m1", BfdLiveness::kUp).empty());
  // m1's far end dies: 200G, only lag1 changed.
  CHECK(t.SetLiveness("lag1", "m1", BfdLiveness::kFailed) == std::vector<std::string>{"lag1"});
  CHECK(t.Capacity("lag1") == 200e9);
  CHECK(t.Capacity("lag2") == 100e9);
  auto members = t.Members("lag1");
  REQUIRE(members.size() == 3);
  CHECK(members[1].link_up);
  CHECK_FALSE(members[1].up);
  CHECK(members[1].bfd == BfdLiveness::kFailed);
  // Its carrier going too changes nothing more; back with carrier, still down until BFD Up.
  CHECK(t.Update(Link(11, "m1", false, 100)).empty());
  CHECK(t.Update(Link(11, "m1", true, 100)).empty());
  CHECK(t.Capacity("lag1") == 200e9);
  CHECK(t.SetLiveness("lag1", "m1", BfdLiveness::kUp) == std::vector<std::string>{"lag1"});
  CHECK(t.Capacity("lag1") == 300e9);
  // The far end's AdminDown: not a failure.
  CHECK(t.SetLiveness("lag1", "m1", BfdLiveness::kAdminDown).empty());
  CHECK(t.Capacity("lag1") == 300e9);
  // A member unknown to micro-BFD is ignored.
  CHECK(t.SetLiveness("lag1", "m9", BfdLiveness::kFailed).empty());

  // Reload: the same members keep their liveness; a member dropped from micro-BFD counts by
  // its carrier again.
  CHECK(t.SetLiveness("lag1", "m2", BfdLiveness::kFailed) == std::vector<std::string>{"lag1"});
  CHECK(t.Capacity("lag1") == 200e9);
  CHECK(t.SetMicroBfd("lag1", {"m0", "m1", "m2"}, false).empty());
  CHECK(t.Liveness("lag1", "m2") == BfdLiveness::kFailed);
  CHECK(t.SetMicroBfd("lag1", {"m0", "m1"}, false) == std::vector<std::string>{"lag1"});
  CHECK(t.Liveness("lag1", "m2") == BfdLiveness::kNone);
  CHECK(t.Capacity("lag1") == 300e9);
  // micro_bfd removed altogether: carrier only.
  CHECK(t.SetLiveness("lag1", "m0", BfdLiveness::kFailed) == std::vector<std::string>{"lag1"});
  CHECK(t.SetMicroBfd("lag1", {}, false) == std::vector<std::string>{"lag1"});
  CHECK(t.Capacity("lag1") == 300e9);
}

TEST_CASE("capacity with micro-BFD require_up: only members whose session is Up count", "[fib][capacity][micro_bfd]") {
  CapacityTracker t({{"lag1", "", {"m0", "m1"}, 100e9}});
  t.Update(Link(10, "m0", true, 0));
  t.Update(Link(11, "m1", true, 0));
  CHECK(t.SetMicroBfd("lag1", {"m0", "m1"}, true) == std::vector<std::string>{"lag1"});
  CHECK(t.Capacity("lag1") == 0);
  CHECK(t.SetLiveness("lag1", "m0", BfdLiveness::kUp) == std::vector<std::string>{"lag1"});
  CHECK(t.Capacity("lag1") == 100e9);
  CHECK(t.SetLiveness("lag1", "m1", BfdLiveness::kUp) == std::vector<std::string>{"lag1"});
  CHECK(t.Capacity("lag1") == 200e9);
  CHECK(t.SetLiveness("lag1", "m1", BfdLiveness::kAdminDown).empty());
  CHECK(t.SetLiveness("lag1", "m0", BfdLiveness::kFailed) == std::vector<std::string>{"lag1"});
  CHECK(t.Capacity("lag1") == 100e9);
  // Turning require_up off lets a never-Up member count; a failed one stays out.
  CHECK(t.SetMicroBfd("lag1", {"m0", "m1"}, false).empty());
  CHECK(t.Capacity("lag1") == 100e9);
}

TEST_CASE("micro-BFD liveness: what each allows", "[fib][capacity][micro_bfd]") {
  CHECK(BfdAllows(BfdLiveness::kNone, true));
  CHECK(BfdAllows(BfdLiveness::kUp, true));
  CHECK(BfdAllows(BfdLiveness::kAdminDown, true));
  CHECK(BfdAllows(BfdLiveness::kUnknown, false));
  CHECK_FALSE(BfdAllows(BfdLiveness::kUnknown, true));
  CHECK_FALSE(BfdAllows(BfdLiveness::kFailed, false));
  CHECK_FALSE(BfdAllows(BfdLiveness::kFailed, true));
  CHECK(std::string(BfdLivenessName(BfdLiveness::kFailed)) == "down");
}

}  // namespace
}  // namespace bagd::fib
