// The loader on damaged input: every mutation of the examples gives a config or errors
// with sane locations, never a crash (run under ASan+UBSan in the sanitizer build).
#include <algorithm>
#include <catch2/catch.hpp>
#include <fstream>
#include <random>
#include <sstream>

#include "conf/config_loader.h"
#include "tests/conf/conf_test_support.h"

using namespace bagd::conf;
using namespace bagd::conf::testing;

namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

int LineCount(const std::string& text) {
  return 1 + static_cast<int>(std::count(text.begin(), text.end(), '\n'));
}

}  // namespace

TEST_CASE("mutated examples never crash the loader", "[conf][robustness]") {
  constexpr const char* kInteresting[] = {"{", "}", "[",  "]",  "\"",           ":",
                                          ",", "#", "\\", "\t", "\n",           "<",
                                          ">", "0", "-",  "'",  "IPV4_UNICAST", "\xff"};
  std::mt19937 random(20240611);  // fixed: the same mutations on every run
  for (const char* example : {"conf/examples/bag-router.textproto", "conf/examples/bag-router.json",
                              "conf/examples/minimal.textproto"}) {
    const std::string original = ReadFile(SourcePath(example));
    REQUIRE_FALSE(original.empty());
    for (int i = 0; i < 700; ++i) {
      std::string text = original;
      const int edits = 1 + static_cast<int>(random() % 3);
      for (int e = 0; e < edits; ++e) {
        const std::size_t at = random() % text.size();
        switch (random() % 3) {
          case 0:
            text.erase(at, 1 + random() % 8);
            break;
          case 1:
            text.insert(at, kInteresting[random() % std::size(kInteresting)]);
            break;
          default:
            text[at] = static_cast<char>(random());
            break;
        }
        if (text.empty()) text = "{";
      }
      const LoadedConfig loaded = ParseConfig(text, "/tmp/mutated.conf");
      const int lines = LineCount(text);
      for (const ConfigError& error : loaded.errors) {
        INFO(error.ToString());
        CHECK(error.line >= 0);
        CHECK(error.line <= lines);
        CHECK(error.column >= 0);
        CHECK_FALSE(error.message.empty());
        CHECK(error.message.find('\n') == std::string::npos);  // one line per error
      }
    }
  }
}
