// The session layer and the routing core with a fake clock: a Speaker on a ManualClock,
// listening on a free loopback port, whose neighbors' connections the test (or the session
// fuzzer) makes from their 127.0.0.x addresses and writes to and reads from directly. The
// connect completes in the kernel; the speaker accepts it in Run() and hands it to the
// neighbor's Peer by its address, as in the daemon. Nothing sleeps: Run() polls the
// io_context until it is idle and Advance() moves the clock.
#pragma once

#include <boost/asio/io_context.hpp>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "bgpd/session/clock.h"
#include "bgpd/daemon/speaker.h"
#include "wire/message.h"

namespace bagd::session::testing {

using daemon::Speaker;

// Raw messages, built byte by byte so that anything can be sent.
wire::Bytes Message(uint8_t type, std::span<const uint8_t> body);
// An OPEN with a Multiprotocol capability per (afi, safi), 4-octet AS, and `extra_caps`
// (whole capability TLVs) appended.
wire::Bytes Open(uint32_t asn, uint32_t router_id, uint16_t hold_time,
                 std::vector<std::pair<uint16_t, uint8_t>> families = {{1, 1}},
                 std::span<const uint8_t> extra_caps = {});
wire::Bytes Keepalive();
// An IPv4 UPDATE: ORIGIN IGP, AS_PATH {asn}, NEXT_HOP, `extra_attrs` (whole attribute TLVs)
// and the /24s 10.a.b.0 for each (a, b).
wire::Bytes Update(uint32_t asn, uint32_t next_hop, std::vector<std::pair<uint8_t, uint8_t>> prefixes,
                   std::span<const uint8_t> extra_attrs = {}, std::span<const uint8_t> withdrawn = {});

class SessionHarness {
 public:
  // `config` in text format: a router { } block without `listen` (one on 127.0.0.1 with a
  // free port is added; nothing connects to it) and neighbors. Configures and starts.
  // `fib`: the speaker's FIB sink (convergence is tracked only with one); may be null.
  // `restart`: bagd's own restart as the FIB stage would report it (graceful restart).
  // `metrics`: the sessions' Prometheus series (none when null; the routing path's are none).
  // `events`: where the speaker publishes (WatchEvents); none when null.
  explicit SessionHarness(std::string_view config, rib::FibSink* fib = nullptr, fsm::RestartState restart = {},
                          SessionMetrics* metrics = nullptr, control::EventSink* events = nullptr);
  ~SessionHarness();

  // A connection from `neighbor` (a 127.0.0.x address) to the speaker's listener: our end's
  // descriptor (non-blocking).
  int Connect(const std::string& neighbor);
  // Writes all of `bytes` to our end, running the daemon's side while the socket is full.
  void Write(int fd, std::span<const uint8_t> bytes);
  // The whole messages bagd has sent on the connection so far (type, body).
  std::vector<std::pair<uint8_t, wire::Bytes>> Read(int fd);
  // True once bagd closed its end (after Read() drained what came before).
  bool PeerClosed(int fd);
  // Closes our end: with a reset (no TIME_WAIT left behind), or an orderly FIN.
  void Close(int fd, bool reset = true);
  // SIGHUP with `config` (same form as the constructor's; the listener is kept): the
  // speaker's answer.
  absl::Status Reload(std::string_view config);
  // Runs every handler that is ready, until none is.
  void Run();
  // Moves the clock on by `ms` (firing due timers), running the daemon after each.
  void Advance(int64_t ms);

  ManualClock& clock() { return clock_; }
  Speaker& speaker() { return *speaker_; }
  boost::asio::io_context& io() { return io_; }

 private:
  struct End {
    wire::Bytes in;  // octets read, not yet a whole message
    bool eof = false;
  };
  void Pump(int fd);

  std::string WithListen(std::string_view config) const;
  ManualClock clock_;  // before the speaker, whose timers it holds
  uint16_t port_ = 0;  // the speaker's listener
  boost::asio::io_context io_;
  std::unique_ptr<Speaker> speaker_;
  std::map<int, End> ends_;
};

}  // namespace bagd::session::testing
