#include "bfd/session_fsm.h"

#include <algorithm>
#include <cmath>

namespace bagd::bfd {

namespace {

// §6.8.3: not Up, bfd.DesiredMinTxInterval is at least one second.
uint32_t SentDesiredTx(State state, const SessionConfig& c) {
  return state == State::kUp ? c.desired_min_tx_us : std::max(c.desired_min_tx_us, kSlowTxUs);
}

int64_t Jittered(uint32_t interval_us, double jitter) {
  return static_cast<int64_t>(std::llround(static_cast<double>(interval_us) * jitter));
}

void ScheduleTx(Session& s, int64_t now_us, double jitter) {
  const uint32_t interval = s.TxIntervalUs();
  // §6.8.7: nothing periodic while the peer's RequiredMinRx is 0; the passive role (§6.1)
  // waits for the peer's first packet.
  if (interval == 0 || (s.config.passive && !s.heard)) {
    s.next_tx_us = kNever;
    return;
  }
  s.next_tx_us = now_us + Jittered(interval, jitter);
}

// New intervals to send (a reload, or the session going Up / leaving Up). Up: a Poll
// Sequence (§6.8.3), the larger transmit interval and the larger receive interval in force
// until the Final. Not Up: in force at once.
void SetIntervals(Session& s, uint32_t desired_tx, uint32_t required_rx) {
  if (desired_tx == s.desired_min_tx_us && required_rx == s.required_min_rx_us) return;
  if (s.state == State::kUp) {
    s.poll_active = true;
    s.tx_in_force_us = std::max(s.tx_in_force_us, desired_tx);
    s.rx_in_force_us = std::max(s.rx_in_force_us, required_rx);
  } else {
    s.poll_active = false;
    s.tx_in_force_us = desired_tx;
    s.rx_in_force_us = required_rx;
  }
  s.desired_min_tx_us = desired_tx;
  s.required_min_rx_us = required_rx;
}

void ChangeState(Session& s, Output& out, State to, Diag diag, bool remote_admin_down) {
  Transition t;
  t.from = s.state;
  t.to = to;
  t.diag = diag;
  t.remote_admin_down = remote_admin_down;
  s.state = to;
  s.local_diag = diag;
  out.transition = t;
  // Up uses the configured transmit interval, every other state at least 1 s (§6.8.3).
  SetIntervals(s, SentDesiredTx(to, s.config), s.config.required_min_rx_us);
}

}  // namespace

uint32_t Session::TxIntervalUs() const {
  if (remote_min_rx_us == 0) return 0;
  return std::max(tx_in_force_us, remote_min_rx_us);
}

int64_t Session::DetectionTimeUs() const {
  return int64_t{remote_detect_mult} * std::max(rx_in_force_us, remote_desired_min_tx_us);
}

Session NewSession(const SessionConfig& config, uint32_t local_discr, int64_t now_us) {
  Session s;
  s.config = config;
  s.local_discr = local_discr;
  s.desired_min_tx_us = SentDesiredTx(State::kDown, config);
  s.required_min_rx_us = config.required_min_rx_us;
  s.tx_in_force_us = s.desired_min_tx_us;
  s.rx_in_force_us = s.required_min_rx_us;
  s.next_tx_us = config.passive ? kNever : now_us;
  return s;
}

std::pair<double, double> JitterRange(uint8_t detect_mult) {
  return detect_mult == 1 ? std::pair{0.75, 0.90} : std::pair{0.75, 1.0};
}

const char* EventName(EventType e) {
  switch (e) {
    case EventType::kReceive: return "receive";
    case EventType::kTransmitTimer: return "transmit-timer";
    case EventType::kDetectTimer: return "detect-timer";
    case EventType::kAdminDown: return "admin-down";
    case EventType::kAdminUp: return "admin-up";
    case EventType::kConfigure: return "configure";
  }
  return "?";
}

ControlPacket MakePacket(const Session& s, bool final) {
  ControlPacket p;
  p.diag = s.local_diag;
  p.state = s.state;
  // §6.8.7: never P and F together; a Final goes without P, the next periodic one has it.
  p.poll = s.poll_active && !final;
  p.final = final;
  p.detect_mult = s.config.detect_mult;
  p.my_discriminator = s.local_discr;
  p.your_discriminator = s.remote_discr;
  p.desired_min_tx_us = s.desired_min_tx_us;
  p.required_min_rx_us = s.required_min_rx_us;
  p.required_min_echo_rx_us = 0;  // no Echo function
  return p;
}

Output StepInPlace(Session& s, const Event& e) {
  Output out;
  const State before = s.state;
  switch (e.type) {
    case EventType::kTransmitTimer: {
      if (s.next_tx_us == kNever || e.now_us < s.next_tx_us) break;  // early or stale wake-up
      out.send.push_back(MakePacket(s, false));
      ScheduleTx(s, e.now_us, e.jitter);
      break;
    }
    case EventType::kDetectTimer: {
      if (s.detect_at_us == kNever || e.now_us < s.detect_at_us) break;
      s.detect_at_us = kNever;
      s.remote_discr = 0;  // §6.8.1: a Detection Time without a packet
      if (s.state == State::kInit || s.state == State::kUp) {
        ChangeState(s, out, State::kDown, Diag::kControlDetectionTimeExpired, false);
      }
      break;
    }
    case EventType::kAdminDown: {
      if (s.state == State::kAdminDown) break;
      ChangeState(s, out, State::kAdminDown, Diag::kAdministrativelyDown, false);
      s.detect_at_us = kNever;
      s.remote_discr = 0;
      break;
    }
    case EventType::kAdminUp: {
      if (s.state != State::kAdminDown) break;
      ChangeState(s, out, State::kDown, Diag::kNone, false);
      break;
    }
    case EventType::kConfigure: {
      const bool was_passive = s.config.passive;
      s.config = e.config;
      SetIntervals(s, SentDesiredTx(s.state, s.config), s.config.required_min_rx_us);
      // The Poll goes out now rather than after a whole (possibly 1 s) interval.
      if (s.poll_active || (was_passive && !s.config.passive)) s.next_tx_us = e.now_us;
      break;
    }
    case EventType::kReceive: {
      const ControlPacket& p = e.packet;
      // §6.8.6, after the packet-only checks of Decode and the session lookup.
      s.heard = true;
      s.remote_discr = p.my_discriminator;
      s.remote_state = p.state;
      s.remote_demand = p.demand;
      s.remote_diag = p.diag;
      s.remote_min_rx_us = p.required_min_rx_us;
      s.remote_desired_min_tx_us = p.desired_min_tx_us;
      s.remote_detect_mult = p.detect_mult;
      if (p.final && s.poll_active) {
        s.poll_active = false;
        s.tx_in_force_us = s.desired_min_tx_us;
        s.rx_in_force_us = s.required_min_rx_us;
        out.poll_completed = true;
      }
      if (s.state == State::kAdminDown) break;  // §6.8.6: discard
      s.detect_at_us = e.now_us + s.DetectionTimeUs();
      if (p.state == State::kAdminDown) {
        if (s.state != State::kDown) ChangeState(s, out, State::kDown, Diag::kNeighborSignaledSessionDown, true);
      } else if (s.state == State::kDown) {
        if (p.state == State::kDown) {
          ChangeState(s, out, State::kInit, Diag::kNone, false);
        } else if (p.state == State::kInit) {
          ChangeState(s, out, State::kUp, Diag::kNone, false);
        }
      } else if (s.state == State::kInit) {
        if (p.state == State::kInit || p.state == State::kUp) ChangeState(s, out, State::kUp, Diag::kNone, false);
      } else if (p.state == State::kDown) {  // Up
        ChangeState(s, out, State::kDown, Diag::kNeighborSignaledSessionDown, false);
      }
      // §6.8.6: a Poll is answered by a Final "as soon as practicable", outside the schedule.
      if (p.poll) out.send.push_back(MakePacket(s, true));
      // The interval may have shrunk (the peer's RequiredMinRx, the session Up): do not wait
      // for the old, longer one; and a passive session starts transmitting now.
      const uint32_t interval = s.TxIntervalUs();
      if (interval == 0) {
        s.next_tx_us = kNever;
      } else if (s.next_tx_us == kNever || s.next_tx_us > e.now_us + interval) {
        ScheduleTx(s, e.now_us, e.jitter);
      }
      break;
    }
  }
  if (s.state != before) {
    // A state change is told to the peer at once (it speeds up the three-way handshake and
    // carries our Poll), then the periodic schedule resumes.
    if (e.type != EventType::kTransmitTimer && !(s.config.passive && !s.heard)) {
      bool already = false;
      for (const auto& p : out.send) already = already || !p.final;
      if (!already) out.send.push_back(MakePacket(s, false));
    }
    ScheduleTx(s, e.now_us, e.jitter);
  }
  return out;
}

StepResult Step(const Session& session, const Event& event) {
  StepResult r{session, {}};
  r.out = StepInPlace(r.next, event);
  return r;
}

}  // namespace bagd::bfd
