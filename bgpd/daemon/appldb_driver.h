// Runs the APPL_DB backend's background work on the io_context thread: Service() when the
// response subscription is readable and at the time it asks for (reconnect backoff, a route's
// confirmation deadline, at the latest every second), its problems to the log, and its
// counters to Prometheus:
//   bagd_appldb_writes_total{table,op}      counter: keys staged (table group|route, op set|del)
//   bagd_appldb_scripts_total               counter: EVALSHA batches
//   bagd_appldb_retries_total               counter: routes written again for want of a confirmation
//   bagd_appldb_unconfirmed_total           counter: routes that passed the confirmation timeout
//   bagd_appldb_unconfirmed_routes          gauge: routes past the timeout and still not confirmed
//   bagd_appldb_confirmed_total             counter: routes orchagent confirmed
//   bagd_appldb_bad_responses_total         counter: response messages bagd could not read
//   bagd_appldb_disconnects_total, bagd_appldb_reconnects_total  counter
//   bagd_appldb_connected                   gauge: 1 while connected to Redis
//   bagd_appldb_route_path{path}            gauge: 1 for redis or zmq (docs/sonic.md, "Two route paths")
// and on the ZMQ route path:
//   bagd_appldb_zmq_messages_total, bagd_appldb_zmq_bytes_total   counter: messages sent
//   bagd_appldb_zmq_events_total{event}     counter: hwm_wait, hwm_full, refused, disconnect, resend
//   bagd_appldb_zmq_connected               gauge: 1 while orchagent's socket is connected
//   bagd_appldb_persist_writes_total{result} counter: APPL_DB main-hash writes (ok|failed)
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <memory>

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include "bgpd/control/control.pb.h"
#include "fib_sync/sonic/appldb_backend.h"

namespace bagd::daemon {

class AppldbDriver {
 public:
  // `backend` must outlive the driver (the FIB stage owns it; destroy the driver first).
  AppldbDriver(boost::asio::io_context& io, fib::sonic::AppldbBackend& backend,
               std::shared_ptr<prometheus::Registry> registry);
  ~AppldbDriver();
  void Start();
  // Fills the APPL_DB fields of a `bagctl show nexthop-groups` entry from its fib_object.
  void Annotate(control::v1::NextHopGroup& g) const;

 private:
  void Tick();
  void Watch();
  void ArmWait();
  void Export();

  boost::asio::io_context& io_;
  fib::sonic::AppldbBackend& backend_;
  boost::asio::steady_timer timer_;
  std::unique_ptr<boost::asio::posix::stream_descriptor> sub_;
  int watched_fd_ = -1;
  uint64_t watched_connection_ = 0;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
  fib::sonic::AppldbBackend::Counters exported_;
  fib::sonic::ZmqRouteSender::Counters exported_zmq_;
  struct Metrics;
  std::unique_ptr<Metrics> metrics_;
};

}  // namespace bagd::daemon
