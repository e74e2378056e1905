// The BMP monitor and station client against a station in the test (a TCP acceptor on
// 127.0.0.1 that reads, stops reading, refuses or resets), on a real io_context: what the
// station receives is decoded (BMP framing, then the BGP UPDATE inside with wire/) and
// checked message by message.
#include <catch2/catch.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <cstdio>
#include <ctime>
#include <map>
#include <set>

#include "bmp/monitor.h"
#include "tests/rib/rib_test_support.h"

namespace bagd::bmp {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;
using rib::test::AttrsBuilder;
using rib::test::N;

// A station: accepts one connection at a time and keeps what it reads.
class TestStation {
 public:
  explicit TestStation(asio::io_context& io) : io_(io), acceptor_(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)) {
    // A fixed receive buffer (no autotuning up to tcp_rmem's 32 MiB): a station that stops
    // reading fills up soon, as a real one across a WAN would.
    acceptor_.set_option(asio::socket_base::receive_buffer_size(64 << 10));
    Accept();
  }
  ~TestStation() {
    token_.reset();
    boost::system::error_code ec;
    if (socket_) socket_->close(ec);  // a pending read is cancelled, its buffer never written
    acceptor_.close(ec);
  }
  TestStation(const TestStation&) = delete;
  TestStation& operator=(const TestStation&) = delete;
  uint16_t port() const { return acceptor_.local_endpoint().port(); }
  // Stops reading (the kernel buffers fill, then bagd's).
  void set_reading(bool r) {
    reading_ = r;
    if (r && socket_ && !read_pending_) Read();
  }
  // Closes the connection with a RST.
  void Reset() {
    if (!socket_) return;
    boost::system::error_code ec;
    socket_->set_option(asio::socket_base::linger(true, 0), ec);
    socket_->close(ec);
    socket_.reset();
    read_pending_ = false;
  }
  void CloseAcceptor() {
    boost::system::error_code ec;
    acceptor_.close(ec);
  }
  size_t connections() const { return connections_; }
  wire::Bytes& data() { return data_; }

  struct Message {
    MessageType type;
    PerPeerHeader peer;  // for messages with one
    wire::Bytes body;    // after the per-peer header (or the common header)
  };
  // Every whole BMP message received so far.
  std::vector<Message> Messages() const {
    std::vector<Message> out;
    wire::ByteSpan rest(data_);
    while (auto f = PeekFrame(rest)) {
      Message m;
      m.type = f->type;
      wire::ByteSpan body = rest.subspan(kCommonHeaderSize, f->length - kCommonHeaderSize);
      if (m.type != MessageType::kInitiation && m.type != MessageType::kTermination) {
        REQUIRE(body.size() >= kPerPeerHeaderSize);
        m.peer.type = static_cast<PeerType>(body[0]);
        m.peer.flags = body[1];
        m.peer.as = static_cast<uint32_t>(body[26]) << 24 | body[27] << 16 | body[28] << 8 | body[29];
        if (m.peer.type != PeerType::kLocRib) m.peer.address = net::IpAddress::V4Bytes(body.data() + 22);
        body = body.subspan(kPerPeerHeaderSize);
      }
      m.body.assign(body.begin(), body.end());
      out.push_back(std::move(m));
      rest = rest.subspan(f->length);
    }
    return out;
  }

 private:
  void Accept() {
    acceptor_.async_accept([this, alive = std::weak_ptr<char>(token_)](boost::system::error_code ec, tcp::socket s) {
      if (ec || alive.expired()) return;
      socket_ = std::make_shared<tcp::socket>(std::move(s));
      ++connections_;
      data_.clear();
      read_pending_ = false;
      if (reading_) Read();
      Accept();
    });
  }
  void Read() {
    read_pending_ = true;
    auto s = socket_;
    // The station may be destroyed (a test's refusal) with this read pending.
    s->async_read_some(asio::buffer(buf_), [this, s, alive = std::weak_ptr<char>(token_)](boost::system::error_code ec, size_t n) {
      if (alive.expired() || s != socket_) return;
      read_pending_ = false;
      if (ec) return;
      data_.insert(data_.end(), buf_.begin(), buf_.begin() + static_cast<long>(n));
      if (reading_) Read();
    });
  }

  asio::io_context& io_;
  tcp::acceptor acceptor_;
  std::shared_ptr<tcp::socket> socket_;
  std::array<uint8_t, 65536> buf_{};
  wire::Bytes data_;
  bool reading_ = true;
  bool read_pending_ = false;
  size_t connections_ = 0;
  std::shared_ptr<char> token_ = std::make_shared<char>(0);  // watched by the handlers
};

bool RunUntil(asio::io_context& io, const std::function<bool()>& done, std::chrono::milliseconds limit = std::chrono::seconds(10)) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > end) return false;
    io.restart();
    io.run_for(std::chrono::milliseconds(5));
  }
  return true;
}

// The decoded UPDATE of a Route Monitoring message (4-octet AS, ADD-PATH as given).
wire::UpdateMessage UpdateOf(const TestStation::Message& m, bool add_path) {
  wire::CodecContext ctx;
  ctx.add_path = {add_path, add_path};
  auto d = wire::DecodeMessage(m.body, ctx);
  REQUIRE(d.ok());
  return std::get<wire::UpdateMessage>(d.value());
}

// A RIB with two eBGP neighbors sending the same prefixes (a two-member multipath set each),
// the monitor on it, and the neighbors' sessions up.
struct Fixture {
  asio::io_context io;
  rib::AttributeStore store;
  rib::Rib rib{65000, rib::DecisionConfig{false, 4, 4, true}};
  rib::PeerIndex a = rib.AddPeer(rib::test::Peer("192.0.2.1", 0x01010101, 65001));
  rib::PeerIndex b = rib.AddPeer(rib::test::Peer("192.0.2.2", 0x02020202, 65002));
  std::unique_ptr<Monitor> monitor;
  // What each neighbor has been sent (RFC 8671 post-policy), as the advertiser would keep it.
  std::map<rib::PeerIndex, rib::AdjRibOut> out;

  // The applied bandwidth per member (MonitorOptions::applied_bps), by neighbor; empty: none.
  std::map<rib::PeerIndex, double> applied;

  explicit Fixture(size_t slice = 4096, bool with_applied = false) {
    MonitorOptions o;
    o.sys_name = "spine1";
    o.sys_descr = "bagd test";
    o.local_as = 65000;
    o.router_id = 0x0a000001;
    o.slice_prefixes = slice;
    o.counters = [](rib::PeerIndex) { return PeerCounters{7}; };
    o.adj_rib_out = [this](rib::PeerIndex i) -> const rib::AdjRibOut* {
      auto it = out.find(i);
      return it == out.end() ? nullptr : &it->second;
    };
    // Two eBGP neighbors: a route is eligible for every neighbor but the one it came from.
    o.export_candidate = [](rib::PeerIndex to, const net::Prefix&, const rib::Path& best) { return best.peer != to; };
    if (with_applied) {
      o.applied_bps = [this](const net::Prefix&, const rib::Path& p) -> std::optional<double> {
        auto it = applied.find(p.peer);
        return it == applied.end() ? std::nullopt : std::optional<double>(it->second);
      };
    }
    monitor = std::make_unique<Monitor>(io, rib, o);
    monitor->PeerUp(Session(a, "192.0.2.1", 65001));
    monitor->PeerUp(Session(b, "192.0.2.2", 65002));
  }
  static PeerSession Session(rib::PeerIndex i, const char* addr, uint32_t as) {
    PeerSession s;
    s.index = i;
    s.address = *net::IpAddress::Parse(addr);
    s.as = as;
    s.bgp_id = i + 1;
    s.local_address = *net::IpAddress::Parse("192.0.2.100");
    s.local_port = 179;
    s.remote_port = static_cast<uint16_t>(40000 + i);
    wire::OpenMessage open;
    open.my_as = static_cast<uint16_t>(as);
    open.hold_time = 90;
    open.bgp_id = s.bgp_id;
    s.sent_open = *wire::EncodeMessage(open, {});
    s.received_open = s.sent_open;
    s.families = {true, false};
    return s;
  }
  // `count` /24s from 10.0.0.0 from both neighbors (each with its own next hop).
  // `distinct`: each prefix with its own MED (one UPDATE per prefix: many octets).
  void Fill(size_t count, bool distinct = false) {
    const rib::AttrRef from_a = AttrsBuilder().Path({65001, 65100}).NextHop("192.0.2.1").In(store);
    const rib::AttrRef from_b = AttrsBuilder().Path({65002, 65100}).NextHop("192.0.2.2").In(store);
    std::vector<net::Nlri> nlri;
    for (size_t i = 0; i < count; ++i) {
      const uint8_t bytes[4] = {10, static_cast<uint8_t>(i >> 8), static_cast<uint8_t>(i), 0};
      nlri.push_back(net::Nlri{net::Prefix::Make(net::Afi::kIpv4, bytes, 24), 0});
      if (distinct) {
        const auto m = static_cast<uint32_t>(i);
        rib.Announce(a, std::span(&nlri.back(), 1), AttrsBuilder().Path({65001, 65100}).NextHop("192.0.2.1").Med(m).In(store));
        rib.Announce(b, std::span(&nlri.back(), 1), AttrsBuilder().Path({65002, 65100}).NextHop("192.0.2.2").Med(m).In(store));
      }
    }
    if (!distinct) {
      rib.Announce(a, nlri, from_a);
      rib.Announce(b, nlri, from_b);
    }
    rib.TakeChanges();
  }
  StationConfig Station(uint16_t port, Views v) const {
    StationConfig c;
    c.address = *net::IpAddress::Parse("127.0.0.1");
    c.port = port;
    c.views = v;
    c.retry_min_ms = 20;
    c.retry_max_ms = 100;
    return c;
  }
};

size_t Count(const std::vector<TestStation::Message>& ms, MessageType t, std::function<bool(const TestStation::Message&)> pred = {}) {
  return static_cast<size_t>(std::count_if(ms.begin(), ms.end(), [&](const auto& m) { return m.type == t && (!pred || pred(m)); }));
}

bool IsEndOfRib(const TestStation::Message& m) {
  if (m.type != MessageType::kRouteMonitoring || m.body.size() > 40) return false;
  wire::CodecContext ctx;
  ctx.add_path = {true, true};  // End-of-RIB has no NLRI: the same either way
  auto d = wire::DecodeMessage(m.body, ctx);
  return d.ok() && std::get<wire::UpdateMessage>(d.value()).EndOfRib().has_value();
}

}  // namespace

TEST_CASE("BMP station gets Initiation, Peer Ups, the tables in slices and End-of-RIB", "[bmp][monitor]") {
  Fixture fx(/*slice=*/100);  // 1000 prefixes: ten slices
  fx.Fill(1000);
  TestStation station(fx.io);
  Views v;
  v.post_policy = true;
  v.loc_rib = true;
  fx.monitor->Configure({fx.Station(station.port(), v)});
  // Post-policy: 2 peers; Loc-RIB: 1; each ends with one End-of-RIB (IPv4 only negotiated; Loc-RIB both families).
  REQUIRE(RunUntil(fx.io, [&] { return Count(station.Messages(), MessageType::kRouteMonitoring, IsEndOfRib) == 4; }));
  const auto ms = station.Messages();
  REQUIRE(ms.size() > 5);
  CHECK(ms[0].type == MessageType::kInitiation);
  CHECK(ms[1].type == MessageType::kPeerUp);
  CHECK(ms[1].peer.type == PeerType::kLocRib);
  CHECK(ms[2].type == MessageType::kPeerUp);
  CHECK(ms[2].peer.address->ToString() == "192.0.2.1");
  CHECK(ms[3].type == MessageType::kPeerUp);
  CHECK(ms[3].peer.address->ToString() == "192.0.2.2");
  // Every prefix once per neighbor post-policy, and twice in the Loc-RIB (both members).
  size_t post_a = 0, post_b = 0, loc = 0;
  std::set<uint32_t> loc_ids;
  for (const auto& m : ms) {
    if (m.type != MessageType::kRouteMonitoring || IsEndOfRib(m)) continue;
    if (m.peer.type == PeerType::kLocRib) {
      CHECK(m.peer.as == 65000);
      const auto u = UpdateOf(m, true);
      loc += u.nlri.size();
      for (const auto& n : u.nlri) loc_ids.insert(n.path_id);
      continue;
    }
    CHECK(m.peer.flags == peer_flag::kPostPolicy);
    const auto u = UpdateOf(m, false);
    REQUIRE(u.attrs.as_path.has_value());
    (m.peer.address->ToString() == "192.0.2.1" ? post_a : post_b) += u.nlri.size();
  }
  CHECK(post_a == 1000);
  CHECK(post_b == 1000);
  CHECK(loc == 2000);
  CHECK(loc_ids == std::set<uint32_t>{Monitor::LocRibPathId({fx.a, 0, {}}), Monitor::LocRibPathId({fx.b, 0, {}})});
  const auto status = fx.monitor->Status();
  REQUIRE(status.size() == 1);
  CHECK_FALSE(status[0].syncing);
  CHECK(status[0].counters.messages == ms.size());
}

TEST_CASE("BMP live changes: pre-policy as received, post-policy from the RIB, Loc-RIB member withdrawn", "[bmp][monitor]") {
  Fixture fx;
  fx.Fill(3);
  TestStation station(fx.io);
  Views v;
  v.pre_policy = true;
  v.post_policy = true;
  v.loc_rib = true;
  fx.monitor->Configure({fx.Station(station.port(), v)});
  REQUIRE(RunUntil(fx.io, [&] { return Count(station.Messages(), MessageType::kRouteMonitoring, IsEndOfRib) == 4; }));
  const size_t before = station.Messages().size();

  // Neighbor b withdraws 10.9.9.0/24 (a prefix it never sent: a duplicate withdrawal) and
  // 10.0.0.0/24.
  wire::UpdateMessage u;
  u.withdrawn = {N("10.0.0.0/24"), N("10.9.9.0/24")};
  const wire::Bytes raw = *wire::EncodeMessage(u, {});
  fx.monitor->PrePolicyUpdate(fx.b, raw);
  fx.monitor->BeforeIngest(fx.b, u);
  fx.rib.Withdraw(fx.b, u.withdrawn);
  fx.monitor->PostPolicyUpdate(fx.b, u);
  fx.monitor->OnRouteChanges(fx.rib.TakeChanges());
  fx.monitor->ReportStatistics();
  REQUIRE(RunUntil(fx.io, [&] { return Count(station.Messages(), MessageType::kStatisticsReport) == 3; }));
  const auto all = station.Messages();
  const std::vector<TestStation::Message> ms(all.begin() + static_cast<long>(before), all.end());
  REQUIRE(ms.size() >= 4);
  // Pre-policy: the octets as received, L clear.
  CHECK(ms[0].type == MessageType::kRouteMonitoring);
  CHECK(ms[0].peer.flags == 0);
  CHECK(ms[0].body == raw);
  // Post-policy: both withdrawn, L set.
  CHECK(ms[1].peer.flags == peer_flag::kPostPolicy);
  CHECK(UpdateOf(ms[1], false).withdrawn.size() == 2);
  // Loc-RIB: b's member of 10.0.0.0/24 withdrawn by its path id; a's stays (not re-sent).
  CHECK(ms[2].peer.type == PeerType::kLocRib);
  const auto loc = UpdateOf(ms[2], true);
  REQUIRE(loc.withdrawn.size() == 1);
  CHECK(loc.withdrawn[0].prefix.ToString() == "10.0.0.0/24");
  CHECK(loc.withdrawn[0].path_id == Monitor::LocRibPathId({fx.b, 0, {}}));
  CHECK(loc.nlri.empty());
  // Statistics: b has one duplicate withdrawal, 2 paths left; rejected from the speaker's counter.
  bool seen_b = false, seen_loc = false;
  for (const auto& m : ms) {
    if (m.type != MessageType::kStatisticsReport) continue;
    if (m.peer.type == PeerType::kLocRib) {
      seen_loc = true;
      // 2 stats: type 8 (3 prefixes), type 10 per family.
      CHECK(m.body[3] == 3);  // count 3: type 8, type 10 IPv4, type 10 IPv6
      CHECK(m.body[4] == 0);
      CHECK(m.body[5] == 8);
      CHECK(m.body[15] == 3);
      continue;
    }
    if (m.peer.address->ToString() != "192.0.2.2") continue;
    seen_b = true;
    const wire::Bytes want = {0, 0, 0, 4,                       // 4 stats
                              0, 0, 0, 4, 0, 0, 0, 7,           // type 0: 7 rejected
                              0, 2, 0, 4, 0, 0, 0, 1,           // type 2: 1 duplicate withdrawal
                              0, 7, 0, 8, 0, 0, 0, 0, 0, 0, 0, 2,  // type 7: 2 paths
                              0, 9, 0, 11, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 2};  // type 9 IPv4: 2
    CHECK(m.body == want);
  }
  CHECK(seen_b);
  CHECK(seen_loc);

  // Peer Down with the NOTIFICATION.
  PeerDown down;
  down.reason = PeerDownReason::kRemoteNotification;
  down.notification = *wire::EncodeMessage(wire::NotificationMessage{6, 2, {}}, {});
  fx.monitor->PeerDown(fx.b, down);
  REQUIRE(RunUntil(fx.io, [&] { return Count(station.Messages(), MessageType::kPeerDown) == 1; }));
  const auto last = station.Messages().back();
  CHECK(last.type == MessageType::kPeerDown);
  CHECK(last.body[0] == 3);
  CHECK(wire::Bytes(last.body.begin() + 1, last.body.end()) == down.notification);
}

TEST_CASE("BMP Adj-RIB-Out (RFC 8671): the tables sent and eligible, then each UPDATE sent and each change", "[bmp][monitor]") {
  Fixture fx(/*slice=*/2);  // the walks cut in slices of 2 prefixes
  fx.Fill(3);               // 10.0.0-2.0/24 from a and b; a's path is the best (lower BGP ID)
  // What b was sent: the three prefixes with our AS in front and next hop self. a was sent
  // nothing (its own routes are never sent back).
  const rib::AttrRef exported = AttrsBuilder().Path({65000, 65001, 65100}).NextHop("192.0.2.100").In(fx.store);
  rib::AdjRibOut& to_b = fx.out[fx.b];
  for (const char* p : {"10.0.0.0/24", "10.0.1.0/24", "10.0.2.0/24"}) to_b.SetAttrs(*to_b.TryEmplace(N(p).prefix).first, exported);
  fx.out[fx.a];
  TestStation station(fx.io);
  Views v;
  v.adj_rib_out_pre = true;
  v.adj_rib_out_post = true;
  fx.monitor->Configure({fx.Station(station.port(), v)});
  // End-of-RIB: pre and post, per neighbor (IPv4 only negotiated).
  REQUIRE(RunUntil(fx.io, [&] { return Count(station.Messages(), MessageType::kRouteMonitoring, IsEndOfRib) == 4; }));
  auto ms = station.Messages();
  CHECK(ms[0].type == MessageType::kInitiation);
  // No Loc-RIB instance; one Peer Up per session, with O (the station gets Adj-RIB-Out only).
  REQUIRE(Count(ms, MessageType::kPeerUp) == 2);
  CHECK(Count(ms, MessageType::kPeerUp, [](const auto& m) { return m.peer.flags == peer_flag::kAdjRibOut; }) == 2);
  std::map<std::pair<std::string, uint8_t>, std::set<std::string>> sent;  // (neighbor, flags) -> prefixes
  for (const auto& m : ms) {
    if (m.type != MessageType::kRouteMonitoring || IsEndOfRib(m)) continue;
    REQUIRE(m.peer.type == PeerType::kGlobal);
    const auto u = UpdateOf(m, false);
    REQUIRE(u.attrs.as_path.has_value());
    if (m.peer.flags == peer_flag::kAdjRibOut) {
      // Pre-policy: the Loc-RIB's best path as it is, a's (before our AS is prepended).
      CHECK(u.attrs.as_path->ToString() == "65001 65100");
    } else {
      CHECK(m.peer.flags == (peer_flag::kAdjRibOut | peer_flag::kPostPolicy));
      CHECK(u.attrs.as_path->ToString() == "65000 65001 65100");  // as sent
    }
    for (const auto& n : u.nlri) sent[{m.peer.address->ToString(), m.peer.flags}].insert(n.prefix.ToString());
  }
  const std::set<std::string> three = {"10.0.0.0/24", "10.0.1.0/24", "10.0.2.0/24"};
  CHECK(sent.size() == 2);  // nothing to a, pre or post
  CHECK(sent[{"192.0.2.2", peer_flag::kAdjRibOut}] == three);
  CHECK(sent[{"192.0.2.2", peer_flag::kAdjRibOut | peer_flag::kPostPolicy}] == three);
  size_t before = ms.size();

  // An UPDATE bagd sends b goes out as it was sent (the octets), O and L set.
  wire::UpdateMessage w;
  w.withdrawn = {N("10.0.2.0/24")};
  const wire::Bytes raw = *wire::EncodeMessage(w, {});
  fx.monitor->AdjRibOutUpdate(fx.b, raw);
  REQUIRE(RunUntil(fx.io, [&] { return station.Messages().size() == before + 1; }));
  ms = station.Messages();
  CHECK(ms.back().peer.flags == (peer_flag::kAdjRibOut | peer_flag::kPostPolicy));
  CHECK(ms.back().peer.address->ToString() == "192.0.2.2");
  CHECK(ms.back().body == raw);
  before = ms.size();

  // a withdraws 10.0.0.0/24: b's path is the best now. Pre-policy, a is eligible for it
  // (announced with b's attributes) and b no longer is (withdrawn).
  const std::vector<net::Nlri> gone = {N("10.0.0.0/24")};
  fx.rib.Withdraw(fx.a, gone);
  fx.monitor->OnRouteChanges(fx.rib.TakeChanges());
  REQUIRE(RunUntil(fx.io, [&] { return station.Messages().size() == before + 2; }));
  ms = station.Messages();
  bool to_a = false, from_b = false;
  for (size_t i = before; i < ms.size(); ++i) {
    const auto& m = ms[i];
    CHECK(m.peer.flags == peer_flag::kAdjRibOut);
    const auto u = UpdateOf(m, false);
    if (m.peer.address->ToString() == "192.0.2.1") {
      REQUIRE(u.nlri.size() == 1);
      CHECK(u.nlri[0].prefix.ToString() == "10.0.0.0/24");
      CHECK(u.attrs.as_path->ToString() == "65002 65100");
      to_a = true;
    } else {
      REQUIRE(u.withdrawn.size() == 1);
      CHECK(u.withdrawn[0].prefix.ToString() == "10.0.0.0/24");
      CHECK(u.nlri.empty());
      from_b = true;
    }
  }
  CHECK(to_a);
  CHECK(from_b);

  // Statistics: type 15 (routes in the post-policy Adj-RIB-Out), the header with O.
  fx.monitor->ReportStatistics();
  REQUIRE(RunUntil(fx.io, [&] { return Count(station.Messages(), MessageType::kStatisticsReport) == 2; }));
  for (const auto& m : station.Messages()) {
    if (m.type != MessageType::kStatisticsReport || m.peer.address->ToString() != "192.0.2.2") continue;
    CHECK(m.peer.flags == peer_flag::kAdjRibOut);
    const wire::Bytes tail(m.body.end() - 12, m.body.end());
    CHECK(tail == wire::Bytes{0, 15, 0, 8, 0, 0, 0, 0, 0, 0, 0, 3});
  }
  // Peer Down with O as well.
  fx.monitor->PeerDown(fx.b, PeerDown{});
  REQUIRE(RunUntil(fx.io, [&] { return Count(station.Messages(), MessageType::kPeerDown) == 1; }));
  CHECK(station.Messages().back().peer.flags == peer_flag::kAdjRibOut);
  CHECK(station.Messages().back().body == wire::Bytes{4});
}

TEST_CASE("BMP Adj-RIB-Out walk survives its neighbor going down mid-walk", "[bmp][monitor]") {
  Fixture fx(/*slice=*/10);
  fx.Fill(100);
  const rib::AttrRef exported = AttrsBuilder().Path({65000, 65001, 65100}).NextHop("192.0.2.100").In(fx.store);
  for (rib::PeerIndex i : {fx.a, fx.b}) {
    rib::AdjRibOut& o = fx.out[i];
    fx.rib.ForEach([&](const net::Prefix& p, const rib::Destination&) { o.SetAttrs(*o.TryEmplace(p).first, exported); });
  }
  TestStation station(fx.io);
  Views v;
  v.adj_rib_out_post = true;
  v.post_policy = true;  // a station with In views too: Peer Ups without O
  fx.monitor->Configure({fx.Station(station.port(), v)});
  // One handler at a time until the Adj-RIB-Out walk is in a's table (slices of 10 of its 100).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (Count(station.Messages(), MessageType::kRouteMonitoring,
               [](const auto& m) { return (m.peer.flags & peer_flag::kAdjRibOut) != 0; }) == 0) {
    REQUIRE(std::chrono::steady_clock::now() < deadline);
    fx.io.restart();
    fx.io.run_one_for(std::chrono::milliseconds(5));
  }
  const auto mid = station.Messages();
  REQUIRE(Count(mid, MessageType::kRouteMonitoring, IsEndOfRib) == 0);  // the walk is not over
  CHECK(mid.back().peer.address->ToString() == "192.0.2.1");
  CHECK(Count(station.Messages(), MessageType::kPeerUp, [](const auto& m) { return m.peer.flags == 0; }) == 2);
  // Neighbor a goes down and its table goes with it while the walk is in it.
  fx.monitor->PeerDown(fx.a, PeerDown{});
  fx.out.erase(fx.a);
  // End-of-RIB: post-policy In and Out for b only.
  REQUIRE(RunUntil(fx.io, [&] { return Count(station.Messages(), MessageType::kRouteMonitoring, IsEndOfRib) == 2; }));
  std::set<std::string> to_b;
  for (const auto& m : station.Messages()) {
    if (m.type != MessageType::kRouteMonitoring || IsEndOfRib(m) || !(m.peer.flags & peer_flag::kAdjRibOut)) continue;
    if (m.peer.address->ToString() != "192.0.2.2") continue;
    for (const auto& n : UpdateOf(m, false).nlri) to_b.insert(n.prefix.ToString());
  }
  CHECK(to_b.size() == 100);  // b's whole table, after a's partial one
}

TEST_CASE("BMP Loc-RIB members carry bagd's applied bandwidth, announced once weighed", "[bmp][monitor]") {
  Fixture fx(4096, /*with_applied=*/true);
  fx.applied = {{fx.a, 1e9}, {fx.b, 3e9}};  // 1:3
  fx.Fill(3);
  TestStation station(fx.io);
  Views v;
  v.loc_rib = true;
  fx.monitor->Configure({fx.Station(station.port(), v)});
  REQUIRE(RunUntil(fx.io, [&] { return Count(station.Messages(), MessageType::kRouteMonitoring, IsEndOfRib) == 2; }));
  // Each member with one extended community: bagd's, non-transitive, AS 65000, what it applies.
  const wire::ExtendedCommunity one_g = AppliedBandwidthCommunity(65000, 1e9);
  const wire::ExtendedCommunity three_g = AppliedBandwidthCommunity(65000, 3e9);
  size_t members = 0;
  for (const auto& m : station.Messages()) {
    if (m.type != MessageType::kRouteMonitoring || IsEndOfRib(m)) continue;
    const auto u = UpdateOf(m, true);
    REQUIRE(u.attrs.next_hop.has_value());
    const bool from_a = u.attrs.next_hop->ToString() == "192.0.2.1";
    CHECK(u.attrs.extended_communities == std::vector<wire::ExtendedCommunity>{from_a ? one_g : three_g});
    members += u.nlri.size();
  }
  CHECK(members == 6);
  const size_t before = station.Messages().size();

  // b withdraws 10.0.0.0/24: its member is withdrawn at once; a's stays and is not announced
  // until the weights stage has weighed the prefix, then with what it applies now (all of it).
  const std::vector<net::Nlri> gone = {N("10.0.0.0/24")};
  fx.rib.Withdraw(fx.b, gone);
  fx.monitor->OnRouteChanges(fx.rib.TakeChanges());
  REQUIRE(RunUntil(fx.io, [&] { return station.Messages().size() == before + 1; }));
  auto ms = station.Messages();
  auto u = UpdateOf(ms.back(), true);
  CHECK(u.nlri.empty());
  REQUIRE(u.withdrawn.size() == 1);
  CHECK(u.withdrawn[0].path_id == Monitor::LocRibPathId({fx.b, 0, {}}));
  fx.applied[fx.a] = 2e9;
  const std::vector<net::Prefix> weighed = {N("10.0.0.0/24").prefix};
  fx.monitor->AppliedChanged(weighed);
  REQUIRE(RunUntil(fx.io, [&] { return station.Messages().size() == before + 2; }));
  u = UpdateOf(station.Messages().back(), true);
  REQUIRE(u.nlri.size() == 1);
  CHECK(u.nlri[0].prefix.ToString() == "10.0.0.0/24");
  CHECK(u.nlri[0].path_id == Monitor::LocRibPathId({fx.a, 0, {}}));
  CHECK(u.attrs.extended_communities == std::vector<wire::ExtendedCommunity>{AppliedBandwidthCommunity(65000, 2e9)});
}

TEST_CASE("BMP station that stops reading is dropped, counted, and re-synced when it reads again", "[bmp][monitor][stress]") {
  Fixture fx(/*slice=*/512);
  fx.Fill(30000, /*distinct=*/true);  // ~13 MB of BMP: more than the kernel's socket buffers
  TestStation station(fx.io);
  station.set_reading(false);
  Views v;
  v.post_policy = true;
  v.loc_rib = true;
  StationConfig c = fx.Station(station.port(), v);
  c.max_buffer_bytes = 256 << 10;  // 256 KiB
  // Reconnects no sooner than 0.75 s after the drop: the state right after it can be looked at
  // (under ASan a round of changes takes longer than the tests' usual 20 ms backoff).
  c.retry_min_ms = 1000;
  c.retry_max_ms = 2000;
  fx.monitor->Configure({c});
  // The sync fills the socket and pauses at the low-water mark; live changes then overflow.
  REQUIRE(RunUntil(fx.io, [&] { return station.connections() == 1 && fx.monitor->Status()[0].state == Station::State::kUp; }));
  fx.io.restart();
  fx.io.run_for(std::chrono::milliseconds(300));
  CHECK(fx.monitor->Status()[0].syncing);  // waiting for the station, not done
  CHECK(fx.monitor->Status()[0].buffered <= c.max_buffer_bytes);
  uint32_t med = 1000000;
  for (int round = 0; round < 2000 && fx.monitor->Status()[0].counters.drops == 0; ++round) {
    for (int i = 0; i < 100; ++i) {
      const uint8_t bytes[4] = {10, static_cast<uint8_t>(i), 0, 0};
      const net::Nlri n{net::Prefix::Make(net::Afi::kIpv4, bytes, 24), 0};
      const rib::AttrRef changed = AttrsBuilder().Path({65001, 65100}).NextHop("192.0.2.1").Med(++med).In(fx.store);
      fx.rib.Announce(fx.a, std::span(&n, 1), changed);
      wire::UpdateMessage u;
      u.nlri = {n};
      u.attrs = changed->attrs;
      fx.monitor->PostPolicyUpdate(fx.a, u);
    }
    fx.monitor->OnRouteChanges(fx.rib.TakeChanges());
  }
  fx.io.restart();
  fx.io.poll();  // the posted `down`
  const auto dropped = fx.monitor->Status()[0];
  CHECK(dropped.counters.drops == 1);
  CHECK(dropped.buffered == 0);  // its memory went with it
  CHECK_FALSE(dropped.syncing);
  // The station reads again; bagd reconnects after the backoff and re-syncs everything.
  station.set_reading(true);
  REQUIRE(RunUntil(fx.io, [&] { return station.connections() == 2; }));
  // Done when the walk ended and its last octets are written (parsing ~13 MB on every poll
  // would make this quadratic), then once more until the station has read them.
  REQUIRE(RunUntil(fx.io, [&] { return fx.monitor->Status()[0].syncs_done == 1 && fx.monitor->Status()[0].buffered == 0; },
                   std::chrono::seconds(60)));
  REQUIRE(RunUntil(fx.io, [&] { return Count(station.Messages(), MessageType::kRouteMonitoring, IsEndOfRib) == 4; }, std::chrono::seconds(30)));
  size_t post = 0;
  for (const auto& m : station.Messages()) {
    if (m.type == MessageType::kRouteMonitoring && !IsEndOfRib(m) && m.peer.type == PeerType::kGlobal) {
      post += UpdateOf(m, false).nlri.size();
    }
  }
  CHECK(post == fx.rib.paths_of(fx.a) + fx.rib.paths_of(fx.b));
  CHECK(fx.monitor->Status()[0].counters.reconnects == 1);
  CHECK(fx.monitor->Status()[0].counters.drops == 1);
}

TEST_CASE("BMP station that refuses, resets and comes and goes: routing state untouched, no leak", "[bmp][monitor][stress]") {
  Fixture fx(/*slice=*/256);
  fx.Fill(2000);
  const size_t paths = fx.rib.path_count();
  auto station = std::make_unique<TestStation>(fx.io);
  const uint16_t port = station->port();
  Views v;
  v.post_policy = true;
  v.loc_rib = true;
  v.pre_policy = true;
  fx.monitor->Configure({fx.Station(port, v)});
  // 100 connections, each reset at a different point of the sync.
  for (int i = 0; i < 100; ++i) {
    REQUIRE(RunUntil(fx.io, [&] { return station->connections() == static_cast<size_t>(i + 1); }));
    fx.io.restart();
    fx.io.run_for(std::chrono::milliseconds(i % 7));
    station->Reset();
  }
  // Refused: nobody listens on the port.
  station.reset();
  fx.io.restart();
  fx.io.run_for(std::chrono::milliseconds(300));
  auto s = fx.monitor->Status()[0];
  CHECK(s.state != Station::State::kUp);
  CHECK(s.counters.connects == 100);
  CHECK(s.counters.failures >= 101);
  CHECK(s.buffered == 0);
  CHECK(fx.rib.path_count() == paths);
  // A reload that removes the station mid-backoff, then destroys the monitor with handlers queued.
  fx.monitor->Configure({});
  CHECK(fx.monitor->Status().empty());
  fx.io.restart();
  fx.io.run_for(std::chrono::milliseconds(50));
  fx.monitor.reset();
  fx.io.restart();
  fx.io.run_for(std::chrono::milliseconds(50));
}

TEST_CASE("BMP station removed by a reload in the middle of a sync gets a Termination", "[bmp][monitor]") {
  Fixture fx(/*slice=*/64);
  fx.Fill(30000, /*distinct=*/true);
  TestStation station(fx.io);
  station.set_reading(false);  // the sync stalls at the low-water mark
  Views v;
  v.loc_rib = true;
  StationConfig c = fx.Station(station.port(), v);
  c.max_buffer_bytes = 1 << 20;
  fx.monitor->Configure({c});
  REQUIRE(RunUntil(fx.io, [&] { return station.connections() == 1 && fx.monitor->Status()[0].state == Station::State::kUp; }));
  fx.io.restart();
  fx.io.run_for(std::chrono::milliseconds(200));
  REQUIRE(fx.monitor->Status()[0].syncing);
  fx.monitor->Configure({});
  CHECK(fx.monitor->Status().empty());
  station.set_reading(true);
  REQUIRE(RunUntil(fx.io, [&] { return Count(station.Messages(), MessageType::kTermination) == 1; }));
  const auto ms = station.Messages();
  CHECK(ms.back().type == MessageType::kTermination);
  CHECK(Count(ms, MessageType::kRouteMonitoring, IsEndOfRib) == 0);  // the sync did not finish
}

TEST_CASE("BMP planned stop sends Termination after what is queued", "[bmp][monitor]") {
  Fixture fx;
  fx.Fill(10);
  TestStation station(fx.io);
  Views v;
  v.post_policy = true;
  fx.monitor->Configure({fx.Station(station.port(), v)});
  REQUIRE(RunUntil(fx.io, [&] { return Count(station.Messages(), MessageType::kRouteMonitoring, IsEndOfRib) == 2; }));
  fx.monitor->Stop();
  REQUIRE(RunUntil(fx.io, [&] { return Count(station.Messages(), MessageType::kTermination) == 1; }));
  CHECK(station.Messages().back().body == wire::Bytes{0, 0, 0, 16, 'b', 'a', 'g', 'd', ' ', 'i', 's', ' ', 's', 't', 'o', 'p', 'p', 'i', 'n', 'g', 0, 1, 0, 2, 0, 0});
  REQUIRE(RunUntil(fx.io, [&] { return fx.monitor->Status()[0].state == Station::State::kStopped; }));
}

}  // namespace bagd::bmp

namespace bagd::bmp {

// Not a pass/fail test (hidden: `bagd_bmp_tests "[.bench]"`): a 1M-path table (500k prefixes
// from two neighbors, each prefix with its own attributes, the worst case for packing) to a
// station that reads as fast as loopback allows, post-policy and Loc-RIB. Prints the time, the
// CPU, the octets and the longest task on the event thread.
TEST_CASE("BMP bench: stream a 1M-path table to a station", "[.bench][bmp]") {
  Fixture fx;
  const size_t prefixes = 500000;
  {
    std::vector<net::Nlri> nlri;
    for (size_t i = 0; i < prefixes; ++i) {
      const uint8_t bytes[4] = {static_cast<uint8_t>(10 + (i >> 16)), static_cast<uint8_t>(i >> 8), static_cast<uint8_t>(i), 0};
      const net::Nlri n{net::Prefix::Make(net::Afi::kIpv4, bytes, 24), 0};
      const auto med = static_cast<uint32_t>(i);
      fx.rib.Announce(fx.a, std::span(&n, 1), AttrsBuilder().Path({65001, 65100}).NextHop("192.0.2.1").Med(med).In(fx.store));
      fx.rib.Announce(fx.b, std::span(&n, 1), AttrsBuilder().Path({65002, 65100}).NextHop("192.0.2.2").Med(med).In(fx.store));
    }
    fx.rib.TakeChanges();
  }
  REQUIRE(fx.rib.path_count() == 2 * prefixes);
  TestStation station(fx.io);
  Views v;
  v.post_policy = true;
  v.loc_rib = true;
  const auto t0 = std::chrono::steady_clock::now();
  const std::clock_t c0 = std::clock();
  fx.monitor->Configure({fx.Station(station.port(), v)});
  REQUIRE(RunUntil(fx.io, [&] { return fx.monitor->Status()[0].syncs_done == 1 && fx.monitor->Status()[0].buffered == 0; },
                   std::chrono::seconds(300)));
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double cpu = static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC;
  const auto s = fx.monitor->Status()[0];
  std::printf("BMP sync of %zu paths (post-policy + Loc-RIB): %.2f s wall, %.2f s CPU (this process, station included), "
              "%.1f MB, %llu messages, longest event-thread task %.1f ms\n",
              fx.rib.path_count(), wall, cpu, static_cast<double>(s.counters.bytes) / 1e6,
              static_cast<unsigned long long>(s.counters.messages), static_cast<double>(s.longest_slice.count()) / 1000.0);
  CHECK(s.counters.drops == 0);
}

}  // namespace bagd::bmp
