#include "rib/rib.h"

#include <algorithm>
#include <new>

namespace bagd::rib {
namespace {
constexpr uint8_t kZero16[16] = {};

Path* AllocatePaths(size_t n) { return static_cast<Path*>(::operator new(n * sizeof(Path))); }
}  // namespace

// --- Destination -------------------------------------------------------------------------

bool Destination::PushBack(Path p) {
  if (size_ == UINT16_MAX) return false;  // 65535 paths for one prefix: the rest are not kept
  if (!heap_shift_ && size_ == 0) {
    new (&one_) Path(std::move(p));
    size_ = 1;
    return true;
  }
  const size_t capacity = heap_shift_ ? size_t{1} << heap_shift_ : 1;
  if (size_ == capacity) {
    const uint8_t shift = static_cast<uint8_t>(heap_shift_ ? heap_shift_ + 1 : 2);  // 1 -> 4 -> 8 ...
    Path* grown = AllocatePaths(size_t{1} << shift);
    Path* old = data();
    for (size_t i = 0; i < size_; ++i) {
      new (&grown[i]) Path(std::move(old[i]));
      old[i].~Path();
    }
    if (heap_shift_) ::operator delete(many_);
    many_ = grown;
    heap_shift_ = shift;
  }
  new (&data()[size_]) Path(std::move(p));
  ++size_;
  return true;
}

bool Destination::InsertAt(size_t i, Path p) {
  if (!PushBack(std::move(p))) return false;
  Move(size_ - 1, i);
  return true;
}

void Destination::Move(size_t from, size_t to) {
  Path* d = data();
  if (from > to) {
    std::rotate(d + to, d + from, d + from + 1);
  } else if (from < to) {
    std::rotate(d + from, d + from + 1, d + to + 1);
  }
}

void Destination::Erase(size_t i) {
  Path* d = data();
  for (size_t k = i; k + 1 < size_; ++k) d[k] = std::move(d[k + 1]);
  d[size_ - 1].~Path();
  --size_;
  if (heap_shift_ && size_ <= 1) {  // back inline
    Path* heap = many_;
    if (size_ == 1) {
      new (&one_) Path(std::move(heap[0]));
      heap[0].~Path();
    }
    ::operator delete(heap);
    heap_shift_ = 0;
  }
}

void Destination::Clear() {
  Path* d = data();
  for (size_t i = 0; i < size_; ++i) d[i].~Path();
  if (heap_shift_) ::operator delete(many_);
  size_ = 0;
  heap_shift_ = 0;
  flags_ = 0;
  multipath_ = 0;
}

void Destination::Take(Destination& o) noexcept {
  if (o.heap_shift_) {
    many_ = o.many_;
  } else if (o.size_ == 1) {
    new (&one_) Path(std::move(o.one_));
    o.one_.~Path();
  }
  size_ = o.size_;
  heap_shift_ = o.heap_shift_;
  flags_ = o.flags_;
  multipath_ = o.multipath_;
  o.size_ = 0;
  o.heap_shift_ = 0;
  o.flags_ = 0;
  o.multipath_ = 0;
}

// --- Rib -----------------------------------------------------------------------------------

PeerIndex Rib::AddPeer(PeerInfo info) {
  peers_.push_back(std::move(info));
  per_peer_.push_back({0, 0});
  peer_stats_.emplace_back();
  return static_cast<PeerIndex>(peers_.size() - 1);
}

void Rib::SetDecisionConfig(const DecisionConfig& c) {
  config_ = c;
  table_.ForEach([&](const net::Prefix& prefix, Destination& d) {
    PathSet before = MultipathOf(d);
    Sort(d);
    Decide(prefix, d, std::move(before));
  });
}

Candidate Rib::CandidateOf(const Path& p) const {
  return Candidate{p.attrs.get(), &peers_[p.peer].source, p.path_id, p.peer};
}

// --- The decision, kept in order ------------------------------------------------------------

bool Rib::Before(const Path& a, const Path& b) const { return DecisionOrder(CandidateOf(a), CandidateOf(b)) < 0; }

bool Rib::SameClass(const Path& a, const Path& b) const { return ClassOrder(CandidateOf(a), CandidateOf(b)) == 0; }

size_t Rib::PlaceOf(const Destination& d, const Path& p, size_t skip) const {
  const Path* paths = d.data();
  const size_t n = d.size_;
  if (skip >= n) return static_cast<size_t>(std::partition_point(paths, paths + n, [&](const Path& q) { return Before(q, p); }) - paths);
  // Without paths[skip]: the place among the others, as an index once it is gone.
  const bool left = skip > 0 && Before(p, paths[skip - 1]);
  if (left) return static_cast<size_t>(std::partition_point(paths, paths + skip, [&](const Path& q) { return Before(q, p); }) - paths);
  return static_cast<size_t>(std::partition_point(paths + skip + 1, paths + n, [&](const Path& q) { return Before(q, p); }) - paths) - 1;
}

bool Rib::StaysPlain(const Destination& d, const Path& p, size_t skip) const {
  if (config_.always_compare_med) return true;  // Compare is DecisionOrder
  const Path* paths = d.data();
  const size_t n = d.size_;
  // The class of `p`: contiguous, and in plain order sorted by MED within it.
  auto lo = static_cast<size_t>(std::partition_point(paths, paths + n, [&](const Path& q) {
    return ClassOrder(CandidateOf(q), CandidateOf(p)) < 0; }) - paths);
  auto hi = static_cast<size_t>(std::partition_point(paths + lo, paths + n, [&](const Path& q) {
    return ClassOrder(CandidateOf(q), CandidateOf(p)) == 0; }) - paths);
  if (lo == skip) ++lo;
  if (hi > lo && hi - 1 == skip) --hi;
  if (lo >= hi) return true;
  const uint32_t med = p.attrs->med;
  if (paths[lo].attrs->med == med && paths[hi - 1].attrs->med == med) return true;  // one MED
  const uint32_t as = p.attrs->neighbor_as;
  for (size_t i = lo; i < hi; ++i) {
    if (i != skip && paths[i].attrs->neighbor_as != as) return false;
  }
  return true;  // one neighbor AS: MED is compared between all of them
}

void Rib::Sort(Destination& d) const {
  Path* paths = d.data();
  const size_t n = d.size_;
  std::sort(paths, paths + n, [&](const Path& a, const Path& b) { return Before(a, b); });
  d.flags_ &= static_cast<uint8_t>(~Destination::kMixedOrder);
  if (config_.always_compare_med) return;
  for (size_t lo = 0; lo < n;) {
    size_t hi = lo + 1;
    while (hi < n && SameClass(paths[hi], paths[lo])) ++hi;
    bool one_as = true;
    for (size_t i = lo + 1; i < hi && one_as; ++i) one_as = paths[i].attrs->neighbor_as == paths[lo].attrs->neighbor_as;
    if (paths[lo].attrs->med != paths[hi - 1].attrs->med && !one_as) {
      // Deterministic MED: the best of each neighbor AS (its first path: within one AS,
      // MED is compared), the ASes ranked by their bests on the steps after MED, and each
      // AS's paths together in that rank.
      d.flags_ |= Destination::kMixedOrder;
      absl::InlinedVector<std::pair<uint32_t, size_t>, 8> bests;  // neighbor AS, its first path
      for (size_t i = lo; i < hi; ++i) {
        const uint32_t as = paths[i].attrs->neighbor_as;
        if (std::none_of(bests.begin(), bests.end(), [&](const auto& b) { return b.first == as; })) bests.push_back({as, i});
      }
      std::sort(bests.begin(), bests.end(), [&](const auto& a, const auto& b) {
        return GroupOrder(CandidateOf(paths[a.second]), CandidateOf(paths[b.second])) < 0;
      });
      auto rank = [&](const Path& q) {
        const uint32_t as = q.attrs->neighbor_as;
        return std::find_if(bests.begin(), bests.end(), [&](const auto& b) { return b.first == as; }) - bests.begin();
      };
      std::stable_sort(paths + lo, paths + hi, [&](const Path& a, const Path& b) { return rank(a) < rank(b); });
    }
    lo = hi;
  }
}

uint32_t Rib::MultipathBits(const Destination& d) const {
  if (d.empty()) return 0;
  const Path* paths = d.data();
  const Candidate best = CandidateOf(paths[0]);
  const uint32_t max = best.source->ebgp ? config_.maximum_paths_ebgp : config_.maximum_paths_ibgp;
  uint32_t bits = 1;
  if (max <= 1) return bits;
  // The first eligible paths in decision order, up to maximum-paths (the best counts).
  uint32_t need = max - 1;
  const size_t end = std::min<size_t>(d.size_, Destination::kMaxMultipathIndex);
  for (size_t i = 1; i < end; ++i) {
    const Candidate c = CandidateOf(paths[i]);
    if (ClassOrder(best, c) != 0) break;  // every path after it is of a worse class
    if (!MultipathEligible(best, c, config_)) continue;
    bits |= uint32_t{1} << i;
    if (--need == 0) break;
  }
  return bits;
}

bool Rib::ReachesMultipath(const Destination& d, size_t index, bool in_best_class) const {
  if (d.empty() || index == 0 || d.mixed_order()) return true;
  const bool ebgp = peers_[d.data()[0].peer].source.ebgp;
  const uint32_t max = std::max<uint32_t>(1, ebgp ? config_.maximum_paths_ebgp : config_.maximum_paths_ibgp);
  if (static_cast<uint32_t>(__builtin_popcount(d.multipath_)) >= max) {
    // The set is full: it was chosen from the paths up to its last member.
    return index <= static_cast<size_t>(31 - __builtin_clz(d.multipath_));
  }
  // Not full: it was chosen from the best's class, up to kMaxMultipathIndex.
  return index < Destination::kMaxMultipathIndex && in_best_class;
}

void Rib::Announce(PeerIndex peer, std::span<const net::Nlri> nlri, const AttrRef& attrs) {
  ImportStats& st = peer_stats_[peer];
  const bool loop = attrs->attrs.as_path && attrs->attrs.as_path->Contains(local_as_);
  // Next-hop validation: a path needs a next hop (NEXT_HOP or MP_REACH), and not 0.0.0.0 / ::.
  const bool bad_nh = !peers_[peer].local && ((!attrs->attrs.next_hop && !attrs->attrs.mp_reach) ||
                      attrs->next_hop == net::IpAddress{} ||
                      (attrs->next_hop.is_v6() && attrs->next_hop == net::IpAddress::V6Bytes(kZero16)));
  if (loop || bad_nh) {
    // The new path is unusable; an older one from the same peer is replaced by nothing.
    (loop ? st.rejected_as_loop : st.rejected_next_hop) += nlri.size();
    Withdraw(peer, nlri);
    return;
  }
  for (const net::Nlri& n : nlri) {
    auto [d, inserted] = table_.TryEmplace(n.prefix);
    if (inserted) ++prefixes_[static_cast<int>(n.prefix.family())];
    Path* same = nullptr;
    for (size_t i = 0; i < d->size_; ++i) {
      Path& p = d->data()[i];
      if (p.peer == peer && p.path_id == n.path_id) {
        same = &p;
        break;
      }
    }
    if (same != nullptr && same->attrs == attrs) continue;  // an identical re-announcement changes nothing
    if (same == nullptr && d->size_ == UINT16_MAX) {  // 65535 paths for one prefix: the rest are not kept
      ++st.rejected_path_limit;
      continue;
    }
    ++st.accepted;
    ++decision_runs_;
    if (d->empty()) {  // the first path of a prefix (a full table from one peer): it is the set
      d->PushBack(Path{peer, n.path_id, attrs});
      d->flags_ = 0;
      d->multipath_ = 1;
      ++path_count_;
      ++per_peer_[peer][static_cast<int>(n.prefix.family())];
      PathSet now;
      now.push_back(d->data()[0]);
      pending_.push_back(RouteChange{n.prefix, PathSet{}, std::move(now)});
      continue;
    }
    Path path{peer, n.path_id, attrs};
    const size_t old_index = same != nullptr ? static_cast<size_t>(same - d->data()) : SIZE_MAX;
    if (!d->mixed_order() && StaysPlain(*d, path, old_index)) {
      // The common case: the path's place by binary search, and a new decision only if it
      // enters, leaves or moves within the paths the multipath set is chosen from.
      const size_t to = PlaceOf(*d, path, old_index);
      const bool in_class = d->empty() || SameClass(path, d->data()[0]);
      bool reaches = ReachesMultipath(*d, to, in_class);
      if (same != nullptr) reaches = reaches || ReachesMultipath(*d, old_index);
      PathSet before;
      if (reaches) before = MultipathOf(*d);
      if (same != nullptr) {
        same->attrs = std::move(path.attrs);
        d->Move(old_index, to);
      } else {
        d->InsertAt(to, std::move(path));
        ++path_count_;
        ++per_peer_[peer][static_cast<int>(n.prefix.family())];
      }
      if (reaches) Decide(n.prefix, *d, std::move(before));
      continue;
    }
    // A class ranked by deterministic MED: the decision from scratch.
    PathSet before = MultipathOf(*d);
    if (same != nullptr) {
      same->attrs = std::move(path.attrs);
    } else {
      d->PushBack(std::move(path));
      ++path_count_;
      ++per_peer_[peer][static_cast<int>(n.prefix.family())];
    }
    Sort(*d);
    Decide(n.prefix, *d, std::move(before));
  }
}

void SplitUpdate(const wire::UpdateMessage& u, AttributeStore& store,
                 absl::FunctionRef<void(std::span<const net::Nlri>)> withdraw,
                 absl::FunctionRef<void(std::span<const net::Nlri>, const AttrRef&)> announce) {
  if (!u.withdrawn.empty()) withdraw(u.withdrawn);
  const wire::PathAttributes& a = u.attrs;
  if (a.mp_unreach && !a.mp_unreach->withdrawn.empty()) withdraw(a.mp_unreach->withdrawn);
  const bool field_nlri = !u.nlri.empty();
  const bool mp_nlri = a.mp_reach && !a.mp_reach->nlri.empty();
  if (!field_nlri && !mp_nlri) return;
  if (u.action == wire::ErrorAction::kTreatAsWithdraw) {
    if (field_nlri) withdraw(u.nlri);
    if (mp_nlri) withdraw(a.mp_reach->nlri);
    return;
  }
  if (field_nlri && !a.mp_reach) {
    announce(u.nlri, store.Intern(a, u.attrs_token.value));  // the common case: no copy
  } else if (field_nlri) {
    wire::PathAttributes own = a;  // NEXT_HOP's NLRI: MP_REACH_NLRI is not about it
    own.mp_reach.reset();
    announce(u.nlri, store.Intern(std::move(own)));
  }
  if (mp_nlri) {
    if (a.next_hop) {
      wire::PathAttributes own = a;  // MP NLRI: NEXT_HOP is ignored (RFC 4760 §3)
      own.next_hop.reset();
      announce(a.mp_reach->nlri, store.Intern(std::move(own)));
    } else {
      // No token: MP_REACH_NLRI's octets hold the prefixes, so the decoder's run of equal
      // attributes is one UPDATE, and its token would only push a neighbor's out of the memo.
      announce(a.mp_reach->nlri, store.Intern(a));
    }
  }
}

void Rib::ApplyUpdate(PeerIndex peer, const wire::UpdateMessage& u, AttributeStore& store) {
  SplitUpdate(
      u, store, [&](std::span<const net::Nlri> nlri) { Withdraw(peer, nlri); },
      [&](std::span<const net::Nlri> nlri, const AttrRef& attrs) { Announce(peer, nlri, attrs); });
}

void Rib::Withdraw(PeerIndex peer, std::span<const net::Nlri> nlri) {
  for (const net::Nlri& n : nlri) {
    Destination* d = table_.Find(n.prefix);
    if (d == nullptr) continue;
    for (size_t i = 0; i < d->size_; ++i) {
      const Path& p = d->data()[i];
      if (p.peer == peer && p.path_id == n.path_id) {
        ++peer_stats_[peer].withdrawn;
        Remove(n.prefix, *d, i);
        if (d->empty()) {
          --prefixes_[static_cast<int>(n.prefix.family())];
          table_.Erase(n.prefix);
        }
        break;
      }
    }
  }
}

std::vector<net::Nlri> Rib::PathsOf(PeerIndex peer, net::Family family) const {
  std::vector<net::Nlri> out;
  if (paths_of(peer, family) == 0) return out;
  out.reserve(paths_of(peer, family));
  table_.ForEachIn(family, [&](const net::Prefix& prefix, const Destination& d) {
    for (const Path& p : d.paths()) {
      if (p.peer == peer) out.push_back(net::Nlri{prefix, p.path_id});
    }
  });
  return out;
}

void Rib::PeerDown(PeerIndex peer) {
  // A walk of the table, as BIRD does on a flush; cost is one pass per session loss.
  PeerDownFrom(peer, std::nullopt, SIZE_MAX);
}

std::optional<net::Prefix> Rib::PeerDownFrom(PeerIndex peer, const std::optional<net::Prefix>& from,
                                              size_t max_prefixes) {
  if (per_peer_[peer][0] + per_peer_[peer][1] == 0) return std::nullopt;  // nothing of it left
  return table_.EraseIfFrom(from, max_prefixes, [&](const net::Prefix& prefix, Destination& d) {
    // Every path of the peer first, then one decision, and that only if one of them was
    // among the paths the multipath set is chosen from.
    bool reaches = false, removed = false;
    for (size_t i = 0; i < d.size_ && !reaches; ++i) {
      if (d.data()[i].peer != peer) continue;
      removed = true;
      reaches = ReachesMultipath(d, i);
    }
    if (!removed) return false;
    PathSet before;
    if (reaches) before = MultipathOf(d);
    for (size_t i = d.size_; i-- > 0;) {
      if (d.data()[i].peer != peer) continue;
      --per_peer_[peer][static_cast<int>(prefix.family())];
      --path_count_;
      d.Erase(i);
    }
    ++decision_runs_;
    if (reaches) {
      if (d.mixed_order()) Sort(d);
      Decide(prefix, d, std::move(before));
    }
    if (!d.empty()) return false;
    --prefixes_[static_cast<int>(prefix.family())];
    return true;
  });
}

void Rib::Remove(const net::Prefix& prefix, Destination& d, size_t index) {
  ++decision_runs_;
  const bool reaches = ReachesMultipath(d, index);
  PathSet before;
  if (reaches) before = MultipathOf(d);
  --per_peer_[d.data()[index].peer][static_cast<int>(prefix.family())];
  --path_count_;
  d.Erase(index);  // the others keep their order
  if (!reaches) return;
  if (d.mixed_order()) Sort(d);  // leaving may change which path is best of its neighbor AS
  Decide(prefix, d, std::move(before));
}

void Rib::Decide(const net::Prefix& prefix, Destination& d, PathSet before) {
  d.multipath_ = MultipathBits(d);
  PathSet now = MultipathOf(d);
  if (now != before) pending_.push_back(RouteChange{prefix, std::move(before), std::move(now)});
}

PathSet Rib::MultipathOf(const Destination& d) const {
  PathSet out;
  d.ForEachMultipath([&](const Path& p) { out.push_back(p); });
  return out;
}

std::vector<RouteChange> Rib::TakeChanges() {
  std::vector<RouteChange> out;
  if (pending_.empty()) return out;
  // In prefix order (a peer's UPDATE usually is already). A prefix changed more than once
  // goes from the first entry's old set to the last entry's new set.
  auto before = [](const RouteChange& a, const RouteChange& b) { return net::InTableOrder(a.prefix, b.prefix); };
  if (!std::is_sorted(pending_.begin(), pending_.end(), before)) {
    // Several peers' UPDATEs interleaved: order indices (cheap to move), then the changes.
    std::vector<uint32_t> order(pending_.size());
    for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
      if (pending_[a].prefix == pending_[b].prefix) return a < b;  // stable: the first change first
      return net::InTableOrder(pending_[a].prefix, pending_[b].prefix);
    });
    std::vector<RouteChange> sorted;
    sorted.reserve(pending_.size());
    for (uint32_t i : order) sorted.push_back(std::move(pending_[i]));
    pending_.swap(sorted);
  }
  // Coalesced in place, so a session flush of a full table holds one change vector, not two.
  size_t kept = 0;
  for (size_t i = 0; i < pending_.size();) {
    size_t last = i;
    while (last + 1 < pending_.size() && pending_[last + 1].prefix == pending_[i].prefix) ++last;
    RouteChange& c = pending_[i];
    if (last != i) c.new_multipath = std::move(pending_[last].new_multipath);
    if (c.new_multipath != c.old_multipath) {  // else changed and changed back
      if (kept != i) pending_[kept] = std::move(c);
      ++kept;
    }
    i = last + 1;
  }
  pending_.resize(kept);
  out.swap(pending_);
  pending_.swap(spare_);
  return out;
}

void Rib::Recycle(std::vector<RouteChange>&& used) {
  used.clear();
  if (used.capacity() > spare_.capacity() && used.capacity() <= 65536) spare_ = std::move(used);
}

const Destination* Rib::Find(const net::Prefix& prefix) const { return table_.Find(prefix); }

DecisionStep Rib::LostAt(const Destination& d, size_t i) const {
  if (d.empty() || i == 0) return DecisionStep::kNone;
  return Compare(CandidateOf(d.data()[0]), CandidateOf(d.data()[i]), config_).step;
}

size_t Rib::memory_bytes() const {
  size_t heap = 0;
  table_.ForEach([&](const net::Prefix&, const Destination& d) {
    if (d.heap_shift_) heap += (size_t{1} << d.heap_shift_) * sizeof(Path) + 16;  // malloc overhead
  });
  return table_.memory_bytes() + heap;
}

}  // namespace bagd::rib
