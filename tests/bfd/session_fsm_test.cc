// The BFD session state machine as a pure step function (RFC 5880 §6.2, §6.8): every
// (state, event) pair as a table, then timers, intervals, the Poll Sequence, passive role and
// jitter, all on injected time (no test waits for a timer).
#include <catch2/catch.hpp>

#include <random>

#include "bfd/session_fsm.h"

namespace bagd::bfd {
namespace {

constexpr int64_t kT0 = 1'000'000'000;  // an arbitrary "now", microseconds
constexpr uint32_t kMy = 0x11;
constexpr uint32_t kPeer = 0x22;

SessionConfig Fast() {
  SessionConfig c;
  c.desired_min_tx_us = 100'000;
  c.required_min_rx_us = 100'000;
  c.detect_mult = 3;
  return c;
}

ControlPacket From(State state, uint32_t your = kMy) {
  ControlPacket p;
  p.state = state;
  p.detect_mult = 3;
  p.my_discriminator = kPeer;
  p.your_discriminator = state == State::kDown || state == State::kAdminDown ? your : kMy;
  p.desired_min_tx_us = 100'000;
  p.required_min_rx_us = 100'000;
  return p;
}

// A session brought to `state` by the events that lead there (not by writing the fields).
Session In(State state) {
  Session s = NewSession(Fast(), kMy, kT0);
  if (state == State::kAdminDown) {
    StepInPlace(s, Event::Of(EventType::kAdminDown, kT0));
    return s;
  }
  if (state == State::kDown) return s;
  StepInPlace(s, Event::Receive(From(State::kDown, 0), kT0));
  REQUIRE(s.state == State::kInit);
  if (state == State::kInit) return s;
  StepInPlace(s, Event::Receive(From(State::kUp), kT0));
  REQUIRE(s.state == State::kUp);
  return s;
}

struct Row {
  State from;
  const char* event;
  State to;
  Diag diag;          // the transition's, when there is one
  bool failure;       // Transition::Failure(): BGP must go down
};

Event Named(const std::string& name, int64_t now) {
  if (name == "rx AdminDown") return Event::Receive(From(State::kAdminDown), now);
  if (name == "rx Down") return Event::Receive(From(State::kDown), now);
  if (name == "rx Init") return Event::Receive(From(State::kInit), now);
  if (name == "rx Up") return Event::Receive(From(State::kUp), now);
  if (name == "detect") return Event::Of(EventType::kDetectTimer, now);
  if (name == "transmit") return Event::Of(EventType::kTransmitTimer, now);
  if (name == "admin down") return Event::Of(EventType::kAdminDown, now);
  if (name == "admin up") return Event::Of(EventType::kAdminUp, now);
  if (name == "configure") return Event::Configure(Fast(), now);
  FAIL("unknown event " << name);
  return {};
}

TEST_CASE("bfd fsm: every state and event as a table", "[bfd][fsm]") {
  using S = State;
  using D = Diag;
  const std::vector<Row> rows = {
      // AdminDown: packets are discarded, only admin up leaves it.
      {S::kAdminDown, "rx AdminDown", S::kAdminDown, D::kNone, false},
      {S::kAdminDown, "rx Down", S::kAdminDown, D::kNone, false},
      {S::kAdminDown, "rx Init", S::kAdminDown, D::kNone, false},
      {S::kAdminDown, "rx Up", S::kAdminDown, D::kNone, false},
      {S::kAdminDown, "detect", S::kAdminDown, D::kNone, false},
      {S::kAdminDown, "transmit", S::kAdminDown, D::kNone, false},
      {S::kAdminDown, "admin down", S::kAdminDown, D::kNone, false},
      {S::kAdminDown, "admin up", S::kDown, D::kNone, false},
      {S::kAdminDown, "configure", S::kAdminDown, D::kNone, false},
      // Down
      {S::kDown, "rx AdminDown", S::kDown, D::kNone, false},
      {S::kDown, "rx Down", S::kInit, D::kNone, false},
      {S::kDown, "rx Init", S::kUp, D::kNone, false},
      {S::kDown, "rx Up", S::kDown, D::kNone, false},
      {S::kDown, "detect", S::kDown, D::kNone, false},
      {S::kDown, "transmit", S::kDown, D::kNone, false},
      {S::kDown, "admin down", S::kAdminDown, D::kAdministrativelyDown, false},
      {S::kDown, "admin up", S::kDown, D::kNone, false},
      {S::kDown, "configure", S::kDown, D::kNone, false},
      // Init
      {S::kInit, "rx AdminDown", S::kDown, D::kNeighborSignaledSessionDown, false},
      {S::kInit, "rx Down", S::kInit, D::kNone, false},
      {S::kInit, "rx Init", S::kUp, D::kNone, false},
      {S::kInit, "rx Up", S::kUp, D::kNone, false},
      {S::kInit, "detect", S::kDown, D::kControlDetectionTimeExpired, false},
      {S::kInit, "transmit", S::kInit, D::kNone, false},
      {S::kInit, "admin down", S::kAdminDown, D::kAdministrativelyDown, false},
      {S::kInit, "admin up", S::kInit, D::kNone, false},
      {S::kInit, "configure", S::kInit, D::kNone, false},
      // Up: only a detection timeout and the peer's Down are failures; its AdminDown is not
      // (RFC 5882 §3.2).
      {S::kUp, "rx AdminDown", S::kDown, D::kNeighborSignaledSessionDown, false},
      {S::kUp, "rx Down", S::kDown, D::kNeighborSignaledSessionDown, true},
      {S::kUp, "rx Init", S::kUp, D::kNone, false},
      {S::kUp, "rx Up", S::kUp, D::kNone, false},
      {S::kUp, "detect", S::kDown, D::kControlDetectionTimeExpired, true},
      {S::kUp, "transmit", S::kUp, D::kNone, false},
      {S::kUp, "admin down", S::kAdminDown, D::kAdministrativelyDown, false},
      {S::kUp, "admin up", S::kUp, D::kNone, false},
      {S::kUp, "configure", S::kUp, D::kNone, false},
  };
  for (const Row& row : rows) {
    INFO(StateName(row.from) << " + " << row.event);
    const Session s = In(row.from);
    // Timers are stepped when due: at the later of the two deadlines (a far future for the
    // others is harmless: packets carry no time).
    int64_t now = kT0;
    if (std::string(row.event) == "detect" && s.detect_at_us != kNever) now = s.detect_at_us;
    if (std::string(row.event) == "transmit" && s.next_tx_us != kNever) now = s.next_tx_us;
    const StepResult r = Step(s, Named(row.event, now));
    CHECK(StateName(r.next.state) == std::string(StateName(row.to)));
    if (row.from != row.to) {
      REQUIRE(r.out.transition.has_value());
      CHECK(r.out.transition->from == row.from);
      CHECK(r.out.transition->to == row.to);
      CHECK(DiagName(r.out.transition->diag) == std::string(DiagName(row.diag)));
      CHECK(r.out.transition->Failure() == row.failure);
      CHECK(r.next.local_diag == row.diag);
      // A state change is sent at once, carrying the new state.
      REQUIRE_FALSE(r.out.send.empty());
      CHECK(r.out.send.back().state == row.to);
    } else {
      CHECK_FALSE(r.out.transition.has_value());
    }
    // Step is pure: the input is untouched.
    CHECK(s.state == row.from);
  }
}

TEST_CASE("bfd fsm: a new session transmits at once, a passive one waits for the peer", "[bfd][fsm]") {
  Session active = NewSession(Fast(), kMy, kT0);
  CHECK(active.next_tx_us == kT0);
  auto r = Step(active, Event::Of(EventType::kTransmitTimer, kT0));
  REQUIRE(r.out.send.size() == 1);
  const ControlPacket& p = r.out.send[0];
  CHECK(p.state == State::kDown);
  CHECK(p.my_discriminator == kMy);
  CHECK(p.your_discriminator == 0);
  CHECK(p.desired_min_tx_us == kSlowTxUs);  // §6.8.3: 1 s while not Up
  CHECK(p.required_min_rx_us == 100'000);
  CHECK(p.detect_mult == 3);
  // The peer's RequiredMinRx is still the initial 1 us: our 1 s decides.
  CHECK(r.next.next_tx_us == kT0 + 1'000'000);

  SessionConfig pc = Fast();
  pc.passive = true;
  Session passive = NewSession(pc, kMy, kT0);
  CHECK(passive.next_tx_us == kNever);
  CHECK(Step(passive, Event::Of(EventType::kTransmitTimer, kT0 + 5'000'000)).out.send.empty());
  auto heard = Step(passive, Event::Receive(From(State::kDown, 0), kT0 + 10));
  CHECK(heard.next.state == State::kInit);
  REQUIRE_FALSE(heard.out.send.empty());
  CHECK(heard.out.send.back().your_discriminator == kPeer);
  CHECK(heard.next.next_tx_us != kNever);
}

TEST_CASE("bfd fsm: transmit timer fires only when due", "[bfd][fsm]") {
  Session s = In(State::kUp);
  const int64_t due = s.next_tx_us;
  CHECK(Step(s, Event::Of(EventType::kTransmitTimer, due - 1)).out.send.empty());
  auto r = Step(s, Event::Of(EventType::kTransmitTimer, due));
  CHECK(r.out.send.size() == 1);
}

TEST_CASE("bfd fsm: detection time is the peer's multiplier times the agreed interval", "[bfd][fsm]") {
  Session s = In(State::kUp);
  // Finish the Poll our going Up started, so our 100 ms receive interval is in force.
  ControlPacket f = From(State::kUp);
  f.final = true;
  StepInPlace(s, Event::Receive(f, kT0 + 1000));
  CHECK_FALSE(s.poll_active);
  CHECK(s.DetectionTimeUs() == 300'000);
  CHECK(s.detect_at_us == kT0 + 1000 + 300'000);

  // The peer sends slower than we require: its interval decides, with its multiplier.
  ControlPacket slow = From(State::kUp);
  slow.desired_min_tx_us = 250'000;
  slow.detect_mult = 5;
  StepInPlace(s, Event::Receive(slow, kT0 + 2000));
  CHECK(s.DetectionTimeUs() == 1'250'000);
  CHECK(s.detect_at_us == kT0 + 2000 + 1'250'000);

  // Not yet expired, then expired: Down with diag 1, remote discriminator forgotten.
  CHECK_FALSE(Step(s, Event::Of(EventType::kDetectTimer, s.detect_at_us - 1)).out.transition);
  auto r = Step(s, Event::Of(EventType::kDetectTimer, s.detect_at_us));
  REQUIRE(r.out.transition);
  CHECK(r.out.transition->Failure());
  CHECK(r.next.remote_discr == 0);
  CHECK(r.next.local_diag == Diag::kControlDetectionTimeExpired);
  // Back Down, the packets go at 1 s again with diag 1.
  REQUIRE_FALSE(r.out.send.empty());
  CHECK(r.out.send.back().diag == Diag::kControlDetectionTimeExpired);
  CHECK(r.out.send.back().desired_min_tx_us == kSlowTxUs);
}

TEST_CASE("bfd fsm: transmit interval follows the peer's RequiredMinRx and jitter", "[bfd][fsm]") {
  Session s = In(State::kUp);
  ControlPacket f = From(State::kUp);
  f.final = true;
  f.required_min_rx_us = 400'000;  // the peer cannot take our 100 ms
  StepInPlace(s, Event::Receive(f, kT0));
  CHECK(s.TxIntervalUs() == 400'000);
  auto r = Step(s, Event::Of(EventType::kTransmitTimer, s.next_tx_us, 0.75));
  CHECK(r.next.next_tx_us == s.next_tx_us + 300'000);
  // RemoteMinRx 0: no periodic packets at all (§6.8.7).
  ControlPacket quiet = From(State::kUp);
  quiet.required_min_rx_us = 0;
  auto q = Step(s, Event::Receive(quiet, kT0 + 10));
  CHECK(q.next.next_tx_us == kNever);
}

TEST_CASE("bfd fsm: jitter range is 75-100 %, 75-90 % with multiplier 1", "[bfd][fsm]") {
  CHECK(JitterRange(3) == std::pair{0.75, 1.0});
  CHECK(JitterRange(1) == std::pair{0.75, 0.90});
  // Drawn from an injected generator: every interval lands in its range.
  std::mt19937 rng(42);
  for (uint8_t mult : {uint8_t{1}, uint8_t{3}}) {
    SessionConfig c = Fast();
    c.detect_mult = mult;
    Session s = NewSession(c, kMy, kT0);
    StepInPlace(s, Event::Receive(From(State::kInit), kT0));
    const auto [lo, hi] = JitterRange(mult);
    for (int i = 0; i < 200; ++i) {
      const double j = std::uniform_real_distribution<double>(lo, hi)(rng);
      const int64_t at = s.next_tx_us;
      StepInPlace(s, Event::Of(EventType::kTransmitTimer, at, j));
      const int64_t gap = s.next_tx_us - at;
      CHECK(gap >= static_cast<int64_t>(s.TxIntervalUs() * 0.75) - 1);
      CHECK(gap <= static_cast<int64_t>(s.TxIntervalUs() * (mult == 1 ? 0.90 : 1.0)) + 1);
    }
  }
}

TEST_CASE("bfd fsm: going Up starts a Poll Sequence for the fast interval", "[bfd][fsm]") {
  Session s = In(State::kInit);
  CHECK(s.desired_min_tx_us == kSlowTxUs);
  auto up = Step(s, Event::Receive(From(State::kUp), kT0 + 10));
  CHECK(up.next.state == State::kUp);
  CHECK(up.next.poll_active);
  CHECK(up.next.desired_min_tx_us == 100'000);
  // §6.8.3: a faster transmit interval may wait for the Final; the 1 s stays until then.
  CHECK(up.next.tx_in_force_us == kSlowTxUs);
  REQUIRE_FALSE(up.out.send.empty());
  CHECK(up.out.send.back().poll);
  CHECK_FALSE(up.out.send.back().final);
  // The peer's Final ends it.
  ControlPacket f = From(State::kUp);
  f.final = true;
  auto done = Step(up.next, Event::Receive(f, kT0 + 20));
  CHECK(done.out.poll_completed);
  CHECK_FALSE(done.next.poll_active);
  CHECK(done.next.tx_in_force_us == 100'000);
  CHECK(done.next.TxIntervalUs() == 100'000);
  // ... and the next packet goes within the new interval, not the old second.
  CHECK(done.next.next_tx_us <= kT0 + 20 + 100'000);
  auto tx = Step(done.next, Event::Of(EventType::kTransmitTimer, done.next.next_tx_us));
  REQUIRE(tx.out.send.size() == 1);
  CHECK_FALSE(tx.out.send[0].poll);
}

TEST_CASE("bfd fsm: a Poll from the peer is answered by a Final at once", "[bfd][fsm]") {
  Session s = In(State::kUp);
  ControlPacket p = From(State::kUp);
  p.poll = true;
  p.desired_min_tx_us = 50'000;
  p.required_min_rx_us = 200'000;
  auto r = Step(s, Event::Receive(p, kT0 + 5));
  REQUIRE_FALSE(r.out.send.empty());
  CHECK(r.out.send[0].final);
  CHECK_FALSE(r.out.send[0].poll);  // never both
  CHECK(r.next.remote_min_rx_us == 200'000);
  CHECK(r.next.remote_desired_min_tx_us == 50'000);
}

TEST_CASE("bfd fsm: a reload while Up changes the intervals by a Poll Sequence", "[bfd][fsm]") {
  Session s = In(State::kUp);
  ControlPacket f = From(State::kUp);
  f.final = true;
  StepInPlace(s, Event::Receive(f, kT0));
  REQUIRE_FALSE(s.poll_active);

  // Slower transmit, faster receive: the old 100 ms transmit... no: the larger (new 500 ms)
  // transmit interval waits, the larger (old 100 ms vs new 50 ms -> 100 ms) receive stays.
  SessionConfig c = Fast();
  c.desired_min_tx_us = 500'000;
  c.required_min_rx_us = 50'000;
  auto r = Step(s, Event::Configure(c, kT0 + 100));
  CHECK(r.next.state == State::kUp);
  CHECK_FALSE(r.out.transition);
  CHECK(r.next.poll_active);
  CHECK(r.next.desired_min_tx_us == 500'000);
  CHECK(r.next.required_min_rx_us == 50'000);
  CHECK(r.next.rx_in_force_us == 100'000);  // §6.8.3: a smaller RequiredMinRx waits for the Final
  CHECK(r.next.next_tx_us == kT0 + 100);    // the Poll goes out now
  auto tx = Step(r.next, Event::Of(EventType::kTransmitTimer, kT0 + 100));
  REQUIRE(tx.out.send.size() == 1);
  CHECK(tx.out.send[0].poll);
  CHECK(tx.out.send[0].desired_min_tx_us == 500'000);
  // Final: the new values in force.
  auto done = Step(tx.next, Event::Receive(f, kT0 + 200));
  CHECK(done.out.poll_completed);
  CHECK(done.next.rx_in_force_us == 50'000);
  CHECK(done.next.tx_in_force_us == 500'000);
  // Nothing changed: no poll.
  auto same = Step(done.next, Event::Configure(c, kT0 + 300));
  CHECK_FALSE(same.next.poll_active);
}

TEST_CASE("bfd fsm: a reload while Down applies at once", "[bfd][fsm]") {
  Session s = In(State::kDown);
  SessionConfig c = Fast();
  c.required_min_rx_us = 20'000;
  c.detect_mult = 5;
  auto r = Step(s, Event::Configure(c, kT0));
  CHECK_FALSE(r.next.poll_active);
  CHECK(r.next.rx_in_force_us == 20'000);
  CHECK(MakePacket(r.next, false).detect_mult == 5);
}

TEST_CASE("bfd fsm: AdminDown sends AdminDown with diag 7 and ignores packets", "[bfd][fsm]") {
  Session s = In(State::kUp);
  auto r = Step(s, Event::Of(EventType::kAdminDown, kT0));
  REQUIRE_FALSE(r.out.send.empty());
  CHECK(r.out.send.back().state == State::kAdminDown);
  CHECK(r.out.send.back().diag == Diag::kAdministrativelyDown);
  CHECK(r.next.detect_at_us == kNever);
  CHECK_FALSE(r.out.transition->Failure());
  // Still transmitting (the peer learns it), at the slow rate.
  CHECK(r.next.next_tx_us != kNever);
  auto up = Step(r.next, Event::Of(EventType::kAdminUp, kT0 + 10));
  CHECK(up.next.state == State::kDown);
}

TEST_CASE("bfd fsm: the peer's AdminDown then its return", "[bfd][fsm]") {
  Session s = In(State::kUp);
  auto down = Step(s, Event::Receive(From(State::kAdminDown), kT0));
  REQUIRE(down.out.transition);
  CHECK(down.out.transition->remote_admin_down);
  CHECK_FALSE(down.out.transition->Failure());
  // The peer comes back: Down -> Init -> Up as for a new session.
  auto init = Step(down.next, Event::Receive(From(State::kDown), kT0 + 10));
  CHECK(init.next.state == State::kInit);
  auto up = Step(init.next, Event::Receive(From(State::kUp), kT0 + 20));
  CHECK(up.next.state == State::kUp);
}

}  // namespace
}  // namespace bagd::bfd
