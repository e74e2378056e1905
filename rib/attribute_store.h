// Interned path attributes (design.md rule 10): one shared, reference-counted, immutable
// copy per distinct attribute set, as BIRD and FRR do. A full table from several peers has
// a few thousand distinct sets for a million paths, so a path holds only an 8-byte AttrRef.
//
// The key is the canonical encoding (wire/ encoder, 4-octet AS), so two sets are the
// same exactly when they would go on the wire the same way. Not thread-safe: the RIB owns
// its store on its own thread.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>

#include "absl/container/flat_hash_set.h"
#include "wire/path_attributes.h"

namespace bagd::rib {

class AttributeStore;

// What the decision process reads often, computed once per attribute set.
struct InternedAttributes {
  wire::PathAttributes attrs;  // mp_reach keeps its next hop, never NLRI; no mp_unreach
  wire::Bytes key;             // canonical encoding
  size_t hash = 0;
  uint32_t refs = 0;
  AttributeStore* store = nullptr;
  // Derived.
  uint32_t local_pref = 100;
  uint32_t med = 0;
  bool has_med = false;
  uint8_t origin = 2;
  uint32_t as_path_length = 0;
  uint32_t neighbor_as = 0;  // first AS of the path (RFC 4271 §9.1.2.2 c), 0 if none
  uint32_t cluster_list_length = 0;
  std::optional<uint32_t> originator_id;
  net::IpAddress next_hop;
  std::optional<net::IpAddress> link_local_next_hop;
  wire::LinkBandwidthSelection link_bandwidth;
};

// A counted reference; copying bumps the count, the last reference frees the set.
class AttrRef {
 public:
  AttrRef() = default;
  AttrRef(const AttrRef& o) : p_(o.p_) { Acquire(); }
  AttrRef(AttrRef&& o) noexcept : p_(o.p_) { o.p_ = nullptr; }
  AttrRef& operator=(AttrRef o) noexcept {
    std::swap(p_, o.p_);
    return *this;
  }
  ~AttrRef() { Release(); }

  const InternedAttributes* operator->() const { return p_; }
  const InternedAttributes& operator*() const { return *p_; }
  const InternedAttributes* get() const { return p_; }
  explicit operator bool() const { return p_ != nullptr; }
  friend bool operator==(const AttrRef& a, const AttrRef& b) { return a.p_ == b.p_; }

 private:
  friend class AttributeStore;
  explicit AttrRef(InternedAttributes* p) : p_(p) { Acquire(); }
  void Acquire() {
    if (p_) ++p_->refs;
  }
  // Inline: every copy of a reference ends here (the advertiser's loops make tens of millions).
  void Release() {
    if (p_ && --p_->refs == 0) Free(p_);
    p_ = nullptr;
  }
  static void Free(InternedAttributes* p);  // the last reference went
  InternedAttributes* p_ = nullptr;
};

class AttributeStore {
 public:
  AttributeStore() = default;
  AttributeStore(const AttributeStore&) = delete;
  AttributeStore& operator=(const AttributeStore&) = delete;
  ~AttributeStore();

  // The shared copy of `attrs` (its NLRI and MP_UNREACH are dropped; the next hop stays).
  // The set interned last is compared first, before any encoding: consecutive UPDATEs of a
  // neighbor usually carry the same attributes (one prefix per UPDATE is common).
  AttrRef Intern(const wire::PathAttributes& attrs);
  AttrRef Intern(wire::PathAttributes&& attrs);
  // The same for attributes an UpdateDecoder stamped with `token` (wire::AttributesToken; 0:
  // none): a token among the last few interned gives its set at once, without comparing the
  // attributes (a neighbor sending one prefix per UPDATE, or a few neighbors at a time).
  AttrRef Intern(const wire::PathAttributes& attrs, uint64_t token);

  size_t size() const { return set_.size(); }
  size_t memory_bytes() const;  // approximate, for bagctl show rib-summary

 private:
  friend class AttrRef;
  void Erase(InternedAttributes* p);

  // A canonical encoding looked up without building an entry first.
  struct KeyView {
    const wire::Bytes* key;
    size_t hash;
  };
  struct Hash {
    using is_transparent = void;
    size_t operator()(const InternedAttributes* p) const { return p->hash; }
    size_t operator()(const KeyView& k) const { return k.hash; }
  };
  struct Eq {
    using is_transparent = void;
    bool operator()(const InternedAttributes* a, const InternedAttributes* b) const { return a->key == b->key; }
    bool operator()(const InternedAttributes* a, const KeyView& b) const { return a->key == *b.key; }
    bool operator()(const KeyView& a, const InternedAttributes* b) const { return *a.key == b->key; }
  };
  absl::flat_hash_set<InternedAttributes*, Hash, Eq> set_;
  size_t bytes_ = 0;
  const InternedAttributes* last_ = nullptr;  // interned last; cleared when it is freed
  struct Recent {
    uint64_t token = 0;  // 0: none
    InternedAttributes* entry = nullptr;
  };
  std::array<Recent, 4> recent_{};  // by decoder token; an entry's slot is cleared when it is freed
  size_t recent_next_ = 0;          // the slot the next token takes
  wire::Bytes scratch_;                       // the encoding of a set being looked up
};

}  // namespace bagd::rib
