// Connection over a real loopback TCP pair: the write queue, Close() with a write in
// flight (issue 11 defect 1: the write completion popped a queue Close() had emptied), a
// peer that closes while we write, and no Handler call after Close().
#include "bgpd/session/connection.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <catch2/catch.hpp>

#include "wire/message.h"

namespace bagd::session {
namespace {

using boost::asio::ip::tcp;

// A connected pair: `ours` for the Connection, `theirs` for the test to play the peer.
struct Pair {
  boost::asio::io_context io;
  tcp::socket ours{io}, theirs{io};
  Pair() {
    tcp::acceptor acceptor(io, tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), 0));
    theirs.connect(acceptor.local_endpoint());
    ours = acceptor.accept();
  }
};

wire::Bytes Keepalive() {
  wire::Bytes b(19, 0xff);
  b[16] = 0;
  b[17] = 19;
  b[18] = 4;
  return b;
}

wire::Bytes Big(size_t n) {
  // An UPDATE-sized blob: the framer is not involved on the write side.
  return wire::Bytes(n, 0x5a);
}

struct Counts {
  int messages = 0, frame_errors = 0, closed = 0;
  std::string reason;
};

Connection::Handler Recording(std::shared_ptr<Counts> c) {
  Connection::Handler h;
  h.on_message = [c](wire::ByteSpan) {
    ++c->messages;
    return true;
  };
  h.on_frame_error = [c](const wire::DecodeError&) { ++c->frame_errors; };
  h.on_closed = [c](const std::string& r) {
    ++c->closed;
    c->reason = r;
  };
  return h;
}

TEST_CASE("Connection: Close() while a write is in flight releases the buffers once", "[connection]") {
  // The write below completes at once inside the kernel (a small message, an empty socket
  // buffer): its completion is queued with success, then Close() runs before it.
  Pair p;
  auto counts = std::make_shared<Counts>();
  auto c = std::make_shared<Connection>(std::move(p.ours), Recording(counts));
  c->Start();
  c->Send(Keepalive());
  c->Send(Keepalive());
  c->Close();
  CHECK(c->queued_messages() <= 1);  // only the message handed to the kernel stays
  c.reset();                         // the owner lets go; the completion still holds it
  p.io.run();
  CHECK(counts->closed == 0);  // Close() is the owner's own: no report
  CHECK(counts->messages == 0);
}

TEST_CASE("Connection: a write completes after the owner dropped and closed it, many times", "[connection]") {
  // The same race at scale, with writes that take several completions (the peer reads
  // slowly), closes at every point, and the owner dropping its reference at once.
  for (int round = 0; round < 200; ++round) {
    Pair p;
    auto counts = std::make_shared<Counts>();
    auto c = std::make_shared<Connection>(std::move(p.ours), Recording(counts));
    c->Start();
    for (int i = 0; i < 1 + round % 7; ++i) c->Send(Big(1000 + 30000 * (round % 5)));
    for (int i = 0; i < round % 3; ++i) p.io.poll_one();
    if (round % 2) {
      c->Close();
    } else {
      c->CloseAfterFlush();
    }
    c.reset();
    p.theirs.close();
    p.io.run();
    CHECK(counts->closed == 0);
  }
}

TEST_CASE("Connection: the peer closing while we write is reported once", "[connection]") {
  Pair p;
  auto counts = std::make_shared<Counts>();
  auto c = std::make_shared<Connection>(std::move(p.ours), Recording(counts));
  c->Start();
  p.theirs.set_option(boost::asio::socket_base::linger(true, 0));
  p.theirs.close();  // RST: our pending read and the next write both fail
  for (int i = 0; i < 50; ++i) c->Send(Big(60000));
  p.io.run();
  CHECK(counts->closed == 1);
  CHECK(!c->open());
  CHECK(c->queued_bytes() == 0);
  c->Send(Keepalive());  // after a failure: ignored, no second report
  p.io.run();
  CHECK(counts->closed == 1);
}

TEST_CASE("Connection: CloseAfterFlush sends what is queued, then closes", "[connection]") {
  Pair p;
  auto counts = std::make_shared<Counts>();
  auto c = std::make_shared<Connection>(std::move(p.ours), Recording(counts));
  c->Start();
  for (int i = 0; i < 100; ++i) c->Send(Keepalive());
  c->CloseAfterFlush();
  c->Send(Keepalive());  // refused: draining
  c.reset();
  p.io.run();
  std::vector<uint8_t> got(100 * 19 + 1);
  boost::system::error_code ec;
  const size_t n = boost::asio::read(p.theirs, boost::asio::buffer(got), ec);
  CHECK(n == 100 * 19);
  CHECK(ec == boost::asio::error::eof);
  CHECK(counts->closed == 0);
}

TEST_CASE("Connection: a draining peer that never reads is closed after the drain timeout", "[connection]") {
  Pair p;
  auto counts = std::make_shared<Counts>();
  p.theirs.set_option(boost::asio::socket_base::receive_buffer_size(4096));
  auto c = std::make_shared<Connection>(std::move(p.ours), Recording(counts));
  c->Start();
  // More than the socket buffers hold: the write stays pending.
  for (int i = 0; i < 400; ++i) c->Send(Big(60000));
  p.io.poll();
  REQUIRE(c->queued_messages() > 0);
  c->CloseAfterFlush();
  std::weak_ptr<Connection> weak = c;
  c.reset();
  // run() returns once the drain deadline closed it and every completion ran.
  const auto start = std::chrono::steady_clock::now();
  p.io.run();
  const auto took = std::chrono::steady_clock::now() - start;
  CHECK(weak.expired());
  CHECK(took >= Connection::kDrainTimeout - std::chrono::milliseconds(100));
  CHECK(took < Connection::kDrainTimeout + std::chrono::seconds(3));
  CHECK(counts->closed == 0);
}

TEST_CASE("Connection: queue over the limit closes and reports from a posted handler", "[connection]") {
  Pair p;
  auto counts = std::make_shared<Counts>();
  auto c = std::make_shared<Connection>(std::move(p.ours), Recording(counts));
  c->Start();
  // The peer does not read: the queue grows past kMaxQueuedBytes.
  const size_t chunk = 1 << 20;
  size_t sent = 0;
  while (sent <= Connection::kMaxQueuedBytes + chunk && c->open()) {
    c->Send(Big(chunk));
    sent += chunk;
    CHECK(counts->closed == 0);  // never from inside Send()
  }
  CHECK(!c->open());
  p.io.run();
  CHECK(counts->closed == 1);
  CHECK_THAT(counts->reason, Catch::Contains("not reading"));
}

TEST_CASE("Connection: Close() after an overflow cancels the posted report", "[connection]") {
  Pair p;
  auto counts = std::make_shared<Counts>();
  auto c = std::make_shared<Connection>(std::move(p.ours), Recording(counts));
  while (c->open()) c->Send(Big(1 << 20));
  c->Close();  // the owner reacted first
  p.io.run();
  CHECK(counts->closed == 0);
}

TEST_CASE("Connection: no message is delivered after the handler closed the connection", "[connection]") {
  Pair p;
  auto counts = std::make_shared<Counts>();
  std::shared_ptr<Connection> c;
  Connection::Handler h = Recording(counts);
  h.on_message = [&c, counts](wire::ByteSpan) {
    ++counts->messages;
    c->Close();
    c.reset();  // the owner drops it from inside its own handler
    return true;
  };
  c = std::make_shared<Connection>(std::move(p.ours), std::move(h));
  c->Start();
  wire::Bytes three;
  for (int i = 0; i < 3; ++i) {
    auto k = Keepalive();
    three.insert(three.end(), k.begin(), k.end());
  }
  boost::asio::write(p.theirs, boost::asio::buffer(three));
  p.io.run();
  CHECK(counts->messages == 1);
  CHECK(counts->closed == 0);
}

}  // namespace
}  // namespace bagd::session
