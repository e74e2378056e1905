// One BMP monitoring station: bagd connects out to it (RFC 7854 §3.2), keeps a bounded send
// buffer, and reconnects with backoff. Routing never waits for a station: Send() appends to
// the buffer and returns; a station whose buffer would pass its bound is dropped (counted),
// and the Monitor re-syncs it from the current tables when it is back.
//
// Lifetime: every completion handler captures a watch on the Station's token and the
// connection's generation; a handler that runs after the Station is destroyed, or after the
// connection it was started for was closed, touches nothing. Callbacks (up, down, drained)
// are posted or called from handlers, never from inside Send().
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "net/ip_prefix.h"
#include "wire/byte_io.h"

namespace bagd::bmp {

class BmpMetrics;

// Which tables a station gets (config `views`).
struct Views {
  bool pre_policy = false;        // Adj-RIB-In as received (RFC 7854, L=0)
  bool post_policy = false;       // Adj-RIB-In after import policy (L=1)
  bool loc_rib = false;           // RFC 9069
  bool adj_rib_out_pre = false;   // RFC 8671, O=1 L=0
  bool adj_rib_out_post = false;  // RFC 8671, O=1 L=1
  bool any() const { return pre_policy || post_policy || loc_rib || adj_rib_out_pre || adj_rib_out_post; }
  friend bool operator==(const Views&, const Views&) = default;
};

struct StationConfig {
  net::IpAddress address;
  uint16_t port = 1790;
  Views views;
  uint32_t statistics_interval_s = 0;  // 0: no Statistics Reports
  size_t max_buffer_bytes = 64u << 20;
  // Reconnect backoff: from min, doubling, up to max (jittered 75-100 %).
  uint32_t retry_min_ms = 1000;
  uint32_t retry_max_ms = 30000;
  std::string Name() const;  // "192.0.2.9:1790", "[2001:db8::9]:1790"
  friend bool operator==(const StationConfig&, const StationConfig&) = default;
};

class Station {
 public:
  enum class State { kIdle, kConnecting, kUp, kBackoff, kStopping, kStopped };
  struct Callbacks {
    std::function<void()> up;       // connected: send Initiation, Peer Ups, the tables
    std::function<void()> down;     // lost (or dropped): nothing more is buffered until up
    std::function<void()> drained;  // the buffer went below the low-water mark after WantDrained()
  };
  Station(boost::asio::io_context& io, StationConfig config, Callbacks callbacks, BmpMetrics* metrics = nullptr);
  ~Station();
  Station(const Station&) = delete;
  Station& operator=(const Station&) = delete;

  void Start();
  // No callback is called from now on (the owner of what they capture is going away; the
  // station may still be writing its Termination).
  void ClearCallbacks() { callbacks_ = Callbacks{}; }
  // Appends one or more whole BMP messages. Nothing when not up. Returns false when the
  // station is not up or was dropped because the buffer would pass its bound (then `down`
  // follows from a posted handler).
  bool Send(wire::ByteSpan messages);
  // Planned stop (RFC 7854 §4.5): `termination` goes last, the connection closes once it is
  // written (or after `grace`), and the station does not reconnect.
  void Stop(wire::ByteSpan termination, std::chrono::milliseconds grace = std::chrono::milliseconds(1000));

  // Octets accepted and not yet written to the socket.
  size_t buffered() const { return pending_.size() + writing_.size() - written_; }
  // Below the mark a table sync may add its next slice (a quarter of the bound, at most 4 MiB).
  bool below_low_water() const { return buffered() < low_water(); }
  // `drained` is called once the buffer goes below the low-water mark.
  void WantDrained() { want_drained_ = true; }

  State state() const { return state_; }
  bool up() const { return state_ == State::kUp; }
  const StationConfig& config() const { return config_; }
  const std::string& name() const { return name_; }
  const std::string& last_error() const { return last_error_; }
  // When the current connection came up (wall clock); meaningless unless up().
  std::chrono::system_clock::time_point up_since() const { return up_since_; }

  struct Counters {
    uint64_t messages = 0;      // BMP messages accepted into the buffer
    uint64_t bytes = 0;         // octets written to the socket
    uint64_t drops = 0;         // dropped for a full buffer
    uint64_t reconnects = 0;    // connections made after the first
    uint64_t connects = 0;      // connections made
    uint64_t failures = 0;      // connect failures and lost connections
  };
  const Counters& counters() const { return counters_; }
  // Counted by the monitor (one call per message it hands over with Send).
  void CountMessages(uint64_t n);

 private:
  size_t low_water() const { return std::min<size_t>(config_.max_buffer_bytes / 4, 4u << 20); }
  void Connect();
  void Read();
  void WriteMore();
  // The connection ended (`why`); reconnect after the backoff unless stopping.
  void Lost(const std::string& why, bool dropped);
  void CloseSocket();
  void ScheduleReconnect();
  void SetState(State s);

  boost::asio::io_context& io_;
  StationConfig config_;
  std::string name_;
  Callbacks callbacks_;
  BmpMetrics* metrics_;
  boost::asio::ip::tcp::socket socket_;
  boost::asio::steady_timer timer_;
  State state_ = State::kIdle;
  uint64_t generation_ = 0;  // the connection handlers were started for
  uint32_t attempts_ = 0;    // failures since the last good connection
  bool ever_up_ = false;
  bool want_drained_ = false;
  wire::Bytes pending_;  // accepted, not yet handed to the socket
  wire::Bytes writing_;  // handed to async_write_some, from written_ on
  size_t written_ = 0;
  bool write_in_flight_ = false;
  std::array<uint8_t, 512> read_buffer_{};
  std::string last_error_;
  std::chrono::system_clock::time_point up_since_{};
  Counters counters_;
  std::shared_ptr<char> token_ = std::make_shared<char>(0);
};

const char* StationStateName(Station::State s);

}  // namespace bagd::bmp
