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
        connected(prometheus::BuildGauge().Name("bagd_appldb_connected").Help("1 while connected to Redis").Register(r)) {}
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
  exported_ = c;
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
}

}  // namespace bagd::daemon
