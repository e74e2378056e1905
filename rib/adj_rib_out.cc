#include "rib/adj_rib_out.h"

namespace bagd::rib {

void AdjRibOut::SetAttrs(Entry& e, const AttrRef& ref) {
  if (sets_[e.set].ref == ref) return;
  uint32_t set = 0;
  if (ref) {
    auto [it, fresh] = index_.try_emplace(ref.get(), 0);
    if (fresh) {
      if (free_.empty()) {
        it->second = static_cast<uint32_t>(sets_.size());
        sets_.push_back(Set{ref, 0});
      } else {
        it->second = free_.back();
        free_.pop_back();
        sets_[it->second].ref = ref;
      }
    }
    set = it->second;
    ++sets_[set].users;
  }
  Release(e.set);
  e.set = set;
}

void AdjRibOut::Release(uint32_t set) {
  if (set == 0 || --sets_[set].users > 0) return;
  index_.erase(sets_[set].ref.get());
  sets_[set].ref = AttrRef();
  free_.push_back(set);
}

bool AdjRibOut::Erase(const net::Prefix& p) {
  const Entry* e = map_.Find(p);
  if (e == nullptr) return false;
  Release(e->set);
  return map_.Erase(p);
}

void AdjRibOut::clear() {
  map_.clear();
  index_.clear();
  free_.clear();
  sets_.resize(1);
}

size_t AdjRibOut::memory_bytes() const {
  return map_.memory_bytes() + sets_.capacity() * sizeof(Set) + free_.capacity() * sizeof(uint32_t) +
         index_.capacity() * (sizeof(std::pair<const InternedAttributes*, uint32_t>) + 1);
}

}  // namespace bagd::rib
