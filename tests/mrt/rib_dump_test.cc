// The RIB as TABLE_DUMP_V2, read back with the tests' own reader (tests/mrt/mrt_reader.h).
#include <catch2/catch.hpp>

#include <set>

#include "mrt/rib_dump.h"
#include "tests/mrt/mrt_reader.h"
#include "tests/rib/rib_test_support.h"

namespace bagd::mrt {
namespace {

using rib::test::AttrsBuilder;
using rib::test::N;
using test::Hex;

struct Table {
  rib::AttributeStore store;
  rib::Rib rib{65000, rib::DecisionConfig{}};
  rib::PeerIndex a, b;
  Table() {
    a = rib.AddPeer(rib::test::Peer("10.0.0.2", 0x0a000002, 65001));
    b = rib.AddPeer(rib::test::Peer("2001:db8::3", 0x0a000003, 65002));
  }
  wire::PathAttributes V6(const char* nh) {
    wire::PathAttributes attrs = AttrsBuilder().Path({65002}).a;
    attrs.next_hop.reset();
    attrs.mp_reach = wire::MpReach{net::Family::kIpv6Unicast, *net::IpAddress::Parse(nh), std::nullopt, {}};
    return attrs;
  }
};

Bytes DumpAll(const rib::Rib& rib, RibDumpOptions o, size_t max_paths, RibDumpCounts* counts = nullptr) {
  RibDumpEncoder enc(std::move(o));
  Bytes out;
  enc.Begin(rib, out);
  int guard = 0;
  while (!enc.Next(rib, out, max_paths)) REQUIRE(++guard < 100000);
  if (counts) *counts = enc.counts();
  return out;
}

TEST_CASE("table dump: peer index table, then one record per prefix with every path", "[mrt]") {
  Table t;
  t.rib.Announce(t.a, std::vector{N("192.0.2.0/24"), N("198.51.100.0/24")}, AttrsBuilder().Path({65001}).In(t.store));
  t.rib.Announce(t.b, std::vector{N("192.0.2.0/24")}, AttrsBuilder().Path({65002, 65010}).NextHop("10.0.0.3").In(t.store));
  t.rib.Announce(t.b, std::vector{N("2001:db8:1::/48")}, t.store.Intern(t.V6("2001:db8::3")));
  RibDumpOptions o;
  o.timestamp = 1600000000;
  o.collector_bgp_id = 0xc0000201;
  o.view_name = "bagd";
  o.peers.resize(2);
  o.peers[0].originated_time = 1599990000;
  RibDumpCounts counts;
  const Bytes out = DumpAll(t.rib, o, 1000, &counts);
  CHECK(counts.prefixes == 3);
  CHECK(counts.paths == 4);
  CHECK(counts.records == 4);
  CHECK(counts.skipped_paths == 0);

  auto records = test::SplitRecords(out);
  REQUIRE(records);
  REQUIRE(records->size() == 4);
  CHECK((*records)[0].type == 13);
  CHECK((*records)[0].subtype == 1);
  CHECK((*records)[0].body == Hex("c0000201 0004 62616764 0002"
                                  "02 0a000002 0a000002 0000fde9"
                                  "03 0a000003 20010db8000000000000000000000003 0000fdea"));
  // 192.0.2.0/24 first (IPv4 before IPv6, in address order), both paths, best first.
  CHECK((*records)[1].subtype == 2);
  auto first = test::ParseRib((*records)[1]);
  REQUIRE(first);
  CHECK(first->sequence == 0);
  CHECK(first->length == 24);
  CHECK(first->prefix == Hex("c00002"));
  REQUIRE(first->entries.size() == 2);
  CHECK(first->entries[0].peer_index == 0);  // AS path length 1 beats 2
  CHECK(first->entries[0].originated == 1599990000);
  CHECK(first->entries[0].attributes == Hex("40 01 01 00  40 02 06 02 01 0000fde9  40 03 04 0a000001"));
  CHECK(first->entries[1].peer_index == 1);
  CHECK(first->entries[1].originated == 0);
  CHECK(first->entries[1].attributes == Hex("40 01 01 00  40 02 0a 02 02 0000fdea 0000fdf2  40 03 04 0a000003"));
  auto second = test::ParseRib((*records)[2]);
  REQUIRE(second);
  CHECK(second->sequence == 1);
  CHECK(second->prefix == Hex("c63364"));
  // The IPv6 path: MP_REACH_NLRI abbreviated (RFC 6396 §4.3.4), no NEXT_HOP.
  CHECK((*records)[3].subtype == 4);
  auto v6 = test::ParseRib((*records)[3]);
  REQUIRE(v6);
  CHECK(v6->length == 48);
  CHECK(v6->prefix == Hex("20010db80001"));
  REQUIRE(v6->entries.size() == 1);
  CHECK(v6->entries[0].attributes ==
        Hex("40 01 01 00  40 02 06 02 01 0000fdea  80 0e 11 10 20010db8000000000000000000000003"));
}

TEST_CASE("table dump: any slice size gives the same file", "[mrt]") {
  Table t;
  for (int i = 0; i < 300; ++i) {
    const std::string p = "10." + std::to_string(i / 256) + "." + std::to_string(i % 256) + ".0/24";
    t.rib.Announce(i % 2 ? t.a : t.b, std::vector{N(p.c_str())}, AttrsBuilder().Path({65001, uint32_t(i)}).In(t.store));
    if (i % 3 == 0) t.rib.Announce(t.a, std::vector{N(p.c_str())}, AttrsBuilder().Path({65003}).In(t.store));
  }
  RibDumpOptions o;
  o.timestamp = 5;
  RibDumpCounts whole, sliced;
  const Bytes one = DumpAll(t.rib, o, 1u << 30, &whole);
  const Bytes many = DumpAll(t.rib, o, 1, &sliced);
  CHECK(one == many);
  CHECK(whole.prefixes == t.rib.prefix_count());
  CHECK(whole.paths == t.rib.path_count());
  CHECK(sliced.paths == whole.paths);
}

TEST_CASE("table dump: a table that changes between slices gives each prefix once, as it was when written", "[mrt]") {
  Table t;
  t.rib.Announce(t.a, std::vector{N("10.0.0.0/24"), N("10.0.1.0/24"), N("10.0.2.0/24")}, AttrsBuilder().In(t.store));
  RibDumpEncoder enc(RibDumpOptions{});
  Bytes out;
  enc.Begin(t.rib, out);
  REQUIRE_FALSE(enc.Next(t.rib, out, 1));  // 10.0.0.0/24
  t.rib.Withdraw(t.a, std::vector{N("10.0.0.0/24"), N("10.0.1.0/24")});  // one written, one ahead
  t.rib.Announce(t.b, std::vector{N("10.0.3.0/24")}, AttrsBuilder().In(t.store));
  while (!enc.Next(t.rib, out, 1)) {
  }
  auto records = test::SplitRecords(out);
  REQUIRE(records);
  std::vector<Bytes> prefixes;
  for (size_t i = 1; i < records->size(); ++i) prefixes.push_back(test::ParseRib((*records)[i])->prefix);
  CHECK(prefixes == std::vector<Bytes>{Hex("0a0000"), Hex("0a0002"), Hex("0a0003")});
  CHECK(enc.counts().prefixes == 3);
}

TEST_CASE("table dump: a peer's ADD-PATH family uses the _ADDPATH subtype with the path ids", "[mrt]") {
  Table t;
  t.rib.Announce(t.a, std::vector{N("192.0.2.0/24", 7), N("192.0.2.0/24", 8)}, AttrsBuilder().In(t.store));
  t.rib.Announce(t.b, std::vector{N("198.51.100.0/24")}, AttrsBuilder().In(t.store));
  RibDumpOptions o;
  o.peers.resize(2);
  o.peers[0].add_path[0] = true;
  const Bytes out = DumpAll(t.rib, o, 100);
  auto records = test::SplitRecords(out);
  REQUIRE(records);
  REQUIRE(records->size() == 3);
  CHECK((*records)[1].subtype == 8);
  auto r = test::ParseRib((*records)[1]);
  REQUIRE(r);
  REQUIRE(r->entries.size() == 2);
  std::set<uint32_t> ids = {r->entries[0].path_id, r->entries[1].path_id};
  CHECK(ids == std::set<uint32_t>{7, 8});
  CHECK((*records)[2].subtype == 2);  // peer b sends no path ids
}

TEST_CASE("table dump: paths of a peer added after the peer index table are skipped and counted", "[mrt]") {
  Table t;
  t.rib.Announce(t.a, std::vector{N("192.0.2.0/24")}, AttrsBuilder().In(t.store));
  RibDumpEncoder enc(RibDumpOptions{});
  Bytes out;
  enc.Begin(t.rib, out);
  const rib::PeerIndex c = t.rib.AddPeer(rib::test::Peer("10.0.0.9", 9, 65009));
  t.rib.Announce(c, std::vector{N("192.0.2.0/24"), N("203.0.113.0/24")}, AttrsBuilder().NextHop("10.0.0.9").In(t.store));
  while (!enc.Next(t.rib, out, 100)) {
  }
  CHECK(enc.counts().prefixes == 1);
  CHECK(enc.counts().paths == 1);
  CHECK(enc.counts().skipped_paths == 2);
}

TEST_CASE("table dump: an empty RIB is a peer index table alone", "[mrt]") {
  rib::Rib rib(65000, rib::DecisionConfig{});
  RibDumpCounts counts;
  const Bytes out = DumpAll(rib, RibDumpOptions{}, 10, &counts);
  CHECK(counts.records == 1);
  CHECK(out == Hex("00000000 000d 0001 00000008 00000000 0000 0000"));
}

}  // namespace
}  // namespace bagd::mrt
