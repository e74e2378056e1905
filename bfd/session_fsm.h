// One BFD session's state machine (RFC 5880 §6.2, §6.8) as a pure step function, as the BGP
// FSM is (design.md rule 3): Step(session, event) -> the next session and what to do. Time is
// an input (Event::now_us, a monotonic clock in microseconds), and so is the transmit jitter
// (Event::jitter, drawn by the caller from its RNG within JitterRange()).
//
// The session carries its own deadlines (next_tx_us, detect_at_us); the engine steps it with
// kTransmitTimer / kDetectTimer when they pass and sends what the step returns.
//
// Asynchronous mode only: no Demand mode (a peer's D bit is recorded, never honoured by
// stopping our transmission), no Echo function (Required Min Echo RX Interval is sent as 0),
// no authentication (the codec drops packets with the A bit).
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <utility>

#include "absl/container/inlined_vector.h"
#include "bfd/packet.h"

namespace bagd::bfd {

inline constexpr int64_t kNever = std::numeric_limits<int64_t>::max();
// RFC 5880 §6.8.3: while the session is not Up, bfd.DesiredMinTxInterval is at least 1 s.
inline constexpr uint32_t kSlowTxUs = 1'000'000;

// What the operator asked for (the config, after profile and defaults).
struct SessionConfig {
  uint32_t desired_min_tx_us = 300'000;
  uint32_t required_min_rx_us = 300'000;
  uint8_t detect_mult = 3;
  bool passive = false;  // §6.1: send nothing until the peer has sent something
  friend bool operator==(const SessionConfig&, const SessionConfig&) = default;
};

// RFC 5880 §6.8.1's state variables, plus the intervals in force and the deadlines.
struct Session {
  SessionConfig config;
  State state = State::kDown;
  State remote_state = State::kDown;
  uint32_t local_discr = 0;
  uint32_t remote_discr = 0;
  Diag local_diag = Diag::kNone;
  Diag remote_diag = Diag::kNone;  // the last one the peer sent
  // What our packets carry now (bfd.DesiredMinTxInterval, bfd.RequiredMinRxInterval).
  uint32_t desired_min_tx_us = kSlowTxUs;
  uint32_t required_min_rx_us = 300'000;
  // What our timing uses: differs from the two above during a Poll Sequence (§6.8.3: a
  // larger transmit interval or a smaller receive interval waits for the Final).
  uint32_t tx_in_force_us = kSlowTxUs;
  uint32_t rx_in_force_us = 300'000;
  uint32_t remote_min_rx_us = 1;  // bfd.RemoteMinRxInterval, initialised to 1 (§6.8.1)
  uint32_t remote_desired_min_tx_us = 0;
  uint8_t remote_detect_mult = 0;
  bool remote_demand = false;
  bool poll_active = false;  // we are sending P and wait for F
  bool heard = false;        // any packet received (passive role may transmit)
  int64_t next_tx_us = 0;        // when the next periodic packet goes; kNever: none
  int64_t detect_at_us = kNever;  // when the peer is declared down without a packet

  // The periodic interval before jitter (§6.8.7): max(our DesiredMinTx in force, the peer's
  // RequiredMinRx). 0 when the peer asked for no packets (RemoteMinRx 0).
  uint32_t TxIntervalUs() const;
  // The Detection Time for the peer (§6.8.4, asynchronous mode): its Detect Mult times
  // max(our RequiredMinRx in force, its last DesiredMinTx).
  int64_t DetectionTimeUs() const;
};

// A new session: Down, `discr` as our discriminator, transmitting at once unless passive.
Session NewSession(const SessionConfig& config, uint32_t local_discr, int64_t now_us);

// §6.8.7: the transmit interval is reduced by a random 0..25 %, or by 10..25 % when Detect
// Mult is 1. The engine draws uniformly in [first, second].
std::pair<double, double> JitterRange(uint8_t detect_mult);

enum class EventType : uint8_t {
  kReceive,        // a decoded packet for this session (Event::packet)
  kTransmitTimer,  // now >= next_tx_us
  kDetectTimer,    // now >= detect_at_us
  kAdminDown,      // the operator took the session down (we send AdminDown)
  kAdminUp,
  kConfigure,      // new intervals / multiplier / role (Event::config)
};
const char* EventName(EventType e);

struct Event {
  EventType type = EventType::kTransmitTimer;
  int64_t now_us = 0;
  double jitter = 1.0;  // within JitterRange(config.detect_mult)
  ControlPacket packet;  // kReceive
  SessionConfig config;  // kConfigure

  static Event Of(EventType t, int64_t now_us, double jitter = 1.0) {
    Event e;
    e.type = t;
    e.now_us = now_us;
    e.jitter = jitter;
    return e;
  }
  static Event Receive(const ControlPacket& p, int64_t now_us, double jitter = 1.0) {
    Event e = Of(EventType::kReceive, now_us, jitter);
    e.packet = p;
    return e;
  }
  static Event Configure(const SessionConfig& c, int64_t now_us, double jitter = 1.0) {
    Event e = Of(EventType::kConfigure, now_us, jitter);
    e.config = c;
    return e;
  }
};

struct Transition {
  State from = State::kDown;
  State to = State::kDown;
  Diag diag = Diag::kNone;
  // RFC 5882 §3.2: the peer signalled AdminDown. Not a failure of the path: a client
  // (BGP) must not take its session down for it.
  bool remote_admin_down = false;
  // Up -> Down that a client should take as a failure of the forwarding path.
  bool Failure() const { return from == State::kUp && to == State::kDown && !remote_admin_down; }
};

struct Output {
  absl::InlinedVector<ControlPacket, 2> send;  // in order
  std::optional<Transition> transition;
  bool poll_completed = false;  // a Final ended our Poll Sequence: new intervals in force
};

struct StepResult {
  Session next;
  Output out;
};

// The step as a pure function.
StepResult Step(const Session& session, const Event& event);
// The same on the engine's own Session, without a copy.
Output StepInPlace(Session& session, const Event& event);

// The packet the session would send now (P as poll_active, F as asked).
ControlPacket MakePacket(const Session& session, bool final);

}  // namespace bagd::bfd
