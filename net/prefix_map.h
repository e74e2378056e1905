// An ordered map from prefixes to values, kept small for full tables: IPv4 prefixes are
// keyed by one 64-bit word (address and length), IPv6 by the 18-byte Prefix, each family in
// a B-tree.
//
// Why a B-tree and not a hash map: a flat hash map of a million entries sits at a load of
// 0.48 right after it doubles (2^21 slots for 1M entries) and holds the old and the new slot
// arrays at once while it rehashes, so the peak is ~3x the data. A B-tree grows one 256-byte
// node at a time, its nodes are nearly full when prefixes arrive in order (as a peer's table
// dump does) and about 70 % full in random order, and it iterates in prefix order, which the
// change sets and `bagctl show routes` want anyway.
#pragma once

#include <bit>
#include <cstdint>
#include <iterator>
#include <optional>
#include <cstring>
#include <utility>

#include "absl/container/btree_map.h"
#include "net/ip_prefix.h"

namespace bagd::net {

// The order of a PrefixMap walk and of the RIB's change sets: IPv4 first, then by
// Prefix order (address, then length).
inline bool InTableOrder(const Prefix& a, const Prefix& b) {
  const bool a4 = a.afi() == Afi::kIpv4, b4 = b.afi() == Afi::kIpv4;
  if (a4 != b4) return a4;
  return a < b;
}

// Lookups and insertions usually come in ascending prefix order (a peer's UPDATE, a sorted
// change batch, a table walk), so the map keeps a cursor per family at the last position it
// touched and tries a few steps forward from it before searching from the root: in-order
// access is amortized O(1) instead of a descent through every level. Any order stays correct.
// The cursor makes even the const lookups stateful: like the RIB, not thread-safe.
template <typename V>
class PrefixMap {
 public:
  V* Find(const Prefix& p) {
    if (p.afi() == Afi::kIpv4) return v4_.Find(V4Key(p));
    return v6_.Find(p);
  }
  const V* Find(const Prefix& p) const { return const_cast<PrefixMap*>(this)->Find(p); }
  bool contains(const Prefix& p) const { return Find(p) != nullptr; }

  // The value of `p`, value-initialized if it was not there; second: it was inserted. The
  // pointer is valid until the next insertion or erasure.
  std::pair<V*, bool> TryEmplace(const Prefix& p) {
    if (p.afi() == Afi::kIpv4) return v4_.TryEmplace(V4Key(p));
    return v6_.TryEmplace(p);
  }
  bool Erase(const Prefix& p) { return p.afi() == Afi::kIpv4 ? v4_.Erase(V4Key(p)) : v6_.Erase(p); }

  size_t size() const { return v4_.map.size() + v6_.map.size(); }
  bool empty() const { return size() == 0; }
  void clear() {
    v4_.Clear();
    v6_.Clear();
  }

  // f(const Prefix&, V&) for every entry: IPv4 first, each family in prefix order.
  template <typename F>
  void ForEach(F&& f) {
    for (auto& [k, v] : v4_.map) f(V4Prefix(k), v);
    for (auto& [k, v] : v6_.map) f(k, v);
  }
  template <typename F>
  void ForEach(F&& f) const {
    for (const auto& [k, v] : v4_.map) f(V4Prefix(k), v);
    for (const auto& [k, v] : v6_.map) f(k, v);
  }
  // f(const Prefix&, const V&) for the entries of one family, in prefix order.
  template <typename F>
  void ForEachIn(Family family, F&& f) const {
    if (family == Family::kIpv4Unicast) {
      for (const auto& [k, v] : v4_.map) f(V4Prefix(k), v);
    } else {
      for (const auto& [k, v] : v6_.map) f(k, v);
    }
  }
  // f(const Prefix&, const V&) for the entries after `after` in walk order (all when
  // nullopt; `after` need not be in the map), until f returns false. A resumable walk: the
  // caller may change the map between calls and go on after the last prefix it saw.
  template <typename F>
  void ForEachAfter(const std::optional<Prefix>& after, F&& f) const {
    if (!after || after->afi() == Afi::kIpv4) {
      for (auto it = after ? v4_.map.upper_bound(V4Key(*after)) : v4_.map.begin(); it != v4_.map.end(); ++it) {
        if (!f(V4Prefix(it->first), it->second)) return;
      }
    }
    for (auto it = after && after->afi() != Afi::kIpv4 ? v6_.map.upper_bound(*after) : v6_.map.begin();
         it != v6_.map.end(); ++it) {
      if (!f(it->first, it->second)) return;
    }
  }
  // Erases the entries for which pred(const Prefix&, V&) returns true. pred must not
  // look up or change this map (the walk holds its own iterators).
  template <typename F>
  void EraseIf(F&& pred) {
    v4_.valid = v6_.valid = false;
    absl::erase_if(v4_.map, [&](auto& e) { return pred(V4Prefix(e.first), e.second); });
    absl::erase_if(v6_.map, [&](auto& e) { return pred(e.first, e.second); });
  }

  // As EraseIf, for at most `limit` entries from `from` on (nullopt: the beginning), in walk
  // order. Returns where to go on, nullopt when the walk reached the end.
  template <typename F>
  std::optional<Prefix> EraseIfFrom(const std::optional<Prefix>& from, size_t limit, F&& pred) {
    v4_.valid = v6_.valid = false;
    size_t seen = 0;
    if (!from || from->afi() == Afi::kIpv4) {
      auto it = from ? v4_.map.lower_bound(V4Key(*from)) : v4_.map.begin();
      for (; it != v4_.map.end(); ++seen) {
        if (seen == limit) return V4Prefix(it->first);
        it = pred(V4Prefix(it->first), it->second) ? v4_.map.erase(it) : std::next(it);
      }
    }
    auto it = from && from->afi() != Afi::kIpv4 ? v6_.map.lower_bound(*from) : v6_.map.begin();
    for (; it != v6_.map.end(); ++seen) {
      if (seen == limit) return it->first;
      it = pred(it->first, it->second) ? v6_.map.erase(it) : std::next(it);
    }
    return std::nullopt;
  }

  // Estimated heap bytes: B-tree nodes are 256-byte targets, taken as 85 % full on average
  // (full for in-order arrival, ~70 % for random).
  size_t memory_bytes() const {
    return static_cast<size_t>((v4_.map.size() * sizeof(std::pair<uint64_t, V>) +
                                v6_.map.size() * sizeof(std::pair<Prefix, V>)) / 0.85);
  }

  // IPv4: the address as a number, then the length: the same order as Prefix's.
  static uint64_t V4Key(const Prefix& p) {
    uint32_t a;
    std::memcpy(&a, p.bytes(), 4);
    if constexpr (std::endian::native == std::endian::little) a = __builtin_bswap32(a);
    return uint64_t{a} << 8 | p.length();
  }
  static Prefix V4Prefix(uint64_t k) {
    uint32_t a = static_cast<uint32_t>(k >> 8);
    if constexpr (std::endian::native == std::endian::little) a = __builtin_bswap32(a);
    uint8_t b[4];
    std::memcpy(b, &a, 4);
    return Prefix::Make(Afi::kIpv4, b, static_cast<uint8_t>(k & 0xff));
  }

 private:
  template <typename K>
  struct Table {
    using Map = absl::btree_map<K, V>;
    Map map;
    typename Map::iterator cursor;
    bool valid = false;  // cursor is an iterator of `map` as it is now

    Table() = default;
    Table(const Table& o) : map(o.map) {}  // a cursor never crosses to another map
    Table(Table&& o) noexcept : map(std::move(o.map)) { o.valid = false; }
    Table& operator=(const Table& o) {
      map = o.map;
      valid = false;
      return *this;
    }
    Table& operator=(Table&& o) noexcept {
      map = std::move(o.map);
      valid = o.valid = false;
      return *this;
    }

    // The first entry not less than k.
    typename Map::iterator LowerBound(const K& k) {
      if (valid) {
        auto it = cursor;
        if (it == map.end() || !(it->first < k)) {
          // At or past k: right if what comes before is less than k.
          if (it == map.begin() || std::prev(it)->first < k) return it;
        } else {
          // Before k (the in-order case: the previous key): a few steps forward.
          ++it;
          for (int i = 0; i < 4 && it != map.end() && it->first < k; ++i) ++it;
          if (it == map.end() || !(it->first < k)) return it;
        }
      }
      return map.lower_bound(k);
    }
    V* Find(const K& k) {
      cursor = LowerBound(k);
      valid = true;
      return cursor != map.end() && !(k < cursor->first) ? &cursor->second : nullptr;
    }
    std::pair<V*, bool> TryEmplace(const K& k) {
      auto it = LowerBound(k);
      const bool found = it != map.end() && !(k < it->first);
      if (!found) it = map.try_emplace(it, k);  // the hint is exact: no search
      cursor = it;
      valid = true;
      return {&it->second, !found};
    }
    bool Erase(const K& k) {
      auto it = LowerBound(k);
      if (it == map.end() || k < it->first) {
        cursor = it;
        valid = true;
        return false;
      }
      cursor = map.erase(it);
      valid = true;
      return true;
    }
    void Clear() {
      map.clear();
      valid = false;
    }
  };
  Table<uint64_t> v4_;
  Table<Prefix> v6_;
};

}  // namespace bagd::net
