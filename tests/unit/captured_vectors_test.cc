// Vectors captured from real FRR 8.4 and GoBGP 3.10 sessions (tests/data/wire/README.md).
#include <catch2/catch.hpp>

#include "tests/unit/test_support.h"

using namespace bagd::wire;
using namespace bagd::net;
using bagd::test::LoadWireVectors;
using bagd::test::MustDecode;
using bagd::test::MustEncode;

TEST_CASE("Every captured message decodes cleanly and round-trips", "[wire][captured]") {
  const auto vectors = LoadWireVectors();
  REQUIRE(vectors.size() >= 4);
  for (const auto& v : vectors) {
    DYNAMIC_SECTION(v.name) {
      REQUIRE_FALSE(v.messages.empty());
      for (size_t i = 0; i < v.messages.size(); ++i) {
        INFO("message " << i << ": " << bagd::test::ToHex(v.messages[i]));
        const Message m = MustDecode(v.messages[i], v.ctx);
        if (const auto* u = std::get_if<UpdateMessage>(&m)) {
          CHECK(u->action == ErrorAction::kNone);
          CHECK(u->errors.empty());
        }
        // decode(encode(decode(x))) == decode(x); the encoder's own output is a fixed point.
        const Bytes again = MustEncode(m, v.ctx);
        const Message m2 = MustDecode(again, v.ctx);
        CHECK(m2 == m);
        CHECK(MustEncode(m2, v.ctx) == again);
      }
    }
  }
}

TEST_CASE("The captured vectors cover what interop needs", "[wire][captured]") {
  bool lb_transitive = false, lb_non_transitive = false, large = false, link_local = false, as4_path = false,
       as4_open = false, ipv6 = false, eor4 = false, eor6 = false, frr = false, gobgp = false;
  for (const auto& v : LoadWireVectors()) {
    frr |= v.name.rfind("frr", 0) == 0;
    gobgp |= v.name.rfind("gobgp", 0) == 0;
    for (const auto& bytes : v.messages) {
      const Message m = MustDecode(bytes, v.ctx);
      if (const auto* o = std::get_if<OpenMessage>(&m)) as4_open |= o->AsNumber() > 65535;
      const auto* u = std::get_if<UpdateMessage>(&m);
      if (!u) continue;
      for (const auto& ec : u->attrs.extended_communities) {
        if (auto lb = LinkBandwidth::FromExtendedCommunity(ec)) {
          CHECK(lb->valid());
          (lb->transitive() ? lb_transitive : lb_non_transitive) = true;
        }
      }
      large |= !u->attrs.large_communities.empty();
      if (u->attrs.mp_reach && u->attrs.mp_reach->family == Family::kIpv6Unicast) {
        ipv6 = true;
        link_local |= u->attrs.mp_reach->link_local.has_value() && u->attrs.mp_reach->link_local->IsIpv6LinkLocal();
      }
      if (u->attrs.as_path) {
        for (const auto& s : u->attrs.as_path->segments)
          for (uint32_t asn : s.asns) as4_path |= asn > 65535;
      }
      if (auto eor = u->EndOfRib()) (*eor == Family::kIpv4Unicast ? eor4 : eor6) = true;
    }
  }
  CHECK(frr);
  CHECK(gobgp);
  CHECK(lb_transitive);
  CHECK(lb_non_transitive);
  CHECK(large);
  CHECK(ipv6);
  CHECK(link_local);
  CHECK(as4_path);
  CHECK(as4_open);
  CHECK(eor4);
  CHECK(eor6);
}
