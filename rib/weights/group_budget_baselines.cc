#include "rib/weights/group_budget_baselines.h"

#include <algorithm>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "rib/weights/group_budget.h"

namespace bagd::rib {
namespace {

std::string NextHopsKey(const std::vector<FibGroupMember>& members) {
  std::string k;
  for (const auto& m : members) k.append(reinterpret_cast<const char*>(m.next_hop.bytes()), m.next_hop.size()).push_back('|');
  return k;
}

std::string ContentKey(const std::vector<FibGroupMember>& members) {
  std::string k = NextHopsKey(members);
  for (const auto& m : members) k.append(reinterpret_cast<const char*>(&m.weight), sizeof m.weight);
  return k;
}

std::vector<FibGroupMember> Ecmp(const std::vector<FibGroupMember>& members) {
  std::vector<FibGroupMember> out = members;
  for (auto& m : out) m.weight = 1;
  return out;
}

BaselineFit Fit(std::span<const BaselineGroup> groups, size_t slots, bool first_fit) {
  BaselineFit f;
  absl::flat_hash_map<std::string, size_t> installed;  // content -> group index
  absl::flat_hash_map<std::string, size_t> first_of;   // next hops -> first installed group
  double traffic = 0, weighted = 0;
  for (const BaselineGroup& g : groups) {
    double e = 0;
    const std::string key = ContentKey(g.members);
    if (!installed.contains(key)) {
      if (installed.size() < slots) {
        installed.emplace(key, &g - groups.data());
        first_of.try_emplace(NextHopsKey(g.members), &g - groups.data());
      } else if (auto it = first_of.find(NextHopsKey(g.members)); first_fit && it != first_of.end()) {
        e = ShareError(g.members, groups[it->second].members);
      } else {
        e = ShareError(g.members, Ecmp(g.members));
      }
    }
    f.error.push_back(e);
    f.worst = std::max(f.worst, e);
    traffic += g.traffic;
    weighted += g.traffic * e;
  }
  f.installed = installed.size();
  f.weighted = traffic > 0 ? weighted / traffic : 0;
  return f;
}

}  // namespace

BaselineFit FitFirstFit(std::span<const BaselineGroup> groups, size_t slots) { return Fit(groups, slots, true); }
BaselineFit FitEcmpOverflow(std::span<const BaselineGroup> groups, size_t slots) { return Fit(groups, slots, false); }

}  // namespace bagd::rib
