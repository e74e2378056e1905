// BFD for the BGP sessions (RFC 5882 §10.2, docs/bfd.md): the neighbors' `bfd` settings made
// into sessions of the BFD engine (bfd/engine.h, its own thread), and the engine's state
// changes brought back to the event thread, where they act on the Peers:
//   Up -> Down as a failure (detection time, the peer's Down): Peer::BfdDown (Cease / BFD
//     Down, no stale paths, no restart before BFD is Up again);
//   the peer's AdminDown: nothing (RFC 5882 §3.2);
//   -> Up: Peer::BfdUp (a waiting session starts).
// Each change is logged and published as a BfdEvent (bagctl monitor).
// Micro-BFD (RFC 7130): the capacity sources' `micro_bfd` made into one session per member
// on the same engine; their changes go to the CapacityStage (a failed member counts as down
// for the LAG's capacity), never to a Peer.
// Apply runs on the event thread; Sessions may be called from any thread.
#pragma once

#include <boost/asio/io_context.hpp>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "bfd/engine.h"
#include "bgpd/control/control.pb.h"
#include "bgpd/control/event_hub.h"
#include "bgpd/session/lifetime.h"
#include "conf/bagd.pb.h"
#include "fib_sync/capacity.h"

namespace bagd::daemon {

class Speaker;
class CapacityStage;

// The sessions `config` asks for (Neighbor.bfd, its profile, the defaults).
// `skip` (may be empty): neighbors to leave out (the speaker's dynamic neighbors).
std::vector<bfd::SessionSpec> BfdSessionSpecs(const config::v1::Config& config,
                                               const std::function<bool(const std::string&)>& skip = {});

// The micro-BFD sessions `config` asks for: one per member of each capacity source with
// `micro_bfd`, named by the neighbor address, tagged with the member and the source.
std::vector<bfd::SessionSpec> MicroBfdSessionSpecs(const config::v1::Config& config);

// A member's liveness after its session's transition (pure): Up -> kUp; a failure (Up ->
// Down by detection time or the far end's Down) -> kFailed; the far end's AdminDown after Up
// -> kAdminDown (not a failure, RFC 5882 §3.2); anything else (Down -> Init, Init -> Down,
// our own AdminDown) leaves it as it was.
fib::BfdLiveness NextLiveness(fib::BfdLiveness previous, const bfd::Transition& t);

class BfdStage {
 public:
  // `registry` and `events` may be null.
  BfdStage(boost::asio::io_context& io, Speaker& speaker, prometheus::Registry* registry, control::EventSink* events,
           bfd::EngineOptions engine_options = {});
  ~BfdStage();

  // The sessions of `config` (the running one; again after each reload). The engine starts
  // with the first session; a failure to bind its ports is returned (and retried next time).
  absl::Status Apply(const config::v1::Config& config);
  // Where micro-BFD changes go (null: no capacity sources, micro-BFD sessions are not run).
  // Set before the first Apply; the stage must outlive this one.
  void SetCapacity(CapacityStage* capacity) { capacity_ = capacity; }
  // `bagctl show bfd`: all sessions, or those of `peer` (canonical address).
  std::vector<control::v1::BfdSession> Sessions(const std::string& peer) const;

 private:
  void OnChange(const bfd::StateChange& change);  // the event thread
  void OnMicroChange(const bfd::StateChange& change);

  boost::asio::io_context& io_;
  Speaker& speaker_;
  control::EventSink* events_;
  std::unique_ptr<bfd::EngineMetrics> metrics_;
  bfd::EngineOptions engine_options_;
  std::unique_ptr<bfd::Engine> engine_;
  // Written on the event thread (Apply), read by Sessions from gRPC threads.
  mutable std::mutex mu_;
  absl::flat_hash_map<std::string, bool> hold_;  // neighbor -> hold_bgp_until_up
  struct MicroMember {
    std::string peer, local;  // the session's addresses: a change is a new session
    fib::BfdLiveness liveness = fib::BfdLiveness::kUnknown;
    bool require_up = false;
  };
  // "source/member" -> what micro-BFD says of it (mirrors the CapacityStage's, for Sessions).
  std::map<std::string, MicroMember> micro_;
  CapacityStage* capacity_ = nullptr;
  // Changes posted from the engine's thread check it before touching the stage.
  session::Lifetime lifetime_;
};

}  // namespace bagd::daemon
