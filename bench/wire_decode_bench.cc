// Codec throughput: decoding packed UPDATEs into values the RIB can use (prefix
// vectors + decoded attributes), and packing them. `make bench` runs this.
#include <benchmark/benchmark.h>

#include "wire/message.h"
#include "wire/update_packer.h"

using namespace bagd::wire;
using namespace bagd::net;

namespace {

PathAttributes Attrs() {
  PathAttributes a;
  a.origin = Origin::kIgp;
  a.as_path = AsPath{{{AsSegmentType::kSequence, {65001}}}};
  a.extended_communities = {LinkBandwidth::FromBitsPerSecond(65001, 100e9, true).ToExtendedCommunity()};
  return a;
}

std::vector<Nlri> V4(size_t n) {
  std::vector<Nlri> out;
  for (size_t i = 0; i < n; ++i) {
    const uint32_t a = 0x0a000000u + (static_cast<uint32_t>(i) << 8);
    const uint8_t b[4] = {uint8_t(a >> 24), uint8_t(a >> 16), uint8_t(a >> 8), 0};
    out.push_back(Nlri{Prefix::Make(Afi::kIpv4, b, 24), 0});
  }
  return out;
}

std::vector<Nlri> V6(size_t n) {
  std::vector<Nlri> out;
  for (size_t i = 0; i < n; ++i) {
    const uint8_t b[16] = {0x20, 0x01, 0x0d, 0xb8, uint8_t(i >> 8), uint8_t(i)};
    out.push_back(Nlri{Prefix::Make(Afi::kIpv6, b, 48), 0});
  }
  return out;
}

// The first (full) message of a packed run.
Bytes FirstPacked(Family f) {
  PathAttributes a = Attrs();
  std::vector<Nlri> nlri;
  if (f == Family::kIpv4Unicast) {
    a.next_hop = *IpAddress::Parse("192.0.2.1");
    nlri = V4(4000);
  } else {
    a.mp_reach = MpReach{f, *IpAddress::Parse("2001:db8::1"), *IpAddress::Parse("fe80::1"), {}};
    nlri = V6(4000);
  }
  return (*PackAnnouncements(a, f, nlri, CodecContext{}))[0];
}

size_t PrefixCount(const Message& m) {
  const auto& u = std::get<UpdateMessage>(m);
  return u.nlri.size() + (u.attrs.mp_reach ? u.attrs.mp_reach->nlri.size() : 0);
}

void DecodePacked(benchmark::State& state, Family f) {
  const Bytes msg = FirstPacked(f);
  const CodecContext ctx;
  size_t prefixes = 0;
  for (auto _ : state) {
    auto d = DecodeMessage(msg, ctx);
    benchmark::DoNotOptimize(d);
    prefixes += PrefixCount(d.value());
  }
  state.SetItemsProcessed(static_cast<int64_t>(prefixes));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * msg.size()));
  state.counters["prefixes_per_msg"] = static_cast<double>(PrefixCount(DecodeMessage(msg, ctx).value()));
  state.counters["msg_octets"] = static_cast<double>(msg.size());
}

void BM_DecodeIpv4Slash24Packed(benchmark::State& state) { DecodePacked(state, Family::kIpv4Unicast); }
void BM_DecodeIpv6Slash48Packed(benchmark::State& state) { DecodePacked(state, Family::kIpv6Unicast); }

void BM_PackIpv4Slash24(benchmark::State& state) {
  PathAttributes a = Attrs();
  a.next_hop = *IpAddress::Parse("192.0.2.1");
  const auto nlri = V4(100000);
  const CodecContext ctx;
  for (auto _ : state) {
    auto msgs = PackAnnouncements(a, Family::kIpv4Unicast, nlri, ctx);
    benchmark::DoNotOptimize(msgs);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * nlri.size()));
}

}  // namespace

BENCHMARK(BM_DecodeIpv4Slash24Packed);
BENCHMARK(BM_DecodeIpv6Slash48Packed);
BENCHMARK(BM_PackIpv4Slash24);
