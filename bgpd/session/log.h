// bagd's log: one line per event, to stderr. Three forms (docs/daemon.md, "Logs"):
//   text     "2026-12-01T12:00:00.123Z INFO  message"  (a terminal, a file)
//   journal  "<6>message"                              (under systemd: journald keeps the
//            priority from the sd-daemon(3) prefix and adds its own time stamp and metadata)
//   json     {"ts":"2026-12-01T12:00:00.123Z","level":"info","msg":"...","neighbor":"..."}
// `auto` (the default) is journal when stderr is the journal stream systemd named in
// $JOURNAL_STREAM, else text. Events may carry fields (neighbor, event, prefix): JSON lines
// have them as keys, the other forms only in the message. Thread-safe.
#pragma once

#include <chrono>
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"

namespace bagd::log {

enum class Level { kError = 1, kWarning = 2, kInfo = 3, kDebug = 4, kTrace = 5 };
enum class Format { kText, kJournal, kJson };

void SetLevel(Level level);
bool Enabled(Level level);
void SetFormat(Format format);
Format CurrentFormat();
// "text", "journal", "json", "auto" (auto: `journal_stream` is $JOURNAL_STREAM, "dev:ino";
// journal when it names stderr). Unknown text: nullopt.
std::optional<Format> ParseFormat(absl::string_view text, const char* journal_stream);
// Whether stderr is the stream $JOURNAL_STREAM ("DEV:INODE") names.
bool StderrIsJournal(const char* journal_stream);

using Fields = std::vector<std::pair<std::string, std::string>>;

// One line as the format writes it, without the newline (pure: the formatting tests use it).
std::string FormatLine(Format format, Level level, std::chrono::system_clock::time_point when,
                       absl::string_view message, const Fields& fields);

void Write(Level level, const std::string& message);
void Write(Level level, const std::string& message, const Fields& fields);

template <typename... Args>
void Error(const absl::FormatSpec<Args...>& f, const Args&... args) {
  if (Enabled(Level::kError)) Write(Level::kError, absl::StrFormat(f, args...));
}
template <typename... Args>
void Warning(const absl::FormatSpec<Args...>& f, const Args&... args) {
  if (Enabled(Level::kWarning)) Write(Level::kWarning, absl::StrFormat(f, args...));
}
template <typename... Args>
void Info(const absl::FormatSpec<Args...>& f, const Args&... args) {
  if (Enabled(Level::kInfo)) Write(Level::kInfo, absl::StrFormat(f, args...));
}
template <typename... Args>
void Debug(const absl::FormatSpec<Args...>& f, const Args&... args) {
  if (Enabled(Level::kDebug)) Write(Level::kDebug, absl::StrFormat(f, args...));
}

// An event with fields: log::Event(Level::kInfo, {{"neighbor", n}, {"event", "state"}}, "...", ...).
template <typename... Args>
void Event(Level level, const Fields& fields, const absl::FormatSpec<Args...>& f, const Args&... args) {
  if (Enabled(level)) Write(level, absl::StrFormat(f, args...), fields);
}

}  // namespace bagd::log
