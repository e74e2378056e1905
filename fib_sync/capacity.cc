#include "fib_sync/capacity.h"

namespace bagd::fib {

const LinkState* CapacityTracker::ByName(const std::string& name) const {
  for (const auto& [i, l] : links_) {
    if (l.name == name) return &l;
  }
  return nullptr;
}

std::vector<MemberView> CapacityTracker::Members(const std::string& source) const {
  std::vector<MemberView> out;
  for (const CapacitySourceSpec& s : sources_) {
    if (s.name != source) continue;
    auto view = [&](const LinkState* l, const std::string& name) {
      MemberView m{name, l != nullptr, l && l->up, 0};
      if (l) m.speed_bps = s.member_speed_bps ? *s.member_speed_bps : l->speed_bps;
      return m;
    };
    if (!s.bond.empty()) {
      const LinkState* bond = ByName(s.bond);
      if (!bond) return out;
      for (const auto& [i, l] : links_) {
        if (l.master == bond->ifindex) out.push_back(view(&l, l.name));
      }
    } else {
      for (const std::string& name : s.members) out.push_back(view(ByName(name), name));
    }
  }
  return out;
}

double CapacityTracker::Capacity(const std::string& source) const {
  double sum = 0;
  for (const MemberView& m : Members(source)) {
    if (m.up) sum += m.speed_bps;
  }
  return sum;
}

bool CapacityTracker::IsMember(const LinkState& link) const {
  for (const CapacitySourceSpec& s : sources_) {
    if (!s.bond.empty()) {
      const LinkState* bond = ByName(s.bond);
      if (bond && link.master == bond->ifindex) return true;
    } else {
      for (const auto& n : s.members) {
        if (n == link.name) return true;
      }
    }
  }
  return false;
}

std::map<std::string, double> CapacityTracker::Snapshot() const {
  std::map<std::string, double> out;
  for (const CapacitySourceSpec& s : sources_) out[s.name] = Capacity(s.name);
  return out;
}

std::vector<std::string> CapacityTracker::Changed(const std::map<std::string, double>& before) const {
  std::vector<std::string> out;
  for (const auto& [name, bps] : Snapshot()) {
    if (before.at(name) != bps) out.push_back(name);
  }
  return out;
}

std::vector<std::string> CapacityTracker::Update(const LinkState& link) {
  const auto before = Snapshot();
  links_[link.ifindex] = link;
  return Changed(before);
}

std::vector<std::string> CapacityTracker::Remove(uint32_t ifindex) {
  const auto before = Snapshot();
  links_.erase(ifindex);
  return Changed(before);
}

}  // namespace bagd::fib
