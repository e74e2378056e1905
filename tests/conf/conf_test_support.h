// Helpers shared by the conf/ tests.
#pragma once

#include <string>
#include <vector>

#include "conf/config_loader.h"

namespace bagd::conf::testing {

// BAGD_SOURCE_DIR + "/" + relative.
std::string SourcePath(const std::string& relative);

// Files in `directory` (absolute) whose name ends with `suffix`, sorted.
std::vector<std::string> FilesIn(const std::string& directory, const std::string& suffix);

// Each error as "line:col: message" (without the file name), in order.
std::vector<std::string> Located(const std::vector<ConfigError>& errors);

// A minimal valid text config with `neighbors` appended inside the file.
std::string WithRouter(const std::string& rest);

// A temporary directory removed with everything in it when the object goes away.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  // Writes `contents` to path()/name and returns the full path.
  std::string Write(const std::string& name, const std::string& contents) const;

 private:
  std::string path_;
};

}  // namespace bagd::conf::testing
