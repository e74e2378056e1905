#include "bgpd/daemon/routing_core.h"

namespace bagd::daemon {

RoutingCore::RoutingCore(uint32_t local_as, rib::DecisionConfig decision) : local_as_(local_as), rib_(local_as, decision) {}

rib::PeerIndex RoutingCore::AddPeer(rib::PeerInfo info, std::optional<net::IpAddress> address,
                                    const NeighborPolicies& policies) {
  const policy::RouteSource source =
      info.local ? policy::RouteSource::kLocal : (info.source.ebgp ? policy::RouteSource::kEbgp : policy::RouteSource::kIbgp);
  const rib::PeerIndex index = rib_.AddPeer(std::move(info));
  if (inbound_.size() <= index) inbound_.resize(index + 1);
  inbound_[index].address = address;
  inbound_[index].source = source;
  SetImport(index, policies);
  return index;
}

void RoutingCore::SetImport(rib::PeerIndex peer, const NeighborPolicies& policies) {
  Inbound& in = inbound_[peer];
  in.chains = policies.import;
  in.memo.Clear();  // it was for the old chains
  in.memo_attrs = {};
  if (policies.soft_reconfiguration_inbound && !in.adj_in) in.adj_in = std::make_unique<rib::AdjRibIn>();
  if (!policies.soft_reconfiguration_inbound) in.adj_in.reset();
  in.passes_everything = !in.adj_in && std::all_of(in.chains.begin(), in.chains.end(),
                                                   [](const PolicyChain& c) { return c.passes_everything(); });
}

void RoutingCore::RemovePeer(rib::PeerIndex peer) {
  if (peer < inbound_.size()) inbound_[peer] = Inbound{};
}

const rib::AdjRibIn* RoutingCore::received(rib::PeerIndex peer) const {
  return peer < inbound_.size() ? inbound_[peer].adj_in.get() : nullptr;
}

void RoutingCore::Ingest(rib::PeerIndex peer, const wire::UpdateMessage& u) {
  Inbound& in = inbound_[peer];
  if (in.passes_everything) return rib_.ApplyUpdate(peer, u, store_);
  rib::SplitUpdate(
      u, store_, [&](std::span<const net::Nlri> nlri) { Withdraw(peer, nlri); },
      [&](std::span<const net::Nlri> nlri, const rib::AttrRef& attrs) { Import(peer, in, nlri, attrs); });
}

void RoutingCore::Import(rib::PeerIndex peer, Inbound& in, std::span<const net::Nlri> nlri, const rib::AttrRef& received) {
  if (nlri.empty()) return;
  if (in.adj_in) {
    for (const net::Nlri& n : nlri) in.adj_in->Set(n, received);
  }
  const PolicyChain& chain = in.chains[static_cast<int>(nlri.front().prefix.family())];
  if (chain.passes_everything()) return rib_.Announce(peer, nlri, received);
  if (chain.rejects_everything()) {
    in.rejected += nlri.size();
    return rib_.Withdraw(peer, nlri);  // a path accepted before a reload may be there
  }
  policy::RouteContext route;
  route.attributes = &received->attrs;
  route.neighbor = in.address;
  route.source = in.source;
  if (!chain.depends_on_prefix) {
    // One evaluation for the whole UPDATE: nothing the chain tests differs between its prefixes.
    route.prefix = nlri.front().prefix;
    policy::PolicyResult r = policy::EvaluateChain(chain.policies, route, chain.default_verdict, nullptr,
                                                      policy::EvaluateOptions{.routes = nlri.size()});
    if (r.verdict != policy::Verdict::kAccept) {
      in.rejected += nlri.size();
      return rib_.Withdraw(peer, nlri);
    }
    if (!r.modified) return rib_.Announce(peer, nlri, received);
    return Announce(peer, nlri, *std::move(r.modified));
  }
  accepted_.clear();
  rejected_.clear();
  // The prefixes share everything but themselves: the chain's other conditions are tested
  // once for the run (the AS-path regexes, say), the prefix sets per prefix. The memo goes on
  // over the neighbor's next UPDATEs while they carry the same interned attribute set (one
  // prefix per UPDATE is common); the reference it keeps means the pointer cannot be reused.
  if (in.memo_attrs != received) {
    in.memo.Clear();
    in.memo_attrs = received;
  }
  route.memo = &in.memo;
  for (const net::Nlri& n : nlri) {
    route.prefix = n.prefix;
    policy::PolicyResult r = policy::EvaluateChain(chain.policies, route, chain.default_verdict);
    if (r.verdict != policy::Verdict::kAccept) {
      rejected_.push_back(n);
    } else if (!r.modified) {
      accepted_.push_back(n);
    } else {
      Announce(peer, std::span(&n, 1), *std::move(r.modified));
    }
  }
  in.rejected += rejected_.size();
  if (!accepted_.empty()) rib_.Announce(peer, accepted_, received);
  if (!rejected_.empty()) rib_.Withdraw(peer, rejected_);
}

void RoutingCore::Announce(rib::PeerIndex peer, std::span<const net::Nlri> nlri, wire::PathAttributes attrs) {
  rib_.Announce(peer, nlri, store_.Intern(std::move(attrs)));
}

void RoutingCore::Originate(rib::PeerIndex local, const net::Nlri& nlri, std::optional<double> link_bandwidth_bps) {
  wire::PathAttributes a;
  a.origin = wire::Origin::kIgp;
  a.as_path = wire::AsPath{};
  a.local_pref = 100;
  if (link_bandwidth_bps) {
    a.extended_communities.push_back(
        wire::LinkBandwidth::FromBitsPerSecond(local_as_, *link_bandwidth_bps, true).ToExtendedCommunity());
  }
  rib_.Announce(local, std::span(&nlri, 1), store_.Intern(std::move(a)));
}

void RoutingCore::Withdraw(rib::PeerIndex peer, std::span<const net::Nlri> nlri) {
  if (peer < inbound_.size() && inbound_[peer].adj_in) {
    for (const net::Nlri& n : nlri) inbound_[peer].adj_in->Erase(n);
  }
  rib_.Withdraw(peer, nlri);
}

void RoutingCore::WithdrawOwn(rib::PeerIndex local, const net::Nlri& nlri) { rib_.Withdraw(local, std::span(&nlri, 1)); }

std::optional<net::Prefix> RoutingCore::PeerDownFrom(rib::PeerIndex peer, std::optional<net::Prefix> from,
                                                      size_t max_prefixes) {
  if (!from && peer < inbound_.size()) {
    Inbound& in = inbound_[peer];
    if (in.adj_in) in.adj_in->clear();
    in.rejected = 0;
  }
  return rib_.PeerDownFrom(peer, from, max_prefixes);
}

size_t RoutingCore::Reimport(rib::PeerIndex peer, net::Family family) {
  if (peer >= inbound_.size() || !inbound_[peer].adj_in) return 0;
  Inbound& in = inbound_[peer];
  // The stored routes, grouped by attribute set (Import evaluates a group at once when the
  // chain allows). The walk collects first: Import writes the Adj-RIB-In it reads.
  absl::flat_hash_map<const rib::InternedAttributes*, std::pair<rib::AttrRef, std::vector<net::Nlri>>> by_attrs;
  size_t n = 0;
  in.adj_in->ForEachIn(family, [&](const net::Nlri& nlri, const rib::AttrRef& ref) {
    auto& slot = by_attrs[ref.get()];
    if (!slot.first) slot.first = ref;
    slot.second.push_back(nlri);
    ++n;
  });
  for (auto& [key, group] : by_attrs) {
    std::sort(group.second.begin(), group.second.end(),
              [](const net::Nlri& a, const net::Nlri& b) { return net::InTableOrder(a.prefix, b.prefix); });
    Import(peer, in, group.second, group.first);
  }
  return n;
}

}  // namespace bagd::daemon
