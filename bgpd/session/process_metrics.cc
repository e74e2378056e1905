#include "bgpd/session/process_metrics.h"

#include <sys/resource.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"

namespace bagd::session {

std::optional<ProcessStats> ParseProcStat(absl::string_view stat, long clock_ticks, long page_size, double btime) {
  // "pid (comm) state ppid ...": comm may hold spaces and parentheses; the fields go on after
  // the last ')'. Field n of proc(5) is tokens[n - 3].
  const size_t close = stat.rfind(')');
  if (close == absl::string_view::npos || clock_ticks <= 0) return std::nullopt;
  std::vector<absl::string_view> t = absl::StrSplit(stat.substr(close + 1), ' ', absl::SkipWhitespace());
  if (t.size() < 22) return std::nullopt;
  uint64_t utime = 0, stime = 0, start = 0, vsize = 0;
  int64_t rss = 0;
  if (!absl::SimpleAtoi(t[11], &utime) || !absl::SimpleAtoi(t[12], &stime) || !absl::SimpleAtoi(t[19], &start) ||
      !absl::SimpleAtoi(t[20], &vsize) || !absl::SimpleAtoi(t[21], &rss)) {
    return std::nullopt;
  }
  ProcessStats s;
  s.cpu_seconds = static_cast<double>(utime + stime) / static_cast<double>(clock_ticks);
  s.start_time_seconds = btime + static_cast<double>(start) / static_cast<double>(clock_ticks);
  s.virtual_bytes = static_cast<double>(vsize);
  s.resident_bytes = static_cast<double>(rss) * static_cast<double>(page_size);
  return s;
}

namespace {

std::string ReadFile(const char* path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

double BootTime() {
  std::istringstream in(ReadFile("/proc/stat"));
  std::string key;
  double value = 0;
  while (in >> key) {
    if (key == "btime" && in >> value) return value;
    in.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
  }
  return 0;
}

prometheus::MetricFamily One(const char* name, const char* help, prometheus::MetricType type, double value) {
  prometheus::ClientMetric m;
  if (type == prometheus::MetricType::Counter) {
    m.counter.value = value;
  } else {
    m.gauge.value = value;
  }
  return prometheus::MetricFamily{name, help, type, {m}};
}

}  // namespace

std::vector<prometheus::MetricFamily> ProcessCollector::Collect() const {
  std::vector<prometheus::MetricFamily> out;
  static const double btime = BootTime();
  if (auto s = ParseProcStat(ReadFile("/proc/self/stat"), sysconf(_SC_CLK_TCK), sysconf(_SC_PAGESIZE), btime)) {
    out.push_back(One("process_cpu_seconds_total", "User and system CPU time of bagd, in seconds",
                      prometheus::MetricType::Counter, s->cpu_seconds));
    out.push_back(One("process_resident_memory_bytes", "Resident memory of bagd, in bytes",
                      prometheus::MetricType::Gauge, s->resident_bytes));
    out.push_back(One("process_virtual_memory_bytes", "Virtual memory of bagd, in bytes",
                      prometheus::MetricType::Gauge, s->virtual_bytes));
    out.push_back(One("process_start_time_seconds", "When bagd started, Unix time in seconds",
                      prometheus::MetricType::Gauge, s->start_time_seconds));
  }
  std::error_code ec;
  size_t fds = 0;
  for (auto it = std::filesystem::directory_iterator("/proc/self/fd", ec); !ec && it != std::filesystem::directory_iterator();
       it.increment(ec)) {
    ++fds;
  }
  if (!ec) {
    out.push_back(One("process_open_fds", "Open file descriptors of bagd", prometheus::MetricType::Gauge,
                      static_cast<double>(fds)));
  }
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY) {
    out.push_back(One("process_max_fds", "The most file descriptors bagd may open", prometheus::MetricType::Gauge,
                      static_cast<double>(lim.rlim_cur)));
  }
  return out;
}

}  // namespace bagd::session
