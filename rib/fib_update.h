// What the routing core asks of the FIB: next-hop groups with integer weights, and routes
// that point at a group. The FIB sync stage (fib_sync/) applies it make-before-break: group
// upserts, route upserts, route deletes, then group deletes, in this order.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "bgpd/wire/ip_prefix.h"

namespace bagd::rib {

using GroupId = uint32_t;

struct FibGroupMember {
  wire::IpAddress next_hop;
  uint32_t weight = 1;
  friend bool operator==(const FibGroupMember&, const FibGroupMember&) = default;
};

struct FibGroup {
  GroupId id = 0;
  std::vector<FibGroupMember> members;  // sorted by next hop; weights divided by their GCD
  friend bool operator==(const FibGroup&, const FibGroup&) = default;
};

struct FibUpdate {
  std::vector<FibGroup> group_upserts;  // new groups, or new weights/members under the same id
  std::vector<std::pair<wire::Prefix, GroupId>> route_upserts;
  std::vector<wire::Prefix> route_deletes;
  std::vector<GroupId> group_deletes;  // no route uses them any more
  bool empty() const {
    return group_upserts.empty() && route_upserts.empty() && route_deletes.empty() && group_deletes.empty();
  }
  size_t operations() const {
    return group_upserts.size() + route_upserts.size() + route_deletes.size() + group_deletes.size();
  }
};

}  // namespace bagd::rib
