// BFD for the BGP sessions (RFC 5882 §10.2, docs/bfd.md): the neighbors' `bfd` settings made
// into sessions of the BFD engine (bfd/engine.h, its own thread), and the engine's state
// changes brought back to the event thread, where they act on the Peers:
//   Up -> Down as a failure (detection time, the peer's Down): Peer::BfdDown (Cease / BFD
//     Down, no stale paths, no restart before BFD is Up again);
//   the peer's AdminDown: nothing (RFC 5882 §3.2);
//   -> Up: Peer::BfdUp (a waiting session starts).
// Each change is logged and published as a BfdEvent (bagctl monitor).
// Apply runs on the event thread; Sessions may be called from any thread.
#pragma once

#include <boost/asio/io_context.hpp>
#include <functional>
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

namespace bagd::daemon {

class Speaker;

// The sessions `config` asks for (Neighbor.bfd, its profile, the defaults).
// `skip` (may be empty): neighbors to leave out (the speaker's dynamic neighbors).
std::vector<bfd::SessionSpec> BfdSessionSpecs(const config::v1::Config& config,
                                               const std::function<bool(const std::string&)>& skip = {});

class BfdStage {
 public:
  // `registry` and `events` may be null.
  BfdStage(boost::asio::io_context& io, Speaker& speaker, prometheus::Registry* registry, control::EventSink* events,
           bfd::EngineOptions engine_options = {});
  ~BfdStage();

  // The sessions of `config` (the running one; again after each reload). The engine starts
  // with the first session; a failure to bind its ports is returned (and retried next time).
  absl::Status Apply(const config::v1::Config& config);
  // `bagctl show bfd`: all sessions, or those of `peer` (canonical address).
  std::vector<control::v1::BfdSession> Sessions(const std::string& peer) const;

 private:
  void OnChange(const bfd::StateChange& change);  // the event thread

  boost::asio::io_context& io_;
  Speaker& speaker_;
  control::EventSink* events_;
  std::unique_ptr<bfd::EngineMetrics> metrics_;
  bfd::EngineOptions engine_options_;
  std::unique_ptr<bfd::Engine> engine_;
  // Written on the event thread (Apply), read by Sessions from gRPC threads.
  mutable std::mutex mu_;
  absl::flat_hash_map<std::string, bool> hold_;  // neighbor -> hold_bgp_until_up
  // Changes posted from the engine's thread check it before touching the stage.
  session::Lifetime lifetime_;
};

}  // namespace bagd::daemon
