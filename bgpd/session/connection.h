// One BGP TCP connection: a bounded read buffer split into messages with the codec's
// framer (never reading past a message), and a write queue with a byte limit.
// Runs on the daemon's io_context thread; reports to its owner through a Handler.
//
// Lifetime rules (every completion handler may run after the state it touches changed):
// - every pending operation holds a shared_ptr to the Connection, so its buffers and queue
//   live until the last completion has run, whoever dropped the connection;
// - the messages a write is sending stay at the front of the queue until that write's
//   completion pops them; Close() drops only the messages not yet handed to the kernel;
// - once closed (Close(), or a failure reported through on_closed), no Handler function is
//   called again: the owner may be gone.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <string>

#include "wire/message.h"

namespace bagd::session {

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  struct Handler {
    // A whole message (header included). Return false to stop reading (connection going away).
    std::function<bool(wire::ByteSpan message)> on_message;
    // A header error found by the framer: the NOTIFICATION to send.
    std::function<void(const wire::DecodeError&)> on_frame_error;
    // The peer closed, or a read/write failed. Called at most once, and never after Close().
    std::function<void(const std::string& reason)> on_closed;
  };

  // Octets queued for writing beyond which the connection is dropped: a peer that does not
  // read its socket for this long is broken (the hold timer covers silent peers).
  static constexpr size_t kMaxQueuedBytes = 64 << 20;
  // One write hands the kernel up to this many queued messages at once (writev).
  static constexpr size_t kMaxMessagesPerWrite = 64;

  Connection(boost::asio::ip::tcp::socket socket, Handler handler);
  ~Connection();

  void Start();  // begins reading
  // The framer's context (extended message size once negotiated).
  void SetCodecContext(const wire::CodecContext& ctx) { ctx_ = ctx; }
  // Queues a message. Never calls the Handler from inside: a queue over kMaxQueuedBytes
  // closes the connection and reports on_closed from a posted handler (unless the owner
  // has called Close() by then).
  void Send(wire::Bytes message);
  // Sends what is queued, then closes (used after a NOTIFICATION). Idempotent. A peer that
  // does not take the queued octets within kDrainTimeout is closed on anyway.
  void CloseAfterFlush();
  static constexpr std::chrono::seconds kDrainTimeout{5};
  void Close();  // now, dropping what is queued; no handler call after it

  bool open() const { return socket_.is_open(); }
  size_t queued_bytes() const { return queued_bytes_; }
  size_t queued_messages() const { return queue_.size(); }
  const boost::asio::ip::tcp::endpoint& local() const { return local_; }
  const boost::asio::ip::tcp::endpoint& remote() const { return remote_; }
  uint64_t bytes_in() const { return bytes_in_; }
  // Socket reads that delivered octets so far: the messages handed to on_message between two
  // changes of it came in one read (arrived together).
  uint64_t reads() const { return reads_; }
  uint64_t bytes_out() const { return bytes_out_; }

 private:
  enum class State {
    kOpen,      // reading and writing
    kDraining,  // CloseAfterFlush: writing what is queued, then Close()
    kFailing,   // socket closed by a failure found inside Send(); on_closed is posted
    kClosed,    // socket closed; completions still pending only release their buffers
  };
  bool closed() const { return state_ == State::kClosed || state_ == State::kFailing; }
  void Read();
  void OnRead(const boost::system::error_code& ec, size_t n);
  void WriteNext();
  void OnWrite(const boost::system::error_code& ec, size_t n);
  void Fail(const std::string& reason);
  // Fail() from a call of the owner's (Send): closed now, on_closed posted.
  void FailLater(std::string reason);

  boost::asio::ip::tcp::socket socket_;
  Handler handler_;
  wire::CodecContext ctx_;
  boost::asio::ip::tcp::endpoint local_, remote_;
  State state_ = State::kOpen;
  // Bounded: one maximum-size message plus one read chunk.
  std::vector<uint8_t> buffer_;
  size_t filled_ = 0;
  bool reading_stopped_ = false;  // on_message said stop, or a framing error
  // queue_[0, in_flight_) is being written by the pending async_write; the rest waits.
  std::deque<wire::Bytes> queue_;
  size_t in_flight_ = 0;
  size_t queued_bytes_ = 0;
  uint64_t bytes_in_ = 0, bytes_out_ = 0;
  uint64_t reads_ = 0;
  std::unique_ptr<boost::asio::steady_timer> drain_deadline_;  // only while draining
};

}  // namespace bagd::session
