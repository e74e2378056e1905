// The BAG use cases of docs/policy.md, each as the config an operator would write.
#include "policy/policy.h"

#include "conf/config_loader.h"

#include "tests/policy/policy_test_support.h"

using namespace bagd;
using namespace bagd::policy;
using namespace bagd::policy::testing;

TEST_CASE("use case: drain a spine by tagging a community (link bandwidth 0, no withdrawal)", "[policy][use-case]") {
  const PolicySet set = CompilePolicies(R"pb(
    defined_sets { community_sets { name: "drain" communities: "65000:666" } }
    policies {
      name: "from-spines"
      statements {
        name: "drained"
        conditions { community_set { set: "drain" } }
        actions { link_bandwidth { op: OP_DRAIN } disposition: DISPOSITION_ACCEPT }
      }
      statements { name: "rest" actions { disposition: DISPOSITION_ACCEPT } }
    }
  )pb");
  const CompiledPolicy& p = *set.Find("from-spines");
  wire::PathAttributes drained = Attrs();
  drained.communities = {Community(65000, 666)};
  drained.extended_communities = {Lb(400e9)};
  const RouteContext route = Route("10.10.0.0/24", drained);
  const PolicyResult r = Evaluate(p, route);
  CHECK(r.verdict == Verdict::kAccept);  // still accepted: the path stays, with weight 0
  const auto lb = r.attributes(route).SelectedLinkBandwidth().chosen;
  REQUIRE(lb);
  CHECK(lb->bits_per_second() == 0);
  CHECK(lb->valid());

  wire::PathAttributes normal = Attrs();
  normal.extended_communities = {Lb(400e9)};
  const PolicyResult n = Evaluate(p, Route("10.10.0.0/24", normal));
  CHECK(n.statement == 1);
  CHECK_FALSE(n.modified.has_value());
  CHECK_FALSE(p.depends_on_prefix());
}

TEST_CASE("use case: cap the bandwidth a peer may claim", "[policy][use-case]") {
  const PolicySet set = CompilePolicies(R"pb(
    defined_sets { neighbor_sets { name: "leaf-25g" addresses: "198.51.100.2" } }
    policies {
      name: "import"
      statements {
        conditions { neighbor_set { set: "leaf-25g" } }
        actions { link_bandwidth { op: OP_CAP rate: "25G" } disposition: DISPOSITION_ACCEPT }
      }
    }
  )pb");
  wire::PathAttributes greedy = Attrs();
  greedy.extended_communities = {Lb(400e9)};
  const RouteContext route = Route("10.20.0.0/24", greedy);
  const PolicyResult r = Evaluate(*set.Find("import"), route);
  CHECK(r.attributes(route).SelectedLinkBandwidth().chosen->bits_per_second() == Approx(25e9));
  wire::PathAttributes honest = Attrs();
  honest.extended_communities = {Lb(10e9)};
  CHECK_FALSE(Evaluate(*set.Find("import"), Route("10.20.0.0/24", honest)).modified.has_value());
  // Another neighbor is not capped (and not accepted by this policy: the chain default decides).
  CHECK(Evaluate(*set.Find("import"), Route("10.20.0.0/24", greedy, RouteSource::kEbgp, "198.51.100.3")).verdict ==
        Verdict::kNoDecision);
}

TEST_CASE("use case: filter bogons and over-long prefixes", "[policy][use-case]") {
  const PolicySet set = CompilePolicies(R"pb(
    defined_sets {
      prefix_sets {
        name: "bogons"  # RFC 6890 special-purpose blocks, and everything inside them
        prefixes { prefix: "0.0.0.0/8" le: 32 }
        prefixes { prefix: "10.0.0.0/8" le: 32 }
        prefixes { prefix: "100.64.0.0/10" le: 32 }
        prefixes { prefix: "127.0.0.0/8" le: 32 }
        prefixes { prefix: "169.254.0.0/16" le: 32 }
        prefixes { prefix: "172.16.0.0/12" le: 32 }
        prefixes { prefix: "192.0.2.0/24" le: 32 }
        prefixes { prefix: "192.168.0.0/16" le: 32 }
        prefixes { prefix: "198.18.0.0/15" le: 32 }
        prefixes { prefix: "224.0.0.0/3" le: 32 }
        prefixes { prefix: "2001:db8::/32" le: 128 }
        prefixes { prefix: "fc00::/7" le: 128 }
      }
      prefix_sets {
        name: "too-long"
        prefixes { prefix: "0.0.0.0/0" ge: 25 }
        prefixes { prefix: "::/0" ge: 49 }
      }
    }
    policies {
      name: "sane"
      statements { name: "bogon" conditions { prefix_set { set: "bogons" } } actions { disposition: DISPOSITION_REJECT } }
      statements { name: "too-long" conditions { prefix_set { set: "too-long" } } actions { disposition: DISPOSITION_REJECT } }
      statements { name: "ok" actions { disposition: DISPOSITION_ACCEPT } }
    }
  )pb");
  const CompiledPolicy& p = *set.Find("sane");
  CHECK(p.depends_on_prefix());
  const wire::PathAttributes a = Attrs();
  struct Case {
    const char* prefix;
    const char* statement;
  };
  for (const Case& c : {Case{"10.1.0.0/16", "bogon"}, Case{"192.168.1.0/24", "bogon"}, Case{"100.64.0.0/10", "bogon"},
                        Case{"233.252.0.0/24", "bogon"}, Case{"fd00::/8", "bogon"}, Case{"2001:db8:1::/48", "bogon"},
                        Case{"203.0.113.128/25", "too-long"}, Case{"198.51.100.1/32", "too-long"},
                        Case{"2001:db9:1:1::/64", "too-long"}, Case{"203.0.113.0/24", "ok"}, Case{"8.0.0.0/8", "ok"},
                        Case{"2001:db9::/48", "ok"}, Case{"100.128.0.0/10", "ok"}}) {
    INFO(c.prefix);
    const PolicyResult r = Evaluate(p, Route(c.prefix, a));
    REQUIRE(r.statement >= 0);
    CHECK(p.statement_name(r.statement) == c.statement);
    CHECK((r.verdict == Verdict::kAccept) == (std::string(c.statement) == "ok"));
  }
}

TEST_CASE("use case: prepend toward one plane (evaluated once per attribute set)", "[policy][use-case]") {
  const PolicySet set = CompilePolicies(R"pb(
    policies {
      name: "to-plane-b"
      statements { actions { as_path_prepend { repeat: 2 } disposition: DISPOSITION_ACCEPT } }
    }
  )pb");
  const CompiledPolicy& p = *set.Find("to-plane-b");
  // Attached to plane B's neighbors only. No prefix condition: the export stage can run it
  // once per (attribute set, peer).
  CHECK_FALSE(p.depends_on_prefix());
  wire::PathAttributes a = Attrs({65001});
  const RouteContext route = Route("10.30.0.0/24", a);
  const PolicyResult r = Evaluate(p, route);
  CHECK(r.attributes(route).as_path == Path({65000, 65000, 65001}));
  CHECK(r.attributes(route).as_path->Length() == 3);
}

TEST_CASE("conf/examples/policy.textproto passes --check, compiles and does what it says", "[policy][use-case]") {
  const conf::LoadedConfig loaded = conf::LoadConfigFile(BAGD_SOURCE_DIR "/conf/examples/policy.textproto");
  for (const conf::ConfigError& e : loaded.errors) UNSCOPED_INFO(e.ToString());
  REQUIRE(loaded.ok());
  const PolicySet set = Must(PolicySet::Compile(loaded.config));
  CHECK(set.size() == 4);

  const CompiledPolicy* import[] = {set.Find("sane"), set.Find("from-spines")};
  wire::PathAttributes drained = Attrs({65100});
  drained.communities = {0xFFFF0000};  // GRACEFUL_SHUTDOWN, RFC 8326
  drained.extended_communities = {Lb(400e9)};
  const RouteContext route = Route("203.0.113.0/24", drained);
  PolicyResult r = EvaluateChain(import, route, Verdict::kReject);
  CHECK(r.verdict == Verdict::kAccept);
  CHECK(r.attributes(route).SelectedLinkBandwidth().chosen->bits_per_second() == 0);
  CHECK(EvaluateChain(import, Route("192.0.2.0/24", drained), Verdict::kReject).verdict == Verdict::kReject);

  wire::PathAttributes greedy = Attrs({65100});
  greedy.extended_communities = {Lb(800e9)};
  r = EvaluateChain(import, Route("203.0.113.0/24", greedy), Verdict::kReject);
  CHECK(r.policy == 1);
  CHECK(r.statement == 1);
  CHECK(r.modified->SelectedLinkBandwidth().chosen->bits_per_second() == Approx(400e9));

  const CompiledPolicy* to_plane_b[] = {set.Find("to-plane-b"), set.Find("to-spines")};
  wire::PathAttributes local = Attrs({});
  const RouteContext ours = Route("10.100.1.0/24", local, RouteSource::kLocal);
  r = EvaluateChain(to_plane_b, ours, Verdict::kReject);
  CHECK(r.verdict == Verdict::kAccept);
  CHECK(r.attributes(ours).as_path == Path({65001, 65001}));
  CHECK(r.deferred.link_bandwidth == LinkBandwidthExport::kCumulative);
  CHECK(EvaluateChain(to_plane_b, Route("203.0.113.0/24", local), Verdict::kReject).verdict == Verdict::kReject);
}
