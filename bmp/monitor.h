// The BMP monitor: what bagd tells its stations (docs/bmp.md). The speaker hands it the
// sessions going up and down, the UPDATEs as received (pre-policy), each UPDATE after
// ingest (post-policy, read back from the RIB) and the RIB's change sets (Loc-RIB, RFC 9069,
// with the multipath set); each station gets the views it asked for.
//
// A station that connects gets Initiation, a Peer Up for the Loc-RIB instance and for every
// Established session, then the current tables walked in prefix order in slices (each
// slice a posted task of at most `slice_prefixes` prefixes or `slice_budget`, paused while
// the station's buffer is above its low-water mark), then End-of-RIB markers. Changes during
// the walk go out at once for the prefixes already walked; the rest are read when the walk
// reaches them, so the station never sees an older state after a newer one.
//
// Runs on the event thread; never blocks. Every posted task and timer handler checks the
// feed's epoch (a station removed or reconnected since makes it stale) and the monitor's
// lifetime token.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/time/time.h"
#include "bmp/message.h"
#include "bmp/station.h"
#include "rib/adj_rib_in.h"
#include "rib/adj_rib_out.h"
#include "rib/rib.h"
#include "wire/codec_context.h"
#include "wire/message.h"

namespace bagd::bmp {

// One Established session as BMP shows it (filled by the speaker at Established).
struct PeerSession {
  rib::PeerIndex index = 0;
  net::IpAddress address;
  uint32_t as = 0;
  uint32_t bgp_id = 0;
  std::optional<net::IpAddress> local_address;
  uint16_t local_port = 0;
  uint16_t remote_port = 0;
  Bytes sent_open;      // whole BGP messages
  Bytes received_open;
  bool four_octet_as = true;           // else the A flag on pre-policy messages
  bool extended_message = false;       // RFC 8654: the station may see UPDATEs up to 65535
  std::array<bool, net::kFamilyCount> add_path{};   // the peer sends path ids to us
  std::array<bool, net::kFamilyCount> families{};   // negotiated
  absl::Time up_since;
};

struct PeerDown {
  PeerDownReason reason = PeerDownReason::kRemoteNoData;
  Bytes notification;      // reasons 1 and 3: the whole NOTIFICATION message
  uint16_t fsm_event = 0;  // reason 2
};

// What the speaker counts per neighbor that BMP reports (Statistics Report type 0).
struct PeerCounters {
  uint64_t rejected_prefixes = 0;
};

struct MonitorOptions {
  std::string sys_name;
  std::string sys_descr;
  uint32_t local_as = 0;
  uint32_t router_id = 0;  // host order
  size_t slice_prefixes = 4096;
  std::chrono::microseconds slice_budget{5000};
  std::function<absl::Time()> now = [] { return absl::Now(); };
  // Per-neighbor counters kept by the speaker; may be empty (zeros reported).
  std::function<PeerCounters(rib::PeerIndex)> counters;
  // Where the stations' ups, downs and drops are logged (`warning` for losses); may be empty.
  std::function<void(bool warning, const std::string& line)> log;
  // The neighbor's stored routes (soft_reconfiguration_inbound); may be empty or return null.
  std::function<const rib::AdjRibIn*(rib::PeerIndex)> stored;
  // RFC 8671 post-policy: what the neighbor has been sent (its Adj-RIB-Out, read for the
  // initial table only: the changes are the UPDATEs as sent, AdjRibOutUpdate). May be empty
  // or return null (nothing is walked for that neighbor).
  std::function<const rib::AdjRibOut*(rib::PeerIndex)> adj_rib_out;
  // RFC 8671 pre-policy: whether a prefix whose best path is `best` is eligible for `to`
  // before export policy (the protocol rules: not back to the sender, no iBGP to iBGP, the
  // family negotiated, RFC 1997's well-known communities). Empty: nothing is eligible.
  std::function<bool(rib::PeerIndex to, const net::Prefix& prefix, const rib::Path& best)> export_candidate;
  // Loc-RIB: the bandwidth (bits/s) bagd's weights stage applies to a multipath member now
  // (after hold-down and local capacity caps; nullopt: none yet). Set: each Loc-RIB member
  // carries it as AppliedBandwidthCommunity, and members are announced once the weights stage
  // has weighed their prefix (AppliedChanged), not at the change (withdrawals still at once).
  // Empty: no community, members announced at the change.
  std::function<std::optional<double>(const net::Prefix& prefix, const rib::Path& member)> applied_bps;
};

struct StationStatus {
  std::string name;
  Station::State state = Station::State::kIdle;
  Views views;
  bool syncing = false;
  size_t buffered = 0;
  // The longest one task of the table walk took on the event thread (since configured).
  std::chrono::microseconds longest_slice{0};
  uint64_t syncs_done = 0;
  Station::Counters counters;
  std::string last_error;
  // For `bagctl show bmp`: the connection's start, the buffer's bound, Statistics interval.
  std::chrono::system_clock::time_point up_since{};
  size_t max_buffer_bytes = 0;
  uint32_t statistics_interval_s = 0;
};

class Monitor final : public rib::RouteChangeListener {
 public:
  Monitor(boost::asio::io_context& io, const rib::Rib& rib, MonitorOptions options, BmpMetrics* metrics = nullptr);
  ~Monitor() override;
  Monitor(const Monitor&) = delete;
  Monitor& operator=(const Monitor&) = delete;

  // The stations (start, reload): unchanged ones keep their connection; removed ones get a
  // Termination; new ones connect.
  void Configure(const std::vector<StationConfig>& stations);
  // Planned stop: a Termination to every station (RFC 7854 §4.5).
  void Stop();

  bool wants_pre_policy() const { return wants_.pre_policy; }
  bool wants_post_policy() const { return wants_.post_policy; }
  bool wants_loc_rib() const { return wants_.loc_rib; }
  bool wants_adj_rib_out_pre() const { return wants_.adj_rib_out_pre; }
  bool wants_adj_rib_out_post() const { return wants_.adj_rib_out_post; }
  bool active() const { return !feeds_.empty(); }

  void PeerUp(PeerSession session);
  void PeerDown(rib::PeerIndex index, const PeerDown& down);
  // An UPDATE as the peer sent it (whole message), before anything is done with it.
  void PrePolicyUpdate(rib::PeerIndex index, ByteSpan update);
  // Before ingest: counts withdrawals of paths the neighbor does not have (stat type 2).
  void BeforeIngest(rib::PeerIndex index, const wire::UpdateMessage& update);
  // After ingest: the UPDATE's prefixes as the RIB now holds them from the neighbor.
  void PostPolicyUpdate(rib::PeerIndex index, const wire::UpdateMessage& update);
  // RFC 8671 post-policy Adj-RIB-Out: an UPDATE exactly as bagd sent it to the neighbor
  // (whole message, after export policy and the wire rewrite).
  void AdjRibOutUpdate(rib::PeerIndex index, ByteSpan update);
  // Loc-RIB with applied_bps: the weights stage has weighed `prefixes` (each batch): their
  // members now, with the applied bandwidth, to the stations with the Loc-RIB view.
  void AppliedChanged(std::span<const net::Prefix> prefixes);
  // Loc-RIB and the pre-policy Adj-RIB-Out: the RIB's change sets (the pipeline's observer).
  void OnRouteChanges(std::span<const rib::RouteChange> changes) override;

  std::vector<StationStatus> Status() const;
  // Statistics Reports to every up station now (the timers call it; tests too).
  void ReportStatistics();

  // The Loc-RIB path identifier of a multipath member: stable per (neighbor, path id).
  static uint32_t LocRibPathId(const rib::Path& p) { return ((p.peer + 1) << 16) ^ p.path_id; }

 private:
  struct Feed;
  struct Group;
  void StationUp(Feed& f);
  void StationDown(Feed& f);
  void ScheduleSlice(Feed& f);
  void RunSlice(Feed& f);
  void RunSliceBody(Feed& f);
  void FinishSync(Feed& f);
  void ScheduleStatistics(Feed& f);
  void ReportStatistics(Feed& f);
  void SendTo(Feed& f, const Bytes& messages, size_t count);
  void Recompute();
  Bytes PeerUpMessage(const PeerSession& s, uint8_t flags) const;
  // The flags of a station's Peer Up, Peer Down and Statistics Reports: O when it gets only
  // Adj-RIB-Out views (RFC 8671 §6: one Peer Up per session, whatever the views).
  static uint8_t SessionFlags(const Views& v);
  // `groups` to every up station with `view`: whole to those not walking the table, only
  // the prefixes the walk has passed to those walking it.
  void Distribute(bool Views::*view, const PerPeerHeader& h, const wire::CodecContext& ctx,
                  const std::vector<Group>& groups);
  // The pre-policy Adj-RIB-Out changes of `changes`, per Established neighbor.
  void PreOutChanges(std::span<const rib::RouteChange> changes);
  // One slice of the Adj-RIB-Out walk (post-policy); the messages appended to `out`.
  size_t WalkAdjRibOut(Feed& f, Bytes& out, absl::Time now);
  Bytes LocRibPeerUp() const;
  PerPeerHeader Header(const PeerSession& s, uint8_t flags, absl::Time t) const;
  PerPeerHeader LocRibHeader(absl::Time t) const;
  wire::CodecContext PostContext(const PeerSession& s) const;
  wire::CodecContext LocRibContext() const;
  // The attributes a Loc-RIB member goes out with: its own, or (applied_bps) a copy with the
  // applied-bandwidth community, one copy per (attribute set, value) in `copies`.
  using AppliedCopies = absl::flat_hash_map<std::pair<const rib::InternedAttributes*, uint64_t>,
                                            std::shared_ptr<const wire::PathAttributes>>;
  std::shared_ptr<const wire::PathAttributes> LocRibAttributes(const net::Prefix& prefix, const rib::Path& p,
                                                               AppliedCopies& copies) const;
  // A Loc-RIB member into `groups` (by attribute set and family).
  void AddLocRibMember(const net::Prefix& prefix, const rib::Path& p, AppliedCopies& copies,
                       absl::flat_hash_map<std::pair<const wire::PathAttributes*, int>, size_t>& index,
                       std::vector<Group>& groups) const;
  // What bagd sends a neighbor: one path per prefix, no path identifiers.
  wire::CodecContext OutContext(const PeerSession& s) const;
  // Route Monitoring messages for groups of NLRI into `out`; returns how many.
  size_t AppendGroups(Bytes& out, const PerPeerHeader& h, const wire::CodecContext& ctx,
                      const std::vector<Group>& groups) const;
  // The prefix has been walked by `f`'s sync (or no sync runs): changes to it go out now.
  static bool Covered(const Feed& f, const net::Prefix& p);

  boost::asio::io_context& io_;
  const rib::Rib& rib_;
  MonitorOptions options_;
  BmpMetrics* metrics_;
  std::vector<std::unique_ptr<Feed>> feeds_;
  std::vector<std::unique_ptr<Station>> retired_;  // sending their Termination
  std::map<rib::PeerIndex, PeerSession> peers_;    // Established sessions
  std::map<rib::PeerIndex, uint64_t> duplicate_withdraws_;
  Views wants_;
  uint64_t epochs_ = 0;  // the last epoch handed to a feed
  std::shared_ptr<char> token_ = std::make_shared<char>(0);
};

}  // namespace bagd::bmp
