// A neighbor's routes as received, before import policy (soft_reconfiguration_inbound):
// what `bagctl show routes --neighbor ADDR --received` shows and what an import policy
// change is applied from when the neighbor cannot be asked to re-send (no route refresh).
// One interned reference per received path; nothing is stored for a neighbor without it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "net/ip_prefix.h"
#include "rib/attribute_store.h"

namespace bagd::rib {

class AdjRibIn {
 public:
  void Set(const net::Nlri& nlri, const AttrRef& attrs) { paths_[Key{nlri.prefix, nlri.path_id}] = attrs; }
  void Erase(const net::Nlri& nlri) { paths_.erase(Key{nlri.prefix, nlri.path_id}); }
  void clear() { paths_.clear(); }
  size_t size() const { return paths_.size(); }
  // Bytes held beyond the attribute sets themselves (shared with the RIB): the table's slots.
  size_t bytes() const { return paths_.capacity() * (sizeof(Key) + sizeof(AttrRef) + 1); }
  const AttrRef* Find(const net::Nlri& nlri) const {
    auto it = paths_.find(Key{nlri.prefix, nlri.path_id});
    return it == paths_.end() ? nullptr : &it->second;
  }
  // f(const net::Nlri&, const AttrRef&) for every path of `family`, in no particular order.
  template <typename F>
  void ForEachIn(net::Family family, F&& f) const {
    for (const auto& [k, v] : paths_) {
      if (k.prefix.family() == family) f(net::Nlri{k.prefix, k.path_id}, v);
    }
  }

 private:
  struct Key {
    net::Prefix prefix;
    uint32_t path_id;
    friend bool operator==(const Key&, const Key&) = default;
    template <typename H>
    friend H AbslHashValue(H h, const Key& k) {
      return H::combine(std::move(h), k.prefix, k.path_id);
    }
  };
  absl::flat_hash_map<Key, AttrRef> paths_;
};

}  // namespace bagd::rib
