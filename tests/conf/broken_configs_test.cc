// tests/data/config/*.textproto: one broken config per error class. Each file starts with
// one "# expect: LINE:COL: MESSAGE-SUBSTRING" line per error it must produce, in order
// (line 0 col 0: an error with no place in the file). The loader must report exactly
// those errors: same count, same line:column, message containing the substring.
#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>

#include "absl/strings/str_replace.h"
#include "conf/config_loader.h"
#include "tests/conf/conf_test_support.h"

using namespace bagd::conf;
using namespace bagd::conf::testing;

namespace {

struct Expectation {
  int line = 0;
  int column = 0;
  std::string substring;
};

std::vector<Expectation> ReadExpectations(const std::string& file) {
  std::vector<Expectation> out;
  std::ifstream in(file);
  std::string line;
  const std::string tag = "# expect: ";
  while (std::getline(in, line)) {
    if (line.rfind(tag, 0) != 0) continue;
    std::istringstream fields(line.substr(tag.size()));
    Expectation e;
    char colon1 = 0, colon2 = 0;
    fields >> e.line >> colon1 >> e.column >> colon2;
    REQUIRE(colon1 == ':');
    REQUIRE(colon2 == ':');
    std::getline(fields >> std::ws, e.substring);
    REQUIRE_FALSE(e.substring.empty());
    out.push_back(e);
  }
  return out;
}

}  // namespace

TEST_CASE("broken configs give exactly the expected file:line:col errors", "[conf][errors]") {
  const std::string directory = SourcePath("tests/data/config");
  const std::vector<std::string> files = FilesIn(directory, ".textproto");
  REQUIRE(files.size() >= 10);
  for (const std::string& file : files) {
    DYNAMIC_SECTION(file.substr(directory.size() + 1)) {
      const std::vector<Expectation> expected = ReadExpectations(file);
      REQUIRE_FALSE(expected.empty());  // a file here without expectations is a mistake
      const LoadedConfig loaded = LoadConfigFile(file);
      for (const ConfigError& e : loaded.errors) UNSCOPED_INFO(e.ToString());
      CHECK_FALSE(loaded.ok());
      REQUIRE(loaded.errors.size() == expected.size());
      for (std::size_t i = 0; i < expected.size(); ++i) {
        const ConfigError& got = loaded.errors[i];
        const Expectation& want = expected[i];
        INFO("error #" << i + 1 << ": " << got.ToString());
        CHECK(got.file == file);
        CHECK(got.line == want.line);
        CHECK(got.column == want.column);
        // Paths of key files are resolved against the config's directory: compare them
        // relative to it.
        const std::string message = absl::StrReplaceAll(got.message, {{directory + "/", ""}});
        CHECK_THAT(message, Catch::Matchers::Contains(want.substring));
        // The printed form is what an editor jumps to.
        const std::string printed = want.line == 0 ? file + ": "
                                                   : file + ":" + std::to_string(want.line) + ":" +
                                                         std::to_string(want.column) + ": ";
        CHECK(got.ToString().rfind(printed, 0) == 0);
      }
    }
  }
}

TEST_CASE("CheckConfig on a broken config prints each error and returns 1", "[conf][check]") {
  const std::string file = SourcePath("tests/data/config/several_errors.textproto");
  std::ostringstream out;
  CHECK(CheckConfig(file, out) == 1);
  std::vector<std::string> lines;
  std::istringstream in(out.str());
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  REQUIRE(lines.size() == 5);
  CHECK(lines[0].rfind(file + ":8:3: router_id \"router-1\" is not a dotted quad", 0) == 0);
  CHECK(lines[1].rfind(file + ":9:3: router: hold_time 2 is not allowed", 0) == 0);
  CHECK(lines[4].rfind(file + ":22:3: neighbor 2001:db8::5: password and password_file", 0) == 0);
  CHECK(out.str().find("configuration OK") == std::string::npos);
}
