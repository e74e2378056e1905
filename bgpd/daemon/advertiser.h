// The advertiser: the RIB's changes to every neighbor, and on to the weights stage. Per
// neighbor, in this fixed order (OpenBGPD's up_process_prefix, BIRD's preexport hook):
//
//   1. protocol rules    never back to the sender, no iBGP to iBGP (RFC 4271 §9.1.1),
//                        NO_ADVERTISE / NO_EXPORT / NO_EXPORT_SUBCONFED (RFC 1997)
//   2. export policy     the neighbor's chain for the family (docs/policy.md)
//   3. wire rewrite      eBGP: own AS in front, next hop self, MED/LOCAL_PREF and
//                        non-transitive attributes removed; the link bandwidth per the
//                        neighbor's export mode or the policy's (RFC 10005 §7)
//   4. Adj-RIB-Out       what the neighbor has; re-advertisement damping of bandwidth
//   5. packing and MRAI  one encoding per attribute set (wire::PackAnnouncements)
//
// Neighbors whose export treats every route alike (update groups, as FRR's and OpenBGPD's
// shared Adj-RIB-Out): the same export policy, link-bandwidth export, capabilities, eBGP or
// iBGP, next-hop family and advertisement interval. Steps 1 to 3 run once per group for a
// change set, and the UPDATEs are packed once; each member then keeps its own Adj-RIB-Out,
// re-advertisement damping and pacing, gets the group's bytes with its own next hop written in
// (next-hop-self), and packs its own only where it differs (split horizon: the prefixes whose
// best path it sent; damping; a table that was not in step).
//
// It is the only stage that takes the RIB's change sets (Rib::TakeChanges), so the
// pending changes and the Adj-RIB-Out are both its own: every way into an Adj-RIB-Out
// (a session's initial dump, a refresh, a paced flush, a reload) goes through Writable(),
// which hands on what the RIB has pending first. A write can never work from a table the
// neighbor has not been sent.
#pragma once

#include <array>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/time/time.h"
#include "bgpd/daemon/config_translation.h"
#include "bgpd/daemon/routing_core.h"
#include "bgpd/session/clock.h"
#include "wire/message.h"
#include "rib/adj_rib_out.h"
#include "net/prefix_map.h"
#include "rib/weights/link_bandwidth_export.h"

namespace bagd::daemon {

// What the advertiser needs of one session: the daemon's Peer behind it (speaker.cc), a
// recorder in the replay tests (tests/replay).
class Outbound {
 public:
  virtual ~Outbound() = default;
  virtual const std::string& name() const = 0;
  virtual bool established() const = 0;
  virtual bool ebgp() const = 0;
  // Negotiated for the session (false when none is up).
  virtual bool family_negotiated(net::Family family) const = 0;
  virtual wire::CodecContext EncodeContext() const = 0;
  // Our address on the session: the next hop we advertise as "self".
  virtual std::optional<net::IpAddress> LocalAddress() const = 0;
  virtual uint32_t advertisement_interval_s() const = 0;
  virtual void SendUpdates(std::vector<wire::Bytes> messages) = 0;
  virtual void SendRouteRefresh(const wire::RouteRefreshMessage& message) = 0;
  // The Adj-RIB-Out now holds `prefixes` (counters, bagctl).
  virtual void Advertised(size_t prefixes) = 0;
};

// The local capacity a neighbor's paths are reached over (docs/capacity.md, "Local
// capacity"), after its hold-down: the link bandwidth we generate from a multipath set
// (cumulative) counts each path at min(its link bandwidth, this), so upstream routers learn
// the real bottleneck. Implemented by the Pipeline.
class LocalCapacityView {
 public:
  virtual ~LocalCapacityView() = default;
  virtual std::optional<double> CapOf(rib::PeerIndex peer) const = 0;
};

// A neighbor's export side, from the config.
struct ExportConfig {
  rib::LinkBandwidthExport link_bandwidth;
  std::array<PolicyChain, net::kFamilyCount> chains;  // by net::Family
};

class Advertiser {
 public:
  // `core`: the RIB it reads and takes changes from; `next`: where each change set goes
  // after the neighbors (the weights stage).
  // `local` (may be null): where the local capacity caps come from; outlives the advertiser.
  Advertiser(RoutingCore& core, rib::RouteChangeListener& next, session::Clock& clock, uint32_t local_as,
             const LocalCapacityView* local = nullptr);

  // A neighbor at its RIB index; `out` outlives it here (RemovePeer).
  void AddPeer(rib::PeerIndex index, Outbound& out, ExportConfig config);
  // Its state and timers go (before its Outbound does).
  void RemovePeer(rib::PeerIndex index);
  // New export settings (reload). When they treat routes differently, every prefix is
  // exported again and only what differs from the Adj-RIB-Out goes out (paced as usual).
  // Returns true when they differed.
  bool Reconfigure(rib::PeerIndex index, ExportConfig config);

  // The RIB's pending changes to every neighbor (paced by its MRAI), then to `next`.
  void Flush();
  // Also given every change set, after the weights stage (BMP's Loc-RIB view); may be null.
  void set_observer(rib::RouteChangeListener* observer) { observer_ = observer; }
  // A local capacity changed: every neighbor's routes are exported again and only what
  // differs goes out (paced as usual; bandwidth re-advertisement damping applies).
  void LocalCapacityChanged();
  // The session came up: the whole table, as a change from nothing; or, when `hold` (our
  // restart's deferral, RFC 4724 §4.1), nothing until ReleaseHeld.
  void SessionUp(rib::PeerIndex index, bool hold = false);
  void ReleaseHeld(rib::PeerIndex index);
  bool held(rib::PeerIndex index) const;
  // The session ended: its Adj-RIB-Out, pacing and bandwidth damping are cleared (the RIB's
  // paths from it are the routing core's business; flush those first).
  void SessionDown(rib::PeerIndex index);
  // Route refresh (RFC 2918, RFC 7313): the Adj-RIB-Out for `family` sent again at once
  // (between BoRR and EoRR when `enhanced`); returns the number of prefixes.
  size_t Resend(rib::PeerIndex index, net::Family family, bool enhanced);

  // What `index` has been sent (null: no such neighbor). May lag the RIB by one posted flush.
  const rib::AdjRibOut* advertised(rib::PeerIndex index) const;
  const ExportConfig* export_config(rib::PeerIndex index) const;

  // Update groups (above) are on by default; off, each neighbor is exported to alone (the
  // reference the tests hold the groups to).
  void set_shared_export(bool on) { shared_export_ = on; }
  struct ExportStats {
    uint64_t passes = 0;   // export passes made (one per group per change set)
    uint64_t members = 0;  // neighbors given a change set
    uint64_t reused = 0;   // of them, those sent the UPDATEs packed for an earlier member
  };
  const ExportStats& export_stats() const { return stats_; }

  // Steps 1 to 3 for one prefix: what `to` gets for `multipath` (best first), or nothing.
  std::optional<wire::PathAttributes> ExportAttributes(rib::PeerIndex to, const net::Prefix& prefix,
                                                       std::span<const rib::Path> multipath) const;

 private:
  struct Pacing {
    absl::flat_hash_set<net::Prefix> pending;
    std::unique_ptr<session::Timer> timer;
    bool running = false;
  };
  struct BandwidthExport {
    rib::BandwidthReadvertisement damping;  // its state is in the Adj-RIB-Out entries
    std::unique_ptr<session::Timer> timer;
    absl::Time timer_at = absl::InfiniteFuture();
  };
  struct PeerState {
    Outbound* out = nullptr;  // null: no neighbor at this index (the local routes, a removed one)
    ExportConfig config;
    std::string config_key;  // what of `config` the export depends on (ExportKey)
    rib::AdjRibOut adj_out;
    Pacing pacing;
    BandwidthExport lb;
    bool held = false;  // Established, initial advertisement deferred (SessionUp)
  };
  // Routes go to it: Established and not held.
  static bool Sending(const PeerState& p) { return p.out != nullptr && p.out->established() && !p.held; }
  void SendInitial(PeerState& p);

  // The one way to a neighbor's state for writing: the RIB's pending changes are handed on
  // first, so the Adj-RIB-Out is current when the caller writes it. Null: no neighbor.
  PeerState* Writable(rib::PeerIndex index);
  // Advertise now, or collect until the neighbor's advertisement interval ends.
  void AdvertisePaced(PeerState& to, std::span<const rib::RouteChange> changes);
  // The same for several, those with the same export together.
  void AdvertisePaced(std::span<PeerState* const> members, std::span<const rib::RouteChange> changes);
  // AdvertisePaced for every neighbor.
  void AdvertisePacedToAll(std::span<const rib::RouteChange> changes);
  // Of `members`, those within their advertisement interval collect the prefixes (of
  // `prefixes` and of `changes`); the others are returned, to be sent to now.
  std::vector<PeerState*> SendNow(std::span<PeerState* const> members, std::span<const net::Prefix> prefixes,
                                  std::span<const rib::RouteChange> changes);
  // Their advertisement intervals start (those that have one).
  void StartIntervals(std::span<PeerState* const> sent);
  void Advertise(PeerState& to, std::span<const rib::RouteChange> changes);
  // `members` (Sending, in index order) get `changes`: one export pass per group of them
  // with the same ExportKey.
  struct ExportPass;
  void AdvertiseTogether(std::span<PeerState* const> members, std::span<const rib::RouteChange> changes);
  void AdvertiseMember(PeerState& member, std::span<const rib::RouteChange> changes, ExportPass& pass);
  std::string ExportKey(const PeerState& p) const;
  static std::string ConfigKey(const ExportConfig& config);
  // Steps 1 to 3 as `state`'s neighbor, except split horizon when `to_index` is empty. `self`
  // (may be null): set when the next hop is ours (next-hop-self), which a group's member
  // replaces with its own address.
  std::optional<wire::PathAttributes> Export(const PeerState& state, std::optional<rib::PeerIndex> to_index,
                                             const net::Prefix& prefix, std::span<const rib::Path> multipath,
                                             bool* self) const;
  // AdvertisePaced for prefixes in table order, from their current state, kAdvertiseSlice at a time.
  void AdvertisePacedInSlices(std::span<PeerState* const> members, std::span<const net::Prefix> prefixes);
  void StartInterval(PeerState& to, uint32_t mrai);
  static constexpr size_t kAdvertiseSlice = 16384;
  void FlushPaced(rib::PeerIndex index);
  void FlushDeferredBandwidth(rib::PeerIndex index);
  // Each prefix's multipath set now, in table order.
  std::vector<rib::RouteChange> CurrentState(const absl::flat_hash_set<net::Prefix>& prefixes) const;
  std::vector<rib::RouteChange> CurrentState(std::span<const net::Prefix> in_table_order) const;
  std::vector<rib::RouteChange> Everything() const;
  absl::Time Now() const { return absl::FromUnixMillis(clock_.WallMs()); }

  RoutingCore& core_;
  rib::RouteChangeListener& next_;
  rib::RouteChangeListener* observer_ = nullptr;
  session::Clock& clock_;
  uint32_t local_as_;
  std::vector<PeerState> peers_;  // by rib index
  const LocalCapacityView* local_ = nullptr;
  bool flushing_ = false;
  bool shared_export_ = true;
  ExportStats stats_;
  // The timers' handlers capture `this` and an index: each timer is a member of the state
  // it serves, and a stopped or destroyed Timer never calls its handler.
};

}  // namespace bagd::daemon
