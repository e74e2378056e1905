// File name templates of the periodic MRT files (config `mrt.table_path`, `mrt.updates_path`):
// an absolute path whose file name holds strftime fields, expanded in UTC. Pure; the config
// validator (conf/) checks templates with it, the daemon expands them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace bagd::mrt {

// OK, or what is wrong in words for the config's error message: not absolute, a '%' field
// in a directory (the directory must be fixed, so old files can be found and deleted), no
// time field in the file name (each file would overwrite the last), an unknown field.
absl::Status CheckPathTemplate(std::string_view path_template);
// The template at `unix_seconds`, UTC.
std::string ExpandPathTemplate(std::string_view path_template, int64_t unix_seconds);
// The file name part as an fnmatch pattern: each field becomes '*' ("%%" a '%').
std::string PathTemplateGlob(std::string_view path_template);
// The directory part ("/var/lib/bagd/mrt").
std::string PathTemplateDirectory(std::string_view path_template);

}  // namespace bagd::mrt
