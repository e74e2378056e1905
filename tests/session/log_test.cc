// The three log line forms and the journald detection.
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <string>

#include "absl/strings/str_cat.h"
#include "bgpd/session/log.h"

namespace bagd::log {
namespace {

const auto kWhen = std::chrono::system_clock::time_point(std::chrono::milliseconds(1'764'590'400'123));  // 2025-12-01T12:00:00.123Z

TEST_CASE("log: text lines have the time, the level and the message", "[log]") {
  CHECK(FormatLine(Format::kText, Level::kInfo, kWhen, "bagd started", {}) == "2025-12-01T12:00:00.123Z INFO  bagd started");
  CHECK(FormatLine(Format::kText, Level::kError, kWhen, "x", {{"neighbor", "a"}}) == "2025-12-01T12:00:00.123Z ERROR x");
}

TEST_CASE("log: journal lines carry the syslog priority and no time stamp of their own", "[log]") {
  CHECK(FormatLine(Format::kJournal, Level::kError, kWhen, "fib: failed", {}) == "<3>fib: failed");
  CHECK(FormatLine(Format::kJournal, Level::kWarning, kWhen, "w", {}) == "<4>w");
  CHECK(FormatLine(Format::kJournal, Level::kInfo, kWhen, "i", {}) == "<6>i");
  CHECK(FormatLine(Format::kJournal, Level::kDebug, kWhen, "d", {}) == "<7>d");
  CHECK(FormatLine(Format::kJournal, Level::kTrace, kWhen, "t", {}) == "<7>t");
}

TEST_CASE("log: JSON lines are one object with the fields, escaped", "[log]") {
  CHECK(FormatLine(Format::kJson, Level::kInfo, kWhen, "neighbor a: OpenConfirm -> Established",
                   {{"neighbor", "a"}, {"event", "state"}}) ==
        R"({"ts":"2025-12-01T12:00:00.123Z","level":"info","msg":"neighbor a: OpenConfirm -> Established",)"
        R"("neighbor":"a","event":"state"})");
  CHECK(FormatLine(Format::kJson, Level::kWarning, kWhen, "a \"quoted\" \\ path\nnext\t\x01", {}) ==
        R"({"ts":"2025-12-01T12:00:00.123Z","level":"warning","msg":"a \"quoted\" \\ path\nnext\t\u0001"})");
}

TEST_CASE("log: --log-format values, and auto finds the journal stream on stderr", "[log]") {
  CHECK(ParseFormat("text", nullptr) == Format::kText);
  CHECK(ParseFormat("json", nullptr) == Format::kJson);
  CHECK(ParseFormat("journal", nullptr) == Format::kJournal);
  CHECK_FALSE(ParseFormat("syslog", nullptr).has_value());
  CHECK(ParseFormat("auto", nullptr) == Format::kText);
  CHECK(ParseFormat("auto", "") == Format::kText);
  CHECK(ParseFormat("auto", "not:numbers") == Format::kText);
  struct stat st {};
  REQUIRE(fstat(STDERR_FILENO, &st) == 0);
  const std::string mine = absl::StrCat(st.st_dev, ":", st.st_ino);
  CHECK(StderrIsJournal(mine.c_str()));
  CHECK(ParseFormat("auto", mine.c_str()) == Format::kJournal);
  // Another stream's (systemd's variable inherited by a program whose stderr was redirected).
  const std::string other = absl::StrCat(st.st_dev, ":", st.st_ino + 1);
  CHECK_FALSE(StderrIsJournal(other.c_str()));
  CHECK(ParseFormat("auto", other.c_str()) == Format::kText);
}

}  // namespace
}  // namespace bagd::log
