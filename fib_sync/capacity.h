// Live capacity of LAGs (docs/capacity.md): the sum of the speeds of the member interfaces
// that are up. Pure: link states go in (from a netlink dump and notifications), the
// capacity of each source comes out. The members of a bond are the links whose master is
// the bond; an explicit source lists its members by name.
//
// Micro-BFD (RFC 7130, docs/bfd.md): a source may also say, per member, what its BFD session
// says of the far end. A member counts when its link is up AND its BFD liveness allows it:
// a session that failed (Up -> Down) takes the member out as a lost carrier would.
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

// What a member's micro-BFD session says (set by the BFD stage from its state changes).
enum class BfdLiveness : uint8_t {
  kNone,       // no micro-BFD on this member
  kUnknown,    // a session that has not been Up yet
  kUp,         // the session is Up
  kFailed,     // it went Up -> Down as a failure (detection time, the far end's Down)
  kAdminDown,  // the far end's AdminDown after Up: not a failure (RFC 5882 §3.2)
};
const char* BfdLivenessName(BfdLiveness l);
// Whether a member with this liveness carries traffic. `require_up`: only an Up session
// (RFC 7130 §4); otherwise anything but a failure (a far end without micro-BFD still counts).
bool BfdAllows(BfdLiveness l, bool require_up);

struct MemberView {
  std::string name;
  bool present = false;
  bool up = false;        // counted: link up and BFD allows it
  double speed_bps = 0;   // the speed counted when up
  bool link_up = false;   // admin up and carrier
  BfdLiveness bfd = BfdLiveness::kNone;
};

class CapacityTracker {
 public:
  explicit CapacityTracker(std::vector<CapacitySourceSpec> sources) : sources_(std::move(sources)) {}

  // A link appeared or changed. Returns the sources whose capacity changed.
  std::vector<std::string> Update(const LinkState& link);
  // A link is gone.
  std::vector<std::string> Remove(uint32_t ifindex);

  // Micro-BFD on `source`'s `members` (empty: off). A member already listed keeps its
  // liveness; a new one starts kUnknown. Returns the sources whose capacity changed.
  std::vector<std::string> SetMicroBfd(const std::string& source, const std::vector<std::string>& members,
                                       bool require_up);
  // One member's session changed. A member without micro-BFD is ignored (a change that
  // was on its way when micro-BFD was removed).
  std::vector<std::string> SetLiveness(const std::string& source, const std::string& member, BfdLiveness l);
  BfdLiveness Liveness(const std::string& source, const std::string& member) const;

  double Capacity(const std::string& source) const;
  std::vector<MemberView> Members(const std::string& source) const;
  const std::vector<CapacitySourceSpec>& sources() const { return sources_; }
  // Interfaces whose speed matters (members of some source): ethtool is asked only for these.
  bool IsMember(const LinkState& link) const;

 private:
  std::vector<std::string> Changed(const std::map<std::string, double>& before) const;
  std::map<std::string, double> Snapshot() const;
  const LinkState* ByName(const std::string& name) const;

  struct MicroBfd {
    bool require_up = false;
    std::map<std::string, BfdLiveness> members;
  };

  std::vector<CapacitySourceSpec> sources_;
  std::map<uint32_t, LinkState> links_;
  std::map<std::string, MicroBfd> micro_bfd_;  // by source
};

}  // namespace bagd::fib
