#include "tools/bagctl/bmp_render.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace bagd::bagctl {

namespace {

std::string Age(int64_t since_ms, int64_t now_ms) {
  if (since_ms <= 0) return "-";
  const int64_t s = std::max<int64_t>(0, (now_ms - since_ms) / 1000);
  if (s < 60) return absl::StrCat(s, "s");
  if (s < 3600) return absl::StrFormat("%dm%02ds", s / 60, s % 60);
  if (s < 86400) return absl::StrFormat("%dh%02dm", s / 3600, (s % 3600) / 60);
  return absl::StrFormat("%dd%02dh", s / 86400, (s % 86400) / 3600);
}

std::string Octets(uint64_t n) {
  if (n < 1024) return absl::StrCat(n, " B");
  if (n < (uint64_t{1} << 20)) return absl::StrFormat("%.1f KiB", static_cast<double>(n) / 1024);
  if (n < (uint64_t{1} << 30)) return absl::StrFormat("%.1f MiB", static_cast<double>(n) / (1 << 20));
  return absl::StrFormat("%.2f GiB", static_cast<double>(n) / (1 << 30));
}

}  // namespace

std::string RenderBmpStations(const control::v1::ListBmpStationsResponse& response, int64_t now) {
  if (response.stations().empty()) return "No BMP stations are configured.\n";
  std::vector<std::vector<std::string>> rows = {
      {"Station", "State", "Up", "Messages", "Sent", "Drops", "Reconnects", "Buffered", "Views"}};
  for (const auto& s : response.stations()) {
    std::string state = s.state();
    if (s.state() == "up" && s.syncing()) state = "up (sync)";
    rows.push_back({s.name(), state, s.state() == "up" ? Age(s.up_since_unix_ms(), now) : "-",
                    absl::StrCat(s.messages()), Octets(s.bytes()), absl::StrCat(s.drops()),
                    absl::StrCat(s.reconnects()), Octets(s.buffered_bytes()), absl::StrJoin(s.views(), ",")});
  }
  std::vector<size_t> width(rows[0].size(), 0);
  for (const auto& r : rows) {
    for (size_t i = 0; i < r.size(); ++i) width[i] = std::max(width[i], r[i].size());
  }
  std::string out;
  for (const auto& r : rows) {
    std::string line;
    for (size_t i = 0; i < r.size(); ++i) {
      absl::StrAppend(&line, r[i]);
      if (i + 1 < r.size()) line.append(width[i] - r[i].size() + 2, ' ');
    }
    absl::StrAppend(&out, line, "\n");
  }
  for (const auto& s : response.stations()) {
    const double fill = s.max_buffer_bytes() ? 100.0 * static_cast<double>(s.buffered_bytes()) /
                                                   static_cast<double>(s.max_buffer_bytes())
                                             : 0;
    absl::StrAppend(&out, "\n", s.name(), ": ", s.connects(), " connections, ", s.syncs_done(),
                    " full table syncs (re-syncs after a drop or reconnect included), ", s.failures(),
                    " failures\n");
    absl::StrAppend(&out, "  send buffer ", Octets(s.buffered_bytes()), " of ", Octets(s.max_buffer_bytes()),
                    absl::StrFormat(" (%.1f %%)", fill), ", longest table-walk task ",
                    absl::StrFormat("%.1f ms", s.longest_slice_seconds() * 1000), ", statistics ",
                    s.statistics_interval_seconds() ? absl::StrCat("every ", s.statistics_interval_seconds(), " s")
                                                    : std::string("off"),
                    "\n");
    if (!s.last_error().empty()) absl::StrAppend(&out, "  last error: ", s.last_error(), "\n");
  }
  return out;
}

}  // namespace bagd::bagctl
