#include "tests/conf/conf_test_support.h"

#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

namespace bagd::conf::testing {

std::string SourcePath(const std::string& relative) {
  return std::string(BAGD_SOURCE_DIR) + "/" + relative;
}

std::vector<std::string> FilesIn(const std::string& directory, const std::string& suffix) {
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(directory)) {
    const std::string name = entry.path().string();
    if (entry.is_regular_file() && name.size() >= suffix.size() &&
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
      files.push_back(name);
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::vector<std::string> Located(const std::vector<ConfigError>& errors) {
  std::vector<std::string> out;
  for (const ConfigError& e : errors) {
    out.push_back(std::to_string(e.line) + ":" + std::to_string(e.column) + ": " + e.message);
  }
  return out;
}

std::string WithRouter(const std::string& rest) {
  return "router { asn: 65001 router_id: \"192.0.2.1\" }\n" + rest;
}

TempDir::TempDir() {
  std::string templ = (std::filesystem::temp_directory_path() / "bagd-conf-test-XXXXXX").string();
  if (mkdtemp(templ.data()) == nullptr) std::abort();
  path_ = templ;
}

TempDir::~TempDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

std::string TempDir::Write(const std::string& name, const std::string& contents) const {
  const std::string file = path_ + "/" + name;
  std::ofstream(file, std::ios::binary) << contents;
  return file;
}

}  // namespace bagd::conf::testing
