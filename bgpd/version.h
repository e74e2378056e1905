// The build's version: project(VERSION) in CMakeLists.txt and `git describe` of the tree it
// was built from ("unknown" without git). `bagd --version`, `bagctl --version`, the log's
// first line and bagd_build_info.
#pragma once

#include <string>

namespace bagd {

extern const char* const kVersion;      // "0.1.0"
extern const char* const kGitDescribe;  // "d311109-dirty", "v0.1.0-12-g947e056", "unknown"

// "bagd 0.1.0 (git 947e056)": what --version prints after the program's name.
inline std::string VersionLine(const char* program) {
  return std::string(program) + " " + kVersion + " (git " + kGitDescribe + ")";
}

}  // namespace bagd
