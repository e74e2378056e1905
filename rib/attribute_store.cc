#include "rib/attribute_store.h"

#include "absl/hash/hash.h"

namespace bagd::rib {

void AttrRef::Free(InternedAttributes* p) { p->store->Erase(p); }

AttributeStore::~AttributeStore() {
  // Paths must be gone first; whatever is left is a leak in the RIB, not here.
  for (InternedAttributes* p : set_) delete p;
}

AttrRef AttributeStore::Intern(const wire::PathAttributes& attrs) {
  // Already in the stored form (no NLRI, no MP_UNREACH) and the same as the last set: no copy.
  const bool stored_form = (!attrs.mp_reach || attrs.mp_reach->nlri.empty()) && !attrs.mp_unreach;
  if (last_ != nullptr && stored_form && attrs == last_->attrs) return AttrRef(const_cast<InternedAttributes*>(last_));
  return Intern(wire::PathAttributes(attrs));
}

AttrRef AttributeStore::Intern(wire::PathAttributes&& attrs) {
  if (attrs.mp_reach) attrs.mp_reach->nlri.clear();
  attrs.mp_unreach.reset();
  if (last_ != nullptr && attrs == last_->attrs) return AttrRef(const_cast<InternedAttributes*>(last_));
  wire::CodecContext ctx;
  ctx.four_octet_as = true;
  scratch_.clear();
  wire::EncodePathAttributes(attrs, ctx, scratch_);
  const size_t hash = absl::HashOf(std::string_view(reinterpret_cast<const char*>(scratch_.data()), scratch_.size()));
  if (auto it = set_.find(KeyView{&scratch_, hash}); it != set_.end()) {
    last_ = *it;
    return AttrRef(*it);
  }
  auto entry = std::make_unique<InternedAttributes>();
  entry->key = scratch_;
  entry->hash = hash;

  InternedAttributes& e = *entry;
  e.store = this;
  e.attrs = std::move(attrs);
  const auto& a = e.attrs;
  e.local_pref = a.local_pref.value_or(100);
  e.has_med = a.med.has_value();
  e.med = a.med.value_or(0);
  e.origin = static_cast<uint8_t>(a.origin.value_or(wire::Origin::kIncomplete));
  if (a.as_path) {
    e.as_path_length = static_cast<uint32_t>(a.as_path->Length());
    e.neighbor_as = a.as_path->FirstAs();
  }
  e.cluster_list_length = static_cast<uint32_t>(a.cluster_list.size());
  e.originator_id = a.originator_id;
  if (a.mp_reach) {
    e.next_hop = a.mp_reach->next_hop;
    e.link_local_next_hop = a.mp_reach->link_local;
  } else if (a.next_hop) {
    e.next_hop = *a.next_hop;
  }
  e.link_bandwidth = a.SelectedLinkBandwidth();
  bytes_ += sizeof(InternedAttributes) + e.key.capacity() * 2;
  InternedAttributes* raw = entry.release();
  set_.insert(raw);
  last_ = raw;
  return AttrRef(raw);
}

AttrRef AttributeStore::Intern(const wire::PathAttributes& attrs, uint64_t token) {
  if (token != 0) {
    for (const Recent& r : recent_) {
      if (r.token == token) return AttrRef(r.entry);
    }
  }
  AttrRef ref = Intern(attrs);
  if (token != 0) {
    recent_[recent_next_] = Recent{token, ref.p_};
    recent_next_ = (recent_next_ + 1) % recent_.size();
  }
  return ref;
}

void AttributeStore::Erase(InternedAttributes* p) {
  if (p == last_) last_ = nullptr;
  for (Recent& r : recent_) {
    if (r.entry == p) r = Recent{};
  }
  bytes_ -= sizeof(InternedAttributes) + p->key.capacity() * 2;
  set_.erase(p);
  delete p;
}

size_t AttributeStore::memory_bytes() const { return bytes_ + set_.capacity() * (sizeof(void*) + 1); }

}  // namespace bagd::rib
