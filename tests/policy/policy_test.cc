// Policies as a whole: each condition and each action on its own, then table tests of
// statement order, dispositions, chains, traces and counters.
#include "policy/policy.h"

#include "tests/policy/policy_test_support.h"

using namespace bagd;
using namespace bagd::policy;
using namespace bagd::policy::testing;

namespace {

constexpr const char* kSets = R"pb(
  defined_sets {
    prefix_sets { name: "ten" prefixes { prefix: "10.0.0.0/8" le: 24 } }
    community_sets { name: "tag" communities: "65000:100" communities: "65000:200" }
    as_path_sets { name: "from-65001" regexes: "^65001_" }
    neighbor_sets { name: "spines" addresses: "198.51.100.2" addresses: "2001:db8::2" }
    next_hop_sets { name: "lan" next_hops: "198.51.100.0/24" }
  }
)pb";

// A policy with one statement: `conditions` and accept; everything else falls through.
PolicySet OneCondition(const std::string& conditions) {
  return CompilePolicies(std::string(kSets) + "policies { name: \"p\" statements { conditions { " + conditions +
                         " } actions { disposition: DISPOSITION_ACCEPT } } }");
}

bool Accepts(const PolicySet& set, const RouteContext& route) {
  const PolicyResult r = Evaluate(*set.Find("p"), route);
  CHECK(r.verdict != Verdict::kReject);
  return r.verdict == Verdict::kAccept;
}

// A policy with one statement that runs `actions` and accepts; returns the attributes.
wire::PathAttributes After(const std::string& actions, const wire::PathAttributes& in,
                           PolicyResult* result_out = nullptr) {
  const PolicySet set = CompilePolicies(std::string(kSets) + "policies { name: \"p\" statements { actions { " +
                                        actions + " disposition: DISPOSITION_ACCEPT } } }");
  PolicyResult r = Evaluate(*set.Find("p"), Route("10.1.0.0/16", in));
  REQUIRE(r.verdict == Verdict::kAccept);
  wire::PathAttributes out = r.attributes(Route("10.1.0.0/16", in));
  if (result_out != nullptr) *result_out = std::move(r);
  return out;
}

}  // namespace

// --- conditions -------------------------------------------------------------------------------

TEST_CASE("condition: prefix set, and its inversion", "[policy][condition]") {
  const wire::PathAttributes a = Attrs();
  const PolicySet any = OneCondition("prefix_set { set: \"ten\" }");
  CHECK(Accepts(any, Route("10.1.0.0/16", a)));
  CHECK_FALSE(Accepts(any, Route("10.1.1.0/25", a)));  // longer than le 24
  CHECK_FALSE(Accepts(any, Route("11.0.0.0/8", a)));
  const PolicySet invert = OneCondition("prefix_set { set: \"ten\" match: SET_MATCH_INVERT }");
  CHECK_FALSE(Accepts(invert, Route("10.1.0.0/16", a)));
  CHECK(Accepts(invert, Route("11.0.0.0/8", a)));
  CHECK(any.Find("p")->depends_on_prefix());
}

TEST_CASE("condition: community set any/all/invert", "[policy][condition]") {
  wire::PathAttributes one = Attrs(), both = Attrs(), none = Attrs();
  one.communities = {Community(65000, 100)};
  both.communities = {Community(65000, 200), Community(65000, 100)};
  none.communities = {Community(65000, 300)};
  const PolicySet any = OneCondition("community_set { set: \"tag\" }");
  const PolicySet all = OneCondition("community_set { set: \"tag\" match: SET_MATCH_ALL }");
  const PolicySet invert = OneCondition("community_set { set: \"tag\" match: SET_MATCH_INVERT }");
  CHECK(Accepts(any, Route("10.0.0.0/8", one)));
  CHECK(Accepts(any, Route("10.0.0.0/8", both)));
  CHECK_FALSE(Accepts(any, Route("10.0.0.0/8", none)));
  CHECK_FALSE(Accepts(all, Route("10.0.0.0/8", one)));
  CHECK(Accepts(all, Route("10.0.0.0/8", both)));
  CHECK_FALSE(Accepts(invert, Route("10.0.0.0/8", one)));
  CHECK(Accepts(invert, Route("10.0.0.0/8", none)));
  CHECK_FALSE(any.Find("p")->depends_on_prefix());
}

TEST_CASE("condition: AS-path set", "[policy][condition]") {
  const PolicySet set = OneCondition("as_path_set { set: \"from-65001\" }");
  CHECK(Accepts(set, Route("10.0.0.0/8", Attrs({65001, 65002}))));
  CHECK_FALSE(Accepts(set, Route("10.0.0.0/8", Attrs({65002, 65001}))));
  wire::PathAttributes no_path = Attrs();
  no_path.as_path.reset();
  CHECK_FALSE(Accepts(set, Route("10.0.0.0/8", no_path)));
}

TEST_CASE("condition: neighbor set, a local route has no neighbor", "[policy][condition]") {
  const wire::PathAttributes a = Attrs();
  const PolicySet set = OneCondition("neighbor_set { set: \"spines\" }");
  CHECK(Accepts(set, Route("10.0.0.0/8", a, RouteSource::kEbgp, "198.51.100.2")));
  CHECK(Accepts(set, Route("10.0.0.0/8", a, RouteSource::kIbgp, "2001:db8::2")));
  CHECK_FALSE(Accepts(set, Route("10.0.0.0/8", a, RouteSource::kEbgp, "198.51.100.3")));
  CHECK_FALSE(Accepts(set, Route("10.0.0.0/8", a, RouteSource::kLocal)));
  const PolicySet invert = OneCondition("neighbor_set { set: \"spines\" match: SET_MATCH_INVERT }");
  CHECK(Accepts(invert, Route("10.0.0.0/8", a, RouteSource::kLocal)));
  CHECK(set.Find("p")->depends_on_neighbor());
}

TEST_CASE("condition: next-hop set, NEXT_HOP or MP_REACH", "[policy][condition]") {
  const PolicySet set = OneCondition("next_hop_set { set: \"lan\" }");
  wire::PathAttributes a = Attrs();
  CHECK(Accepts(set, Route("10.0.0.0/8", a)));
  a.next_hop = A("203.0.113.1");
  CHECK_FALSE(Accepts(set, Route("10.0.0.0/8", a)));
  a.next_hop.reset();
  a.mp_reach = wire::MpReach{net::Family::kIpv4Unicast, A("198.51.100.9"), std::nullopt, {}};  // RFC 8950 style
  CHECK(Accepts(set, Route("10.0.0.0/8", a)));
  a.mp_reach.reset();
  CHECK_FALSE(Accepts(set, Route("10.0.0.0/8", a)));  // no next hop at all
}

TEST_CASE("condition: origin", "[policy][condition]") {
  const PolicySet set = OneCondition("origins: ORIGIN_IGP origins: ORIGIN_EGP");
  wire::PathAttributes a = Attrs();
  CHECK(Accepts(set, Route("10.0.0.0/8", a)));
  a.origin = wire::Origin::kEgp;
  CHECK(Accepts(set, Route("10.0.0.0/8", a)));
  a.origin = wire::Origin::kIncomplete;
  CHECK_FALSE(Accepts(set, Route("10.0.0.0/8", a)));
}

TEST_CASE("condition: AS-path length (RFC 4271 §9.1.2.2 a)", "[policy][condition]") {
  const PolicySet set = OneCondition("as_path_length { min: 2 max: 3 }");
  CHECK_FALSE(Accepts(set, Route("10.0.0.0/8", Attrs({65001}))));
  CHECK(Accepts(set, Route("10.0.0.0/8", Attrs({65001, 65002}))));
  CHECK(Accepts(set, Route("10.0.0.0/8", Attrs({65001, 65002, 65003}))));
  CHECK_FALSE(Accepts(set, Route("10.0.0.0/8", Attrs({65001, 65002, 65003, 65004}))));
  wire::PathAttributes with_set = Attrs({65001});
  with_set.as_path->segments.push_back({wire::AsSegmentType::kSet, {65005, 65006, 65007}});  // counts 1
  CHECK(Accepts(set, Route("10.0.0.0/8", with_set)));
  const PolicySet only_max = OneCondition("as_path_length { max: 0 }");
  CHECK(Accepts(only_max, Route("10.0.0.0/8", Attrs({}))));
  CHECK_FALSE(Accepts(only_max, Route("10.0.0.0/8", Attrs({65001}))));
}

TEST_CASE("condition: link bandwidth present, absent, in a range", "[policy][condition]") {
  wire::PathAttributes none = Attrs(), ten = Attrs(), hundred = Attrs(), broken = Attrs();
  ten.extended_communities = {Lb(10e9)};
  hundred.extended_communities = {Lb(100e9)};
  broken.extended_communities = {wire::LinkBandwidth::Make(65001, -1.0f, true).ToExtendedCommunity()};
  const PolicySet present = OneCondition("link_bandwidth { presence: PRESENCE_PRESENT }");
  const PolicySet absent = OneCondition("link_bandwidth { presence: PRESENCE_ABSENT }");
  const PolicySet range = OneCondition("link_bandwidth { min: \"1G\" max: \"40G\" }");
  CHECK_FALSE(Accepts(present, Route("10.0.0.0/8", none)));
  CHECK(Accepts(present, Route("10.0.0.0/8", ten)));
  CHECK_FALSE(Accepts(present, Route("10.0.0.0/8", broken)));  // RFC 10005: invalid counts as none
  CHECK(Accepts(absent, Route("10.0.0.0/8", none)));
  CHECK(Accepts(absent, Route("10.0.0.0/8", broken)));
  CHECK_FALSE(Accepts(absent, Route("10.0.0.0/8", ten)));
  CHECK(Accepts(range, Route("10.0.0.0/8", ten)));
  CHECK_FALSE(Accepts(range, Route("10.0.0.0/8", hundred)));
  CHECK_FALSE(Accepts(range, Route("10.0.0.0/8", none)));
}

TEST_CASE("condition: route source", "[policy][condition]") {
  const wire::PathAttributes a = Attrs();
  const PolicySet set = OneCondition("sources: ROUTE_SOURCE_IBGP sources: ROUTE_SOURCE_LOCAL");
  CHECK_FALSE(Accepts(set, Route("10.0.0.0/8", a, RouteSource::kEbgp)));
  CHECK(Accepts(set, Route("10.0.0.0/8", a, RouteSource::kIbgp)));
  CHECK(Accepts(set, Route("10.0.0.0/8", a, RouteSource::kLocal)));
}

TEST_CASE("conditions are ANDed, no conditions match everything", "[policy][condition]") {
  wire::PathAttributes a = Attrs({65001, 65009});
  a.communities = {Community(65000, 100)};
  const PolicySet set = OneCondition(
      "prefix_set { set: \"ten\" } community_set { set: \"tag\" } as_path_set { set: \"from-65001\" }");
  CHECK(Accepts(set, Route("10.0.0.0/8", a)));
  CHECK_FALSE(Accepts(set, Route("11.0.0.0/8", a)));
  a.communities.clear();
  CHECK_FALSE(Accepts(set, Route("10.0.0.0/8", a)));
  CHECK(Accepts(OneCondition(""), Route("11.0.0.0/8", a)));
}

// --- actions ----------------------------------------------------------------------------------

TEST_CASE("action: local-pref and MED", "[policy][action]") {
  const wire::PathAttributes out = After("local_pref: 200 med: 0", Attrs());
  CHECK(out.local_pref == 200u);
  CHECK(out.med == 0u);  // MED 0 is a value, not "unset"
}

TEST_CASE("action: communities add, remove, replace", "[policy][action]") {
  wire::PathAttributes in = Attrs();
  in.communities = {Community(65000, 1), Community(65000, 2)};
  in.large_communities = {{65000, 9, 9}};
  in.extended_communities = {Lb(10e9), {0x0002FDE800000007}};

  wire::PathAttributes out =
      After("communities { op: OP_ADD communities: \"65000:3\" communities: \"65000:1\" communities: \"65000:1:2\" }", in);
  CHECK(out.communities == std::vector<uint32_t>{Community(65000, 1), Community(65000, 2), Community(65000, 3)});
  CHECK(out.large_communities.size() == 2);

  out = After("communities { op: OP_REMOVE communities: \"65000:1\" communities: \"65000:9:9\" "
              "communities: \"rt:65000:7\" }",
              in);
  CHECK(out.communities == std::vector<uint32_t>{Community(65000, 2)});
  CHECK(out.large_communities.empty());
  CHECK(out.extended_communities == std::vector<wire::ExtendedCommunity>{Lb(10e9)});

  out = After("communities { op: OP_REPLACE communities: \"65000:7\" }", in);
  CHECK(out.communities == std::vector<uint32_t>{Community(65000, 7)});
  CHECK(out.large_communities.size() == 1);  // other kinds untouched

  out = After("communities { op: OP_REPLACE communities: \"rt:65000:8\" }", in);
  CHECK(out.extended_communities == std::vector<wire::ExtendedCommunity>{Lb(10e9), {0x0002FDE800000008}});  // LB stays

  out = After("communities { op: OP_REPLACE }", in);  // an empty list clears the standard ones
  CHECK(out.communities.empty());

  out = After("communities { op: OP_REMOVE communities: \"65000:2\" } communities { op: OP_ADD communities: \"65000:2\" }",
              in);
  CHECK(out.communities == std::vector<uint32_t>{Community(65000, 1), Community(65000, 2)});  // in order
}

TEST_CASE("action: AS-path prepend, own AS by default", "[policy][action]") {
  CHECK(After("as_path_prepend { repeat: 3 }", Attrs({65001})).as_path == Path({65000, 65000, 65000, 65001}));
  CHECK(After("as_path_prepend { asn: 65099 repeat: 1 }", Attrs({65001})).as_path == Path({65099, 65001}));
  CHECK(After("as_path_prepend { repeat: 2 }", Attrs({})).as_path == Path({65000, 65000}));
  wire::PathAttributes set_first = Attrs({});
  set_first.as_path->segments = {{wire::AsSegmentType::kSet, {65001, 65002}}};
  const wire::AsPath out = *After("as_path_prepend { repeat: 1 }", set_first).as_path;
  REQUIRE(out.segments.size() == 2);
  CHECK(out.segments[0] == wire::AsPathSegment{wire::AsSegmentType::kSequence, {65000}});
  CHECK(out.ToString() == "65000 {65001,65002}");
}

TEST_CASE("action: next hop address and self", "[policy][action]") {
  CHECK(After("next_hop { address: \"192.0.2.9\" }", Attrs()).next_hop == A("192.0.2.9"));
  wire::PathAttributes v6 = Attrs();
  v6.next_hop.reset();
  v6.mp_reach = wire::MpReach{net::Family::kIpv6Unicast, A("2001:db8::2"), A("fe80::2"), {}};
  const wire::PathAttributes out = After("next_hop { address: \"2001:db8::9\" }", v6);
  CHECK(out.mp_reach->next_hop == A("2001:db8::9"));
  CHECK_FALSE(out.mp_reach->link_local.has_value());

  PolicyResult r;
  After("next_hop { address: \"2001:db8::9\" }", Attrs(), &r);
  CHECK_FALSE(r.modified.has_value());  // an IPv4 NEXT_HOP cannot hold an IPv6 address
  After("next_hop { self: true }", Attrs(), &r);
  CHECK(r.deferred.next_hop_self);
  CHECK_FALSE(r.modified.has_value());  // the export stage knows our address, not the policy
}

TEST_CASE("action: link bandwidth set, drain, remove, cap", "[policy][action]") {
  wire::PathAttributes in = Attrs();
  in.extended_communities = {Lb(40e9), {0x0002FDE800000007}};
  auto chosen = [](const wire::PathAttributes& a) { return a.SelectedLinkBandwidth().chosen; };

  wire::PathAttributes out = After("link_bandwidth { op: OP_SET rate: \"25G\" }", in);
  REQUIRE(chosen(out));
  CHECK(chosen(out)->bits_per_second() == Approx(25e9));
  CHECK(chosen(out)->asn() == 65000);  // router.asn
  CHECK(out.extended_communities.size() == 2);

  out = After("link_bandwidth { op: OP_DRAIN }", in);
  REQUIRE(chosen(out));
  CHECK(chosen(out)->bits_per_second() == 0);

  out = After("link_bandwidth { op: OP_SET rate: \"1G\" asn: 65123 non_transitive: true }", Attrs());
  CHECK(chosen(out)->asn() == 65123);
  CHECK_FALSE(chosen(out)->transitive());

  out = After("link_bandwidth { op: OP_REMOVE }", in);
  CHECK_FALSE(chosen(out));
  CHECK(out.extended_communities.size() == 1);
  PolicyResult r;
  After("link_bandwidth { op: OP_REMOVE }", Attrs(), &r);
  CHECK_FALSE(r.modified.has_value());  // nothing to remove: no copy

  out = After("link_bandwidth { op: OP_CAP rate: \"10G\" }", in);
  CHECK(chosen(out)->bits_per_second() == Approx(10e9));
  CHECK(chosen(out)->asn() == 65001);  // still the sender's
  After("link_bandwidth { op: OP_CAP rate: \"100G\" }", in, &r);
  CHECK_FALSE(r.modified.has_value());  // within the cap
  After("link_bandwidth { op: OP_CAP rate: \"10G\" }", Attrs(), &r);
  CHECK_FALSE(r.modified.has_value());  // none claimed: none invented
}

TEST_CASE("action: cumulative and num-multipaths are left to the export stage", "[policy][action]") {
  PolicyResult r;
  After("link_bandwidth { op: OP_CUMULATIVE }", Attrs(), &r);
  CHECK(r.deferred.link_bandwidth == LinkBandwidthExport::kCumulative);
  CHECK_FALSE(r.modified.has_value());
  After("link_bandwidth { op: OP_NUM_MULTIPATHS rate: \"10G\" non_transitive: true }", Attrs(), &r);
  CHECK(r.deferred.link_bandwidth == LinkBandwidthExport::kNumMultipaths);
  CHECK(r.deferred.reference_bits_per_second == 10e9);
  CHECK(r.deferred.link_bandwidth_asn == 65000);
  CHECK_FALSE(r.deferred.link_bandwidth_transitive);
}

// --- whole policies ---------------------------------------------------------------------------

TEST_CASE("statements: first match decides, NEXT carries changes on, the end decides nothing", "[policy][table]") {
  const PolicySet set = CompilePolicies(std::string(kSets) + R"pb(
    policies {
      name: "p"
      statements {
        name: "tag-ten"
        conditions { prefix_set { set: "ten" } }
        actions { communities { op: OP_ADD communities: "65000:100" } local_pref: 150 }
      }
      statements {
        name: "drop-untagged-long"
        conditions { community_set { set: "tag" match: SET_MATCH_INVERT } as_path_length { min: 3 } }
        actions { disposition: DISPOSITION_REJECT }
      }
      statements {
        name: "accept-tagged"
        conditions { community_set { set: "tag" } }
        actions { disposition: DISPOSITION_ACCEPT med: 10 }
      }
    }
  )pb");
  const CompiledPolicy& p = *set.Find("p");
  struct Case {
    const char* prefix;
    std::vector<uint32_t> path;
    Verdict verdict;
    int statement;
    std::optional<uint32_t> local_pref;
  };
  const Case cases[] = {
      {"10.0.0.0/8", {65001, 2, 3}, Verdict::kAccept, 2, 150},  // tagged by #1, so #2 passes it
      {"11.0.0.0/8", {65001, 2, 3}, Verdict::kReject, 1, std::nullopt},
      {"11.0.0.0/8", {65001}, Verdict::kNoDecision, -1, std::nullopt},
  };
  for (const Case& c : cases) {
    INFO(c.prefix);
    const wire::PathAttributes a = Attrs(c.path);
    const RouteContext route = Route(c.prefix, a);
    Trace trace;
    const PolicyResult r = Evaluate(p, route, &trace);
    INFO(trace.ToString());
    CHECK(r.verdict == c.verdict);
    CHECK(r.statement == c.statement);
    if (c.verdict == Verdict::kAccept) {
      CHECK(r.attributes(route).local_pref == c.local_pref);
      CHECK(r.attributes(route).med == 10u);
    }
  }
  CHECK(p.statement_count() == 3);
  CHECK(p.statement_name(1) == "drop-untagged-long");
  CHECK(p.hits(0) == 1);
  CHECK(p.hits(1) == 1);
  CHECK(p.hits(2) == 1);
}

TEST_CASE("trace says which statement matched, what failed and what was set", "[policy][trace]") {
  const PolicySet set = CompilePolicies(std::string(kSets) + R"pb(
    policies {
      name: "p"
      statements { name: "a" conditions { prefix_set { set: "ten" } } actions { disposition: DISPOSITION_REJECT } }
      statements { conditions { origins: ORIGIN_IGP } actions { local_pref: 50 disposition: DISPOSITION_ACCEPT } }
    }
  )pb");
  const wire::PathAttributes a = Attrs();
  Trace trace;
  const PolicyResult r = Evaluate(*set.Find("p"), Route("192.0.2.0/24", a), &trace);
  CHECK(r.verdict == Verdict::kAccept);
  CHECK(trace.ToString() == "p a: no match (prefix-set \"ten\")\np #2: matched (origin igp): local-pref 50, accept\n");
  REQUIRE(trace.statements.size() == 2);
  CHECK(trace.statements[0].failed == Condition::kPrefixSet);
  CHECK(trace.statements[1].conditions == std::vector<std::string>{"origin igp"});
}

TEST_CASE("no allocation-worthy work when nothing changes: the route's own attributes are used", "[policy][cost]") {
  const PolicySet set = OneCondition("community_set { set: \"tag\" match: SET_MATCH_INVERT }");
  const wire::PathAttributes a = Attrs();
  const RouteContext route = Route("10.0.0.0/8", a);
  const PolicyResult r = Evaluate(*set.Find("p"), route);
  CHECK(r.verdict == Verdict::kAccept);
  CHECK_FALSE(r.modified.has_value());
  CHECK(&r.attributes(route) == &a);
}

TEST_CASE("chains: each policy sees the last one's changes, the default ends it (RFC 8212)", "[policy][chain]") {
  const PolicySet set = CompilePolicies(std::string(kSets) + R"pb(
    policies { name: "tag" statements { actions { communities { op: OP_ADD communities: "65000:100" } } } }
    policies {
      name: "need-tag"
      statements { conditions { community_set { set: "tag" } } actions { disposition: DISPOSITION_ACCEPT } }
    }
    policies { name: "nothing" statements { conditions { origins: ORIGIN_EGP } actions { disposition: DISPOSITION_REJECT } } }
  )pb");
  const wire::PathAttributes a = Attrs();
  const RouteContext route = Route("10.0.0.0/8", a);
  const CompiledPolicy* tag_then_need[] = {set.Find("tag"), set.Find("need-tag")};
  PolicyResult r = EvaluateChain(tag_then_need, route, Verdict::kReject);
  CHECK(r.verdict == Verdict::kAccept);
  CHECK(r.policy == 1);
  CHECK(r.attributes(route).communities == std::vector<uint32_t>{Community(65000, 100)});

  const CompiledPolicy* only_need[] = {set.Find("need-tag")};
  CHECK(EvaluateChain(only_need, route, Verdict::kReject).verdict == Verdict::kReject);
  const CompiledPolicy* nothing[] = {set.Find("nothing")};
  r = EvaluateChain(nothing, route, Verdict::kReject);
  CHECK(r.verdict == Verdict::kReject);  // RFC 8212 §3: eBGP default
  CHECK(r.policy == -1);
  CHECK(EvaluateChain({}, route, Verdict::kAccept).verdict == Verdict::kAccept);
}

TEST_CASE("compile errors name the policy, statement and value", "[policy][errors]") {
  struct Bad {
    const char* config;
    const char* message;
  };
  const Bad cases[] = {
      {"policies { name: \"p\" statements { conditions { prefix_set { set: \"nope\" } } } }",
       "policy \"p\" statement #1: prefix set \"nope\" is not defined"},
      {"policies { name: \"p\" statements { name: \"s\" conditions { as_path_set { set: \"x\" } } } }",
       "statement s: AS-path set \"x\" is not defined"},
      {"policies { name: \"p\" statements { actions { communities { op: OP_ADD communities: \"1:2:3:4\" } } } }",
       "\"1:2:3:4\": not a community"},
      {"policies { name: \"p\" statements { actions { link_bandwidth { op: OP_SET rate: \"fast\" } } } }", "\"fast\""},
      {"defined_sets { as_path_sets { name: \"x\" regexes: \"(\" } }", "does not compile"},
      {"policies { name: \"p\" } policies { name: \"p\" }", "policy \"p\" is defined twice"},
  };
  for (const Bad& b : cases) {
    INFO(b.config);
    const absl::StatusOr<PolicySet> set =
        PolicySet::Compile(ParseConfig(std::string("router { asn: 65000 router_id: \"192.0.2.1\" } ") + b.config));
    REQUIRE_FALSE(set.ok());
    CHECK_THAT(std::string(set.status().message()), Catch::Matchers::Contains(b.message));
  }
}

TEST_CASE("trace: a matched statement lists every condition as written", "[policy][trace]") {
  const PolicySet set = OneCondition(
      "sources: ROUTE_SOURCE_EBGP neighbor_set { set: \"spines\" } origins: ORIGIN_IGP origins: ORIGIN_INCOMPLETE "
      "as_path_length { max: 4 } prefix_set { set: \"ten\" } next_hop_set { set: \"lan\" } "
      "community_set { set: \"tag\" match: SET_MATCH_INVERT } link_bandwidth { min: \"1G\" } "
      "as_path_set { set: \"from-65001\" match: SET_MATCH_ALL }");
  wire::PathAttributes a = Attrs({65001});
  a.extended_communities = {Lb(10e9)};
  Trace trace;
  CHECK(Evaluate(*set.Find("p"), Route("10.0.0.0/8", a), &trace).verdict == Verdict::kAccept);
  REQUIRE(trace.statements.size() == 1);
  CHECK(trace.statements[0].conditions ==
        std::vector<std::string>{"source ebgp", "neighbor-set \"spines\"", "origin igp,incomplete", "as-path-length ..4",
                                 "prefix-set \"ten\"", "next-hop-set \"lan\"", "community-set \"tag\" (invert)",
                                 "link-bandwidth 1Gbps..", "as-path-set \"from-65001\" (all)"});
  trace.statements.clear();
  a.extended_communities.clear();
  CHECK(Evaluate(*set.Find("p"), Route("10.0.0.0/8", a), &trace).verdict == Verdict::kNoDecision);
  CHECK(trace.ToString() == "p #1: no match (link-bandwidth 1Gbps..)\n");
}

// --- ConditionMemo: one UPDATE's prefixes -----------------------------------------------------

TEST_CASE("ConditionMemo: a run of prefixes gets the verdicts, attributes and hits it gets without one",
          "[policy][memo]") {
  // Statement 1 changes the attributes (local-pref) and goes on, so statement 2 sees modified
  // attributes for the prefixes it matched: the memo must not be used there.
  const PolicySet set = CompilePolicies(std::string(kSets) + R"pb(
    policies { name: "p"
      statements { name: "tag" conditions { prefix_set { set: "ten" } }
                   actions { local_pref: 300 disposition: DISPOSITION_NEXT } }
      statements { name: "path" conditions { as_path_set { set: "from-65001" } prefix_set { set: "ten" match: SET_MATCH_INVERT } }
                   actions { disposition: DISPOSITION_REJECT } }
      statements { name: "lp" conditions { community_set { set: "tag" } } actions { med: 7 disposition: DISPOSITION_ACCEPT } }
    }
  )pb");
  wire::PathAttributes a = Attrs();
  a.as_path = wire::AsPath{{wire::AsPathSegment{wire::AsSegmentType::kSequence, {65001, 65002}}}};
  a.communities = {65000u << 16 | 100};
  const std::vector<std::string> prefixes = {"10.1.0.0/16", "11.0.0.0/8", "10.2.3.0/24", "10.9.9.0/25", "12.0.0.0/8"};
  const CompiledPolicy& p = *set.Find("p");
  std::vector<PolicyResult> plain;
  for (const std::string& prefix : prefixes) plain.push_back(Evaluate(p, Route(prefix, a)));
  std::vector<uint64_t> hits_plain;
  for (size_t i = 0; i < p.statement_count(); ++i) hits_plain.push_back(p.hits(i));
  ConditionMemo memo;
  for (size_t k = 0; k < prefixes.size(); ++k) {
    RouteContext route = Route(prefixes[k], a);
    route.memo = &memo;
    const PolicyResult r = Evaluate(p, route);
    CHECK(r.verdict == plain[k].verdict);
    CHECK(r.statement == plain[k].statement);
    CHECK(r.attributes(route) == plain[k].attributes(Route(prefixes[k], a)));
  }
  // Each statement counted the same routes again: the totals doubled.
  for (size_t i = 0; i < p.statement_count(); ++i) CHECK(p.hits(i) == 2 * hits_plain[i]);
  // 11.0.0.0/8 and 12.0.0.0/8 (not in "ten", path from 65001) were rejected.
  CHECK(plain[1].verdict == Verdict::kReject);
  CHECK(plain[4].verdict == Verdict::kReject);
  CHECK(plain[0].verdict == Verdict::kAccept);
}

TEST_CASE("EvaluateOptions.routes: one evaluation for an UPDATE's prefixes counts each of them", "[policy][counters]") {
  const PolicySet set = OneCondition("community_set { set: \"tag\" }");
  wire::PathAttributes a = Attrs();
  a.communities = {65000u << 16 | 100};
  const CompiledPolicy* chain[] = {set.Find("p")};
  const PolicyResult r = EvaluateChain(chain, Route("10.1.0.0/16", a), Verdict::kReject, nullptr, EvaluateOptions{.routes = 3});
  CHECK(r.verdict == Verdict::kAccept);
  CHECK(set.Find("p")->hits(0) == 3);
  (void)EvaluateChain(chain, Route("10.1.0.0/16", a), Verdict::kReject, nullptr, EvaluateOptions{.count_hits = false, .routes = 3});
  CHECK(set.Find("p")->hits(0) == 3);
}
