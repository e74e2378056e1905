// The process_* series Prometheus's client libraries export by convention (CPU seconds,
// resident and virtual memory, open and maximum file descriptors, start time), read from
// /proc/self at each scrape. A prometheus::Collectable, called on the metrics server's thread:
// it reads only /proc and touches no daemon state.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include "absl/strings/string_view.h"

namespace bagd::session {

struct ProcessStats {
  double cpu_seconds = 0;       // user + system
  double start_time_seconds = 0;  // Unix time
  double virtual_bytes = 0;
  double resident_bytes = 0;
};
// /proc/self/stat's text (proc(5)): utime, stime, starttime, vsize, rss; `btime` from
// /proc/stat. nullopt when the text is not of that form.
std::optional<ProcessStats> ParseProcStat(absl::string_view stat, long clock_ticks, long page_size, double btime);

class ProcessCollector final : public prometheus::Collectable {
 public:
  std::vector<prometheus::MetricFamily> Collect() const override;
};

}  // namespace bagd::session
