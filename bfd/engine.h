// The BFD engine: every session's transmission and detection on a thread of its own, with
// its own io_context, so that nothing the event thread does (a 1M-path ingest, a table dump,
// a FIB flush) delays a packet or a detection. UDP transport:
//   single hop (RFC 5881): destination port 3784, sent with TTL / hop limit 255, and a
//     packet received with anything else is dropped (§5);
//   multihop (RFC 5883): destination port 4784, no TTL check; sessions are told apart by
//     their discriminators, or by the addresses while the peer does not know ours yet;
//   micro-BFD on a LAG member (RFC 7130): destination port 6784, single hop rules (TTL 255),
//     the session's socket bound to its member interface (SO_BINDTODEVICE); every member of
//     a LAG has a session with the same addresses, told apart by the interface a packet
//     arrived on (IP_PKTINFO / IPV6_PKTINFO) as well as by the discriminators. The port is
//     bound with the first micro-BFD session.
// Source ports are in 49152..65535 (RFC 5881 §4), one per session, kept for its life.
//
// The public methods may be called from any thread: they post to the engine's thread.
// State changes are reported through EngineOptions::on_change, called on the engine's
// thread; the receiver hands them to its own thread (bgpd/daemon/bfd_stage posts them to the
// event thread).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
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
inline constexpr uint16_t kMicroBfdPort = 6784;   // RFC 7130 §2.2

enum class Transport : uint8_t { kSingleHop, kMultihop, kMicro };
const char* TransportName(Transport t);  // "single-hop", "multihop", "micro-bfd"

// One session as configured.
struct SessionSpec {
  net::IpAddress peer;
  std::optional<net::IpAddress> local;  // source address; default: the kernel's choice
  bool multihop = false;
  SessionConfig config;
  bool admin_down = false;
  // Which BGP neighbor it serves (for logs and bagctl); usually the peer address.
  std::string name;
  // Micro-BFD (RFC 7130): the LAG member the session runs on (multihop false), and the
  // capacity source (the LAG) it belongs to, for the client. Empty: not micro-BFD.
  std::string interface;
  std::string capacity_source;

  Transport transport() const {
    return !interface.empty() ? Transport::kMicro : multihop ? Transport::kMultihop : Transport::kSingleHop;
  }
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
  std::string interface;        // micro-BFD: the member
  std::string capacity_source;  // micro-BFD: its LAG
  Transition transition;
  int64_t unix_ms = 0;
  uint32_t local_discr = 0, remote_discr = 0;
};

// Prometheus series; thread-safe counters, incremented on the engine's thread.
// A session's series are labelled `peer` (SessionSpec::name), and for micro-BFD also
// `interface` (the member) and `capacity_source` (the LAG).
class EngineMetrics {
 public:
  explicit EngineMetrics(prometheus::Registry& registry);
  using Labels = std::map<std::string, std::string>;
  static Labels Of(const SessionSpec& s);
  prometheus::Counter& PacketsIn(const SessionSpec& s) { return in_.Add(Of(s)); }
  prometheus::Counter& PacketsOut(const SessionSpec& s) { return out_.Add(Of(s)); }
  prometheus::Counter& Dropped(DropReason r) { return dropped_.Add({{"reason", ReasonLabel(r)}}); }
  prometheus::Counter& StateChanges(const SessionSpec& s, State to) {
    Labels l = Of(s);
    l.emplace("to", StateName(to));
    return changes_.Add(l);
  }
  prometheus::Gauge& SessionState(const SessionSpec& s) { return state_.Add(Of(s)); }
  void Forget(const SessionSpec& s);

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
  uint16_t micro_listen_port = kMicroBfdPort;
  uint16_t micro_peer_port = kMicroBfdPort;
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
  // Make the sessions exactly `wanted` (keyed by peer address, transport and, for micro-BFD,
  // the member interface): new ones
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
