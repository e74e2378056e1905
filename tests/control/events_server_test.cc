// WatchEvents end to end: a real ControlServer with an EventHub, the client code bagctl
// uses, and `bagctl monitor` itself. Events are published by the test as the daemon's
// stages would; the stream is read as an operator's bagctl reads it.
#include <grpcpp/grpcpp.h>

#include <catch2/catch.hpp>
#include <atomic>
#include <chrono>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "bgpd/control/control.grpc.pb.h"
#include "bgpd/control/control_client.h"
#include "bgpd/control/control_server.h"
#include "bgpd/control/event_hub.h"
#include "tests/control/fake_backend.h"
#include "tests/control/serving.h"
#include "tools/bagctl/control_commands.h"
#include "tools/bagctl/bfd_render.h"
#include "tools/bagctl/event_render.h"

using namespace bagd::control;
using bagd::control::testing::FakeBackend;
using namespace std::chrono_literals;

namespace {

// A hub and a server streaming from it.
struct Streaming {
  explicit Streaming(EventHubOptions options = {}, std::chrono::milliseconds stopping_ack = 1000ms)
      : hub(options), serving(Options(&hub, stopping_ack)) {}
  static ControlServerOptions Options(EventHub* hub, std::chrono::milliseconds stopping_ack) {
    ControlServerOptions o;
    o.events = hub;
    o.stopping_ack = stopping_ack;
    return o;
  }
  EventHub hub;
  testing::Serving<FakeBackend> serving;
};

// Until `condition` holds, for at most 10 s (another thread makes it true: no timer).
template <typename F>
bool Eventually(F condition) {
  const auto until = std::chrono::steady_clock::now() + 10s;
  while (!condition()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(2ms);
  }
  return true;
}

v1::Event Neighbor(const std::string& address, const std::string& from, const std::string& to,
                   const std::string& cause) {
  v1::Event e;
  e.set_time_unix_ms(1714564800250);
  auto& n = *e.mutable_neighbor();
  n.set_address(address);
  n.set_from(from);
  n.set_to(to);
  n.set_cause(cause);
  return e;
}

}  // namespace

TEST_CASE("WatchEvents: subscribed first, then the events of the asked types as they happen", "[control][events]") {
  Streaming s;
  auto client = s.serving.Client();
  std::vector<v1::Event> got;
  absl::Status st;  // Catch2 assertions stay on the test's thread
  std::thread watcher([&] {
    st = client->WatchEvents({"neighbor", "config"}, [&](v1::Event& e) {
      got.push_back(e);
      return got.size() == 3 ? absl::CancelledError("enough") : absl::OkStatus();
    });
  });
  REQUIRE(Eventually([&] { return s.hub.subscribers() == 1; }));
  s.hub.Publish(Neighbor("192.0.2.2", "OpenConfirm", "Established", "established"));
  v1::Event fib;
  fib.mutable_fib()->set_operation("route 10.0.0.0/24 -> group 7");
  s.hub.Publish(fib);  // not asked for
  v1::Event config;
  config.mutable_config()->set_source("SIGHUP");
  config.mutable_config()->set_applied(true);
  s.hub.Publish(config);
  watcher.join();
  CHECK(st.message() == "enough");
  REQUIRE(got.size() == 3);
  const auto& types = got[0].subscribed().types();
  CHECK(std::vector<std::string>(types.begin(), types.end()) == std::vector<std::string>{"neighbor", "config"});
  CHECK(got[1].neighbor().to() == "Established");
  CHECK(got[1].sequence() == 1);
  CHECK(got[2].config().source() == "SIGHUP");
  CHECK(got[2].sequence() == 3);
  // The client cancelled: its subscription is gone from the hub.
  CHECK(Eventually([&] { return s.hub.subscribers() == 0; }));
}

TEST_CASE("WatchEvents: unknown types are INVALID_ARGUMENT, a bagd without events UNIMPLEMENTED", "[control][events]") {
  Streaming s;
  auto stub = s.serving.RawStub();
  grpc::ClientContext context;
  v1::WatchEventsRequest request;
  request.add_types("routes");
  auto reader = stub->WatchEvents(&context, request);
  v1::Event e;
  CHECK(!reader->Read(&e));
  const grpc::Status st = reader->Finish();
  CHECK(st.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  CHECK(st.error_message() == "unknown event type \"routes\" (the types are neighbor, weights, fib, config, bfd)");

  testing::Serving<FakeBackend> plain;  // no hub
  auto client = plain.Client();
  absl::Status none = client->WatchEvents({}, [](v1::Event&) { return absl::OkStatus(); });
  CHECK(absl::IsUnimplemented(none));
  CHECK(none.message() == "this bagd publishes no events");
}

TEST_CASE("WatchEvents: a client that reads too slowly loses events and is told how many", "[control][events]") {
  EventHubOptions options;
  options.queue_limit = 64;
  Streaming s(options);
  auto client = s.serving.Client();
  std::atomic<bool> release{false};
  uint64_t events = 0, dropped = 0, last_sequence = 0;
  bool in_order = true;
  constexpr uint64_t kPublished = 100000;
  absl::Status st;
  std::thread watcher([&] {
    st = client->WatchEvents({}, [&](v1::Event& e) {
      if (e.has_subscribed()) {
        while (!release) std::this_thread::sleep_for(1ms);  // a client stuck for a while
        return absl::OkStatus();
      }
      if (e.has_dropped()) {
        dropped += e.dropped().count();
      } else {
        ++events;
        in_order = in_order && e.sequence() > last_sequence;
        last_sequence = e.sequence();
      }
      return events + dropped == kPublished ? absl::CancelledError("all accounted for") : absl::OkStatus();
    });
  });
  REQUIRE(Eventually([&] { return s.hub.subscribers() == 1; }));
  const auto start = std::chrono::steady_clock::now();
  for (uint64_t i = 0; i < kPublished; ++i) {
    v1::Event e;
    e.mutable_fib()->set_operation(absl::StrCat("route ", i));
    s.hub.Publish(std::move(e));
  }
  // The publisher never waited for the stuck reader (100000 events in well under 10 s even
  // on a loaded machine; each is a short lock and a copy at most).
  CHECK(std::chrono::steady_clock::now() - start < 10s);
  release = true;
  watcher.join();
  CHECK(st.message() == "all accounted for");
  CHECK(in_order);
  CHECK(dropped > 0);
  CHECK(events + dropped == kPublished);
  CHECK(events < kPublished);
}

TEST_CASE("WatchEvents: bagd stopping with subscribers attached ends their streams at once", "[control][events]") {
  SECTION("the hub closes first (the daemon's order): a last stopping event, then OK") {
    // The server would wait 30 s for the client to end the call after "stopping": the stop
    // is quick only because the client does, on reading it (so the event surely arrived).
    Streaming s({}, 30s);
    auto client = s.serving.Client();
    std::vector<v1::Event> got;
    absl::Status st = absl::UnknownError("not finished");
    std::thread watcher([&] {
      st = client->WatchEvents({}, [&](v1::Event& e) {
        got.push_back(e);
        return absl::OkStatus();
      });
    });
    REQUIRE(Eventually([&] { return s.hub.subscribers() == 1; }));
    s.hub.Publish(Neighbor("192.0.2.2", "Established", "Idle", "admin"));
    s.hub.Close("bagd is shutting down");
    const auto start = std::chrono::steady_clock::now();
    s.serving.server->Stop();
    CHECK(std::chrono::steady_clock::now() - start < 3s);  // not the 5 s grace: the stream ended
    watcher.join();
    INFO(st.ToString());
    CHECK(st.ok());
    REQUIRE(got.size() == 3);
    CHECK(got[1].neighbor().cause() == "admin");
    CHECK(got[2].stopping().reason() == "bagd is shutting down");
  }
  SECTION("a handler that fails on the stopping event gets its own error back") {
    Streaming s({}, 30s);
    auto client = s.serving.Client();
    absl::Status st;
    std::thread watcher([&] {
      st = client->WatchEvents({}, [](v1::Event& e) {
        return e.has_stopping() ? absl::CancelledError("output closed") : absl::OkStatus();
      });
    });
    REQUIRE(Eventually([&] { return s.hub.subscribers() == 1; }));
    s.hub.Close("bagd is shutting down");
    s.serving.server->Stop();
    watcher.join();
    CHECK(absl::IsCancelled(st));
    CHECK(st.message() == "output closed");
  }
  SECTION("a client that does not end the call on stopping: the stream waits for it, then ends") {
    Streaming s({}, 400ms);
    auto stub = s.serving.RawStub();
    grpc::ClientContext context;
    auto reader = stub->WatchEvents(&context, v1::WatchEventsRequest());
    std::vector<v1::Event> got;
    std::thread watcher([&] {
      v1::Event e;
      while (reader->Read(&e)) got.push_back(e);
      reader->Finish();
    });
    REQUIRE(Eventually([&] { return s.hub.subscribers() == 1; }));
    s.hub.Close("bagd is shutting down");
    const auto start = std::chrono::steady_clock::now();
    s.serving.server->Stop();
    const auto took = std::chrono::steady_clock::now() - start;
    watcher.join();
    CHECK(took >= 350ms);  // held for the client to acknowledge
    CHECK(took < 3s);      // not the 5 s grace
    REQUIRE(got.size() == 2);
    CHECK(got[0].has_subscribed());
    CHECK(got[1].stopping().reason() == "bagd is shutting down");
  }
  SECTION("the server stops without the hub closing: the stream ends UNAVAILABLE, the subscription goes") {
    Streaming s;
    auto client = s.serving.Client();
    absl::Status st;
    std::thread watcher([&] { st = client->WatchEvents({}, [](v1::Event&) { return absl::OkStatus(); }); });
    REQUIRE(Eventually([&] { return s.hub.subscribers() == 1; }));
    const auto start = std::chrono::steady_clock::now();
    s.serving.server->Stop();
    CHECK(std::chrono::steady_clock::now() - start < 3s);
    watcher.join();
    CHECK(absl::IsUnavailable(st));
    CHECK(s.hub.subscribers() == 0);
    s.hub.Publish(Neighbor("192.0.2.2", "Idle", "Connect", "start"));  // nobody: fine
  }
}

TEST_CASE("WatchEvents: a client that disconnects mid-stream leaves the hub", "[control][events]") {
  Streaming s;
  for (int round = 0; round < 5; ++round) {
    auto stub = s.serving.RawStub();
    auto context = std::make_unique<grpc::ClientContext>();
    auto reader = stub->WatchEvents(context.get(), v1::WatchEventsRequest());
    v1::Event e;
    REQUIRE(reader->Read(&e));
    CHECK(e.has_subscribed());
    s.hub.Publish(Neighbor("192.0.2.2", "Idle", "Connect", "start"));
    REQUIRE(reader->Read(&e));
    context->TryCancel();
    while (reader->Read(&e)) {
    }
    reader->Finish();
    reader.reset();
    stub.reset();
    // Events published while the server notices keep going nowhere harmful.
    for (int i = 0; i < 100; ++i) s.hub.Publish(Neighbor("192.0.2.2", "Connect", "Active", "tcp"));
    REQUIRE(Eventually([&] { return s.hub.subscribers() == 0; }));
  }
}

TEST_CASE("bagctl monitor: one line per event, --json one object per line, --type, --count", "[control][events][bagctl]") {
  Streaming s;
  const std::string socket = s.serving.dir.SocketPath();
  auto run = [&](std::vector<std::string> args, std::vector<v1::Event> publish) {
    // The previous monitor's stream leaves the hub within a poll (200 ms) of its end.
    REQUIRE(Eventually([&] { return s.hub.subscribers() == 0; }));
    std::ostringstream out, err;
    int code = -1;
    std::thread monitor([&] { code = bagd::bagctl::RunControlCommand(args, socket.c_str(), out, err); });
    REQUIRE(Eventually([&] { return s.hub.subscribers() == 1; }));
    for (auto& e : publish) s.hub.Publish(e);
    monitor.join();
    CHECK(err.str().empty());
    CHECK(code == 0);
    return std::vector<std::string>(absl::StrSplit(out.str(), '\n', absl::SkipEmpty()));
  };
  v1::Event weights;
  weights.set_time_unix_ms(1714564801000);
  auto& w = *weights.mutable_weights();
  w.set_group(7);
  w.set_family("ipv4-unicast");
  w.set_cause("link-bandwidth");
  w.set_prefixes(12);
  w.set_detail("192.0.2.3 10G -> 5G");
  auto& m1 = *w.add_members();
  m1.set_next_hop("192.0.2.2");
  m1.set_old_weight(1);
  m1.set_new_weight(2);
  m1.set_applied_bandwidth_bps(10e9);
  auto& m2 = *w.add_members();
  m2.set_next_hop("192.0.2.3");
  m2.set_old_weight(2);
  m2.set_new_weight(1);
  m2.set_applied_bandwidth_bps(5e9);

  const auto text = run({"monitor", "--count", "2"},
                        {Neighbor("192.0.2.2", "OpenConfirm", "Established", "established"), weights});
  REQUIRE(text.size() == 3);
  CHECK(absl::EndsWith(text[0], " watching neighbor, weights, fib, config, bfd events"));
  CHECK(text[1] == "2024-05-01T12:00:00.250Z neighbor 192.0.2.2: OpenConfirm -> Established (established)");
  CHECK(text[2] ==
        "2024-05-01T12:00:01.000Z weights group 7 ipv4-unicast (12 prefixes): link-bandwidth (192.0.2.3 10G -> 5G): "
        "192.0.2.2 1->2 @10G, 192.0.2.3 2->1 @5G");

  const auto json = run({"monitor", "--json", "--type", "weights", "--count=1"},
                        {Neighbor("192.0.2.2", "Established", "Idle", "admin"), weights});
  REQUIRE(json.size() == 2);
  CHECK(absl::StartsWith(json[0], "{\"sequence\":\"0\""));
  CHECK(absl::StrContains(json[0], "\"subscribed\":{\"types\":[\"weights\"]}"));
  CHECK(absl::StrContains(json[1], "\"weights\":{\"group\":7,\"family\":\"ipv4-unicast\",\"cause\":\"link-bandwidth\""));
  CHECK(json[1].find('\n') == std::string::npos);
}

TEST_CASE("bagctl monitor: usage errors need no daemon", "[control][events][bagctl]") {
  std::ostringstream out, err;
  CHECK(bagd::bagctl::RunControlCommand({"monitor", "--type", "routes"}, "/nonexistent.sock", out, err) == 2);
  CHECK(absl::StrContains(err.str(), "unknown event type \"routes\""));
  err.str("");
  CHECK(bagd::bagctl::RunControlCommand({"monitor", "--count", "0"}, "/nonexistent.sock", out, err) == 2);
  CHECK(absl::StrContains(err.str(), "--count needs a number of events (1 or more), not '0'"));
  err.str("");
  CHECK(bagd::bagctl::RunControlCommand({"show", "neighbors", "--type", "fib"}, "/nonexistent.sock", out, err) == 2);
  CHECK(absl::StrContains(err.str(), "--type and --count are for monitor"));
}

TEST_CASE("event lines: neighbors with NOTIFICATIONs, FIB errors, reloads, drops", "[control][events][bagctl]") {
  using bagd::bagctl::RenderEventLine;
  v1::Event down = Neighbor("192.0.2.2", "Established", "Idle", "notification-received");
  down.mutable_neighbor()->set_description("spine-1");
  auto& n = *down.mutable_neighbor()->mutable_notification();
  n.set_code(6);
  n.set_subcode(2);
  n.set_code_name("Cease");
  n.set_subcode_name("Administrative Shutdown");
  n.set_shutdown_message("maintenance");
  CHECK(RenderEventLine(down) ==
        "2024-05-01T12:00:00.250Z neighbor 192.0.2.2 (spine-1): Established -> Idle (notification-received, received "
        "Cease / Administrative Shutdown (6/2) \"maintenance\")");
  v1::Event hold = Neighbor("192.0.2.3", "Established", "Idle", "hold-timer");
  hold.mutable_neighbor()->set_reason("Hold Timer expired");
  CHECK(RenderEventLine(hold) ==
        "2024-05-01T12:00:00.250Z neighbor 192.0.2.3: Established -> Idle (hold-timer: Hold Timer expired)");

  v1::Event fib;
  fib.set_time_unix_ms(1714564800000);
  fib.mutable_fib()->set_operation("group 7 = 3*1 4*2");
  fib.mutable_fib()->set_error("Invalid argument");
  fib.mutable_fib()->set_failed(1);
  fib.mutable_fib()->set_pending(3);
  CHECK(RenderEventLine(fib) ==
        "2024-05-01T12:00:00.000Z fib error: group 7 = 3*1 4*2: Invalid argument (1 failed in this pass, 3 pending; "
        "bagd retries)");

  v1::Event reload;
  reload.set_time_unix_ms(1714564800000);
  auto& c = *reload.mutable_config();
  c.set_source("SIGHUP");
  c.set_path("/etc/bagd/bagd.conf");
  c.set_applied(false);
  c.add_errors("/etc/bagd/bagd.conf:3:5: unknown field");
  CHECK(RenderEventLine(reload) ==
        "2024-05-01T12:00:00.000Z config SIGHUP /etc/bagd/bagd.conf: rejected, the running configuration stays; "
        "/etc/bagd/bagd.conf:3:5: unknown field");

  v1::Event lost;
  lost.set_time_unix_ms(1714564800000);
  lost.mutable_dropped()->set_count(12);
  CHECK(RenderEventLine(lost) ==
        "2024-05-01T12:00:00.000Z 12 events dropped: bagctl read too slowly (bagd keeps at most 1024 per subscriber)");
}

TEST_CASE("bagctl monitor: a BFD event as one line", "[control][events][bfd]") {
  bagd::control::v1::Event e;
  e.set_time_unix_ms(1714564800250);
  auto& b = *e.mutable_bfd();
  b.set_peer("192.0.2.2");
  b.set_from("Up");
  b.set_to("Down");
  b.set_diagnostic("control detection time expired");
  b.set_bgp_action("down");
  CHECK(bagd::bagctl::RenderEventLine(e) ==
        "2024-05-01T12:00:00.250Z bfd 192.0.2.2 Up -> Down: control detection time expired; BGP session taken down "
        "(Cease / BFD Down)");
  b.set_diagnostic("neighbor signaled session down");
  b.set_remote_admin_down(true);
  b.set_bgp_action("none");
  CHECK(bagd::bagctl::RenderEventLine(e) ==
        "2024-05-01T12:00:00.250Z bfd 192.0.2.2 Up -> Down: neighbor signaled session down; the peer's AdminDown: not "
        "a failure, BGP stays");
}

TEST_CASE("bagctl show bfd: the table and one session in detail", "[control][bfd]") {
  bagd::control::v1::ListBfdSessionsResponse r;
  CHECK(bagd::bagctl::RenderBfdTable(r, 0) == "No BFD sessions are configured.\n");
  auto& s = *r.add_sessions();
  s.set_peer("10.0.1.2");
  s.set_state("Up");
  s.set_remote_state("Up");
  s.set_local_discriminator(7);
  s.set_remote_discriminator(9);
  s.set_local_diagnostic("none");
  s.set_remote_diagnostic("none");
  s.set_desired_min_tx_us(100000);
  s.set_required_min_rx_us(100000);
  s.set_detect_multiplier(3);
  s.set_tx_interval_us(100000);
  s.set_detection_time_us(300000);
  s.set_up_since_unix_ms(1000);
  s.set_last_change_unix_ms(1000);
  s.set_source_port(49200);
  const int64_t now = 1000 + 252'000;  // 4 min 12 s later
  CHECK(bagd::bagctl::RenderBfdTable(r, now) ==
        "Peer      Type        State  Remote  LocalDisc  RemoteDisc  Tx     Detect  Diag  Up     Flaps\n"
        "10.0.1.2  single-hop  Up     Up      7          9           100ms  300ms   -     4m12s  0\n");
  const std::string detail = bagd::bagctl::RenderBfdDetail(s, now);
  CHECK_THAT(detail, Catch::Contains("state Up (remote Up), up for 4m12s"));
  CHECK_THAT(detail, Catch::Contains("negotiated: transmit every 100ms (less 0-25 % jitter), detection time 300ms"));
  CHECK_THAT(detail, Catch::Contains("UDP source port 49200"));
}

TEST_CASE("bagctl show bfd and monitor: micro-BFD sessions name their LAG and member", "[control][bfd][micro_bfd]") {
  bagd::control::v1::ListBfdSessionsResponse r;
  auto& plain = *r.add_sessions();
  plain.set_peer("10.0.1.2");
  plain.set_state("Up");
  plain.set_remote_state("Up");
  plain.set_local_discriminator(7);
  plain.set_remote_discriminator(9);
  plain.set_local_diagnostic("none");
  plain.set_tx_interval_us(100000);
  plain.set_detection_time_us(300000);
  auto& m = *r.add_sessions();
  m.set_peer("10.77.0.2");
  m.set_local_address("10.77.0.1");
  m.set_interface("eth2");
  m.set_capacity_source("lag1");
  m.set_state("Down");
  m.set_remote_state("Up");
  m.set_local_discriminator(11);
  m.set_remote_discriminator(12);
  m.set_local_diagnostic("control detection time expired");
  m.set_tx_interval_us(1000000);
  m.set_detection_time_us(300000);
  m.set_flaps(1);
  m.set_member_liveness("down");
  m.set_member_allowed(false);
  CHECK(bagd::bagctl::RenderBfdTable(r, 0) ==
        "Peer       Type        LAG   Member  Counts  State  Remote  LocalDisc  RemoteDisc  Tx      Detect  Diag    "
        "                        Up  Flaps\n"
        "10.0.1.2   single-hop  -     -       -       Up     Up      7          9           100ms   300ms   -       "
        "                        -   0\n"
        "10.77.0.2  micro-bfd   lag1  eth2    no      Down   Up      11         12          1000ms  300ms   control "
        "detection time expired  -   1\n");
  const std::string detail = bagd::bagctl::RenderBfdDetail(m, 0);
  CHECK_THAT(detail, Catch::StartsWith("BFD peer 10.77.0.2 micro-BFD on eth2 from 10.77.0.1\n"));
  CHECK_THAT(detail, Catch::Contains("member eth2 of capacity source lag1: BFD says down, so it does not count in "
                                     "the LAG's capacity"));

  bagd::control::v1::Event e;
  e.set_time_unix_ms(1714564800250);
  auto& b = *e.mutable_bfd();
  b.set_peer("10.77.0.2");
  b.set_from("Up");
  b.set_to("Down");
  b.set_diagnostic("control detection time expired");
  b.set_bgp_action("none");
  b.set_interface("eth2");
  b.set_capacity_source("lag1");
  b.set_capacity_action("member down");
  CHECK(bagd::bagctl::RenderEventLine(e) ==
        "2024-05-01T12:00:00.250Z bfd 10.77.0.2 micro-bfd lag1/eth2 Up -> Down: control detection time expired; eth2 "
        "no longer counts in lag1");
  b.set_from("Init");
  b.set_to("Up");
  b.set_diagnostic("none");
  b.set_capacity_action("member up");
  CHECK(bagd::bagctl::RenderEventLine(e) ==
        "2024-05-01T12:00:00.250Z bfd 10.77.0.2 micro-bfd lag1/eth2 Init -> Up; eth2 counts again in lag1 (after the "
        "hold-down)");
}
