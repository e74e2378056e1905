// PrefixMap against std::map under in-order, reverse and random access, both families,
// insertions, lookups and erasures interleaved (the cursor must never answer wrongly).
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <optional>
#include <random>

#include "net/prefix_map.h"

using bagd::net::PrefixMap;
using bagd::net::Afi;
using bagd::net::Prefix;

namespace {

Prefix RandomPrefix(std::mt19937& rng, bool v6) {
  uint8_t b[16] = {};
  for (auto& x : b) x = static_cast<uint8_t>(rng() % 4);  // few distinct values: many collisions
  const uint8_t len = static_cast<uint8_t>(v6 ? 16 + rng() % 113 : 8 + rng() % 25);
  return Prefix::Make(v6 ? Afi::kIpv6 : Afi::kIpv4, b, len);
}

}  // namespace

TEST_CASE("PrefixMap agrees with std::map in any access order", "[net][prefix_map]") {
  std::mt19937 rng(20261130);
  PrefixMap<int> m;
  std::map<Prefix, int> ref;
  std::vector<Prefix> keys;
  for (int i = 0; i < 3000; ++i) keys.push_back(RandomPrefix(rng, rng() % 3 == 0));
  for (int round = 0; round < 6; ++round) {
    // Round 0, 3: ascending; 1, 4: descending; others: shuffled.
    std::vector<Prefix> order = keys;
    if (round % 3 == 0) std::sort(order.begin(), order.end());
    if (round % 3 == 1) std::sort(order.rbegin(), order.rend());
    if (round % 3 == 2) std::shuffle(order.begin(), order.end(), rng);
    for (const Prefix& p : order) {
      const int op = static_cast<int>(rng() % 4);
      if (op == 0) {
        auto [v, inserted] = m.TryEmplace(p);
        auto [it, ref_inserted] = ref.try_emplace(p, 0);
        REQUIRE(inserted == ref_inserted);
        REQUIRE(*v == it->second);
        *v = it->second = static_cast<int>(rng() % 1000) + 1;
      } else if (op == 1) {
        REQUIRE(m.Erase(p) == (ref.erase(p) > 0));
      } else {
        const int* v = m.Find(p);
        auto it = ref.find(p);
        REQUIRE((v != nullptr) == (it != ref.end()));
        if (v) REQUIRE(*v == it->second);
      }
    }
    REQUIRE(m.size() == ref.size());
    // Iteration: IPv4 first, then IPv6, each in net::Prefix order.
    std::vector<std::pair<Prefix, int>> got, want;
    m.ForEach([&](const Prefix& p, int v) { got.emplace_back(p, v); });
    for (const auto& [p, v] : ref) {
      if (p.afi() == Afi::kIpv4) want.emplace_back(p, v);
    }
    for (const auto& [p, v] : ref) {
      if (p.afi() == Afi::kIpv6) want.emplace_back(p, v);
    }
    REQUIRE(got == want);
  }
  // Copies and moves carry the entries, not a cursor into another map.
  PrefixMap<int> copy = m;
  m.clear();
  for (const auto& [p, v] : ref) REQUIRE(*copy.Find(p) == v);
  PrefixMap<int> moved = std::move(copy);
  for (const auto& [p, v] : ref) REQUIRE(*moved.Find(p) == v);
  moved.EraseIf([](const Prefix& p, int) { return p.afi() == Afi::kIpv6; });
  for (const auto& [p, v] : ref) REQUIRE((moved.Find(p) != nullptr) == (p.afi() == Afi::kIpv4));
}

TEST_CASE("PrefixMap's IPv4 key round-trips and keeps net::Prefix order", "[net][prefix_map]") {
  const Prefix a = *Prefix::Parse("10.1.2.0/24"), b = *Prefix::Parse("10.1.2.0/25"), c = *Prefix::Parse("10.1.3.0/24");
  CHECK(PrefixMap<int>::V4Prefix(PrefixMap<int>::V4Key(a)) == a);
  CHECK(PrefixMap<int>::V4Prefix(PrefixMap<int>::V4Key(*Prefix::Parse("255.255.255.255/32"))).ToString() ==
        "255.255.255.255/32");
  CHECK(PrefixMap<int>::V4Key(a) < PrefixMap<int>::V4Key(b));
  CHECK(PrefixMap<int>::V4Key(b) < PrefixMap<int>::V4Key(c));
  CHECK(a < b);
  CHECK(b < c);
}

TEST_CASE("PrefixMap::ForEachAfter resumes a walk after any prefix", "[net][prefix_map]") {
  std::mt19937 rng(20261201);
  PrefixMap<int> m;
  std::vector<Prefix> all;  // in walk order: IPv4 first, then net::Prefix order
  for (int i = 0; i < 2000; ++i) {
    const Prefix p = RandomPrefix(rng, rng() % 3 == 0);
    if (m.TryEmplace(p).second) all.push_back(p);
  }
  std::sort(all.begin(), all.end(), bagd::net::InTableOrder);
  auto walk = [&](const std::optional<Prefix>& after, size_t max) {
    std::vector<Prefix> out;
    m.ForEachAfter(after, [&](const Prefix& p, const int&) {
      if (out.size() == max) return false;
      out.push_back(p);
      return true;
    });
    return out;
  };
  CHECK(walk(std::nullopt, all.size() + 1) == all);
  // Pages of 97 from the last prefix of the previous page: the whole walk, once.
  std::vector<Prefix> paged;
  std::optional<Prefix> cursor;
  while (true) {
    auto page = walk(cursor, 97);
    if (page.empty()) break;
    paged.insert(paged.end(), page.begin(), page.end());
    cursor = page.back();
  }
  CHECK(paged == all);
  // A cursor that is not in the map: the first prefix after it in walk order.
  for (int i = 0; i < 200; ++i) {
    const Prefix probe = RandomPrefix(rng, rng() % 2 == 0);
    auto first = walk(probe, 1);
    auto want = std::upper_bound(all.begin(), all.end(), probe, bagd::net::InTableOrder);
    INFO(probe.ToString());
    if (want == all.end()) {
      CHECK(first.empty());
    } else {
      REQUIRE(first.size() == 1);
      CHECK(first[0] == *want);
    }
  }
  // After the last possible IPv4 prefix: the IPv6 table follows.
  const uint8_t ones[4] = {0xff, 0xff, 0xff, 0xff};
  auto v6 = walk(Prefix::Make(Afi::kIpv4, ones, 32), all.size());
  CHECK(v6 == std::vector<Prefix>(std::find_if(all.begin(), all.end(), [](const Prefix& p) { return p.afi() == Afi::kIpv6; }),
                                   all.end()));
}
