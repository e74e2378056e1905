// A FIB that records what it is asked to do: the state it would hold (groups and the routes
// that point at them) and every operation, checked for make-before-break order. The scenario
// tests give it to the daemon's Pipeline as its rib::FibSink, where the daemon has the
// fib_sync/ stage: it gets the same FibUpdates the kernel backend gets.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "rib/fib_update.h"

namespace bagd::test {

class RecordingFib final : public rib::FibSink {
 public:
  void Apply(const rib::FibUpdate& u) override {
    errors_ += Check(u);
    route_ops_per_update_.push_back(u.route_upserts.size() + u.route_deletes.size());
  }
  // What was wrong with the updates since the last call ("" when nothing).
  std::string TakeErrors() { return std::exchange(errors_, {}); }

  // Applies `u`; returns an empty string, or what was wrong with it.
  std::string Check(const rib::FibUpdate& u) {
    std::string err;
    for (const rib::FibGroup& g : u.group_upserts) {
      if (g.members.empty()) err += absl::StrCat("group ", g.id, " upserted with no members; ");
      const bool fresh = !groups_.contains(g.id);
      groups_[g.id] = g.members;
      ++group_ops_;
      // Make-before-break: every group created counts on top of those not deleted yet (a
      // replace in place creates nothing, also while a lower limit is being merged down to).
      if (fresh && limit_ != 0 && groups_.size() > limit_) {
        err += absl::StrCat("group ", g.id, " makes ", groups_.size(), " groups, over the limit ", limit_, "; ");
      }
    }
    for (const auto& [prefix, id] : u.route_upserts) {
      if (!groups_.contains(id)) err += absl::StrCat("route ", prefix.ToString(), " points at unknown group ", id, "; ");
      routes_[prefix] = id;
      ++route_ops_;
    }
    for (const net::Prefix& p : u.route_deletes) {
      if (routes_.erase(p) == 0) err += absl::StrCat("delete of unknown route ", p.ToString(), "; ");
      ++route_ops_;
    }
    for (rib::GroupId id : u.group_deletes) {
      for (const auto& [p, g] : routes_) {
        if (g == id) {
          err += absl::StrCat("group ", id, " deleted while route ", p.ToString(), " uses it; ");
          break;
        }
      }
      if (groups_.erase(id) == 0) err += absl::StrCat("delete of unknown group ", id, "; ");
      ++group_ops_;
    }
    return err;
  }

  const std::vector<rib::FibGroupMember>* GroupOfRoute(const net::Prefix& p) const {
    auto r = routes_.find(p);
    if (r == routes_.end()) return nullptr;
    auto g = groups_.find(r->second);
    return g == groups_.end() ? nullptr : &g->second;
  }
  size_t group_count() const { return groups_.size(); }
  // The most groups the FIB may hold at any step (0: no limit); Apply reports going over.
  void set_limit(size_t n) { limit_ = n; }
  size_t route_count() const { return routes_.size(); }
  const std::map<rib::GroupId, std::vector<rib::FibGroupMember>>& groups() const { return groups_; }
  const std::map<net::Prefix, rib::GroupId>& routes() const { return routes_; }
  // The route operations of each update Apply got since the last call.
  std::vector<size_t> TakeRouteOpsPerUpdate() { return std::exchange(route_ops_per_update_, {}); }
  // Operations since the last call.
  std::pair<size_t, size_t> TakeOps() {
    auto r = std::make_pair(group_ops_, route_ops_);
    group_ops_ = route_ops_ = 0;
    return r;
  }

 private:
  std::map<rib::GroupId, std::vector<rib::FibGroupMember>> groups_;
  std::map<net::Prefix, rib::GroupId> routes_;
  size_t group_ops_ = 0;
  size_t route_ops_ = 0;
  std::vector<size_t> route_ops_per_update_;
  std::string errors_;
  size_t limit_ = 0;
};

}  // namespace bagd::test
