// Local capacity as a weight input (docs/capacity.md, "Local capacity"): a member reached
// over one of our own LAGs weighs min(advertised after its hold-down, the LAG's capacity);
// a member without link bandwidth over a LAG weighs the LAG's capacity. Pure: the registry
// with time as an argument.
#include <catch2/catch.hpp>

#include "rib/weights/member_bandwidth.h"
#include "rib/weights/nexthop_group_registry.h"

namespace bagd::rib {
namespace {

// New members' first increases settle (new_path_settle); these tests damp a recovery that
// comes right after the members join.
WeightsConfig NoSettle() {
  WeightsConfig c;
  c.damping.new_path_settle = absl::ZeroDuration();
  return c;
}

net::IpAddress A(const char* s) { return *net::IpAddress::Parse(s); }
net::Prefix P(const char* s) { return *net::Prefix::Parse(s); }

MemberInput M(const char* nh, std::optional<double> bps, int16_t local = -1) {
  MemberInput m{A(nh), std::nullopt, local};
  if (bps) m.link_bandwidth = wire::LinkBandwidth::FromBitsPerSecond(65001, *bps, true);
  return m;
}

// The installed weights of `prefix`'s group, "nh*w ..." in next-hop order.
std::string Weights(const NextHopGroupRegistry& r, const char* prefix) {
  const NextHopGroup* g = r.GroupOf(P(prefix));
  if (g == nullptr) return "none";
  std::string out;
  for (const auto& m : g->installed) out += (out.empty() ? "" : " ") + m.next_hop.ToString() + "*" + std::to_string(m.weight);
  return out;
}

const NextHopGroup::Member& MemberOf(const NextHopGroupRegistry& r, const char* prefix, const char* nh) {
  const NextHopGroup* g = r.GroupOf(P(prefix));
  REQUIRE(g != nullptr);
  for (const auto& m : g->members) {
    if (m.next_hop == A(nh)) return m;
  }
  FAIL("no member " << nh);
  return g->members.front();
}

const absl::Time t0 = absl::FromUnixSeconds(1'800'000'000);

TEST_CASE("a path without link bandwidth over a LAG is weighed at the LAG, not 'missing'", "[weights][local]") {
  BandwidthPolicy p;  // MISSING_EQUAL_COST
  const std::vector<MemberInput> in = {M("10.0.0.1", 4e11), M("10.0.0.2", std::nullopt, 0)};
  const auto r = ResolveBandwidths(in, p);
  REQUIRE(r.members.size() == 2);
  CHECK(r.members[0].source == BandwidthSource::kCommunity);
  CHECK(r.members[1].source == BandwidthSource::kLocalLink);
  CHECK(r.members[1].local_source == 0);
  SECTION("without a LAG the same set is equal cost") {
    const std::vector<MemberInput> plain = {M("10.0.0.1", 4e11), M("10.0.0.2", std::nullopt)};
    CHECK(ResolveBandwidths(plain, p).members[1].source == BandwidthSource::kEqualCost);
  }
  SECTION("mode ignore stays plain ECMP") {
    p.use_link_bandwidth = false;
    CHECK(ResolveBandwidths(in, p).members[1].source == BandwidthSource::kEqualCost);
  }
}

TEST_CASE("member bandwidth = min(advertised, local capacity)", "[weights][local]") {
  NextHopGroupRegistry r(NoSettle());  // its members recover right after they join: damped
  r.SetLocalSources({"lag1"});
  r.SetLocalCapacity(0, 8e11);  // 2 x 400G up
  // a: 400G over lag1; b: 400G, not over a LAG.
  const std::vector<PrefixMembers> routes = {
      {P("10.1.0.0/24"), {M("10.0.0.1", 4e11, 0), M("10.0.0.2", 4e11)}},
      {P("10.1.1.0/24"), {M("10.0.0.1", 4e11, 0), M("10.0.0.2", 4e11)}},
  };
  r.Update(routes, t0);
  (void)r.TakeFibUpdate();
  CHECK(Weights(r, "10.1.0.0/24") == "10.0.0.1*1 10.0.0.2*1");  // the LAG (800G) is not the bottleneck
  CHECK_FALSE(MemberOf(r, "10.1.0.0/24", "10.0.0.1").local_capped);
  CHECK(r.local_capped_members() == 0);
  const GroupId id = r.GroupOf(P("10.1.0.0/24"))->id;

  SECTION("the LAG drops below what is advertised: the group is re-weighed in place") {
    r.SetLocalCapacity(0, 2e11);  // 1 x 200G left
    CHECK(Weights(r, "10.1.0.0/24") == "10.0.0.1*1 10.0.0.2*2");
    const auto& m = MemberOf(r, "10.1.0.0/24", "10.0.0.1");
    CHECK(m.local_capped);
    CHECK(m.effective == 2e11);
    CHECK(m.hold.applied() == Approx(4e11));  // what it advertises is untouched (a float32 of bytes/s)
    CHECK(r.GroupOf(P("10.1.0.0/24"))->id == id);
    CHECK(r.GroupOf(P("10.1.1.0/24"))->id == id);
    const FibUpdate u = r.TakeFibUpdate();
    CHECK(u.group_upserts.size() == 1);  // one group operation for both prefixes
    CHECK(u.route_upserts.empty());
    CHECK(r.local_capped_members() == 1);
    SECTION("and recovers") {
      r.SetLocalCapacity(0, 8e11);
      CHECK(Weights(r, "10.1.0.0/24") == "10.0.0.1*1 10.0.0.2*1");
      CHECK(r.local_capped_members() == 0);
    }
  }
  SECTION("an advertised drop below the LAG: the advertised value decides") {
    const std::vector<PrefixMembers> lower = {
        {P("10.1.0.0/24"), {M("10.0.0.1", 1e11, 0), M("10.0.0.2", 4e11)}},
        {P("10.1.1.0/24"), {M("10.0.0.1", 1e11, 0), M("10.0.0.2", 4e11)}},
    };
    r.Update(lower, t0 + absl::Seconds(1));
    CHECK(Weights(r, "10.1.0.0/24") == "10.0.0.1*1 10.0.0.2*4");
    CHECK_FALSE(MemberOf(r, "10.1.0.0/24", "10.0.0.1").local_capped);
  }
  SECTION("an advertised increase is still held while the LAG allows more") {
    r.SetLocalCapacity(0, 1.6e12);
    const std::vector<PrefixMembers> higher = {
        {P("10.1.0.0/24"), {M("10.0.0.1", 8e11, 0), M("10.0.0.2", 4e11)}},
        {P("10.1.1.0/24"), {M("10.0.0.1", 8e11, 0), M("10.0.0.2", 4e11)}},
    };
    r.Update(higher, t0 + absl::Seconds(1));
    CHECK(Weights(r, "10.1.0.0/24") == "10.0.0.1*1 10.0.0.2*1");
    CHECK(MemberOf(r, "10.1.0.0/24", "10.0.0.1").hold.state() == HoldDownState::kPendingIncrease);
    r.Expire(t0 + absl::Seconds(31));
    CHECK(Weights(r, "10.1.0.0/24") == "10.0.0.1*2 10.0.0.2*1");
  }
}

TEST_CASE("members without link bandwidth follow their LAGs", "[weights][local]") {
  NextHopGroupRegistry r(WeightsConfig{});
  r.SetLocalSources({"lag1", "lag2"});
  r.SetLocalCapacity(0, 8e11);
  r.SetLocalCapacity(1, 4e11);
  const std::vector<PrefixMembers> routes = {
      {P("10.2.0.0/24"), {M("10.0.1.1", std::nullopt, 0), M("10.0.2.1", std::nullopt, 1)}},
  };
  r.Update(routes, t0);
  CHECK(Weights(r, "10.2.0.0/24") == "10.0.1.1*2 10.0.2.1*1");
  CHECK(MemberOf(r, "10.2.0.0/24", "10.0.1.1").source == BandwidthSource::kLocalLink);
  CHECK(r.local_capped_members() == 2);
  SECTION("one LAG loses half its members") {
    r.SetLocalCapacity(0, 4e11);
    CHECK(Weights(r, "10.2.0.0/24") == "10.0.1.1*1 10.0.2.1*1");
  }
  SECTION("one LAG is down: its next hop carries nothing") {
    r.SetLocalCapacity(1, 0);
    CHECK(Weights(r, "10.2.0.0/24") == "10.0.1.1*1");
  }
  SECTION("every LAG is down: the capacity gives no proportions and is not used") {
    r.SetLocalCapacity(0, 0);
    r.SetLocalCapacity(1, 0);
    CHECK(Weights(r, "10.2.0.0/24") == "10.0.1.1*1 10.0.2.1*1");
  }
}

TEST_CASE("a source unknown yet caps nothing, renamed sources keep their value", "[weights][local]") {
  NextHopGroupRegistry r(WeightsConfig{});
  r.SetLocalSources({"lag1"});
  const std::vector<PrefixMembers> routes = {{P("10.3.0.0/24"), {M("10.0.0.1", 4e11, 0), M("10.0.0.2", 1e11)}}};
  r.Update(routes, t0);
  CHECK(Weights(r, "10.3.0.0/24") == "10.0.0.1*4 10.0.0.2*1");
  r.SetLocalCapacity(0, 1e11);
  CHECK(Weights(r, "10.3.0.0/24") == "10.0.0.1*1 10.0.0.2*1");
  r.SetLocalSources({"lag0", "lag1"});
  REQUIRE(r.local_link(1) != nullptr);
  CHECK(r.local_link(1)->known);
  CHECK(r.local_link(1)->bps == 1e11);
  CHECK_FALSE(r.local_link(0)->known);
}

TEST_CASE("the same next hop over a LAG and not is two groups", "[weights][local]") {
  NextHopGroupRegistry r(WeightsConfig{});
  r.SetLocalSources({"lag1"});
  r.SetLocalCapacity(0, 1e11);
  const std::vector<PrefixMembers> routes = {
      {P("10.4.0.0/24"), {M("10.0.0.1", 4e11, 0), M("10.0.0.2", 1e11)}},
      {P("10.4.1.0/24"), {M("10.0.0.1", 4e11), M("10.0.0.2", 1e11)}},
  };
  r.Update(routes, t0);
  CHECK(r.GroupOf(P("10.4.0.0/24")) != r.GroupOf(P("10.4.1.0/24")));
  CHECK(Weights(r, "10.4.0.0/24") == "10.0.0.1*1 10.0.0.2*1");
  CHECK(Weights(r, "10.4.1.0/24") == "10.0.0.1*4 10.0.0.2*1");
}

}  // namespace
}  // namespace bagd::rib
