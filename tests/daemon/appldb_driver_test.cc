// The APPL_DB backend as the daemon runs it: the FIB stage and the Asio driver on one
// io_context, a private redis-server, the fake orchagent. bagd's connections are killed
// (CLIENT KILL): the driver sees the subscriber close, reconnects (backoff 0 here), the FIB
// stage resyncs and writes nothing (the server kept everything); the counters reach
// Prometheus and `bagctl show nexthop-groups` gets the APPL_DB key. The loop waits on I/O
// (run_one_for), with a deadline only as a guard.
#include <catch2/catch.hpp>

#include <boost/asio/io_context.hpp>

#include "absl/strings/str_split.h"
#include "bgpd/daemon/appldb_driver.h"
#include "bgpd/daemon/fib_stage.h"
#include "tests/fib/sonic/fake_orchagent.h"
#include "tests/fib/sonic/redis_server.h"

namespace bagd::daemon {
namespace {

using namespace std::chrono_literals;
using fib::sonic::test::FakeOrchagent;
using fib::sonic::test::RedisServer;

double Metric(prometheus::Registry& r, const std::string& name, const std::map<std::string, std::string>& labels = {}) {
  for (const auto& family : r.Collect()) {
    if (family.name != name) continue;
    for (const auto& m : family.metric) {
      std::map<std::string, std::string> have;
      for (const auto& l : m.label) have[l.name] = l.value;
      if (have != labels) continue;
      return family.type == prometheus::MetricType::Counter ? m.counter.value : m.gauge.value;
    }
  }
  return -1;
}

TEST_CASE("appldb driver: reconnect, resync and metrics on the io_context", "[appldb][daemon]") {
  if (!RedisServer::Available()) {
    WARN("redis-server is not installed: skipped");
    return;
  }
  RedisServer redis;
  REQUIRE(redis.Start());
  auto orch = FakeOrchagent::Connect(redis.address());
  REQUIRE(orch.ok());
  boost::asio::io_context io;
  fib::sonic::AppldbOptions o;
  o.address = redis.address();
  o.reconnect_first = 0ms;
  o.reconnect_max = 0ms;
  auto opened = fib::sonic::AppldbBackend::Open(
      o, [](const net::IpAddress& gw) -> absl::StatusOr<std::string> { return "Ethernet" + gw.ToString().substr(5, 1); },
      nullptr);
  REQUIRE(opened.ok());
  fib::sonic::AppldbBackend* backend = opened->get();
  FibStage stage(io, std::move(*opened));
  REQUIRE(stage.Start().ok());
  auto registry = std::make_shared<prometheus::Registry>();
  auto driver = std::make_unique<AppldbDriver>(io, *backend, registry);
  driver->Start();

  rib::FibUpdate u;
  u.group_upserts = {rib::FibGroup{1, {{*net::IpAddress::Parse("10.0.1.2"), 1}, {*net::IpAddress::Parse("10.0.2.2"), 3}}}};
  for (int i = 0; i < 10; ++i) {
    const uint8_t b[4] = {10, 100, static_cast<uint8_t>(i), 0};
    u.route_upserts.emplace_back(net::Prefix::Make(net::Afi::kIpv4, b, 24), 1);
  }
  stage.Apply(u);
  (*orch)->Drain();
  REQUIRE((*orch)->routes().size() == 10);
  auto until = [&](const std::function<bool()>& done) {
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (!done() && std::chrono::steady_clock::now() < deadline) io.run_one_for(100ms);
    return done();
  };
  REQUIRE(until([&] { return Metric(*registry, "bagd_appldb_writes_total", {{"table", "route"}, {"op", "set"}}) == 10; }));
  CHECK(Metric(*registry, "bagd_appldb_connected") == 1);

  {
    auto c = fib::sonic::RedisConnection::Connect(redis.address(), 1000ms);
    REQUIRE(c.ok());
    auto list = (*c)->Command({"CLIENT", "LIST"});
    REQUIRE(list.ok());
    for (absl::string_view line : absl::StrSplit(list->str, '\n')) {
      if (line.find(" name=bagd") == absl::string_view::npos) continue;
      const size_t id = line.find("id=");
      REQUIRE((*c)->Command({"CLIENT", "KILL", "ID", std::string(line.substr(id + 3, line.find(' ', id) - id - 3))}).ok());
    }
  }
  (*orch)->ResetStats();
  CHECK(until([&] { return stage.reconciler().stats().resyncs == 1; }));
  CHECK(until([&] { return Metric(*registry, "bagd_appldb_reconnects_total") == 1; }));
  CHECK(Metric(*registry, "bagd_appldb_disconnects_total") == 1);
  CHECK(Metric(*registry, "bagd_appldb_connected") == 1);
  CHECK_FALSE(stage.reconciler().dirty());
  (*orch)->Drain();
  CHECK((*orch)->stats().keys() == 0);  // nothing was lost: the resync wrote nothing

  control::v1::NextHopGroup g;
  g.set_fib_object(*stage.ObjectOf(1));
  driver->Annotate(g);
  CHECK(g.fib_key() == "NEXTHOP_GROUP_TABLE:" + fib::sonic::GroupName(g.fib_object()));
  CHECK(g.fib_confirmation() == "not asked (fib.confirm is CONFIRM_NONE)");
  driver.reset();  // before the stage, which owns the backend; pending waits must not fire into it
  io.run_for(10ms);
}

}  // namespace
}  // namespace bagd::daemon
