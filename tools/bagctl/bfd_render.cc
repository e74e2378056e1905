#include "tools/bagctl/bfd_render.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tools/bagctl/route_render.h"

namespace bagd::bagctl {

namespace {

std::string Ms(uint64_t us) {
  if (us == 0) return "-";
  return us % 1000 == 0 ? absl::StrCat(us / 1000, "ms") : absl::StrFormat("%.1fms", us / 1000.0);
}

}  // namespace

std::string RenderBfdTable(const control::v1::ListBfdSessionsResponse& response, int64_t now) {
  if (response.sessions().empty()) return "No BFD sessions are configured.\n";
  // Micro-BFD sessions (RFC 7130) add the LAG and member columns.
  const bool micro = std::any_of(response.sessions().begin(), response.sessions().end(),
                                 [](const auto& s) { return !s.interface().empty(); });
  std::vector<std::string> headers = {"Peer", "Type",   "State", "Remote", "LocalDisc", "RemoteDisc",
                                      "Tx",   "Detect", "Diag",  "Up",     "Flaps"};
  if (micro) headers.insert(headers.begin() + 2, {"LAG", "Member", "Counts"});
  std::vector<std::vector<std::string>> rows;
  for (const auto& s : response.sessions()) {
    const bool m = !s.interface().empty();
    rows.push_back({s.peer(), m ? "micro-bfd" : s.multihop() ? "multihop" : "single-hop", s.state(), s.remote_state(),
                    absl::StrCat(s.local_discriminator()), absl::StrCat(s.remote_discriminator()),
                    Ms(s.tx_interval_us()), Ms(s.detection_time_us()),
                    s.local_diagnostic() == "none" ? "-" : s.local_diagnostic(),
                    s.state() == "Up" ? FormatAge(s.up_since_unix_ms(), now) : "-", absl::StrCat(s.flaps())});
    if (micro) {
      rows.back().insert(rows.back().begin() + 2, {m ? s.capacity_source() : "-", m ? s.interface() : "-",
                                                   m ? (s.member_allowed() ? "yes" : "no") : "-"});
    }
  }
  return RenderTable(LeftColumns(headers), rows, "", 2);
}

std::string RenderBfdDetail(const control::v1::BfdSession& s, int64_t now) {
  std::string out = absl::StrCat("BFD peer ", s.peer(),
                                 !s.interface().empty() ? absl::StrCat(" micro-BFD on ", s.interface())
                                 : s.multihop()         ? " multihop"
                                                        : " single hop",
                                 s.local_address().empty() ? "" : absl::StrCat(" from ", s.local_address()), "\n");
  if (!s.interface().empty()) {
    absl::StrAppend(&out, "  member ", s.interface(), " of capacity source ", s.capacity_source(), ": BFD says ",
                    s.member_liveness(), ", so it ", s.member_allowed() ? "counts" : "does not count",
                    s.member_allowed() ? " (while its link is up)" : " in the LAG's capacity", "\n");
  }
  absl::StrAppend(&out, "  state ", s.state(), " (remote ", s.remote_state(), ")",
                  s.state() == "Up" ? absl::StrCat(", up for ", FormatAge(s.up_since_unix_ms(), now)) : "",
                  ", last change ", FormatAge(s.last_change_unix_ms(), now), " ago, ", s.flaps(), " flaps\n");
  absl::StrAppend(&out, "  discriminators: local ", s.local_discriminator(), ", remote ", s.remote_discriminator(),
                  "; UDP source port ", s.source_port(), "\n");
  absl::StrAppend(&out, "  diagnostic: local ", s.local_diagnostic(), ", remote ", s.remote_diagnostic(), "\n");
  absl::StrAppend(&out, "  configured: min tx ", Ms(s.desired_min_tx_us()), ", min rx ", Ms(s.required_min_rx_us()),
                  ", multiplier ", s.detect_multiplier(), s.passive() ? ", passive" : "",
                  s.hold_bgp_until_up() ? ", BGP held until Up" : "", "\n");
  absl::StrAppend(&out, "  peer: min tx ", Ms(s.remote_min_tx_us()), ", min rx ", Ms(s.remote_min_rx_us()),
                  ", multiplier ", s.remote_detect_multiplier(), "\n");
  absl::StrAppend(&out, "  negotiated: transmit every ", Ms(s.tx_interval_us()), " (less 0-25 % jitter), detection time ",
                  Ms(s.detection_time_us()), s.poll_active() ? " (poll sequence in progress)" : "", "\n");
  absl::StrAppend(&out, "  packets: ", s.packets_in(), " in, ", s.packets_out(), " out, ", s.send_errors(),
                  " send errors", s.last_error().empty() ? "" : absl::StrCat(" (last: ", s.last_error(), ")"), "\n");
  return out;
}

}  // namespace bagd::bagctl
