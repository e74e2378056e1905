#include "bgpd/control/event_hub.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"

namespace bagd::control {
// One subscriber's queue; every field is guarded by State::mu.
struct EventHub::Queue {
  uint32_t types = 0;
  std::deque<v1::Event> events;
  uint64_t dropped = 0;  // lost since the last EventsDropped was queued
  bool closed = false;   // the hub closed: the Stopping event is the last one
  bool cancelled = false;
  std::condition_variable cv;
};

struct EventHub::State {
  explicit State(EventHubOptions o) : options(std::move(o)) {}
  EventHubOptions options;
  mutable std::mutex mu;
  std::vector<std::shared_ptr<Queue>> queues;
  uint64_t sequence = 0;
  uint64_t published = 0;
  bool closed = false;

  int64_t Now() const {
    return options.now_unix_ms ? options.now_unix_ms() : absl::ToUnixMillis(absl::Now());
  }
  v1::Event Dropped(uint64_t count) const {
    v1::Event marker;
    marker.set_time_unix_ms(Now());
    marker.mutable_dropped()->set_count(count);
    return marker;
  }
};

EventHub::EventHub(EventHubOptions options) : state_(std::make_shared<State>(std::move(options))) {
  if (state_->options.queue_limit < 2) state_->options.queue_limit = 2;  // an event and a marker
}

EventHub::~EventHub() { Close("bagd is shutting down"); }

absl::StatusOr<std::unique_ptr<EventHub::Subscription>> EventHub::Subscribe(uint32_t types) {
  std::lock_guard<std::mutex> lock(state_->mu);
  if (state_->closed) return absl::UnavailableError("bagd is shutting down");
  if (state_->queues.size() >= state_->options.max_subscribers) {
    return absl::ResourceExhaustedError(absl::StrCat("bagd already streams events to ", state_->queues.size(),
                                                     " subscribers, the most it serves at once"));
  }
  auto queue = std::make_shared<Queue>();
  queue->types = types;
  state_->queues.push_back(queue);
  return std::unique_ptr<Subscription>(new Subscription(state_, std::move(queue), types));
}

void EventHub::Publish(v1::Event event) {
  std::lock_guard<std::mutex> lock(state_->mu);
  if (state_->closed) return;
  event.set_sequence(++state_->sequence);
  ++state_->published;
  if (event.time_unix_ms() == 0) event.set_time_unix_ms(state_->Now());
  const uint32_t type = EventTypeOf(event);
  const size_t limit = state_->options.queue_limit;
  for (const auto& q : state_->queues) {
    if (q->closed || q->cancelled || (q->types & type) == 0) continue;
    // Room for the event, and for the marker that must precede it after a loss.
    const size_t need = 1 + (q->dropped > 0 ? 1 : 0);
    if (q->events.size() + need > limit) {
      ++q->dropped;
      continue;
    }
    if (q->dropped > 0) {
      q->events.push_back(state_->Dropped(q->dropped));
      q->dropped = 0;
    }
    q->events.push_back(event);
    q->cv.notify_one();
  }
}

void EventHub::Close(const std::string& reason) {
  std::lock_guard<std::mutex> lock(state_->mu);
  if (state_->closed) return;
  state_->closed = true;
  for (const auto& q : state_->queues) {
    // Past the limit if need be: the last two messages say what was lost and why it ends.
    if (q->dropped > 0) {
      q->events.push_back(state_->Dropped(q->dropped));
      q->dropped = 0;
    }
    v1::Event last;
    last.set_sequence(++state_->sequence);
    last.set_time_unix_ms(state_->Now());
    last.mutable_stopping()->set_reason(reason);
    q->events.push_back(std::move(last));
    q->closed = true;
    q->cv.notify_all();
  }
}

size_t EventHub::subscribers() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->queues.size();
}

uint64_t EventHub::published() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->published;
}

EventHub::Subscription::~Subscription() {
  std::lock_guard<std::mutex> lock(state_->mu);
  auto& qs = state_->queues;
  qs.erase(std::remove(qs.begin(), qs.end(), queue_), qs.end());
}

void EventHub::Subscription::Cancel() {
  std::lock_guard<std::mutex> lock(state_->mu);
  queue_->cancelled = true;
  queue_->events.clear();
  queue_->cv.notify_all();
}

EventHub::Subscription::Wait EventHub::Subscription::Next(std::vector<v1::Event>* out,
                                                          std::chrono::milliseconds timeout, size_t max) {
  std::unique_lock<std::mutex> lock(state_->mu);
  Queue& q = *queue_;
  q.cv.wait_for(lock, timeout, [&] { return q.cancelled || q.closed || !q.events.empty() || q.dropped > 0; });
  if (q.cancelled) return Wait::kClosed;
  size_t taken = 0;
  while (!q.events.empty() && taken < std::max<size_t>(max, 1)) {
    out->push_back(std::move(q.events.front()));
    q.events.pop_front();
    ++taken;
  }
  // Everything queued is out and events were lost after it: say so now, not only when the
  // next event arrives (there may be none for a long time).
  if (q.events.empty() && q.dropped > 0 && taken < std::max<size_t>(max, 1)) {
    out->push_back(state_->Dropped(q.dropped));
    q.dropped = 0;
    ++taken;
  }
  if (taken > 0) return Wait::kEvents;
  return q.closed ? Wait::kClosed : Wait::kTimeout;
}

}  // namespace bagd::control
