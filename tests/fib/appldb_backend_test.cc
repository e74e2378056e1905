// The APPL_DB backend with the reconciler, against a real redis-server per test (unix socket
// in a temp dir) and a fake orchagent (tests/fib/sonic/fake_orchagent.h) that consumes what
// bagd writes by the ProducerStateTable rules. The consumer runs after every Apply, so any
// write out of make-before-break order shows as a violation (a route naming a group it has
// not seen, a group deleted under a route). Time is a fake clock.
#include <catch2/catch.hpp>

#include <poll.h>

#include <functional>
#include <map>

#include "absl/strings/str_split.h"

#include "fib_sync/reconciler.h"
#include "fib_sync/sonic/appldb_backend.h"
#include "tests/fib/sonic/appldb_test_support.h"
#include "tests/fib/sonic/fake_orchagent.h"
#include "tests/fib/sonic/redis_server.h"

namespace bagd::fib::sonic {
namespace {

using test::FakeOrchagent;
using test::RedisServer;
using namespace std::chrono_literals;

using test::A;
using test::Group;
using test::Resolve;
using test::Route;

// Runs the fake orchagent after every Apply.
class Draining : public FibBackend {
 public:
  Draining(AppldbBackend& b, FakeOrchagent*& o) : b_(b), o_(o) {}
  FibCapabilities Capabilities() const override { return b_.Capabilities(); }
  std::vector<absl::Status> Apply(std::span<const FibOp> ops) override {
    auto st = b_.Apply(ops);
    if (o_) o_->Drain();
    return st;
  }
  absl::StatusOr<FibState> Dump() override { return b_.Dump(); }

 private:
  AppldbBackend& b_;
  FakeOrchagent*& o_;
};

struct Rig {
  RedisServer redis;
  std::chrono::steady_clock::time_point now{std::chrono::seconds(1000)};
  AppldbOptions options;
  std::unique_ptr<AppldbBackend> backend;
  std::unique_ptr<FakeOrchagent> orch;
  FakeOrchagent* orch_ptr = nullptr;
  std::unique_ptr<Draining> draining;
  std::unique_ptr<Reconciler> reconciler;

  explicit Rig(size_t consumer_pop_batch = 1024) {
    REQUIRE(redis.Start());
    options.address = redis.address();
    auto o = FakeOrchagent::Connect(redis.address(), consumer_pop_batch);
    REQUIRE(o.ok());
    orch = std::move(*o);
    orch_ptr = orch.get();
  }
  absl::Status OpenBagd() {
    reconciler.reset();
    draining.reset();
    backend.reset();
    auto b = AppldbBackend::Open(options, Resolve, [this] { return now; });
    if (!b.ok()) return b.status();
    backend = std::move(*b);
    draining = std::make_unique<Draining>(*backend, orch_ptr);
    reconciler = std::make_unique<Reconciler>(*draining);
    backend->SetEventHandler([this](const FibEvent& e) { reconciler->OnEvent(e); });
    return reconciler->Start();
  }
  // What FibStage does: flush, and resync when the backend asked for it.
  FlushResult Flush() {
    if (reconciler->resync_wanted()) REQUIRE(reconciler->Resync().ok());
    return reconciler->Flush();
  }
  // Service() once the responses the consumer published have reached bagd's subscriber
  // (they travel on their own connection): waits for I/O, never for a timer of bagd's.
  void ServiceUntil(const std::function<bool()>& done) {
    for (int i = 0; i < 50 && !done(); ++i) {
      pollfd p{backend->event_fd(), POLLIN, 0};
      poll(&p, 1, 100);
      backend->Service();
    }
  }
  std::string Cli(const std::vector<std::string>& argv) {
    auto c = RedisConnection::Connect(redis.address(), 1000ms);
    REQUIRE(c.ok());
    auto r = (*c)->Command(argv);
    REQUIRE(r.ok());
    return r->str;
  }
  std::map<std::string, std::string> Hash(const std::string& key) {
    auto c = RedisConnection::Connect(redis.address(), 1000ms);
    REQUIRE(c.ok());
    auto r = (*c)->Command({"HGETALL", key});
    REQUIRE(r.ok());
    std::map<std::string, std::string> m;
    for (size_t i = 0; i + 1 < r->elements.size(); i += 2) m[r->elements[i].str] = r->elements[i + 1].str;
    return m;
  }
};

#define SKIP_WITHOUT_REDIS()                                \
  if (!RedisServer::Available()) {                          \
    WARN("redis-server is not installed: skipped");         \
    return;                                                 \
  }

TEST_CASE("appldb: weights and shared groups reach the consumer", "[appldb][redis]") {
  SKIP_WITHOUT_REDIS();
  Rig rig;
  REQUIRE(rig.OpenBagd().ok());
  rib::FibUpdate u;
  u.group_upserts = {Group(1, {{"10.0.1.2", 3}, {"10.0.2.2", 1}}), Group(2, {{"10.0.1.2", 1}, {"10.0.3.2", 1}})};
  for (int i = 0; i < 10; ++i) u.route_upserts.emplace_back(Route(i), i < 7 ? 1 : 2);
  rig.reconciler->Update(u);
  const FlushResult r = rig.Flush();
  CHECK(r.failed == 0);
  CHECK(rig.orch->violations().empty());
  for (const auto& v : rig.orch->violations()) WARN(v);

  const auto g1 = *rig.reconciler->GroupObject(1);
  const auto g2 = *rig.reconciler->GroupObject(2);
  const auto& asic = rig.orch->groups();
  REQUIRE(asic.size() == 2);
  const std::vector<FakeOrchagent::Member> want1 = {{"10.0.1.2", "Ethernet4", 3}, {"10.0.2.2", "Ethernet8", 1}};
  CHECK(asic.at(GroupName(g1)) == want1);
  CHECK(asic.at(GroupName(g2))[1].ifname == "Ethernet12");
  // Shared: 10 routes, 2 groups, each route names its group.
  REQUIRE(rig.orch->routes().size() == 10);
  int on1 = 0;
  for (const auto& [key, group] : rig.orch->routes()) on1 += group == GroupName(g1);
  CHECK(on1 == 7);
  CHECK(rig.orch->stats().group_sets == 2);
  CHECK(rig.orch->stats().route_sets == 10);
  // The main hash has the full field set, host routes spelled without /32.
  const auto h = rig.Hash("ROUTE_TABLE:10.100.0.3");
  CHECK(h.at("nexthop_group") == GroupName(g1));
  CHECK(h.at("protocol") == "bagd");
  CHECK(h.at("nexthop").empty());
  CHECK(h.at("ifname").empty());
  CHECK(rig.Hash(std::string("NEXTHOP_GROUP_TABLE:") + GroupName(g1)).at("weight") == "3,1");
  // Nothing left staged.
  CHECK(rig.Cli({"SCARD", "ROUTE_TABLE_KEY_SET"}).empty());
  CHECK(rig.backend->counters().route_writes == 10);
  CHECK(rig.backend->counters().group_writes == 2);
}

TEST_CASE("appldb: make-before-break: routes move before their old group goes", "[appldb][redis]") {
  SKIP_WITHOUT_REDIS();
  Rig rig;
  REQUIRE(rig.OpenBagd().ok());
  rib::FibUpdate u;
  u.group_upserts = {Group(1, {{"10.0.1.2", 1}, {"10.0.2.2", 1}})};
  for (int i = 0; i < 100; ++i) u.route_upserts.emplace_back(Route(i), 1);
  rig.reconciler->Update(u);
  rig.Flush();
  const ObjectId old_id = *rig.reconciler->GroupObject(1);
  const std::string old_group = GroupName(old_id);
  REQUIRE(rig.backend->Group(old_id));
  CHECK(rig.backend->Group(old_id)->routes == 100);
  // Peer 10.0.2.2 is replaced by 10.0.3.2: a new group, every route moves, the old group goes.
  rib::FibUpdate v;
  v.group_upserts = {Group(2, {{"10.0.1.2", 1}, {"10.0.3.2", 2}})};
  for (int i = 0; i < 100; ++i) v.route_upserts.emplace_back(Route(i), 2);
  v.route_deletes = {Route(99)};
  v.route_upserts.pop_back();
  v.group_deletes = {1};
  rig.reconciler->Update(v);
  const FlushResult r = rig.Flush();
  CHECK(r.failed == 0);
  for (const auto& x : rig.orch->violations()) WARN(x);
  CHECK(rig.orch->violations().empty());
  CHECK_FALSE(rig.orch->groups().contains(old_group));
  CHECK(rig.orch->groups().size() == 1);
  CHECK(rig.orch->routes().size() == 99);
  CHECK(rig.orch->stats().group_dels == 1);
  CHECK(rig.orch->stats().route_dels == 1);
  CHECK(rig.Hash("NEXTHOP_GROUP_TABLE:" + old_group).empty());
  // What bagctl reads: the old group is gone, the new one has the 99 routes.
  CHECK_FALSE(rig.backend->Group(old_id).has_value());
  REQUIRE(rig.backend->Group(*rig.reconciler->GroupObject(2)));
  CHECK(rig.backend->Group(*rig.reconciler->GroupObject(2))->routes == 99);
  CHECK(rig.backend->Group(*rig.reconciler->GroupObject(2))->written);
  CHECK(rig.Hash("ROUTE_TABLE:10.100.0.99").empty());
}

TEST_CASE("appldb: a restart with unchanged state writes nothing, the sweep removes leftovers", "[appldb][redis]") {
  SKIP_WITHOUT_REDIS();
  Rig rig;
  REQUIRE(rig.OpenBagd().ok());
  rib::FibUpdate u;
  u.group_upserts = {Group(1, {{"10.0.1.2", 5}, {"10.0.2.2", 2}}), Group(2, {{"10.0.3.2", 1}})};
  for (int i = 0; i < 1000; ++i) u.route_upserts.emplace_back(Route(i), i % 2 ? 1 : 2);
  rig.reconciler->Update(u);
  rig.Flush();
  REQUIRE(rig.orch->routes().size() == 1000);
  // Routes owned by someone else (fpmsyncd) are never touched.
  rig.Cli({"HSET", "ROUTE_TABLE:192.168.0.0/16", "nexthop", "10.9.9.9", "ifname", "Ethernet0", "protocol", "bgp"});
  rig.Cli({"HSET", "NEXTHOP_GROUP_TABLE:17", "nexthop", "10.9.9.9", "ifname", "Ethernet0"});

  SECTION("same state") {
    // A new bagd, the registry's ids in another order: claimed by content.
    REQUIRE(rig.OpenBagd().ok());
    CHECK(rig.reconciler->stale_count() == 3 + 2 + 1000);  // next hops counted too
    rig.orch->ResetStats();
    rib::FibUpdate same;
    same.group_upserts = {Group(8, {{"10.0.3.2", 1}}), Group(9, {{"10.0.1.2", 5}, {"10.0.2.2", 2}})};
    for (int i = 0; i < 1000; ++i) same.route_upserts.emplace_back(Route(i), i % 2 ? 9 : 8);
    rig.reconciler->Update(same);
    const FlushResult r = rig.Flush();
    rig.reconciler->Sweep();
    const FlushResult s = rig.Flush();
    CHECK(r.applied + s.applied == 0);
    CHECK(rig.orch->stats().keys() == 0);
    CHECK(rig.backend->counters().scripts == 0);
    CHECK(rig.reconciler->stats().adopted == 3 + 2 + 0);  // next hops and groups (routes need no claim)
  }
  SECTION("one route and one group fewer") {
    REQUIRE(rig.OpenBagd().ok());
    rig.orch->ResetStats();
    rib::FibUpdate fewer;
    fewer.group_upserts = {Group(9, {{"10.0.1.2", 5}, {"10.0.2.2", 2}})};
    for (int i = 1; i < 1000; i += 2) fewer.route_upserts.emplace_back(Route(i), 9);
    rig.reconciler->Update(fewer);
    rig.Flush();
    rig.reconciler->Sweep();
    rig.Flush();
    for (const auto& x : rig.orch->violations()) WARN(x);
    CHECK(rig.orch->violations().empty());
    CHECK(rig.orch->stats().route_dels == 500);
    CHECK(rig.orch->stats().group_dels == 1);
    CHECK(rig.orch->stats().route_sets + rig.orch->stats().group_sets == 0);
    CHECK(rig.orch->routes().size() == 500);
  }
  CHECK(rig.Hash("ROUTE_TABLE:192.168.0.0/16").at("protocol") == "bgp");
  CHECK(rig.Hash("NEXTHOP_GROUP_TABLE:17").at("nexthop") == "10.9.9.9");
}

TEST_CASE("appldb: what is still staged for orchagent is adopted too", "[appldb][redis]") {
  SKIP_WITHOUT_REDIS();
  Rig rig;
  rig.orch_ptr = nullptr;  // orchagent is down: everything stays in the key sets
  REQUIRE(rig.OpenBagd().ok());
  rib::FibUpdate u;
  u.group_upserts = {Group(1, {{"10.0.1.2", 2}, {"10.0.2.2", 1}})};
  for (int i = 0; i < 50; ++i) u.route_upserts.emplace_back(Route(i), 1);
  rig.reconciler->Update(u);
  rig.Flush();
  REQUIRE(rig.OpenBagd().ok());
  rig.reconciler->Update(u);
  const FlushResult r = rig.Flush();
  CHECK(r.applied == 0);
  CHECK(rig.backend->counters().scripts == 0);
  // orchagent comes up and finds everything.
  auto late = FakeOrchagent::Connect(rig.redis.address());
  REQUIRE(late.ok());
  (*late)->Drain();
  CHECK((*late)->routes().size() == 50);
  CHECK((*late)->groups().size() == 1);
  CHECK((*late)->violations().empty());
}

TEST_CASE("appldb: a reweight is one group write under 100k routes", "[appldb][redis]") {
  SKIP_WITHOUT_REDIS();
  Rig rig;
  REQUIRE(rig.OpenBagd().ok());
  rib::FibUpdate u;
  u.group_upserts = {Group(1, {{"10.0.1.2", 1}, {"10.0.2.2", 1}, {"10.0.3.2", 1}})};
  for (int i = 0; i < 100000; ++i) u.route_upserts.emplace_back(Route(i), 1);
  rig.reconciler->Update(u);
  rig.Flush();
  REQUIRE(rig.orch->routes().size() == 100000);
  rig.orch->ResetStats();
  const auto before = rig.backend->counters();
  rib::FibUpdate w;
  w.group_upserts = {Group(1, {{"10.0.1.2", 10}, {"10.0.2.2", 40}, {"10.0.3.2", 100}})};
  rig.reconciler->Update(w);
  const FlushResult r = rig.Flush();
  CHECK(r.applied == 1);
  CHECK(rig.orch->stats().keys() == 1);
  CHECK(rig.orch->stats().group_sets == 1);
  CHECK(rig.backend->counters().route_writes == before.route_writes);
  CHECK(rig.backend->counters().scripts == before.scripts + 1);
  const auto& g = rig.orch->groups().begin()->second;
  CHECK(g[2].weight == 100);
  CHECK(rig.orch->violations().empty());
}

TEST_CASE("appldb: one channel message per pop batch of newly pending keys, none left behind", "[appldb][redis]") {
  SKIP_WITHOUT_REDIS();
  // orchagent without -b pops 128 keys per message (swss' default): bagd's default.
  Rig rig(128);
  REQUIRE(rig.options.pop_batch == 128);
  REQUIRE(rig.OpenBagd().ok());
  rib::FibUpdate u;
  u.group_upserts = {Group(1, {{"10.0.1.2", 1}, {"10.0.2.2", 1}})};
  for (int i = 0; i < 10000; ++i) u.route_upserts.emplace_back(Route(i), 1);
  rig.reconciler->Update(u);
  CHECK(rig.Flush().failed == 0);
  CHECK(rig.orch->routes().size() == 10000);
  CHECK(rig.orch->violations().empty());
  for (const auto& v : rig.orch->violations()) WARN(v);
  // 10,000 route keys in scripts of 512: 19 x ceil(512/128) + ceil(272/128) = 79 messages,
  // and 1 for the group (swss' producer would publish 10,001).
  CHECK(rig.orch->stats().messages == 19 * 4 + 3 + 1);
  CHECK(rig.Cli({"SCARD", "ROUTE_TABLE_KEY_SET"}).empty());

  // 300 routes move to a new group: ceil(300/128) messages for them, 1 for the group.
  rig.orch->ResetStats();
  rib::FibUpdate w;
  w.group_upserts = {Group(2, {{"10.0.1.2", 1}, {"10.0.3.2", 1}})};
  for (int i = 0; i < 300; ++i) w.route_upserts.emplace_back(Route(i), 2);
  rig.reconciler->Update(w);
  CHECK(rig.Flush().failed == 0);
  CHECK(rig.orch->stats().messages == 3 + 1);
  CHECK(rig.orch->violations().empty());
}

TEST_CASE("appldb: the staging script: per-key effect of the protocol, SADDs batched, same key twice in a batch",
          "[appldb][redis]") {
  SKIP_WITHOUT_REDIS();
  // Every way the consumer can merge gives the same tables.
  const auto merge = GENERATE(FakeOrchagent::Merge::kOneHset, FakeOrchagent::Merge::kHsetPerField,
                              FakeOrchagent::Merge::kRenameFresh);
  RedisServer redis;
  REQUIRE(redis.Start());
  auto c = RedisConnection::Connect(redis.address(), 1000ms);
  REQUIRE(c.ok());
  auto sha = (*c)->Command({"SCRIPT", "LOAD", kStageScript});
  REQUIRE(sha.ok());
  REQUIRE_FALSE(sha->is_error());
  const TableKeys groups = KeysOf(kGroupTable), routes = KeysOf(kRouteTable);
  const std::vector<Write> group = {
      {"bagd-1", false, GroupFields({{A("10.0.1.2"), "Ethernet4", 2}, {A("10.0.2.2"), "Ethernet8", 1}})}};
  auto r = (*c)->Command(StageCommand(sha->str, groups, group, 0, 1, 128));
  REQUIRE(r.ok());
  CHECK(r->integer == 1);
  // An installed route "B" that this batch deletes; "C" deleted then set again, "D" set then
  // deleted, in one script; "E" set over a main hash with a field the write does not have
  // (merged, as swss merges); 1500 more keys: more than one SADD of 1000 members.
  REQUIRE((*c)->Command({"HSET", "ROUTE_TABLE:10.9.0.2", "nexthop_group", "bagd-1", "protocol", "bagd"}).ok());
  REQUIRE((*c)->Command({"HSET", "ROUTE_TABLE:10.9.0.5", "nexthop_group", "bagd-9", "extra", "x"}).ok());
  const Fields f = RouteFields("bagd-1", "bagd");
  std::vector<Write> w = {{"10.9.0.2", true, {}},
                          {"10.9.0.3", true, {}},
                          {"10.9.0.3", false, f},
                          {"10.9.0.4", false, f},
                          {"10.9.0.4", true, {}},
                          {"10.9.0.5", false, f}};
  for (int i = 0; i < 1500; ++i) w.push_back({RouteKey(Route(i)), false, f});
  r = (*c)->Command(StageCommand(sha->str, routes, w, 0, w.size(), 128));
  REQUIRE(r.ok());
  REQUIRE_FALSE(r->is_error());
  CHECK(r->integer == (1504 + 127) / 128);  // messages published: one per 128 newly pending keys
  auto n = [&](std::vector<std::string> argv) {
    auto x = (*c)->Command(argv);
    REQUIRE(x.ok());
    return x->integer;
  };
  CHECK(n({"SCARD", "ROUTE_TABLE_KEY_SET"}) == 1504);
  CHECK(n({"SCARD", "ROUTE_TABLE_DEL_SET"}) == 3);
  CHECK(n({"SISMEMBER", "ROUTE_TABLE_DEL_SET", "10.9.0.3"}) == 1);
  CHECK(n({"HLEN", "_ROUTE_TABLE:10.9.0.3"}) == 6);  // the SET after the DEL is staged
  CHECK(n({"EXISTS", "_ROUTE_TABLE:10.9.0.4"}) == 0);  // the DEL after the SET dropped it
  CHECK(n({"HLEN", "_ROUTE_TABLE:10.100.5.219"}) == 6);
  // Staging the same SETs again adds nothing new: no message.
  r = (*c)->Command(StageCommand(sha->str, routes, w, 6, w.size(), 128));
  REQUIRE(r.ok());
  CHECK(r->integer == 0);

  auto o = FakeOrchagent::Connect(redis.address(), 1024, merge);
  REQUIRE(o.ok());
  (*o)->Drain();
  for (const auto& v : (*o)->violations()) WARN(v);
  CHECK((*o)->violations().empty());
  CHECK((*o)->routes().size() == 1502);  // 1500, 10.9.0.3 and 10.9.0.5
  CHECK((*o)->routes().at("10.9.0.3") == "bagd-1");
  CHECK_FALSE((*o)->routes().contains("10.9.0.4"));
  CHECK((*o)->stats().route_dels == 2);
  CHECK(n({"EXISTS", "ROUTE_TABLE:10.9.0.2"}) == 0);
  CHECK(n({"HLEN", "ROUTE_TABLE:10.9.0.3"}) == 6);
  CHECK(n({"HLEN", "ROUTE_TABLE:10.9.0.5"}) == 7);  // merged: the old field stays
  CHECK(n({"HEXISTS", "ROUTE_TABLE:10.9.0.5", "extra"}) == 1);
  CHECK(n({"HLEN", "ROUTE_TABLE:10.100.5.219"}) == 6);
  CHECK(n({"SCARD", "ROUTE_TABLE_KEY_SET"}) == 0);
  CHECK(n({"SCARD", "ROUTE_TABLE_DEL_SET"}) == 0);
  CHECK(n({"EXISTS", "_ROUTE_TABLE:10.9.0.3"}) == 0);
}

TEST_CASE("appldb: a pop batch above the consumer's leaves keys waiting (why the default is 128)",
          "[appldb][redis]") {
  SKIP_WITHOUT_REDIS();
  Rig rig(128);
  rig.options.pop_batch = 1024;  // orchagent's -b 1024 assumed, but it runs with 128
  REQUIRE(rig.OpenBagd().ok());
  rib::FibUpdate u;
  u.group_upserts = {Group(1, {{"10.0.1.2", 1}, {"10.0.2.2", 1}})};
  for (int i = 0; i < 512; ++i) u.route_upserts.emplace_back(Route(i), 1);
  rig.reconciler->Update(u);
  rig.Flush();
  // One message for 512 keys: the consumer pops 128 and the rest wait for a message that
  // does not come; the stand-in reports it.
  CHECK_FALSE(rig.orch->violations().empty());
}

TEST_CASE("appldb: redis-server killed and restarted: reconnect, resync, nothing lost", "[appldb][redis]") {
  SKIP_WITHOUT_REDIS();
  Rig rig;
  rig.options.reconnect_first = 100ms;
  rig.options.reconnect_max = 1600ms;
  REQUIRE(rig.OpenBagd().ok());
  rib::FibUpdate u;
  u.group_upserts = {Group(1, {{"10.0.1.2", 1}, {"10.0.2.2", 3}})};
  for (int i = 0; i < 200; ++i) u.route_upserts.emplace_back(Route(i), 1);
  rig.reconciler->Update(u);
  rig.Flush();
  REQUIRE(rig.orch->routes().size() == 200);

  rig.redis.Kill();
  rig.orch_ptr = nullptr;
  rig.orch.reset();
  // A change while Redis is down: it fails, stays dirty, and nothing crashes.
  rib::FibUpdate change;
  change.group_upserts = {Group(1, {{"10.0.1.2", 7}, {"10.0.2.2", 3}})};
  for (int i = 200; i < 250; ++i) change.route_upserts.emplace_back(Route(i), 1);
  rig.reconciler->Update(change);
  FlushResult r = rig.Flush();
  CHECK(r.failed > 0);
  CHECK_FALSE(rig.backend->connected());
  CHECK(rig.reconciler->dirty());
  CHECK(rig.backend->counters().disconnects == 1);
  // Reconnect attempts back off while the server is away: 100, 200, 400 ms...
  auto next = rig.backend->Service();
  CHECK(next <= rig.now + 100ms);
  rig.now += 100ms;
  next = rig.backend->Service();  // fails: still down
  CHECK_FALSE(rig.backend->connected());
  CHECK(next - rig.now == 100ms);
  rig.now += 100ms;
  next = rig.backend->Service();
  CHECK(next - rig.now == 200ms);
  CHECK(rig.reconciler->Flush().failed > 0);  // still refused, fast

  // The server comes back empty (as after a crash without persistence), with a new orchagent.
  REQUIRE(rig.redis.Start());
  auto o = FakeOrchagent::Connect(rig.redis.address());
  REQUIRE(o.ok());
  rig.orch = std::move(*o);
  rig.orch_ptr = rig.orch.get();
  rig.now += 200ms;
  rig.backend->Service();
  REQUIRE(rig.backend->connected());
  CHECK(rig.backend->counters().reconnects == 1);
  CHECK(rig.reconciler->resync_wanted());
  // The daemon's FIB stage flushes at the event, before its (debounced) resync: refused, so
  // no route goes in ahead of its group.
  CHECK(rig.reconciler->Flush().failed > 0);
  CHECK(rig.orch->stats().keys() == 0);
  r = rig.Flush();
  CHECK(r.failed == 0);
  CHECK_FALSE(rig.reconciler->dirty());
  for (const auto& x : rig.orch->violations()) WARN(x);
  CHECK(rig.orch->violations().empty());
  CHECK(rig.orch->routes().size() == 250);
  REQUIRE(rig.orch->groups().size() == 1);
  CHECK(rig.orch->groups().begin()->second[0].weight == 7);
}

TEST_CASE("appldb: the connection drops but the server stays: resync writes only the difference",
          "[appldb][redis]") {
  SKIP_WITHOUT_REDIS();
  Rig rig;
  REQUIRE(rig.OpenBagd().ok());
  rib::FibUpdate u;
  u.group_upserts = {Group(1, {{"10.0.1.2", 1}, {"10.0.2.2", 3}})};
  for (int i = 0; i < 100; ++i) u.route_upserts.emplace_back(Route(i), 1);
  rig.reconciler->Update(u);
  rig.Flush();
  // Someone kills bagd's two connections (they carry its client name); the server stays.
  {
    auto c = RedisConnection::Connect(rig.redis.address(), 1000ms);
    REQUIRE(c.ok());
    auto list = (*c)->Command({"CLIENT", "LIST"});
    REQUIRE(list.ok());
    int killed = 0;
    for (absl::string_view line : absl::StrSplit(list->str, '\n')) {
      if (line.find(" name=bagd") == absl::string_view::npos) continue;
      const size_t id = line.find("id=");
      const std::string num(line.substr(id + 3, line.find(' ', id) - id - 3));
      auto k = (*c)->Command({"CLIENT", "KILL", "ID", num});
      killed += k.ok() && k->integer == 1;
    }
    REQUIRE(killed == 2);
  }
  rig.ServiceUntil([&] { return rig.backend->counters().disconnects == 1; });
  CHECK(rig.backend->counters().disconnects == 1);
  rig.now += 1s;
  rig.backend->Service();
  REQUIRE(rig.backend->connected());
  rig.orch->ResetStats();
  const FlushResult r = rig.Flush();
  CHECK(r.applied == 0);
  CHECK(rig.orch->stats().keys() == 0);
}

TEST_CASE("appldb: with swss_zmq enabled routes take the ZMQ path, and forced to Redis bagd refuses", "[appldb][redis]") {
  SKIP_WITHOUT_REDIS();
  Rig rig;
  auto c = RedisConnection::Connect(rig.redis.address(), 1000ms);
  REQUIRE(c.ok());
  auto r = (*c)->Pipeline({{"SELECT", "4"}, {"HSET", "SYSTEM_DEFAULTS|swss_zmq", "status", "enabled"}});
  REQUIRE(r.status.ok());
  rig.options.route_path = AppldbOptions::RoutePath::kRedis;
  const absl::Status st = rig.OpenBagd();
  CHECK(st.code() == absl::StatusCode::kFailedPrecondition);
  CHECK_THAT(std::string(st.message()), Catch::Contains("swss_zmq") && Catch::Contains("ROUTE_PATH_REDIS"));
  rig.options.route_path = AppldbOptions::RoutePath::kAuto;
  rig.options.zmq_endpoint = "tcp://127.0.0.1:1";  // nothing listens: connects in the background
  REQUIRE(rig.OpenBagd().ok());
  CHECK(rig.backend->zmq());
  CHECK(rig.backend->route_path() == "zmq tcp://127.0.0.1:1");
  CHECK_THAT(rig.backend->route_path_reason(), Catch::Contains("swss_zmq status=enabled"));
  (*c)->Pipeline({{"SELECT", "4"}, {"HSET", "SYSTEM_DEFAULTS|swss_zmq", "status", "disabled"}});
  REQUIRE(rig.OpenBagd().ok());
  CHECK_FALSE(rig.backend->zmq());
  CHECK(rig.backend->route_path() == "redis");
}

TEST_CASE("appldb: no redis at the socket is a clear error at start", "[appldb][redis]") {
  AppldbOptions o;
  o.address.unix_socket = "/nonexistent/redis.sock";
  auto b = AppldbBackend::Open(o, Resolve, nullptr);
  REQUIRE_FALSE(b.ok());
  CHECK_THAT(std::string(b.status().message()), Catch::Contains("/nonexistent/redis.sock"));
}

TEST_CASE("appldb: the group capacity comes from STATE_DB", "[appldb][redis]") {
  SKIP_WITHOUT_REDIS();
  Rig rig;
  REQUIRE(rig.OpenBagd().ok());
  CHECK(rig.backend->Capabilities().max_groups == 0);  // not published: unknown
  auto c = RedisConnection::Connect(rig.redis.address(), 1000ms);
  REQUIRE(c.ok());
  (*c)->Pipeline({{"SELECT", "6"}, {"HSET", "SWITCH_CAPABILITY|switch", "MAX_NEXTHOP_GROUP_COUNT", "512"}});
  REQUIRE(rig.OpenBagd().ok());
  CHECK(rig.backend->Capabilities().max_groups == 512);
  (*c)->Pipeline({{"SELECT", "6"}, {"HSET", "SWITCH_CAPABILITY|switch", "MAX_NEXTHOP_GROUP_COUNT", "many"}});
  REQUIRE(rig.OpenBagd().ok());
  CHECK(rig.backend->Capabilities().max_groups == 0);
  CHECK_THAT(rig.backend->TakeProblems().front(), Catch::Contains("MAX_NEXTHOP_GROUP_COUNT"));
}

TEST_CASE("appldb: a gateway without an interface is retried, the group goes in without it", "[appldb][redis]") {
  SKIP_WITHOUT_REDIS();
  Rig rig;
  REQUIRE(rig.OpenBagd().ok());
  rib::FibUpdate u;
  u.group_upserts = {Group(1, {{"10.0.1.2", 1}, {"192.0.2.9", 1}})};
  u.route_upserts.emplace_back(Route(0), 1);
  rig.reconciler->Update(u);
  const FlushResult r = rig.Flush();
  CHECK(r.failed == 1);
  REQUIRE(r.errors.size() == 1);
  CHECK_THAT(r.errors[0], Catch::Contains("192.0.2.9"));
  REQUIRE(rig.orch->groups().size() == 1);
  CHECK(rig.orch->groups().begin()->second.size() == 1);
  CHECK(rig.orch->routes().size() == 1);
  CHECK(rig.reconciler->dirty());
}

TEST_CASE("appldb: confirmation by the response channel, unconfirmed routes are written again",
          "[appldb][redis]") {
  SKIP_WITHOUT_REDIS();
  Rig rig;
  rig.options.confirm = true;
  rig.options.confirm_timeout = 5s;
  REQUIRE(rig.OpenBagd().ok());
  bool answer_late = false;
  rig.orch->set_respond([&](const std::string& key) { return key != "10.100.0.3" || answer_late; });
  rib::FibUpdate u;
  u.group_upserts = {Group(1, {{"10.0.1.2", 1}, {"10.0.2.2", 3}})};
  for (int i = 0; i < 10; ++i) u.route_upserts.emplace_back(Route(i), 1);
  rig.reconciler->Update(u);
  rig.Flush();
  CHECK(rig.orch->stats().responses == 9);
  rig.ServiceUntil([&] { return rig.backend->counters().confirmed == 9; });
  CHECK(rig.backend->counters().confirmed == 9);
  CHECK(rig.backend->RouteConfirmation(Route(0)) == AppldbBackend::Confirmation::kConfirmed);
  CHECK(rig.backend->RouteConfirmation(Route(3)) == AppldbBackend::Confirmation::kPending);
  auto g = rig.backend->Group(*rig.reconciler->GroupObject(1));
  REQUIRE(g);
  CHECK(g->name == GroupName(*rig.reconciler->GroupObject(1)));
  CHECK(g->confirmed == 9);
  CHECK(g->pending == 1);
  CHECK(rig.backend->unconfirmed() == 0);

  rig.now += 4s;
  rig.backend->Service();
  CHECK(rig.backend->counters().retries == 0);
  rig.now += 1s;  // the deadline
  rig.orch->ResetStats();
  answer_late = true;
  rig.backend->Service();
  CHECK(rig.backend->counters().timeouts == 1);
  CHECK(rig.backend->counters().retries == 1);
  CHECK(rig.backend->unconfirmed() == 1);
  rig.orch->Drain();
  CHECK(rig.orch->stats().route_sets == 1);  // only that route was written again
  rig.ServiceUntil([&] { return rig.backend->counters().confirmed == 10; });
  CHECK(rig.backend->RouteConfirmation(Route(3)) == AppldbBackend::Confirmation::kConfirmed);
  CHECK(rig.backend->unconfirmed() == 0);
  CHECK(rig.backend->Group(*rig.reconciler->GroupObject(1))->confirmed == 10);
  // Nothing else is due.
  rig.now += 1h;
  rig.backend->Service();
  CHECK(rig.backend->counters().retries == 1);
}

TEST_CASE("appldb: garbage in APPL_DB and on the response channel is reported, not fatal", "[appldb][redis]") {
  SKIP_WITHOUT_REDIS();
  Rig rig;
  rig.options.confirm = true;
  rig.Cli({"HSET", "NEXTHOP_GROUP_TABLE:bagd-77", "nexthop", "10.0.1.2,nonsense", "ifname", "a,b"});
  rig.Cli({"HSET", "NEXTHOP_GROUP_TABLE:bagd-x1", "nexthop", "10.0.1.2", "ifname", "a"});
  rig.Cli({"HSET", "ROUTE_TABLE:10.0.0.1/8", "protocol", "bagd", "nexthop_group", "bagd-77"});
  rig.Cli({"HSET", "ROUTE_TABLE:10.1.0.0/16", "protocol", "bagd", "nexthop_group", "bagd-77"});
  rig.Cli({"SET", "ROUTE_TABLE:10.2.0.0/16", "a string, not a hash"});
  REQUIRE(rig.OpenBagd().ok());
  CHECK(rig.backend->counters().bad_entries == 3);
  CHECK(rig.backend->TakeProblems().size() == 3);
  // bagd's own unreadable group and its route go at the sweep.
  rig.reconciler->Sweep();
  rig.Flush();
  CHECK(rig.Hash("NEXTHOP_GROUP_TABLE:bagd-77").empty());
  CHECK(rig.Hash("ROUTE_TABLE:10.1.0.0/16").empty());
  CHECK_FALSE(rig.Hash("NEXTHOP_GROUP_TABLE:bagd-x1").empty());  // not an id bagd writes: left alone
  for (const char* m : {"garbage", "[1,2]", "[\"SWSS_RC_SUCCESS\"]", "[\"SWSS_RC_SUCCESS\",\"10.9.0.0/16\"]"}) {
    rig.Cli({"PUBLISH", "APPL_DB_ROUTE_TABLE_RESPONSE_CHANNEL", m});
  }
  rig.ServiceUntil([&] { return rig.backend->counters().bad_responses == 3; });
  CHECK(rig.backend->counters().bad_responses == 3);
  CHECK(rig.backend->connected());
}

TEST_CASE("appldb: IPv6 routes and next hops, written and adopted", "[appldb][redis]") {
  SKIP_WITHOUT_REDIS();
  Rig rig;
  REQUIRE(rig.OpenBagd().ok());
  rib::FibUpdate u;
  u.group_upserts = {Group(1, {{"fd00:2::2", 2}, {"fd00:1::2", 1}})};
  u.route_upserts = {{*net::Prefix::Parse("2001:db8::/64"), 1}, {*net::Prefix::Parse("2001:db8:1::7/128"), 1}};
  rig.reconciler->Update(u);
  CHECK(rig.Flush().failed == 0);
  CHECK(rig.orch->violations().empty());
  const std::string name = GroupName(*rig.reconciler->GroupObject(1));
  CHECK(rig.Hash("ROUTE_TABLE:2001:db8::/64").at("nexthop_group") == name);
  CHECK(rig.Hash("ROUTE_TABLE:2001:db8:1::7").at("nexthop_group") == name);  // host route: no /128
  const auto g = rig.Hash("NEXTHOP_GROUP_TABLE:" + name);
  CHECK(g.at("nexthop") == "fd00:1::2,fd00:2::2");  // by address
  CHECK(g.at("ifname") == "PortChannel0001,PortChannel0002");
  CHECK(g.at("weight") == "1,2");
  REQUIRE(rig.OpenBagd().ok());
  rig.reconciler->Update(u);
  CHECK(rig.Flush().applied == 0);
  CHECK(rig.reconciler->stale_count() == 0);
}

}  // namespace
}  // namespace bagd::fib::sonic

namespace bagd::fib::sonic {
namespace {

TEST_CASE("appldb: the audit writes back a group someone rewrote and a route someone deleted",
          "[appldb][redis][repair]") {
  SKIP_WITHOUT_REDIS();
  Rig rig;
  REQUIRE(rig.OpenBagd().ok());
  rib::FibUpdate u;
  u.group_upserts = {Group(1, {{"10.0.1.2", 1}, {"10.0.2.2", 3}})};
  for (int i = 0; i < 5; ++i) u.route_upserts.emplace_back(Route(i), 1);
  rig.reconciler->Update(u);
  REQUIRE(rig.Flush().failed == 0);
  const std::string name = GroupName(*rig.reconciler->GroupObject(1));
  const std::string group_key = "NEXTHOP_GROUP_TABLE:" + name;
  REQUIRE(rig.Hash(group_key).at("weight") == "1,3");
  // Someone else: equal weights on bagd's group, one route gone (plain Redis writes, as a
  // script or an operator's redis-cli would do them; APPL_DB sends bagd no notification).
  rig.Cli({"HSET", group_key, "weight", "9,9"});
  rig.Cli({"DEL", "ROUTE_TABLE:10.100.0.2"});
  auto found = rig.reconciler->Audit(rig.now);
  REQUIRE(found.ok());
  CHECK(*found == 2);
  CHECK(rig.Flush().failed == 0);
  rig.orch->Drain();
  CHECK(rig.Hash(group_key).at("weight") == "1,3");
  CHECK(rig.Hash("ROUTE_TABLE:10.100.0.2").at("nexthop_group") == name);
  CHECK(rig.orch->violations().empty());
  const auto& st = rig.reconciler->stats();
  CHECK(st.repairs[static_cast<int>(RepairObject::kGroup)][static_cast<int>(RepairCause::kAudit)] == 1);
  CHECK(st.repairs[static_cast<int>(RepairObject::kRoute)][static_cast<int>(RepairCause::kAudit)] == 1);
  // All as bagd wrote it: the next audit finds nothing.
  found = rig.reconciler->Audit(rig.now);
  REQUIRE(found.ok());
  CHECK(*found == 0);
}

TEST_CASE("appldb: a response naming another group confirms nothing", "[appldb][redis][answers]") {
  SKIP_WITHOUT_REDIS();
  Rig rig;
  rig.options.confirm = true;
  REQUIRE(rig.OpenBagd().ok());
  rig.orch->set_respond([](const std::string&) { return false; });
  rib::FibUpdate u;
  u.group_upserts = {Group(1, {{"10.0.1.2", 1}, {"10.0.2.2", 3}})};
  u.route_upserts.emplace_back(Route(0), 1);
  rig.reconciler->Update(u);
  rig.Flush();
  REQUIRE(rig.backend->RouteConfirmation(Route(0)) == AppldbBackend::Confirmation::kPending);
  const std::string name = GroupName(*rig.reconciler->GroupObject(1));
  // A late answer for an earlier write of the route, on another group.
  rig.Cli({"PUBLISH", "APPL_DB_ROUTE_TABLE_RESPONSE_CHANNEL",
           "[\"SWSS_RC_SUCCESS\",\"10.100.0.0\",\"err_str\",\"SWSS_RC_SUCCESS\",\"protocol\",\"bagd\","
           "\"nexthop_group\",\"bagd-1\"]"});
  rig.ServiceUntil([&] { return rig.backend->counters().stale_responses == 1; });
  CHECK(rig.backend->counters().stale_responses == 1);
  CHECK(rig.backend->RouteConfirmation(Route(0)) == AppldbBackend::Confirmation::kPending);
  // Its own answer confirms it.
  rig.Cli({"PUBLISH", "APPL_DB_ROUTE_TABLE_RESPONSE_CHANNEL",
           "[\"SWSS_RC_SUCCESS\",\"10.100.0.0\",\"err_str\",\"SWSS_RC_SUCCESS\",\"protocol\",\"bagd\","
           "\"nexthop_group\",\"" + name + "\"]"});
  rig.ServiceUntil([&] { return rig.backend->counters().confirmed == 1; });
  CHECK(rig.backend->RouteConfirmation(Route(0)) == AppldbBackend::Confirmation::kConfirmed);
}

}  // namespace
}  // namespace bagd::fib::sonic
