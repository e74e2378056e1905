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

}  // namespace bagd::rib
