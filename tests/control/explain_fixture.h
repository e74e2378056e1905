// The explain views on real data: a PolicySet compiled from a config, a real RIB filled by
// running the import policy on what two spines sent, the received routes of the spine with
// soft reconfiguration inbound, and an Adj-RIB-Out, behind a fake daemon::NeighborRibs
// (the speaker implements the real one). ExplainBackend serves them through the control
// API as ControlAdapter does (bgpd/daemon/policy_view.h's Serve* functions), so bagctl can
// run against it end to end.
#pragma once

#include <catch2/catch.hpp>
#include <google/protobuf/text_format.h>

#include <mutex>
#include <optional>
#include <string>

#include "bgpd/control/control_server.h"
#include "bgpd/daemon/policy_view.h"
#include "bgpd/daemon/rib_view.h"
#include "tests/control/fake_backend.h"
#include "policy/policy.h"
#include "rib/adj_rib_in.h"
#include "net/prefix_map.h"
#include "rib/rib.h"
#include "tests/rib/rib_test_support.h"

namespace bagd::control::testing {

inline constexpr const char* kExplainConfig = R"pb(
  router { asn: 65000 router_id: "192.0.2.1" }
  defined_sets {
    prefix_sets { name: "bogons" prefixes { prefix: "10.0.0.0/8" le: 32 } }
    community_sets { name: "drain" communities: "65000:666" }
    as_path_sets { name: "via-65010" regexes: "_65010_" }
  }
  policies {
    name: "from-spines"
    statements {
      name: "bogons"
      conditions { prefix_set { set: "bogons" } }
      actions { disposition: DISPOSITION_REJECT }
    }
    statements {
      name: "drain"
      conditions { community_set { set: "drain" } }
      actions { link_bandwidth { op: OP_DRAIN } disposition: DISPOSITION_ACCEPT }
    }
    statements {
      name: "prefer-65010"
      conditions { as_path_set { set: "via-65010" } }
      actions { local_pref: 200 communities { op: OP_ADD communities: "65000:10" } }
    }
    statements { name: "rest" actions { disposition: DISPOSITION_ACCEPT } }
  }
  policies {
    name: "to-spines"
    statements {
      actions { as_path_prepend { repeat: 1 } next_hop { self: true } disposition: DISPOSITION_ACCEPT }
    }
  }
)pb";

inline policy::PolicySet ExplainPolicies() {
  config::v1::Config config;
  REQUIRE(google::protobuf::TextFormat::ParseFromString(kExplainConfig, &config));
  auto set = policy::PolicySet::Compile(config);
  INFO(set.status().ToString());
  REQUIRE(set.ok());
  return *std::move(set);
}

// Spine 192.0.2.2 (AS 65002, soft reconfiguration inbound, ADD-PATH) sent
//   10.9.0.0/16                          a bogon: rejected by import policy
//   198.51.100.0/24 path ids 1 and 2     AS paths 65002 65010 and 65002 65020, LB 10G
//   203.0.113.0/24                       community 65000:666: drained (LB 0)
// spine 192.0.2.3 (AS 65003, no soft reconfiguration) sent 198.51.100.0/24 (65003).
// Each went through from-spines into the RIB, as the import stage will do. Advertised to
// 192.0.2.3: 198.51.100.0/24 and 203.0.113.0/24, prepended 65000, next hop 192.0.2.1.
class ExplainRibs : public daemon::NeighborRibs {
 public:
  ExplainRibs() {
    using rib::test::AttrsBuilder;
    spine1_ = rib_.AddPeer(rib::test::Peer("192.0.2.2", 0x0a000002, 65002));
    spine2_ = rib_.AddPeer(rib::test::Peer("192.0.2.3", 0x0a000003, 65003));
    const auto lb = [](double bps) { return wire::LinkBandwidth::FromBitsPerSecond(65002, bps, true).ToExtendedCommunity(); };
    wire::PathAttributes bogon = AttrsBuilder().Path({65002}).NextHop("192.0.2.2").a;
    Receive(spine1_, "10.9.0.0/16", 0, bogon, true);
    wire::PathAttributes via10 = AttrsBuilder().Path({65002, 65010}).NextHop("192.0.2.2").a;
    via10.extended_communities.push_back(lb(10e9));
    Receive(spine1_, "198.51.100.0/24", 1, via10, true);
    wire::PathAttributes via20 = AttrsBuilder().Path({65002, 65020}).NextHop("192.0.2.2").a;
    via20.extended_communities.push_back(lb(10e9));
    Receive(spine1_, "198.51.100.0/24", 2, via20, true);
    wire::PathAttributes drained = AttrsBuilder().Path({65002}).NextHop("192.0.2.2").a;
    drained.communities.push_back(65000u << 16 | 666);
    drained.extended_communities.push_back(lb(10e9));
    Receive(spine1_, "203.0.113.0/24", 0, drained, true);
    Receive(spine2_, "198.51.100.0/24", 0, AttrsBuilder().Path({65003}).NextHop("192.0.2.3").a, false);

    for (const char* prefix : {"198.51.100.0/24", "203.0.113.0/24"}) {
      wire::PathAttributes out = AttrsBuilder().Path({65000, 65002}).NextHop("192.0.2.1").a;
      if (std::string(prefix) == "198.51.100.0/24") out.as_path = wire::AsPath{{{wire::AsSegmentType::kSequence, {65000, 65002, 65010}}}};
      advertised_.SetAttrs(*advertised_.TryEmplace(*net::Prefix::Parse(prefix)).first, store_.Intern(out));
    }
  }

  const policy::PolicySet* policies() const override { return loaded_ ? &policies_ : nullptr; }
  std::optional<rib::PeerIndex> RibIndexOf(const std::string& address) const override {
    if (address == "192.0.2.2") return spine1_;
    if (address == "192.0.2.3") return spine2_;
    return std::nullopt;
  }
  const rib::AdjRibIn* ReceivedRoutes(rib::PeerIndex p) const override { return p == spine1_ ? &received_ : nullptr; }
  const rib::AdjRibOut* AdvertisedRoutes(rib::PeerIndex p) const override {
    return p == spine2_ ? &advertised_ : nullptr;
  }

  const rib::Rib& rib() const { return rib_; }
  rib::Rib& mutable_rib() { return rib_; }
  policy::PolicySet& mutable_policies() { return policies_; }
  const rib::AdjRibIn& received() const { return received_; }
  const rib::AdjRibOut& advertised() const { return advertised_; }
  rib::AttributeStore& store() { return store_; }
  rib::PeerIndex spine1() const { return spine1_; }
  rib::PeerIndex spine2() const { return spine2_; }
  void Unload() { loaded_ = false; }

 private:
  // As the import stage: keep a copy (soft reconfiguration), run the policy, put what it
  // accepts into the RIB with the attributes it left.
  void Receive(rib::PeerIndex peer, const char* prefix, uint32_t path_id, const wire::PathAttributes& attrs,
               bool keep) {
    const net::Nlri nlri{*net::Prefix::Parse(prefix), path_id};
    if (keep) received_.Set(nlri, store_.Intern(attrs));
    policy::RouteContext route{nlri.prefix, &attrs, rib_.peer(peer).source.address, policy::RouteSource::kEbgp};
    const policy::PolicyResult r = policy::Evaluate(*policies_.Find("from-spines"), route);
    if (r.verdict == policy::Verdict::kReject) return;
    const net::Nlri one[] = {nlri};
    rib_.Announce(peer, one, store_.Intern(r.attributes(route)));
  }

  // The store first: it must outlive every reference below.
  rib::AttributeStore store_;
  rib::Rib rib_{65000, rib::DecisionConfig{}};
  policy::PolicySet policies_ = ExplainPolicies();
  rib::AdjRibIn received_;
  rib::AdjRibOut advertised_;
  rib::PeerIndex spine1_ = 0, spine2_ = 0;
  bool loaded_ = true;
};

// The control API over ExplainRibs, as ControlAdapter answers (one lock for the io thread).
class ExplainBackend : public NeighborsOnlyBackend {  // its neighbor calls are stubs
 public:
  absl::StatusOr<RoutesPage> ListRoutesPage(const v1::ListRoutesRequest& request, size_t max_routes) override {
    std::lock_guard lock(mu_);
    if (request.view() != v1::ListRoutesRequest::VIEW_RIB) {
      return daemon::ServeNeighborRoutesPage(ribs_ptr(), ribs.rib(), request, max_routes);
    }
    return daemon::ListRoutesPage(ribs.rib(), request, max_routes);
  }
  absl::StatusOr<v1::TestPolicyResponse> TestPolicy(const v1::TestPolicyRequest& request) override {
    std::lock_guard lock(mu_);
    return daemon::ServeTestPolicy(ribs_ptr(), request);
  }
  absl::StatusOr<v1::ListPoliciesResponse> ListPolicies(const v1::ListPoliciesRequest& request) override {
    std::lock_guard lock(mu_);
    return daemon::ServeListPolicies(ribs_ptr(), request);
  }

  ExplainRibs ribs;
  bool without_ribs = false;  // as a ControlAdapter built with no NeighborRibs

 private:
  const daemon::NeighborRibs* ribs_ptr() const { return without_ribs ? nullptr : &ribs; }
  std::mutex mu_;
};

}  // namespace bagd::control::testing
