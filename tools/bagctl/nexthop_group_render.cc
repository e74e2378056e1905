#include "tools/bagctl/nexthop_group_render.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tools/bagctl/neighbor_render.h"
#include "tools/bagctl/route_render.h"

namespace bagd::bagctl {
namespace {

constexpr const char* kCommunity = "community";
constexpr const char* kStable = "stable";
constexpr const char* kPendingIncrease = "pending-increase";
constexpr const char* kPendingDecrease = "pending-decrease";

// 0.1234 -> "12.34"; "-" for a value that is not a number (a share of nothing).
std::string Percent(double fraction) {
  if (!std::isfinite(fraction)) return "-";
  return absl::StrFormat("%.2f", fraction * 100);
}

// "12:00:21", UTC.
std::string TimeOfDay(int64_t unix_ms) {
  const std::time_t t = static_cast<std::time_t>(unix_ms / 1000);
  std::tm tm{};
  if (gmtime_r(&t, &tm) == nullptr) return absl::StrCat(unix_ms, " ms");
  char buf[16];
  std::strftime(buf, sizeof buf, "%H:%M:%S", &tm);
  return buf;
}

std::string Plural(uint64_t n, const char* one, const char* many) { return absl::StrCat(n, " ", n == 1 ? one : many); }

}  // namespace

std::string FormatRate(double bps) {
  if (!std::isfinite(bps) || bps < 0) return absl::StrFormat("%g", bps);
  // Round to what is shown first, so 999999999.9 is "1G", not "1000M".
  const double shown = std::strtod(absl::StrFormat("%.6g", bps).c_str(), nullptr);
  static constexpr struct {
    double scale;
    const char* unit;
  } kUnits[] = {{1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "K"}};
  for (const auto& u : kUnits) {
    if (shown >= u.scale) return absl::StrFormat("%.6g%s", shown / u.scale, u.unit);
  }
  return absl::StrFormat("%.6g", shown);
}

std::string FormatSeconds(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return absl::StrFormat("%gs", seconds);
  if (seconds != std::floor(seconds) || seconds < 60 || seconds > 1e12) return absl::StrFormat("%gs", seconds);
  const auto whole = static_cast<int64_t>(seconds);
  std::string out;
  if (whole >= 3600) absl::StrAppend(&out, whole / 3600, "h");
  if (whole / 60 % 60 != 0) absl::StrAppend(&out, whole / 60 % 60, "m");
  if (whole % 60 != 0) absl::StrAppend(&out, whole % 60, "s");
  return out;
}

std::string FormatCountdown(int64_t ms) {
  if (ms < 0) ms = 0;
  const int64_t s = (ms + 999) / 1000;
  if (s < 60) return absl::StrCat(s, "s");
  if (s < 3600) return absl::StrFormat("%dm%02ds", s / 60, s % 60);
  return absl::StrFormat("%dh%02dm", s / 3600, s / 60 % 60);
}

std::string AdvertisedColumn(const NextHopGroupMember& m) {
  std::string out = FormatRate(m.bandwidth_bps());
  if (!m.bandwidth_source().empty() && m.bandwidth_source() != kCommunity) {
    absl::StrAppend(&out, " (", Printable(m.bandwidth_source()), ")");
  }
  return out;
}

std::string WeightColumn(const NextHopGroupMember& m) {
  if (m.target_weight() == m.weight()) return absl::StrCat(m.weight());
  return absl::StrCat(m.weight(), "->", m.target_weight());
}

std::string DampingStateColumn(const NextHopGroupMember& m, int64_t now_unix_ms) {
  const std::string& state = m.damping_state();
  const char* what = nullptr;
  if (state == kPendingIncrease) {
    what = "increase";
  } else if (state == kPendingDecrease) {
    what = "decrease";
  } else if (state == kStable) {
    return kStable;
  } else {
    return state.empty() ? "-" : Printable(state);  // a state this bagctl does not know
  }
  if (m.pending_until_unix_ms() <= 0) return absl::StrCat(what, " pending");
  const int64_t left = m.pending_until_unix_ms() - now_unix_ms;
  return absl::StrCat(what, " at ", TimeOfDay(m.pending_until_unix_ms()), " (",
                      left > 0 ? absl::StrCat("in ", FormatCountdown(left)) : std::string("due"), ")");
}

std::string PenaltyColumn(const NextHopGroupMember& m, const WeightSettings& settings) {
  std::string out = absl::StrFormat("%.2f", m.penalty());
  // Shown only when the flap penalty has stretched it: otherwise it is the setting.
  if (m.next_increase_hold_down_s() > settings.increase_hold_down_s()) {
    // Whole seconds (rounded up): the penalty decays continuously, "13.3858s" is noise.
    absl::StrAppend(&out, " (hold ", FormatSeconds(std::ceil(m.next_increase_hold_down_s())), ")");
  }
  return out;
}

std::string RenderWeightSettings(const WeightSettings& s, const WeightCounters& c) {
  std::string out = absl::StrCat("Weights: max weight ", s.max_weight(), ", ",
                                 s.group_budget() == 0 ? std::string("no group budget")
                                                       : absl::StrCat("group budget ", s.group_budget()),
                                 "; damping: decrease delay ", FormatSeconds(s.decrease_delay_s()),
                                 ", increase hold-down ", FormatSeconds(s.increase_hold_down_s()), ", min change ",
                                 absl::StrFormat("%g%%", s.min_change_percent()), ", max hold-down ",
                                 FormatSeconds(s.max_hold_down_s()), ", half-life ", FormatSeconds(s.half_life_s()),
                                 "\n");
  absl::StrAppend(&out, "Bandwidth changes: ", c.applied(), " applied, ", c.held(), " held, ", c.suppressed(),
                  " suppressed; FIB updates: ", Plural(c.group_updates(), "group", "groups"), ", ",
                  Plural(c.route_updates(), "route", "routes"), "\n");
  if (c.early_follows() > 0) {
    absl::StrAppend(&out, "Early reweights: ", c.early_follows(), " followed, ",
                    Plural(c.early_checked(), "prefix", "prefixes"), " checked, ", c.early_moved(), " moved, ",
                    Plural(c.early_reverted(), "group", "groups"), " put back\n");
  }
  return out;
}

std::string RenderNextHopGroup(const NextHopGroup& g, const WeightSettings& settings, int64_t now_unix_ms) {
  const std::string max_error = Percent(g.max_error());
  std::string out = absl::StrCat("group ", g.id(), "  ", Printable(g.family()), "  ",
                                 Plural(g.prefixes(), "prefix", "prefixes"), "  max error ", max_error,
                                 max_error == "-" ? "" : "%");
  if (g.all_drained()) out += "  all drained: equal weights";
  if (g.fib_object() != 0) absl::StrAppend(&out, "  fib object ", g.fib_object());
  out += "\n";
  if (g.served_by() != 0 && g.merged()) {
    // A group budget is on and this group's own weights have no slot: its routes use another
    // group's, with this much error against its own (docs/weights.md, "Group budget").
    std::string served;
    for (const NextHopGroupMember& m : g.served_members()) {
      absl::StrAppend(&served, served.empty() ? "" : " ", Printable(m.next_hop()), "*", m.weight());
    }
    absl::StrAppend(&out, "  merged: served by installed group ", g.served_by(),
                    g.served_as() != 0 ? absl::StrCat(" (the weights of group ", g.served_as(), ")")
                                       : std::string(" (weights of a group that has left)"),
                    ", share error ", Percent(g.merge_error()), "%: ", served, "\n");
  } else if (g.served_by() == 0 && g.merged()) {
    out += "  not installed: no installed group uses only its next hops (group table full)\n";
  }
  if (g.early_followed()) {
    // docs/weights.md, "Early reweight": the weights follow the first re-announced prefixes.
    absl::StrAppend(&out, "  early reweight: followed the first prefixes' new bandwidths",
                    g.early_follows() > 1 ? absl::StrCat(" (", g.early_follows(), " times)") : std::string(),
                    g.early_reverted() ? "; most prefixes kept their old ones: back to them, moving the changed ones out"
                    : g.early_checking() ? "; checking the others now"
                                       : absl::StrCat("; the others are checked in ",
                                                      FormatCountdown(g.early_check_due_unix_ms() - now_unix_ms)),
                    "\n");
  }
  if (!g.fib_key().empty()) {
    absl::StrAppend(&out, "  appldb ", Printable(g.fib_key()), "  ", Printable(g.fib_confirmation()));
    if (g.fib_routes_confirmed() + g.fib_routes_pending() > 0) {
      absl::StrAppend(&out, ": ", g.fib_routes_confirmed(), " confirmed, ", g.fib_routes_pending(), " pending (",
                      g.fib_routes_retried(), " written again)");
    }
    out += "\n";
    if (!g.fib_route_path().empty()) absl::StrAppend(&out, "  routes over ", Printable(g.fib_route_path()), "\n");
  }
  if (g.members().empty()) {
    out += "  (no members)\n";
    return out;
  }
  std::vector<TableColumn> columns = {
      {"NEXT HOP", false, 15}, {"ADVERTISED", false, 0}, {"APPLIED", true, 0}, {"SHARE %", true, 0},
      {"WEIGHT", true, 0},     {"ERROR %", true, 0},     {"STATE", false, 0},  {"PENALTY", false, 0},
  };
  // With local capacity (docs/capacity.md), where each applied value comes from: the LAG
  // or what the next hop advertises. Not shown for groups no LAG caps (the table as before).
  const bool local = std::any_of(g.members().begin(), g.members().end(),
                                 [](const NextHopGroupMember& m) { return !m.local_capacity_source().empty(); });
  if (local) columns.push_back({"APPLIED FROM", false, 0});
  std::vector<std::vector<std::string>> rows;
  for (const NextHopGroupMember& m : g.members()) {
    // A member with no share of the bandwidth has no relative error to speak of.
    const bool no_share = !(m.share() > 0);
    rows.push_back({
        Printable(m.next_hop()),
        AdvertisedColumn(m),
        FormatRate(m.applied_bandwidth_bps()),
        Percent(m.share()),
        WeightColumn(m),
        no_share ? "-" : Percent(m.error()),
        DampingStateColumn(m, now_unix_ms),
        PenaltyColumn(m, settings),
    });
    if (local) rows.back().push_back(m.applied_from().empty() ? "advertised" : Printable(m.applied_from()));
  }
  out += RenderTable(columns, rows, "  ");
  return out;
}

// The FIB sync's own count (docs/weights.md, "The FIB's own cap"): a line only when it has a
// limit or has refused something.
std::string RenderFibGroupCap(const NextHopGroupBudget& b) {
  if (b.fib_limit() == 0 && b.fib_refused() == 0) return "";
  std::string out = absl::StrCat("FIB group table: ", b.fib_groups(), " of ", b.fib_limit(), " groups held");
  if (b.fib_waiting_groups() != 0) {
    absl::StrAppend(&out, "; ", Plural(b.fib_waiting_groups(), "group", "groups"), " NOT created (no room), ",
                    Plural(b.fib_waiting_routes(), "route waits", "routes wait"), " for them");
  }
  absl::StrAppend(&out, "; ", b.fib_refused(), " refused since start, ", b.fib_rebound(), " written in place\n");
  return out;
}

std::string RenderGroupBudget(const NextHopGroupBudget& b) {
  return absl::StrCat("Group budget: ", b.installed(), " of ", b.max_groups(), " groups installed (", b.reserve(),
                      " kept free for moves), ", b.wanted(), " wanted; ", Plural(b.merged(), "group", "groups"),
                      " merged (", Plural(b.merged_prefixes(), "prefix", "prefixes"), "), worst share error ",
                      Percent(b.worst_error()), "%, ", Printable(b.merge_weight()), "-weighted ",
                      Percent(b.weighted_error()), "%; merge scope ", Printable(b.merge_scope()),
                      b.unrouted_prefixes() != 0 ? absl::StrCat("; ", b.unrouted_prefixes(), " prefixes NOT installed")
                                                 : std::string(),
                      b.swaps() != 0 ? absl::StrCat("; ", Plural(b.swaps(), "swap", "swaps"), " since start")
                                     : std::string(),
                      "\n", RenderFibGroupCap(b));
}

// The FIB sync's repairs (docs/fib.md, "Repair and audit"): one line, and the conflicts.
std::string RenderFibRepair(const control::v1::FibRepair& r) {
  const uint64_t routes = r.routes_deleted() + r.routes_changed() + r.routes_audit();
  const uint64_t groups = r.groups_deleted() + r.groups_changed() + r.groups_audit();
  const uint64_t nexthops = r.nexthops_deleted() + r.nexthops_changed() + r.nexthops_audit();
  std::string out = absl::StrCat("FIB repair: ", routes, " routes, ", groups, " groups, ", nexthops,
                                 " next hops put back that others changed (",
                                 r.routes_audit() + r.groups_audit() + r.nexthops_audit(), " found by audits); ");
  absl::StrAppend(&out, r.audit_interval() == 0 ? std::string("no periodic audit")
                                                : absl::StrCat("audit every ", r.audit_interval(), " s, ", r.audits(),
                                                               " so far"));
  if (r.held_now() != 0) absl::StrAppend(&out, "; ", r.held_now(), " held back (changed again and again)");
  out += '\n';
  if (r.conflicts_now() != 0) {
    absl::StrAppend(&out, "FIB conflicts: ", r.conflicts_now(),
                    " prefixes held by another protocol's route (bagd leaves them alone):");
    for (const std::string& p : r.conflicts()) absl::StrAppend(&out, " ", p);
    if (static_cast<uint64_t>(r.conflicts_size()) < r.conflicts_now()) absl::StrAppend(&out, " ...");
    out += '\n';
  }
  return out;
}

std::string RenderNextHopGroups(const ListNextHopGroupsResponse& response, int64_t now_unix_ms) {
  std::string out = RenderWeightSettings(response.settings(), response.counters());
  if (response.has_budget()) out += RenderGroupBudget(response.budget());
  if (response.has_fib_repair()) out += RenderFibRepair(response.fib_repair());
  if (response.groups().empty()) {
    out += "\nNo next-hop groups.\n";
    return out;
  }
  for (const NextHopGroup& g : response.groups()) {
    out += '\n';
    out += RenderNextHopGroup(g, response.settings(), now_unix_ms);
  }
  return out;
}

}  // namespace bagd::bagctl
