// The BGP finite state machine of RFC 4271 §8 as a pure step function (design.md rule 3).
//
// One Fsm drives one TCP connection to a peer (the RFC's model; two connections to the same
// peer during a collision are two Fsms, resolved by OutboundWinsCollision). The session
// layer turns socket and timer happenings into Events and executes the returned Actions.
// Time and randomness are inputs: Event::now_ms and Event::jitter.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "bgpd/fsm/negotiation.h"
#include "wire/notification.h"

namespace bagd::fsm {

enum class State : uint8_t { kIdle, kConnect, kActive, kOpenSent, kOpenConfirm, kEstablished };
inline constexpr int kStateCount = 6;
const char* StateName(State s);  // "Idle", ..., as operators know them

// Events, numbered as in RFC 4271 §8.1 where the RFC has them.
enum class EventType : uint8_t {
  kManualStart = 1,
  kManualStop = 2,
  kAutomaticStart = 3,
  kManualStartPassive = 4,
  kAutomaticStartPassive = 5,
  kConnectRetryTimerExpires = 9,
  kHoldTimerExpires = 10,
  kKeepaliveTimerExpires = 11,
  kIdleHoldTimerExpires = 13,  // RFC 4271 §8.1.1 IdleHoldTimer (DampPeerOscillations)
  kTcpCrAcked = 16,            // our outbound connect completed
  kTcpConnectionConfirmed = 17,  // an inbound connection was accepted
  kTcpConnectionFails = 18,
  kBgpOpen = 19,
  kBgpHeaderErr = 21,
  kBgpOpenMsgErr = 22,
  kOpenCollisionDump = 23,
  kNotifMsgVerErr = 24,
  kNotifMsg = 25,
  kKeepAliveMsg = 26,
  kUpdateMsg = 27,
  kUpdateMsgErr = 28,
  kRouteRefreshMsg = 29,  // not in RFC 4271: like an UPDATE for the FSM
};
const char* EventName(EventType e);
// Every event, for table tests.
const std::vector<EventType>& AllEvents();

struct Event {
  EventType type = EventType::kManualStart;
  int64_t now_ms = 0;      // the injected clock
  double jitter = 1.0;     // RFC 4271 §10: timers are multiplied by a random 0.75..1.0
  const wire::OpenMessage* open = nullptr;  // kBgpOpen
  // kBgpHeaderErr / kBgpOpenMsgErr / kUpdateMsgErr: the NOTIFICATION to send.
  // kNotifMsg / kNotifMsgVerErr: the NOTIFICATION received.
  // kManualStop: the Cease to send (e.g. Administrative Shutdown with an RFC 9003 message).
  std::optional<wire::NotificationMessage> notification;
  std::string reason;  // for logs and last_error

  static Event Of(EventType t, int64_t now_ms = 0) {
    Event e;
    e.type = t;
    e.now_ms = now_ms;
    return e;
  }
};

enum class ActionType : uint8_t {
  kConnect,                 // initiate the TCP connection
  kDropConnection,          // close the TCP connection
  kSendOpen,
  kSendKeepalive,
  kSendNotification,        // then the connection is dropped (a kDropConnection follows)
  kStartConnectRetryTimer,  // duration
  kStopConnectRetryTimer,
  kStartHoldTimer,          // duration
  kStopHoldTimer,
  kStartKeepaliveTimer,     // duration
  kStopKeepaliveTimer,
  kStartIdleHoldTimer,      // duration: automatic restart after a failure, with backoff
  kStopIdleHoldTimer,
  kSessionEstablished,      // routes may flow; Fsm::negotiated is set
  kSessionDown,             // leaving Established: withdraw what the peer sent
};
const char* ActionName(ActionType a);

struct Action {
  ActionType type;
  std::chrono::milliseconds duration{0};
  wire::NotificationMessage notification;  // kSendNotification
  friend bool operator==(const Action&, const Action&) = default;
};

struct FsmConfig {
  LocalSettings local;
  bool passive = false;              // never initiate the TCP connection
  bool automatic_restart = true;     // after a failure, restart by itself (with backoff)
  uint32_t connect_retry_s = 5;      // base ConnectRetryTime
  uint32_t max_backoff_s = 120;      // cap of the exponential backoff
  uint32_t open_hold_time_s = 240;   // RFC 4271 §8.2.2: "large value" while waiting for OPEN
  uint32_t stable_after_s = 60;      // an Established period this long resets the backoff
  friend bool operator==(const FsmConfig&, const FsmConfig&) = default;
};

// Per-connection FSM data.
struct Fsm {
  State state = State::kIdle;
  uint32_t connect_retry_counter = 0;  // RFC 4271 ConnectRetryCounter
  uint32_t failures = 0;               // consecutive failures, drives the backoff
  int64_t established_at_ms = -1;
  std::optional<Negotiated> negotiated;
  std::string last_error;
};

// What a step did besides changing the Fsm.
struct StepOutcome {
  // Inline: a message in Established is one action (restart the hold timer), a failure a
  // handful; a step runs for every message received.
  absl::InlinedVector<Action, 4> actions;
  bool state_changed = false;
  bool jitter_used = false;  // a timer was set from Event::jitter: the next event needs a new draw
  std::string reason;  // why the state changed (for the log line)
};

struct StepResult : StepOutcome {
  Fsm next;
};

// The step as a pure function: the next Fsm and what to do.
StepResult Step(const FsmConfig& config, const Fsm& fsm, const Event& event);
// The same step on the session's own Fsm, without copying it (the negotiated capabilities,
// the last error) for every message received: Step is this on a copy.
StepOutcome StepInPlace(const FsmConfig& config, Fsm& fsm, const Event& event);

// The backoff before an automatic restart after `failures` consecutive failures:
// connect_retry_s × 2^(failures-1), capped at max_backoff_s, times jitter.
std::chrono::milliseconds Backoff(const FsmConfig& config, uint32_t failures, double jitter);

}  // namespace bagd::fsm
