// The compiled sets on their own: prefix ranges, communities of every kind, FRR-style AS-path
// regexes (with `_`), neighbors and next hops, and the text forms they reject.
#include "policy/defined_sets.h"

#include "conf/policy_text.h"
#include "tests/policy/policy_test_support.h"

using namespace bagd;
using namespace bagd::policy;
using namespace bagd::policy::testing;

namespace {

PrefixSet Prefixes(const std::string& entries) {
  config::v1::PrefixSet set;
  REQUIRE(google::protobuf::TextFormat::ParseFromString("name: \"p\" " + entries, &set));
  return Must(PrefixSet::Compile(set));
}

AsPathSet Regexes(std::vector<std::string> regexes) {
  config::v1::AsPathSet set;
  set.set_name("a");
  for (auto& r : regexes) set.add_regexes(r);
  return Must(AsPathSet::Compile(set));
}

CommunitySet Communities(std::vector<std::string> communities) {
  config::v1::CommunitySet set;
  set.set_name("c");
  for (auto& c : communities) set.add_communities(c);
  return Must(CommunitySet::Compile(set));
}

}  // namespace

TEST_CASE("prefix set: exact entries and ge/le ranges as FRR prefix-lists", "[policy][prefix-set]") {
  const PrefixSet set = Prefixes(
      "prefixes { prefix: \"10.0.0.0/8\" le: 32 }"            // 10/8 and everything inside
      "prefixes { prefix: \"192.0.2.0/24\" }"                 // exactly 192.0.2.0/24
      "prefixes { prefix: \"172.16.0.0/12\" ge: 20 le: 24 }"  // /20../24 inside 172.16/12
      "prefixes { prefix: \"198.18.0.0/15\" ge: 25 }"         // /25../32 inside
      "prefixes { prefix: \"2001:db8::/32\" le: 48 }"
      "prefixes { prefix: \"0.0.0.0/0\" }");                  // the default route only
  struct Case {
    const char* prefix;
    bool in;
  };
  const Case cases[] = {
      {"10.0.0.0/8", true},       {"10.1.2.0/24", true},      {"10.1.2.3/32", true},
      {"11.0.0.0/8", false},      {"192.0.2.0/24", true},     {"192.0.2.0/25", false},
      {"192.0.0.0/16", false},    {"172.16.0.0/12", false},   {"172.16.16.0/20", true},
      {"172.31.255.0/24", true},  {"172.16.0.0/25", false},   {"172.32.0.0/24", false},
      {"198.18.0.0/24", false},   {"198.19.0.128/25", true},  {"198.18.0.1/32", true},
      {"2001:db8::/32", true},    {"2001:db8:1::/48", true},  {"2001:db8:1::/64", false},
      {"2001:db9::/32", false},   {"0.0.0.0/0", true},        {"0.0.0.0/1", false},
      {"::/0", false},
  };
  for (const Case& c : cases) {
    INFO(c.prefix);
    CHECK(set.Contains(P(c.prefix)) == c.in);
  }
}

TEST_CASE("prefix set: ranges the validator rejects do not compile either", "[policy][prefix-set]") {
  for (const char* bad : {"prefixes { prefix: \"10.0.0.0/8\" ge: 4 }", "prefixes { prefix: \"10.0.0.0/8\" le: 33 }",
                          "prefixes { prefix: \"10.0.0.0/8\" ge: 24 le: 16 }", "prefixes { prefix: \"10.0.0.1/8\" }",
                          "prefixes { prefix: \"10.0.0.0\" }", "prefixes { prefix: \"2001:db8::/129\" }"}) {
    config::v1::PrefixSet set;
    REQUIRE(google::protobuf::TextFormat::ParseFromString(std::string("name: \"p\" ") + bad, &set));
    INFO(bad);
    CHECK_FALSE(PrefixSet::Compile(set).ok());
  }
}

TEST_CASE("next-hop set: addresses exactly, prefixes with everything inside", "[policy][next-hop-set]") {
  config::v1::NextHopSet set;
  set.set_name("nh");
  set.add_next_hops("192.0.2.1");
  set.add_next_hops("10.0.0.0/8");
  set.add_next_hops("2001:db8::1");
  const absl::StatusOr<PrefixSet> nh = PrefixSet::CompileNextHops(set);
  REQUIRE(nh.ok());
  CHECK(nh->Contains(A("192.0.2.1")));
  CHECK_FALSE(nh->Contains(A("192.0.2.2")));
  CHECK(nh->Contains(A("10.200.0.1")));
  CHECK(nh->Contains(A("2001:db8::1")));
  CHECK_FALSE(nh->Contains(A("2001:db8::2")));
  set.add_next_hops("fe80::1%eth0");
  CHECK_FALSE(PrefixSet::CompileNextHops(set).ok());
}

TEST_CASE("community set: standard, well-known, large and extended, any, all, invert", "[policy][community-set]") {
  const CommunitySet set = Communities({"65000:100", "no-export", "65000:1:2", "rt:65000:7", "lb:65001:10G"});
  wire::PathAttributes a = Attrs();
  CHECK_FALSE(set.Match(a, MatchType::kAny));
  CHECK(set.Match(a, MatchType::kInvert));
  a.communities = {Community(65000, 100)};
  CHECK(set.Match(a, MatchType::kAny));
  CHECK_FALSE(set.Match(a, MatchType::kAll));
  CHECK_FALSE(set.Match(a, MatchType::kInvert));

  wire::PathAttributes b = Attrs();
  b.communities = {0xFFFFFF01};  // NO_EXPORT, RFC 1997
  CHECK(set.Match(b, MatchType::kAny));
  b.communities = {};
  b.large_communities = {{65000, 1, 2}};
  CHECK(set.Match(b, MatchType::kAny));
  b.large_communities = {{65000, 1, 3}};
  CHECK_FALSE(set.Match(b, MatchType::kAny));
  b.extended_communities = {{0x0002FDE800000007}};  // RFC 4360 route target 65000:7
  CHECK(set.Match(b, MatchType::kAny));
  b.extended_communities = {Lb(10e9)};
  CHECK(set.Match(b, MatchType::kAny));
  b.extended_communities = {Lb(25e9)};
  CHECK_FALSE(set.Match(b, MatchType::kAny));

  wire::PathAttributes all = Attrs();
  all.communities = {Community(65000, 100), 0xFFFFFF01, Community(65000, 5)};
  all.large_communities = {{65000, 1, 2}};
  all.extended_communities = {{0x0002FDE800000007}, Lb(10e9)};
  CHECK(set.Match(all, MatchType::kAll));
  all.extended_communities.pop_back();
  CHECK_FALSE(set.Match(all, MatchType::kAll));
}

TEST_CASE("community text: what parses and what an engineer is told otherwise", "[policy][community-text]") {
  using Kind = conf::CommunityText::Kind;
  CHECK(conf::ParseCommunityText("65000:100")->standard == Community(65000, 100));
  CHECK(conf::ParseCommunityText("graceful-shutdown")->standard == 0xFFFF0000);  // RFC 8326
  CHECK(conf::ParseCommunityText("blackhole")->standard == 0xFFFF029A);          // RFC 7999
  CHECK(conf::ParseCommunityText("4200000000:1:2")->kind == Kind::kLarge);
  CHECK(conf::ParseCommunityText("rt:65000:100")->extended == 0x0002FDE800000064);
  CHECK(conf::ParseCommunityText("soo:4200000000:100")->extended == 0x0203FA56EA000064);  // 4-octet AS, RFC 5668
  CHECK(conf::ParseCommunityText("lb:65001:25G")->lb_bits_per_second == 25e9);

  struct Bad {
    const char* text;
    const char* why;
  };
  for (const Bad& b : {Bad{"65000:70000", "each 0..65535"}, Bad{"65000", "not a community"},
                       Bad{"65000:1:2:3", "not a community"}, Bad{"rt:65000", "write rt:AS:NUMBER"}, Bad{"lb:65000", "write lb:AS:RATE"},
                       Bad{"soo:4200000000:70000", "0..65535 (RFC 5668)"}, Bad{"lb:65000:10Q", "unknown unit"},
                       Bad{"-1:5", "each 0..65535"}, Bad{"65000:1:x", "each 0..4294967295"},
                       Bad{"no_export", "not a community"}}) {
    INFO(b.text);
    const auto c = conf::ParseCommunityText(b.text);
    REQUIRE_FALSE(c.ok());
    CHECK_THAT(std::string(c.status().message()), Catch::Matchers::Contains(b.why));
  }
}

TEST_CASE("AS path text is what FRR matches regexes against", "[policy][as-path]") {
  wire::AsPath path;
  path.segments = {{wire::AsSegmentType::kConfedSequence, {65010, 65011}},
                   {wire::AsSegmentType::kSequence, {65001, 65002}},
                   {wire::AsSegmentType::kSet, {65003, 65004}}};
  std::string text;
  RenderAsPath(path, text);
  CHECK(text == "(65010 65011) 65001 65002 {65003,65004}");
  CHECK(text == path.ToString());
  RenderAsPath(wire::AsPath{}, text);
  CHECK(text.empty());
}

TEST_CASE("AS-path regexes as FRR and GoBGP users write them", "[policy][as-path][re2]") {
  struct Case {
    const char* regex;
    const char* path;
    bool match;
  };
  const Case cases[] = {
      {"^65001_", "65001 65002", true},        // starts with 65001
      {"^65001_", "650011 65002", false},      // not a prefix of another ASN
      {"^65001_", "65001", true},              // `_` matches the end too
      {"_65002$", "65001 65002", true},        // originated by 65002
      {"_65002$", "65001 650021", false},
      {"_65002_", "65001 65002 65003", true},  // anywhere
      {"_65002_", "65001 165002 65003", false},
      {"_65003_", "65001 {65003,65004}", true},  // inside a set: `_` is also , { }
      {"_65004_", "65001 {65003,65004}", true},
      {"_65010_", "(65010 65011) 65001", true},  // and ( )
      {"^$", "", true},                          // the empty path (a route of our own AS)
      {"^$", "65001", false},
      {"^65001_65002$", "65001 65002", true},
      {"^65001_65002$", "65001 65003 65002", false},
      {"^65001(_65001)*$", "65001 65001 65001", true},  // a neighbor prepending itself only
      {"^65001(_65001)*$", "65001 65001 65002", false},
      {"_6500[0-9]_", "64999 65007", true},      // `_` inside [] is not touched
      {"[_]", "65001", false},
      {"^[0-9]+$", "65001", true},
      {"^[0-9]+$", "65001 65002", false},
      {"_(64512|65534)_", "1 65534 2", true},
  };
  for (const Case& c : cases) {
    INFO(c.regex << " on \"" << c.path << "\" (RE2: " << conf::TranslateAsPathRegex(c.regex) << ")");
    CHECK(Regexes({c.regex}).Match(c.path, MatchType::kAny) == c.match);
  }
}

TEST_CASE("AS-path sets: any, all, invert, regexes that do not compile", "[policy][as-path][re2]") {
  const AsPathSet set = Regexes({"^65001_", "_65002$"});
  CHECK(set.Match("65001 65003", MatchType::kAny));
  CHECK_FALSE(set.Match("65001 65003", MatchType::kAll));
  CHECK(set.Match("65001 65002", MatchType::kAll));
  CHECK(set.Match("65005", MatchType::kInvert));
  CHECK_FALSE(set.Match("65001", MatchType::kInvert));

  for (const char* bad : {"^(65001", "[65001", "65001)", "(?P<x>a)(?P=x)", "*65001"}) {
    INFO(bad);
    CHECK_FALSE(conf::CheckAsPathRegex(bad).ok());
    config::v1::AsPathSet s;
    s.set_name("bad");
    s.add_regexes(bad);
    const auto compiled = AsPathSet::Compile(s);
    REQUIRE_FALSE(compiled.ok());
    CHECK_THAT(std::string(compiled.status().message()), Catch::Matchers::Contains("does not compile"));
  }
}

TEST_CASE("neighbor set: compared as addresses", "[policy][neighbor-set]") {
  config::v1::NeighborSet set;
  set.set_name("n");
  set.add_addresses("2001:DB8::2");
  set.add_addresses("192.0.2.2");
  const absl::StatusOr<NeighborSet> n = NeighborSet::Compile(set);
  REQUIRE(n.ok());
  CHECK(n->Contains(A("2001:db8:0::2")));
  CHECK(n->Contains(A("192.0.2.2")));
  CHECK_FALSE(n->Contains(A("192.0.2.3")));
  set.add_addresses("192.0.2.256");
  CHECK_FALSE(NeighborSet::Compile(set).ok());
}
