#include "bgpd/session/log.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <mutex>

namespace bagd::log {
namespace {

std::atomic<int> g_level{static_cast<int>(Level::kInfo)};
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

}  // namespace

void SetLevel(Level level) { g_level = static_cast<int>(level); }
bool Enabled(Level level) { return static_cast<int>(level) <= g_level.load(std::memory_order_relaxed); }

void Write(Level level, const std::string& message) {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  const int ms = static_cast<int>(
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char ts[32];
  std::strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%S", &tm);
  std::lock_guard<std::mutex> lock(g_mu);
  std::fprintf(stderr, "%s.%03dZ %-5s %s\n", ts, ms, Name(level), message.c_str());
  std::fflush(stderr);
}

}  // namespace bagd::log
