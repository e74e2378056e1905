#include "fib_sync/sonic/zmq_route_sender.h"

#include <zmq.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace bagd::fib::sonic {

namespace {
std::atomic<uint64_t> monitor_serial{0};
}  // namespace

absl::StatusOr<std::unique_ptr<ZmqRouteSender>> ZmqRouteSender::Open(const Options& o) {
  std::unique_ptr<ZmqRouteSender> s(new ZmqRouteSender(o));
  s->ctx_ = zmq_ctx_new();
  if (s->ctx_ == nullptr) return absl::InternalError(absl::StrCat("zmq: no context: ", zmq_strerror(errno)));
  s->socket_ = zmq_socket(s->ctx_, ZMQ_PUSH);
  if (s->socket_ == nullptr) return absl::InternalError(absl::StrCat("zmq: no socket: ", zmq_strerror(errno)));
  const int linger = 0;  // closing never waits for a peer that is gone
  zmq_setsockopt(s->socket_, ZMQ_LINGER, &linger, sizeof linger);
  const int hwm = o.high_water_mark;
  zmq_setsockopt(s->socket_, ZMQ_SNDHWM, &hwm, sizeof hwm);
  const std::string inproc = absl::StrCat("inproc://bagd-zmq-monitor-", monitor_serial.fetch_add(1));
  if (zmq_socket_monitor(s->socket_, inproc.c_str(), ZMQ_EVENT_CONNECTED | ZMQ_EVENT_DISCONNECTED) != 0) {
    return absl::InternalError(absl::StrCat("zmq: monitor: ", zmq_strerror(errno)));
  }
  s->monitor_ = zmq_socket(s->ctx_, ZMQ_PAIR);
  if (s->monitor_ == nullptr || zmq_connect(s->monitor_, inproc.c_str()) != 0) {
    return absl::InternalError(absl::StrCat("zmq: monitor: ", zmq_strerror(errno)));
  }
  zmq_setsockopt(s->monitor_, ZMQ_LINGER, &linger, sizeof linger);
  if (zmq_connect(s->socket_, o.endpoint.c_str()) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("zmq endpoint '", o.endpoint, "': ", zmq_strerror(errno), " (expected e.g. tcp://127.0.0.1:8100)"));
  }
  return s;
}

ZmqRouteSender::~ZmqRouteSender() {
  if (socket_ != nullptr) {
    zmq_socket_monitor(socket_, nullptr, 0);
    zmq_close(socket_);
  }
  if (monitor_ != nullptr) zmq_close(monitor_);
  if (ctx_ != nullptr) zmq_ctx_term(ctx_);
}

absl::Status ZmqRouteSender::Send(const std::string& message) {
  bool waited = false;
  const auto deadline = std::chrono::steady_clock::now() + options_.send_wait;
  for (;;) {
    if (zmq_send(socket_, message.data(), message.size(), ZMQ_DONTWAIT) >= 0) {
      ++counters_.messages;
      counters_.bytes += message.size();
      return absl::OkStatus();
    }
    const int err = zmq_errno();
    if (err == EINTR) continue;
    if (err != EAGAIN) {
      ++counters_.refused;
      return absl::UnavailableError(absl::StrCat("zmq ", options_.endpoint, " refused a message of ", message.size(),
                                                 " bytes: ", zmq_strerror(err)));
    }
    if (!waited) ++counters_.hwm_waits;
    waited = true;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      ++counters_.hwm_full;
      return absl::ResourceExhaustedError(
          absl::StrCat("zmq ", options_.endpoint, ": ", options_.high_water_mark,
                       " messages queued (the high-water mark) and orchagent took none for ",
                       options_.send_wait.count(), " ms; kept for later"));
    }
    zmq_pollitem_t item{socket_, 0, ZMQ_POLLOUT, 0};
    zmq_poll(&item, 1, static_cast<long>(left.count()));
  }
}

ZmqRouteSender::Events ZmqRouteSender::PollEvents() {
  Events ev;
  for (;;) {
    zmq_msg_t head;
    zmq_msg_init(&head);
    if (zmq_msg_recv(&head, monitor_, ZMQ_DONTWAIT) < 0) {
      zmq_msg_close(&head);
      break;
    }
    uint16_t event = 0;
    if (zmq_msg_size(&head) >= sizeof event) std::memcpy(&event, zmq_msg_data(&head), sizeof event);
    const bool more = zmq_msg_more(&head);
    zmq_msg_close(&head);
    if (more) {  // the endpoint's address
      zmq_msg_t addr;
      zmq_msg_init(&addr);
      zmq_msg_recv(&addr, monitor_, 0);
      zmq_msg_close(&addr);
    }
    if (event == ZMQ_EVENT_CONNECTED) {
      ++counters_.connects;
      connected_ = true;
      if (lost_) ev.reconnected = true;
      lost_ = false;
    } else if (event == ZMQ_EVENT_DISCONNECTED) {
      ++counters_.disconnects;
      connected_ = false;
      lost_ = true;
    }
  }
  return ev;
}

}  // namespace bagd::fib::sonic
