// Semantic checks of a parsed Config: everything the protobuf parser cannot know (ranges,
// address syntax, uniqueness, combinations that cannot work, files that must exist).
#pragma once

#include <string_view>
#include <vector>

#include "conf/bagd.pb.h"
#include "conf/config_error.h"
#include "conf/field_locator.h"
#include "conf/neighbor_groups.h"

namespace bagd::conf {

// Every problem of `config` (not just the first), sorted by position, each located at the
// offending field via `locator` (or at the nearest enclosing field that was written, e.g.
// the neighbor block for a missing remote_as). With a null locator every error has line 0.
// Reads each neighbor's password_file, whose path must already be resolved (the loader
// resolves relative paths against the config file's directory).
// `origins` (may be null): where each neighbor came from when neighbor groups were expanded
// (ExpandNeighborGroups): messages name a neighbor with its group, and a group's template is
// checked like a neighbor except that its address need not be unique.
std::vector<ConfigError> ValidateConfig(const bagd::config::v1::Config& config,
                                        std::string_view file_name, const FieldLocator* locator,
                                        const std::vector<NeighborOrigin>* origins = nullptr);

}  // namespace bagd::conf
