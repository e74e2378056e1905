// Peer and Speaker on a ManualClock with loopback connections handed over directly (tests/session/
// session_harness.h): the handshake, timers firing when the clock says so, routes into the
// RIB and out again, collisions and closes at each step, all without a network or a sleep.
#include <catch2/catch.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "bgpd/session/log.h"
#include "tests/session/session_harness.h"

namespace bagd::session::testing {
namespace {

constexpr char kConfig[] = R"(
router { asn: 65000 router_id: "10.255.0.1" hold_time: 9 ebgp_requires_policy: false }
fib { backend: BACKEND_NONE }
neighbors { address: "127.0.0.2" remote_as: 65002 passive: true }
neighbors { address: "127.0.0.3" remote_as: 65003 passive: true }
)";
constexpr uint32_t kPeerId = 0x0a090909;  // 10.9.9.9

std::vector<uint8_t> Types(const std::vector<std::pair<uint8_t, wire::Bytes>>& msgs) {
  std::vector<uint8_t> t;
  for (const auto& m : msgs) t.push_back(m.first);
  return t;
}

struct Quiet {
  Quiet() { log::SetLevel(getenv("BAGD_TEST_LOG") ? log::Level::kDebug : log::Level::kError); }
  ~Quiet() { log::SetLevel(log::Level::kInfo); }
};

std::string StateOf(SessionHarness& h, const std::string& addr) {
  return h.speaker().ListNeighbors(addr).at(0).state();
}

// Up to Established; returns our end. bagd's OPEN and KEEPALIVE are consumed.
int Establish(SessionHarness& h, const std::string& addr, uint32_t asn, uint16_t hold = 9) {
  const int fd = h.Connect(addr);
  h.Write(fd, Open(asn, kPeerId, hold));
  h.Write(fd, Keepalive());
  const auto got = Types(h.Read(fd));
  // OPEN, KEEPALIVE, then the (empty) table's End-of-RIB.
  REQUIRE(got.size() >= 2);
  CHECK(got[0] == 1);
  CHECK(got[1] == 4);
  REQUIRE(StateOf(h, addr) == "Established");
  return fd;
}

// A FIB sink that counts the speaker's "initial tables are in".
struct ConvergenceCounter final : rib::FibSink {
  explicit ConvergenceCounter(int& n) : count(n) {}
  void Apply(const rib::FibUpdate&) override {}
  void InitialTablesIn() override { ++count; }
  int& count;
};

TEST_CASE("Session: the hold timer expires on the manual clock, not before", "[session]") {
  Quiet q;
  SessionHarness h(kConfig);
  const int fd = Establish(h, "127.0.0.2", 65002);
  h.Advance(8999);
  // KEEPALIVEs every 3 s (hold 9 / 3) kept coming; the session is still up.
  auto got = Types(h.Read(fd));
  CHECK(std::count(got.begin(), got.end(), 4) >= 2);
  CHECK(StateOf(h, "127.0.0.2") == "Established");
  h.Advance(2);
  const auto msgs = h.Read(fd);
  REQUIRE(!msgs.empty());
  CHECK(msgs.back().first == 3);
  CHECK(msgs.back().second.at(0) == 4);  // Hold Timer Expired
  CHECK(h.PeerClosed(fd));
  CHECK(StateOf(h, "127.0.0.2") != "Established");
}

TEST_CASE("Session: a KEEPALIVE from the peer restarts the hold timer", "[session]") {
  Quiet q;
  SessionHarness h(kConfig);
  const int fd = Establish(h, "127.0.0.2", 65002);
  for (int i = 0; i < 10; ++i) {
    h.Advance(5000);
    h.Write(fd, Keepalive());
  }
  h.Read(fd);
  CHECK(StateOf(h, "127.0.0.2") == "Established");
  CHECK(!h.PeerClosed(fd));
}

// A FIB sink whose "initial tables are in" takes `ms` of the manual clock, as releasing a
// large FIB does: it runs inside the End-of-RIB's handling, with the rest of the read waiting.
struct SlowConvergence final : rib::FibSink {
  SlowConvergence(ManualClock& c, int64_t ms) : clock(c), work_ms(ms) {}
  void Apply(const rib::FibUpdate&) override {}
  void InitialTablesIn() override {
    ++count;
    clock.Advance(work_ms);
  }
  ManualClock& clock;
  int64_t work_ms;
  int count = 0;
};

TEST_CASE("Session: the messages of one read restart the hold timer once, after long work, afresh", "[session]") {
  // The session takes one time per socket read for its FSM and hold timer (the messages came
  // in together). An End-of-RIB whose work took 6 s, and a message handled after it, restart
  // the hold timer from then, not from the read: the session must survive 8 s more of silence.
  Quiet q;
  constexpr char kOne[] = R"(
router { asn: 65000 router_id: "10.255.0.1" hold_time: 9 ebgp_requires_policy: false }
fib { backend: BACKEND_NONE }
neighbors { address: "127.0.0.2" remote_as: 65002 passive: true }
)";
  ManualClock* clock = nullptr;
  std::unique_ptr<SlowConvergence> fib;
  // The sink needs the harness's clock, the harness the sink: a forwarding sink.
  struct Forward final : rib::FibSink {
    void Apply(const rib::FibUpdate& u) override { to->Apply(u); }
    void InitialTablesIn() override { to->InitialTablesIn(); }
    rib::FibSink* to = nullptr;
  } forward;
  SessionHarness h(kOne, &forward);
  clock = &h.clock();
  fib = std::make_unique<SlowConvergence>(*clock, 6000);
  forward.to = fib.get();
  const int fd = Establish(h, "127.0.0.2", 65002);
  // The End-of-RIB last in its read (its own restart comes after its work), or followed by a
  // KEEPALIVE (the next message's restart does).
  const bool keepalive_after = GENERATE(false, true);
  std::vector<wire::Bytes> messages = {Update(65002, 0x7f000002, {{1, 1}}), Update(65002, 0x7f000002, {})};
  if (keepalive_after) messages.push_back(Keepalive());
  wire::Bytes read;  // one write: one read on loopback
  for (const auto& m : messages) read.insert(read.end(), m.begin(), m.end());
  h.Write(fd, read);
  REQUIRE(fib->count == 1);  // converged inside the End-of-RIB, 6 s of work
  h.Advance(8000);           // 14 s after the read, 8 s after the End-of-RIB's work
  CHECK(StateOf(h, "127.0.0.2") == "Established");
  h.Advance(1100);  // 9.1 s after it: the hold timer expired
  CHECK(StateOf(h, "127.0.0.2") != "Established");
}

TEST_CASE("Session: routes go into the RIB, out to the other neighbor, and leave with the session", "[session]") {
  Quiet q;
  SessionHarness h(kConfig);
  const int a = Establish(h, "127.0.0.2", 65002);
  const int b = Establish(h, "127.0.0.3", 65003);
  h.Read(b);
  h.Write(a, Update(65002, 0x7f000002, {{1, 1}, {1, 2}, {1, 3}}));
  CHECK(h.speaker().rib().paths_of(h.speaker().FindPeer("127.0.0.2")->rib_index) == 3);
  auto to_b = h.Read(b);
  REQUIRE(!to_b.empty());
  CHECK(to_b.back().first == 2);
  h.Close(a);
  CHECK(h.speaker().rib().paths_of(h.speaker().FindPeer("127.0.0.2")->rib_index) == 0);
  to_b = h.Read(b);
  REQUIRE(!to_b.empty());  // the withdrawals
  CHECK(to_b.back().first == 2);
  CHECK(StateOf(h, "127.0.0.3") == "Established");
}

TEST_CASE("Session: a close at every step of the handshake leaves the neighbor ready for the next", "[session]") {
  Quiet q;
  SessionHarness h(kConfig);
  const wire::Bytes open = Open(65002, kPeerId, 9);
  for (int step = 0; step < 6; ++step) {
    const int fd = h.Connect("127.0.0.2");
    if (step >= 1) h.Write(fd, std::span(open).first(std::min<size_t>(open.size(), step == 1 ? 10 : open.size())));
    if (step >= 3) h.Write(fd, Keepalive());
    if (step >= 4) h.Write(fd, Update(65002, 0x7f000002, {{2, static_cast<uint8_t>(step)}}));
    if (step >= 5) h.Advance(20000);  // past the hold time: bagd closes first
    h.Close(fd);
    h.Advance(100);
    CHECK(StateOf(h, "127.0.0.2") != "Established");
  }
  CHECK(h.speaker().rib().paths_of(h.speaker().FindPeer("127.0.0.2")->rib_index) == 0);
  const int fd = Establish(h, "127.0.0.2", 65002);
  h.Close(fd);
}

TEST_CASE("Session: a shutdown message that is not UTF-8 is shown cleaned, and the status serializes", "[session]") {
  // RFC 9003 says UTF-8, a peer may send anything; the control API's strings are proto3
  // `string`s, which must be valid UTF-8 or the whole NeighborStatus fails to serialize.
  Quiet q;
  SessionHarness h(kConfig);
  const int fd = Establish(h, "127.0.0.2", 65002);
  const std::vector<uint8_t> body{6, 2, 3, 'o', 0xff, 'k'};  // Cease / Administrative Shutdown
  h.Write(fd, Message(3, body));
  const auto status = h.speaker().ListNeighbors("127.0.0.2").at(0);
  REQUIRE(status.has_last_notification_received());
  CHECK(status.last_notification_received().shutdown_message() == "o\xef\xbf\xbdk");
  std::string wire_form;
  CHECK(status.SerializeToString(&wire_form));
}

TEST_CASE("Convergence: every Established neighbor's End-of-RIB, a down one holds it only for the wait", "[session][convergence]") {
  // Issue 12 defect 3: a configured neighbor that is down froze the FIB for the whole
  // startup hold. fib.restart_neighbor_wait defaults to 10 s.
  Quiet q;
  int converged = 0;
  ConvergenceCounter fib(converged);
  SessionHarness h(kConfig, &fib);
  const int a = Establish(h, "127.0.0.2", 65002);
  h.Write(a, Update(65002, 0x7f000002, {{1, 1}}));
  h.Write(a, Update(65002, 0x7f000002, {}));  // End-of-RIB (an empty UPDATE, RFC 4724)
  CHECK(converged == 0);                      // 127.0.0.3 may still come
  h.Advance(9000);
  CHECK(converged == 0);
  h.Advance(1100);
  CHECK(converged == 1);
  h.Advance(60000);
  CHECK(converged == 1);  // once
}

TEST_CASE("Convergence: both neighbors up within the wait: at the second End-of-RIB", "[session][convergence]") {
  Quiet q;
  int converged = 0;
  ConvergenceCounter fib(converged);
  SessionHarness h(kConfig, &fib);
  const int a = Establish(h, "127.0.0.2", 65002);
  h.Write(a, Update(65002, 0x7f000002, {}));
  const int b = Establish(h, "127.0.0.3", 65003);
  CHECK(converged == 0);
  // A session lost before its End-of-RIB: its earlier End-of-RIB no longer counts.
  h.Close(a);
  const int a2 = Establish(h, "127.0.0.2", 65002);
  h.Write(b, Update(65003, 0x7f000003, {}));
  CHECK(converged == 0);
  h.Write(a2, Update(65002, 0x7f000002, {}));
  CHECK(converged == 1);
}

TEST_CASE("Convergence: shutting down is not converging (the FIB must not sweep on exit)", "[session][convergence]") {
  Quiet q;
  int converged = 0;
  ConvergenceCounter fib(converged);
  SessionHarness h(kConfig, &fib);
  const int a = Establish(h, "127.0.0.2", 65002);
  for (int i = 0; i < 4; ++i) {  // past the wait, 127.0.0.2 up (KEEPALIVEs) without End-of-RIB
    h.Advance(3000);
    h.Write(a, Keepalive());
  }
  REQUIRE(StateOf(h, "127.0.0.2") == "Established");
  REQUIRE(converged == 0);
  bool done = false;
  h.speaker().Shutdown("bye", std::chrono::milliseconds(0), [&] { done = true; });
  h.Run();
  CHECK(converged == 0);
}

TEST_CASE("Session: a neighbor's Peer can be destroyed with its connections' completions pending", "[session]") {
  Quiet q;
  auto h = std::make_unique<SessionHarness>(kConfig);
  const int fd = Establish(*h, "127.0.0.2", 65002);
  h->Write(fd, Update(65002, 0x7f000002, {{3, 1}}));
  // The speaker (and every Peer) goes while a read and a write are pending on the
  // connection and timers run: the completions run after it and must touch nothing.
  h.reset();
  SUCCEED();
}

}  // namespace
}  // namespace bagd::session::testing

namespace bagd::session::testing {
namespace {

TEST_CASE("RFC 8212: an eBGP neighbor without policies receives nothing and sends nothing, and says why", "[session][policy]") {
  Quiet q;
  SessionHarness h(R"(
router { asn: 65000 router_id: "10.255.0.1" hold_time: 9 }
fib { backend: BACKEND_NONE }
neighbors { address: "127.0.0.2" remote_as: 65002 passive: true }
neighbors { address: "127.0.0.3" remote_as: 65003 passive: true default_export: DEFAULT_ACTION_ACCEPT }
)");
  const int a = Establish(h, "127.0.0.2", 65002);
  const int b = Establish(h, "127.0.0.3", 65003);
  h.Read(b);
  h.Write(a, Update(65002, 0x7f000002, {{1, 1}, {1, 2}}));
  const auto status = h.speaker().ListNeighbors("127.0.0.2").at(0);
  CHECK(status.prefixes_received() == 0);
  CHECK(status.prefixes_rejected() == 2);
  REQUIRE(status.policy_notes_size() == 2);  // import and export, ipv4-unicast
  CHECK(status.policy_notes(0).find("RFC 8212") != std::string::npos);
  CHECK(h.speaker().rib().prefix_count() == 0);
  // 127.0.0.3 accepts nothing either (no import policy) but exports (default_export ACCEPT):
  // it got nothing because nothing was accepted, not because of its export side.
  CHECK(h.speaker().ListNeighbors("127.0.0.3").at(0).policy_notes_size() == 1);
  CHECK(h.Read(b).empty());
}

TEST_CASE("Policy: import rejects a prefix set and drains by community, export prepends, a reload re-evaluates without a reset",
          "[session][policy]") {
  Quiet q;
  constexpr char kPolicies[] = R"(
defined_sets {
  prefix_sets { name: "bad" prefixes { prefix: "10.1.2.0/24" } }
  community_sets { name: "drain" communities: "65002:666" }
}
policies {
  name: "in"
  statements { name: "bad" conditions { prefix_set { set: "bad" } } actions { disposition: DISPOSITION_REJECT } }
  statements { name: "drain" conditions { community_set { set: "drain" } }
               actions { link_bandwidth { op: OP_DRAIN } disposition: DISPOSITION_ACCEPT } }
  statements { name: "rest" actions { disposition: DISPOSITION_ACCEPT } }
}
policies {
  name: "out"
  statements { name: "prepend" actions { as_path_prepend { repeat: %d } disposition: DISPOSITION_ACCEPT } }
}
)";
  auto config = [&](int prepend) {
    return absl::StrCat(R"(
router { asn: 65000 router_id: "10.255.0.1" hold_time: 9 }
fib { backend: BACKEND_NONE }
neighbors { address: "127.0.0.2" remote_as: 65002 passive: true import_policies: "in" export_policies: "out" }
neighbors { address: "127.0.0.3" remote_as: 65003 passive: true import_policies: "in" export_policies: "out" }
)", absl::StrFormat(kPolicies, prepend));
  };
  SessionHarness h(config(2));
  const int a = Establish(h, "127.0.0.2", 65002);
  const int b = Establish(h, "127.0.0.3", 65003);
  h.Read(b);
  // Community 65002:666 (type 8, optional transitive) and a 10 Gbit/s link bandwidth.
  const uint8_t drain[] = {0xc0, 8, 4, 0xfd, 0xea, 0x02, 0x9a,
                           0xc0, 16, 8, 0x00, 0x04, 0xfd, 0xea, 0x4e, 0x95, 0x02, 0xf9};
  h.Write(a, Update(65002, 0x7f000002, {{1, 1}, {1, 2}}));  // 10.1.2.0/24 is rejected
  h.Write(a, Update(65002, 0x7f000002, {{1, 3}}, drain));
  const rib::Rib& rib = h.speaker().rib();
  CHECK(rib.prefix_count() == 2);
  CHECK(rib.Find(*net::Prefix::Parse("10.1.2.0/24")) == nullptr);
  const rib::Destination* drained = rib.Find(*net::Prefix::Parse("10.1.3.0/24"));
  REQUIRE(drained != nullptr);
  const auto lb = drained->paths()[0].attrs->link_bandwidth.chosen;
  REQUIRE(lb.has_value());
  CHECK(lb->bits_per_second() == 0);  // drained: weight 0, no withdrawal
  // Export: AS_PATH 65000 65000 65000 65002 (two prepends, then our own AS on eBGP).
  const rib::AdjRibOut* out = h.speaker().AdvertisedRoutes(h.speaker().FindPeer("127.0.0.3")->rib_index);
  REQUIRE(out != nullptr);
  REQUIRE(out->size() == 2);
  const rib::AdjRibOut::Entry* sent = out->Find(*net::Prefix::Parse("10.1.1.0/24"));
  REQUIRE(sent != nullptr);
  CHECK(out->attrs(*sent)->attrs.as_path->segments.front().asns == std::vector<uint32_t>{65000, 65000, 65000, 65002});
  const auto transitions = h.speaker().ListNeighbors("127.0.0.3").at(0).established_transitions();
  h.Read(b);
  // SIGHUP with one prepend: the same sessions; 127.0.0.3 gets the new paths, nothing else.
  REQUIRE(h.Reload(config(1)).ok());
  sent = out->Find(*net::Prefix::Parse("10.1.1.0/24"));
  REQUIRE(sent != nullptr);
  CHECK(out->attrs(*sent)->attrs.as_path->segments.front().asns == std::vector<uint32_t>{65000, 65000, 65002});
  const auto after = h.Read(b);
  REQUIRE(!after.empty());
  for (const auto& m : after) CHECK(m.first == 2);  // UPDATEs only
  CHECK(h.speaker().ListNeighbors("127.0.0.3").at(0).established_transitions() == transitions);
  CHECK(StateOf(h, "127.0.0.2") == "Established");
}

}  // namespace
}  // namespace bagd::session::testing

namespace bagd::session::testing {
namespace {

TEST_CASE("Policy: export switched to reject by a reload withdraws what was sent, later changes send nothing, back to accept sends all",
          "[session][policy]") {
  // The advertiser skips the export work for a family whose export rejects everything; what an
  // earlier configuration sent must still be withdrawn, and nothing sent while it rejects.
  Quiet q;
  auto config = [](const char* export_b) {
    return absl::StrCat(R"(
router { asn: 65000 router_id: "10.255.0.1" hold_time: 9 ebgp_requires_policy: false }
fib { backend: BACKEND_NONE }
neighbors { address: "127.0.0.2" remote_as: 65002 passive: true default_export: DEFAULT_ACTION_REJECT }
neighbors { address: "127.0.0.3" remote_as: 65003 passive: true default_export: )",
                        export_b, " }\n");
  };
  SessionHarness h(config("DEFAULT_ACTION_ACCEPT"));
  const int a = Establish(h, "127.0.0.2", 65002);
  const int b = Establish(h, "127.0.0.3", 65003);
  h.Read(b);
  h.Write(a, Update(65002, 0x7f000002, {{1, 1}, {1, 2}}));
  const rib::AdjRibOut* out = h.speaker().AdvertisedRoutes(h.speaker().FindPeer("127.0.0.3")->rib_index);
  REQUIRE(out != nullptr);
  CHECK(out->size() == 2);
  CHECK(h.Read(b).size() == 1);  // one UPDATE with both
  // 127.0.0.2 itself exports nothing: its own routes never go back, the rest is rejected.
  CHECK(h.speaker().AdvertisedRoutes(h.speaker().FindPeer("127.0.0.2")->rib_index)->size() == 0);

  REQUIRE(h.Reload(config("DEFAULT_ACTION_REJECT")).ok());
  CHECK(out->size() == 0);
  auto got = h.Read(b);
  REQUIRE(got.size() == 1);
  CHECK(got[0].first == 2);  // the withdrawal of both
  // A new prefix, a changed one and a withdrawn one while the export rejects: nothing goes.
  const uint8_t lb[] = {0xc0, 16, 8, 0x00, 0x04, 0xfd, 0xea, 0x4e, 0x95, 0x02, 0xf9};
  h.Write(a, Update(65002, 0x7f000002, {{1, 3}, {1, 1}}, lb));
  const uint8_t withdrawn[] = {24, 10, 1, 2};
  h.Write(a, Update(65002, 0x7f000002, {}, {}, withdrawn));
  CHECK(h.speaker().rib().prefix_count() == 2);
  CHECK(out->size() == 0);
  CHECK(h.Read(b).empty());

  REQUIRE(h.Reload(config("DEFAULT_ACTION_ACCEPT")).ok());
  CHECK(out->size() == 2);
  CHECK(out->Find(*net::Prefix::Parse("10.1.3.0/24")) != nullptr);
  CHECK(out->Find(*net::Prefix::Parse("10.1.2.0/24")) == nullptr);
  got = h.Read(b);
  REQUIRE(!got.empty());
  for (const auto& m : got) CHECK(m.first == 2);
  CHECK(StateOf(h, "127.0.0.3") == "Established");
}

}  // namespace
}  // namespace bagd::session::testing
