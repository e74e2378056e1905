// What BMP (bmp/, docs/bmp.md) needs from a session that the rest of bagd does not keep:
// the UPDATEs exactly as the neighbor sent them (pre-policy Adj-RIB-In, RFC 7854 §5), both
// OPEN messages and the TCP endpoints (Peer Up, §4.10), and why the session ended (Peer
// Down, §4.9). Kept per Peer (BmpSessionFacts); the raw UPDATEs go to a BmpTap the RouteSink
// hands out, only while a station wants them.
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <cstdint>
#include <span>

#include "wire/byte_io.h"

namespace bagd::session {

class Peer;

class BmpTap {
 public:
  virtual ~BmpTap() = default;
  // An UPDATE on the Established session, whole (header included), before it is decoded.
  virtual void OnUpdateReceived(const Peer& peer, wire::ByteSpan update) = 0;
  // UPDATEs as queued to the Established session, whole, after export policy and the wire
  // rewrite: the post-policy Adj-RIB-Out (RFC 8671).
  virtual void OnUpdatesSent(const Peer& /*peer*/, std::span<const wire::Bytes> /*updates*/) {}
};

struct BmpSessionFacts {
  wire::Bytes sent_open;      // of the Established session
  wire::Bytes received_open;
  boost::asio::ip::tcp::endpoint local, remote;
  // Why the last Established session ended (RFC 7854 §4.9 reason): 1 we sent a
  // NOTIFICATION, 3 the neighbor did, 4 the connection closed without one.
  uint8_t down_reason = 4;
  wire::Bytes down_notification;  // whole NOTIFICATION message for reasons 1 and 3
};

}  // namespace bagd::session
