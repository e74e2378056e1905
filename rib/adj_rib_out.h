// What bagd has sent a neighbor, per prefix (its Adj-RIB-Out; the advertiser's, one per
// neighbor), with the prefix's bandwidth re-advertisement state toward that neighbor.
//
// An entry is 8 bytes, so an IPv4 prefix's B-tree slot is 16 (its key is 8): the attribute
// set is a 32-bit number into this table's own list of the sets it holds (a neighbor is sent
// a few thousand distinct sets at most, a full table of prefixes), and the re-advertisement
// state is a 32-bit word. With the set's 8-byte reference and a 64-bit state in the entry
// the slot was 24 bytes; the Adj-RIB-Outs of a full table exported to three neighbors were
// the largest part of bagd's memory after the RIB itself (docs/benchmarks.md).
//
// The state lives in the entry rather than in a table of its own: while a neighbor's table
// comes in, every prefix's cumulative bandwidth changes with each path that joins its
// multipath set, so every prefix sent to every other neighbor would have a second entry. It
// goes with the entry: a prefix withdrawn and announced again starts afresh.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "rib/attribute_store.h"
#include "net/prefix_map.h"

namespace bagd::rib {

class AdjRibOut {
 public:
  struct Entry {
    uint32_t set = 0;              // the attribute set's number here (0: none yet); attrs()
    uint32_t readvertisement = 0;  // BandwidthReadvertisement's state (rib/weights/link_bandwidth_export.h); 0: none
  };

  AdjRibOut() = default;
  AdjRibOut(const AdjRibOut&) = delete;
  AdjRibOut& operator=(const AdjRibOut&) = delete;
  AdjRibOut(AdjRibOut&&) = default;
  AdjRibOut& operator=(AdjRibOut&&) = default;

  // The attributes `e` was sent with (a null AttrRef for an entry not given any yet).
  const AttrRef& attrs(const Entry& e) const { return sets_[e.set].ref; }
  // `e` (of this table) is sent with `ref` now (a null one: none).
  void SetAttrs(Entry& e, const AttrRef& ref);

  Entry* Find(const net::Prefix& p) { return map_.Find(p); }
  const Entry* Find(const net::Prefix& p) const { return map_.Find(p); }
  bool contains(const net::Prefix& p) const { return map_.contains(p); }
  // The entry of `p`, a new one with no attributes if it was not there; second: it was
  // inserted. The pointer is valid until the next insertion or erasure.
  std::pair<Entry*, bool> TryEmplace(const net::Prefix& p) { return map_.TryEmplace(p); }
  bool Erase(const net::Prefix& p);

  size_t size() const { return map_.size(); }
  bool empty() const { return map_.empty(); }
  void clear();

  // f(const net::Prefix&, Entry&) / (const net::Prefix&, const Entry&), as PrefixMap's.
  template <typename F>
  void ForEach(F&& f) {
    map_.ForEach(f);
  }
  template <typename F>
  void ForEach(F&& f) const {
    map_.ForEach(f);
  }
  template <typename F>
  void ForEachIn(net::Family family, F&& f) const {
    map_.ForEachIn(family, f);
  }
  template <typename F>
  void ForEachAfter(const std::optional<net::Prefix>& after, F&& f) const {
    map_.ForEachAfter(after, f);
  }

  // The distinct attribute sets the entries hold (tests, memory).
  size_t sets() const { return index_.size(); }
  // Estimated heap bytes: the prefixes' B-tree and the list of sets.
  size_t memory_bytes() const;

 private:
  struct Set {
    AttrRef ref;
    uint32_t users = 0;  // entries sent with it
  };
  void Release(uint32_t set);

  std::vector<Set> sets_ = std::vector<Set>(1);  // [0]: none
  std::vector<uint32_t> free_;                   // numbers of sets no entry holds
  absl::flat_hash_map<const InternedAttributes*, uint32_t> index_;
  net::PrefixMap<Entry> map_;
};

}  // namespace bagd::rib
