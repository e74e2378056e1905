#include <catch2/catch.hpp>

#include "absl/strings/str_cat.h"
#include "rib/weights/nexthop_group_registry.h"
#include "tests/rib/rib_test_support.h"

using namespace bagd;
using namespace bagd::rib;
using namespace bagd::rib::test;

namespace {

std::vector<std::string> Names(const Rib& rib, std::span<const Path> paths) {
  std::vector<std::string> out;
  for (const auto& p : paths) out.push_back(rib.peer(p.peer).name);
  return out;
}

// One UPDATE for `prefix` with `attrs`, on the wire (for a wire::UpdateDecoder).
wire::Bytes EncodedUpdate(const char* prefix, const wire::PathAttributes& attrs, const wire::CodecContext& ctx) {
  wire::UpdateMessage u;
  u.attrs = attrs;
  u.nlri.push_back(N(prefix));
  return *wire::EncodeMessage(u, ctx);
}

}  // namespace

TEST_CASE("Attribute interning shares one copy and frees it with the last path", "[rib][intern]") {
  AttributeStore store;
  {
    const AttrRef a = AttrsBuilder().Med(5).In(store);
    const AttrRef b = AttrsBuilder().Med(5).In(store);
    const AttrRef c = AttrsBuilder().Med(6).In(store);
    CHECK(a == b);
    CHECK_FALSE(a == c);
    CHECK(store.size() == 2);
    CHECK(a->refs == 2);
    CHECK(a->med == 5);
    CHECK(a->as_path_length == 1);
    CHECK(a->neighbor_as == 65001);
    CHECK(a->next_hop.ToString() == "10.0.0.1");
  }
  CHECK(store.size() == 0);
}

TEST_CASE("Attribute interning: the last set is reused without encoding, and forgotten when freed", "[rib][intern]") {
  AttributeStore store;
  const wire::PathAttributes five = AttrsBuilder().Med(5).a;
  AttrRef a = store.Intern(five);
  // The same set again, as an lvalue and as an rvalue: the same entry.
  CHECK(store.Intern(five) == a);
  CHECK(store.Intern(wire::PathAttributes(five)) == a);
  CHECK(a->refs == 1);  // the temporaries above are gone
  // Another set in between, then the first again: found by its encoding.
  AttrRef c = AttrsBuilder().Med(6).In(store);
  CHECK_FALSE(c == a);
  CHECK(store.Intern(five) == a);
  CHECK(store.size() == 2);
  // An MP_REACH_NLRI carrying NLRI is stored without them: the same entry as without.
  wire::PathAttributes mp = AttrsBuilder().Med(7).a;
  mp.next_hop.reset();
  mp.mp_reach = wire::MpReach{net::Family::kIpv6Unicast, *net::IpAddress::Parse("2001:db8::1"), std::nullopt, {}};
  const AttrRef bare = store.Intern(mp);
  mp.mp_reach->nlri.push_back(net::Nlri{*net::Prefix::Parse("2001:db8:1::/48"), 0});
  CHECK(store.Intern(mp) == bare);
  CHECK(bare->attrs.mp_reach->nlri.empty());
  // The last set interned is freed: a new one at the same address is not mistaken for it.
  c = AttrRef();
  a = AttrRef();
  CHECK(store.size() == 1);  // `bare`
  const AttrRef again = AttrsBuilder().Med(6).In(store);
  CHECK(again->med == 6);
  CHECK(store.Intern(five)->med == 5);
}

TEST_CASE("Attribute interning by decoder token: a recent token gives its set without a compare and a freed set is forgotten",
          "[rib][intern]") {
  AttributeStore store;
  const wire::PathAttributes five = AttrsBuilder().Med(5).a;
  const wire::PathAttributes six = AttrsBuilder().Med(6).a;
  AttrRef a = store.Intern(five, 11);
  CHECK(a->med == 5);
  // The token is what is looked at: the same entry even for other attributes (a decoder
  // never gives one token to two sets; this shows no compare is made).
  CHECK(store.Intern(six, 11) == a);
  // Token 0 is no promise: compared and encoded as always.
  CHECK(store.Intern(six, 0)->med == 6);
  CHECK(store.Intern(five, 0) == a);
  // Four tokens are remembered (four neighbors sending at once), the oldest goes first.
  AttrRef b = store.Intern(six, 12);
  AttrRef c = store.Intern(AttrsBuilder().Med(7).a, 13);
  AttrRef d = store.Intern(AttrsBuilder().Med(8).a, 14);
  CHECK(store.Intern(five, 11) == a);
  CHECK(store.Intern(six, 12) == b);
  const AttrRef e = store.Intern(AttrsBuilder().Med(9).a, 15);  // takes token 11's place
  CHECK(store.Intern(AttrsBuilder().Med(10).a, 11)->med == 10);  // 11 is looked up afresh (not `a`)
  CHECK(a->med == 5);
  // A set freed is forgotten with its token: a later set under the same token is interned
  // afresh. (Without that, the memo would hand out the freed entry: under ASan, a use after free.)
  {
    const AttrRef x = store.Intern(AttrsBuilder().Med(20).a, 20);
    CHECK(x->med == 20);
  }
  const AttrRef y = store.Intern(AttrsBuilder().Med(21).a, 20);
  CHECK(y->med == 21);
  CHECK(y->refs == 1);
}

TEST_CASE("RIB: a run of decoded UPDATEs with the same attributes shares one interned set", "[rib][intern]") {
  AttributeStore store;
  Rib rib(65000, DecisionConfig{});
  const PeerIndex p1 = rib.AddPeer(Peer("10.0.0.1", 1, 65001));
  wire::UpdateDecoder decoder;
  wire::CodecContext ctx;
  ctx.four_octet_as = true;
  auto update = [&](const char* prefix, uint32_t med) { return EncodedUpdate(prefix, AttrsBuilder().Med(med).a, ctx); };
  uint64_t first_token = 0;
  for (const char* p : {"192.0.2.0/24", "192.0.3.0/24", "192.0.4.0/24"}) {
    const auto m = decoder.Decode(update(p, 5), ctx);
    REQUIRE(m.ok());
    CHECK(m.value()->attrs_token.value != 0);
    if (first_token == 0) first_token = m.value()->attrs_token.value;
    CHECK(m.value()->attrs_token.value == first_token);  // decoded once, one token
    rib.ApplyUpdate(p1, *m.value(), store);
  }
  const auto other = decoder.Decode(update("192.0.5.0/24", 6), ctx);
  REQUIRE(other.ok());
  CHECK(other.value()->attrs_token.value != first_token);
  rib.ApplyUpdate(p1, *other.value(), store);
  CHECK(store.size() == 2);
  CHECK(rib.Find(*net::Prefix::Parse("192.0.4.0/24"))->paths()[0].attrs->med == 5);
  CHECK(rib.Find(*net::Prefix::Parse("192.0.5.0/24"))->paths()[0].attrs->med == 6);
  // Another decoder's token for the same octets is its own; DecodeMessage promises nothing.
  wire::UpdateDecoder second;
  const auto again = second.Decode(update("192.0.6.0/24", 5), ctx);
  REQUIRE(again.ok());
  CHECK(again.value()->attrs_token.value != first_token);
  const auto plain = wire::DecodeMessage(update("192.0.6.0/24", 5), ctx);
  REQUIRE(plain.ok());
  CHECK(std::get<wire::UpdateMessage>(plain.value()).attrs_token.value == 0);
  CHECK(std::get<wire::UpdateMessage>(plain.value()) == *again.value());  // == ignores the token
}

TEST_CASE("RIB: a decoded run whose paths are refused frees its set each time and a copied message promises nothing",
          "[rib][intern]") {
  AttributeStore store;
  Rib rib(65000, DecisionConfig{});
  const PeerIndex p1 = rib.AddPeer(Peer("10.0.0.1", 1, 65001));
  wire::UpdateDecoder decoder;
  wire::CodecContext ctx;
  ctx.four_octet_as = true;
  auto update = [&](const char* prefix, std::vector<uint32_t> path) {
    return EncodedUpdate(prefix, AttrsBuilder().Path(std::move(path)).a, ctx);
  };
  // Our own AS in the path: each announcement is refused, and the set the RIB interned for it
  // is freed at once, while the decoder keeps the attributes and their token.
  uint64_t token = 0;
  for (const char* p : {"192.0.2.0/24", "192.0.3.0/24", "192.0.4.0/24"}) {
    const auto m = decoder.Decode(update(p, {65001, 65000}), ctx);
    REQUIRE(m.ok());
    if (token == 0) token = m.value()->attrs_token.value;
    CHECK(m.value()->attrs_token.value == token);
    rib.ApplyUpdate(p1, *m.value(), store);
    CHECK(store.size() == 0);
    CHECK(rib.Find(*net::Prefix::Parse(p)) == nullptr);
  }
  CHECK(decoder.attribute_decodes() == 1);
  // A copy of the decoder's message starts without a token: whoever holds it may change its
  // attributes, and a changed copy must not be taken for the decoder's set.
  const auto m = decoder.Decode(update("192.0.5.0/24", {65001}), ctx);
  REQUIRE(m.ok());
  REQUIRE(m.value()->attrs_token.value != 0);
  wire::UpdateMessage copy = *m.value();
  CHECK(copy.attrs_token.value == 0);
  rib.ApplyUpdate(p1, *m.value(), store);
  copy.attrs.med = 9;
  rib.ApplyUpdate(p1, copy, store);
  rib.TakeChanges();         // the change set held the replaced path
  CHECK(store.size() == 1);  // the decoder's set went with its path, replaced by the copy's
  CHECK(rib.Find(*net::Prefix::Parse("192.0.5.0/24"))->paths()[0].attrs->med == 9);
  // An UPDATE with NLRI in both places interns two sets, neither by the token.
  wire::UpdateMessage both;
  both.attrs = AttrsBuilder().Path({65001}).a;
  both.attrs.mp_reach = wire::MpReach{net::Family::kIpv6Unicast, *net::IpAddress::Parse("2001:db8::1"), std::nullopt,
                                      {N("2001:db8:1::/48")}};
  both.nlri.push_back(N("192.0.6.0/24"));
  const auto mixed = decoder.Decode(*wire::EncodeMessage(both, ctx), ctx);
  REQUIRE(mixed.ok());
  rib.ApplyUpdate(p1, *mixed.value(), store);
  const Destination* v4 = rib.Find(*net::Prefix::Parse("192.0.6.0/24"));
  const Destination* v6 = rib.Find(*net::Prefix::Parse("2001:db8:1::/48"));
  REQUIRE(v4 != nullptr);
  REQUIRE(v6 != nullptr);
  CHECK_FALSE(v4->paths()[0].attrs == v6->paths()[0].attrs);
  CHECK_FALSE(v4->paths()[0].attrs->attrs.mp_reach.has_value());
  CHECK_FALSE(v6->paths()[0].attrs->attrs.next_hop.has_value());
}

TEST_CASE("RIB: best path, withdraw, and a change set with old and new", "[rib]") {
  AttributeStore store;
  Rib rib(65000, DecisionConfig{});
  const PeerIndex p1 = rib.AddPeer(Peer("10.0.0.1", 1, 65001));
  const PeerIndex p2 = rib.AddPeer(Peer("10.0.0.2", 2, 65002));
  const net::Nlri n[] = {N("192.0.2.0/24")};
  rib.Announce(p1, n, AttrsBuilder().Path({65001, 65010}).In(store));
  rib.Announce(p2, n, AttrsBuilder().Path({65002}).NextHop("10.0.0.2").In(store));
  auto changes = rib.TakeChanges();
  REQUIRE(changes.size() == 1);
  CHECK(changes[0].old_multipath.empty());
  CHECK(Names(rib, changes[0].new_multipath) == std::vector<std::string>{"10.0.0.2"});  // shorter path
  const Destination* d = rib.Find(*net::Prefix::Parse("192.0.2.0/24"));
  REQUIRE(d != nullptr);
  CHECK(d->paths().size() == 2);
  CHECK(rib.LostAt(*d, d->best() == 0 ? 1 : 0) == DecisionStep::kAsPathLength);

  const net::Nlri w[] = {N("192.0.2.0/24")};
  rib.Withdraw(p2, w);
  changes = rib.TakeChanges();
  REQUIRE(changes.size() == 1);
  CHECK(Names(rib, changes[0].old_multipath) == std::vector<std::string>{"10.0.0.2"});
  CHECK(Names(rib, changes[0].new_multipath) == std::vector<std::string>{"10.0.0.1"});
  rib.Withdraw(p1, w);
  changes = rib.TakeChanges();
  REQUIRE(changes.size() == 1);
  CHECK(changes[0].new_multipath.empty());
  CHECK(rib.prefix_count() == 0);
  CHECK(rib.path_count() == 0);
}

TEST_CASE("RIB: changes coalesce, and a change undone is no change", "[rib]") {
  AttributeStore store;
  Rib rib(65000, DecisionConfig{});
  const PeerIndex p1 = rib.AddPeer(Peer("10.0.0.1", 1, 65001));
  const net::Nlri n[] = {N("192.0.2.0/24")};
  const AttrRef a = AttrsBuilder().In(store);
  rib.Announce(p1, n, a);
  rib.TakeChanges();
  rib.Announce(p1, n, AttrsBuilder().Med(7).In(store));
  rib.Announce(p1, n, a);
  CHECK(rib.TakeChanges().empty());
  rib.Announce(p1, n, a);  // identical re-announcement
  CHECK(rib.TakeChanges().empty());
}

TEST_CASE("RIB: eBGP multipath needs the same neighbor AS unless multipath-relax", "[rib][multipath]") {
  AttributeStore store;
  DecisionConfig cfg;
  cfg.maximum_paths_ebgp = 4;
  Rib rib(65000, cfg);
  std::vector<PeerIndex> peers;
  for (int i = 1; i <= 4; ++i) {
    const std::string addr = "10.0.0." + std::to_string(i);
    peers.push_back(rib.AddPeer(Peer(addr.c_str(), static_cast<uint32_t>(i), 65000 + i)));
  }
  const net::Nlri n[] = {N("10.100.0.0/24")};
  for (int i = 0; i < 4; ++i) {
    // Same AS_PATH length, different neighbor ASes (a Clos/BAG fabric).
    const std::string nh = "10.0.0." + std::to_string(i + 1);
    rib.Announce(peers[i], n, AttrsBuilder().Path({65001u + i, 65100}).NextHop(nh.c_str()).In(store));
  }
  auto changes = rib.TakeChanges();
  REQUIRE(changes.size() == 1);
  CHECK(changes[0].new_multipath.size() == 1);  // different neighbor AS: no multipath

  cfg.as_path_multipath_relax = true;
  rib.SetDecisionConfig(cfg);
  changes = rib.TakeChanges();
  REQUIRE(changes.size() == 1);
  CHECK(Names(rib, changes[0].new_multipath) ==
        std::vector<std::string>{"10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4"});  // best first, then by decision

  cfg.maximum_paths_ebgp = 2;
  rib.SetDecisionConfig(cfg);
  changes = rib.TakeChanges();
  REQUIRE(changes.size() == 1);
  CHECK(changes[0].new_multipath.size() == 2);
}

TEST_CASE("RIB: multipath requires equal local-pref, AS path length, origin and MED", "[rib][multipath]") {
  AttributeStore store;
  DecisionConfig cfg;
  cfg.maximum_paths_ebgp = 8;
  Rib rib(65000, cfg);
  const PeerIndex a = rib.AddPeer(Peer("10.0.0.1", 1, 65001));
  const PeerIndex b = rib.AddPeer(Peer("10.0.0.2", 2, 65001));
  const PeerIndex c = rib.AddPeer(Peer("10.0.0.3", 3, 65001, /*ebgp=*/false));
  const net::Nlri n[] = {N("10.100.0.0/24")};
  rib.Announce(a, n, AttrsBuilder().Med(5).In(store));
  rib.Announce(b, n, AttrsBuilder().Med(6).NextHop("10.0.0.2").In(store));
  rib.Announce(c, n, AttrsBuilder().Med(5).NextHop("10.0.0.3").In(store));
  const Destination* d = rib.Find(*net::Prefix::Parse("10.100.0.0/24"));
  REQUIRE(d != nullptr);
  CHECK(__builtin_popcount(d->multipath()) == 1);  // b: higher MED; c: iBGP
  rib.Announce(b, n, AttrsBuilder().Med(5).NextHop("10.0.0.2").In(store));
  CHECK(__builtin_popcount(rib.Find(*net::Prefix::Parse("10.100.0.0/24"))->multipath()) == 2);
}

TEST_CASE("RIB: AS-path loop detection and next-hop validation", "[rib]") {
  AttributeStore store;
  Rib rib(65000, DecisionConfig{});
  const PeerIndex p = rib.AddPeer(Peer("10.0.0.1", 1, 65001));
  const net::Nlri n[] = {N("192.0.2.0/24")};
  rib.Announce(p, n, AttrsBuilder().In(store));
  rib.TakeChanges();
  // Our own AS in the path: the new path is rejected and the old one is withdrawn.
  rib.Announce(p, n, AttrsBuilder().Path({65001, 65000, 65010}).In(store));
  CHECK(rib.stats(p).rejected_as_loop == 1);
  CHECK(rib.prefix_count() == 0);
  CHECK(rib.TakeChanges().size() == 1);
  wire::PathAttributes no_nh = AttrsBuilder().a;
  no_nh.next_hop.reset();
  rib.Announce(p, n, store.Intern(no_nh));
  CHECK(rib.stats(p).rejected_next_hop == 1);
  CHECK(rib.prefix_count() == 0);
}

TEST_CASE("RIB: a session going down withdraws everything it sent", "[rib]") {
  AttributeStore store;
  DecisionConfig cfg;
  cfg.maximum_paths_ebgp = 4;
  cfg.as_path_multipath_relax = true;
  Rib rib(65000, cfg);
  const PeerIndex p1 = rib.AddPeer(Peer("10.0.0.1", 1, 65001));
  const PeerIndex p2 = rib.AddPeer(Peer("10.0.0.2", 2, 65002));
  std::vector<net::Nlri> nlri;
  for (int i = 0; i < 1000; ++i) {
    const uint8_t b[4] = {10, static_cast<uint8_t>(i >> 8), static_cast<uint8_t>(i), 0};
    nlri.push_back(net::Nlri{net::Prefix::Make(net::Afi::kIpv4, b, 24), 0});
  }
  rib.Announce(p1, nlri, AttrsBuilder().In(store));
  rib.Announce(p2, nlri, AttrsBuilder().Path({65002}).NextHop("10.0.0.2").In(store));
  rib.TakeChanges();
  CHECK(rib.path_count() == 2000);
  CHECK(rib.paths_of(p1) == 1000);
  CHECK(store.size() == 2);
  rib.PeerDown(p1);
  CHECK(rib.path_count() == 1000);
  CHECK(rib.paths_of(p1) == 0);
  auto changes = rib.TakeChanges();
  CHECK(changes.size() == 1000);
  CHECK(changes[0].old_multipath.size() == 2);
  CHECK(Names(rib, changes[0].new_multipath) == std::vector<std::string>{"10.0.0.2"});
  CHECK(store.size() == 2);  // the change set still refers to p1's old paths
  changes.clear();
  CHECK(store.size() == 1);  // p1's attribute set is gone with its last reference
}

TEST_CASE("RIB: ADD-PATH keeps several paths from one peer apart", "[rib]") {
  AttributeStore store;
  Rib rib(65000, DecisionConfig{});
  const PeerIndex p = rib.AddPeer(Peer("10.0.0.1", 1, 65001));
  const net::Nlri n[] = {N("192.0.2.0/24", 1), N("192.0.2.0/24", 2)};
  rib.Announce(p, n, AttrsBuilder().In(store));
  CHECK(rib.path_count() == 2);
  const net::Nlri w[] = {N("192.0.2.0/24", 1)};
  rib.Withdraw(p, w);
  CHECK(rib.path_count() == 1);
  CHECK(rib.Find(*net::Prefix::Parse("192.0.2.0/24"))->paths()[0].path_id == 2);
}

TEST_CASE("RIB: a path is small", "[rib][memory]") {
  STATIC_REQUIRE(sizeof(Path) == 16);
  STATIC_REQUIRE(sizeof(Destination) == 24);
}

TEST_CASE("RIB: a destination moves its paths inline and to the heap and back", "[rib][memory]") {
  AttributeStore store;
  Rib rib(65000, DecisionConfig{});
  std::vector<PeerIndex> peers;
  for (int i = 0; i < 9; ++i) {
    const std::string addr = absl::StrCat("10.0.0.", i + 1);
    peers.push_back(rib.AddPeer(Peer(addr.c_str(), static_cast<uint32_t>(i + 1), static_cast<uint32_t>(65001 + i))));
  }
  const net::Nlri n[] = {N("192.0.2.0/24")};
  // Nine paths (inline 1 -> heap 4 -> heap 16), each with a longer AS path than the last,
  // so the first stays best.
  for (int i = 0; i < 9; ++i) {
    std::vector<uint32_t> path(static_cast<size_t>(i + 1), static_cast<uint32_t>(65001 + i));
    const std::string nh = absl::StrCat("10.0.0.", i + 1);
    rib.Announce(peers[i], n, AttrsBuilder().Path(path).NextHop(nh.c_str()).In(store));
  }
  const net::Prefix p = *net::Prefix::Parse("192.0.2.0/24");
  REQUIRE(rib.Find(p)->size() == 9);
  CHECK(rib.peer(rib.Find(p)->paths()[rib.Find(p)->best()].peer).name == "10.0.0.1");
  // Withdraw all but the last, oldest first: the survivor is moved back inline intact.
  for (int i = 0; i < 8; ++i) rib.Withdraw(peers[i], n);
  const Destination* d = rib.Find(p);
  REQUIRE(d != nullptr);
  REQUIRE(d->size() == 1);
  CHECK(d->best() == 0);
  CHECK(d->multipath() == 1);
  CHECK(rib.peer(d->paths()[0].peer).name == "10.0.0.9");
  CHECK(d->paths()[0].attrs->as_path_length == 9);
  rib.Withdraw(peers[8], n);
  CHECK(rib.Find(p) == nullptr);
  rib.TakeChanges();
  CHECK(store.size() == 0);  // every reference released
}

TEST_CASE("RIB: change sets come in prefix order, IPv4 first, each prefix once", "[rib]") {
  AttributeStore store;
  Rib rib(65000, DecisionConfig{});
  const PeerIndex p = rib.AddPeer(Peer("10.0.0.1", 1, 65001));
  const net::Nlri n[] = {N("10.0.2.0/24"), N("2001:db8::/32"), N("10.0.1.0/24"), N("10.0.1.0/25")};
  rib.Announce(p, n, AttrsBuilder().In(store));
  const net::Nlri again[] = {N("10.0.2.0/24")};
  rib.Announce(p, again, AttrsBuilder().Med(7).In(store));  // a second change, same batch
  const auto changes = rib.TakeChanges();
  std::vector<std::string> order;
  for (const auto& c : changes) order.push_back(c.prefix.ToString());
  CHECK(order == std::vector<std::string>{"10.0.1.0/24", "10.0.1.0/25", "10.0.2.0/24", "2001:db8::/32"});
  CHECK(changes[2].old_multipath.empty());  // the set before the first change
  CHECK(changes[2].new_multipath.at(0).attrs->med == 7);
}

TEST_CASE("MembersBatch: the members MembersOf gives, one pooled copy per run of equal sets", "[rib][weights]") {
  AttributeStore store;
  DecisionConfig cfg;
  cfg.maximum_paths_ebgp = 4;
  cfg.as_path_multipath_relax = true;
  Rib rib(65000, cfg);
  const PeerIndex a = rib.AddPeer(Peer("10.0.0.1", 1, 65001));
  const PeerIndex b = rib.AddPeer(Peer("10.0.0.2", 2, 65002));
  std::vector<net::Nlri> both, only_a;
  for (int i = 0; i < 6; ++i) both.push_back(N(absl::StrCat("10.1.", i, ".0/24").c_str()));
  only_a.push_back(N("10.2.0.0/24"));
  rib.Announce(a, both, AttrsBuilder().Path({65001}).In(store));
  rib.Announce(b, both, AttrsBuilder().Path({65002}).NextHop("10.0.0.2").In(store));
  rib.Announce(a, only_a, AttrsBuilder().Path({65001}).In(store));
  MembersBatch batch;
  std::vector<net::Prefix> prefixes;
  for (const auto& n : both) prefixes.push_back(n.prefix);
  prefixes.push_back(only_a[0].prefix);
  prefixes.push_back(*net::Prefix::Parse("10.9.0.0/24"));  // not in the RIB: no members
  for (const auto& p : prefixes) batch.Add(rib, p);
  const auto view = batch.View();
  REQUIRE(view.size() == prefixes.size());
  for (size_t i = 0; i < view.size(); ++i) {
    const PrefixMembers want = MembersOf(rib, prefixes[i]);
    CHECK(view[i].prefix == want.prefix);
    REQUIRE(view[i].members.size() == want.members.size());
    for (size_t k = 0; k < want.members.size(); ++k) CHECK(view[i].members[k].next_hop == want.members[k].next_hop);
  }
  CHECK(view[0].members.size() == 2);
  CHECK(view[5].members.data() == view[0].members.data());  // six prefixes, one copy
  CHECK(view[6].members.size() == 1);
  CHECK(view[7].members.empty());
  batch.Clear();
  CHECK(batch.size() == 0);
}

TEST_CASE("RIB: a session loss in slices ends where a whole flush does", "[rib]") {
  auto build = [](AttributeStore& store, Rib& rib) {
    const PeerIndex p1 = rib.AddPeer(Peer("10.0.0.1", 1, 65001));
    const PeerIndex p2 = rib.AddPeer(Peer("10.0.0.2", 2, 65002));
    std::vector<net::Nlri> v4, v6, only1;
    for (int i = 0; i < 300; ++i) v4.push_back(N(absl::StrCat("10.", i / 256, ".", i % 256, ".0/24").c_str()));
    for (int i = 0; i < 100; ++i) v6.push_back(N(absl::StrCat("2001:db8:", i, "::/48").c_str()));
    for (int i = 0; i < 50; ++i) only1.push_back(N(absl::StrCat("172.16.", i, ".0/24").c_str()));
    for (const auto* set : {&v4, &v6}) {
      rib.Announce(p1, *set, AttrsBuilder().Path({65001}).In(store));
      rib.Announce(p2, *set, AttrsBuilder().Path({65002, 65009}).NextHop("10.0.0.2").In(store));
    }
    rib.Announce(p1, only1, AttrsBuilder().Path({65001}).In(store));
    rib.TakeChanges();
    return p1;
  };
  AttributeStore s1, s2;
  Rib whole(65000, DecisionConfig{}), sliced(65000, DecisionConfig{});
  const PeerIndex a = build(s1, whole);
  const PeerIndex b = build(s2, sliced);
  whole.PeerDown(a);
  const auto want = whole.TakeChanges();
  std::vector<std::string> got;
  int slices = 0;
  std::optional<net::Prefix> next;
  do {
    next = sliced.PeerDownFrom(b, next, 37);
    ++slices;
    for (const auto& c : sliced.TakeChanges()) got.push_back(c.prefix.ToString());
  } while (next);
  CHECK(slices > 10);
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < want.size(); ++i) CHECK(got[i] == want[i].prefix.ToString());
  CHECK(want.size() == 450);  // 400 move to the other peer, 50 are gone
  CHECK(sliced.path_count() == whole.path_count());
  CHECK(sliced.prefix_count() == 400);
  CHECK(sliced.paths_of(b) == 0);
}

TEST_CASE("RIB: a session loss removes every path of the peer when the best arrived past index 32", "[rib]") {
  // Found in review: a decision between two removals moved the best to the front, past the
  // scan, and one of the lost peer's paths stayed.
  AttributeStore store;
  Rib rib(65000, DecisionConfig{});
  const PeerIndex x = rib.AddPeer(Peer("10.0.0.1", 1, 65001));
  const PeerIndex w = rib.AddPeer(Peer("10.0.0.2", 2, 65002));
  const PeerIndex y = rib.AddPeer(Peer("10.0.0.3", 3, 65003));
  const char* pfx = "192.0.2.0/24";
  auto announce = [&](PeerIndex p, uint32_t path_id, size_t as_path_length, const char* nh, uint32_t as) {
    const net::Nlri n[] = {N(pfx, path_id)};
    rib.Announce(p, n, AttrsBuilder().Path(std::vector<uint32_t>(as_path_length, as)).NextHop(nh).In(store));
  };
  announce(x, 1, 10, "10.0.0.1", 65001);  // index 0, the worst
  for (uint32_t i = 1; i <= 9; ++i) announce(w, i, 5, "10.0.0.2", 65002);
  announce(x, 2, 1, "10.0.0.1", 65001);  // index 10, the best
  for (uint32_t i = 10; i <= 33; ++i) announce(w, i, 5, "10.0.0.2", 65002);
  announce(y, 1, 2, "10.0.0.3", 65003);  // index 35, the best once x is gone
  const net::Prefix p = *net::Prefix::Parse(pfx);
  REQUIRE(rib.Find(p)->size() == 36);
  // Arrived at index 10; the RIB keeps paths in decision order, so the best is first.
  REQUIRE(rib.Find(p)->best() == 0);
  REQUIRE(rib.Find(p)->paths()[0].peer == x);
  REQUIRE(rib.Find(p)->paths()[0].path_id == 2);
  rib.PeerDown(x);
  CHECK(rib.paths_of(x) == 0);
  const Destination* d = rib.Find(p);
  REQUIRE(d != nullptr);
  CHECK(d->size() == 34);
  for (const Path& q : d->paths()) CHECK(q.peer != x);
  CHECK(rib.peer(d->paths()[d->best()].peer).name == "10.0.0.3");
}

namespace {
// An UPDATE body (after the header) as bytes, wrapped in a header.
wire::Bytes UpdateBytes(const std::vector<uint8_t>& attrs, const std::vector<uint8_t>& nlri) {
  wire::Bytes m(16, 0xff);
  const size_t len = 19 + 2 + 2 + attrs.size() + nlri.size();
  m.push_back(static_cast<uint8_t>(len >> 8));
  m.push_back(static_cast<uint8_t>(len));
  m.push_back(2);
  m.insert(m.end(), {0, 0, static_cast<uint8_t>(attrs.size() >> 8), static_cast<uint8_t>(attrs.size())});
  m.insert(m.end(), attrs.begin(), attrs.end());
  m.insert(m.end(), nlri.begin(), nlri.end());
  return m;
}
}  // namespace

TEST_CASE("RIB: an UPDATE with NLRI and MP_REACH_NLRI gives each NLRI its own next hop", "[rib][nexthop]") {
  // RFC 4271 §5.1.3 / RFC 4760 §3: NEXT_HOP 10.0.0.2 is the IPv4 NLRI field's next hop;
  // MP_REACH_NLRI's 2001:db8:ffff::2 is the IPv6 NLRI's. Issue 11 defect 2: the IPv4 route
  // was stored with the IPv6 next hop.
  const std::vector<uint8_t> attrs = {
      0x40, 0x01, 0x01, 0x00,                                            // ORIGIN IGP
      0x40, 0x02, 0x06, 0x02, 0x01, 0x00, 0x00, 0xfd, 0xe9,              // AS_PATH 65001
      0x40, 0x03, 0x04, 10, 0, 0, 2,                                     // NEXT_HOP 10.0.0.2
      0x80, 0x0e, 0x1c, 0x00, 0x02, 0x01, 0x10,                          // MP_REACH IPv6 unicast
      0x20, 0x01, 0x0d, 0xb8, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2,  // 2001:db8:ffff::2
      0x00,                                                              // reserved
      0x30, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x01};                         // 2001:db8:1::/48
  const wire::Bytes bytes = UpdateBytes(attrs, {24, 10, 1, 1});         // 10.1.1.0/24
  auto decoded = wire::DecodeMessage(bytes, wire::CodecContext{});
  REQUIRE(decoded.ok());
  const auto& u = std::get<wire::UpdateMessage>(decoded.value());
  REQUIRE(u.action == wire::ErrorAction::kNone);

  AttributeStore store;
  Rib rib(65000, DecisionConfig{});
  const PeerIndex p = rib.AddPeer(Peer("10.0.0.2", 2, 65001));
  rib.ApplyUpdate(p, u, store);
  const Destination* v4 = rib.Find(*net::Prefix::Parse("10.1.1.0/24"));
  const Destination* v6 = rib.Find(*net::Prefix::Parse("2001:db8:1::/48"));
  REQUIRE(v4 != nullptr);
  REQUIRE(v6 != nullptr);
  CHECK(v4->paths()[0].attrs->next_hop.ToString() == "10.0.0.2");
  CHECK(v6->paths()[0].attrs->next_hop.ToString() == "2001:db8:ffff::2");
  CHECK_FALSE(v4->paths()[0].attrs->attrs.mp_reach.has_value());
  CHECK_FALSE(v6->paths()[0].attrs->attrs.next_hop.has_value());
  CHECK(store.size() == 2);

  // Withdrawing both (NLRI field + MP_UNREACH) frees both sets.
  const std::vector<uint8_t> unreach = {0x80, 0x0f, 0x0a, 0x00, 0x02, 0x01,
                                        0x30, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x01};
  wire::Bytes w = UpdateBytes(unreach, {});
  w[19] = 0, w[20] = 4;  // withdrawn routes length 4 ...
  w.insert(w.begin() + 21, {24, 10, 1, 1});  // ... 10.1.1.0/24
  w[16] = static_cast<uint8_t>(w.size() >> 8), w[17] = static_cast<uint8_t>(w.size());
  auto wd = wire::DecodeMessage(w, wire::CodecContext{});
  REQUIRE(wd.ok());
  rib.ApplyUpdate(p, std::get<wire::UpdateMessage>(wd.value()), store);
  CHECK(rib.Find(*net::Prefix::Parse("10.1.1.0/24")) == nullptr);
  CHECK(rib.Find(*net::Prefix::Parse("2001:db8:1::/48")) == nullptr);
  (void)rib.TakeChanges();
  CHECK(store.size() == 0);
}
