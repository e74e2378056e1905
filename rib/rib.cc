#include "rib/rib.h"

#include <algorithm>

namespace bagd::rib {
namespace {
constexpr uint8_t kZero16[16] = {};
}

PeerIndex Rib::AddPeer(PeerInfo info) {
  peers_.push_back(std::move(info));
  per_peer_.push_back({0, 0});
  peer_stats_.emplace_back();
  return static_cast<PeerIndex>(peers_.size() - 1);
}

void Rib::SetDecisionConfig(const DecisionConfig& c) {
  config_ = c;
  for (auto& [prefix, d] : table_) Select(prefix, d, true);
}

Candidate Rib::CandidateOf(const Path& p) const { return Candidate{p.attrs.get(), &peers_[p.peer].source, p.path_id}; }

void Rib::Announce(PeerIndex peer, std::span<const wire::Nlri> nlri, const AttrRef& attrs) {
  ImportStats& st = peer_stats_[peer];
  const bool loop = attrs->attrs.as_path && attrs->attrs.as_path->Contains(local_as_);
  // Next-hop validation: a path needs a next hop (NEXT_HOP or MP_REACH), and not 0.0.0.0 / ::.
  const bool bad_nh = !peers_[peer].local && ((!attrs->attrs.next_hop && !attrs->attrs.mp_reach) ||
                      attrs->next_hop == wire::IpAddress{} ||
                      (attrs->next_hop.is_v6() && attrs->next_hop == wire::IpAddress::V6Bytes(kZero16)));
  if (loop || bad_nh) {
    // The new path is unusable; an older one from the same peer is replaced by nothing.
    (loop ? st.rejected_as_loop : st.rejected_next_hop) += nlri.size();
    Withdraw(peer, nlri);
    return;
  }
  for (const wire::Nlri& n : nlri) {
    auto [it, inserted] = table_.try_emplace(n.prefix);
    if (inserted) ++prefixes_[static_cast<int>(n.prefix.family())];
    Destination& d = it->second;
    auto same = std::find_if(d.paths.begin(), d.paths.end(),
                             [&](const Path& p) { return p.peer == peer && p.path_id == n.path_id; });
    if (same != d.paths.end()) {
      if (same->attrs == attrs) continue;  // an identical re-announcement changes nothing
      if (!pending_.contains(n.prefix)) pending_.emplace(n.prefix, MultipathOf(d));
      same->attrs = attrs;
    } else {
      if (!pending_.contains(n.prefix)) pending_.emplace(n.prefix, MultipathOf(d));
      d.paths.push_back(Path{peer, n.path_id, attrs});
      ++path_count_;
      ++per_peer_[peer][static_cast<int>(n.prefix.family())];
    }
    ++st.accepted;
    Select(n.prefix, d, false);
  }
}

void Rib::Withdraw(PeerIndex peer, std::span<const wire::Nlri> nlri) {
  for (const wire::Nlri& n : nlri) {
    auto it = table_.find(n.prefix);
    if (it == table_.end()) continue;
    Destination& d = it->second;
    for (size_t i = 0; i < d.paths.size(); ++i) {
      if (d.paths[i].peer == peer && d.paths[i].path_id == n.path_id) {
        ++peer_stats_[peer].withdrawn;
        Remove(n.prefix, d, i);
        if (d.paths.empty()) {
          --prefixes_[static_cast<int>(n.prefix.family())];
          table_.erase(it);
        }
        break;
      }
    }
  }
}

void Rib::PeerDown(PeerIndex peer) {
  // A walk of the table, as BIRD does on a flush; cost is one pass per session loss.
  std::vector<wire::Prefix> empty;
  for (auto& [prefix, d] : table_) {
    for (size_t i = d.paths.size(); i-- > 0;) {
      if (d.paths[i].peer == peer) Remove(prefix, d, i);
    }
    if (d.paths.empty()) empty.push_back(prefix);
  }
  for (const auto& p : empty) {
    --prefixes_[static_cast<int>(p.family())];
    table_.erase(p);
  }
}

void Rib::Remove(const wire::Prefix& prefix, Destination& d, size_t index) {
  if (!pending_.contains(prefix)) pending_.emplace(prefix, MultipathOf(d));
  --per_peer_[d.paths[index].peer][static_cast<int>(prefix.family())];
  --path_count_;
  d.paths.erase(d.paths.begin() + static_cast<ptrdiff_t>(index));
  Select(prefix, d, false);
}

std::vector<Path> Rib::MultipathOf(const Destination& d) const {
  std::vector<Path> out;
  if (d.best < 0) return out;
  out.push_back(d.paths[d.best]);
  for (size_t i = 0; i < d.paths.size(); ++i) {
    if (static_cast<int>(i) != d.best && (d.multipath >> i & 1)) out.push_back(d.paths[i]);
  }
  return out;
}

void Rib::Select(const wire::Prefix& prefix, Destination& d, bool record) {
  if (record && !pending_.contains(prefix)) pending_.emplace(prefix, MultipathOf(d));
  ++decision_runs_;
  d.best = -1;
  d.multipath = 0;
  if (d.paths.empty()) return;
  int best = 0;
  for (size_t i = 1; i < d.paths.size(); ++i) {
    if (Compare(CandidateOf(d.paths[i]), CandidateOf(d.paths[best]), config_).winner < 0) best = static_cast<int>(i);
  }
  d.best = static_cast<int16_t>(best);
  d.multipath = uint64_t{1} << best;
  const Candidate b = CandidateOf(d.paths[best]);
  const uint32_t max = b.source->ebgp ? config_.maximum_paths_ebgp : config_.maximum_paths_ibgp;
  if (max <= 1) return;
  // The eligible paths in decision order, up to maximum-paths (the best counts).
  std::vector<size_t> eligible;
  for (size_t i = 0; i < d.paths.size() && i < 64; ++i) {
    if (static_cast<int>(i) != best && MultipathEligible(b, CandidateOf(d.paths[i]), config_)) eligible.push_back(i);
  }
  std::sort(eligible.begin(), eligible.end(), [&](size_t x, size_t y) {
    return Compare(CandidateOf(d.paths[x]), CandidateOf(d.paths[y]), config_).winner < 0;
  });
  for (size_t k = 0; k < eligible.size() && k + 1 < max; ++k) d.multipath |= uint64_t{1} << eligible[k];
}

std::vector<RouteChange> Rib::TakeChanges() {
  std::vector<RouteChange> out;
  for (auto& [prefix, old] : pending_) {
    std::vector<Path> now;
    if (auto it = table_.find(prefix); it != table_.end()) now = MultipathOf(it->second);
    if (now == old) continue;  // changed and changed back
    out.push_back(RouteChange{prefix, std::move(old), std::move(now)});
  }
  pending_.clear();
  std::sort(out.begin(), out.end(), [](const RouteChange& a, const RouteChange& b) { return a.prefix < b.prefix; });
  return out;
}

const Destination* Rib::Find(const wire::Prefix& prefix) const {
  auto it = table_.find(prefix);
  return it == table_.end() ? nullptr : &it->second;
}

DecisionStep Rib::LostAt(const Destination& d, size_t i) const {
  if (d.best < 0 || static_cast<int>(i) == d.best) return DecisionStep::kNone;
  return Compare(CandidateOf(d.paths[d.best]), CandidateOf(d.paths[i]), config_).step;
}

size_t Rib::memory_bytes() const {
  size_t heap = 0;
  for (const auto& [p, d] : table_) {
    if (d.paths.size() > 1) heap += d.paths.capacity() * sizeof(Path) + 16;  // malloc overhead
  }
  return table_.capacity() * (sizeof(std::pair<const wire::Prefix, Destination>) + 1) + heap;
}

}  // namespace bagd::rib
