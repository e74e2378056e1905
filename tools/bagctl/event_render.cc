#include "tools/bagctl/event_render.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "tools/bagctl/neighbor_render.h"
#include "tools/bagctl/nexthop_group_render.h"

namespace bagd::bagctl {
namespace {

using control::v1::Event;

std::string Timestamp(int64_t unix_ms) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", absl::FromUnixMillis(unix_ms), absl::UTCTimeZone());
}

std::string NotificationText(const control::v1::Notification& n) {
  std::string s = n.code_name().empty()
                      ? absl::StrCat(n.code(), "/", n.subcode())
                      : absl::StrCat(Printable(n.code_name()), " / ", Printable(n.subcode_name()), " (", n.code(), "/",
                                     n.subcode(), ")");
  if (!n.shutdown_message().empty()) absl::StrAppend(&s, " \"", Printable(n.shutdown_message()), "\"");
  return s;
}

std::string NeighborLine(const control::v1::NeighborEvent& e) {
  std::string s = absl::StrCat("neighbor ", Printable(e.address()));
  if (!e.description().empty()) absl::StrAppend(&s, " (", Printable(e.description()), ")");
  absl::StrAppend(&s, ": ", e.from(), " -> ", e.to(), " (", e.cause());
  if (e.has_notification()) {
    absl::StrAppend(&s, ", ", e.sent() ? "sent " : "received ", NotificationText(e.notification()));
  } else if (!e.reason().empty() && e.cause() != "established") {
    absl::StrAppend(&s, ": ", Printable(e.reason()));
  }
  return absl::StrCat(s, ")");
}

std::string WeightsLine(const control::v1::WeightsEvent& e) {
  std::string s = absl::StrCat("weights group ", e.group(), " ", e.family(), " (", e.prefixes(),
                               e.prefixes() == 1 ? " prefix" : " prefixes", "): ", e.cause());
  if (!e.detail().empty()) absl::StrAppend(&s, " (", Printable(e.detail()), ")");
  std::vector<std::string> members;
  for (const auto& m : e.members()) {
    std::string one = absl::StrCat(Printable(m.next_hop()), " ");
    if (m.old_weight() == m.new_weight()) {
      absl::StrAppend(&one, m.new_weight());
    } else {
      absl::StrAppend(&one, m.old_weight(), "->", m.new_weight());
    }
    if (m.new_weight() != 0) absl::StrAppend(&one, " @", FormatRate(m.applied_bandwidth_bps()));
    members.push_back(std::move(one));
  }
  if (!members.empty()) absl::StrAppend(&s, ": ", absl::StrJoin(members, ", "));
  if (e.budget_wanted() > 0) {
    absl::StrAppend(&s, "; budget: ", e.budget_installed(), " installed, ", e.budget_merged(), " merged of ",
                    e.budget_wanted(), " wanted");
  }
  return s;
}

std::string ConfigLine(const control::v1::ConfigEvent& e) {
  std::string s = absl::StrCat("config ", e.source(), " ", Printable(e.path()), ": ",
                               e.applied() ? "applied" : "rejected, the running configuration stays");
  for (const auto& err : e.errors()) absl::StrAppend(&s, "; ", Printable(err));
  if (!e.needs_restart().empty()) {
    std::vector<std::string> items;
    for (const auto& n : e.needs_restart()) items.push_back(Printable(n));
    absl::StrAppend(&s, "; needs a restart: ", absl::StrJoin(items, ", "));
  }
  return s;
}

}  // namespace

std::string RenderEventLine(const Event& event) {
  const std::string time = Timestamp(event.time_unix_ms());
  switch (event.kind_case()) {
    case Event::kSubscribed:
      return absl::StrCat(time, " watching ",
                          event.subscribed().types().empty() ? "nothing" : absl::StrJoin(event.subscribed().types(), ", "),
                          " events");
    case Event::kDropped:
      return absl::StrCat(time, " ", event.dropped().count(),
                          event.dropped().count() == 1 ? " event" : " events",
                          " dropped: bagctl read too slowly (bagd keeps at most 1024 per subscriber)");
    case Event::kStopping:
      return absl::StrCat(time, " bagd stopping: ", Printable(event.stopping().reason()));
    case Event::kNeighbor:
      return absl::StrCat(time, " ", NeighborLine(event.neighbor()));
    case Event::kWeights:
      return absl::StrCat(time, " ", WeightsLine(event.weights()));
    case Event::kFib: {
      const auto& f = event.fib();
      return absl::StrCat(time, " fib error: ", Printable(f.operation()), ": ", Printable(f.error()), " (", f.failed(),
                          " failed in this pass, ", f.pending(), " pending; bagd retries)");
    }
    case Event::kConfig:
      return absl::StrCat(time, " ", ConfigLine(event.config()));
    case Event::kBfd: {
      const auto& b = event.bfd();
      std::string bgp;
      if (b.bgp_action() == "down") bgp = "; BGP session taken down (Cease / BFD Down)";
      if (b.bgp_action() == "start") bgp = "; BGP may start";
      if (b.remote_admin_down()) bgp = "; the peer's AdminDown: not a failure, BGP stays";
      if (!b.interface().empty()) {  // micro-BFD (RFC 7130): the LAG's capacity
        bgp = b.capacity_action() == "member down"
                  ? absl::StrCat("; ", Printable(b.interface()), " no longer counts in ", Printable(b.capacity_source()))
              : b.capacity_action() == "member up"
                  ? absl::StrCat("; ", Printable(b.interface()), " counts again in ", Printable(b.capacity_source()),
                                 " (after the hold-down)")
              : b.remote_admin_down() ? "; the far end's AdminDown: not a failure, the member stays"
                                      : "";
        return absl::StrCat(time, " bfd ", Printable(b.peer()), " micro-bfd ", Printable(b.capacity_source()), "/",
                            Printable(b.interface()), " ", b.from(), " -> ", b.to(),
                            b.diagnostic().empty() || b.diagnostic() == "none" ? "" : ": ",
                            b.diagnostic() == "none" ? "" : b.diagnostic(), bgp);
      }
      return absl::StrCat(time, " bfd ", Printable(b.peer()), b.multihop() ? " (multihop)" : "", " ", b.from(), " -> ",
                          b.to(), b.diagnostic().empty() || b.diagnostic() == "none" ? "" : ": ",
                          b.diagnostic() == "none" ? "" : b.diagnostic(), bgp);
    }
    case Event::KIND_NOT_SET:
      break;
  }
  return absl::StrCat(time, " event of a kind this bagctl does not know (sequence ", event.sequence(), ")");
}

absl::StatusOr<std::string> RenderEventJson(const Event& event) { return RenderProtoJson(event, /*one_line=*/true); }

}  // namespace bagd::bagctl
