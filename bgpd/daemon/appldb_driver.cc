#include "bgpd/daemon/appldb_driver.h"

#include "absl/strings/str_cat.h"
#include "bgpd/session/log.h"

namespace bagd::daemon {

struct AppldbDriver::Metrics {
  explicit Metrics(prometheus::Registry& r)
      : writes(prometheus::BuildCounter().Name("bagd_appldb_writes_total").Help("APPL_DB keys staged").Register(r)),
        scripts(prometheus::BuildCounter().Name("bagd_appldb_scripts_total").Help("EVALSHA batches").Register(r)),
        retries(prometheus::BuildCounter()
                    .Name("bagd_appldb_retries_total")
                    .Help("routes written again for want of a confirmation")
                    .Register(r)),
        timeouts(prometheus::BuildCounter()
                     .Name("bagd_appldb_unconfirmed_total")
                     .Help("routes that passed the confirmation timeout")
                     .Register(r)),
        unconfirmed(prometheus::BuildGauge()
                        .Name("bagd_appldb_unconfirmed_routes")
                        .Help("routes past the confirmation timeout and not confirmed yet")
                        .Register(r)),
        confirmed(prometheus::BuildCounter().Name("bagd_appldb_confirmed_total").Help("routes orchagent confirmed").Register(r)),
        bad_responses(prometheus::BuildCounter()
                          .Name("bagd_appldb_bad_responses_total")
                          .Help("response channel messages bagd could not read")
                          .Register(r)),
        disconnects(prometheus::BuildCounter().Name("bagd_appldb_disconnects_total").Help("Redis connections lost").Register(r)),
        reconnects(prometheus::BuildCounter().Name("bagd_appldb_reconnects_total").Help("Redis reconnections").Register(r)),
        connected(prometheus::BuildGauge().Name("bagd_appldb_connected").Help("1 while connected to Redis").Register(r)),
        route_path(prometheus::BuildGauge()
                       .Name("bagd_appldb_route_path")
                       .Help("1 for the way ROUTE_TABLE reaches orchagent (path=redis|zmq)")
                       .Register(r)),
        zmq_messages(prometheus::BuildCounter()
                         .Name("bagd_appldb_zmq_messages_total")
                         .Help("ROUTE_TABLE messages sent on the ZMQ route path")
                         .Register(r)),
        zmq_bytes(prometheus::BuildCounter().Name("bagd_appldb_zmq_bytes_total").Help("bytes of those messages").Register(r)),
        zmq_events(prometheus::BuildCounter()
                       .Name("bagd_appldb_zmq_events_total")
                       .Help("ZMQ route path faults: hwm_wait (the queue was full, bagd waited), hwm_full (still full: "
                             "kept for later), refused (send failed), disconnect (orchagent's socket went away), "
                             "resend (everything sent again after it came back)")
                       .Register(r)),
        zmq_connected(prometheus::BuildGauge()
                          .Name("bagd_appldb_zmq_connected")
                          .Help("1 while orchagent's ZMQ socket is connected")
                          .Register(r)),
        persist(prometheus::BuildCounter()
                    .Name("bagd_appldb_persist_writes_total")
                    .Help("ZMQ path: APPL_DB main-hash writes of the sent routes (result=ok|failed)")
                    .Register(r)) {}
  prometheus::Family<prometheus::Counter>& writes;
  prometheus::Family<prometheus::Counter>& scripts;
  prometheus::Family<prometheus::Counter>& retries;
  prometheus::Family<prometheus::Counter>& timeouts;
  prometheus::Family<prometheus::Gauge>& unconfirmed;
  prometheus::Family<prometheus::Counter>& confirmed;
  prometheus::Family<prometheus::Counter>& bad_responses;
  prometheus::Family<prometheus::Counter>& disconnects;
  prometheus::Family<prometheus::Counter>& reconnects;
  prometheus::Family<prometheus::Gauge>& connected;
  prometheus::Family<prometheus::Gauge>& route_path;
  prometheus::Family<prometheus::Counter>& zmq_messages;
  prometheus::Family<prometheus::Counter>& zmq_bytes;
  prometheus::Family<prometheus::Counter>& zmq_events;
  prometheus::Family<prometheus::Gauge>& zmq_connected;
  prometheus::Family<prometheus::Counter>& persist;
};

AppldbDriver::AppldbDriver(boost::asio::io_context& io, fib::sonic::AppldbBackend& backend,
                           std::shared_ptr<prometheus::Registry> registry)
    : io_(io), backend_(backend), timer_(io) {
  if (registry) metrics_ = std::make_unique<Metrics>(*registry);
}

AppldbDriver::~AppldbDriver() {
  *alive_ = false;
  timer_.cancel();
  if (sub_) sub_->release();  // the socket is hiredis'
}

void AppldbDriver::Start() { Tick(); }

void AppldbDriver::Watch() {
  // The subscriber socket changes with each connection: watch the current one. (release():
  // hiredis owns and closes it.)
  const int fd = backend_.event_fd();
  const uint64_t conn = backend_.counters().reconnects + backend_.counters().disconnects;
  if (fd == watched_fd_ && conn == watched_connection_ && sub_) return;
  if (sub_) sub_->release();
  sub_.reset();
  watched_fd_ = fd;
  watched_connection_ = conn;
  if (fd < 0) return;
  sub_ = std::make_unique<boost::asio::posix::stream_descriptor>(io_, fd);
  ArmWait();
}

void AppldbDriver::ArmWait() {
  sub_->async_wait(boost::asio::posix::stream_descriptor::wait_read,
                   [this, alive = alive_, watching = sub_.get()](const boost::system::error_code& ec) {
                     if (ec || !*alive || watching != sub_.get()) return;
                     Tick();
                     if (watching == sub_.get()) ArmWait();  // same connection: wait again
                   });
}

void AppldbDriver::Tick() {
  const auto next = backend_.Service();
  for (const std::string& p : backend_.TakeProblems()) log::Warning("fib appldb: %s", p);
  Export();
  Watch();
  timer_.expires_at(next);
  timer_.async_wait([this, alive = alive_](const boost::system::error_code& ec) {
    if (ec || !*alive) return;
    Tick();
  });
}

void AppldbDriver::Export() {
  if (!metrics_) return;
  const auto& c = backend_.counters();
  auto add = [](prometheus::Family<prometheus::Counter>& f, const std::map<std::string, std::string>& labels,
                uint64_t now, uint64_t before) {
    if (now > before) f.Add(labels).Increment(static_cast<double>(now - before));
  };
  add(metrics_->writes, {{"table", "group"}, {"op", "set"}}, c.group_writes, exported_.group_writes);
  add(metrics_->writes, {{"table", "group"}, {"op", "del"}}, c.group_deletes, exported_.group_deletes);
  add(metrics_->writes, {{"table", "route"}, {"op", "set"}}, c.route_writes, exported_.route_writes);
  add(metrics_->writes, {{"table", "route"}, {"op", "del"}}, c.route_deletes, exported_.route_deletes);
  add(metrics_->scripts, {}, c.scripts, exported_.scripts);
  add(metrics_->retries, {}, c.retries, exported_.retries);
  add(metrics_->timeouts, {}, c.timeouts, exported_.timeouts);
  add(metrics_->confirmed, {}, c.confirmed, exported_.confirmed);
  add(metrics_->bad_responses, {}, c.bad_responses, exported_.bad_responses);
  add(metrics_->disconnects, {}, c.disconnects, exported_.disconnects);
  add(metrics_->reconnects, {}, c.reconnects, exported_.reconnects);
  metrics_->unconfirmed.Add({}).Set(static_cast<double>(backend_.unconfirmed()));
  metrics_->connected.Add({}).Set(backend_.connected() ? 1 : 0);
  metrics_->route_path.Add({{"path", backend_.zmq() ? "zmq" : "redis"}}).Set(1);
  add(metrics_->zmq_events, {{"event", "resend"}}, c.zmq_resends, exported_.zmq_resends);
  add(metrics_->persist, {{"result", "ok"}}, c.persist_writes, exported_.persist_writes);
  add(metrics_->persist, {{"result", "failed"}}, c.persist_failures, exported_.persist_failures);
  exported_ = c;
  if (const auto* z = backend_.zmq_sender()) {
    const auto& zc = z->counters();
    add(metrics_->zmq_messages, {}, zc.messages, exported_zmq_.messages);
    add(metrics_->zmq_bytes, {}, zc.bytes, exported_zmq_.bytes);
    add(metrics_->zmq_events, {{"event", "hwm_wait"}}, zc.hwm_waits, exported_zmq_.hwm_waits);
    add(metrics_->zmq_events, {{"event", "hwm_full"}}, zc.hwm_full, exported_zmq_.hwm_full);
    add(metrics_->zmq_events, {{"event", "refused"}}, zc.refused, exported_zmq_.refused);
    add(metrics_->zmq_events, {{"event", "disconnect"}}, zc.disconnects, exported_zmq_.disconnects);
    metrics_->zmq_connected.Add({}).Set(z->peer_connected() ? 1 : 0);
    exported_zmq_ = zc;
  }
}

void AppldbDriver::Annotate(control::v1::NextHopGroup& g) const {
  if (g.fib_object() == 0) return;
  const auto v = backend_.Group(g.fib_object());
  if (!v) return;
  g.set_fib_key(absl::StrCat("NEXTHOP_GROUP_TABLE:", v->name));
  g.set_fib_routes_confirmed(v->confirmed);
  g.set_fib_routes_pending(v->pending);
  g.set_fib_routes_retried(v->retried);
  const char* state = !backend_.options().confirm ? "not asked (fib.confirm is CONFIRM_NONE)"
                      : v->retried > 0           ? "retrying"
                      : v->pending > 0           ? "pending"
                      : v->confirmed > 0         ? "confirmed"
                                                 : "no routes";
  g.set_fib_confirmation(state);
  g.set_fib_route_path(absl::StrCat(backend_.route_path(), " (", backend_.route_path_reason(), ")"));
}

}  // namespace bagd::daemon
