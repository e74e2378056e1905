// bagctl policy test, show policies and show routes --neighbor run exactly as from the
// shell (RunControlCommand), against a real ControlServer whose backend answers from real
// data (tests/control/explain_fixture.h). The goldens here are the examples in
// docs/policy.md ("Explain").
#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>

#include "absl/strings/str_join.h"

#include "tests/control/explain_fixture.h"
#include "tests/control/fake_backend.h"
#include "tools/bagctl/control_commands.h"
#include "tools/bagctl/policy_render.h"

using namespace bagd;
using control::testing::ExplainBackend;
using control::testing::TempDir;

namespace {

struct Run {
  int code;
  std::string out, err;
};

struct Daemon {
  TempDir dir;
  ExplainBackend backend;
  std::unique_ptr<control::ControlServer> server;
  Daemon() {
    auto started = control::ControlServer::Start(dir.SocketPath(), &backend);
    REQUIRE(started.ok());
    server = *std::move(started);
  }
  Run Bagctl(std::vector<std::string> args) {
    args.insert(args.begin(), {"--socket", dir.SocketPath()});
    std::ostringstream out, err;
    const int code = bagctl::RunControlCommand(args, nullptr, out, err);
    if (const char* dump = std::getenv("BAGD_EXPLAIN_DUMP")) {
      std::ofstream(dump, std::ios::app) << "$ bagctl " << absl::StrJoin(args.begin() + 2, args.end(), " ") << "\n"
                                         << out.str() << err.str() << "\n";
    }
    return {code, out.str(), err.str()};
  }
};

}  // namespace

TEST_CASE("explain: bagctl policy test", "[control][bagctl][policy]") {
  Daemon d;
  SECTION("a drained route: which statement matched, what it set, the attributes after") {
    Run r = d.Bagctl({"policy", "test", "from-spines", "203.0.113.0/24", "--neighbor", "192.0.2.2", "--as-path",
                      "65002", "--community", "65000:666", "--link-bandwidth", "10G"});
    CHECK(r.code == 0);
    CHECK(r.err.empty());
    CHECK(r.out == R"(Policy from-spines on 203.0.113.0/24, an eBGP route from 192.0.2.2:
  bogons: no match (prefix-set "bogons")
  drain: matched (community-set "drain"): link-bandwidth 0bps, accept
Verdict: accept (statement drain)

Route tested:
  AS path: 65002, origin IGP
  Next hop: 192.0.2.2
  Local pref: 100, MED: none
  Link bandwidth: 10Gbps
  Communities: 65000:666
  Extended communities: LB:65002:1.25e+09B/s (10Gbps) transitive

Attributes after the policy:
  AS path: 65002, origin IGP
  Next hop: 192.0.2.2
  Local pref: 100, MED: none
  Link bandwidth: 0bps
  Communities: 65000:666
  Extended communities: LB:65000:0B/s (0bps) transitive
)");
  }
  SECTION("no decision: a NEXT statement's actions, then the next one accepts") {
    Run r = d.Bagctl({"policy", "test", "from-spines", "198.51.100.0/24", "--neighbor", "192.0.2.2", "--as-path",
                      "65002 65010", "--med", "5"});
    CHECK(r.code == 0);
    CHECK(r.out == R"(Policy from-spines on 198.51.100.0/24, an eBGP route from 192.0.2.2:
  bogons: no match (prefix-set "bogons")
  drain: no match (community-set "drain")
  prefer-65010: matched (as-path-set "via-65010"): local-pref 200, communities add 65000:10
  rest: matched: accept
Verdict: accept (statement rest)

Route tested:
  AS path: 65002 65010, origin IGP
  Next hop: 192.0.2.2
  Local pref: 100, MED: 5

Attributes after the policy:
  AS path: 65002 65010, origin IGP
  Next hop: 192.0.2.2
  Local pref: 200, MED: 5
  Communities: 65000:10
)");
  }
  SECTION("a rejected route") {
    Run r = d.Bagctl({"policy", "test", "from-spines", "10.1.2.0/24", "--neighbor", "192.0.2.2"});
    CHECK(r.code == 0);
    CHECK(r.out == R"(Policy from-spines on 10.1.2.0/24, an eBGP route from 192.0.2.2:
  bogons: matched (prefix-set "bogons"): reject
Verdict: reject (statement bogons)

Route tested:
  AS path: (empty), origin IGP
  Next hop: 192.0.2.2
  Local pref: 100, MED: none

Rejected: no action is applied.
)");
  }
  SECTION("export: deferred actions, a local route") {
    Run r = d.Bagctl({"policy", "test", "to-spines", "2001:db8:1::/48", "--source", "local"});
    CHECK(r.code == 0);
    CHECK(r.out == R"(Policy to-spines on 2001:db8:1::/48, a local route:
  #1: matched: as-path prepend 65000 x1, next-hop self (export stage), accept
Verdict: accept (statement #1)

Route tested:
  AS path: (empty), origin IGP
  Next hop: none
  Local pref: 100, MED: none

Attributes after the policy:
  AS path: 65000, origin IGP
  Next hop: none
  Local pref: 100, MED: none
Left to the export stage: next-hop self
)");
  }
  SECTION("--json is the TestPolicyResponse") {
    Run r = d.Bagctl({"policy", "test", "from-spines", "10.1.2.0/24", "--json"});
    CHECK(r.code == 0);
    CHECK(r.out == R"({
 "policy": "from-spines",
 "prefix": "10.1.2.0/24",
 "verdict": "reject",
 "statement": "bogons",
 "trace": [
  {
   "statement": "bogons",
   "matched": true,
   "failed_condition": "",
   "conditions": [
    "prefix-set \"bogons\""
   ],
   "applied": [
    "reject"
   ]
  }
 ],
 "route": {
  "peer": "",
  "peer_as": 0,
  "path_id": 0,
  "best": false,
  "multipath": false,
  "decision_step": "",
  "lost_reason": "",
  "next_hop": "",
  "link_local_next_hop": "",
  "origin": "igp",
  "as_path": "",
  "local_pref": 100,
  "has_med": false,
  "med": 0,
  "communities": [],
  "large_communities": [],
  "extended_communities": [],
  "link_bandwidth_bps": 0,
  "has_link_bandwidth": false,
  "originator_id": "",
  "cluster_list": [],
  "atomic_aggregate": false
 },
 "modified": false,
 "next_hop_self": false,
 "link_bandwidth_export": "",
 "source": "ebgp",
 "neighbor": ""
}
)");
  }
  SECTION("a test counts no hits") {
    const policy::CompiledPolicy& p = *d.backend.ribs.policies()->Find("from-spines");
    std::vector<uint64_t> before;
    for (size_t i = 0; i < p.statement_count(); ++i) before.push_back(p.hits(i));
    REQUIRE(d.Bagctl({"policy", "test", "from-spines", "10.1.2.0/24"}).code == 0);
    REQUIRE(d.Bagctl({"policy", "test", "from-spines", "203.0.113.0/24", "--community", "65000:666"}).code == 0);
    std::vector<uint64_t> after;
    for (size_t i = 0; i < p.statement_count(); ++i) after.push_back(p.hits(i));
    CHECK(after == before);
    CHECK(before == std::vector<uint64_t>{1, 1, 1, 3});
  }
  SECTION("errors") {
    Run r = d.Bagctl({"policy", "test", "from-leaves", "10.0.0.0/8"});
    CHECK(r.code == 1);
    CHECK(r.err == "bagctl: no policy \"from-leaves\" is defined; the defined policies are: from-spines, to-spines\n");
    r = d.Bagctl({"policy", "test", "from-spines", "10.0.0.0/8", "--community", "65000:70000"});
    CHECK(r.code == 1);
    CHECK(r.err == R"(bagctl: community "65000:70000": a standard community is AS:VALUE, each 0..65535 (RFC 1997), e.g. "65000:100"
)");
    r = d.Bagctl({"policy", "test", "from-spines", "10.0.0.0/8", "--as-path", "65001 {65002"});
    CHECK(r.code == 1);
    CHECK(r.err == R"(bagctl: AS path "65001 {65002": '{' is not closed (write it as bagctl shows it: 65001 65002 {65003,65004})
)");
    r = d.Bagctl({"policy", "test", "from-spines", "10.0.0.0/8", "--link-bandwidth", "10Q"});
    CHECK(r.code == 1);
    CHECK(r.err == R"(bagctl: link bandwidth "10Q": unknown unit 'Q': use a number with K, M, G or T (bits per second), e.g. "100G"
)");
    r = d.Bagctl({"policy", "test", "from-spines", "2001:db8::/32", "--next-hop", "192.0.2.9"});
    CHECK(r.code == 1);
    CHECK(r.err == R"(bagctl: next hop 192.0.2.9: an IPv6 prefix (2001:db8::/32) needs an IPv6 next hop
)");
    // Checked by bagctl before it connects.
    r = d.Bagctl({"policy", "test", "from-spines", "10.0.0.1"});
    CHECK(r.code == 1);
    CHECK(r.err == R"(bagctl: '10.0.0.1' is not a prefix: give it with a length, e.g. 192.0.2.0/24
)");
    r = d.Bagctl({"policy", "test", "from-spines", "10.0.0.0/8", "--source", "local", "--neighbor", "192.0.2.2"});
    CHECK(r.code == 1);
    CHECK(r.err == R"(bagctl: a local route comes from no neighbor (neighbor '192.0.2.2' given)
)");
    r = d.Bagctl({"policy", "test", "from-spines", "10.0.0.0/8", "--source", "egp"});
    CHECK(r.code == 2);
    CHECK_THAT(r.err, Catch::StartsWith("bagctl: --source is ebgp, ibgp or local, not 'egp'\n"));
    r = d.Bagctl({"policy", "test", "from-spines", "10.0.0.0/8", "--med", "-1"});
    CHECK(r.code == 2);
    CHECK_THAT(r.err, Catch::StartsWith("bagctl: --med needs a number 0..4294967295, not '-1'\n"));
    r = d.Bagctl({"show", "routes", "--as-path", "65001"});
    CHECK(r.code == 2);
    CHECK_THAT(r.err, Catch::StartsWith("bagctl: --source and the route attributes (--as-path, --community, ...) are for policy test\n"));
  }
  SECTION("no policies loaded yet, and a bagd without the explain views") {
    d.backend.ribs.Unload();
    Run r = d.Bagctl({"policy", "test", "from-spines", "10.0.0.0/8"});
    CHECK(r.code == 1);
    CHECK(r.err == "bagctl: bagd has not loaded its configuration (and policies) yet\n");
    d.backend.without_ribs = true;
    r = d.Bagctl({"show", "policies"});
    CHECK(r.code == 1);
    CHECK(r.err == "bagctl: policy and neighbor route views are not available in this bagd\n");
    r = d.Bagctl({"show", "routes", "--neighbor", "192.0.2.2", "--accepted"});
    CHECK(r.code == 1);
    CHECK(r.err == "bagctl: policy and neighbor route views are not available in this bagd\n");
  }
}

TEST_CASE("explain: bagctl show policies", "[control][bagctl][policy]") {
  Daemon d;
  Run r = d.Bagctl({"show", "policies"});
  CHECK(r.code == 0);
  CHECK(r.err.empty());
  CHECK(r.out == R"(Policy       # Statement          Hits
from-spines  1 bogons                1
             2 drain                 1
             3 prefer-65010          1
             4 rest                  3
to-spines    1 #1                    0

Hits: routes whose conditions all held at the statement since the policies were loaded (start or reload);
bagctl policy test does not count.
)");
  r = d.Bagctl({"show", "policies", "to-spines", "--json"});
  CHECK(r.code == 0);
  CHECK(r.out == R"({
 "policies": [
  {
   "name": "to-spines",
   "statements": [
    {
     "name": "#1",
     "hits": "0"
    }
   ],
   "depends_on_prefix": false
  }
 ]
}
)");
  r = d.Bagctl({"show", "policies", "nope"});
  CHECK(r.code == 1);
  CHECK(r.err == "bagctl: no policy \"nope\" is defined; the defined policies are: from-spines, to-spines\n");
}

TEST_CASE("explain: bagctl show routes --neighbor", "[control][bagctl][routes]") {
  Daemon d;
  SECTION("received: before import policy, the bogon too, both ADD-PATH paths") {
    Run r = d.Bagctl({"show", "routes", "--neighbor", "192.0.2.2", "--received"});
    CHECK(r.code == 0);
    CHECK(r.err.empty());
    CHECK(r.out == R"(Routes received from 192.0.2.2 (before import policy)

Status codes: * valid, > best, = multipath
Origin codes: i IGP, e EGP, ? incomplete

   Network            Next Hop        Peer            LocPrf    MED      LB Path
*  10.9.0.0/16        192.0.2.2       192.0.2.2          100                65002 i
*  198.51.100.0/24    192.0.2.2       192.0.2.2          100         10Gbps 65002 65010 i
*                     192.0.2.2       192.0.2.2          100         10Gbps 65002 65020 i
*  203.0.113.0/24     192.0.2.2       192.0.2.2          100         10Gbps 65002 i

Displayed 3 prefixes and 4 paths
)");
  }
  SECTION("accepted: after import policy, with the decision") {
    Run r = d.Bagctl({"show", "routes", "--neighbor", "192.0.2.2", "--accepted"});
    CHECK(r.code == 0);
    CHECK(r.out == R"(Routes accepted from 192.0.2.2 (after import policy)

Status codes: * valid, > best, = multipath
Origin codes: i IGP, e EGP, ? incomplete

   Network            Next Hop        Peer            LocPrf    MED      LB Path
*> 198.51.100.0/24    192.0.2.2       192.0.2.2          200         10Gbps 65002 65010 i
*                     192.0.2.2       192.0.2.2          100         10Gbps 65002 65020 i
*> 203.0.113.0/24     192.0.2.2       192.0.2.2          100           0bps 65002 i

Displayed 2 prefixes and 3 paths
)");
    r = d.Bagctl({"show", "routes", "--neighbor", "192.0.2.2", "--accepted", "198.51.100.7"});
    CHECK(r.code == 0);
    CHECK(r.out == R"(BGP routing table entry for 198.51.100.0/24
Paths: 2 available, best #1
  Path #1 from 192.0.2.2 (AS 65002), path id 1
    best
    AS path: 65002 65010, origin IGP
    Next hop: 192.0.2.2
    Local pref: 200, MED: none
    Link bandwidth: 10Gbps
    Communities: 65000:10
    Extended communities: LB:65002:1.25e+09B/s (10Gbps) transitive
  Path #2 from 192.0.2.2 (AS 65002), path id 2
    not best: lower local-pref (step 1 local-pref)
    AS path: 65002 65020, origin IGP
    Next hop: 192.0.2.2
    Local pref: 100, MED: none
    Link bandwidth: 10Gbps
    Extended communities: LB:65002:1.25e+09B/s (10Gbps) transitive
)");
  }
  SECTION("advertised: after export policy and the rewrite") {
    Run r = d.Bagctl({"show", "routes", "--neighbor", "192.0.2.3", "--advertised"});
    CHECK(r.code == 0);
    CHECK(r.out == R"(Routes advertised to 192.0.2.3 (after export policy)

Status codes: * valid, > best, = multipath
Origin codes: i IGP, e EGP, ? incomplete

   Network            Next Hop        Peer            LocPrf    MED      LB Path
*  198.51.100.0/24    192.0.2.1       192.0.2.3          100                65000 65002 65010 i
*  203.0.113.0/24     192.0.2.1       192.0.2.3          100                65000 65002 i

Displayed 2 prefixes and 2 paths
)");
    r = d.Bagctl({"show", "routes", "--neighbor", "192.0.2.3", "--advertised", "203.0.113.0/24"});
    CHECK(r.code == 0);
    CHECK(r.out == R"(Advertised: 203.0.113.0/24
Paths: 1
  Path #1 to 192.0.2.3 (AS 65003)
    AS path: 65000 65002, origin IGP
    Next hop: 192.0.2.1
    Local pref: 100, MED: none
)");
  }
  SECTION("a received route in detail; --json") {
    Run r = d.Bagctl({"show", "routes", "--neighbor", "192.0.2.2", "--received", "198.51.100.0/24"});
    CHECK(r.code == 0);
    CHECK(r.out == R"(Received (before import policy): 198.51.100.0/24
Paths: 2
  Path #1 from 192.0.2.2 (AS 65002), path id 1
    AS path: 65002 65010, origin IGP
    Next hop: 192.0.2.2
    Local pref: 100, MED: none
    Link bandwidth: 10Gbps
    Extended communities: LB:65002:1.25e+09B/s (10Gbps) transitive
  Path #2 from 192.0.2.2 (AS 65002), path id 2
    AS path: 65002 65020, origin IGP
    Next hop: 192.0.2.2
    Local pref: 100, MED: none
    Link bandwidth: 10Gbps
    Extended communities: LB:65002:1.25e+09B/s (10Gbps) transitive
)");
    r = d.Bagctl({"show", "routes", "--neighbor", "192.0.2.2", "--received", "10.9.0.0/16", "--json"});
    CHECK(r.code == 0);
    CHECK(r.out == R"({
 "routes": [
  {
   "prefix": "10.9.0.0/16",
   "paths": [
    {
     "peer": "192.0.2.2",
     "peer_as": 65002,
     "path_id": 0,
     "best": false,
     "multipath": false,
     "decision_step": "",
     "lost_reason": "",
     "next_hop": "192.0.2.2",
     "link_local_next_hop": "",
     "origin": "igp",
     "as_path": "65002",
     "local_pref": 100,
     "has_med": false,
     "med": 0,
     "communities": [],
     "large_communities": [],
     "extended_communities": [],
     "link_bandwidth_bps": 0,
     "has_link_bandwidth": false,
     "originator_id": "",
     "cluster_list": [],
     "atomic_aggregate": false
    }
   ],
   "nexthop_group": 0
  }
 ],
 "truncated": false
}
)");
  }
  SECTION("empty views, and errors") {
    Run r = d.Bagctl({"show", "routes", "--neighbor", "192.0.2.2", "--advertised"});
    CHECK(r.code == 0);
    CHECK(r.out == "No routes advertised to 192.0.2.2 (after export policy).\n");
    r = d.Bagctl({"show", "routes", "--neighbor", "192.0.2.3", "--received"});
    CHECK(r.code == 1);
    CHECK(r.err == R"(bagctl: bagd keeps no copy of the routes 192.0.2.3 sent before import policy: set soft_reconfiguration_inbound: true on the neighbor in the config to keep them (--accepted shows its routes after import policy)
)");
    r = d.Bagctl({"show", "routes", "--neighbor", "192.0.2.9", "--accepted"});
    CHECK(r.code == 1);
    CHECK(r.err == "bagctl: no neighbor 192.0.2.9 is configured\n");
    r = d.Bagctl({"show", "routes", "--neighbor", "192.0.2.2", "--accepted", "10.9.0.0/16"});
    CHECK(r.code == 1);
    CHECK(r.err == "bagctl: no route for 10.9.0.0/16 among the routes accepted from 192.0.2.2 (after import policy)\n");
    r = d.Bagctl({"show", "routes", "--neighbor", "192.0.2.2"});
    CHECK(r.code == 2);
    CHECK_THAT(r.err, Catch::StartsWith("bagctl: show routes --neighbor ADDRESS needs --received, --accepted or --advertised\n"));
    r = d.Bagctl({"show", "routes", "--received"});
    CHECK(r.code == 2);
    CHECK_THAT(r.err, Catch::StartsWith("bagctl: --received, --accepted and --advertised need --neighbor ADDRESS\n"));
    r = d.Bagctl({"show", "routes", "--neighbor", "192.0.2.2", "--received", "--advertised"});
    CHECK(r.code == 2);
    CHECK_THAT(r.err, Catch::StartsWith("bagctl: give one of --received, --accepted and --advertised\n"));
    r = d.Bagctl({"show", "routes", "--neighbor", "spine-1", "--received"});
    CHECK(r.code == 1);
    CHECK(r.err == R"(bagctl: 'spine-1' is not a neighbor address: expected an IPv4 or IPv6 address such as 192.0.2.1 or 2001:db8::1
)");
  }
}

TEST_CASE("explain: the help lists the commands", "[control][bagctl][policy]") {
  const std::string usage = bagctl::kControlUsage;
  CHECK_THAT(usage, Catch::Contains("\n  show policies [NAME] [--json]\n"));
  CHECK_THAT(usage, Catch::Contains(
                        "\n  policy test NAME PREFIX [--neighbor ADDRESS] [--source ebgp|ibgp|local] [attributes] [--json]\n"));
  CHECK_THAT(usage, Catch::Contains("\n  show routes --neighbor ADDRESS --received|--accepted|--advertised [PREFIX]"));
  CHECK(bagctl::IsControlCommand({"policy", "test"}));
}

TEST_CASE("explain: policy render edge cases", "[control][render][policy]") {
  control::v1::TestPolicyResponse r;
  r.set_policy("to-plane-b");
  r.set_prefix("2001:db8::/32");
  r.set_source("ibgp");
  r.set_verdict("no decision");
  r.set_modified(false);
  r.mutable_route()->set_origin("incomplete");
  r.set_link_bandwidth_export("cumulative");
  CHECK(bagctl::RenderPolicyTest(r) == R"(Policy to-plane-b on 2001:db8::/32, an iBGP route from no neighbor:
  (the policy has no statements)
Verdict: no decision: the next policy of the chain, or the neighbor's default, decides

Route tested:
  AS path: (empty), origin incomplete
  Next hop: none
  Local pref: 0, MED: none

Attributes after the policy: unchanged
Left to the export stage: link-bandwidth cumulative
)");
  control::v1::ListPoliciesResponse none;
  CHECK(bagctl::RenderPolicyCounters(none) == "No policies are defined.\n");
  none.add_policies()->set_name("empty");
  CHECK_THAT(bagctl::RenderPolicyCounters(none), Catch::StartsWith("Policy  # Statement             Hits\nempty     (no statements)\n\nHits: "));
}
