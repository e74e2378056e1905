// The decision process as a table numbered by step (RFC 4271 §9.1.2.2, RFC 4456 §9):
// each row makes two paths differ in one thing and says who wins at which step.
#include <catch2/catch.hpp>
#include <functional>

#include "tests/rib/rib_test_support.h"

using namespace bagd;
using namespace bagd::rib;
using namespace bagd::rib::test;

namespace {

struct Row {
  const char* name;
  DecisionStep step;
  std::function<void(AttrsBuilder&, AttrsBuilder&, PathSource&, PathSource&)> setup;  // make A the better one
};

PathSource Src(const char* addr, uint32_t id, bool ebgp = true) {
  return PathSource{ebgp, id, *net::IpAddress::Parse(addr)};
}

}  // namespace

TEST_CASE("Decision: one row per step, the better path wins at that step", "[rib][decision]") {
  const Row rows[] = {
      {"1 higher LOCAL_PREF", DecisionStep::kLocalPref,
       [](auto& a, auto& b, auto&, auto&) { a.LocalPref(200).Path({65001, 65002, 65003}); b.LocalPref(100); }},
      {"2 shorter AS_PATH", DecisionStep::kAsPathLength,
       [](auto& a, auto& b, auto&, auto&) { a.Path({65001}).Origin(wire::Origin::kIncomplete); b.Path({65001, 65002}); }},
      {"3 lower ORIGIN", DecisionStep::kOrigin,
       [](auto& a, auto& b, auto&, auto&) { a.Origin(wire::Origin::kIgp).Med(500); b.Origin(wire::Origin::kEgp); }},
      {"4 lower MED, same neighbor AS", DecisionStep::kMed,
       [](auto& a, auto& b, auto& sa, auto& sb) {
         a.Med(10);
         b.Med(20);
         sa.ebgp = false;
         sb.ebgp = true;
       }},
      {"4 missing MED counts as 0", DecisionStep::kMed, [](auto&, auto& b, auto&, auto&) { b.Med(1); }},
      {"5 eBGP over iBGP", DecisionStep::kEbgpOverIbgp,
       [](auto&, auto&, auto& sa, auto& sb) {
         sa.ebgp = true;
         sb.ebgp = false;
         sa.router_id = 9;
       }},
      {"6 lower router id", DecisionStep::kRouterId,
       [](auto&, auto&, auto& sa, auto& sb) {
         sa.router_id = 1;
         sb.router_id = 2;
         sa.address = *net::IpAddress::Parse("10.0.0.9");
       }},
      {"6 ORIGINATOR_ID stands in for the router id", DecisionStep::kRouterId,
       [](auto& a, auto&, auto& sa, auto& sb) {
         a.OriginatorId(1);
         sa.router_id = 50;
         sb.router_id = 2;
       }},
      {"7 shorter CLUSTER_LIST", DecisionStep::kClusterList,
       [](auto& a, auto& b, auto&, auto&) {
         a.ClusterList({1});
         b.ClusterList({1, 2});
       }},
      {"8 lower peer address", DecisionStep::kPeerAddress,
       [](auto&, auto&, auto& sa, auto& sb) {
         sa.address = *net::IpAddress::Parse("10.0.0.1");
         sb.address = *net::IpAddress::Parse("10.0.0.2");
       }},
  };
  for (const Row& r : rows) {
    DYNAMIC_SECTION(r.name) {
      AttributeStore store;
      AttrsBuilder a, b;
      PathSource sa = Src("10.0.0.5", 7), sb = Src("10.0.0.5", 7);
      r.setup(a, b, sa, sb);
      const AttrRef ra = a.In(store), rb = b.In(store);
      const Candidate ca{ra.get(), &sa, 0}, cb{rb.get(), &sb, 0};
      const Comparison ab = Compare(ca, cb, DecisionConfig{});
      CHECK(ab.winner < 0);
      CHECK(DecisionStepName(ab.step) == std::string(DecisionStepName(r.step)));
      const Comparison ba = Compare(cb, ca, DecisionConfig{});
      CHECK(ba.winner > 0);
      CHECK(ba.step == r.step);
    }
  }
}

TEST_CASE("Decision: MED is compared only within a neighbor AS unless always-compare-med", "[rib][decision]") {
  AttributeStore store;
  const AttrRef a = AttrsBuilder().Path({65001}).Med(50).In(store);
  const AttrRef b = AttrsBuilder().Path({65002}).Med(10).In(store);
  PathSource sa{true, 1, *net::IpAddress::Parse("10.0.0.1")}, sb{true, 2, *net::IpAddress::Parse("10.0.0.2")};
  const Candidate ca{a.get(), &sa, 0}, cb{b.get(), &sb, 0};
  const Comparison c = Compare(ca, cb, DecisionConfig{});
  CHECK(c.winner < 0);
  CHECK(c.step == DecisionStep::kRouterId);  // MED skipped: different neighbor AS
  DecisionConfig always;
  always.always_compare_med = true;
  const Comparison d = Compare(ca, cb, always);
  CHECK(d.winner > 0);
  CHECK(d.step == DecisionStep::kMed);
}

TEST_CASE("Decision: ADD-PATH paths of one peer fall back to the path id", "[rib][decision]") {
  AttributeStore store;
  const AttrRef a = AttrsBuilder().In(store);
  PathSource s{true, 1, *net::IpAddress::Parse("10.0.0.1")};
  const Comparison c = Compare(Candidate{a.get(), &s, 1}, Candidate{a.get(), &s, 2}, DecisionConfig{});
  CHECK(c.winner < 0);
  CHECK(c.step == DecisionStep::kPathId);
  CHECK(std::string(DecisionStepReason(DecisionStep::kLocalPref)) == "lower local-pref");
}
