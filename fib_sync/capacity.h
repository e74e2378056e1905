// Live capacity of LAGs (docs/capacity.md): the sum of the speeds of the member interfaces
// that are up. Pure: link states go in (from a netlink dump and notifications), the
// capacity of each source comes out. The members of a bond are the links whose master is
// the bond; an explicit source lists its members by name.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace bagd::fib {

struct CapacitySourceSpec {
  std::string name;
  std::string bond;                  // members: the links enslaved to this one
  std::vector<std::string> members;  // or these, by name
  std::optional<double> member_speed_bps;  // overrides what the interface reports
};

// One interface as the kernel reports it.
struct LinkState {
  uint32_t ifindex = 0;
  std::string name;
  bool up = false;        // admin up and carrier (IFF_UP and IFF_LOWER_UP)
  uint32_t master = 0;    // ifindex of its bond, 0 if none
  double speed_bps = 0;   // what ethtool says; 0 unknown
};

struct MemberView {
  std::string name;
  bool present = false;
  bool up = false;
  double speed_bps = 0;  // the speed counted when up
};

class CapacityTracker {
 public:
  explicit CapacityTracker(std::vector<CapacitySourceSpec> sources) : sources_(std::move(sources)) {}

  // A link appeared or changed. Returns the sources whose capacity changed.
  std::vector<std::string> Update(const LinkState& link);
  // A link is gone.
  std::vector<std::string> Remove(uint32_t ifindex);

  double Capacity(const std::string& source) const;
  std::vector<MemberView> Members(const std::string& source) const;
  const std::vector<CapacitySourceSpec>& sources() const { return sources_; }
  // Interfaces whose speed matters (members of some source): ethtool is asked only for these.
  bool IsMember(const LinkState& link) const;

 private:
  std::vector<std::string> Changed(const std::map<std::string, double>& before) const;
  std::map<std::string, double> Snapshot() const;
  const LinkState* ByName(const std::string& name) const;

  std::vector<CapacitySourceSpec> sources_;
  std::map<uint32_t, LinkState> links_;
};

}  // namespace bagd::fib
