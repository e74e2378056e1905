// What the reconciler tests share: addresses and prefixes from text, and a FibUpdate of one
// group with its routes.
#pragma once

#include <utility>
#include <vector>

#include "net/ip_prefix.h"
#include "rib/fib_update.h"

namespace bagd::fib::testing {

inline net::IpAddress A(const char* s) { return *net::IpAddress::Parse(s); }
inline net::Prefix P(const char* s) { return *net::Prefix::Parse(s); }

// Group `id` with (next hop, weight) members, and `routes` pointing at it.
inline rib::FibUpdate Group(rib::GroupId id, std::vector<std::pair<const char*, uint32_t>> members,
                            std::vector<const char*> routes = {}) {
  rib::FibUpdate u;
  rib::FibGroup g{id, {}};
  for (const auto& [nh, w] : members) g.members.push_back({A(nh), w});
  u.group_upserts.push_back(g);
  for (const char* r : routes) u.route_upserts.emplace_back(P(r), id);
  return u;
}

}  // namespace bagd::fib::testing
