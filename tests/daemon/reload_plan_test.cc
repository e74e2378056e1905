// PlanReload (bgpd/daemon/reload_plan.h): a reload decided as data, before anything changes.
// A table of (running, next) configuration pairs, each with what the plan must say: which
// neighbors are added, removed, reset or changed in place, which networks are originated,
// withdrawn or taken over from the control API, what needs a restart, what the running
// configuration becomes, and which reloads are refused with no plan at all.
#include <catch2/catch.hpp>
#include <unistd.h>

#include <cstdlib>

#include <cstdio>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "bgpd/daemon/reload_plan.h"
#include "conf/config_loader.h"
#include "google/protobuf/util/message_differencer.h"

namespace bagd::daemon {
namespace {

using Kind = NeighborPlan::Kind;
using Strings = std::vector<std::string>;

config::v1::Config Parse(const std::string& text) {
  conf::LoadedConfig loaded = conf::ParseConfig(text, "reload_plan_test.textproto");
  if (!loaded.ok()) FAIL("config does not load: " << loaded.errors.front().message << "\n" << text);
  return loaded.config;
}

// The router, the FIB and two neighbors; `extra` adds or overrides at the top level
// (a second `router`/`fib` block would be a duplicate: use Config() for those).
std::string Config(const std::string& router_extra, const std::string& fib_extra, const std::string& rest) {
  return absl::StrCat("router { asn: 65000 router_id: \"10.255.0.1\" ebgp_requires_policy: false ", router_extra,
                      " }\n", "fib { backend: BACKEND_NONE ", fib_extra, " }\n", rest);
}

constexpr char kNeighbors[] = R"(
neighbors { address: "192.0.2.2" remote_as: 65002 description: "a" }
neighbors { address: "192.0.2.3" remote_as: 65003 description: "b" }
networks { prefix: "10.100.0.0/24" }
)";

std::string Base() { return Config("", "", kNeighbors); }

net::Prefix P(const std::string& text) {
  auto p = net::Prefix::Parse(text);
  REQUIRE(p.ok());
  return *p;
}

Network ApiNetwork(const std::string& prefix) { return Network{net::Nlri{P(prefix), 0}, std::nullopt, ""}; }

Strings Names(const std::vector<NeighborPlan>& ns) {
  Strings out;
  for (const NeighborPlan& n : ns) out.push_back(n.name);
  return out;
}
std::vector<Kind> Kinds(const std::vector<NeighborPlan>& ns) {
  std::vector<Kind> out;
  for (const NeighborPlan& n : ns) out.push_back(n.kind);
  return out;
}
Strings Prefixes(const std::vector<Network>& ns) {
  Strings out;
  for (const Network& n : ns) out.push_back(n.nlri.prefix.ToString());
  return out;
}
Strings Prefixes(const std::vector<net::Nlri>& ns) {
  Strings out;
  for (const net::Nlri& n : ns) out.push_back(n.prefix.ToString());
  return out;
}
Strings Prefixes(const std::vector<net::Prefix>& ps) {
  Strings out;
  for (const net::Prefix& p : ps) out.push_back(p.ToString());
  return out;
}

const NeighborPlan& Neighbor(const ReloadPlan& plan, const std::string& name) {
  for (const NeighborPlan& n : plan.neighbors) {
    if (n.name == name) return n;
  }
  FAIL("no neighbor " << name << " in the plan");
  throw;  // not reached
}

// The differences between two messages ("" : none), but for an empty submessage present on
// one side only: the running config after a reload has `multipath` and `fib` set even where
// the file left them out (Reload copies the running values into them), which changes nothing.
std::string Differences(const google::protobuf::Message& a, const google::protobuf::Message& b) {
  google::protobuf::util::MessageDifferencer d;
  d.set_message_field_comparison(google::protobuf::util::MessageDifferencer::EQUIVALENT);
  std::string report;
  d.ReportDifferencesToString(&report);
  d.Compare(a, b);
  return report;
}

// The plan of a reload to the same config: the running side's chains (fingerprints).
ReloadPlan Identity(const config::v1::Config& running) {
  auto plan = PlanReload(running, running, {});
  REQUIRE(plan.ok());
  return *std::move(plan);
}

struct Case {
  std::string name{};
  std::string running{};
  std::string next{};
  std::vector<Network> api_networks{};
  // Applied to the parsed next config (what the loader would refuse, for the errors that
  // only the compile steps find).
  std::function<void(config::v1::Config&)> mutate_next{};
  // An error: its code and a part of its message; no plan.
  absl::StatusCode error = absl::StatusCode::kOk;
  std::string error_text{};
  // Otherwise: what the plan must say.
  std::function<void(const ReloadPlan&, const config::v1::Config& running, const config::v1::Config& next)> check{};
};

std::vector<Case> Cases() {
  std::vector<Case> cases;

  cases.push_back({.name = "nothing changed: every neighbor kept, nothing to do",
                   .running = Base(),
                   .next = Base(),
                   .check = [](const ReloadPlan& plan, const auto& running, const auto&) {
                     CHECK(Names(plan.neighbors) == Strings{"192.0.2.2", "192.0.2.3"});
                     CHECK(Kinds(plan.neighbors) == std::vector<Kind>{Kind::kKept, Kind::kKept});
                     for (const NeighborPlan& n : plan.neighbors) CHECK(n.changed_fields.empty());
                     CHECK(plan.removed.empty());
                     CHECK(plan.needs_restart.empty());
                     CHECK(plan.added() == 0);
                     CHECK(plan.reset() == 0);
                     CHECK(plan.updated() == 0);
                     CHECK(Prefixes(plan.networks) == Strings{"10.100.0.0/24"});
                     CHECK(plan.withdrawn.empty());
                     CHECK(plan.api_networks.empty());
                     CHECK(plan.api_replaced.empty());
                     CHECK_FALSE(plan.reweigh);
                     CHECK(Differences(plan.running, running) == "");
                   }});

  cases.push_back({.name = "neighbors matched by canonical address, not by their place in the file",
                   .running = Config("", "", R"(
neighbors { address: "2001:DB8:0::2" remote_as: 65002 }
neighbors { address: "192.0.2.3" remote_as: 65003 }
)"),
                   .next = Config("", "", R"(
neighbors { address: "192.0.2.3" remote_as: 65003 }
neighbors { address: "2001:db8::2" remote_as: 65002 }
)"),
                   .check = [](const ReloadPlan& plan, const auto&, const auto&) {
                     CHECK(Names(plan.neighbors) == Strings{"192.0.2.3", "2001:db8::2"});
                     CHECK(Kinds(plan.neighbors) == std::vector<Kind>{Kind::kKept, Kind::kKept});
                     CHECK(plan.removed.empty());
                     CHECK(plan.added() == 0);
                     // The address's spelling is a changed field, not a changed session.
                     CHECK(Neighbor(plan, "2001:db8::2").changed_fields == Strings{"address"});
                     CHECK(plan.updated() == 1);
                   }});

  cases.push_back({.name = "a neighbor added: a new session, in the next file's order",
                   .running = Base(),
                   .next = Config("", "", R"(
neighbors { address: "192.0.2.4" remote_as: 65004 }
neighbors { address: "192.0.2.2" remote_as: 65002 description: "a" }
neighbors { address: "192.0.2.3" remote_as: 65003 description: "b" }
networks { prefix: "10.100.0.0/24" }
)"),
                   .check = [](const ReloadPlan& plan, const auto&, const auto&) {
                     CHECK(Names(plan.neighbors) == Strings{"192.0.2.4", "192.0.2.2", "192.0.2.3"});
                     CHECK(Kinds(plan.neighbors) == std::vector<Kind>{Kind::kAdded, Kind::kKept, Kind::kKept});
                     const NeighborPlan& n = plan.neighbors[0];
                     CHECK(n.changed_fields.empty());
                     CHECK(n.peer.fsm.local.remote_as == 65004);
                     CHECK(n.peer.fsm.local.local_as == 65000);
                     CHECK(plan.added() == 1);
                     CHECK(plan.reset() == 0);
                     CHECK(plan.updated() == 0);
                     CHECK(plan.removed.empty());
                   }});

  cases.push_back({.name = "neighbors removed: in the running config's order",
                   .running = Config("", "", R"(
neighbors { address: "192.0.2.5" remote_as: 65005 }
neighbors { address: "192.0.2.2" remote_as: 65002 description: "a" }
neighbors { address: "192.0.2.4" remote_as: 65004 }
neighbors { address: "192.0.2.3" remote_as: 65003 description: "b" }
networks { prefix: "10.100.0.0/24" }
)"),
                   .next = Config("", "", R"(
neighbors { address: "192.0.2.3" remote_as: 65003 description: "b" }
networks { prefix: "10.100.0.0/24" }
)"),
                   .check = [](const ReloadPlan& plan, const auto&, const auto&) {
                     CHECK(plan.removed == Strings{"192.0.2.5", "192.0.2.2", "192.0.2.4"});
                     CHECK(Names(plan.neighbors) == Strings{"192.0.2.3"});
                     CHECK(Kinds(plan.neighbors) == std::vector<Kind>{Kind::kKept});
                     CHECK(plan.added() == 0);
                     CHECK(plan.reset() == 0);
                   }});

  cases.push_back({.name = "remote_as changed: that session is reset, the other kept",
                   .running = Base(),
                   .next = Config("", "", R"(
neighbors { address: "192.0.2.2" remote_as: 65002 description: "a" }
neighbors { address: "192.0.2.3" remote_as: 65033 description: "b" }
networks { prefix: "10.100.0.0/24" }
)"),
                   .check = [](const ReloadPlan& plan, const auto&, const auto&) {
                     CHECK(Kinds(plan.neighbors) == std::vector<Kind>{Kind::kKept, Kind::kReset});
                     CHECK(plan.neighbors[1].changed_fields == Strings{"remote_as"});
                     CHECK(plan.neighbors[1].peer.fsm.local.remote_as == 65033);
                     CHECK(plan.neighbors[0].changed_fields.empty());
                     CHECK(plan.reset() == 1);
                     CHECK(plan.updated() == 0);
                     CHECK(plan.removed.empty());
                   }});

  cases.push_back({.name = "address families and timers are in the OPEN: the sessions are reset",
                   .running = Base(),
                   .next = Config("", "", R"(
neighbors { address: "192.0.2.2" remote_as: 65002 description: "a" address_families: [IPV4_UNICAST, IPV6_UNICAST] }
neighbors { address: "192.0.2.3" remote_as: 65003 description: "b" timers { hold_time: 30 keepalive: 10 } }
networks { prefix: "10.100.0.0/24" }
)"),
                   .check = [](const ReloadPlan& plan, const auto&, const auto&) {
                     CHECK(Kinds(plan.neighbors) == std::vector<Kind>{Kind::kReset, Kind::kReset});
                     // The loader's defaults list the graceful restart families from them.
                     CHECK(plan.neighbors[0].changed_fields == Strings{"address_families", "graceful_restart"});
                     CHECK(plan.neighbors[0].peer.fsm.local.families[1]);
                     CHECK(plan.neighbors[1].changed_fields == Strings{"timers"});
                     CHECK(plan.neighbors[1].peer.fsm.local.hold_time == 30);
                     CHECK(plan.reset() == 2);
                   }});

  cases.push_back({.name = "a router-wide hold time resets every session",
                   .running = Base(),
                   .next = Config("hold_time: 30", "", kNeighbors),
                   .check = [](const ReloadPlan& plan, const auto&, const auto&) {
                     CHECK(Kinds(plan.neighbors) == std::vector<Kind>{Kind::kReset, Kind::kReset});
                     for (const NeighborPlan& n : plan.neighbors) CHECK(n.peer.fsm.local.hold_time == 30);
                     CHECK(plan.reset() == 2);
                     CHECK(plan.needs_restart.empty());
                   }});

  cases.push_back({.name = "description, MRAI and maximum prefixes change in place",
                   .running = Base(),
                   .next = Config("", "", R"(
neighbors { address: "192.0.2.2" remote_as: 65002 description: "a" }
neighbors { address: "192.0.2.3" remote_as: 65003 description: "b, renamed" advertisement_interval: 5
            max_prefixes { family: IPV4_UNICAST limit: 100 } }
networks { prefix: "10.100.0.0/24" }
)"),
                   .check = [](const ReloadPlan& plan, const auto&, const auto&) {
                     CHECK(Kinds(plan.neighbors) == std::vector<Kind>{Kind::kKept, Kind::kKept});
                     const NeighborPlan& n = plan.neighbors[1];
                     CHECK(n.changed_fields == Strings{"description", "advertisement_interval", "max_prefixes"});
                     CHECK(n.peer.description == "b, renamed");
                     CHECK(n.peer.advertisement_interval_s == 5);
                     CHECK(n.peer.max_prefixes[0].limit == 100);
                     CHECK(plan.neighbors[0].changed_fields.empty());
                     CHECK(plan.updated() == 1);
                     CHECK(plan.reset() == 0);
                   }});

  cases.push_back({.name = "shutdown in the file changes in place",
                   .running = Base(),
                   .next = Config("", "", R"(
neighbors { address: "192.0.2.2" remote_as: 65002 description: "a" shutdown: true shutdown_message: "maintenance" }
neighbors { address: "192.0.2.3" remote_as: 65003 description: "b" }
networks { prefix: "10.100.0.0/24" }
)"),
                   .check = [](const ReloadPlan& plan, const auto&, const auto&) {
                     CHECK(plan.neighbors[0].kind == Kind::kKept);
                     CHECK(plan.neighbors[0].changed_fields == Strings{"shutdown", "shutdown_message"});
                     CHECK(plan.neighbors[0].peer.shutdown);
                     CHECK(plan.updated() == 1);
                   }});

  const std::string policies = R"(
defined_sets { prefix_sets { name: "long" prefixes { prefix: "0.0.0.0/0" ge: 25 } } }
policies { name: "p1" statements { conditions { prefix_set { set: "long" } } actions { disposition: DISPOSITION_REJECT } } }
policies { name: "p2" statements { actions { disposition: DISPOSITION_ACCEPT } } }
)";
  cases.push_back({.name = "another import policy: the chain changes, the session stays",
                   .running = Config("", "", policies + R"(
neighbors { address: "192.0.2.2" remote_as: 65002 import_policies: "p1" }
neighbors { address: "192.0.2.3" remote_as: 65003 import_policies: "p1" }
)"),
                   .next = Config("", "", policies + R"(
neighbors { address: "192.0.2.2" remote_as: 65002 import_policies: "p2" }
neighbors { address: "192.0.2.3" remote_as: 65003 import_policies: "p1" }
)"),
                   .check = [](const ReloadPlan& plan, const auto& running, const auto&) {
                     const ReloadPlan before = Identity(running);
                     CHECK(Kinds(plan.neighbors) == std::vector<Kind>{Kind::kKept, Kind::kKept});
                     CHECK(plan.neighbors[0].changed_fields == Strings{"import_policies"});
                     CHECK(plan.neighbors[0].policies.import[0].fingerprint !=
                           before.neighbors[0].policies.import[0].fingerprint);
                     REQUIRE(plan.neighbors[0].policies.import[0].policies.size() == 1);
                     CHECK(plan.neighbors[0].policies.import[0].policies[0]->name() == "p2");
                     // The other neighbor's chain means the same.
                     CHECK(plan.neighbors[1].changed_fields.empty());
                     CHECK(plan.neighbors[1].policies.import[0].fingerprint ==
                           before.neighbors[1].policies.import[0].fingerprint);
                     CHECK(plan.updated() == 1);
                     CHECK_FALSE(plan.reweigh);
                   }});

  cases.push_back({.name = "a policy's definition changed: the chain differs, the neighbor's fields do not",
                   .running = Config("", "", policies + R"(
neighbors { address: "192.0.2.2" remote_as: 65002 import_policies: "p1" }
)"),
                   .next = Config("", "", R"(
defined_sets { prefix_sets { name: "long" prefixes { prefix: "0.0.0.0/0" ge: 24 } } }
policies { name: "p1" statements { conditions { prefix_set { set: "long" } } actions { disposition: DISPOSITION_REJECT } } }
policies { name: "p2" statements { actions { disposition: DISPOSITION_ACCEPT } } }
neighbors { address: "192.0.2.2" remote_as: 65002 import_policies: "p1" }
)"),
                   .check = [](const ReloadPlan& plan, const auto& running, const auto&) {
                     const ReloadPlan before = Identity(running);
                     CHECK(plan.neighbors[0].kind == Kind::kKept);
                     CHECK(plan.neighbors[0].changed_fields.empty());
                     CHECK(plan.neighbors[0].policies.import[0].fingerprint !=
                           before.neighbors[0].policies.import[0].fingerprint);
                     // The export chain names no policy: unchanged.
                     CHECK(plan.neighbors[0].policies.export_[0].fingerprint ==
                           before.neighbors[0].policies.export_[0].fingerprint);
                     CHECK(plan.updated() == 0);  // counted by the pipeline, not here
                   }});

  cases.push_back({.name = "networks: added, removed, an API network replaced by the file",
                   .running = Config("", "", R"(
neighbors { address: "192.0.2.2" remote_as: 65002 }
networks { prefix: "10.100.0.0/24" }
networks { prefix: "10.101.0.0/24" }
networks { prefix: "2001:db8:100::/48" }
)"),
                   .next = Config("", "", R"(
neighbors { address: "192.0.2.2" remote_as: 65002 }
networks { prefix: "10.100.0.0/24" }
networks { prefix: "10.102.0.0/24" link_bandwidth: "10G" }
)"),
                   .api_networks = {ApiNetwork("10.102.0.0/24"), ApiNetwork("10.103.0.0/24")},
                   .check = [](const ReloadPlan& plan, const auto&, const auto&) {
                     CHECK(Prefixes(plan.networks) == Strings{"10.100.0.0/24", "10.102.0.0/24"});
                     REQUIRE(plan.networks[1].link_bandwidth_bps.has_value());
                     CHECK(*plan.networks[1].link_bandwidth_bps == 10e9);
                     CHECK(Prefixes(plan.api_replaced) == Strings{"10.102.0.0/24"});
                     CHECK(Prefixes(plan.api_networks) == Strings{"10.103.0.0/24"});
                     CHECK(Prefixes(plan.withdrawn) == Strings{"10.101.0.0/24", "2001:db8:100::/48"});
                     CHECK(plan.neighbors[0].kind == Kind::kKept);
                   }});

  cases.push_back({.name = "a network the API still originates is not withdrawn",
                   .running = Config("", "", R"(
neighbors { address: "192.0.2.2" remote_as: 65002 }
networks { prefix: "10.100.0.0/24" }
networks { prefix: "10.101.0.0/24" }
)"),
                   .next = Config("", "", R"(
neighbors { address: "192.0.2.2" remote_as: 65002 }
)"),
                   .api_networks = {ApiNetwork("10.101.0.0/24")},
                   .check = [](const ReloadPlan& plan, const auto&, const auto&) {
                     CHECK(plan.networks.empty());
                     CHECK(Prefixes(plan.api_networks) == Strings{"10.101.0.0/24"});
                     CHECK(plan.api_replaced.empty());
                     CHECK(Prefixes(plan.withdrawn) == Strings{"10.100.0.0/24"});
                   }});

  cases.push_back({.name = "router.listen needs a restart: the running config keeps the old sockets",
                   .running = Config("listen { address: \"127.0.0.1\" port: 1179 }", "", kNeighbors),
                   .next = Config("listen { address: \"127.0.0.1\" port: 1180 }", "", kNeighbors),
                   .check = [](const ReloadPlan& plan, const auto& running, const auto& next) {
                     CHECK(plan.needs_restart == Strings{"router.listen (the listening sockets)"});
                     REQUIRE(plan.running.router().listen_size() == 1);
                     CHECK(plan.running.router().listen(0).port() == 1179);
                     CHECK(Differences(plan.running.router(), running.router()) == "");
                     CHECK_FALSE(Differences(plan.running, next).empty());
                     CHECK(Kinds(plan.neighbors) == std::vector<Kind>{Kind::kKept, Kind::kKept});
                   }});

  cases.push_back({.name = "log level and multipath need a restart, the rest of the reload applies",
                   .running = Config("", "", kNeighbors + std::string("multipath { maximum_paths_ebgp: 4 }\n")),
                   .next = Config("log_level: LOG_LEVEL_DEBUG", "",
                                  R"(
neighbors { address: "192.0.2.2" remote_as: 65002 description: "a2" }
neighbors { address: "192.0.2.3" remote_as: 65003 description: "b" }
networks { prefix: "10.100.0.0/24" }
multipath { maximum_paths_ebgp: 8 as_path_relax: true }
)"),
                   .check = [](const ReloadPlan& plan, const auto& running, const auto& next) {
                     CHECK(plan.needs_restart == Strings{"router.log_level",
                                                         "multipath.maximum_paths_ebgp (the decision process)",
                                                         "multipath.as_path_relax (the decision process)"});
                     CHECK(plan.running.router().log_level() == running.router().log_level());
                     CHECK(Differences(plan.running.multipath(), running.multipath()) == "");
                     // What does not need a restart is the next config's.
                     CHECK(Differences(plan.running.neighbors(0), next.neighbors(0)) == "");
                     CHECK(plan.updated() == 1);
                   }});

  cases.push_back({.name = "fib.max_weight applies in place and reweighs, fib.retain_on_exit needs a restart",
                   .running = Config("", "retain_on_exit: false", kNeighbors),
                   .next = Config("", "retain_on_exit: true max_weight: 255", kNeighbors),
                   .check = [](const ReloadPlan& plan, const auto& running, const auto&) {
                     CHECK(plan.needs_restart == Strings{"fib.retain_on_exit (used at start and exit)"});
                     CHECK(plan.running.fib().max_weight() == 255);
                     CHECK(plan.running.fib().retain_on_exit() == running.fib().retain_on_exit());
                     CHECK_FALSE(plan.running.fib().retain_on_exit());
                     CHECK(plan.weights.limits.max_weight == 255);
                     CHECK(plan.reweigh);
                   }});

  cases.push_back({.name = "fib group limits apply in place, the backend needs a restart",
                   .running = Config("", "", kNeighbors),
                   .next = Config("", "max_groups: 100 group_reserve: 10 group_merge: GROUP_MERGE_SUBSET "
                                      "group_budget: 128 kernel_table: 200",
                                  kNeighbors),
                   .check = [](const ReloadPlan& plan, const auto& running, const auto& next) {
                     CHECK(plan.needs_restart == Strings{"fib.kernel_table"});
                     CHECK(plan.running.fib().kernel_table() == running.fib().kernel_table());
                     CHECK(plan.running.fib().max_groups() == 100);
                     CHECK(plan.running.fib().has_group_reserve());
                     CHECK(plan.running.fib().group_reserve() == 10);
                     CHECK(plan.running.fib().group_merge() == next.fib().group_merge());
                     CHECK(plan.running.fib().group_budget() == 128);
                     CHECK(plan.weights.limits.budget == 128);
                     CHECK(plan.reweigh);  // the group budget changes every weight
                   }});

  cases.push_back({.name = "a link-bandwidth policy change reweighs every route",
                   .running = Config("", "", kNeighbors),
                   .next = Config("", "", kNeighbors + std::string("link_bandwidth { mode: MODE_IGNORE }\n")),
                   .check = [](const ReloadPlan& plan, const auto&, const auto&) {
                     CHECK(plan.reweigh);
                     CHECK_FALSE(plan.weights.policy[0].use_link_bandwidth);
                     CHECK(plan.needs_restart.empty());
                     CHECK(Kinds(plan.neighbors) == std::vector<Kind>{Kind::kKept, Kind::kKept});
                     CHECK(plan.running.link_bandwidth().mode() == config::v1::LinkBandwidth::MODE_IGNORE);
                   }});

  const std::string lag = R"(capacity_sources { name: "lag1" members: ["eth1", "eth2"] member_speed: "100G" }
)";
  cases.push_back({.name = "local capacity: a neighbor capped by its source, IGNORE and none are not",
                   .running = Config("", "", lag + kNeighbors),
                   .next = Config("", "", lag + R"(
neighbors { address: "192.0.2.2" remote_as: 65002 description: "a" local_capacity_source: "lag1" }
neighbors { address: "192.0.2.3" remote_as: 65003 description: "b"
            local_capacity_source: "lag1" local_capacity: LOCAL_CAPACITY_IGNORE }
neighbors { address: "192.0.2.4" remote_as: 65004 }
)"),
                   .check = [](const ReloadPlan& plan, const auto&, const auto&) {
                     CHECK(plan.neighbors[0].local_capacity_source == "lag1");
                     CHECK(plan.neighbors[1].local_capacity_source.empty());
                     CHECK(plan.neighbors[2].local_capacity_source.empty());
                     CHECK(Kinds(plan.neighbors) == std::vector<Kind>{Kind::kKept, Kind::kKept, Kind::kAdded});
                     CHECK(plan.neighbors[0].changed_fields == Strings{"local_capacity_source"});
                     CHECK(plan.needs_restart.empty());
                     CHECK(Prefixes(plan.withdrawn) == Strings{"10.100.0.0/24"});
                   }});

  cases.push_back({.name = "capacity_sources need a restart: the running ones stay",
                   .running = Config("", "", lag + kNeighbors),
                   .next = Config("", "",
                                  R"(capacity_sources { name: "lag1" members: ["eth1", "eth2", "eth3"] member_speed: "100G" }
)" + std::string(kNeighbors)),
                   .check = [](const ReloadPlan& plan, const auto& running, const auto&) {
                     CHECK(plan.needs_restart == Strings{"capacity_sources"});
                     REQUIRE(plan.running.capacity_sources_size() == 1);
                     CHECK(Differences(plan.running.capacity_sources(0), running.capacity_sources(0)) == "");
                   }});

  cases.push_back({.name = "micro_bfd on a capacity source is reloadable: added, changed, removed",
                   .running = Config("", "", lag + kNeighbors),
                   .next = Config("", "",
                                  R"(capacity_sources { name: "lag1" members: ["eth1", "eth2"] member_speed: "100G"
  micro_bfd { local_address: "10.9.0.1" neighbor_address: "10.9.0.2" min_tx: 100 min_rx: 100 } }
)" + std::string(kNeighbors)),
                   .check = [](const ReloadPlan& plan, const auto&, const auto&) {
                     CHECK(plan.needs_restart.empty());
                     REQUIRE(plan.running.capacity_sources_size() == 1);
                     CHECK(plan.running.capacity_sources(0).micro_bfd().neighbor_address() == "10.9.0.2");
                     CHECK(plan.running.capacity_sources(0).micro_bfd().min_tx() == 100);
                   }});
  cases.push_back({.name = "micro_bfd removed with a member added: the restart keeps the members, not micro_bfd",
                   .running = Config("", "",
                                     R"(capacity_sources { name: "lag1" members: ["eth1", "eth2"] member_speed: "100G"
  micro_bfd { local_address: "10.9.0.1" neighbor_address: "10.9.0.2" } }
)" + std::string(kNeighbors)),
                   .next = Config("", "",
                                  R"(capacity_sources { name: "lag1" members: ["eth1", "eth2", "eth3"] member_speed: "100G" }
)" + std::string(kNeighbors)),
                   .check = [](const ReloadPlan& plan, const auto&, const auto&) {
                     CHECK(plan.needs_restart == Strings{"capacity_sources"});
                     REQUIRE(plan.running.capacity_sources_size() == 1);
                     CHECK(plan.running.capacity_sources(0).members_size() == 2);
                     CHECK_FALSE(plan.running.capacity_sources(0).has_micro_bfd());
                   }});

  cases.push_back({.name = "router.asn cannot change while running",
                   .running = Base(),
                   .next = std::string("router { asn: 65099 router_id: \"10.255.0.1\" ebgp_requires_policy: false }\n"
                                       "fib { backend: BACKEND_NONE }\n") +
                           kNeighbors,
                   .error = absl::StatusCode::kFailedPrecondition,
                   .error_text = "router.asn and router.router_id cannot change while bagd runs (every session and "
                                 "route depends on them): restart bagd to apply them; the running configuration is kept"});

  cases.push_back({.name = "router.router_id cannot change while running",
                   .running = Base(),
                   .next = std::string("router { asn: 65000 router_id: \"10.255.0.9\" ebgp_requires_policy: false }\n"
                                       "fib { backend: BACKEND_NONE }\n") +
                           kNeighbors,
                   .error = absl::StatusCode::kFailedPrecondition,
                   .error_text = "restart bagd to apply them"});

  cases.push_back({.name = "a policy that does not compile: an error and no plan",
                   .running = Base(),
                   .next = Config("", "", policies + kNeighbors),
                   .mutate_next =
                       [](config::v1::Config& c) {
                         c.mutable_policies(0)->mutable_statements(0)->mutable_conditions()->mutable_prefix_set()->set_set(
                             "nope");
                       },
                   .error = absl::StatusCode::kInvalidArgument,
                   .error_text = "prefix set \"nope\" is not defined"});

  cases.push_back({.name = "the policies are checked before router.asn",
                   .running = Base(),
                   .next = std::string("router { asn: 65099 router_id: \"10.255.0.1\" ebgp_requires_policy: false }\n"
                                       "fib { backend: BACKEND_NONE }\n") +
                           kNeighbors,
                   .mutate_next = [](config::v1::Config& c) { c.mutable_neighbors(1)->add_import_policies("missing"); },
                   .error = absl::StatusCode::kInvalidArgument,
                   .error_text = "policy \"missing\" is not defined"});

  cases.push_back({.name = "a neighbor's link-bandwidth export that does not compile names the neighbor",
                   .running = Base(),
                   .next = Base(),
                   .mutate_next =
                       [](config::v1::Config& c) {
                         auto* lb = c.mutable_neighbors(1)->mutable_link_bandwidth();
                         lb->set_mode(config::v1::NeighborLinkBandwidth::EXPORT_FIXED);
                         lb->set_rate("fast");
                       },
                   .error = absl::StatusCode::kInvalidArgument,
                   .error_text = "neighbor 192.0.2.3: "});

  cases.push_back({.name = "a network that does not parse: an error",
                   .running = Base(),
                   .next = Base(),
                   .mutate_next = [](config::v1::Config& c) { c.add_networks()->set_prefix("10.1.0.1/33"); },
                   .error = absl::StatusCode::kInvalidArgument,
                   .error_text = "network '10.1.0.1/33'"});

  return cases;
}

// Every chain of the plan points into the plan's own policy set.
void CheckChainsPointIntoPlan(const ReloadPlan& plan) {
  REQUIRE(plan.policies != nullptr);
  for (const NeighborPlan& n : plan.neighbors) {
    for (const auto* chains : {&n.policies.import, &n.policies.export_}) {
      for (const PolicyChain& chain : *chains) {
        for (const policy::CompiledPolicy* p : chain.policies) CHECK(plan.policies->Find(p->name()) == p);
      }
    }
  }
}

TEST_CASE("PlanReload: a table of running and next configs", "[reload_plan]") {
  for (const Case& c : Cases()) {
    DYNAMIC_SECTION(c.name) {
      const config::v1::Config running = Parse(c.running);
      config::v1::Config next = Parse(c.next);
      if (c.mutate_next) c.mutate_next(next);
      auto plan = PlanReload(running, next, c.api_networks);
      if (c.error != absl::StatusCode::kOk) {
        REQUIRE_FALSE(plan.ok());
        CHECK(plan.status().code() == c.error);
        CHECK_THAT(std::string(plan.status().message()), Catch::Contains(c.error_text));
      } else {
        INFO(plan.status().ToString());
        REQUIRE(plan.ok());
        REQUIRE(c.check);
        CheckChainsPointIntoPlan(*plan);
        // Every neighbor of the next config, in its order, with its own PeerConfig.
        REQUIRE(plan->neighbors.size() == static_cast<size_t>(next.neighbors_size()));
        for (size_t i = 0; i < plan->neighbors.size(); ++i) {
          CHECK(plan->neighbors[i].peer.Name() == plan->neighbors[i].name);
        }
        CHECK(plan->added() + plan->reset() + plan->updated() <= plan->neighbors.size());
        c.check(*plan, running, next);
      }
    }
  }
}

TEST_CASE("PlanReload: the chains stay valid while the plan lives, whatever the configs do", "[reload_plan]") {
  config::v1::Config running = Parse(Base());
  auto next = std::make_unique<config::v1::Config>(Parse(Config("", "", R"(
policies { name: "p2" statements { actions { disposition: DISPOSITION_ACCEPT } } }
neighbors { address: "192.0.2.2" remote_as: 65002 import_policies: "p2" }
)")));
  auto plan = PlanReload(running, *next, {});
  REQUIRE(plan.ok());
  next.reset();  // the plan owns its policy set
  REQUIRE(plan->neighbors[0].policies.import[0].policies.size() == 1);
  CHECK(plan->neighbors[0].policies.import[0].policies[0]->name() == "p2");
  CHECK(plan->removed == Strings{"192.0.2.3"});
  CHECK(plan->neighbors[0].changed_fields == Strings{"description", "import_policies"});
}

TEST_CASE("PlanReload: a password_file's new key under the same path, and the running sessions", "[reload_plan]") {
  char dir[] = "/tmp/reload_plan_test.XXXXXX";
  REQUIRE(mkdtemp(dir) != nullptr);
  const std::string path = absl::StrCat(dir, "/md5.key");
  auto write = [&](const std::string& key) {
    std::ofstream out(path, std::ios::trunc);
    out << key << "\n";
  };
  write("first-key");
  const std::string text = Config("", "", absl::StrCat(R"(neighbors { address: "192.0.2.2" remote_as: 65002 password_file: ")",
                                                       path, R"(" }
neighbors { address: "192.0.2.3" remote_as: 65003 }
)"));
  const config::v1::Config running = Parse(text);
  auto live = PeerConfigs(running);  // what the sessions were made with
  REQUIRE(live.ok());
  REQUIRE((*live)[0].password == "first-key");
  write("second-key");
  const config::v1::Config next = Parse(text);

  // The running sessions given: the key changed, that session is reset.
  auto plan = PlanReload(running, next, {}, 65535, 0, *live);
  REQUIRE(plan.ok());
  CHECK(Kinds(plan->neighbors) == std::vector<Kind>{Kind::kReset, Kind::kKept});
  CHECK(plan->neighbors[0].changed_fields.empty());  // the file's path is the same
  CHECK(plan->neighbors[0].peer.password == "second-key");

  // Without them, PeerConfigs(running) reads the file now: the same key on both sides.
  auto from_config = PlanReload(running, next, {});
  REQUIRE(from_config.ok());
  CHECK(Kinds(from_config->neighbors) == std::vector<Kind>{Kind::kKept, Kind::kKept});

  // The file gone: the running config's PeerConfigs cannot be built for that neighbor
  // (compared as a changed session), the others still can.
  std::remove(path.c_str());
  rmdir(dir);
  config::v1::Config without = running;
  without.mutable_neighbors(0)->clear_password_file();
  without.mutable_neighbors(0)->set_password("second-key");
  auto gone = PlanReload(running, without, {});
  REQUIRE(gone.ok());
  CHECK(Kinds(gone->neighbors) == std::vector<Kind>{Kind::kReset, Kind::kKept});
  CHECK(gone->neighbors[0].changed_fields == Strings{"password", "password_file"});
}

TEST_CASE("ChangedFields: the names of the fields that differ, in field order", "[reload_plan]") {
  config::v1::Neighbor a, b;
  a.set_address("192.0.2.2");
  a.set_remote_as(65002);
  b = a;
  CHECK(ChangedFields(a, b).empty());
  b.set_password("x");
  b.set_remote_as(65003);
  b.mutable_timers()->set_hold_time(30);
  CHECK(ChangedFields(a, b) == Strings{"remote_as", "timers", "password"});
  // An optional field set to its default is a change (presence is serialized).
  config::v1::Fib f, g;
  g.set_retain_on_exit(false);
  CHECK(ChangedFields(f, g) == Strings{"retain_on_exit"});
}

}  // namespace
}  // namespace bagd::daemon

namespace bagd::daemon {
namespace {

// Neighbor groups (docs/config.md "neighbor_groups"): the loader applies a group to its
// members, so a reload that changes the group is a change to each member, planned one by one.
TEST_CASE("PlanReload: a change to a neighbor group is a change to each of its members", "[reload_plan][groups]") {
  auto with_group = [](const std::string& settings) {
    return Parse(Config("", "", absl::StrCat(R"(neighbor_groups { name: "spines" settings { remote_as: 65002 )", settings,
                                             R"( } }
neighbors { address: "10.0.0.1" group: "spines" }
neighbors { address: "10.0.0.2" group: "spines" description: "own" }
neighbors { address: "10.0.0.3" remote_as: 65003 }
)")));
  };
  const config::v1::Config running = with_group(R"(description: "spine")");
  SECTION("in place: the description reaches the members that do not set their own") {
    auto plan = PlanReload(running, with_group(R"(description: "spine-v2")"), {});
    REQUIRE(plan.ok());
    REQUIRE(plan->neighbors.size() == 3);
    CHECK(plan->neighbors[0].kind == Kind::kKept);
    CHECK(plan->neighbors[0].changed_fields == Strings{"description"});
    CHECK(plan->neighbors[1].changed_fields.empty());  // it overrides the description
    CHECK(plan->neighbors[2].changed_fields.empty());  // not in the group
    CHECK(plan->running.neighbors(0).description() == "spine-v2");
    CHECK(plan->updated() == 1);
  }
  SECTION("a session setting resets every member, and only them") {
    auto plan = PlanReload(running, with_group(R"(description: "spine" timers { hold_time: 9 })"), {});
    REQUIRE(plan.ok());
    CHECK(plan->neighbors[0].kind == Kind::kReset);
    CHECK(plan->neighbors[1].kind == Kind::kReset);
    CHECK(plan->neighbors[2].kind == Kind::kKept);
    CHECK(plan->reset() == 2);
  }
}

}  // namespace
}  // namespace bagd::daemon
