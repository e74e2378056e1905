// One BGP TCP connection: a bounded read buffer split into messages with the codec's
// framer (never reading past a message), and a write queue with a byte limit.
// Runs on the daemon's io_context thread; reports to its owner through a Handler.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <deque>
#include <functional>
#include <memory>
#include <string>

#include "bgpd/wire/message.h"

namespace bagd::session {

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  struct Handler {
    // A whole message (header included). Return false to stop reading (connection going away).
    std::function<bool(wire::ByteSpan message)> on_message;
    // A header error found by the framer: the NOTIFICATION to send.
    std::function<void(const wire::DecodeError&)> on_frame_error;
    // The peer closed, or a read/write failed.
    std::function<void(const std::string& reason)> on_closed;
  };

  // Octets queued for writing beyond which the connection is dropped: a peer that does not
  // read its socket for this long is broken (the hold timer covers silent peers).
  static constexpr size_t kMaxQueuedBytes = 64 << 20;

  Connection(boost::asio::ip::tcp::socket socket, Handler handler);
  ~Connection();

  void Start();  // begins reading
  // The framer's context (extended message size once negotiated).
  void SetCodecContext(const wire::CodecContext& ctx) { ctx_ = ctx; }
  void Send(wire::Bytes message);
  // Sends what is queued, then closes (used after a NOTIFICATION). Idempotent.
  void CloseAfterFlush();
  void Close();  // now, dropping what is queued; no handler call

  bool open() const { return socket_.is_open(); }
  size_t queued_bytes() const { return queued_bytes_; }
  const boost::asio::ip::tcp::endpoint& local() const { return local_; }
  const boost::asio::ip::tcp::endpoint& remote() const { return remote_; }
  uint64_t bytes_in() const { return bytes_in_; }
  uint64_t bytes_out() const { return bytes_out_; }

 private:
  void Read();
  void OnRead(const boost::system::error_code& ec, size_t n);
  void WriteNext();
  void Fail(const std::string& reason);

  boost::asio::ip::tcp::socket socket_;
  Handler handler_;
  wire::CodecContext ctx_;
  boost::asio::ip::tcp::endpoint local_, remote_;
  // Bounded: one maximum-size message plus one read chunk.
  std::vector<uint8_t> buffer_;
  size_t filled_ = 0;
  std::deque<wire::Bytes> queue_;
  size_t queued_bytes_ = 0;
  bool writing_ = false;
  bool closing_ = false;
  bool reading_stopped_ = false;
  uint64_t bytes_in_ = 0, bytes_out_ = 0;
};

}  // namespace bagd::session
