// control.group (bagd.proto Control): the group name to its id, for the validator and the
// daemon (the control socket's owner group).
#pragma once

#include <sys/types.h>

#include <string>

#include "absl/status/statusor.h"

namespace bagd::conf {

// The id of the group named `name` (getgrnam_r); NotFound when the host has no such group.
absl::StatusOr<gid_t> LookupGroup(const std::string& name);

}  // namespace bagd::conf
