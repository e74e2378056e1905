// SONiC's ZMQ route path: the message encoder against golden bytes written by hand from the
// format's description (project reference sonic-appl-db.md, "The ZMQ route path"), and the
// backend with the reconciler against a real redis-server (groups, persistence) and a test
// consumer bound to a real ZMQ socket (tests/fib/sonic/fake_zmq_orchagent.h, which decodes
// the format from the same description and checks order and fields after every message).
// Nothing here waits for a timer of bagd's: the loops wait for the consumer's socket or for
// libzmq's own threads (connects), with a bound.
#include <catch2/catch.hpp>

#include <functional>
#include <map>

#include "fib_sync/reconciler.h"
#include "fib_sync/sonic/appldb_backend.h"
#include "fib_sync/sonic/zmq_message.h"
#include "tests/fib/sonic/appldb_test_support.h"
#include "tests/fib/sonic/fake_orchagent.h"
#include "tests/fib/sonic/fake_zmq_orchagent.h"
#include "tests/fib/sonic/redis_server.h"

namespace bagd::fib::sonic {
namespace {

using test::DecodeZmqRouteMessage;
using test::FakeOrchagent;
using test::FakeZmqOrchagent;
using test::RedisServer;
using namespace std::chrono_literals;

// --- the encoder: golden bytes --------------------------------------------------------------

// The description's words, spelled out byte by byte (8 bytes, little-endian).
std::string Bytes(const char* s, size_t n) { return std::string(s, n); }
#define GOLDEN(lit) Bytes(lit, sizeof(lit) - 1)

TEST_CASE("zmq message: golden bytes of a DEL and a SET in one message", "[appldb][zmq]") {
  ZmqMessageBuilder b("APPL_DB", "ROUTE_TABLE");
  b.Add(Write{"10.0.0.1", true, {{"ignored", "on a delete"}}});
  b.Add(Write{"10.1.0.0/24", false, {{"nexthop_group", "bagd-7"}, {"protocol", "bagd"}}});
  CHECK(b.entries() == 2);
  const std::string want = GOLDEN(
      "\x05\0\0\0\0\0\0\0"                         // 5 pairs: (db, table), 2 entry heads, 2 fields
      "\x07\0\0\0\0\0\0\0" "APPL_DB"
      "\x0b\0\0\0\0\0\0\0" "ROUTE_TABLE"
      "\x08\0\0\0\0\0\0\0" "10.0.0.1"              // a DEL: 0 fields
      "\x01\0\0\0\0\0\0\0" "0"
      "\x0b\0\0\0\0\0\0\0" "10.1.0.0/24"           // a SET with 2 fields
      "\x01\0\0\0\0\0\0\0" "2"
      "\x0d\0\0\0\0\0\0\0" "nexthop_group"
      "\x06\0\0\0\0\0\0\0" "bagd-7"
      "\x08\0\0\0\0\0\0\0" "protocol"
      "\x04\0\0\0\0\0\0\0" "bagd");
  const std::string got = b.Take();
  CHECK(got == want);
  // The builder starts over: an empty message is the (db, table) pair alone.
  CHECK(b.empty());
  CHECK(b.Take() == GOLDEN("\x01\0\0\0\0\0\0\0"
                           "\x07\0\0\0\0\0\0\0" "APPL_DB"
                           "\x0b\0\0\0\0\0\0\0" "ROUTE_TABLE"));
}

TEST_CASE("zmq message: bagd's route entry, 12 fields, lengths above 255, empty values", "[appldb][zmq]") {
  ZmqMessageBuilder b("APPL_DB", "ROUTE_TABLE");
  const std::string long_key(300, 'k');
  b.Add(Write{long_key, false, {{"nexthop", ""}}});
  const std::string got = b.Take();
  const std::string want = GOLDEN("\x03\0\0\0\0\0\0\0"
                                  "\x07\0\0\0\0\0\0\0" "APPL_DB"
                                  "\x0b\0\0\0\0\0\0\0" "ROUTE_TABLE"
                                  "\x2c\x01\0\0\0\0\0\0") +  // 300 = 0x012c
                           long_key + GOLDEN("\x01\0\0\0\0\0\0\0" "1"
                                             "\x07\0\0\0\0\0\0\0" "nexthop"
                                             "\0\0\0\0\0\0\0\0");  // "" : length 0, no bytes
  CHECK(got == want);
  // RouteFields: 6 fields, so the count is "6"; SizeOf() is what Add() adds.
  ZmqMessageBuilder c("APPL_DB", "ROUTE_TABLE");
  const size_t empty = c.size();
  const Write w{"10.1.0.0/24", false, RouteFields("bagd-1", "bagd")};
  c.Add(w);
  CHECK(c.size() - empty == ZmqMessageBuilder::SizeOf(w));
  auto m = DecodeZmqRouteMessage(c.Take());
  REQUIRE(m.ok());
  REQUIRE(m->entries.size() == 1);
  CHECK(m->entries[0].fields == w.fields);
}

TEST_CASE("zmq message: the test consumer's decoder refuses malformed messages", "[appldb][zmq]") {
  ZmqMessageBuilder b("APPL_DB", "ROUTE_TABLE");
  b.Add(Write{"10.1.0.0/24", false, {{"nexthop_group", "bagd-7"}}});
  const std::string good = b.Take();
  REQUIRE(DecodeZmqRouteMessage(good).ok());
  CHECK_FALSE(DecodeZmqRouteMessage(good.substr(0, 7)).ok());               // no count
  CHECK_FALSE(DecodeZmqRouteMessage(good.substr(0, good.size() - 1)).ok()); // truncated value
  CHECK_FALSE(DecodeZmqRouteMessage(good + "x").ok());                      // trailing bytes
  std::string more = good;
  more[0] = 4;  // a pair announced that is not there
  CHECK_FALSE(DecodeZmqRouteMessage(more).ok());
  std::string count = good;
  count[count.find("10.1.0.0/24") + 11 + 8] = 'x';  // the field count (after its length word) is not a number
  CHECK_FALSE(DecodeZmqRouteMessage(count).ok());
}

// --- the backend on the ZMQ path ------------------------------------------------------------

using test::A;
using test::Group;
using test::Resolve;
using test::Route;

// After every Apply: the Redis stand-in takes the groups, the ZMQ stand-in every route entry
// bagd sent (it applies each message as it comes, checking it).
class Consuming : public FibBackend {
 public:
  Consuming(AppldbBackend& b, FakeOrchagent& groups, FakeZmqOrchagent*& routes) : b_(b), g_(groups), r_(routes) {}
  FibCapabilities Capabilities() const override { return b_.Capabilities(); }
  std::vector<absl::Status> Apply(std::span<const FibOp> ops) override {
    auto st = b_.Apply(ops);
    b_.WaitPersisted();  // APPL_DB as the test reads it
    g_.Drain();
    if (r_ && r_->stats().entries() < Sent()) r_->ReceiveUntil(Sent(), 5000);
    return st;
  }
  absl::StatusOr<FibState> Dump() override { return b_.Dump(); }
  size_t Sent() const { return b_.counters().route_writes + b_.counters().route_deletes - base_; }
  void Rebase() { base_ = b_.counters().route_writes + b_.counters().route_deletes; }

 private:
  AppldbBackend& b_;
  FakeOrchagent& g_;
  FakeZmqOrchagent*& r_;
  size_t base_ = 0;
};

struct ZmqRig {
  RedisServer redis;
  std::chrono::steady_clock::time_point now{std::chrono::seconds(1000)};
  AppldbOptions options;
  std::unique_ptr<FakeOrchagent> groups;
  std::unique_ptr<FakeZmqOrchagent> routes;
  FakeZmqOrchagent* routes_ptr = nullptr;
  std::unique_ptr<AppldbBackend> backend;
  std::unique_ptr<Consuming> consuming;
  std::unique_ptr<Reconciler> reconciler;

  explicit ZmqRig(bool bind = true) {
    REQUIRE(redis.Start());
    options.address = redis.address();
    options.route_path = AppldbOptions::RoutePath::kZmq;
    auto o = FakeOrchagent::Connect(redis.address(), 1024);
    REQUIRE(o.ok());
    groups = std::move(*o);
    if (bind) {
      Bind("tcp://127.0.0.1:*");
    } else {
      // Reserve a port: bind, note it, close (orchagent is "down" until Bind()).
      Bind("tcp://127.0.0.1:*");
      routes.reset();
      routes_ptr = nullptr;
    }
  }
  void Bind(const std::string& endpoint) {
    auto z = FakeZmqOrchagent::Bind(endpoint, groups.get());
    REQUIRE(z.ok());
    routes = std::move(*z);
    routes_ptr = routes.get();
    options.zmq_endpoint = routes->endpoint();
  }
  absl::Status OpenBagd() {
    reconciler.reset();
    consuming.reset();
    backend.reset();
    auto b = AppldbBackend::Open(options, Resolve, [this] { return now; });
    if (!b.ok()) return b.status();
    backend = std::move(*b);
    consuming = std::make_unique<Consuming>(*backend, *groups, routes_ptr);
    if (routes) routes->ResetStats();
    reconciler = std::make_unique<Reconciler>(*consuming);
    backend->SetEventHandler([this](const FibEvent& e) { reconciler->OnEvent(e); });
    return reconciler->Start();
  }
  FlushResult Flush() {
    if (reconciler->resync_wanted()) REQUIRE(reconciler->Resync().ok());
    return reconciler->Flush();
  }
  // Service() and the consumer until `done` (libzmq reconnects on its own threads).
  void ServiceUntil(const std::function<bool()>& done) {
    for (int i = 0; i < 300 && !done(); ++i) {
      backend->Service();
      groups->Drain();
      if (routes) routes->Receive(20);
    }
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
  int64_t Int(const std::vector<std::string>& argv) {
    auto c = RedisConnection::Connect(redis.address(), 1000ms);
    REQUIRE(c.ok());
    auto r = (*c)->Command(argv);
    REQUIRE(r.ok());
    return r->integer;
  }
  void CheckClean() {
    for (const auto& v : routes->violations()) WARN(v);
    for (const auto& v : groups->violations()) WARN(v);
    CHECK(routes->violations().empty());
    CHECK(groups->violations().empty());
    CHECK(groups->pending_group_deletes().empty());
  }
};

#define SKIP_WITHOUT_REDIS()                        \
  if (!RedisServer::Available()) {                  \
    WARN("redis-server is not installed: skipped"); \
    return;                                         \
  }

TEST_CASE("zmq path: routes over ZMQ, groups over Redis, the same routes persisted in APPL_DB", "[appldb][zmq][redis]") {
  SKIP_WITHOUT_REDIS();
  ZmqRig rig;
  REQUIRE(rig.OpenBagd().ok());
  CHECK(rig.backend->zmq());
  CHECK_THAT(rig.backend->route_path_reason(), Catch::Contains("ROUTE_PATH_ZMQ"));
  rib::FibUpdate u;
  u.group_upserts = {Group(1, {{"10.0.1.2", 3}, {"10.0.2.2", 1}}), Group(2, {{"10.0.1.2", 1}, {"10.0.3.2", 1}})};
  for (int i = 0; i < 10; ++i) u.route_upserts.emplace_back(Route(i), i < 7 ? 1 : 2);
  rig.reconciler->Update(u);
  CHECK(rig.Flush().failed == 0);
  rig.CheckClean();
  const std::string g1 = GroupName(*rig.reconciler->GroupObject(1));
  REQUIRE(rig.routes->routes().size() == 10);
  CHECK(rig.routes->routes().at("10.100.0.3") == g1);
  CHECK(rig.routes->users(g1) == 7);
  CHECK(rig.routes->stats().messages == 1);  // 10 routes, one message
  CHECK(rig.groups->stats().group_sets == 2);
  CHECK(rig.groups->stats().route_sets == 0);  // no route through the Redis protocol
  // Persistence: the main hash, full field set; nothing staged, no key set.
  const auto h = rig.Hash("ROUTE_TABLE:10.100.0.3");
  CHECK(h.at("nexthop_group") == g1);
  CHECK(h.at("protocol") == "bagd");
  CHECK(h.at("nexthop").empty());
  CHECK(rig.Int({"EXISTS", "ROUTE_TABLE_KEY_SET", "_ROUTE_TABLE:10.100.0.3"}) == 0);
  CHECK(rig.backend->counters().persist_writes == 10);
  CHECK(rig.backend->counters().route_writes == 10);
  CHECK(rig.backend->zmq_sender()->counters().messages == 1);
}

TEST_CASE("zmq path: make-before-break across the two channels, deletes persisted", "[appldb][zmq][redis]") {
  SKIP_WITHOUT_REDIS();
  ZmqRig rig;
  REQUIRE(rig.OpenBagd().ok());
  rib::FibUpdate u;
  u.group_upserts = {Group(1, {{"10.0.1.2", 1}, {"10.0.2.2", 1}})};
  for (int i = 0; i < 100; ++i) u.route_upserts.emplace_back(Route(i), 1);
  rig.reconciler->Update(u);
  rig.Flush();
  const std::string old_group = GroupName(*rig.reconciler->GroupObject(1));
  rib::FibUpdate v;
  v.group_upserts = {Group(2, {{"10.0.1.2", 1}, {"10.0.3.2", 2}})};
  for (int i = 0; i < 99; ++i) v.route_upserts.emplace_back(Route(i), 2);
  v.route_deletes = {Route(99)};
  v.group_deletes = {1};
  rig.reconciler->Update(v);
  CHECK(rig.Flush().failed == 0);
  rig.CheckClean();
  CHECK_FALSE(rig.groups->groups().contains(old_group));
  CHECK(rig.routes->routes().size() == 99);
  CHECK(rig.routes->users(old_group) == 0);
  CHECK(rig.Hash("ROUTE_TABLE:10.100.0.99").empty());
  CHECK(rig.Hash("ROUTE_TABLE:10.100.0.98").at("nexthop_group") == GroupName(*rig.reconciler->GroupObject(2)));
}

TEST_CASE("zmq path: a restart adopts the persisted routes and sends nothing", "[appldb][zmq][redis]") {
  SKIP_WITHOUT_REDIS();
  ZmqRig rig;
  REQUIRE(rig.OpenBagd().ok());
  rib::FibUpdate u;
  u.group_upserts = {Group(1, {{"10.0.1.2", 1}, {"10.0.2.2", 1}})};
  for (int i = 0; i < 50; ++i) u.route_upserts.emplace_back(Route(i), 1);
  rig.reconciler->Update(u);
  rig.Flush();
  REQUIRE(rig.routes->routes().size() == 50);
  REQUIRE(rig.OpenBagd().ok());  // a new run: Dump() reads APPL_DB's main hashes
  rig.reconciler->Update(u);
  const FlushResult r = rig.Flush();
  CHECK(r.route_ops == 0);
  CHECK(r.group_ops == 0);
  CHECK(rig.routes->stats().messages == 0);
  CHECK(rig.backend->zmq_sender()->counters().messages == 0);
}

TEST_CASE("zmq path: many routes to a message, bounded by count and bytes", "[appldb][zmq][redis]") {
  SKIP_WITHOUT_REDIS();
  ZmqRig rig;
  rig.options.zmq_entries_per_message = 1000;
  REQUIRE(rig.OpenBagd().ok());
  rib::FibUpdate u;
  u.group_upserts = {Group(1, {{"10.0.1.2", 1}, {"10.0.2.2", 1}})};
  for (int i = 0; i < 2500; ++i) u.route_upserts.emplace_back(Route(i), 1);
  rig.reconciler->Update(u);
  rig.Flush();
  CHECK(rig.routes->routes().size() == 2500);
  CHECK(rig.routes->stats().messages == 3);
  rig.CheckClean();
  // A byte bound: no message over it (orchagent refuses 16 MiB and more).
  rig.options.zmq_message_bytes = 4096;
  REQUIRE(rig.OpenBagd().ok());
  rib::FibUpdate w;
  w.group_upserts = {Group(2, {{"10.0.1.2", 1}, {"10.0.3.2", 1}})};
  for (int i = 0; i < 2500; ++i) w.route_upserts.emplace_back(Route(i), 2);
  w.group_deletes = {1};
  rig.reconciler->Update(w);
  rig.Flush();
  CHECK(rig.routes->routes().size() == 2500);
  const auto& s = rig.routes->stats();
  CHECK(s.messages >= 2500 * 100 / 4096);
  CHECK(s.bytes <= s.messages * 4096);
  rig.CheckClean();
}

TEST_CASE("zmq path: a reweight under 100k routes is one group write, no route message", "[appldb][zmq][redis]") {
  SKIP_WITHOUT_REDIS();
  ZmqRig rig;
  REQUIRE(rig.OpenBagd().ok());
  rib::FibUpdate u;
  u.group_upserts = {Group(1, {{"10.0.1.2", 1}, {"10.0.2.2", 1}, {"10.0.3.2", 1}})};
  for (int i = 0; i < 100000; ++i) u.route_upserts.emplace_back(Route(i), 1);
  rig.reconciler->Update(u);
  rig.Flush();
  REQUIRE(rig.routes->routes().size() == 100000);
  rig.groups->ResetStats();
  const uint64_t messages = rig.backend->zmq_sender()->counters().messages;
  rib::FibUpdate w;
  w.group_upserts = {Group(1, {{"10.0.1.2", 10}, {"10.0.2.2", 40}, {"10.0.3.2", 100}})};
  rig.reconciler->Update(w);
  const FlushResult r = rig.Flush();
  CHECK(r.applied == 1);
  CHECK(rig.groups->stats().keys() == 1);
  CHECK(rig.backend->zmq_sender()->counters().messages == messages);
  CHECK(rig.groups->groups().begin()->second[2].weight == 100);
  rig.CheckClean();
}

TEST_CASE("zmq path: orchagent restarts: the socket reconnects and everything is sent again", "[appldb][zmq][redis]") {
  SKIP_WITHOUT_REDIS();
  ZmqRig rig;
  REQUIRE(rig.OpenBagd().ok());
  rib::FibUpdate u;
  u.group_upserts = {Group(1, {{"10.0.1.2", 1}, {"10.0.2.2", 1}})};
  for (int i = 0; i < 300; ++i) u.route_upserts.emplace_back(Route(i), 1);
  rig.reconciler->Update(u);
  rig.Flush();
  REQUIRE(rig.routes->routes().size() == 300);
  rig.ServiceUntil([&] { return rig.backend->zmq_sender()->peer_connected(); });
  REQUIRE(rig.backend->zmq_sender()->peer_connected());
  // orchagent goes away; bagd writes on (queued, or lost in the dead connection).
  rig.routes->Close();
  rig.ServiceUntil([&] { return !rig.backend->zmq_sender()->peer_connected(); });
  rib::FibUpdate v;
  for (int i = 300; i < 400; ++i) v.route_upserts.emplace_back(Route(i), 1);
  v.route_deletes = {Route(0)};
  rig.reconciler->Update(v);
  CHECK(rig.Flush().failed == 0);
  // It comes back empty; bagd sees the reconnect and sends every group and route again.
  REQUIRE(rig.routes->Rebind().ok());
  rig.ServiceUntil([&] { return rig.backend->counters().zmq_resends > 0 && rig.routes->routes().size() == 399; });
  CHECK(rig.backend->counters().zmq_resends >= 1);
  CHECK(rig.backend->zmq_sender()->counters().disconnects >= 1);
  CHECK(rig.routes->routes().size() == 399);
  CHECK_FALSE(rig.routes->routes().contains("10.100.0.0"));
  rig.CheckClean();
}

TEST_CASE("zmq path: the high-water mark reached while orchagent is down: kept, sent later, nothing lost",
          "[appldb][zmq][redis]") {
  SKIP_WITHOUT_REDIS();
  ZmqRig rig(/*bind=*/false);
  rig.options.zmq_high_water_mark = 2;
  rig.options.zmq_send_wait = 0ms;
  rig.options.zmq_entries_per_message = 10;
  REQUIRE(rig.OpenBagd().ok());
  rib::FibUpdate u;
  u.group_upserts = {Group(1, {{"10.0.1.2", 1}, {"10.0.2.2", 1}})};
  for (int i = 0; i < 50; ++i) u.route_upserts.emplace_back(Route(i), 1);
  rig.reconciler->Update(u);
  const FlushResult r = rig.Flush();
  // Two messages of 10 wait in the socket's queue; the third finds it full.
  CHECK(r.failed == 30);
  CHECK(rig.backend->zmq_sender()->counters().hwm_full == 1);
  CHECK(rig.backend->zmq_sender()->counters().messages == 2);
  CHECK(rig.Hash("ROUTE_TABLE:10.100.0.9").at("protocol") == "bagd");  // sent: persisted
  CHECK(rig.Hash("ROUTE_TABLE:10.100.0.20").empty());                 // not sent: not persisted
  // orchagent comes up and reads slowly: one message at a time, the rest retried by Flush.
  rig.Bind(rig.options.zmq_endpoint);
  rig.consuming->Rebase();
  for (int i = 0; i < 50 && rig.routes->routes().size() < 50; ++i) {
    rig.routes->Receive(100);
    rig.Flush();
  }
  CHECK(rig.routes->routes().size() == 50);
  rig.CheckClean();
}

}  // namespace
}  // namespace bagd::fib::sonic
