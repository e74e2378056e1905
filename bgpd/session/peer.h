// One configured neighbor: its FSM(s), connection(s), timers and counters.
//
// The primary connection FSM represents the neighbor (it connects out, backs off, restarts).
// An inbound connection that arrives while the primary is in OpenSent/OpenConfirm gets its own
// FSM (a collision candidate); RFC 4271 §6.8 picks the survivor once the peer's BGP Identifier
// is known. Everything runs on the io_context thread.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <array>
#include <memory>
#include <optional>
#include <random>
#include <string>

#include "bgpd/control/control.pb.h"
#include "bgpd/control/event_hub.h"
#include "bgpd/fsm/fsm.h"
#include "bgpd/session/bmp_tap.h"
#include "bgpd/session/connection.h"
#include "bgpd/session/lifetime.h"
#include "bgpd/session/metrics.h"
#include "bgpd/session/clock.h"
#include "rib/prefix_limit.h"

namespace bagd::session {

struct PeerConfig {
  net::IpAddress address;
  uint16_t port = 179;
  std::optional<net::IpAddress> local_address;
  std::string description;
  std::string password;   // TCP-MD5 key, empty = none
  int ttl_security = 0;   // GTSM hops, 0 = off
  int ebgp_multihop = 0;  // TTL for eBGP, 0 = directly connected (TTL 1)
  bool shutdown = false;  // administratively down at start
  uint32_t advertisement_interval_s = 0;  // MRAI (RFC 4271 §9.2.1.1)
  std::string shutdown_message;
  fsm::FsmConfig fsm;
  // Maximum prefixes per family (index net::Family); limit 0: none.
  std::array<rib::PrefixLimitConfig, net::kFamilyCount> max_prefixes{};
  // Graceful restart, helper role (RFC 4724 §4.2): the longest the neighbor's stale paths
  // stay after its session is back without its End-of-RIB (the speaker's timer).
  uint32_t stale_routes_time_s = 360;
  // BFD (docs/bfd.md) with hold_bgp_until_up: the session does not start before BFD is Up
  // (Peer::BfdUp). Changes in place.
  bool bfd_hold = false;

  bool ebgp() const { return !fsm.local.ibgp(); }
  std::string Name() const { return address.ToString(); }
  // Whether going from `a` to `b` needs a new session: what the OPEN, the TCP connection or
  // its socket options carry (AS numbers, families, timers, addresses, port, TCP-MD5 key,
  // GTSM, multihop TTL, passive). The rest (description, MRAI, shutdown and its message,
  // maximum prefixes, link-bandwidth export) changes in place.
  static bool SameSession(const PeerConfig& a, const PeerConfig& b);
};

class Peer;
class MrtMessageTap;  // bgpd/session/mrt_tap.h

// Where a peer's routes go (the speaker, which owns the RIB). Called on the io thread.
class RouteSink {
 public:
  virtual ~RouteSink() = default;
  virtual void OnSessionUp(Peer& peer) = 0;      // Established: send the initial table
  virtual void OnSessionDown(Peer& peer) = 0;    // withdraw what the peer sent
  virtual void OnUpdate(Peer& peer, const wire::UpdateMessage& update) = 0;
  // A ROUTE-REFRESH on the Established session (the FSM has restarted the hold timer).
  virtual void OnRouteRefresh(Peer& peer, const wire::RouteRefreshMessage& message) = 0;
  // Graceful restart (RFC 4724): the R and F bits of the OPEN about to go to `peer`.
  virtual fsm::RestartState RestartStateFor(const Peer& peer) const {
    (void)peer;
    return {};
  }
  // Called at Established right after OnSessionUp: false and the peer sends End-of-RIB
  // itself now; true and the sink sends it later (Peer::SendEndOfRib), after a restart's
  // deferred initial advertisement (RFC 4724 §4.1).
  virtual bool DefersEndOfRib(const Peer& peer) const {
    (void)peer;
    return false;
  }
  // BMP pre-policy (bmp_tap.h): where the raw UPDATEs go; null when no station wants them.
  virtual BmpTap* bmp_tap() { return nullptr; }
};

class Peer {
 public:
  // `clock` gives the time and the timers (AsioClock in the daemon, ManualClock in tests).
  // `events` (may be null): where the session's state changes are published (WatchEvents).
  Peer(boost::asio::io_context& io, Clock& clock, PeerConfig config, SessionMetrics* metrics,
       RouteSink* sink = nullptr, control::EventSink* events = nullptr);
  ~Peer();
  Peer(const Peer&) = delete;
  Peer& operator=(const Peer&) = delete;

  void Start();
  // Every message received goes to `tap` too (the MRT updates log; null: none).
  void SetMrtTap(MrtMessageTap* tap) { mrt_tap_ = tap; }
  // Administrative shutdown with an RFC 9003 message; stays down until Enable().
  void Shutdown(const std::string& message);
  void Enable();
  // Hard reset (`bagctl neighbor ADDRESS clear`): Cease / Administrative Reset (RFC 4486
  // §4) on every connection, then a fresh start at once. Not a shutdown: it stays enabled.
  void Reset();
  // Daemon exit: Cease with `notification` on every connection, no restart. A neighbor that
  // negotiated RFC 8538 (the N bit both ways) keeps bagd's routes as stale across it, as for
  // a restart (a planned `systemctl restart`). `flush` (a neighbor removed by a reload):
  // sent as Cease / Hard Reset to such a neighbor, so it drops them.
  void Stop(const wire::NotificationMessage& notification, const std::string& reason, bool flush = false);
  // An inbound connection from this neighbor's address. Takes the socket either way.
  void Accept(boost::asio::ip::tcp::socket socket);

  control::v1::NeighborStatus Status() const;
  const PeerConfig& config() const { return config_; }
  NeighborSeries& series() { return series_; }
  const std::vector<std::string>& policy_notes() const { return policy_notes_; }
  // Established only: what was negotiated, the local address of the session, and sending.
  const std::optional<fsm::Negotiated>& negotiated() const { return negotiated_; }
  std::optional<net::IpAddress> LocalAddress() const;
  bool established() const;
  int64_t established_since_ms() const { return established_since_ms_; }  // wall clock
  // Pre-encoded UPDATEs (already packed for this session's encode context).
  void SendUpdates(std::vector<wire::Bytes> messages);
  // A ROUTE-REFRESH (request, BoRR or EoRR) on the Established session; counted with the
  // messages sent. Nothing when not Established.
  void SendRouteRefresh(const wire::RouteRefreshMessage& message);
  // End-of-RIB for each negotiated family (RFC 4724 §2), when Established.
  void SendEndOfRib();
  // Whether the last session ended as a restart, in which a helper keeps the peer's routes:
  // the TCP connection failed or the peer went silent (RFC 4724 §4.2), or, when both sides
  // sent the N bit (RFC 8538 §4), a NOTIFICATION either way other than Cease / Hard Reset.
  bool last_down_graceful() const { return last_down_graceful_; }
  // Route refresh counters and the families the peer is re-sending (kept by the speaker).
  control::v1::RouteRefreshStatus& refresh_status() { return refresh_status_; }
  wire::CodecContext EncodeContext() const;
  // BMP's Peer Up and Peer Down facts (bmp_tap.h): valid from Established on.
  const BmpSessionFacts& bmp_facts() const { return bmp_facts_; }
  uint32_t rib_index = 0;  // the speaker's handle for this peer in the RIB
  uint64_t prefixes_received = 0;  // set by the speaker from the RIB
  // Paths held from the peer per family (index net::Family), set by the speaker from the
  // RIB after each UPDATE: what the maximum-prefix limits are checked against.
  std::array<uint64_t, net::kFamilyCount> prefixes_received_by_family{};
  uint64_t prefixes_sent = 0;
  uint64_t prefixes_rejected = 0;  // by import policy, set by the speaker
  // Shown in NeighborStatus.policy_notes (the speaker's RFC 8212 notes).
  void set_policy_notes(std::vector<std::string> notes) { policy_notes_ = std::move(notes); }
  fsm::State state() const;
  bool admin_down() const { return admin_down_; }
  // New maximum prefixes (SIGHUP): checked at once against what the neighbor holds, so a
  // lowered limit may take the session down now (as FRR does).
  void SetPrefixLimits(const std::array<rib::PrefixLimitConfig, net::kFamilyCount>& limits);
  // Down after exceeding a maximum-prefix limit (until the restart interval ends or Enable()).
  bool prefix_limit_down() const { return prefix_limit_down_; }
  // A reload's changes that keep the session (PeerConfig::SameSession(config(), c) holds):
  // description, MRAI, shutdown (from the config: Shutdown or Enable) and its message,
  // maximum prefixes.
  void ApplyInPlace(const PeerConfig& c);
  // BFD (RFC 5882 §10.2), from the event thread. BfdDown: the forwarding path failed: the
  // session goes down at once with Cease / BFD Down (RFC 9384; a Hard Reset with it inside
  // when RFC 8538 was negotiated, so that neither side keeps the paths stale) and does not
  // start again, nor accept a connection, until BfdUp. BfdUp also ends a hold_bgp_until_up wait
  // and is what a neighbor whose BFD was removed gets.
  void BfdDown(const std::string& why);
  void BfdUp();
  bool waiting_for_bfd() const { return bfd_wait_; }

 private:
  struct Slot;
  enum class Direction { kOutbound, kInbound };

  void Dispatch(Slot& slot, fsm::Event event);
  // The FSM's time for an event on `slot`: one clock read per socket read while its messages
  // are handled (they arrived together, as BIRD takes one time per event-loop turn), a fresh
  // read otherwise. A precise read costs tens of nanoseconds under KVM; a table sent one
  // prefix per UPDATE had two per UPDATE.
  int64_t NowMs(Slot& slot);
  // The primary's state changed: a NeighborEvent for WatchEvents, with the cause.
  double DrawJitter() { return std::uniform_real_distribution<double>(0.75, 1.0)(rng_); }
  void PublishStateChange(const fsm::Event& event, const fsm::StepOutcome& step, fsm::State before, fsm::State after);
  // RFC 8538: both sides sent the N bit (and ours is on: graceful restart with a restart time).
  bool NotificationGraceful() const;
  // `cease` as Cease / Hard Reset (RFC 8538 §3) when NotificationGraceful(): for what must
  // remove the routes on both sides (an operator's shutdown or clear, maximum prefixes).
  wire::NotificationMessage Flushing(const wire::NotificationMessage& cease) const;
  // ManualStop with `notification` to both connections (the collision candidate goes).
  void ManualStop(const wire::NotificationMessage& notification, const std::string& reason);
  void Execute(Slot& slot, const fsm::Action& action);
  void Connect(Slot& slot);
  void Attach(Slot& slot, boost::asio::ip::tcp::socket socket);
  bool OnMessage(uint64_t slot_id, wire::ByteSpan bytes);
  // OnMessage's work, with delivering_ set.
  bool HandleMessage(uint64_t slot_id, wire::ByteSpan bytes);
  // A message that did not decode: the FSM's error event for its type.
  void TapMrt(const Slot& slot, wire::ByteSpan bytes);
  // The MRT updates log's record of a state change of the primary connection.
  void TapMrtState(const Slot& slot, fsm::State before, fsm::State after);
  // The connection's local address for MRT records (unspecified when unknown).
  net::IpAddress MrtLocalAddress(const Slot& slot) const;
  void OnMalformed(Slot& slot, uint8_t type, const wire::DecodeError& error);
  // A decoded UPDATE: to the sink when Established, then to the FSM.
  void OnUpdateMessage(Slot& slot, const wire::UpdateMessage& update);
  void OnUpdate(Slot& slot, const wire::UpdateMessage& update);
  void ResolveCollision();
  void PromoteCandidate();  // the primary is dumped (Cease 6/7), the candidate takes its place
  void SendMessage(Slot& slot, const wire::Message& message);
  Slot* Find(uint64_t slot_id);
  void ApplySocketOptions(int fd, bool ipv6);
  // GTSM (ttl_security): whether an accepted connection came from close enough, judged by
  // its SYN's TTL before any of its octets are read (logs and counts a refusal).
  bool GtsmAdmits(boost::asio::ip::tcp::socket& socket);
  // After an UPDATE: each family's count against its limit (two comparisons per family).
  void CheckPrefixLimits();
  // Cease / Maximum Number of Prefixes Reached, then down for the restart interval.
  void PrefixLimitExceeded(net::Family family, uint64_t count);
  void RestartAfterPrefixLimit();
  void StopPrefixLimitRestart();

  boost::asio::io_context& io_;
  Clock& clock_;
  PeerConfig config_;
  SessionMetrics* metrics_;
  NeighborSeries series_;
  RouteSink* sink_;
  MrtMessageTap* mrt_tap_ = nullptr;
  control::EventSink* events_;
  std::unique_ptr<Slot> primary_;
  std::unique_ptr<Slot> candidate_;  // collision candidate (inbound)
  uint64_t next_slot_id_ = 1;
  std::mt19937 rng_{std::random_device{}()};
  // RFC 4271 §10's 0.75..1.0 for the next jittered timer; drawn again once a step used it
  // (not for every message: most steps start no jittered timer).
  double jitter_ = DrawJitter();
  uint64_t delivering_ = 0;  // the Slot whose connection's message OnMessage is handling (0: none)
  bool admin_down_ = false;
  std::string admin_down_message_;
  // Maximum prefixes: each family's limit and state, and the hold-down after a Cease.
  std::array<rib::PrefixLimit, net::kFamilyCount> prefix_limits_;
  bool prefix_limit_down_ = false;
  bool bfd_wait_ = false;  // no start before BFD is Up (hold_bgp_until_up, or after a BFD Down)
  int64_t prefix_limit_restart_ms_ = 0;  // wall clock; 0: until Enable()
  std::unique_ptr<Timer> prefix_limit_restart_;

  // Status, for bagctl and metrics.
  int64_t state_since_ms_ = 0;  // wall clock
  int64_t established_since_ms_ = 0;
  uint64_t established_transitions_ = 0;
  control::v1::MessageCounters in_, out_;
  std::optional<control::v1::Notification> last_sent_, last_received_;
  std::string last_error_;
  uint64_t gtsm_refused_ = 0;  // connections refused for a TTL below the GTSM minimum
  std::optional<fsm::Negotiated> negotiated_;
  bool last_down_graceful_ = false;
  control::v1::RouteRefreshStatus refresh_status_;
  BmpSessionFacts bmp_facts_;
  // Watched by the connect and connection handlers, which capture `this` (a neighbor
  // removed on reload is destroyed while they may still be queued). Declared last.
  std::vector<std::string> policy_notes_;
  Lifetime lifetime_;
};

}  // namespace bagd::session
