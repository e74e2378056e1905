// bagd's log: one line per event, "TIME LEVEL message", to stderr (journald adds its own
// metadata when bagd runs under systemd). Thread-safe; level set at start-up.
#pragma once

#include <string>

#include "absl/strings/str_format.h"

namespace bagd::log {

enum class Level { kError = 1, kWarning = 2, kInfo = 3, kDebug = 4, kTrace = 5 };

void SetLevel(Level level);
bool Enabled(Level level);
void Write(Level level, const std::string& message);

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

}  // namespace bagd::log
