#include "bgpd/session/connection.h"

#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <cstring>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"

namespace bagd::session {

namespace {
// One read completion's work is bounded by this: the event loop's timers (KEEPALIVEs, hold
// timers) run only between the completions queued in one turn, and while a full table comes
// in every session has one queued, so a turn is up to sessions x this. At 64 KiB and 128
// peers that turn was the whole 1M-path ingest, and KEEPALIVEs were late by as long
// (docs/benchmarks.md, W4); at 16 KiB it is a quarter of that, and the extra reads cost
// nothing measurable (a system call per 16 KiB).
constexpr size_t kReadChunk = 16 * 1024;
}

Connection::Connection(boost::asio::ip::tcp::socket socket, Handler handler)
    : socket_(std::move(socket)), handler_(std::move(handler)) {
  boost::system::error_code ec;
  local_ = socket_.local_endpoint(ec);
  remote_ = socket_.remote_endpoint(ec);
  socket_.set_option(boost::asio::ip::tcp::no_delay(true), ec);
  buffer_.resize(wire::kMaxExtendedMessageSize + kReadChunk);
}

// No operation can be pending here: each holds a shared_ptr to this.
Connection::~Connection() {
  boost::system::error_code ec;
  socket_.close(ec);
}

void Connection::Start() { Read(); }

void Connection::Read() {
  if (closed() || reading_stopped_) return;
  const size_t room = std::min(kReadChunk, buffer_.size() - filled_);
  socket_.async_read_some(boost::asio::buffer(buffer_.data() + filled_, room),
                          [self = shared_from_this()](const boost::system::error_code& ec, size_t n) {
                            self->OnRead(ec, n);
                          });
}

void Connection::OnRead(const boost::system::error_code& ec, size_t n) {
  // Closed or told to stop since the read was started: the bytes are not ours to deliver.
  if (closed() || reading_stopped_) return;
  if (ec) {
    if (ec == boost::asio::error::operation_aborted) return;
    return Fail(ec == boost::asio::error::eof ? "connection closed by the peer"
                                              : absl::StrCat("read failed: ", ec.message()));
  }
  filled_ += n;
  bytes_in_ += n;
  ++reads_;
  size_t pos = 0;
  // Each handler call may close this connection (and its owner may drop it; `self` in the
  // read completion keeps it alive): check before every message.
  while (!closed() && !reading_stopped_) {
    const wire::Frame f = wire::NextFrame(wire::ByteSpan(buffer_.data() + pos, filled_ - pos), ctx_);
    if (f.kind == wire::Frame::kNeedMore) break;
    if (f.kind == wire::Frame::kError) {
      reading_stopped_ = true;
      if (handler_.on_frame_error) handler_.on_frame_error(f.error);
      return;
    }
    const wire::ByteSpan msg(buffer_.data() + pos, f.size);
    pos += f.size;
    if (!handler_.on_message(msg)) {
      reading_stopped_ = true;
      return;
    }
  }
  if (closed() || reading_stopped_) return;
  // Keep the unconsumed tail at the front; the buffer always has room for a whole message.
  if (pos > 0) {
    std::memmove(buffer_.data(), buffer_.data() + pos, filled_ - pos);
    filled_ -= pos;
  }
  Read();
}

void Connection::Send(wire::Bytes message) {
  if (state_ != State::kOpen) return;
  queued_bytes_ += message.size();
  queue_.push_back(std::move(message));
  if (queued_bytes_ > kMaxQueuedBytes) {
    return FailLater(absl::StrCat("write queue over ", kMaxQueuedBytes, " octets: the peer is not reading"));
  }
  if (in_flight_ == 0) WriteNext();
}

void Connection::WriteNext() {
  if (closed()) return;
  if (queue_.empty()) {
    if (state_ == State::kDraining) Close();
    return;
  }
  // Everything queued so far (up to a bound) in one writev: a burst of UPDATEs costs one
  // system call, not one per message.
  absl::InlinedVector<boost::asio::const_buffer, 8> buffers;
  in_flight_ = std::min(queue_.size(), kMaxMessagesPerWrite);
  for (size_t i = 0; i < in_flight_; ++i) buffers.push_back(boost::asio::buffer(queue_[i]));
  boost::asio::async_write(socket_, buffers,
                           [self = shared_from_this()](const boost::system::error_code& ec, size_t n) {
                             self->OnWrite(ec, n);
                           });
}

void Connection::OnWrite(const boost::system::error_code& ec, size_t n) {
  // The written messages are released here and nowhere else: Close() left them in place,
  // since the kernel may have been reading them until this completion.
  for (size_t i = 0; i < in_flight_; ++i) {
    queued_bytes_ -= queue_.front().size();
    queue_.pop_front();
  }
  in_flight_ = 0;
  if (closed()) return;
  if (ec) {
    if (ec != boost::asio::error::operation_aborted) Fail(absl::StrCat("write failed: ", ec.message()));
    return;
  }
  bytes_out_ += n;
  WriteNext();
}

void Connection::CloseAfterFlush() {
  if (state_ != State::kOpen) return;
  state_ = State::kDraining;
  reading_stopped_ = true;
  if (in_flight_ == 0) return WriteNext();
  // The timer holds no reference: a connection that finished draining is gone, and the
  // expiry finds nothing to close.
  drain_deadline_ = std::make_unique<boost::asio::steady_timer>(socket_.get_executor(), kDrainTimeout);
  drain_deadline_->async_wait([weak = weak_from_this()](const boost::system::error_code& ec) {
    if (ec) return;
    if (auto self = weak.lock()) self->Close();
  });
}

void Connection::Close() {
  if (state_ == State::kClosed) return;
  state_ = State::kClosed;  // also cancels a posted failure report (kFailing)
  reading_stopped_ = true;
  boost::system::error_code ec;
  socket_.shutdown(boost::asio::ip::tcp::socket::shutdown_both, ec);
  socket_.close(ec);  // pending operations complete with operation_aborted
  if (drain_deadline_) drain_deadline_->cancel();
  // What was not handed to the kernel goes now; the in-flight messages at the front stay
  // until their completion runs.
  while (queue_.size() > in_flight_) {
    queued_bytes_ -= queue_.back().size();
    queue_.pop_back();
  }
}

void Connection::FailLater(std::string reason) {
  Close();
  state_ = State::kFailing;
  boost::asio::post(socket_.get_executor(), [self = shared_from_this(), reason = std::move(reason)] {
    if (self->state_ != State::kFailing) return;  // the owner closed it meanwhile
    self->state_ = State::kClosed;
    if (self->handler_.on_closed) self->handler_.on_closed(reason);
  });
}

void Connection::Fail(const std::string& reason) {
  // A failure while draining (after CloseAfterFlush) is not reported: the owner has already
  // let the connection go.
  const bool report = state_ == State::kOpen;
  Close();
  if (report && handler_.on_closed) handler_.on_closed(reason);
}

}  // namespace bagd::session
