// WeightsEvent from the weights stage's FIB updates (bgpd/daemon/weight_events.h): the
// registry is driven as the weights stage drives it, each FibUpdate reported with what the
// stage was doing, and the events name the cause and every member before and after.
#include <catch2/catch.hpp>

#include "bgpd/daemon/weight_events.h"

namespace bagd::daemon {
namespace {

struct RecordingSink final : control::EventSink {
  void Publish(control::v1::Event event) override { events.push_back(std::move(event)); }
  std::vector<control::v1::Event> events;
};

net::IpAddress A(const char* text) { return *net::IpAddress::Parse(text); }

rib::MemberInput M(const char* nh, double bps) {
  return rib::MemberInput{A(nh), wire::LinkBandwidth::FromBitsPerSecond(65001, bps, true)};
}

rib::PrefixMembers Route(const char* prefix, std::vector<rib::MemberInput> members) {
  rib::PrefixMembers pm{*net::Prefix::Parse(prefix), {}};
  for (auto& m : members) pm.members.push_back(m);
  return pm;
}

struct Rig {
  Rig() : registry(rib::WeightsConfig{}), reporter(&sink) {}
  // One batch through the registry and the reporter; the events it gave.
  std::vector<control::v1::Event> Step(std::vector<rib::PrefixMembers> batch, absl::Time now,
                                       WeightEventReporter::Context context) {
    if (context == WeightEventReporter::Context::kHoldDownExpiry) {
      registry.Expire(now);
    } else {
      // A reload re-weighs every route at once (WeightsStage::Reconfigure: no hold-down).
      registry.Update(batch, now, /*immediate=*/context == WeightEventReporter::Context::kReload);
    }
    sink.events.clear();
    reporter.Report(registry.TakeFibUpdate(), registry, context, absl::ToUnixMillis(now));
    return sink.events;
  }
  RecordingSink sink;
  rib::NextHopGroupRegistry registry;
  WeightEventReporter reporter;
};

}  // namespace

TEST_CASE("weight events: new group, bandwidth change, held increase due, next hop down, group removed",
          "[daemon][events][weights]") {
  using Context = WeightEventReporter::Context;
  Rig rig;
  const absl::Time t0 = absl::FromUnixSeconds(1714564800);

  auto e = rig.Step({Route("10.0.0.0/24", {M("192.0.2.2", 10e9), M("192.0.2.3", 10e9)})}, t0, Context::kRouteChanges);
  REQUIRE(e.size() == 1);
  const auto& created = e[0].weights();
  CHECK(created.cause() == "new-group");
  CHECK(created.family() == "ipv4-unicast");
  CHECK(created.prefixes() == 1);
  CHECK(e[0].time_unix_ms() == 1714564800000);
  REQUIRE(created.members_size() == 2);
  CHECK(created.members(0).next_hop() == "192.0.2.2");
  CHECK(created.members(0).old_weight() == 0);
  CHECK(created.members(0).new_weight() == 1);
  CHECK(created.members(0).bandwidth_bps() == 10e9);
  const uint32_t group = created.group();

  // A decrease applies at once: the neighbor's link bandwidth is the cause.
  e = rig.Step({Route("10.0.0.0/24", {M("192.0.2.2", 10e9), M("192.0.2.3", 5e9)})}, t0 + absl::Seconds(1),
               Context::kRouteChanges);
  REQUIRE(e.size() == 1);
  CHECK(e[0].weights().group() == group);  // re-keyed in place
  CHECK(e[0].weights().cause() == "link-bandwidth");
  CHECK(e[0].weights().detail() == "192.0.2.3 10G -> 5G");
  CHECK(e[0].weights().members(0).old_weight() == 1);
  CHECK(e[0].weights().members(0).new_weight() == 2);
  CHECK(e[0].weights().members(1).old_weight() == 1);
  CHECK(e[0].weights().members(1).new_weight() == 1);
  CHECK(e[0].weights().members(1).old_bandwidth_bps() == 10e9);
  CHECK(e[0].weights().members(1).applied_bandwidth_bps() == 5e9);

  // The increase back is held down (30 s): nothing reaches the FIB now, then it comes due.
  e = rig.Step({Route("10.0.0.0/24", {M("192.0.2.2", 10e9), M("192.0.2.3", 10e9)})}, t0 + absl::Seconds(2),
               Context::kRouteChanges);
  for (const auto& ev : e) CHECK(ev.weights().cause() != "hold-down-expiry");
  const auto due = rig.registry.NextDue();
  REQUIRE(due.has_value());
  e = rig.Step({}, *due, Context::kHoldDownExpiry);
  REQUIRE(e.size() == 1);
  CHECK(e[0].weights().cause() == "hold-down-expiry");
  CHECK(e[0].weights().detail() == "192.0.2.3 5G -> 10G");
  CHECK(e[0].weights().members(0).new_weight() == 1);
  CHECK(e[0].weights().members(1).new_weight() == 1);

  // A member leaves (its path withdrawn): the group keeps its id, the member its old weight.
  e = rig.Step({Route("10.0.0.0/24", {M("192.0.2.2", 10e9)})}, *due + absl::Seconds(1), Context::kRouteChanges);
  REQUIRE(e.size() == 1);
  CHECK(e[0].weights().cause() == "next-hop-down");
  CHECK(e[0].weights().detail() == "192.0.2.3 left");
  REQUIRE(e[0].weights().members_size() == 2);
  CHECK(e[0].weights().members(1).next_hop() == "192.0.2.3");
  CHECK(e[0].weights().members(1).old_weight() == 1);
  CHECK(e[0].weights().members(1).new_weight() == 0);

  // And joins again.
  e = rig.Step({Route("10.0.0.0/24", {M("192.0.2.2", 10e9), M("192.0.2.3", 10e9)})}, *due + absl::Seconds(2),
               Context::kRouteChanges);
  REQUIRE(e.size() == 1);
  CHECK(e[0].weights().cause() == "next-hop-up");
  CHECK(e[0].weights().detail() == "192.0.2.3 joined");

  // The route goes: the group is deleted.
  e = rig.Step({Route("10.0.0.0/24", {})}, *due + absl::Seconds(3), Context::kRouteChanges);
  REQUIRE(!e.empty());
  CHECK(e.back().weights().cause() == "group-removed");
  CHECK(e.back().weights().group() == group);
  CHECK(e.back().weights().members(0).new_weight() == 0);
}

TEST_CASE("weight events: a reload's new weights say so", "[daemon][events][weights]") {
  using Context = WeightEventReporter::Context;
  Rig rig;
  const absl::Time t0 = absl::FromUnixSeconds(1714564800);
  rig.Step({Route("10.0.0.0/24", {M("192.0.2.2", 10e9), M("192.0.2.3", 10e9)})}, t0, Context::kRouteChanges);
  // An increase that a reload applies at once (no hold-down): the cause is the reload.
  auto e = rig.Step({Route("10.0.0.0/24", {M("192.0.2.2", 20e9), M("192.0.2.3", 10e9)})}, t0 + absl::Seconds(1),
                    Context::kReload);
  REQUIRE(e.size() == 1);
  CHECK(e[0].weights().cause() == "reload");
  CHECK(e[0].weights().members(0).new_weight() == 2);
  CHECK(e[0].weights().members(1).new_weight() == 1);
}

}  // namespace bagd::daemon
