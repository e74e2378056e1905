#include "bgpd/session/peer.h"
#include "bgpd/session/mrt_tap.h"

#include <sys/ioctl.h>

#include <algorithm>
#include <chrono>

#include "absl/strings/str_cat.h"
#include "bgpd/control/notification_proto.h"
#include "bgpd/session/log.h"
#include "bgpd/session/socket_options.h"

namespace bagd::session {

using boost::asio::ip::tcp;
using fsm::ActionType;
using fsm::EventType;
using fsm::State;

namespace {

void Count(control::v1::MessageCounters& c, uint8_t type, size_t bytes) {
  switch (type) {
    case 1: c.set_open(c.open() + 1); break;
    case 2: c.set_update(c.update() + 1); break;
    case 3: c.set_notification(c.notification() + 1); break;
    case 4: c.set_keepalive(c.keepalive() + 1); break;
    case 5: c.set_route_refresh(c.route_refresh() + 1); break;
  }
  c.set_total(c.total() + 1);
  c.set_bytes(c.bytes() + bytes);
}


std::string Describe(const wire::NotificationMessage& n) {
  std::string s = wire::DescribeNotification(n.code, n.subcode);
  if (auto msg = n.ShutdownCommunication()) absl::StrAppend(&s, " \"", *msg, "\"");
  return s;
}

}  // namespace

struct Peer::Slot {
  Slot(Clock& clock, uint64_t id, Direction dir)
      : id(id),
        direction(dir),
        connect_retry(clock.NewTimer()),
        hold(clock.NewTimer()),
        keepalive(clock.NewTimer()),
        idle_hold(clock.NewTimer()) {}
  ~Slot() {
    if (connecting) {
      boost::system::error_code ec;
      connecting->close(ec);
    }
    if (conn) conn->Close();
  }
  uint64_t id;
  Direction direction;
  fsm::Fsm fsm;
  std::shared_ptr<Connection> conn;
  std::shared_ptr<tcp::socket> connecting;  // outbound connect in progress
  wire::UpdateDecoder updates;  // this connection's UPDATEs
  wire::Bytes sent_open, received_open;  // for BMP's Peer Up (bmp_tap.h)
  uint64_t connect_generation = 0;
  std::unique_ptr<Timer> connect_retry, hold, keepalive, idle_hold;
  // NowMs's stamp: taken in conn->reads() == stamp_read (0: none, or dropped after a message
  // whose handling may have taken long); `stamps` counts the stamps taken.
  uint64_t stamp_read = 0, stamps = 0;
  int64_t stamp_ms = 0;
  // The hold timer was last (re)started under stamp number hold_stamp (0: outside a read)
  // for hold_after: restarting it again under the same stamp would give the same deadline.
  uint64_t hold_stamp = 0;
  std::chrono::milliseconds hold_after{};
};

Peer::Peer(boost::asio::io_context& io, Clock& clock, PeerConfig config, SessionMetrics* metrics, RouteSink* sink,
           control::EventSink* events)
    : io_(io),
      clock_(clock),
      config_(std::move(config)),
      metrics_(metrics),
      series_(metrics, config_.Name()),
      sink_(sink),
      events_(events),
      prefix_limit_restart_(clock.NewTimer()) {
  primary_ = std::make_unique<Slot>(clock_, next_slot_id_++, Direction::kOutbound);
  admin_down_ = config_.shutdown;
  admin_down_message_ = config_.shutdown_message;
  bfd_wait_ = config_.bfd_hold;
  state_since_ms_ = clock_.WallMs();
  if (metrics_) metrics_->State(config_.Name()).Set(0);
  series_.Declare(config_.fsm.local.families);
  for (int f = 0; f < net::kFamilyCount; ++f) {
    prefix_limits_[f] = rib::PrefixLimit(config_.max_prefixes[f]);
    if (metrics_ && prefix_limits_[f].enabled()) {
      const char* family = net::FamilyName(static_cast<net::Family>(f));
      metrics_->PrefixLimit(config_.Name(), family).Set(config_.max_prefixes[f].limit);
      metrics_->PrefixLimitState(config_.Name(), family).Set(0);
    }
  }
}

Peer::~Peer() = default;

bool PeerConfig::SameSession(const PeerConfig& a, const PeerConfig& b) {
  return a.address == b.address && a.port == b.port && a.local_address == b.local_address && a.password == b.password &&
         a.ttl_security == b.ttl_security && a.ebgp_multihop == b.ebgp_multihop && a.fsm == b.fsm;
}

void Peer::ApplyInPlace(const PeerConfig& c) {
  config_.description = c.description;
  config_.advertisement_interval_s = c.advertisement_interval_s;
  config_.shutdown_message = c.shutdown_message;
  config_.stale_routes_time_s = c.stale_routes_time_s;
  config_.bfd_hold = c.bfd_hold;  // the BFD stage decides whether to wait (it knows BFD's state)
  if (c.max_prefixes != config_.max_prefixes) SetPrefixLimits(c.max_prefixes);
  // `shutdown` in the file changed: follow it. Unchanged, it leaves an operator's
  // `bagctl neighbor ... shutdown` or `enable` alone.
  if (c.shutdown != config_.shutdown) {
    config_.shutdown = c.shutdown;
    if (c.shutdown) {
      Shutdown(c.shutdown_message);
    } else {
      Enable();
    }
  }
}

fsm::State Peer::state() const { return primary_->fsm.state; }
bool Peer::established() const { return primary_->fsm.state == State::kEstablished; }

Peer::Slot* Peer::Find(uint64_t id) {
  if (primary_ && primary_->id == id) return primary_.get();
  if (candidate_ && candidate_->id == id) return candidate_.get();
  return nullptr;
}

void Peer::Start() {
  if (admin_down_) {
    log::Info("neighbor %s: administratively down%s", config_.Name(),
              admin_down_message_.empty() ? "" : absl::StrCat(" (\"", admin_down_message_, "\")"));
    return;
  }
  if (bfd_wait_) {
    log::Info("neighbor %s: waiting for BFD to come Up before starting BGP", config_.Name());
    return;
  }
  Dispatch(*primary_, fsm::Event::Of(EventType::kManualStart));
}

void Peer::BfdDown(const std::string& why) {
  const bool was_waiting = bfd_wait_;
  bfd_wait_ = true;
  if (was_waiting && primary_->fsm.state == State::kIdle && !candidate_) return;
  const std::string reason = absl::StrCat("BFD down: ", why);
  log::Warning("neighbor %s: %s; BGP session down until BFD is Up again", config_.Name(), why);
  // RFC 9384: Cease / BFD Down. Flushing: with RFC 8538 both ways it goes as a Hard Reset, so
  // the peer does not keep our paths stale either (the path, not the control plane, failed).
  ManualStop(Flushing(wire::NotificationMessage::Shutdown(wire::cease::kBfdDown, "")), reason);
  last_error_ = reason;
}

void Peer::BfdUp() {
  if (!bfd_wait_) return;
  bfd_wait_ = false;
  if (admin_down_ || prefix_limit_down_ || primary_->fsm.state != State::kIdle) return;
  log::Info("neighbor %s: BFD is Up: starting BGP", config_.Name());
  Dispatch(*primary_, fsm::Event::Of(EventType::kManualStart));
}

bool Peer::NotificationGraceful() const {
  const fsm::LocalSettings& local = config_.fsm.local;
  return negotiated_ && negotiated_->peer_graceful_restart.notification && local.graceful_restart &&
         local.graceful_restart_time > 0;
}

wire::NotificationMessage Peer::Flushing(const wire::NotificationMessage& cease) const {
  if (!NotificationGraceful()) return cease;
  // RFC 8538 §3: Cease / Hard Reset with the Cease it stands for inside (code, subcode, data).
  wire::NotificationMessage hard;
  hard.code = static_cast<uint8_t>(wire::ErrorCode::kCease);
  hard.subcode = wire::cease::kHardReset;
  hard.data = {cease.code, cease.subcode};
  hard.data.insert(hard.data.end(), cease.data.begin(), cease.data.end());
  return hard;
}

void Peer::Shutdown(const std::string& message) {
  StopPrefixLimitRestart();  // the operator's shutdown wins: no restart by itself
  admin_down_ = true;
  admin_down_message_ = message;
  // RFC 8538 §5: an operator's shutdown is meant to remove the routes: a Hard Reset.
  ManualStop(Flushing(wire::NotificationMessage::Shutdown(wire::cease::kAdministrativeShutdown, message)),
             message.empty() ? "administrative shutdown" : absl::StrCat("administrative shutdown: ", message));
}

void Peer::Enable() {
  if (!admin_down_ && !prefix_limit_down_) return;
  // Also ends a maximum-prefix hold-down early (or the one without restart interval).
  StopPrefixLimitRestart();
  admin_down_ = false;
  admin_down_message_.clear();
  log::Info("neighbor %s: enabled", config_.Name());
  if (bfd_wait_) {
    log::Info("neighbor %s: waiting for BFD to come Up before starting BGP", config_.Name());
    return;
  }
  Dispatch(*primary_, fsm::Event::Of(EventType::kManualStart));
}

void Peer::Reset() {
  // RFC 4486 §4: Cease / Administrative Reset, as FRR's `clear bgp`. A ManualStop (no
  // automatic restart of its own, the backoff is cleared), then a ManualStart at once: the
  // neighbor is not administratively down afterwards.
  const std::string why = "administrative reset (bagctl neighbor clear)";
  ManualStop(Flushing(wire::NotificationMessage::Shutdown(wire::cease::kAdministrativeReset, "")), why);
  last_error_ = why;
  Dispatch(*primary_, fsm::Event::Of(EventType::kManualStart));
}

void Peer::Stop(const wire::NotificationMessage& notification, const std::string& reason, bool flush) {
  StopPrefixLimitRestart();
  admin_down_ = true;
  ManualStop(flush ? Flushing(notification) : notification, reason);
}

void Peer::ManualStop(const wire::NotificationMessage& notification, const std::string& reason) {
  fsm::Event stop = fsm::Event::Of(EventType::kManualStop);
  stop.notification = notification;
  stop.reason = reason;
  if (candidate_) Dispatch(*candidate_, stop);
  candidate_.reset();
  Dispatch(*primary_, stop);
}

int64_t Peer::NowMs(Slot& slot) {
  if (delivering_ != slot.id || !slot.conn) return clock_.SteadyMs();
  if (slot.stamp_read != slot.conn->reads()) {
    slot.stamp_read = slot.conn->reads();
    slot.stamp_ms = clock_.SteadyMs();
    ++slot.stamps;
  }
  return slot.stamp_ms;
}

void Peer::Dispatch(Slot& slot, fsm::Event event) {
  event.now_ms = NowMs(slot);
  event.jitter = jitter_;
  const State before = slot.fsm.state;
  const fsm::StepOutcome r = fsm::StepInPlace(config_.fsm, slot.fsm, event);
  if (r.jitter_used) jitter_ = DrawJitter();  // each jittered timer gets its own draw
  const bool is_primary = &slot == primary_.get();
  if (r.state_changed) {
    log::Event(log::Level::kInfo,
               {{"neighbor", config_.Name()}, {"event", "state"}, {"from", fsm::StateName(before)},
                {"to", fsm::StateName(slot.fsm.state)}},
               "neighbor %s%s: %s -> %s: %s", config_.Name(), is_primary ? "" : " (inbound collision candidate)",
               fsm::StateName(before), fsm::StateName(slot.fsm.state), r.reason);
    if (is_primary) {
      state_since_ms_ = clock_.WallMs();
      if (metrics_) {
        metrics_->State(config_.Name()).Set(static_cast<double>(slot.fsm.state));
        metrics_->Transition(config_.Name(), fsm::StateName(slot.fsm.state)).Increment();
      }
      if (!slot.fsm.last_error.empty() && slot.fsm.state == State::kIdle) last_error_ = slot.fsm.last_error;
      PublishStateChange(event, r, before, slot.fsm.state);
      if (mrt_tap_ != nullptr && mrt_tap_->mrt_enabled()) TapMrtState(slot, before, slot.fsm.state);
    }
  }
  if (is_primary) {
    // The NOTIFICATION that ends the session, received or sent, if there is one.
    const wire::NotificationMessage* notification = nullptr;
    if ((event.type == EventType::kNotifMsg || event.type == EventType::kNotifMsgVerErr) && event.notification) {
      notification = &*event.notification;
    }
    for (const auto& a : r.actions) {
      if (a.type == fsm::ActionType::kSendNotification) notification = &a.notification;
    }
    for (const auto& a : r.actions) {
      if (a.type != fsm::ActionType::kSessionDown) continue;
      // RFC 4724 §4.2: the TCP session terminated (or the peer stopped talking, our Hold
      // Timer Expired): a restart. RFC 8538 §4: when both sides sent the N bit, so is a
      // NOTIFICATION either way, but for Cease / Hard Reset. Without it a NOTIFICATION ends
      // the session for good: no routes are kept.
      const bool hard_reset = notification != nullptr &&
                              notification->code == static_cast<uint8_t>(wire::ErrorCode::kCease) &&
                              notification->subcode == wire::cease::kHardReset;
      last_down_graceful_ = event.type == EventType::kTcpConnectionFails ||
                            event.type == EventType::kHoldTimerExpires ||
                            (notification != nullptr && !hard_reset && NotificationGraceful());
    }
  }
  const uint64_t id = slot.id;
  for (const auto& a : r.actions) {
    // An action may replace the slot (collision); stop if it is gone.
    Slot* s = Find(id);
    if (s == nullptr) return;
    Execute(*s, a);
  }
}

void Peer::PublishStateChange(const fsm::Event& event, const fsm::StepOutcome& step, State before, State after) {
  if (events_ == nullptr) return;
  const fsm::Action* sent = nullptr;
  for (const auto& a : step.actions) {
    if (a.type == fsm::ActionType::kSendNotification) sent = &a;
  }
  control::v1::Event out;
  out.set_time_unix_ms(clock_.WallMs());
  control::v1::NeighborEvent& e = *out.mutable_neighbor();
  e.set_address(config_.Name());
  e.set_description(config_.description);
  e.set_from(fsm::StateName(before));
  e.set_to(fsm::StateName(after));
  e.set_reason(step.reason);
  const char* cause = "other";
  switch (event.type) {
    case EventType::kManualStop: cause = "admin"; break;
    case EventType::kNotifMsg:
    case EventType::kNotifMsgVerErr: cause = "notification-received"; break;
    case EventType::kHoldTimerExpires: cause = "hold-timer"; break;
    case EventType::kTcpConnectionFails: cause = "tcp"; break;
    case EventType::kOpenCollisionDump: cause = "collision"; break;
    case EventType::kManualStart:
    case EventType::kAutomaticStart:
    case EventType::kManualStartPassive:
    case EventType::kAutomaticStartPassive:
    case EventType::kIdleHoldTimerExpires: cause = "start"; break;
    default:
      if (sent != nullptr) cause = "notification-sent";
      break;
  }
  if (after == State::kEstablished) cause = "established";
  e.set_cause(cause);
  if (event.type == EventType::kNotifMsg || event.type == EventType::kNotifMsgVerErr) {
    if (event.notification) *e.mutable_notification() = control::NotificationToProto(*event.notification, clock_.WallMs());
  } else if (sent != nullptr) {
    *e.mutable_notification() = control::NotificationToProto(sent->notification, clock_.WallMs());
    e.set_sent(true);
  }
  events_->Publish(std::move(out));
}

void Peer::Execute(Slot& slot, const fsm::Action& a) {
  const uint64_t id = slot.id;
  switch (a.type) {
    case ActionType::kConnect: return Connect(slot);
    case ActionType::kDropConnection:
      ++slot.connect_generation;
      if (slot.connecting) {
        boost::system::error_code ec;
        slot.connecting->close(ec);
        slot.connecting.reset();
      }
      if (slot.conn) {
        slot.conn->CloseAfterFlush();
        slot.conn.reset();
      }
      return;
    case ActionType::kSendOpen:
      return SendMessage(slot, fsm::BuildOpen(config_.fsm.local, sink_ ? sink_->RestartStateFor(*this) : fsm::RestartState{}));
    case ActionType::kSendKeepalive: return SendMessage(slot, wire::KeepaliveMessage{});
    case ActionType::kSendNotification:
      log::Warning("neighbor %s: sending NOTIFICATION %s", config_.Name(), Describe(a.notification));
      last_sent_ = control::NotificationToProto(a.notification, clock_.WallMs());
      if (metrics_) metrics_->NotificationSent(config_.Name(), a.notification.code, a.notification.subcode).Increment();
      return SendMessage(slot, a.notification);
    case ActionType::kStartConnectRetryTimer:
      return slot.connect_retry->Start(a.duration, [this, id] {
        if (Slot* s = Find(id)) Dispatch(*s, fsm::Event::Of(EventType::kConnectRetryTimerExpires));
      });
    case ActionType::kStopConnectRetryTimer: return slot.connect_retry->Stop();
    case ActionType::kStartHoldTimer: {
      // Every KEEPALIVE and UPDATE restarts it (RFC 4271 §8.2.2); those of one read arrived
      // together, so one restart per read gives the same deadline, without a clock read each.
      const bool in_read = delivering_ == slot.id && slot.stamp_read != 0;
      if (in_read && slot.hold->running() && slot.hold_stamp == slot.stamps && slot.hold_after == a.duration) return;
      slot.hold_stamp = in_read ? slot.stamps : 0;
      slot.hold_after = a.duration;
      return slot.hold->Start(a.duration, [this, id] {
        if (Slot* s = Find(id)) Dispatch(*s, fsm::Event::Of(EventType::kHoldTimerExpires));
      });
    }
    case ActionType::kStopHoldTimer: return slot.hold->Stop();
    case ActionType::kStartKeepaliveTimer:
      return slot.keepalive->Start(a.duration, [this, id] {
        if (Slot* s = Find(id)) Dispatch(*s, fsm::Event::Of(EventType::kKeepaliveTimerExpires));
      });
    case ActionType::kStopKeepaliveTimer: return slot.keepalive->Stop();
    case ActionType::kStartIdleHoldTimer:
      // Candidates never restart; after a BFD Down, BfdUp restarts.
      if (&slot != primary_.get() || admin_down_ || prefix_limit_down_ || bfd_wait_) return;
      log::Info("neighbor %s: restarting in %.1fs (failure %d)", config_.Name(), a.duration.count() / 1000.0,
                slot.fsm.failures);
      return slot.idle_hold->Start(a.duration, [this, id] {
        if (Slot* s = Find(id)) Dispatch(*s, fsm::Event::Of(EventType::kIdleHoldTimerExpires));
      });
    case ActionType::kStopIdleHoldTimer: return slot.idle_hold->Stop();
    case ActionType::kSessionEstablished: {
      negotiated_ = slot.fsm.negotiated;
      bmp_facts_.sent_open = slot.sent_open;
      bmp_facts_.received_open = slot.received_open;
      if (slot.conn) {
        bmp_facts_.local = slot.conn->local();
        bmp_facts_.remote = slot.conn->remote();
      }
      bmp_facts_.down_reason = 4;
      bmp_facts_.down_notification.clear();
      established_since_ms_ = clock_.WallMs();
      ++established_transitions_;
      const wire::CodecContext ctx = negotiated_->DecodeContext(config_.ebgp());
      if (slot.conn) slot.conn->SetCodecContext(ctx);
      prefixes_sent = 0;
      for (int f = 0; f < net::kFamilyCount; ++f) {  // a new session is counted from nothing
        prefix_limits_[f].Reset();
        if (metrics_ && prefix_limits_[f].enabled()) {
          metrics_->PrefixLimitState(config_.Name(), net::FamilyName(static_cast<net::Family>(f))).Set(0);
        }
      }
      if (sink_) {
        // The initial table, then End-of-RIB (RFC 4724) for each family.
        sink_->OnSessionUp(*this);
      }
      if (Find(id) == nullptr || !slot.conn) return;
      if (sink_ && sink_->DefersEndOfRib(*this)) return;
      SendEndOfRib();
      return;
    }
    case ActionType::kSessionDown:
      log::Info("neighbor %s: session down (%d paths held from it)%s", config_.Name(), prefixes_received,
                last_down_graceful_ ? ", without a NOTIFICATION" : "");
      if (sink_) sink_->OnSessionDown(*this);
      established_since_ms_ = 0;
      return;
  }
}

void Peer::ApplySocketOptions(int fd, bool ipv6) {
  if (!config_.password.empty()) {
    if (auto st = SetTcpMd5(fd, config_.address, config_.password); !st.ok())
      log::Error("neighbor %s: TCP-MD5: %s", config_.Name(), st.ToString());
  }
  absl::Status st;
  if (config_.ttl_security > 0) {
    st = SetGtsm(fd, ipv6, config_.ttl_security);
  } else if (config_.ebgp()) {
    st = SetTtl(fd, ipv6, config_.ebgp_multihop > 0 ? config_.ebgp_multihop : 1);
  } else {
    st = SetTtl(fd, ipv6, 255);
  }
  if (!st.ok()) log::Error("neighbor %s: %s", config_.Name(), st.ToString());
}

void Peer::Connect(Slot& slot) {
  const bool v6 = config_.address.is_v6();
  auto sock = std::make_shared<tcp::socket>(io_);
  boost::system::error_code ec;
  sock->open(v6 ? tcp::v6() : tcp::v4(), ec);
  if (ec) {
    log::Error("neighbor %s: socket: %s", config_.Name(), ec.message());
    return;
  }
  ApplySocketOptions(sock->native_handle(), v6);
  if (config_.local_address) {
    const auto local = boost::asio::ip::make_address(config_.local_address->ToString(), ec);
    if (!ec) sock->bind(tcp::endpoint(local, 0), ec);
    if (ec) log::Error("neighbor %s: cannot bind to %s: %s", config_.Name(), config_.local_address->ToString(), ec.message());
  }
  const tcp::endpoint remote(boost::asio::ip::make_address(config_.address.ToString()), config_.port);
  slot.connecting = sock;
  slot.direction = Direction::kOutbound;
  const uint64_t id = slot.id, gen = ++slot.connect_generation;
  sock->async_connect(remote, [this, id, gen, sock, alive = lifetime_.watch()](const boost::system::error_code& err) {
    if (alive.expired()) return;  // the neighbor was removed
    Slot* s = Find(id);
    if (s == nullptr || s->connect_generation != gen) return;  // superseded
    s->connecting.reset();
    if (err) {
      fsm::Event e = fsm::Event::Of(EventType::kTcpConnectionFails);
      e.reason = absl::StrCat("connect to ", config_.Name(), " failed: ", err.message());
      return Dispatch(*s, e);
    }
    Attach(*s, std::move(*sock));
    Dispatch(*s, fsm::Event::Of(EventType::kTcpCrAcked));
  });
}

void Peer::Attach(Slot& slot, tcp::socket socket) {
  const uint64_t id = slot.id;
  // Connection::reads() counts from 0 for each connection: no stamp of an earlier one applies.
  slot.stamp_read = 0;
  slot.hold_stamp = 0;
  Connection::Handler h;
  // The slot's destructor closes the connection (no handler call after that); the watch is
  // a second guard for the Peer itself.
  h.on_message = [this, id, alive = lifetime_.watch()](wire::ByteSpan m) { return !alive.expired() && OnMessage(id, m); };
  h.on_frame_error = [this, id, alive = lifetime_.watch()](const wire::DecodeError& err) {
    if (alive.expired()) return;
    Slot* s = Find(id);
    if (s == nullptr) return;
    log::Warning("neighbor %s: bad message header: %s", config_.Name(), err.reason);
    fsm::Event e = fsm::Event::Of(EventType::kBgpHeaderErr);
    e.notification = err.notification;
    e.reason = err.reason;
    Dispatch(*s, e);
  };
  h.on_closed = [this, id, alive = lifetime_.watch()](const std::string& reason) {
    if (alive.expired()) return;
    Slot* s = Find(id);
    if (s == nullptr) return;
    fsm::Event e = fsm::Event::Of(EventType::kTcpConnectionFails);
    e.reason = reason;
    Dispatch(*s, e);
    if (s == candidate_.get() && s->fsm.state == State::kIdle) candidate_.reset();
  };
  slot.conn = std::make_shared<Connection>(std::move(socket), std::move(h));
  slot.conn->Start();
}

void Peer::Accept(tcp::socket socket) {
  boost::system::error_code ec;
  const auto remote = socket.remote_endpoint(ec);
  if (admin_down_) {
    log::Info("neighbor %s: connection from %s refused: administratively down", config_.Name(),
              remote.address().to_string());
    socket.close(ec);
    return;
  }
  if (prefix_limit_down_) {
    // Idle would take it (a waiting restart); the maximum-prefix hold-down is not one.
    log::Info("neighbor %s: connection from %s refused: down after exceeding its maximum prefixes", config_.Name(),
              remote.address().to_string());
    socket.close(ec);
    return;
  }
  if (bfd_wait_) {
    log::Info("neighbor %s: connection from %s refused: waiting for BFD to come Up", config_.Name(),
              remote.address().to_string());
    socket.close(ec);
    return;
  }
  if (config_.ttl_security > 0 && !GtsmAdmits(socket)) {
    socket.close(ec);
    return;
  }
  ApplySocketOptions(socket.native_handle(), config_.address.is_v6());
  Slot& p = *primary_;
  switch (p.fsm.state) {
    case State::kIdle:
      // Waiting to restart: the peer is ready now, take its connection.
      Dispatch(p, fsm::Event::Of(EventType::kAutomaticStartPassive));
      [[fallthrough]];
    case State::kConnect:
    case State::kActive:
      ++p.connect_generation;  // abandon our own attempt
      if (p.connecting) {
        p.connecting->close(ec);
        p.connecting.reset();
      }
      // The connection is the peer's (RFC 4271 §6.8 compares directions in a collision).
      p.direction = Direction::kInbound;
      Attach(p, std::move(socket));
      Dispatch(p, fsm::Event::Of(EventType::kTcpConnectionConfirmed));
      return;
    case State::kOpenSent:
    case State::kOpenConfirm: {
      if (candidate_) {
        log::Info("neighbor %s: third connection refused during a collision", config_.Name());
        socket.close(ec);
        return;
      }
      log::Info("neighbor %s: inbound connection during %s: collision candidate", config_.Name(),
                fsm::StateName(p.fsm.state));
      candidate_ = std::make_unique<Slot>(clock_, next_slot_id_++, Direction::kInbound);
      Slot& c = *candidate_;
      Dispatch(c, fsm::Event::Of(EventType::kAutomaticStartPassive));
      Attach(c, std::move(socket));
      Dispatch(c, fsm::Event::Of(EventType::kTcpConnectionConfirmed));
      return;
    }
    case State::kEstablished: {
      // RFC 4724 §4.2: a peer that negotiated graceful restart and connects again while the
      // session is up has restarted before the old connection failed here: the old session
      // ends as if its TCP connection had (its paths kept as stale), the new one is taken.
      const bool helper = negotiated_ && std::any_of(negotiated_->graceful_restart_retain.begin(),
                                                     negotiated_->graceful_restart_retain.end(), [](bool b) { return b; });
      if (helper) {
        log::Info("neighbor %s: new connection from %s while Established: the neighbor restarted (graceful "
                  "restart); the old session ends, the new one is taken", config_.Name(), remote.address().to_string());
        fsm::Event e = fsm::Event::Of(EventType::kTcpConnectionFails);
        e.reason = "the neighbor connected again while Established (graceful restart)";
        Dispatch(p, e);
        if (primary_->fsm.state != State::kIdle) {
          socket.close(ec);
          return;
        }
        Slot& fresh = *primary_;
        Dispatch(fresh, fsm::Event::Of(EventType::kAutomaticStartPassive));
        ++fresh.connect_generation;
        if (fresh.connecting) {
          fresh.connecting->close(ec);
          fresh.connecting.reset();
        }
        fresh.direction = Direction::kInbound;
        Attach(fresh, std::move(socket));
        Dispatch(fresh, fsm::Event::Of(EventType::kTcpConnectionConfirmed));
        return;
      }
      // RFC 4271 §6.8: a new connection while Established is closed.
      log::Info("neighbor %s: connection from %s refused: session already established", config_.Name(),
                remote.address().to_string());
      Connection::Handler none;
      none.on_message = [](wire::ByteSpan) { return false; };
      auto c = std::make_shared<Connection>(std::move(socket), std::move(none));
      c->Send(*wire::EncodeMessage(
          wire::NotificationMessage{6, wire::cease::kConnectionCollisionResolution, {}}, wire::CodecContext{}));
      c->CloseAfterFlush();
      return;
    }
  }
}

bool Peer::GtsmAdmits(tcp::socket& socket) {
  boost::system::error_code ec;
  const auto remote = socket.remote_endpoint(ec);
  const std::string from = ec ? "?" : remote.address().to_string();
  const int min_ttl = 256 - config_.ttl_security;
  auto ttl = SavedSynTtl(socket.native_handle());
  if (ttl.ok()) {
    if (*ttl >= min_ttl) return true;
    log::Warning("neighbor %s: connection from %s refused: its SYN arrived with TTL %d, below the GTSM minimum %d "
                 "(ttl_security %d hops, RFC 5082)",
                 config_.Name(), from, *ttl, min_ttl, config_.ttl_security);
    ++gtsm_refused_;
    return false;
  }
  // No saved SYN (an old kernel): the minimum applies from now on; octets that came before
  // it arrived with a TTL nobody checked, so such a connection is not taken.
  ApplySocketOptions(socket.native_handle(), config_.address.is_v6());
  int queued = 0;
  if (ioctl(socket.native_handle(), FIONREAD, &queued) == 0 && queued == 0) return true;
  log::Warning("neighbor %s: connection from %s refused: %d octets arrived before the GTSM minimum TTL could be "
               "applied (%s)",
               config_.Name(), from, queued, ttl.status().ToString());
  ++gtsm_refused_;
  return false;
}

void Peer::SendMessage(Slot& slot, const wire::Message& message) {
  if (!slot.conn) return;
  const wire::CodecContext ctx = slot.fsm.negotiated ? slot.fsm.negotiated->EncodeContext(config_.ebgp()) : wire::CodecContext{};
  auto bytes = wire::EncodeMessage(message, ctx);
  if (!bytes.ok()) {
    log::Error("neighbor %s: cannot encode %s: %s", config_.Name(),
               wire::MessageTypeName(static_cast<uint8_t>(wire::TypeOf(message))), bytes.status().ToString());
    return;
  }
  const uint8_t type = static_cast<uint8_t>(wire::TypeOf(message));
  if (type == static_cast<uint8_t>(wire::MessageType::kOpen)) slot.sent_open = *bytes;
  // The FSM is already past Established when its actions run: the session's mark is the time.
  if (type == static_cast<uint8_t>(wire::MessageType::kNotification) && &slot == primary_.get() &&
      established_since_ms_ != 0) {
    bmp_facts_.down_reason = 1;
    bmp_facts_.down_notification = *bytes;
  }
  Count(out_, type, bytes->size());
  series_.Sent(type, bytes->size());
  slot.conn->Send(*std::move(bytes));
}

bool Peer::OnMessage(uint64_t slot_id, wire::ByteSpan bytes) {
  const uint64_t outer = delivering_;  // 0: no handler calls OnMessage from inside another
  delivering_ = slot_id;
  const bool more = HandleMessage(slot_id, bytes);
  delivering_ = outer;
  // After a message that is not an UPDATE (a ROUTE-REFRESH sends the table after its step,
  // an OPEN may resolve a collision, ...) the next message of the read takes a fresh time:
  // the hold timer runs from when a message was handled, not from before a long piece of
  // work. (An UPDATE that is not plain drops the stamp itself, before its step: OnUpdateMessage.)
  if (bytes[18] != static_cast<uint8_t>(wire::MessageType::kUpdate)) {
    if (Slot* s = Find(slot_id)) s->stamp_read = 0;
  }
  return more;
}

bool Peer::HandleMessage(uint64_t slot_id, wire::ByteSpan bytes) {
  Slot* s = Find(slot_id);
  if (s == nullptr) return false;
  const uint8_t type = bytes[18];
  Count(in_, type, bytes.size());
  series_.Received(type, bytes.size());
  if (mrt_tap_ != nullptr && mrt_tap_->mrt_enabled()) TapMrt(*s, bytes);
  const wire::CodecContext ctx =
      s->fsm.negotiated ? s->fsm.negotiated->DecodeContext(config_.ebgp()) : wire::CodecContext{};
  if (type == static_cast<uint8_t>(wire::MessageType::kUpdate)) {
    if (s == primary_.get() && s->fsm.state == State::kEstablished && sink_ != nullptr) {
      if (BmpTap* tap = sink_->bmp_tap()) tap->OnUpdateReceived(*this, bytes);
    }
    auto decoded = s->updates.Decode(bytes, ctx);
    if (!decoded.ok()) {
      OnMalformed(*s, type, decoded.error());
    } else {
      OnUpdateMessage(*s, *decoded.value());
    }
  } else if (auto decoded = wire::DecodeMessage(bytes, ctx); !decoded.ok()) {
    OnMalformed(*s, type, decoded.error());
  } else {
    wire::Message& m = decoded.value();
    if (auto* open = std::get_if<wire::OpenMessage>(&m)) {
      s->received_open.assign(bytes.begin(), bytes.end());
      fsm::Event e = fsm::Event::Of(EventType::kBgpOpen);
      e.open = open;
      Dispatch(*s, e);
      ResolveCollision();
    } else if (auto* n = std::get_if<wire::NotificationMessage>(&m)) {
      log::Warning("neighbor %s: received NOTIFICATION %s", config_.Name(), Describe(*n));
      if (s == primary_.get() && s->fsm.state == State::kEstablished) {
        bmp_facts_.down_reason = 3;
        bmp_facts_.down_notification.assign(bytes.begin(), bytes.end());
      }
      last_received_ = control::NotificationToProto(*n, clock_.WallMs());
      if (metrics_) metrics_->NotificationReceived(config_.Name(), n->code, n->subcode).Increment();
      fsm::Event e = fsm::Event::Of(EventType::kNotifMsg);
      e.notification = *n;
      Dispatch(*s, e);
    } else if (std::holds_alternative<wire::KeepaliveMessage>(m)) {
      Dispatch(*s, fsm::Event::Of(EventType::kKeepAliveMsg));
    } else if (auto* rr = std::get_if<wire::RouteRefreshMessage>(&m)) {
      // The FSM restarts the hold timer (an FSM error before Established); what the message
      // asks for is the speaker's business (it holds the routes).
      Dispatch(*s, fsm::Event::Of(EventType::kRouteRefreshMsg));
      s = Find(slot_id);
      if (s != nullptr && s == primary_.get() && s->fsm.state == State::kEstablished && sink_) {
        sink_->OnRouteRefresh(*this, *rr);
      }
    }
  }
  // A collision candidate that failed is gone for good.
  if (candidate_ && candidate_->fsm.state == State::kIdle) candidate_.reset();
  s = Find(slot_id);
  return s != nullptr && s->conn != nullptr;
}

net::IpAddress Peer::MrtLocalAddress(const Slot& slot) const {
  if (!slot.conn) return net::IpAddress();
  const auto a = slot.conn->local().address();
  if (a.is_v4()) return net::IpAddress::V4Bytes(a.to_v4().to_bytes().data());
  if (a.to_v6().is_v4_mapped()) {
    return net::IpAddress::V4Bytes(
        boost::asio::ip::make_address_v4(boost::asio::ip::v4_mapped, a.to_v6()).to_bytes().data());
  }
  return net::IpAddress::V6Bytes(a.to_v6().to_bytes().data());
}

void Peer::TapMrtState(const Slot& slot, State before, State after) {
  MrtStateChange c;
  c.peer_address = config_.address;
  c.local_address = MrtLocalAddress(slot);
  c.peer_as = config_.fsm.local.remote_as;
  c.local_as = config_.fsm.local.local_as;
  c.old_state = static_cast<uint16_t>(static_cast<int>(before) + 1);  // RFC 6396 §4.4.1: Idle is 1
  c.new_state = static_cast<uint16_t>(static_cast<int>(after) + 1);
  mrt_tap_->OnMrtStateChange(c);
}

void Peer::TapMrt(const Slot& slot, wire::ByteSpan bytes) {
  MrtReceivedMessage m;
  m.peer_address = config_.address;
  m.local_address = MrtLocalAddress(slot);
  m.peer_as = config_.fsm.local.remote_as;
  m.local_as = config_.fsm.local.local_as;
  if (slot.fsm.negotiated) {
    m.four_octet_as = slot.fsm.negotiated->DecodeContext(config_.ebgp()).four_octet_as;
    for (bool f : slot.fsm.negotiated->add_path_receive) m.add_path = m.add_path || f;
  }
  m.message = bytes;
  mrt_tap_->OnMrtMessage(m);
}

void Peer::OnMalformed(Slot& slot, uint8_t type, const wire::DecodeError& err) {
  log::Warning("neighbor %s: malformed %s: %s", config_.Name(), wire::MessageTypeName(type), err.reason);
  fsm::Event e = fsm::Event::Of(type == 1   ? EventType::kBgpOpenMsgErr
                                : type == 2 ? EventType::kUpdateMsgErr
                                            : EventType::kBgpHeaderErr);
  e.notification = err.notification;
  e.reason = err.reason;
  Dispatch(slot, e);
}

void Peer::OnUpdateMessage(Slot& slot, const wire::UpdateMessage& u) {
  // The FSM's event, taken before the sink sees the message (u is slot.updates' and is not
  // read after the sink had it).
  fsm::Event e = fsm::Event::Of(EventType::kUpdateMsg);
  if (u.action == wire::ErrorAction::kAfiSafiDisable) {
    // bagd does not run a session with a family switched off: reset it (RFC 7606 allows
    // session reset wherever AFI/SAFI disable is allowed).
    e.type = EventType::kUpdateMsgErr;
    e.notification = wire::NotificationMessage{3, wire::update_error::kOptionalAttributeError, {}};
    e.reason = u.errors.empty() ? "MP attribute malformed" : u.errors.back().reason;
  }
  const bool plain = u.errors.empty() && !u.EndOfRib();
  if (slot.fsm.state == State::kEstablished) OnUpdate(slot, u);
  // The sink's work for an UPDATE that is not plain (an End-of-RIB releases the FIB, sweeps
  // stale routes, ...) may have taken long: the FSM's time and the hold timer's restart for
  // it, and for the rest of the read, are taken after that work, not at the read.
  if (!plain) slot.stamp_read = 0;
  Dispatch(slot, std::move(e));
}

void Peer::OnUpdate(Slot& slot, const wire::UpdateMessage& u) {
  (void)slot;
  for (const auto& e : u.errors) {
    log::Warning("neighbor %s: UPDATE: %s (%s)", config_.Name(), e.reason, wire::ErrorActionName(e.action));
  }
  if (sink_) sink_->OnUpdate(*this, u);
  // After every UPDATE, so a flood is stopped one UPDATE past the limit (the rest of what
  // was read is not processed: the connection is dropped).
  CheckPrefixLimits();
}

void Peer::SetPrefixLimits(const std::array<rib::PrefixLimitConfig, net::kFamilyCount>& limits) {
  config_.max_prefixes = limits;
  for (int f = 0; f < net::kFamilyCount; ++f) {
    const bool had = prefix_limits_[f].enabled();
    prefix_limits_[f] = rib::PrefixLimit(limits[f]);  // counted afresh against the new limit
    if (metrics_ && (had || prefix_limits_[f].enabled())) {
      // A removed limit shows as 0 (no limit).
      const char* family = net::FamilyName(static_cast<net::Family>(f));
      metrics_->PrefixLimit(config_.Name(), family).Set(limits[f].limit);
      metrics_->PrefixLimitState(config_.Name(), family).Set(0);
    }
  }
  if (established()) CheckPrefixLimits();
}

void Peer::CheckPrefixLimits() {
  for (int f = 0; f < net::kFamilyCount; ++f) {
    rib::PrefixLimit& limit = prefix_limits_[f];
    if (!limit.enabled()) continue;
    const auto family = static_cast<net::Family>(f);
    const uint64_t count = prefixes_received_by_family[f];
    const rib::PrefixLimitState before = limit.state();
    const rib::PrefixLimitEvent event = limit.Check(count);
    if (metrics_ && limit.state() != before) {
      metrics_->PrefixLimitState(config_.Name(), net::FamilyName(family)).Set(static_cast<double>(limit.state()));
    }
    const rib::PrefixLimitConfig& c = limit.config();
    switch (event) {
      case rib::PrefixLimitEvent::kNone: break;
      case rib::PrefixLimitEvent::kWarning:
        log::Warning("neighbor %s: %s: %d paths, %d%% of the maximum %d (warning threshold %d)", config_.Name(),
                     net::FamilyName(family), count, count * 100 / c.limit, c.limit, c.WarningAt());
        if (metrics_) metrics_->PrefixLimitEvents(config_.Name(), net::FamilyName(family), "warning").Increment();
        break;
      case rib::PrefixLimitEvent::kExceededWarn:
        log::Warning("neighbor %s: %s: %d paths, more than the maximum %d; warning_only: the session stays up",
                     config_.Name(), net::FamilyName(family), count, c.limit);
        if (metrics_) metrics_->PrefixLimitEvents(config_.Name(), net::FamilyName(family), "exceeded").Increment();
        break;
      case rib::PrefixLimitEvent::kExceededCease:
        if (metrics_) metrics_->PrefixLimitEvents(config_.Name(), net::FamilyName(family), "exceeded").Increment();
        return PrefixLimitExceeded(family, count);
    }
  }
}

void Peer::PrefixLimitExceeded(net::Family family, uint64_t count) {
  const rib::PrefixLimitConfig& c = prefix_limits_[static_cast<int>(family)].config();
  const std::string why = absl::StrCat("maximum prefixes exceeded: ", count, " ", net::FamilyName(family),
                                       " paths, limit ", c.limit);
  log::Warning("neighbor %s: %s; %s", config_.Name(), why,
               c.restart_interval_s > 0
                   ? absl::StrCat("down for ", c.restart_interval_s, " s, then restarting")
                   : absl::StrCat("down until `bagctl neighbor ", config_.Name(), " enable`"));
  prefix_limit_down_ = true;
  // RFC 4486 §4: Cease / Maximum Number of Prefixes Reached, with AFI, SAFI and the limit.
  // A ManualStop: no automatic restart (IdleHoldTimer) of its own, the hold-down below decides.
  ManualStop(Flushing(rib::MaxPrefixesCease(family, c.limit)), why);  // RFC 8538 §5: MUST
  last_error_ = why;
  if (c.restart_interval_s > 0) {
    prefix_limit_restart_ms_ = clock_.WallMs() + int64_t{c.restart_interval_s} * 1000;
    // The timer is the Peer's own: destroyed (and its expiry a no-op) with it.
    prefix_limit_restart_->Start(std::chrono::seconds(c.restart_interval_s), [this] { RestartAfterPrefixLimit(); });
  }
}

void Peer::RestartAfterPrefixLimit() {
  if (!prefix_limit_down_) return;
  prefix_limit_down_ = false;
  prefix_limit_restart_ms_ = 0;
  if (admin_down_) return;
  log::Info("neighbor %s: maximum-prefix restart interval over: restarting", config_.Name());
  Dispatch(*primary_, fsm::Event::Of(EventType::kManualStart));
}

void Peer::StopPrefixLimitRestart() {
  prefix_limit_restart_->Stop();
  prefix_limit_down_ = false;
  prefix_limit_restart_ms_ = 0;
}

std::optional<net::IpAddress> Peer::LocalAddress() const {
  if (!primary_->conn) return std::nullopt;
  // Called per exported prefix: convert the bytes, no text round trip.
  const auto a = primary_->conn->local().address();
  if (a.is_v4()) return net::IpAddress::V4Bytes(a.to_v4().to_bytes().data());
  const auto v6 = a.to_v6();
  if (v6.is_v4_mapped()) {
    return net::IpAddress::V4Bytes(boost::asio::ip::make_address_v4(boost::asio::ip::v4_mapped, v6).to_bytes().data());
  }
  return net::IpAddress::V6Bytes(v6.to_bytes().data());
}

wire::CodecContext Peer::EncodeContext() const {
  return negotiated_ ? negotiated_->EncodeContext(config_.ebgp()) : wire::CodecContext{};
}

void Peer::SendUpdates(std::vector<wire::Bytes> messages) {
  Slot& slot = *primary_;
  if (!slot.conn || slot.fsm.state != State::kEstablished) return;
  if (BmpTap* tap = sink_ != nullptr ? sink_->bmp_tap() : nullptr) tap->OnUpdatesSent(*this, messages);  // RFC 8671
  for (auto& m : messages) {
    Count(out_, 2, m.size());
    series_.Sent(2, m.size());
    slot.conn->Send(std::move(m));
  }
}

void Peer::SendEndOfRib() {
  Slot& slot = *primary_;
  if (!slot.conn || slot.fsm.state != State::kEstablished || !negotiated_) return;
  for (int f = 0; f < net::kFamilyCount; ++f) {
    if (negotiated_->families[f]) SendMessage(slot, wire::UpdateMessage::MakeEndOfRib(static_cast<net::Family>(f)));
  }
}

void Peer::SendRouteRefresh(const wire::RouteRefreshMessage& message) {
  Slot& slot = *primary_;
  if (!slot.conn || slot.fsm.state != State::kEstablished) return;
  SendMessage(slot, message);
}

void Peer::ResolveCollision() {
  if (!candidate_ || !primary_) return;
  Slot& p = *primary_;
  Slot& c = *candidate_;
  // Decide once the peer's identifier is known on either connection (RFC 4271 §6.8).
  const fsm::Negotiated* n = c.fsm.negotiated ? &*c.fsm.negotiated : (p.fsm.negotiated ? &*p.fsm.negotiated : nullptr);
  if (n == nullptr) return;
  if (p.direction == c.direction) {
    // Two connections the same way, both inbound: the peer gave up on the first (or the
    // first was never the peer's) and opened another. The newer one wins once its OPEN is
    // in; until then the older one is not dropped for a connection that may be dead too.
    if (!c.fsm.negotiated) return;
    log::Info("neighbor %s: second inbound connection sent its OPEN: keeping it, dropping the older one",
              config_.Name());
    return PromoteCandidate();
  }
  const bool primary_is_outbound = p.direction == Direction::kOutbound;
  const bool outbound_wins = fsm::OutboundWinsCollision(config_.fsm.local.router_id, n->peer_router_id);
  const bool primary_wins = primary_is_outbound == outbound_wins;
  log::Info("neighbor %s: connection collision: keeping the %s connection (local id %s, peer id %s)",
            config_.Name(), outbound_wins ? "outbound" : "inbound",
            net::IpAddress::V4(config_.fsm.local.router_id).ToString(),
            net::IpAddress::V4(n->peer_router_id).ToString());
  if (primary_wins) {
    Dispatch(c, fsm::Event::Of(EventType::kOpenCollisionDump));
    candidate_.reset();
    return;
  }
  PromoteCandidate();
}

void Peer::PromoteCandidate() {
  Dispatch(*primary_, fsm::Event::Of(EventType::kOpenCollisionDump));
  // The candidate becomes the neighbor's connection; keep the restart bookkeeping.
  const uint32_t failures = primary_->fsm.failures;
  candidate_->fsm.failures = failures;
  primary_ = std::move(candidate_);
  state_since_ms_ = clock_.WallMs();
}

control::v1::NeighborStatus Peer::Status() const {
  control::v1::NeighborStatus s;
  s.set_address(config_.Name());
  s.set_remote_as(config_.fsm.local.remote_as);
  s.set_local_as(config_.fsm.local.local_as);
  s.set_description(config_.description);
  s.set_state(fsm::StateName(primary_->fsm.state));
  s.set_admin_down(admin_down_);
  s.set_admin_down_message(admin_down_message_);
  s.set_passive(config_.fsm.passive);
  s.set_state_since_unix_ms(state_since_ms_);
  if (primary_->fsm.state == State::kEstablished && established_since_ms_ > 0) {
    s.set_uptime_seconds((clock_.WallMs() - established_since_ms_) / 1000);
  }
  if (primary_->conn) {
    s.set_local_address(primary_->conn->local().address().to_string());
    s.set_local_port(primary_->conn->local().port());
    s.set_remote_port(primary_->conn->remote().port());
  }
  if (primary_->fsm.state == State::kEstablished && negotiated_) {
    const auto& n = *negotiated_;
    s.set_peer_router_id(net::IpAddress::V4(n.peer_router_id).ToString());
    auto* c = s.mutable_negotiated();
    c->set_four_octet_as(n.four_octet_as);
    c->set_route_refresh(n.route_refresh);
    c->set_enhanced_route_refresh(n.enhanced_route_refresh);
    c->set_extended_message(n.extended_message);
    c->set_graceful_restart(n.graceful_restart);
    c->set_hold_time(n.hold_time);
    c->set_keepalive(n.keepalive);
    c->set_peer_hostname(n.peer_hostname);
    for (int f = 0; f < net::kFamilyCount; ++f) {
      const char* name = net::FamilyName(static_cast<net::Family>(f));
      if (n.families[f]) c->add_families(name);
      if (n.add_path_receive[f]) c->add_add_path_receive(name);
      if (n.add_path_send[f]) c->add_add_path_send(name);
      if (n.extended_nexthop[f]) c->add_extended_nexthop(name);
    }
  }
  *s.mutable_messages_in() = in_;
  *s.mutable_messages_out() = out_;
  s.set_prefixes_received(prefixes_received);
  s.set_prefixes_sent(prefixes_sent);
  s.set_prefixes_rejected(prefixes_rejected);
  for (const std::string& n : policy_notes_) s.add_policy_notes(n);
  s.set_last_error(last_error_);
  if (last_sent_) *s.mutable_last_notification_sent() = *last_sent_;
  if (last_received_) *s.mutable_last_notification_received() = *last_received_;
  s.set_established_transitions(established_transitions_);
  for (int f = 0; f < net::kFamilyCount; ++f) {
    const rib::PrefixLimit& l = prefix_limits_[f];
    if (!l.enabled()) continue;
    auto* p = s.add_prefix_limits();
    p->set_family(net::FamilyName(static_cast<net::Family>(f)));
    p->set_limit(l.config().limit);
    p->set_warning_threshold_percent(l.config().warning_threshold_percent);
    p->set_warning_at(l.config().WarningAt());
    p->set_warning_only(l.config().warning_only);
    p->set_restart_interval_s(l.config().restart_interval_s);
    p->set_count(prefixes_received_by_family[f]);
    p->set_state(rib::PrefixLimitStateName(l.state()));
  }
  s.set_gtsm_refused(gtsm_refused_);
  *s.mutable_route_refresh() = refresh_status_;
  s.set_prefix_limit_down(prefix_limit_down_);
  if (prefix_limit_down_) s.set_prefix_limit_restart_unix_ms(prefix_limit_restart_ms_);
  return s;
}

}  // namespace bagd::session
