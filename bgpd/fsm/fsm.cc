#include "bgpd/fsm/fsm.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace bagd::fsm {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using wire::NotificationMessage;

NotificationMessage Notify(wire::ErrorCode code, uint8_t subcode) {
  return NotificationMessage{static_cast<uint8_t>(code), subcode, {}};
}

milliseconds Jittered(uint32_t s, double jitter) {
  return milliseconds(static_cast<int64_t>(std::llround(s * 1000.0 * std::clamp(jitter, 0.75, 1.0))));
}

class Stepper {
 public:
  Stepper(const FsmConfig& c, Fsm& f, const Event& e, StepOutcome& out) : c_(c), e_(e), f_(f), r_(out) {}

  void Run();

 private:
  Fsm& f() { return f_; }
  void Do(ActionType t, milliseconds d = milliseconds(0)) { r_.actions.push_back(Action{t, d, {}}); }
  void Send(NotificationMessage n) { r_.actions.push_back(Action{ActionType::kSendNotification, {}, std::move(n)}); }
  void Go(State s, std::string why) {
    if (s != f().state) r_.state_changed = true;
    f().state = s;
    r_.reason = std::move(why);
  }
  void StartConnectRetry() {
    r_.jitter_used = true;
    Do(ActionType::kStartConnectRetryTimer, Jittered(c_.connect_retry_s, e_.jitter));
  }
  void StopAllTimers() {
    Do(ActionType::kStopConnectRetryTimer);
    Do(ActionType::kStopHoldTimer);
    Do(ActionType::kStopKeepaliveTimer);
  }
  // Leaving for Idle because something went wrong: count it and, unless stopped by the
  // operator, schedule the automatic restart with exponential backoff.
  void Fail(std::string why, bool was_established) {
    StopAllTimers();
    Do(ActionType::kDropConnection);
    if (was_established) {
      Do(ActionType::kSessionDown);
      const bool stable = f().established_at_ms >= 0 &&
                          e_.now_ms - f().established_at_ms >= int64_t{c_.stable_after_s} * 1000;
      if (stable) f().failures = 0;
    }
    f().negotiated.reset();
    f().established_at_ms = -1;
    ++f().connect_retry_counter;
    ++f().failures;
    f().last_error = why;
    if (c_.automatic_restart) {
      r_.jitter_used = true;
      Do(ActionType::kStartIdleHoldTimer, Backoff(c_, f().failures, e_.jitter));
    }
    Go(State::kIdle, std::move(why));
  }
  // Operator stop (ManualStop): Cease, no automatic restart, counters reset.
  void Stop(bool connected, bool was_established) {
    if (connected) Send(e_.notification.value_or(Notify(wire::ErrorCode::kCease, wire::cease::kAdministrativeShutdown)));
    StopAllTimers();
    Do(ActionType::kStopIdleHoldTimer);
    Do(ActionType::kDropConnection);
    if (was_established) Do(ActionType::kSessionDown);
    f().negotiated.reset();
    f().established_at_ms = -1;
    f().connect_retry_counter = 0;
    f().failures = 0;
    Go(State::kIdle, e_.reason.empty() ? "stopped by the operator" : e_.reason);
  }
  void FsmError(uint8_t subcode, bool was_established) {
    Send(Notify(wire::ErrorCode::kFsm, subcode));
    Fail(absl::StrCat("unexpected ", EventName(e_.type), " in ", StateName(f().state)), was_established);
  }
  std::string Received() const {
    if (!e_.notification) return "NOTIFICATION received";
    return absl::StrCat("NOTIFICATION received: ",
                        wire::DescribeNotification(e_.notification->code, e_.notification->subcode));
  }
  std::string Sent() const {
    if (!e_.notification) return e_.reason;
    return absl::StrCat(e_.reason.empty() ? "error" : e_.reason, "; sent ",
                        wire::DescribeNotification(e_.notification->code, e_.notification->subcode));
  }
  void Start(bool passive) {
    Do(ActionType::kStopIdleHoldTimer);
    if (passive) {
      Go(State::kActive, "started, waiting for the peer to connect");
      return;
    }
    StartConnectRetry();
    Do(ActionType::kConnect);
    Go(State::kConnect, "started, connecting");
  }
  void Connected() {
    Do(ActionType::kStopConnectRetryTimer);
    Do(ActionType::kSendOpen);
    Do(ActionType::kStartHoldTimer, seconds(c_.open_hold_time_s));
    Go(State::kOpenSent, e_.type == EventType::kTcpCrAcked ? "connected, OPEN sent" : "accepted, OPEN sent");
  }

  // Events handled alike once a connection is open (OpenSent, OpenConfirm, Established).
  // Returns false for events the state handles itself.
  bool Connected(bool established, const char* hold_expired);
  // KeepaliveTimer fired: send one and re-arm it.
  void KeepaliveDue() {
    Do(ActionType::kSendKeepalive);
    Do(ActionType::kStartKeepaliveTimer, seconds(f().negotiated ? f().negotiated->keepalive : 30));
  }
  // A message from the peer: it is alive (no hold timer when hold time 0 was negotiated).
  void RestartHoldTimer() {
    if (f().negotiated && f().negotiated->hold_time != 0) {
      Do(ActionType::kStartHoldTimer, seconds(f().negotiated->hold_time));
    }
  }
  void Idle();
  void ConnectOrActive();
  void OpenSent();
  void OpenConfirm();
  void Established();

  const FsmConfig& c_;
  const Event& e_;
  Fsm& f_;
  StepOutcome& r_;
};

void Stepper::Idle() {
  switch (e_.type) {
    case EventType::kManualStart:
      f().connect_retry_counter = 0;
      f().failures = 0;
      return Start(c_.passive);
    case EventType::kAutomaticStart: return Start(c_.passive);
    case EventType::kManualStartPassive:
      f().connect_retry_counter = 0;
      f().failures = 0;
      return Start(true);
    case EventType::kAutomaticStartPassive: return Start(true);
    case EventType::kIdleHoldTimerExpires: return Start(c_.passive);
    case EventType::kManualStop:
      // Cancels a pending automatic restart.
      Do(ActionType::kStopIdleHoldTimer);
      return;
    case EventType::kTcpConnectionConfirmed:
    case EventType::kTcpCrAcked:
      // RFC 4271 §8.2.2: Idle refuses connections.
      Do(ActionType::kDropConnection);
      return;
    default:
      return;  // RFC 4271 §8.2.2: other events are ignored in Idle
  }
}

void Stepper::ConnectOrActive() {
  const bool in_connect = f().state == State::kConnect;
  switch (e_.type) {
    case EventType::kManualStart:
    case EventType::kAutomaticStart:
    case EventType::kManualStartPassive:
    case EventType::kAutomaticStartPassive:
    case EventType::kIdleHoldTimerExpires:
      return;  // already started
    case EventType::kManualStop: return Stop(false, false);
    case EventType::kConnectRetryTimerExpires:
      if (c_.passive) return;  // a passive peer never connects out
      Do(ActionType::kDropConnection);
      StartConnectRetry();
      Do(ActionType::kConnect);
      return Go(State::kConnect, "connect retry");
    case EventType::kTcpCrAcked:
    case EventType::kTcpConnectionConfirmed: return Connected();
    case EventType::kTcpConnectionFails:
      // Keep listening; try again when the ConnectRetryTimer fires.
      ++f().connect_retry_counter;
      f().last_error = e_.reason.empty() ? "TCP connection failed" : e_.reason;
      if (!c_.passive) StartConnectRetry();
      return Go(State::kActive, f().last_error);
    default:
      // RFC 4271 §8.2.2: anything else drops back to Idle.
      return Fail(absl::StrCat("unexpected ", EventName(e_.type), " in ", in_connect ? "Connect" : "Active"),
                  false);
  }
}

bool Stepper::Connected(bool established, const char* hold_expired) {
  switch (e_.type) {
    case EventType::kManualStart:
    case EventType::kAutomaticStart:
    case EventType::kManualStartPassive:
    case EventType::kAutomaticStartPassive:
    case EventType::kIdleHoldTimerExpires:
      return true;  // already started
    case EventType::kManualStop:
      Stop(true, established);
      return true;
    case EventType::kHoldTimerExpires:
      Send(Notify(wire::ErrorCode::kHoldTimerExpired, 0));
      Fail(hold_expired, established);
      return true;
    case EventType::kBgpHeaderErr:
    case EventType::kBgpOpenMsgErr:
    case EventType::kUpdateMsgErr:
      if (e_.notification) Send(*e_.notification);
      Fail(Sent(), established);
      return true;
    case EventType::kOpenCollisionDump:
      Send(Notify(wire::ErrorCode::kCease, wire::cease::kConnectionCollisionResolution));
      Fail("connection collision: this connection lost (RFC 4271 §6.8)", established);
      return true;
    case EventType::kNotifMsgVerErr:
    case EventType::kNotifMsg:
      Fail(Received(), established);
      return true;
    default:
      return false;
  }
}

void Stepper::OpenSent() {
  if (Connected(false, "hold timer expired waiting for OPEN")) return;
  switch (e_.type) {
    case EventType::kTcpConnectionFails:
      // RFC 4271 §8.2.2: close, restart the ConnectRetryTimer, go to Active.
      Do(ActionType::kDropConnection);
      Do(ActionType::kStopHoldTimer);
      f().last_error = e_.reason.empty() ? "connection closed in OpenSent" : e_.reason;
      if (!c_.passive) StartConnectRetry();
      return Go(State::kActive, f().last_error);
    case EventType::kBgpOpen: {
      if (e_.open == nullptr) return FsmError(wire::fsm_error::kUnexpectedInOpenSent, false);
      auto n = Negotiate(c_.local, *e_.open);
      if (auto* err = std::get_if<NotificationMessage>(&n)) {
        const std::string why = absl::StrCat("OPEN rejected: ", wire::DescribeNotification(err->code, err->subcode));
        Send(*err);
        return Fail(why, false);
      }
      f().negotiated = std::get<Negotiated>(n);
      Do(ActionType::kStopConnectRetryTimer);
      Do(ActionType::kSendKeepalive);
      if (f().negotiated->hold_time == 0) {
        Do(ActionType::kStopHoldTimer);
      } else {
        Do(ActionType::kStartKeepaliveTimer, seconds(f().negotiated->keepalive));
        Do(ActionType::kStartHoldTimer, seconds(f().negotiated->hold_time));
      }
      return Go(State::kOpenConfirm, "OPEN accepted, KEEPALIVE sent");
    }
    default: return FsmError(wire::fsm_error::kUnexpectedInOpenSent, false);
  }
}

void Stepper::OpenConfirm() {
  if (Connected(false, "hold timer expired in OpenConfirm")) return;
  switch (e_.type) {
    case EventType::kKeepaliveTimerExpires:
      return KeepaliveDue();
    case EventType::kTcpConnectionFails:
      return Fail(e_.reason.empty() ? "connection closed in OpenConfirm" : e_.reason, false);
    case EventType::kKeepAliveMsg:
      RestartHoldTimer();
      f().established_at_ms = e_.now_ms;
      f().connect_retry_counter = 0;
      f().last_error.clear();
      Do(ActionType::kSessionEstablished);
      return Go(State::kEstablished, "KEEPALIVE received, session established");
    default: return FsmError(wire::fsm_error::kUnexpectedInOpenConfirm, false);
  }
}

void Stepper::Established() {
  if (Connected(true, "hold timer expired")) return;
  switch (e_.type) {
    case EventType::kKeepaliveTimerExpires:
      return KeepaliveDue();
    case EventType::kKeepAliveMsg:
    case EventType::kUpdateMsg:
    case EventType::kRouteRefreshMsg:
      RestartHoldTimer();
      return;
    case EventType::kTcpConnectionFails:
      return Fail(e_.reason.empty() ? "connection closed by the peer" : e_.reason, true);
    default: return FsmError(wire::fsm_error::kUnexpectedInEstablished, true);
  }
}

void Stepper::Run() {
  switch (f().state) {
    case State::kIdle: Idle(); break;
    case State::kConnect:
    case State::kActive: ConnectOrActive(); break;
    case State::kOpenSent: OpenSent(); break;
    case State::kOpenConfirm: OpenConfirm(); break;
    case State::kEstablished: Established(); break;
  }
}

}  // namespace

const char* StateName(State s) {
  switch (s) {
    case State::kIdle: return "Idle";
    case State::kConnect: return "Connect";
    case State::kActive: return "Active";
    case State::kOpenSent: return "OpenSent";
    case State::kOpenConfirm: return "OpenConfirm";
    case State::kEstablished: return "Established";
  }
  return "?";
}

const char* EventName(EventType e) {
  switch (e) {
    case EventType::kManualStart: return "ManualStart";
    case EventType::kManualStop: return "ManualStop";
    case EventType::kAutomaticStart: return "AutomaticStart";
    case EventType::kManualStartPassive: return "ManualStart_with_PassiveTcpEstablishment";
    case EventType::kAutomaticStartPassive: return "AutomaticStart_with_PassiveTcpEstablishment";
    case EventType::kConnectRetryTimerExpires: return "ConnectRetryTimer_Expires";
    case EventType::kHoldTimerExpires: return "HoldTimer_Expires";
    case EventType::kKeepaliveTimerExpires: return "KeepaliveTimer_Expires";
    case EventType::kIdleHoldTimerExpires: return "IdleHoldTimer_Expires";
    case EventType::kTcpCrAcked: return "Tcp_CR_Acked";
    case EventType::kTcpConnectionConfirmed: return "TcpConnectionConfirmed";
    case EventType::kTcpConnectionFails: return "TcpConnectionFails";
    case EventType::kBgpOpen: return "BGPOpen";
    case EventType::kBgpHeaderErr: return "BGPHeaderErr";
    case EventType::kBgpOpenMsgErr: return "BGPOpenMsgErr";
    case EventType::kOpenCollisionDump: return "OpenCollisionDump";
    case EventType::kNotifMsgVerErr: return "NotifMsgVerErr";
    case EventType::kNotifMsg: return "NotifMsg";
    case EventType::kKeepAliveMsg: return "KeepAliveMsg";
    case EventType::kUpdateMsg: return "UpdateMsg";
    case EventType::kUpdateMsgErr: return "UpdateMsgErr";
    case EventType::kRouteRefreshMsg: return "RouteRefreshMsg";
  }
  return "?";
}

const std::vector<EventType>& AllEvents() {
  static const std::vector<EventType> kAll = {
      EventType::kManualStart,         EventType::kManualStop,
      EventType::kAutomaticStart,      EventType::kManualStartPassive,
      EventType::kAutomaticStartPassive, EventType::kConnectRetryTimerExpires,
      EventType::kHoldTimerExpires,    EventType::kKeepaliveTimerExpires,
      EventType::kIdleHoldTimerExpires, EventType::kTcpCrAcked,
      EventType::kTcpConnectionConfirmed, EventType::kTcpConnectionFails,
      EventType::kBgpOpen,             EventType::kBgpHeaderErr,
      EventType::kBgpOpenMsgErr,       EventType::kOpenCollisionDump,
      EventType::kNotifMsgVerErr,      EventType::kNotifMsg,
      EventType::kKeepAliveMsg,        EventType::kUpdateMsg,
      EventType::kUpdateMsgErr,        EventType::kRouteRefreshMsg,
  };
  return kAll;
}

const char* ActionName(ActionType a) {
  switch (a) {
    case ActionType::kConnect: return "Connect";
    case ActionType::kDropConnection: return "DropConnection";
    case ActionType::kSendOpen: return "SendOpen";
    case ActionType::kSendKeepalive: return "SendKeepalive";
    case ActionType::kSendNotification: return "SendNotification";
    case ActionType::kStartConnectRetryTimer: return "StartConnectRetryTimer";
    case ActionType::kStopConnectRetryTimer: return "StopConnectRetryTimer";
    case ActionType::kStartHoldTimer: return "StartHoldTimer";
    case ActionType::kStopHoldTimer: return "StopHoldTimer";
    case ActionType::kStartKeepaliveTimer: return "StartKeepaliveTimer";
    case ActionType::kStopKeepaliveTimer: return "StopKeepaliveTimer";
    case ActionType::kStartIdleHoldTimer: return "StartIdleHoldTimer";
    case ActionType::kStopIdleHoldTimer: return "StopIdleHoldTimer";
    case ActionType::kSessionEstablished: return "SessionEstablished";
    case ActionType::kSessionDown: return "SessionDown";
  }
  return "?";
}

std::chrono::milliseconds Backoff(const FsmConfig& config, uint32_t failures, double jitter) {
  const uint32_t shift = std::min<uint32_t>(failures == 0 ? 0 : failures - 1, 20);
  const uint64_t s = std::min<uint64_t>(uint64_t{config.connect_retry_s} << shift, config.max_backoff_s);
  return Jittered(static_cast<uint32_t>(s), jitter);
}

StepOutcome StepInPlace(const FsmConfig& config, Fsm& fsm, const Event& event) {
  StepOutcome out;
  Stepper(config, fsm, event, out).Run();
  return out;
}

StepResult Step(const FsmConfig& config, const Fsm& fsm, const Event& event) {
  StepResult r;
  r.next = fsm;
  static_cast<StepOutcome&>(r) = StepInPlace(config, r.next, event);
  return r;
}

}  // namespace bagd::fsm
