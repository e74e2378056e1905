#include "bgpd/session/connection.h"

#include <boost/asio/write.hpp>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace bagd::session {

namespace {
constexpr size_t kReadChunk = 64 * 1024;
}

Connection::Connection(boost::asio::ip::tcp::socket socket, Handler handler)
    : socket_(std::move(socket)), handler_(std::move(handler)) {
  boost::system::error_code ec;
  local_ = socket_.local_endpoint(ec);
  remote_ = socket_.remote_endpoint(ec);
  socket_.set_option(boost::asio::ip::tcp::no_delay(true), ec);
  buffer_.resize(wire::kMaxExtendedMessageSize + kReadChunk);
}

Connection::~Connection() { Close(); }

void Connection::Start() { Read(); }

void Connection::Read() {
  if (reading_stopped_ || !socket_.is_open()) return;
  const size_t room = std::min(kReadChunk, buffer_.size() - filled_);
  socket_.async_read_some(boost::asio::buffer(buffer_.data() + filled_, room),
                          [self = shared_from_this()](const boost::system::error_code& ec, size_t n) {
                            self->OnRead(ec, n);
                          });
}

void Connection::OnRead(const boost::system::error_code& ec, size_t n) {
  if (reading_stopped_) return;
  if (ec) {
    if (ec == boost::asio::error::operation_aborted) return;
    return Fail(ec == boost::asio::error::eof ? "connection closed by the peer"
                                              : absl::StrCat("read failed: ", ec.message()));
  }
  filled_ += n;
  bytes_in_ += n;
  size_t pos = 0;
  while (!reading_stopped_) {
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
  // Keep the unconsumed tail at the front; the buffer always has room for a whole message.
  if (pos > 0) {
    std::memmove(buffer_.data(), buffer_.data() + pos, filled_ - pos);
    filled_ -= pos;
  }
  Read();
}

void Connection::Send(wire::Bytes message) {
  if (!socket_.is_open() || closing_) return;
  queued_bytes_ += message.size();
  queue_.push_back(std::move(message));
  if (queued_bytes_ > kMaxQueuedBytes) {
    return Fail(absl::StrCat("write queue over ", kMaxQueuedBytes, " octets: the peer is not reading"));
  }
  if (!writing_) WriteNext();
}

void Connection::WriteNext() {
  if (queue_.empty() || !socket_.is_open()) {
    writing_ = false;
    if (closing_) Close();
    return;
  }
  writing_ = true;
  boost::asio::async_write(socket_, boost::asio::buffer(queue_.front()),
                           [self = shared_from_this()](const boost::system::error_code& ec, size_t n) {
                             if (ec) {
                               if (ec != boost::asio::error::operation_aborted) {
                                 self->Fail(absl::StrCat("write failed: ", ec.message()));
                               }
                               return;
                             }
                             self->bytes_out_ += n;
                             self->queued_bytes_ -= self->queue_.front().size();
                             self->queue_.pop_front();
                             self->WriteNext();
                           });
}

void Connection::CloseAfterFlush() {
  reading_stopped_ = true;
  if (closing_) return;
  closing_ = true;
  if (!writing_) Close();
}

void Connection::Close() {
  reading_stopped_ = true;
  if (!socket_.is_open()) return;
  boost::system::error_code ec;
  socket_.shutdown(boost::asio::ip::tcp::socket::shutdown_both, ec);
  socket_.close(ec);
  queue_.clear();
  queued_bytes_ = 0;
}

void Connection::Fail(const std::string& reason) {
  const bool was_open = socket_.is_open() && !reading_stopped_;
  Close();
  if (was_open && handler_.on_closed) handler_.on_closed(reason);
}

}  // namespace bagd::session
