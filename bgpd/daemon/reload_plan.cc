#include "bgpd/daemon/reload_plan.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"

namespace bagd::daemon {

namespace {

using Kind = NeighborPlan::Kind;

// The running config's neighbors as PeerConfigs, by canonical address. PeerConfigs(running)
// at once; should that fail now (a password_file of the running config that cannot be read
// any more), one neighbor at a time, and a neighbor whose PeerConfig cannot be built is left
// out: it is compared as a changed session (kReset), the safe side.
absl::flat_hash_map<std::string, session::PeerConfig> RunningPeers(const config::v1::Config& running) {
  absl::flat_hash_map<std::string, session::PeerConfig> out;
  if (auto all = PeerConfigs(running); all.ok()) {
    for (session::PeerConfig& pc : *all) {
      std::string name = pc.Name();
      out.emplace(std::move(name), std::move(pc));
    }
    return out;
  }
  config::v1::Config one;
  *one.mutable_router() = running.router();
  for (const auto& n : running.neighbors()) {
    *one.add_neighbors() = n;
    if (auto pcs = PeerConfigs(one); pcs.ok() && pcs->size() == 1) {
      std::string name = pcs->front().Name();
      out.emplace(std::move(name), std::move(pcs->front()));
    }
    one.clear_neighbors();
  }
  return out;
}

// What needs a restart of bagd, one line each (the running values stay).
std::vector<std::string> NeedsRestart(const config::v1::Config& running, const config::v1::Config& next) {
  std::vector<std::string> restart;
  for (const std::string& f : ChangedFields(running.router(), next.router())) {
    if (f == "listen") restart.push_back("router.listen (the listening sockets)");
    if (f == "log_level") restart.push_back("router.log_level");
  }
  for (const std::string& f : ChangedFields(running.multipath(), next.multipath())) {
    restart.push_back(absl::StrCat("multipath.", f, " (the decision process)"));
  }
  for (const std::string& f : ChangedFields(running.fib(), next.fib())) {
    if (f == "max_weight" || f == "group_budget" || f == "max_groups" || f == "group_reserve" ||
        f == "group_merge" || f == "group_merge_weight") {
      continue;  // applied in place (max_groups to or from 0 too: the registry adopts or releases)
    }
    restart.push_back(f == "restart_hold_time" || f == "restart_neighbor_wait" || f == "retain_on_exit"
                          ? absl::StrCat("fib.", f, " (used at start and exit)")
                          : absl::StrCat("fib.", f));
  }
  std::string a, b;
  // micro_bfd is applied by a reload (the BFD stage): compare the rest.
  auto without_micro_bfd = [](config::v1::CapacitySource c) {
    c.clear_micro_bfd();
    return c.SerializeAsString();
  };
  for (const auto& c : running.capacity_sources()) a += without_micro_bfd(c);
  for (const auto& c : next.capacity_sources()) b += without_micro_bfd(c);
  if (a != b) restart.push_back("capacity_sources");
  return restart;
}

// The running config after the reload: `next`, but for what needs a restart.
config::v1::Config RunningAfter(const config::v1::Config& before, const config::v1::Config& config) {
  config::v1::Config running = config;
  *running.mutable_router()->mutable_listen() = before.router().listen();
  running.mutable_router()->set_log_level(before.router().log_level());
  *running.mutable_multipath() = before.multipath();
  // fib: the running one, but for the limits a reload applies in place.
  const config::v1::Fib& next = config.fib();
  config::v1::Fib* fib = running.mutable_fib();
  *fib = before.fib();
  fib->set_max_weight(next.max_weight());
  fib->set_group_budget(next.group_budget());
  fib->set_max_groups(next.max_groups());
  if (next.has_group_reserve()) {
    fib->set_group_reserve(next.group_reserve());
  } else {
    fib->clear_group_reserve();
  }
  fib->set_group_merge(next.group_merge());
  fib->set_group_merge_weight(next.group_merge_weight());
  *running.mutable_capacity_sources() = before.capacity_sources();
  // ...but each source's micro_bfd as the new config has it (matched by name).
  for (auto& c : *running.mutable_capacity_sources()) {
    c.clear_micro_bfd();
    for (const auto& n : config.capacity_sources()) {
      if (n.name() == c.name() && n.has_micro_bfd()) *c.mutable_micro_bfd() = n.micro_bfd();
    }
  }
  return running;
}

}  // namespace

size_t ReloadPlan::added() const {
  return static_cast<size_t>(
      std::count_if(neighbors.begin(), neighbors.end(), [](const NeighborPlan& n) { return n.kind == Kind::kAdded; }));
}

size_t ReloadPlan::reset() const {
  return static_cast<size_t>(
      std::count_if(neighbors.begin(), neighbors.end(), [](const NeighborPlan& n) { return n.kind == Kind::kReset; }));
}

size_t ReloadPlan::updated() const {
  return static_cast<size_t>(std::count_if(neighbors.begin(), neighbors.end(), [](const NeighborPlan& n) {
    return n.kind == Kind::kKept && !n.changed_fields.empty();
  }));
}

// One field at a time swapped into empty messages and compared.
std::vector<std::string> ChangedFields(const google::protobuf::Message& a, const google::protobuf::Message& b) {
  std::vector<std::string> out;
  const google::protobuf::Descriptor* d = a.GetDescriptor();
  for (int i = 0; i < d->field_count(); ++i) {
    const google::protobuf::FieldDescriptor* f = d->field(i);
    std::unique_ptr<google::protobuf::Message> x(a.New()), y(b.New()), ca(a.New()), cb(b.New());
    ca->CopyFrom(a);
    cb->CopyFrom(b);
    a.GetReflection()->SwapFields(ca.get(), x.get(), {f});
    b.GetReflection()->SwapFields(cb.get(), y.get(), {f});
    if (x->SerializeAsString() != y->SerializeAsString()) out.push_back(f->name());
  }
  return out;
}

absl::StatusOr<ReloadPlan> PlanReload(const config::v1::Config& running, const config::v1::Config& next,
                                      std::span<const Network> api_networks, uint32_t backend_max_weight,
                                      uint32_t backend_max_groups, std::span<const session::PeerConfig> running_peers) {
  // Everything is checked first, in the order Speaker::Reload checked it (the first error
  // is the one reported).
  auto weights = WeightsConfigOf(next, backend_max_weight, backend_max_groups);
  if (!weights.ok()) return weights.status();
  auto compiled = policy::PolicySet::Compile(next);
  if (!compiled.ok()) return compiled.status();
  ReloadPlan plan;
  plan.policies = std::make_shared<const policy::PolicySet>(*std::move(compiled));
  std::vector<NeighborPolicies> chains;
  chains.reserve(static_cast<size_t>(next.neighbors_size()));
  for (const auto& n : next.neighbors()) {
    auto c = PoliciesOf(next, n, *plan.policies);
    if (!c.ok()) return c.status();
    chains.push_back(*std::move(c));
  }
  if (next.router().asn() != running.router().asn() || next.router().router_id() != running.router().router_id()) {
    return absl::FailedPreconditionError(
        "router.asn and router.router_id cannot change while bagd runs (every session and route depends on them): "
        "restart bagd to apply them; the running configuration is kept");
  }
  auto peers = PeerConfigs(next);
  if (!peers.ok()) return peers.status();
  std::vector<rib::LinkBandwidthExport> exports;
  exports.reserve(peers->size());
  for (int i = 0; i < next.neighbors_size(); ++i) {
    auto e = LinkBandwidthExportOf(next.neighbors(i).link_bandwidth());
    if (!e.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("neighbor ", (*peers)[i].Name(), ": ", e.status().message()));
    }
    exports.push_back(*e);
  }
  auto networks = NetworksOf(next);
  if (!networks.ok()) return networks.status();
  auto running_networks = NetworksOf(running);
  if (!running_networks.ok()) return running_networks.status();

  plan.needs_restart = NeedsRestart(running, next);

  // Neighbors, matched by canonical address (the list's order means nothing).
  absl::flat_hash_map<std::string, int> old_at;
  absl::flat_hash_set<std::string> new_names;
  for (const session::PeerConfig& pc : *peers) new_names.insert(pc.Name());
  for (int i = 0; i < running.neighbors_size(); ++i) {
    auto a = net::IpAddress::Parse(running.neighbors(i).address());
    if (!a.ok()) continue;
    std::string name = a->ToString();
    const bool first = old_at.insert_or_assign(name, i).second;
    if (first && !new_names.contains(name)) plan.removed.push_back(std::move(name));
  }
  absl::flat_hash_map<std::string, session::PeerConfig> sessions;
  if (running_peers.empty()) {
    sessions = RunningPeers(running);
  } else {
    for (const session::PeerConfig& pc : running_peers) sessions.emplace(pc.Name(), pc);
  }
  plan.neighbors.reserve(peers->size());
  for (int i = 0; i < next.neighbors_size(); ++i) {
    const config::v1::Neighbor& n = next.neighbors(i);
    NeighborPlan np;
    np.peer = std::move((*peers)[i]);
    np.name = np.peer.Name();
    np.policies = std::move(chains[i]);
    np.lb_export = exports[i];
    if (!n.local_capacity_source().empty() && n.local_capacity() != config::v1::LOCAL_CAPACITY_IGNORE) {
      np.local_capacity_source = n.local_capacity_source();
    }
    if (auto at = old_at.find(np.name); at == old_at.end()) {
      np.kind = Kind::kAdded;
    } else {
      np.changed_fields = ChangedFields(running.neighbors(at->second), n);
      auto before = sessions.find(np.name);
      np.kind = before != sessions.end() && session::PeerConfig::SameSession(before->second, np.peer)
                    ? Kind::kKept
                    : Kind::kReset;
    }
    plan.neighbors.push_back(std::move(np));
  }

  // Own routes: the file's list is originated; an API network whose prefix the file has now
  // is the file's; what left both lists is withdrawn.
  absl::flat_hash_set<net::Prefix> keep;
  for (const Network& n : *networks) keep.insert(n.nlri.prefix);
  for (const Network& n : api_networks) {
    if (keep.contains(n.nlri.prefix)) {
      plan.api_replaced.push_back(n.nlri.prefix);
    } else {
      plan.api_networks.push_back(n);
    }
  }
  for (const Network& n : plan.api_networks) keep.insert(n.nlri.prefix);
  for (const Network& n : *running_networks) {
    if (!keep.contains(n.nlri.prefix)) plan.withdrawn.push_back(n.nlri);
  }
  plan.networks = *std::move(networks);

  plan.weights = *std::move(weights);
  plan.reweigh = ReweighOnReload(running, next);
  plan.running = RunningAfter(running, next);
  return plan;
}

}  // namespace bagd::daemon
