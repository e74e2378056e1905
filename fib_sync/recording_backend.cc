#include "fib_sync/recording_backend.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace bagd::fib {

std::vector<absl::Status> RecordingBackend::Apply(std::span<const FibOp> ops) {
  std::vector<absl::Status> out;
  out.reserve(ops.size());
  for (const FibOp& op : ops) {
    absl::Status st = fault_ ? fault_(op) : absl::OkStatus();
    if (st.ok()) st = ApplyOne(op);
    if (st.ok()) {
      log_.push_back(op);
      peak_groups_ = std::max(peak_groups_, state_.groups.size());
      if (after_each_) after_each_(op, state_);
    }
    out.push_back(std::move(st));
  }
  return out;
}

absl::Status RecordingBackend::ApplyOne(const FibOp& op) {
  if (const auto* n = std::get_if<NexthopOp>(&op)) {
    if (n->remove) {
      for (const auto& [id, members] : state_.groups) {
        for (const auto& m : members) {
          if (m.first == n->id) return absl::FailedPreconditionError(absl::StrCat("next hop ", n->id, " is in group ", id));
        }
      }
      if (state_.nexthops.erase(n->id) == 0) return absl::NotFoundError(absl::StrCat("no next hop ", n->id));
      return absl::OkStatus();
    }
    if (state_.groups.contains(n->id)) return absl::AlreadyExistsError(absl::StrCat("id ", n->id, " is a group"));
    state_.nexthops[n->id] = n->gateway;
    return absl::OkStatus();
  }
  if (const auto* g = std::get_if<GroupOp>(&op)) {
    if (g->remove) {
      if (caps_.group_delete_removes_routes && state_.groups.contains(g->id)) {
        absl::erase_if(state_.routes, [&](const auto& r) { return r.second == g->id; });  // as the kernel does
      }
      for (const auto& [p, id] : state_.routes) {
        if (id == g->id) return absl::FailedPreconditionError(absl::StrCat("group ", g->id, " is used by ", p.ToString()));
      }
      if (state_.groups.erase(g->id) == 0) return absl::NotFoundError(absl::StrCat("no group ", g->id));
      return absl::OkStatus();
    }
    if (g->members.empty()) return absl::InvalidArgumentError("a group needs members");
    if (caps_.max_groups != 0 && !state_.groups.contains(g->id) && state_.groups.size() >= caps_.max_groups) {
      return absl::ResourceExhaustedError(absl::StrCat("the group table is full (", caps_.max_groups, " groups)"));
    }
    for (const auto& [id, w] : g->members) {
      if (!state_.nexthops.contains(id)) return absl::FailedPreconditionError(absl::StrCat("no next hop ", id));
      if (w < 1 || w > caps_.max_weight) return absl::InvalidArgumentError(absl::StrCat("weight ", w, " out of range"));
    }
    state_.groups[g->id] = g->members;
    return absl::OkStatus();
  }
  const auto& r = std::get<RouteOp>(op);
  if (r.remove) {
    if (state_.routes.erase(r.prefix) == 0) return absl::NotFoundError(absl::StrCat("no route ", r.prefix.ToString()));
    return absl::OkStatus();
  }
  if (!state_.groups.contains(r.group)) return absl::FailedPreconditionError(absl::StrCat("no group ", r.group));
  if (r.exclusive && (foreign_routes_.contains(r.prefix) || state_.routes.contains(r.prefix))) {
    return absl::AlreadyExistsError(absl::StrCat("a route to ", r.prefix.ToString(), " exists"));
  }
  if (foreign_routes_.erase(r.prefix) > 0) ++foreign_overwritten_;
  state_.routes[r.prefix] = r.group;
  return absl::OkStatus();
}

void RecordingBackend::HoldByOtherProtocol(const net::Prefix& prefix) {
  state_.routes.erase(prefix);
  foreign_routes_.insert(prefix);
}

void RecordingBackend::DeleteNexthopBehindOurBack(ObjectId id) {
  state_.nexthops.erase(id);
  for (auto it = state_.groups.begin(); it != state_.groups.end();) {
    std::erase_if(it->second, [&](const auto& m) { return m.first == id; });
    if (it->second.empty()) {
      // An empty group goes, and the routes that used it.
      const ObjectId gid = it->first;
      std::vector<net::Prefix> gone;
      for (const auto& [p, g] : state_.routes) {
        if (g == gid) gone.push_back(p);
      }
      for (const auto& p : gone) state_.routes.erase(p);
      it = state_.groups.erase(it);
    } else {
      ++it;
    }
  }
  Emit(FibEvent::Of(FibEvent::Kind::kNexthopDeleted, id));
}

}  // namespace bagd::fib
