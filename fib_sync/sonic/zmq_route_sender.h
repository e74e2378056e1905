// The producer end of SONiC's ZMQ route path: a ZMQ PUSH socket connected to the endpoint
// orchagent binds (as swss' ZmqProducerStateTable / ZmqClient: PUSH, linger 0, a send
// high-water mark), sending messages built by fib_sync/sonic/zmq_message.h.
//
// libzmq connects in the background and reconnects by itself when orchagent restarts;
// messages sent while no peer is connected wait in the socket's queue (up to the high-water
// mark) and go out once it is. What was in flight when the peer went away is lost: a monitor
// on the socket reports connects and disconnects, and the owner resends its state after a
// reconnect (PollEvents()).
//
// Backpressure: a send that finds the queue at the high-water mark (EAGAIN) waits up to
// `send_wait` for room, then gives up with kResourceExhausted (the caller keeps the entries
// and tries later); any other error is a refusal (kUnavailable). Both are counted.
// Not thread-safe; the owner's thread only.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace bagd::fib::sonic {

class ZmqRouteSender {
 public:
  struct Options {
    std::string endpoint = "tcp://127.0.0.1:8100";
    int high_water_mark = 10000;  // messages queued (swss: MQ_WATERMARK 10000)
    std::chrono::milliseconds send_wait{5000};
  };
  struct Counters {
    uint64_t messages = 0, bytes = 0;  // sent
    uint64_t hwm_waits = 0;   // sends that found the queue full and waited
    uint64_t hwm_full = 0;    // sends given up: still full after send_wait
    uint64_t refused = 0;     // sends that failed otherwise
    uint64_t connects = 0, disconnects = 0;  // the monitor's events
  };
  struct Events {
    bool reconnected = false;  // a connect that followed a disconnect (orchagent restarted)
  };

  static absl::StatusOr<std::unique_ptr<ZmqRouteSender>> Open(const Options& o);
  ~ZmqRouteSender();
  ZmqRouteSender(const ZmqRouteSender&) = delete;
  ZmqRouteSender& operator=(const ZmqRouteSender&) = delete;

  absl::Status Send(const std::string& message);
  // Reads the monitor's events without blocking.
  Events PollEvents();
  bool peer_connected() const { return connected_; }
  const Counters& counters() const { return counters_; }
  const Options& options() const { return options_; }

 private:
  explicit ZmqRouteSender(const Options& o) : options_(o) {}
  Options options_;
  void* ctx_ = nullptr;
  void* socket_ = nullptr;
  void* monitor_ = nullptr;
  bool connected_ = false;
  bool lost_ = false;  // a disconnect seen since the last connect
  Counters counters_;
};

}  // namespace bagd::fib::sonic
