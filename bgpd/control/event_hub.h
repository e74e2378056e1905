// Events for WatchEvents (control.proto, docs/control-api.md "Watching events"): the stages
// that know what happened publish through an EventSink; the EventHub fans each event out to
// the subscribers (WatchEvents streams), each with a bounded queue of its own.
//
// Publish runs on the daemon's io thread and must never wait for a subscriber: it takes a
// short lock, appends to each matching queue and wakes its reader. A full queue drops the
// event and counts it; the subscriber gets one EventsDropped where the events were lost.
// The queues, not the io thread, absorb a slow reader; a stuck one costs at most its
// queue.
//
// Lifetime: the hub's state is shared by the hub and its subscriptions, so either may go
// first. Close() (bagd stopping) ends every subscription: Next returns kClosed once the
// queue is drained, and the hub accepts no subscriber after it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "bgpd/control/control.pb.h"
#include "bgpd/control/event_types.h"

namespace bagd::control {

// What a stage publishes to. Implementations are thread-safe and do not block.
class EventSink {
 public:
  virtual ~EventSink() = default;
  // `event` has its kind set; the sink stamps `sequence`, and `time_unix_ms` when it is 0.
  virtual void Publish(v1::Event event) = 0;
};

struct EventHubOptions {
  size_t queue_limit = 1024;   // events per subscriber before it loses some
  size_t max_subscribers = 16;
  // The time stamped on events published without one (tests inject a fixed clock).
  std::function<int64_t()> now_unix_ms;
};

class EventHub final : public EventSink {
  struct State;
  struct Queue;

 public:
  class Subscription {
   public:
    ~Subscription();  // leaves the hub (if it is still there)
    Subscription(const Subscription&) = delete;
    Subscription& operator=(const Subscription&) = delete;

    enum class Wait { kEvents, kTimeout, kClosed };
    // Moves what is queued (at most `max`, in order; an EventsDropped where events were
    // lost) into `out`. Waits up to `timeout` while nothing is queued. kClosed: the hub
    // was closed and everything before that was taken.
    Wait Next(std::vector<v1::Event>* out, std::chrono::milliseconds timeout, size_t max = 256);
    // Wakes a reader waiting in Next (the client went away); Next returns kClosed after.
    void Cancel();
    uint32_t types() const { return types_; }

   private:
    friend class EventHub;
    Subscription(std::shared_ptr<State> state, std::shared_ptr<Queue> queue, uint32_t types)
        : state_(std::move(state)), queue_(std::move(queue)), types_(types) {}
    std::shared_ptr<State> state_;
    std::shared_ptr<Queue> queue_;
    uint32_t types_;
  };

  explicit EventHub(EventHubOptions options = {});
  ~EventHub() override;

  // A new subscriber for the `types` mask. ResourceExhausted past max_subscribers;
  // Unavailable after Close().
  absl::StatusOr<std::unique_ptr<Subscription>> Subscribe(uint32_t types);
  void Publish(v1::Event event) override;
  // bagd is stopping: every subscriber gets a last Stopping event (room is kept for it)
  // and then kClosed. Idempotent.
  void Close(const std::string& reason);

  size_t subscribers() const;
  uint64_t published() const;  // events published (whether anybody wanted them)

 private:
  std::shared_ptr<State> state_;
};

}  // namespace bagd::control
