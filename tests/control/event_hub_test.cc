// The event fan-out (bgpd/control/event_hub.h): per-subscriber bounded queues, the drop
// marker where events were lost, type filters, subscribers that go away, and Close().
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <thread>

#include "absl/strings/str_cat.h"
#include "bgpd/control/event_hub.h"

using namespace bagd::control;
using Wait = EventHub::Subscription::Wait;
using namespace std::chrono_literals;

namespace {

v1::Event NeighborEvent(const std::string& address, const std::string& to) {
  v1::Event e;
  e.mutable_neighbor()->set_address(address);
  e.mutable_neighbor()->set_to(to);
  return e;
}

v1::Event FibEvent(const std::string& operation) {
  v1::Event e;
  e.mutable_fib()->set_operation(operation);
  return e;
}

EventHubOptions Small(size_t limit) {
  EventHubOptions o;
  o.queue_limit = limit;
  o.now_unix_ms = [] { return int64_t{1714564800000}; };
  return o;
}

std::vector<v1::Event> Take(EventHub::Subscription& s, Wait* wait = nullptr) {
  std::vector<v1::Event> out;
  const Wait w = s.Next(&out, 0ms, 10000);
  if (wait) *wait = w;
  return out;
}

}  // namespace

TEST_CASE("event hub: every subscriber gets every event it asked for, in order, stamped", "[control][events]") {
  EventHub hub(Small(16));
  auto all = hub.Subscribe(kEventAll);
  auto fib_only = hub.Subscribe(kEventFib);
  REQUIRE(all.ok());
  REQUIRE(fib_only.ok());
  CHECK(hub.subscribers() == 2);

  hub.Publish(NeighborEvent("192.0.2.2", "Established"));
  hub.Publish(FibEvent("route 10.0.0.0/24 -> group 7"));
  v1::Event stamped = NeighborEvent("192.0.2.3", "Idle");
  stamped.set_time_unix_ms(42);  // a publisher's own time is kept
  hub.Publish(stamped);

  const auto got = Take(**all);
  REQUIRE(got.size() == 3);
  CHECK(got[0].neighbor().address() == "192.0.2.2");
  CHECK(got[0].sequence() == 1);
  CHECK(got[0].time_unix_ms() == 1714564800000);
  CHECK(got[1].fib().operation() == "route 10.0.0.0/24 -> group 7");
  CHECK(got[1].sequence() == 2);
  CHECK(got[2].sequence() == 3);
  CHECK(got[2].time_unix_ms() == 42);

  const auto fib = Take(**fib_only);
  REQUIRE(fib.size() == 1);
  CHECK(fib[0].sequence() == 2);  // the daemon-wide number: the gaps are other types
  CHECK(hub.published() == 3);

  Wait w;
  CHECK(Take(**all, &w).empty());
  CHECK(w == Wait::kTimeout);
}

TEST_CASE("event hub: a full queue drops, and the subscriber is told how many where they were lost",
          "[control][events]") {
  EventHub hub(Small(4));
  auto slow = hub.Subscribe(kEventAll);
  auto fast = hub.Subscribe(kEventAll);
  REQUIRE(slow.ok());
  REQUIRE(fast.ok());

  for (int i = 0; i < 10; ++i) {
    hub.Publish(FibEvent(absl::StrCat("op ", i)));
    Take(**fast);  // the fast one keeps up and loses nothing
  }
  // The slow one holds the first four; six were dropped.
  auto got = Take(**slow);
  REQUIRE(got.size() == 5);
  for (int i = 0; i < 4; ++i) CHECK(got[i].fib().operation() == absl::StrCat("op ", i));
  REQUIRE(got[4].has_dropped());
  CHECK(got[4].dropped().count() == 6);

  // Later events come after the marker, and a loss while the queue fills again is counted
  // from zero.
  for (int i = 10; i < 20; ++i) hub.Publish(FibEvent(absl::StrCat("op ", i)));
  got = Take(**slow);
  REQUIRE(got.size() == 5);
  CHECK(got[0].fib().operation() == "op 10");
  CHECK(got[3].fib().operation() == "op 13");
  CHECK(got[4].dropped().count() == 6);
}

TEST_CASE("event hub: the marker goes before the next event when the reader catches up in between",
          "[control][events]") {
  EventHub hub(Small(3));
  auto s = hub.Subscribe(kEventAll);
  REQUIRE(s.ok());
  for (int i = 0; i < 5; ++i) hub.Publish(FibEvent(absl::StrCat("op ", i)));  // 3 kept, 2 lost
  std::vector<v1::Event> first;
  REQUIRE((*s)->Next(&first, 0ms, /*max=*/1) == Wait::kEvents);  // reads one: room again
  CHECK(first.at(0).fib().operation() == "op 0");
  hub.Publish(FibEvent("op 5"));
  // Two were queued, one free slot: the marker needs it too, so op 5 is lost as well.
  hub.Publish(FibEvent("op 6"));
  auto got = Take(**s);
  REQUIRE(got.size() == 3);
  CHECK(got[0].fib().operation() == "op 1");
  CHECK(got[1].fib().operation() == "op 2");
  CHECK(got[2].dropped().count() == 4);  // op 3, 4, 5, 6
  hub.Publish(FibEvent("op 7"));
  got = Take(**s);
  REQUIRE(got.size() == 1);
  CHECK(got[0].fib().operation() == "op 7");
}

TEST_CASE("event hub: a subscriber that goes away leaves, a full one never slows the others", "[control][events]") {
  EventHub hub(Small(2));
  {
    auto gone = hub.Subscribe(kEventAll);
    REQUIRE(gone.ok());
    CHECK(hub.subscribers() == 1);
  }
  CHECK(hub.subscribers() == 0);
  hub.Publish(FibEvent("nobody listens"));  // fine with no subscriber
  CHECK(hub.published() == 1);

  // A stuck subscriber holds at most its queue, however much is published.
  auto stuck = hub.Subscribe(kEventAll);
  REQUIRE(stuck.ok());
  for (int i = 0; i < 100000; ++i) hub.Publish(FibEvent("x"));
  auto got = Take(**stuck);
  REQUIRE(got.size() == 3);  // two events and the marker
  CHECK(got[2].dropped().count() == 99998);
}

TEST_CASE("event hub: a subscription outliving its hub is safe", "[control][events]") {
  std::unique_ptr<EventHub::Subscription> s;
  {
    EventHub hub(Small(8));
    auto sub = hub.Subscribe(kEventAll);
    REQUIRE(sub.ok());
    s = *std::move(sub);
    hub.Publish(FibEvent("before"));
  }  // the hub closes as it goes
  Wait w;
  auto got = Take(*s, &w);
  REQUIRE(got.size() == 2);
  CHECK(got[0].fib().operation() == "before");
  CHECK(got[1].has_stopping());
  CHECK(Take(*s, &w).empty());
  CHECK(w == Wait::kClosed);
}

TEST_CASE("event hub: Close wakes a waiting reader with a last Stopping event, and takes no subscriber after",
          "[control][events]") {
  EventHub hub(Small(2));
  auto s = hub.Subscribe(kEventAll);
  REQUIRE(s.ok());
  for (int i = 0; i < 5; ++i) hub.Publish(FibEvent("x"));  // full, with a loss pending
  Take(**s);
  std::atomic<bool> woke{false};
  std::vector<v1::Event> got;
  Wait w = Wait::kTimeout;
  std::thread reader([&] {
    w = (*s)->Next(&got, 10s);
    woke = true;
  });
  std::this_thread::sleep_for(50ms);  // the reader is waiting (not a timer: the wake-up is tested)
  CHECK(!woke);
  hub.Close("bagd is shutting down");
  reader.join();
  CHECK(w == Wait::kEvents);
  REQUIRE(got.size() == 1);
  CHECK(got[0].stopping().reason() == "bagd is shutting down");
  got.clear();
  CHECK((*s)->Next(&got, 0ms) == Wait::kClosed);

  hub.Publish(FibEvent("after"));  // dropped quietly
  auto late = hub.Subscribe(kEventAll);
  CHECK(absl::IsUnavailable(late.status()));
}

TEST_CASE("event hub: Cancel wakes the reader (the client went away)", "[control][events]") {
  EventHub hub(Small(8));
  auto s = hub.Subscribe(kEventAll);
  REQUIRE(s.ok());
  Wait w = Wait::kTimeout;
  std::thread reader([&] {
    std::vector<v1::Event> got;
    w = (*s)->Next(&got, 10s);
  });
  std::this_thread::sleep_for(20ms);
  (*s)->Cancel();
  reader.join();
  CHECK(w == Wait::kClosed);
}

TEST_CASE("event hub: at most max_subscribers at once", "[control][events]") {
  EventHubOptions o = Small(8);
  o.max_subscribers = 2;
  EventHub hub(o);
  auto a = hub.Subscribe(kEventAll);
  auto b = hub.Subscribe(kEventAll);
  auto c = hub.Subscribe(kEventAll);
  CHECK(a.ok());
  CHECK(b.ok());
  REQUIRE(absl::IsResourceExhausted(c.status()));
  CHECK(c.status().message() == "bagd already streams events to 2 subscribers, the most it serves at once");
  a->reset();
  CHECK(hub.Subscribe(kEventAll).ok());
}

TEST_CASE("event types: names to a mask and back", "[control][events]") {
  CHECK(*ParseEventTypes({}) == kEventAll);
  CHECK(*ParseEventTypes({"neighbor", "fib"}) == (kEventNeighbor | kEventFib));
  auto bad = ParseEventTypes({"weights", "routes"});
  REQUIRE(absl::IsInvalidArgument(bad.status()));
  CHECK(bad.status().message() == "unknown event type \"routes\" (the types are neighbor, weights, fib, config, bfd)");
  CHECK(EventTypeNames(kEventWeights | kEventConfig) == std::vector<std::string>{"weights", "config"});
  v1::Event e;
  CHECK(EventTypeOf(e) == 0);
  e.mutable_config();
  CHECK(EventTypeOf(e) == kEventConfig);
}
