#include "fib_sync/capacity.h"

namespace bagd::fib {

const char* BfdLivenessName(BfdLiveness l) {
  switch (l) {
    case BfdLiveness::kNone:
      return "none";
    case BfdLiveness::kUnknown:
      return "not up yet";
    case BfdLiveness::kUp:
      return "up";
    case BfdLiveness::kFailed:
      return "down";
    case BfdLiveness::kAdminDown:
      return "admin-down";
  }
  return "?";
}

bool BfdAllows(BfdLiveness l, bool require_up) {
  switch (l) {
    case BfdLiveness::kNone:
    case BfdLiveness::kUp:
    case BfdLiveness::kAdminDown:
      return true;
    case BfdLiveness::kUnknown:
      return !require_up;
    case BfdLiveness::kFailed:
      return false;
  }
  return true;
}

std::vector<std::string> CapacityTracker::SetMicroBfd(const std::string& source, const std::vector<std::string>& members,
                                                      bool require_up) {
  const auto before = Snapshot();
  if (members.empty()) {
    micro_bfd_.erase(source);
  } else {
    MicroBfd& m = micro_bfd_[source];
    m.require_up = require_up;
    std::map<std::string, BfdLiveness> next;
    for (const auto& name : members) {
      const auto it = m.members.find(name);
      next[name] = it == m.members.end() ? BfdLiveness::kUnknown : it->second;
    }
    m.members = std::move(next);
  }
  return Changed(before);
}

std::vector<std::string> CapacityTracker::SetLiveness(const std::string& source, const std::string& member,
                                                      BfdLiveness l) {
  auto s = micro_bfd_.find(source);
  if (s == micro_bfd_.end()) return {};
  auto m = s->second.members.find(member);
  if (m == s->second.members.end()) return {};
  const auto before = Snapshot();
  m->second = l;
  return Changed(before);
}

BfdLiveness CapacityTracker::Liveness(const std::string& source, const std::string& member) const {
  auto s = micro_bfd_.find(source);
  if (s == micro_bfd_.end()) return BfdLiveness::kNone;
  auto m = s->second.members.find(member);
  return m == s->second.members.end() ? BfdLiveness::kNone : m->second;
}

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
    const auto micro = micro_bfd_.find(s.name);
    auto view = [&](const LinkState* l, const std::string& name) {
      MemberView m;
      m.name = name;
      m.present = l != nullptr;
      m.link_up = l && l->up;
      if (micro != micro_bfd_.end()) {
        const auto it = micro->second.members.find(name);
        if (it != micro->second.members.end()) m.bfd = it->second;
      }
      m.up = m.link_up && BfdAllows(m.bfd, micro != micro_bfd_.end() && micro->second.require_up);
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
