// Neighbor groups (docs/config.md, "Neighbor groups"): a neighbor that names a group starts
// from the group's settings and overrides what it sets itself; a group's listen ranges let
// connections from unconfigured addresses in them become dynamic neighbors of the group.
//
// The loader expands the groups before it validates: every check of a neighbor runs on the
// neighbor as it will run, and an error points at the line that caused it (the neighbor's
// own field, else its group's) and names both. The running config holds the expanded
// neighbors (each keeps its `group`) and the groups themselves, which dynamic neighbors are
// made from while the daemon runs (DynamicNeighbor).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "conf/bagd.pb.h"
#include "conf/config_error.h"
#include "conf/field_locator.h"
#include "net/ip_prefix.h"

namespace bagd::conf {

// Where a neighbor of the expanded config came from.
struct NeighborOrigin {
  int neighbor = -1;  // its index in the file's `neighbors`; -1: a group's template
  int group = -1;     // its index in `neighbor_groups`; -1: no group
  // How errors name it: "neighbor 192.0.2.1", "neighbor 192.0.2.1 (group spines)",
  // "group spines" (a template).
  std::string name;
};

struct ExpandedNeighbors {
  // The file's config with each neighbor's group applied; after the file's neighbors, one
  // template per group that has listen ranges or no member, so that the group's settings are
  // checked as a neighbor made of them (address: the first host of its first range, else a
  // documentation address). DropTemplates removes them after the checks.
  bagd::config::v1::Config config;
  std::vector<NeighborOrigin> origins;  // one per neighbor of `config`
  // The groups' own problems (names, ranges, limits, an unknown group): the neighbors are
  // not expanded when there is one.
  std::vector<ConfigError> errors;
};

ExpandedNeighbors ExpandNeighborGroups(const bagd::config::v1::Config& config, std::string_view file_name,
                                       const FieldLocator* locator);

// Finds a field of the expanded config where the file wrote it: a neighbor's field in the
// neighbor's block, else in its group's `settings`; the rest as `file` finds it.
class ExpandedFieldLocator final : public FieldLocator {
 public:
  ExpandedFieldLocator(const FieldLocator* file, const std::vector<NeighborOrigin>& origins)
      : file_(file), origins_(origins) {}
  std::optional<SourceLocation> Find(const FieldPath& path) const override;

 private:
  const FieldLocator* file_;
  const std::vector<NeighborOrigin>& origins_;
};

// The templates out of `expanded.config` (after validation).
void DropTemplates(ExpandedNeighbors& expanded);

// --- While running -------------------------------------------------------------------------

// The group whose listen range holds `address` (the longest range, then the first group),
// or nullopt.
struct ListenRangeMatch {
  int group = -1;
  std::string range;  // as written
};
std::optional<ListenRangeMatch> MatchListenRange(const bagd::config::v1::Config& config, const net::IpAddress& address);

// The neighbor a connection from `address` becomes in group `group` of `config` (a loaded
// config: defaults applied): the group's settings, the address, passive, defaults applied.
bagd::config::v1::Neighbor DynamicNeighbor(const bagd::config::v1::Config& config, int group,
                                           const net::IpAddress& address);

}  // namespace bagd::conf
