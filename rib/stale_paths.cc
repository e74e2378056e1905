#include "rib/stale_paths.h"

#include <algorithm>

#include "net/prefix_map.h"

namespace bagd::rib {
namespace {

bool Before(const net::Nlri& a, const net::Nlri& b) {
  if (a.prefix != b.prefix) return net::InTableOrder(a.prefix, b.prefix);
  return a.path_id < b.path_id;
}

}  // namespace

StalePaths::StalePaths(std::vector<net::Nlri> paths) : paths_(std::move(paths)) {
  // A table walk gives them in table order already; only the path ids of one prefix may not be.
  if (!std::is_sorted(paths_.begin(), paths_.end(), Before)) std::sort(paths_.begin(), paths_.end(), Before);
  paths_.erase(std::unique(paths_.begin(), paths_.end()), paths_.end());
  refreshed_.assign(paths_.size(), false);
  stale_ = paths_.size();
}

void StalePaths::Refreshed(const net::Nlri& nlri) {
  const auto it = std::lower_bound(paths_.begin(), paths_.end(), nlri, Before);
  if (it == paths_.end() || !(*it == nlri)) return;
  const size_t i = static_cast<size_t>(it - paths_.begin());
  if (refreshed_[i]) return;
  refreshed_[i] = true;
  --stale_;
}

std::vector<net::Nlri> StalePaths::TakeStale(size_t max) {
  std::vector<net::Nlri> out;
  for (; next_ < paths_.size() && out.size() < max; ++next_) {
    if (refreshed_[next_]) continue;
    refreshed_[next_] = true;  // taken: each once
    --stale_;
    out.push_back(paths_[next_]);
  }
  return out;
}

const StalePaths& StaleTable::Begin(PeerIndex peer, net::Family family, StaleCause cause, std::vector<net::Nlri> paths) {
  if (by_peer_.size() <= peer) by_peer_.resize(size_t{peer} + 1);
  Entry& e = by_peer_[peer][static_cast<int>(family)];
  e.paths.emplace(std::move(paths));
  e.cause = cause;
  return *e.paths;
}

void StaleTable::Refreshed(PeerIndex peer, const net::Nlri& nlri) {
  if (peer >= by_peer_.size()) return;
  if (auto& paths = by_peer_[peer][static_cast<int>(nlri.prefix.family())].paths) paths->Refreshed(nlri);
}

bool StaleTable::any(PeerIndex peer) const {
  if (peer >= by_peer_.size()) return false;
  return std::any_of(by_peer_[peer].begin(), by_peer_[peer].end(), [](const Entry& e) { return e.paths.has_value(); });
}

const StalePaths* StaleTable::Find(PeerIndex peer, net::Family family) const {
  if (peer >= by_peer_.size()) return nullptr;
  const Entry& e = by_peer_[peer][static_cast<int>(family)];
  return e.paths ? &*e.paths : nullptr;
}

StalePaths* StaleTable::Find(PeerIndex peer, net::Family family, StaleCause cause) {
  if (peer >= by_peer_.size()) return nullptr;
  Entry& e = by_peer_[peer][static_cast<int>(family)];
  return e.paths && e.cause == cause ? &*e.paths : nullptr;
}

std::optional<StaleCause> StaleTable::cause(PeerIndex peer, net::Family family) const {
  if (peer >= by_peer_.size()) return std::nullopt;
  const Entry& e = by_peer_[peer][static_cast<int>(family)];
  return e.paths ? std::optional(e.cause) : std::nullopt;
}

void StaleTable::Clear(PeerIndex peer, net::Family family) {
  if (peer < by_peer_.size()) by_peer_[peer][static_cast<int>(family)].paths.reset();
}

void StaleTable::Clear(PeerIndex peer) {
  if (peer < by_peer_.size()) by_peer_[peer] = {};
}

}  // namespace bagd::rib
