// The BFD engine: every session's transmission and detection on a thread of its own, with
// its own io_context, so that nothing the event thread does (a 1M-path ingest, a table dump,
// a FIB flush) delays a packet or a detection. UDP transport:
//   single hop (RFC 5881): destination port 3784, sent with TTL / hop limit 255, and a
//     packet received with anything else is dropped (§5);
//   multihop (RFC 5883): destination port 4784, no TTL check; sessions are told apart by
//     their discriminators, or by the addresses while the peer does not know ours yet.
// Source ports are in 49152..65535 (RFC 5881 §4), one per session, kept for its life.
//
// The public methods may be called from any thread: they post to the engine's thread.
// State changes are reported through EngineOptions::on_change, called on the engine's
// thread; the receiver hands them to its own thread (bgpd/daemon/bfd_stage posts them to the
// event thread).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include "absl/status/status.h"
#include "bfd/packet.h"
#include "bfd/session_fsm.h"
#include "net/ip_prefix.h"

namespace bagd::bfd {

inline constexpr uint16_t kSingleHopPort = 3784;  // RFC 5881 §4
inline constexpr uint16_t kMultihopPort = 4784;   // RFC 5883 §5

// One session as configured.
struct SessionSpec {
  net::IpAddress peer;
  std::optional<net::IpAddress> local;  // source address; default: the kernel's choice
  bool multihop = false;
  SessionConfig config;
  bool admin_down = false;
  // Which BGP neighbor it serves (for logs and bagctl); usually the peer address.
  std::string name;
};

// What `bagctl show bfd` shows of a session.
struct SessionStatus {
  SessionSpec spec;
  State state = State::kDown;
  State remote_state = State::kDown;
  uint32_t local_discr = 0, remote_discr = 0;
  Diag local_diag = Diag::kNone, remote_diag = Diag::kNone;
  uint32_t tx_interval_us = 0;     // negotiated, before jitter
  int64_t detection_time_us = 0;   // for the peer
  uint32_t remote_min_rx_us = 0, remote_desired_min_tx_us = 0;
  uint8_t remote_detect_mult = 0;
  bool poll_active = false;
  uint16_t source_port = 0;
  int64_t up_since_unix_ms = 0;  // 0: not Up
  int64_t last_change_unix_ms = 0;
  uint64_t flaps = 0;  // Up -> anything else
  uint64_t packets_in = 0, packets_out = 0, send_errors = 0;
  std::string last_error;
};

// A state change, for the client (BGP) and the log.
struct StateChange {
  std::string name;
  net::IpAddress peer;
  bool multihop = false;
  Transition transition;
  int64_t unix_ms = 0;
  uint32_t local_discr = 0, remote_discr = 0;
};

// Prometheus series; thread-safe counters, incremented on the engine's thread.
class EngineMetrics {
 public:
  explicit EngineMetrics(prometheus::Registry& registry);
  prometheus::Counter& PacketsIn(const std::string& peer) { return in_.Add({{"peer", peer}}); }
  prometheus::Counter& PacketsOut(const std::string& peer) { return out_.Add({{"peer", peer}}); }
  prometheus::Counter& Dropped(DropReason r) { return dropped_.Add({{"reason", ReasonLabel(r)}}); }
  prometheus::Counter& StateChanges(const std::string& peer, State to) {
    return changes_.Add({{"peer", peer}, {"to", StateName(to)}});
  }
  prometheus::Gauge& SessionState(const std::string& peer) { return state_.Add({{"peer", peer}}); }
  void Forget(const std::string& peer);

 private:
  prometheus::Family<prometheus::Counter>& in_;
  prometheus::Family<prometheus::Counter>& out_;
  prometheus::Family<prometheus::Counter>& dropped_;
  prometheus::Family<prometheus::Counter>& changes_;
  prometheus::Family<prometheus::Gauge>& state_;
};

struct EngineOptions {
  // Where the engine listens and where it sends (tests run two engines on loopback with
  // crossed ports; the daemon uses the RFC ports for both).
  uint16_t single_hop_listen_port = kSingleHopPort;
  uint16_t multihop_listen_port = kMultihopPort;
  uint16_t single_hop_peer_port = kSingleHopPort;
  uint16_t multihop_peer_port = kMultihopPort;
  // Called on the engine's thread for every state change.
  std::function<void(const StateChange&)> on_change;
  EngineMetrics* metrics = nullptr;  // may be null
  uint32_t seed = 0;  // jitter RNG; 0: from std::random_device
};

class Engine {
 public:
  explicit Engine(EngineOptions options);
  // Sends AdminDown to every peer (RFC 5882 §3.2: our going away is not their failure),
  // then stops the thread.
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Binds the listening sockets (both families, both transports) and starts the thread.
  // A family the host lacks (no IPv6) is skipped; a port in use is an error.
  absl::Status Start();
  // Make the sessions exactly `wanted` (keyed by peer address and transport): new ones
  // start Down, gone ones send AdminDown and are removed, changed ones get their new
  // intervals (a Poll Sequence when Up, RFC 5880 §6.8.3) without going down.
  void Apply(std::vector<SessionSpec> wanted);
  // Every session's status, taken on the engine's thread (waits up to a second for it).
  std::vector<SessionStatus> Snapshot();
  bool running() const { return thread_.joinable(); }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::thread thread_;
};

}  // namespace bagd::bfd
