// The advertiser's update groups (bgpd/daemon/advertiser.h): neighbors with the same export
// share one export pass and one packing, and each must still get exactly the bytes it would
// get alone. Two advertisers are fed the same random history (announcements with link
// bandwidth, withdrawals, sessions going down and up, time passing for re-advertisement
// damping), one sharing and one with every neighbor alone; each neighbor's UPDATEs must be the
// same byte for byte, and the sharing one must really have shared.
#include <catch2/catch.hpp>

#include <deque>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "bgpd/daemon/advertiser.h"
#include "bgpd/daemon/routing_core.h"
#include "bgpd/session/clock.h"
#include "wire/link_bandwidth.h"

namespace bagd::daemon {
namespace {

class Recorder final : public Outbound {
 public:
  Recorder(std::string name, net::IpAddress local, bool ebgp, uint32_t mrai)
      : name_(std::move(name)), local_(local), ebgp_(ebgp), mrai_(mrai) {}
  const std::string& name() const override { return name_; }
  bool established() const override { return up; }
  bool ebgp() const override { return ebgp_; }
  bool family_negotiated(net::Family f) const override {
    return up && (f == net::Family::kIpv4Unicast) == local_.is_v4();
  }
  wire::CodecContext EncodeContext() const override {
    wire::CodecContext c;
    c.ebgp = ebgp_;
    return c;
  }
  std::optional<net::IpAddress> LocalAddress() const override { return local_; }
  uint32_t advertisement_interval_s() const override { return mrai_; }
  void SendUpdates(std::vector<wire::Bytes> messages) override {
    for (auto& m : messages) sent.push_back(std::move(m));
  }
  void SendRouteRefresh(const wire::RouteRefreshMessage&) override {}
  void Advertised(size_t n) override { advertised = n; }

  bool up = true;
  std::vector<wire::Bytes> sent;
  size_t advertised = 0;

 private:
  std::string name_;
  net::IpAddress local_;
  bool ebgp_;
  uint32_t mrai_;
};

class Sink final : public rib::RouteChangeListener {
 public:
  void OnRouteChanges(std::span<const rib::RouteChange>) override {}
};

net::IpAddress Ip(const std::string& s) { return *net::IpAddress::Parse(s); }

// One router: a RIB with 8-way multipath, an advertiser, and its neighbors. Neighbors 0..15
// are eBGP sources and exporters, in four export groups: 0-7 the default export, 8-9 an
// advertisement interval of 1 s, 10-12 a fixed link bandwidth, 13-15 IPv6 sessions (they
// send and get the IPv6 prefixes). Each has its own local address (next-hop-self differs per
// neighbor).
struct Router {
  static constexpr int kNeighbors = 16;
  explicit Router(bool share) : core(65000, rib::DecisionConfig{false, 8, 8, true}), adv(core, sink, clock, 65000) {
    adv.set_shared_export(share);
    for (int i = 0; i < kNeighbors; ++i) {
      const bool v6 = i >= 13;
      const std::string address = v6 ? absl::StrFormat("2001:db8:%d::2", i) : absl::StrFormat("10.0.%d.2", i);
      const std::string local = v6 ? absl::StrFormat("2001:db8:%d::1", i) : absl::StrFormat("10.0.%d.1", i);
      outs.emplace_back(absl::StrFormat("n%d", i), Ip(local), true, (i == 8 || i == 9) ? 1 : 0);
      rib::PeerInfo info;
      info.source.address = Ip(address);
      info.source.ebgp = true;
      info.source.router_id = 100 + i;
      info.asn = 65100 + i;
      info.name = outs.back().name();
      const rib::PeerIndex index = core.AddPeer(info, info.source.address, NeighborPolicies{});
      ExportConfig config;
      if (i >= 10 && i <= 12) {
        config.link_bandwidth.mode = rib::LinkBandwidthExportMode::kFixed;
        config.link_bandwidth.fixed_bps = 400e9;
      }
      adv.AddPeer(index, outs.back(), config);
      index_.push_back(index);
      adv.SessionUp(index);
    }
  }
  void Announce(int from, uint32_t prefix, double gbps) {
    wire::UpdateMessage u;
    u.attrs.origin = wire::Origin::kIgp;
    u.attrs.as_path = wire::AsPath{{{wire::AsSegmentType::kSequence, {65100u + from}}}};
    u.attrs.extended_communities = {
        wire::LinkBandwidth::FromBitsPerSecond(65100 + from, gbps * 1e9, true).ToExtendedCommunity()};
    if (from >= 13) {
      u.attrs.mp_reach = wire::MpReach{net::Family::kIpv6Unicast, Ip(absl::StrFormat("2001:db8:%d::2", from)),
                                       std::nullopt, {V6(prefix)}};
    } else {
      u.attrs.next_hop = Ip(absl::StrFormat("10.0.%d.2", from));
      const uint8_t b[4] = {172, 16, uint8_t(prefix), 0};
      u.nlri.push_back(net::Nlri{net::Prefix::Make(net::Afi::kIpv4, b, 24), 0});
    }
    core.Ingest(index_[from], u);
  }
  void Withdraw(int from, uint32_t prefix) {
    wire::UpdateMessage u;
    if (from >= 13) {
      u.attrs.mp_unreach = wire::MpUnreach{net::Family::kIpv6Unicast, {V6(prefix)}};
    } else {
      const uint8_t b[4] = {172, 16, uint8_t(prefix), 0};
      u.withdrawn.push_back(net::Nlri{net::Prefix::Make(net::Afi::kIpv4, b, 24), 0});
    }
    core.Ingest(index_[from], u);
  }
  static net::Nlri V6(uint32_t prefix) {
    const uint8_t b[16] = {0x20, 0x01, 0x0d, 0xb8, 0xff, uint8_t(prefix)};
    return net::Nlri{net::Prefix::Make(net::Afi::kIpv6, b, 48), 0};
  }
  void Down(int i) {
    outs[i].up = false;
    adv.Flush();
    std::optional<net::Prefix> from;
    do {
      from = core.PeerDownFrom(index_[i], from, 1000);
    } while (from);
    adv.SessionDown(index_[i]);
  }
  void Up(int i) {
    outs[i].up = true;
    adv.SessionUp(index_[i]);
  }

  session::ManualClock clock;
  RoutingCore core;
  Sink sink;
  Advertiser adv;
  std::deque<Recorder> outs;
  std::vector<rib::PeerIndex> index_;
};

TEST_CASE("Update groups: each neighbor gets the bytes it would get alone", "[daemon][advertiser]") {
  for (uint32_t seed = 1; seed <= 6; ++seed) {
    Router shared(true), alone(false);
    std::mt19937 rng(seed);
    const double rates[] = {100, 40, 25, 10, 400};
    for (int step = 0; step < 400; ++step) {
      const int what = std::uniform_int_distribution<int>(0, 99)(rng);
      const int peer = std::uniform_int_distribution<int>(0, Router::kNeighbors - 1)(rng);
      const uint32_t prefix = std::uniform_int_distribution<uint32_t>(0, 23)(rng);
      if (what < 60) {
        const double gbps = rates[std::uniform_int_distribution<int>(0, 4)(rng)];
        for (Router* r : {&shared, &alone}) r->Announce(peer, prefix, gbps);
      } else if (what < 80) {
        for (Router* r : {&shared, &alone}) r->Withdraw(peer, prefix);
      } else if (what < 84) {
        for (Router* r : {&shared, &alone}) {
          if (r->outs[peer].up) {
            r->Down(peer);
          } else {
            r->Up(peer);
          }
        }
      } else {
        const int ms = std::uniform_int_distribution<int>(1, 3000)(rng);
        for (Router* r : {&shared, &alone}) r->clock.Advance(ms);
      }
      // A batch of changes every few steps, as a read completion's worth.
      if (step % 3 == 2) {
        for (Router* r : {&shared, &alone}) r->adv.Flush();
      }
    }
    for (Router* r : {&shared, &alone}) {
      r->adv.Flush();
      r->clock.Advance(10'000);  // deferred bandwidth and paced prefixes go out
    }
    for (int i = 0; i < Router::kNeighbors; ++i) {
      INFO("seed " << seed << ", neighbor " << i);
      CHECK(shared.outs[i].sent.size() == alone.outs[i].sent.size());
      CHECK(shared.outs[i].sent == alone.outs[i].sent);
      CHECK(shared.outs[i].advertised == alone.outs[i].advertised);
    }
    // It shared. Initial tables, paced and deferred prefixes go to one neighbor at a time, so
    // about a third of the neighbors' change sets come through a group's pass (~0.4 here).
    const auto stats = shared.adv.export_stats();
    const auto reference = alone.adv.export_stats();
    INFO("seed " << seed << ": passes " << stats.passes << " (alone " << reference.passes << "), members "
                 << stats.members << ", reused " << stats.reused);
    CHECK(stats.members == reference.members);
    CHECK(stats.passes < reference.passes / 2);
    CHECK(stats.reused > stats.members / 4);
    CHECK(reference.reused == 0);
  }
}

}  // namespace
}  // namespace bagd::daemon
