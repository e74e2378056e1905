#include "tools/bagctl/bmp_render.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "tools/bagctl/route_render.h"

namespace bagd::bagctl {

std::string RenderBmpStations(const control::v1::ListBmpStationsResponse& response, int64_t now) {
  if (response.stations().empty()) return "No BMP stations are configured.\n";
  const std::vector<std::string> headers = {"Station", "State",      "Up",       "Messages", "Sent",
                                            "Drops",   "Reconnects", "Buffered", "Views"};
  std::vector<std::vector<std::string>> rows;
  for (const auto& s : response.stations()) {
    std::string state = s.state();
    if (s.state() == "up" && s.syncing()) state = "up (sync)";
    rows.push_back({s.name(), state, s.state() == "up" ? FormatAge(s.up_since_unix_ms(), now) : "-",
                    absl::StrCat(s.messages()), FormatBytes(s.bytes()), absl::StrCat(s.drops()),
                    absl::StrCat(s.reconnects()), FormatBytes(s.buffered_bytes()), absl::StrJoin(s.views(), ",")});
  }
  std::string out = RenderTable(LeftColumns(headers), rows, "", 2);
  for (const auto& s : response.stations()) {
    const double fill = s.max_buffer_bytes() ? 100.0 * static_cast<double>(s.buffered_bytes()) /
                                                   static_cast<double>(s.max_buffer_bytes())
                                             : 0;
    absl::StrAppend(&out, "\n", s.name(), ": ", s.connects(), " connections, ", s.syncs_done(),
                    " full table syncs (re-syncs after a drop or reconnect included), ", s.failures(),
                    " failures\n");
    absl::StrAppend(&out, "  send buffer ", FormatBytes(s.buffered_bytes()), " of ", FormatBytes(s.max_buffer_bytes()),
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
