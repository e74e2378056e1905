#include "bgpd/session/log.h"

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <ctime>
#include <mutex>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace bagd::log {
namespace {

std::atomic<int> g_level{static_cast<int>(Level::kInfo)};
std::atomic<int> g_format{static_cast<int>(Format::kText)};
std::mutex g_mu;

const char* Name(Level l) {
  switch (l) {
    case Level::kError: return "ERROR";
    case Level::kWarning: return "WARN";
    case Level::kInfo: return "INFO";
    case Level::kDebug: return "DEBUG";
    case Level::kTrace: return "TRACE";
  }
  return "?";
}

const char* JsonName(Level l) {
  switch (l) {
    case Level::kError: return "error";
    case Level::kWarning: return "warning";
    case Level::kInfo: return "info";
    case Level::kDebug: return "debug";
    case Level::kTrace: return "trace";
  }
  return "?";
}

// syslog(3) priorities, as sd-daemon(3) prefixes: err 3, warning 4, info 6, debug 7.
int Priority(Level l) {
  switch (l) {
    case Level::kError: return 3;
    case Level::kWarning: return 4;
    case Level::kInfo: return 6;
    case Level::kDebug:
    case Level::kTrace: return 7;
  }
  return 6;
}

std::string Timestamp(std::chrono::system_clock::time_point when) {
  const std::time_t t = std::chrono::system_clock::to_time_t(when);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(when.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&t, &tm);
  char ts[32];
  std::strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%S", &tm);
  return absl::StrFormat("%s.%03dZ", ts, static_cast<int>(ms));
}

// A JSON string literal (RFC 8259: quote, backslash and control characters escaped; other
// bytes as they are, the messages are UTF-8 or ASCII).
void AppendJsonString(std::string* out, absl::string_view s) {
  out->push_back('"');
  for (const char c : s) {
    switch (c) {
      case '"': out->append("\\\""); break;
      case '\\': out->append("\\\\"); break;
      case '\n': out->append("\\n"); break;
      case '\r': out->append("\\r"); break;
      case '\t': out->append("\\t"); break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          absl::StrAppendFormat(out, "\\u%04x", static_cast<unsigned char>(c));
        } else {
          out->push_back(c);
        }
    }
  }
  out->push_back('"');
}

}  // namespace

void SetLevel(Level level) { g_level = static_cast<int>(level); }
bool Enabled(Level level) { return static_cast<int>(level) <= g_level.load(std::memory_order_relaxed); }
void SetFormat(Format format) { g_format = static_cast<int>(format); }
Format CurrentFormat() { return static_cast<Format>(g_format.load(std::memory_order_relaxed)); }

bool StderrIsJournal(const char* journal_stream) {
  if (journal_stream == nullptr || *journal_stream == '\0') return false;
  std::pair<std::string, std::string> parts = absl::StrSplit(journal_stream, absl::MaxSplits(':', 1));
  uint64_t dev = 0, ino = 0;
  if (!absl::SimpleAtoi(parts.first, &dev) || !absl::SimpleAtoi(parts.second, &ino)) return false;
  struct stat st {};
  if (fstat(STDERR_FILENO, &st) != 0) return false;
  return static_cast<uint64_t>(st.st_dev) == dev && static_cast<uint64_t>(st.st_ino) == ino;
}

std::optional<Format> ParseFormat(absl::string_view text, const char* journal_stream) {
  if (text == "text") return Format::kText;
  if (text == "journal") return Format::kJournal;
  if (text == "json") return Format::kJson;
  if (text == "auto" || text.empty()) return StderrIsJournal(journal_stream) ? Format::kJournal : Format::kText;
  return std::nullopt;
}

std::string FormatLine(Format format, Level level, std::chrono::system_clock::time_point when,
                       absl::string_view message, const Fields& fields) {
  switch (format) {
    case Format::kJournal:
      return absl::StrCat("<", Priority(level), ">", message);
    case Format::kJson: {
      std::string out = "{\"ts\":\"";
      absl::StrAppend(&out, Timestamp(when), "\",\"level\":\"", JsonName(level), "\",\"msg\":");
      AppendJsonString(&out, message);
      for (const auto& [k, v] : fields) {
        out.push_back(',');
        AppendJsonString(&out, k);
        out.push_back(':');
        AppendJsonString(&out, v);
      }
      out.push_back('}');
      return out;
    }
    case Format::kText:
      break;
  }
  return absl::StrFormat("%s %-5s %s", Timestamp(when), Name(level), message);
}

void Write(Level level, const std::string& message) { Write(level, message, {}); }

void Write(Level level, const std::string& message, const Fields& fields) {
  std::string line = FormatLine(CurrentFormat(), level, std::chrono::system_clock::now(), message, fields);
  line.push_back('\n');
  std::lock_guard<std::mutex> lock(g_mu);
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
}

}  // namespace bagd::log
