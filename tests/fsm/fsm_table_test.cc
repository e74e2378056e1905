// Every (state, event) pair of the FSM, as a table (design.md rule 3).
#include <algorithm>
#include <catch2/catch.hpp>
#include <map>

#include "bgpd/fsm/fsm.h"

using namespace bagd;
using namespace bagd::fsm;
using E = EventType;
using S = State;
using A = ActionType;

namespace {

FsmConfig Config() {
  FsmConfig c;
  c.local.local_as = 65000;
  c.local.remote_as = 65001;
  c.local.router_id = 0x0a000001;
  c.local.hold_time = 90;
  c.local.families = {true, true};
  return c;
}

wire::OpenMessage PeerOpen() {
  FsmConfig peer = Config();
  peer.local.local_as = 65001;
  peer.local.remote_as = 65000;
  peer.local.router_id = 0x0a000002;
  return BuildOpen(peer.local);
}

Fsm InState(S s) {
  Fsm f;
  f.state = s;
  if (s == S::kOpenConfirm || s == S::kEstablished) {
    f.negotiated = std::get<Negotiated>(Negotiate(Config().local, PeerOpen()));
  }
  if (s == S::kEstablished) f.established_at_ms = 0;
  return f;
}

Event MakeEvent(E type, const wire::OpenMessage* open) {
  Event e;
  e.type = type;
  e.now_ms = 1000;
  e.open = type == E::kBgpOpen ? open : nullptr;
  if (type == E::kBgpHeaderErr || type == E::kBgpOpenMsgErr || type == E::kUpdateMsgErr) {
    e.notification = wire::NotificationMessage{3, 1, {}};
  }
  if (type == E::kNotifMsg || type == E::kNotifMsgVerErr) e.notification = wire::NotificationMessage{6, 2, {}};
  return e;
}

struct Expect {
  S next;
  std::vector<A> must;            // actions that must be present
  int notify_code = -1;           // NOTIFICATION sent: code (and subcode), -1: none sent
  int notify_subcode = -1;
};

bool Has(const StepResult& r, A a) {
  for (const auto& x : r.actions)
    if (x.type == a) return true;
  return false;
}

// The table. Rows not listed for a state take the state's default.
Expect Expected(S s, E e) {
  const bool start = e == E::kManualStart || e == E::kAutomaticStart || e == E::kManualStartPassive ||
                     e == E::kAutomaticStartPassive || e == E::kIdleHoldTimerExpires;
  const Expect to_idle_failure{S::kIdle, {A::kDropConnection, A::kStartIdleHoldTimer}};
  switch (s) {
    case S::kIdle:
      if (e == E::kManualStart || e == E::kAutomaticStart || e == E::kIdleHoldTimerExpires)
        return {S::kConnect, {A::kConnect, A::kStartConnectRetryTimer}};
      if (e == E::kManualStartPassive || e == E::kAutomaticStartPassive) return {S::kActive, {}};
      if (e == E::kTcpConnectionConfirmed || e == E::kTcpCrAcked) return {S::kIdle, {A::kDropConnection}};
      if (e == E::kManualStop) return {S::kIdle, {A::kStopIdleHoldTimer}};
      return {S::kIdle, {}};
    case S::kConnect:
    case S::kActive:
      if (start) return {s, {}};
      if (e == E::kManualStop) return {S::kIdle, {A::kDropConnection, A::kStopConnectRetryTimer}};
      if (e == E::kConnectRetryTimerExpires) return {S::kConnect, {A::kConnect, A::kStartConnectRetryTimer}};
      if (e == E::kTcpCrAcked || e == E::kTcpConnectionConfirmed)
        return {S::kOpenSent, {A::kSendOpen, A::kStartHoldTimer, A::kStopConnectRetryTimer}};
      if (e == E::kTcpConnectionFails) return {S::kActive, {A::kStartConnectRetryTimer}};
      return to_idle_failure;
    case S::kOpenSent:
      if (start) return {s, {}};
      if (e == E::kManualStop) return {S::kIdle, {A::kDropConnection}, 6, 2};
      if (e == E::kHoldTimerExpires) return {S::kIdle, {A::kDropConnection, A::kStartIdleHoldTimer}, 4, 0};
      if (e == E::kTcpConnectionFails) return {S::kActive, {A::kDropConnection, A::kStartConnectRetryTimer}};
      if (e == E::kBgpOpen) return {S::kOpenConfirm, {A::kSendKeepalive, A::kStartKeepaliveTimer, A::kStartHoldTimer}};
      if (e == E::kBgpHeaderErr || e == E::kBgpOpenMsgErr || e == E::kUpdateMsgErr)
        return {S::kIdle, {A::kDropConnection}, 3, 1};
      if (e == E::kOpenCollisionDump) return {S::kIdle, {A::kDropConnection}, 6, 7};
      if (e == E::kNotifMsg || e == E::kNotifMsgVerErr) return to_idle_failure;
      return {S::kIdle, {A::kDropConnection}, 5, 1};
    case S::kOpenConfirm:
      if (start) return {s, {}};
      if (e == E::kManualStop) return {S::kIdle, {A::kDropConnection}, 6, 2};
      if (e == E::kHoldTimerExpires) return {S::kIdle, {A::kDropConnection}, 4, 0};
      if (e == E::kKeepaliveTimerExpires) return {S::kOpenConfirm, {A::kSendKeepalive, A::kStartKeepaliveTimer}};
      if (e == E::kTcpConnectionFails || e == E::kNotifMsg || e == E::kNotifMsgVerErr) return to_idle_failure;
      if (e == E::kBgpHeaderErr || e == E::kBgpOpenMsgErr || e == E::kUpdateMsgErr)
        return {S::kIdle, {A::kDropConnection}, 3, 1};
      if (e == E::kOpenCollisionDump) return {S::kIdle, {A::kDropConnection}, 6, 7};
      if (e == E::kKeepAliveMsg) return {S::kEstablished, {A::kSessionEstablished, A::kStartHoldTimer}};
      return {S::kIdle, {A::kDropConnection}, 5, 2};
    case S::kEstablished:
      if (start) return {s, {}};
      if (e == E::kManualStop) return {S::kIdle, {A::kDropConnection, A::kSessionDown}, 6, 2};
      if (e == E::kHoldTimerExpires) return {S::kIdle, {A::kDropConnection, A::kSessionDown}, 4, 0};
      if (e == E::kKeepaliveTimerExpires) return {S::kEstablished, {A::kSendKeepalive, A::kStartKeepaliveTimer}};
      if (e == E::kKeepAliveMsg || e == E::kUpdateMsg || e == E::kRouteRefreshMsg)
        return {S::kEstablished, {A::kStartHoldTimer}};
      if (e == E::kTcpConnectionFails || e == E::kNotifMsg || e == E::kNotifMsgVerErr)
        return {S::kIdle, {A::kDropConnection, A::kSessionDown, A::kStartIdleHoldTimer}};
      if (e == E::kBgpHeaderErr || e == E::kBgpOpenMsgErr || e == E::kUpdateMsgErr)
        return {S::kIdle, {A::kDropConnection, A::kSessionDown}, 3, 1};
      if (e == E::kOpenCollisionDump) return {S::kIdle, {A::kDropConnection, A::kSessionDown}, 6, 7};
      return {S::kIdle, {A::kDropConnection, A::kSessionDown}, 5, 3};
  }
  return {};
}

}  // namespace

TEST_CASE("FSM: every (state, event) pair", "[fsm][table]") {
  const FsmConfig config = Config();
  const wire::OpenMessage open = PeerOpen();
  int pairs = 0;
  for (int si = 0; si < kStateCount; ++si) {
    const S s = static_cast<S>(si);
    for (E e : AllEvents()) {
      ++pairs;
      DYNAMIC_SECTION(StateName(s) << " + " << EventName(e)) {
        const Expect want = Expected(s, e);
        const StepResult r = Step(config, InState(s), MakeEvent(e, &open));
        CHECK(StateName(r.next.state) == std::string(StateName(want.next)));
        CHECK(r.state_changed == (want.next != s));
        for (A a : want.must) {
          INFO("action " << ActionName(a));
          CHECK(Has(r, a));
        }
        const Action* sent = nullptr;
        for (const auto& a : r.actions)
          if (a.type == A::kSendNotification) sent = &a;
        if (want.notify_code < 0) {
          CHECK(sent == nullptr);
        } else {
          REQUIRE(sent != nullptr);
          CHECK(sent->notification.code == want.notify_code);
          CHECK(sent->notification.subcode == want.notify_subcode);
        }
        // A session-down is reported exactly when leaving Established.
        CHECK(Has(r, A::kSessionDown) == (s == S::kEstablished && r.next.state != S::kEstablished));
        // Established is entered only through OpenConfirm + KEEPALIVE.
        CHECK(Has(r, A::kSessionEstablished) == (s == S::kOpenConfirm && e == E::kKeepAliveMsg));
        // The session's in-place step (no copy of its Fsm) does the same.
        Fsm own = InState(s);
        const StepOutcome in_place = StepInPlace(config, own, MakeEvent(e, &open));
        CHECK(own.state == r.next.state);
        CHECK(own.connect_retry_counter == r.next.connect_retry_counter);
        CHECK(own.failures == r.next.failures);
        CHECK(own.established_at_ms == r.next.established_at_ms);
        CHECK(own.negotiated.has_value() == r.next.negotiated.has_value());
        CHECK(own.last_error == r.next.last_error);
        CHECK(in_place.state_changed == r.state_changed);
        CHECK(in_place.reason == r.reason);
        CHECK(in_place.jitter_used == r.jitter_used);
        CHECK(r.jitter_used == (Has(r, A::kStartConnectRetryTimer) || Has(r, A::kStartIdleHoldTimer)));
        CHECK(std::equal(in_place.actions.begin(), in_place.actions.end(), r.actions.begin(), r.actions.end()));
      }
    }
  }
  CHECK(pairs == kStateCount * 22);
}

TEST_CASE("FSM: a passive peer never connects out", "[fsm]") {
  FsmConfig c = Config();
  c.passive = true;
  auto r = Step(c, Fsm{}, Event::Of(E::kManualStart));
  CHECK(r.next.state == S::kActive);
  CHECK_FALSE(Has(r, A::kConnect));
  r = Step(c, r.next, Event::Of(E::kConnectRetryTimerExpires));
  CHECK(r.next.state == S::kActive);
  CHECK_FALSE(Has(r, A::kConnect));
  r = Step(c, r.next, Event::Of(E::kTcpConnectionConfirmed));
  CHECK(r.next.state == S::kOpenSent);
}

TEST_CASE("FSM: full handshake to Established and a hold-timer expiry", "[fsm]") {
  const FsmConfig c = Config();
  const wire::OpenMessage open = PeerOpen();
  Fsm f;
  auto r = Step(c, f, Event::Of(E::kManualStart));
  r = Step(c, r.next, Event::Of(E::kTcpCrAcked));
  CHECK(r.next.state == S::kOpenSent);
  Event ev = Event::Of(E::kBgpOpen);
  ev.open = &open;
  r = Step(c, r.next, ev);
  REQUIRE(r.next.state == S::kOpenConfirm);
  CHECK(r.next.negotiated->hold_time == 90);
  CHECK(r.next.negotiated->keepalive == 30);
  // The keepalive timer is hold/3.
  for (const auto& a : r.actions)
    if (a.type == A::kStartKeepaliveTimer) CHECK(a.duration == std::chrono::seconds(30));
  Event ka = Event::Of(E::kKeepAliveMsg);
  ka.now_ms = 5000;
  r = Step(c, r.next, ka);
  REQUIRE(r.next.state == S::kEstablished);
  CHECK(r.next.established_at_ms == 5000);
  r = Step(c, r.next, Event::Of(E::kHoldTimerExpires));
  CHECK(r.next.state == S::kIdle);
  CHECK(r.next.last_error == "hold timer expired");
  CHECK(r.next.failures == 1);
}

TEST_CASE("FSM: ManualStop sends the Cease it is given (RFC 9003 message)", "[fsm]") {
  const FsmConfig c = Config();
  Event stop = Event::Of(E::kManualStop);
  stop.notification = wire::NotificationMessage::Shutdown(wire::cease::kAdministrativeShutdown, "maintenance");
  const auto r = Step(c, InState(S::kEstablished), stop);
  REQUIRE(r.actions.front().type == A::kSendNotification);
  CHECK(r.actions.front().notification.ShutdownCommunication() == "maintenance");
  CHECK_FALSE(Has(r, A::kStartIdleHoldTimer));  // no automatic restart after an operator stop
}

TEST_CASE("FSM: a rejected OPEN sends its NOTIFICATION", "[fsm]") {
  const FsmConfig c = Config();
  wire::OpenMessage bad = PeerOpen();
  bad.hold_time = 2;
  Event ev = Event::Of(E::kBgpOpen);
  ev.open = &bad;
  const auto r = Step(c, InState(S::kOpenSent), ev);
  CHECK(r.next.state == S::kIdle);
  REQUIRE(r.actions.front().type == A::kSendNotification);
  CHECK(r.actions.front().notification == wire::NotificationMessage{2, 6, {}});
  CHECK(r.next.last_error.find("Unacceptable Hold Time") != std::string::npos);
}

TEST_CASE("FSM: exponential backoff with jitter, reset after a stable session", "[fsm][backoff]") {
  FsmConfig c = Config();
  c.connect_retry_s = 5;
  c.max_backoff_s = 120;
  using std::chrono::milliseconds;
  CHECK(Backoff(c, 1, 1.0) == milliseconds(5000));
  CHECK(Backoff(c, 2, 1.0) == milliseconds(10000));
  CHECK(Backoff(c, 3, 1.0) == milliseconds(20000));
  CHECK(Backoff(c, 6, 1.0) == milliseconds(120000));   // capped
  CHECK(Backoff(c, 40, 1.0) == milliseconds(120000));  // no overflow
  CHECK(Backoff(c, 2, 0.75) == milliseconds(7500));
  CHECK(Backoff(c, 2, 0.1) == milliseconds(7500));     // jitter is clamped to 0.75..1

  // A session that drops quickly keeps growing its backoff; one that was stable resets it.
  Fsm f = InState(S::kEstablished);
  f.failures = 3;
  f.established_at_ms = 0;
  Event quick = Event::Of(E::kHoldTimerExpires);
  quick.now_ms = 10'000;
  CHECK(Step(c, f, quick).next.failures == 4);
  Event later = Event::Of(E::kHoldTimerExpires);
  later.now_ms = 3'600'000;
  const auto r = Step(c, f, later);
  CHECK(r.next.failures == 1);
  for (const auto& a : r.actions)
    if (a.type == A::kStartIdleHoldTimer) CHECK(a.duration == milliseconds(5000));
}
