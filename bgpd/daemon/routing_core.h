// The routing core: a neighbor's decoded UPDATE → intern → import policy → RIB. It owns the
// attribute store and the RIB; the RIB records what changed (its change sets), and the
// advertiser, the one stage that takes them, hands them on (advertiser.h).
//
//   UPDATE ─► withdrawals ─────────────────────────────────────────► Rib::Withdraw
//          └► announcements ─► intern ─► [Adj-RIB-In, pre-policy] ─► import chain ─► accept: Rib::Announce
//                                            (soft reconfiguration)              └► reject: Rib::Withdraw
//
// A neighbor whose chain passes everything (no policy, default accept; iBGP, or eBGP with
// router.ebgp_requires_policy false) takes the RIB's own UPDATE path, with no evaluation.
// A chain whose policies do not look at the prefix is evaluated once per UPDATE: every
// prefix of it shares the attributes, the neighbor and the source.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "bgpd/daemon/config_translation.h"
#include "wire/message.h"
#include "rib/adj_rib_in.h"
#include "rib/attribute_store.h"
#include "rib/rib.h"

namespace bagd::daemon {

class RoutingCore {
 public:
  RoutingCore(uint32_t local_as, rib::DecisionConfig decision);

  // A neighbor's index in the RIB and its import side. `address`: the neighbor, for
  // neighbor-set conditions (none for the local routes).
  rib::PeerIndex AddPeer(rib::PeerInfo info, std::optional<net::IpAddress> address, const NeighborPolicies& policies);
  // New import chains or soft reconfiguration (reload). What the neighbor already sent is
  // not re-evaluated here (Reimport).
  void SetImport(rib::PeerIndex peer, const NeighborPolicies& policies);
  // The peer is gone for good (removed): its Adj-RIB-In is dropped. Its paths leave the RIB
  // with the session (PeerDownFrom).
  void RemovePeer(rib::PeerIndex peer);

  // One UPDATE from `peer`, End-of-RIB excluded.
  void Ingest(rib::PeerIndex peer, const wire::UpdateMessage& update);
  // This router's own route (no import policy: it is the config's): ORIGIN IGP, an empty
  // AS_PATH (the next hop is set per neighbor on export), and the link bandwidth when given
  // (the neighbors' export settings decide its form).
  void Originate(rib::PeerIndex local, const net::Nlri& nlri, std::optional<double> link_bandwidth_bps);
  // Paths the neighbor no longer has (stale after a refresh), its Adj-RIB-In included.
  void Withdraw(rib::PeerIndex peer, std::span<const net::Nlri> nlri);
  void WithdrawOwn(rib::PeerIndex local, const net::Nlri& nlri);
  // The session ended: the peer's paths go, in slices (Rib::PeerDownFrom), and its
  // Adj-RIB-In with them.
  std::optional<net::Prefix> PeerDownFrom(rib::PeerIndex peer, std::optional<net::Prefix> from, size_t max_prefixes);

  // Soft reconfiguration inbound: every stored route of `peer` in `family` through the
  // import chain again (an import policy change applied without the neighbor). Returns the
  // number of routes evaluated; 0 without an Adj-RIB-In.
  size_t Reimport(rib::PeerIndex peer, net::Family family);

  // Null unless the neighbor keeps its routes as received.
  const rib::AdjRibIn* received(rib::PeerIndex peer) const;
  // Paths the import chain rejected since the session came up (not the RFC 4271 checks of
  // the RIB: loops and unreachable next hops are counted there).
  uint64_t rejected_by_policy(rib::PeerIndex peer) const {
    return peer < inbound_.size() ? inbound_[peer].rejected : 0;
  }
  const PolicyChain& import_chain(rib::PeerIndex peer, net::Family family) const {
    return inbound_[peer].chains[static_cast<int>(family)];
  }

  rib::Rib& rib() { return rib_; }
  const rib::Rib& rib() const { return rib_; }
  rib::AttributeStore& store() { return store_; }
  const rib::AttributeStore& store() const { return store_; }

 private:
  struct Inbound {
    std::array<PolicyChain, net::kFamilyCount> chains;
    std::optional<net::IpAddress> address;
    policy::RouteSource source = policy::RouteSource::kEbgp;
    std::unique_ptr<rib::AdjRibIn> adj_in;  // soft reconfiguration inbound
    bool passes_everything = true;           // both chains, and no Adj-RIB-In: the fast path
    uint64_t rejected = 0;
    // Import's ConditionMemo, valid for the attribute set it holds (and this neighbor's chains).
    policy::ConditionMemo memo;
    rib::AttrRef memo_attrs;
  };
  // `nlri` (one family) with the same received attributes through the chain into the RIB.
  void Import(rib::PeerIndex peer, Inbound& in, std::span<const net::Nlri> nlri, const rib::AttrRef& received);
  void Announce(rib::PeerIndex peer, std::span<const net::Nlri> nlri, wire::PathAttributes attrs);

  uint32_t local_as_;
  rib::AttributeStore store_;  // declared before the RIB, whose paths hold references into it
  rib::Rib rib_;
  std::vector<Inbound> inbound_;  // by rib index
  // Scratch of Import, kept between calls.
  std::vector<net::Nlri> accepted_, rejected_;
};

}  // namespace bagd::daemon
