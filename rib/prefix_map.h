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

#include <cstdint>
#include <cstring>
#include <utility>

#include "absl/container/btree_map.h"
#include "bgpd/wire/ip_prefix.h"

namespace bagd::rib {

template <typename V>
class PrefixMap {
 public:
  V* Find(const wire::Prefix& p) {
    if (p.afi() == wire::Afi::kIpv4) {
      auto it = v4_.find(V4Key(p));
      return it == v4_.end() ? nullptr : &it->second;
    }
    auto it = v6_.find(p);
    return it == v6_.end() ? nullptr : &it->second;
  }
  const V* Find(const wire::Prefix& p) const { return const_cast<PrefixMap*>(this)->Find(p); }
  bool contains(const wire::Prefix& p) const { return Find(p) != nullptr; }

  // The value of `p`, value-initialized if it was not there; second: it was inserted. The
  // pointer is valid until the next insertion or erasure.
  std::pair<V*, bool> TryEmplace(const wire::Prefix& p) {
    if (p.afi() == wire::Afi::kIpv4) {
      auto [it, inserted] = v4_.try_emplace(V4Key(p));
      return {&it->second, inserted};
    }
    auto [it, inserted] = v6_.try_emplace(p);
    return {&it->second, inserted};
  }
  bool Erase(const wire::Prefix& p) { return p.afi() == wire::Afi::kIpv4 ? v4_.erase(V4Key(p)) > 0 : v6_.erase(p) > 0; }

  size_t size() const { return v4_.size() + v6_.size(); }
  bool empty() const { return v4_.empty() && v6_.empty(); }
  void clear() {
    v4_.clear();
    v6_.clear();
  }

  // f(const wire::Prefix&, V&) for every entry: IPv4 first, each family in prefix order.
  template <typename F>
  void ForEach(F&& f) {
    for (auto& [k, v] : v4_) f(V4Prefix(k), v);
    for (auto& [k, v] : v6_) f(k, v);
  }
  template <typename F>
  void ForEach(F&& f) const {
    for (const auto& [k, v] : v4_) f(V4Prefix(k), v);
    for (const auto& [k, v] : v6_) f(k, v);
  }
  // Erases the entries for which pred(const wire::Prefix&, V&) returns true.
  template <typename F>
  void EraseIf(F&& pred) {
    absl::erase_if(v4_, [&](auto& e) { return pred(V4Prefix(e.first), e.second); });
    absl::erase_if(v6_, [&](auto& e) { return pred(e.first, e.second); });
  }

  // Estimated heap bytes: B-tree nodes are 256-byte targets, taken as 85 % full on average
  // (full for in-order arrival, ~70 % for random).
  size_t memory_bytes() const {
    return static_cast<size_t>((v4_.size() * sizeof(std::pair<uint64_t, V>) +
                                v6_.size() * sizeof(std::pair<wire::Prefix, V>)) / 0.85);
  }

  static uint64_t V4Key(const wire::Prefix& p) {
    uint32_t a;
    std::memcpy(&a, p.bytes(), 4);
    return uint64_t{__builtin_bswap32(a)} << 8 | p.length();
  }
  static wire::Prefix V4Prefix(uint64_t k) {
    const uint32_t a = __builtin_bswap32(static_cast<uint32_t>(k >> 8));
    uint8_t b[4];
    std::memcpy(b, &a, 4);
    return wire::Prefix::Make(wire::Afi::kIpv4, b, static_cast<uint8_t>(k & 0xff));
  }

 private:
  absl::btree_map<uint64_t, V> v4_;
  absl::btree_map<wire::Prefix, V> v6_;
};

}  // namespace bagd::rib
