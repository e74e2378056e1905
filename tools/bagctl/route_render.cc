#include "tools/bagctl/route_render.h"

#include <algorithm>
#include <sstream>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "wire/link_bandwidth.h"
#include "tools/bagctl/neighbor_render.h"

namespace bagd::bagctl {
namespace {

using control::v1::FamilySummary;
using control::v1::PeerRibSummary;

constexpr const char* kLocal = "local";

using Column = TableColumn;

std::string RenderColumns(const std::vector<Column>& columns, const std::vector<std::vector<std::string>>& rows) {
  return RenderTable(columns, rows);
}

std::string Plural(uint64_t n, const char* one, const char* many) { return absl::StrCat(n, " ", n == 1 ? one : many); }

std::string JoinPrintable(const google::protobuf::RepeatedPtrField<std::string>& items, const char* separator) {
  std::vector<std::string> shown;
  shown.reserve(items.size());
  for (const std::string& s : items) shown.push_back(Printable(s));
  return absl::StrJoin(shown, separator);
}

// The next hop a table line shows: the global one, else the link-local one, else "-".
std::string TableNextHop(const RoutePath& p) {
  if (!p.next_hop().empty()) return Printable(p.next_hop());
  if (!p.link_local_next_hop().empty()) return Printable(p.link_local_next_hop());
  return "-";
}

// "65002 65010 i"; a local route has no AS path, only the origin code.
std::string PathColumn(const RoutePath& p) {
  if (p.as_path().empty()) return OriginCode(p.origin());
  return absl::StrCat(Printable(p.as_path()), " ", OriginCode(p.origin()));
}

std::string LinkBandwidthText(const RoutePath& p) {
  return p.has_link_bandwidth() ? wire::FormatBitsPerSecond(p.link_bandwidth_bps()) : "";
}

}  // namespace

namespace {

// Widens `width` (one per column; empty: start from the headers and minimums) to fit `rows`.
void FitWidths(const std::vector<TableColumn>& columns, const std::vector<std::vector<std::string>>& rows,
               std::vector<size_t>& width) {
  if (width.empty()) {
    width.resize(columns.size());
    for (size_t c = 0; c < columns.size(); ++c) width[c] = std::max(columns[c].min_width, columns[c].header.size());
  }
  for (size_t c = 0; c < columns.size(); ++c) {
    for (const auto& row : rows) width[c] = std::max(width[c], row[c].size());
  }
}

// The header line (if `header`) and one line per row, with the columns `width` wide.
std::string RenderLines(const std::vector<TableColumn>& columns, const std::vector<size_t>& width,
                        const std::vector<std::vector<std::string>>& rows, std::string_view indent, bool header,
                        size_t gap = 1) {
  const auto line = [&](auto cell) {
    std::string out(indent);
    for (size_t c = 0; c < columns.size(); ++c) {
      const std::string& text = cell(c);
      if (c > 0) out.append(gap, ' ');
      const size_t pad = width[c] > text.size() ? width[c] - text.size() : 0;
      if (columns[c].right) {
        out.append(pad, ' ').append(text);
      } else if (c + 1 == columns.size()) {
        out += text;
      } else {
        out.append(text).append(pad, ' ');
      }
    }
    // Blank cells at the end would leave padding behind.
    out.erase(out.find_last_not_of(' ') + 1);
    out += '\n';
    return out;
  };
  std::string out;
  if (header) out = line([&](size_t c) -> const std::string& { return columns[c].header; });
  for (const auto& row : rows) out += line([&](size_t c) -> const std::string& { return row[c]; });
  return out;
}

}  // namespace

std::string RenderTable(const std::vector<TableColumn>& columns, const std::vector<std::vector<std::string>>& rows,
                        std::string_view indent, size_t gap) {
  std::vector<size_t> width;
  FitWidths(columns, rows, width);
  return RenderLines(columns, width, rows, indent, /*header=*/true, gap);
}

std::vector<TableColumn> LeftColumns(const std::vector<std::string>& headers) {
  std::vector<TableColumn> columns;
  for (const std::string& h : headers) columns.push_back(TableColumn{h, false, 0});
  return columns;
}

std::string FormatAge(int64_t since_ms, int64_t now_ms) {
  if (since_ms <= 0) return "-";
  const int64_t s = std::max<int64_t>(0, (now_ms - since_ms) / 1000);
  if (s < 60) return absl::StrCat(s, "s");
  if (s < 3600) return absl::StrFormat("%dm%02ds", s / 60, s % 60);
  if (s < 86400) return absl::StrFormat("%dh%02dm", s / 3600, (s % 3600) / 60);
  return absl::StrFormat("%dd%02dh", s / 86400, (s % 86400) / 3600);
}

std::string OriginCode(std::string_view origin) {
  const std::string lower = absl::AsciiStrToLower(std::string(origin));
  if (lower == "igp") return "i";
  if (lower == "egp") return "e";
  return "?";
}

std::string OriginName(std::string_view origin) {
  const std::string lower = absl::AsciiStrToLower(std::string(origin));
  if (lower == "igp") return "IGP";
  if (lower == "egp") return "EGP";
  if (lower == "incomplete") return "incomplete";
  if (origin.empty()) return "unknown";
  return Printable(origin);
}

int DecisionStepNumber(std::string_view step) {
  // rib/decision.h, DecisionStepName; the number is the order of evaluation.
  static constexpr std::string_view kSteps[] = {
      "local-pref", "as-path-length", "origin",      "med",     "ebgp-over-ibgp",
      "router-id",  "cluster-list-length", "peer-address", "path-id",
  };
  for (size_t i = 0; i < std::size(kSteps); ++i) {
    if (kSteps[i] == step) return static_cast<int>(i) + 1;
  }
  return 0;
}

std::string RouteFlags(const RoutePath& p) {
  if (p.best()) return "*>";
  if (p.multipath()) return "*=";
  return "* ";
}

std::string NotBestText(const RoutePath& p) {
  if (p.best()) return "";
  std::string text = absl::StrCat("not best: ", p.lost_reason().empty() ? "no reason given" : Printable(p.lost_reason()));
  if (!p.decision_step().empty()) {
    const int number = DecisionStepNumber(p.decision_step());
    if (number > 0) {
      absl::StrAppend(&text, " (step ", number, " ", p.decision_step(), ")");
    } else {
      absl::StrAppend(&text, " (step ", Printable(p.decision_step()), ")");
    }
  }
  return text;
}

std::string FormatBytes(uint64_t bytes) {
  static constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB"};
  if (bytes < 1024) return absl::StrCat(bytes, " B");
  double value = static_cast<double>(bytes) / 1024;
  size_t unit = 0;
  while (value >= 1024 && unit + 1 < std::size(kUnits)) {
    value /= 1024;
    ++unit;
  }
  return absl::StrFormat("%.1f %s", value, kUnits[unit]);
}

namespace {

const std::vector<TableColumn>& RouteTableColumns() {
  static const std::vector<TableColumn> columns = {
      {"  ", false, 2},       {"Network", false, 18}, {"Next Hop", false, 15}, {"Peer", false, 15},
      {"LocPrf", true, 6},    {"MED", true, 6},       {"LB", true, 7},         {"Path", false, 0},
  };
  return columns;
}

constexpr const char* kRouteTableLegend =
    "Status codes: * valid, > best, = multipath\n"
    "Origin codes: i IGP, e EGP, ? incomplete\n"
    "\n";

}  // namespace

void RouteTableWriter::Add(const ListRoutesResponse& page) {
  std::vector<std::vector<std::string>> rows;
  for (const Route& route : page.routes()) {
    ++prefixes_;
    bool first = true;
    for (const RoutePath& p : route.paths()) {
      ++paths_;
      rows.push_back({
          RouteFlags(p),
          first ? Printable(route.prefix()) : "",
          TableNextHop(p),
          Printable(p.peer()),
          absl::StrCat(p.local_pref()),
          p.has_med() ? absl::StrCat(p.med()) : "",
          LinkBandwidthText(p),
          PathColumn(p),
      });
      first = false;
    }
    if (route.paths().empty()) {  // cannot happen in bagd's RIB; shown rather than hidden
      rows.push_back({"  ", Printable(route.prefix()), "-", "-", "", "", "", "(no paths)"});
    }
  }
  if (rows.empty()) return;  // the header waits for the first route
  const bool header = widths_.empty();
  if (header) out_ << kRouteTableLegend;
  FitWidths(RouteTableColumns(), rows, widths_);
  out_ << RenderLines(RouteTableColumns(), widths_, rows, "", header);
}

void RouteTableWriter::Finish(bool truncated) {
  if (widths_.empty()) {  // no route at all: the legend and the header still
    FitWidths(RouteTableColumns(), {}, widths_);
    out_ << kRouteTableLegend << RenderLines(RouteTableColumns(), widths_, {}, "", true);
  }
  if (truncated) {
    out_ << absl::StrCat("\nDisplayed the first ", Plural(prefixes_, "prefix", "prefixes"), " and ",
                         Plural(paths_, "path", "paths"), "; more routes were left out (--limit)\n");
  } else {
    out_ << absl::StrCat("\nDisplayed ", Plural(prefixes_, "prefix", "prefixes"), " and ",
                         Plural(paths_, "path", "paths"), "\n");
  }
}

std::string RenderRouteTable(const ListRoutesResponse& response) {
  std::ostringstream out;
  RouteTableWriter writer(out);
  writer.Add(response);
  writer.Finish(response.truncated());
  return out.str();
}

absl::Status RouteJsonWriter::Add(const ListRoutesResponse& page) {
  if (page.routes().empty()) return absl::OkStatus();
  // One JSON print per page (protobuf sets up its type resolver per call: per route, that
  // was most of the time), then the route objects are cut out of its "routes" array: they
  // are already indented as they sit in the whole document.
  auto text = RenderProtoJson(page);
  if (!text.ok()) return text.status();
  constexpr std::string_view kOpen = "{\n \"routes\": [\n";
  const size_t close = text->rfind("\n ]");
  if (text->compare(0, kOpen.size(), kOpen) != 0 || close == std::string::npos || close < kOpen.size()) {
    return absl::InternalError("cannot print the answer as JSON: unexpected layout from the JSON printer");
  }
  out_ << (routes_ == 0 ? "{\n \"routes\": [\n" : ",\n")
       << std::string_view(*text).substr(kOpen.size(), close - kOpen.size());
  routes_ += static_cast<uint64_t>(page.routes_size());
  return absl::OkStatus();
}

void RouteJsonWriter::Finish(bool truncated) {
  if (routes_ == 0) {
    out_ << "{\n \"routes\": [],\n";
  } else {
    out_ << "\n ],\n";
  }
  out_ << " \"truncated\": " << (truncated ? "true" : "false") << "\n}\n";
}

std::string RenderPathAttributes(const RoutePath& p, std::string_view indent_view) {
  const std::string indent(indent_view);  // absl::StrAppend takes no std::string_view here
  std::string out;
  absl::StrAppend(&out, indent, "AS path: ", p.as_path().empty() ? "(empty)" : Printable(p.as_path()), ", origin ",
                  OriginName(p.origin()), "\n");
  absl::StrAppend(&out, indent, "Next hop: ", p.next_hop().empty() ? "none" : Printable(p.next_hop()));
  if (!p.link_local_next_hop().empty()) absl::StrAppend(&out, ", link-local ", Printable(p.link_local_next_hop()));
  out += "\n";
  absl::StrAppend(&out, indent, "Local pref: ", p.local_pref(), ", MED: ",
                  p.has_med() ? absl::StrCat(p.med()) : std::string("none"), "\n");
  if (p.has_link_bandwidth()) {
    absl::StrAppend(&out, indent, "Link bandwidth: ", wire::FormatBitsPerSecond(p.link_bandwidth_bps()), "\n");
  }
  if (!p.communities().empty()) absl::StrAppend(&out, indent, "Communities: ", JoinPrintable(p.communities(), " "), "\n");
  if (!p.large_communities().empty()) {
    absl::StrAppend(&out, indent, "Large communities: ", JoinPrintable(p.large_communities(), " "), "\n");
  }
  if (!p.extended_communities().empty()) {
    absl::StrAppend(&out, indent, "Extended communities: ", JoinPrintable(p.extended_communities(), ", "), "\n");
  }
  if (!p.originator_id().empty()) absl::StrAppend(&out, indent, "Originator ID: ", Printable(p.originator_id()), "\n");
  if (!p.cluster_list().empty()) absl::StrAppend(&out, indent, "Cluster list: ", JoinPrintable(p.cluster_list(), " "), "\n");
  if (p.atomic_aggregate()) absl::StrAppend(&out, indent, "Atomic aggregate\n");
  return out;
}

std::string RenderRouteDetail(const Route& route) { return RenderRouteDetail(route, control::v1::ListRoutesRequest::VIEW_RIB); }

std::string RenderRouteDetail(const Route& route, RouteView view) {
  // Received and advertised paths went through no decision: no best, no reasons.
  const bool decided = view == control::v1::ListRoutesRequest::VIEW_RIB || view == control::v1::ListRoutesRequest::VIEW_ACCEPTED;
  std::string out = absl::StrCat("BGP routing table entry for ", Printable(route.prefix()), "\n");
  if (view == control::v1::ListRoutesRequest::VIEW_RECEIVED) out = absl::StrCat("Received (before import policy): ", Printable(route.prefix()), "\n");
  if (view == control::v1::ListRoutesRequest::VIEW_ADVERTISED) out = absl::StrCat("Advertised: ", Printable(route.prefix()), "\n");
  int best = 0;
  int multipath = 0;
  for (int i = 0; i < route.paths_size(); ++i) {
    if (route.paths(i).best() && best == 0) best = i + 1;
    if (route.paths(i).multipath()) ++multipath;
  }
  if (decided) {
    absl::StrAppend(&out, "Paths: ", route.paths_size(), " available, ",
                    best > 0 ? absl::StrCat("best #", best) : std::string("no best path"));
    if (multipath > 1) absl::StrAppend(&out, ", ", multipath, " in the multipath set");
  } else {
    absl::StrAppend(&out, "Paths: ", route.paths_size());
  }
  out += "\n";
  // The weighted next-hop group the route is installed with (bagctl show nexthop-groups ID).
  if (route.nexthop_group() != 0) absl::StrAppend(&out, "Next-hop group ", route.nexthop_group(), "\n");

  for (int i = 0; i < route.paths_size(); ++i) {
    const RoutePath& p = route.paths(i);
    if (p.peer() == kLocal) {
      absl::StrAppend(&out, "  Path #", i + 1, ", local");
    } else {
      absl::StrAppend(&out, "  Path #", i + 1, view == control::v1::ListRoutesRequest::VIEW_ADVERTISED ? " to " : " from ",
                      Printable(p.peer()), " (AS ", p.peer_as(), ")");
    }
    if (p.path_id() != 0) absl::StrAppend(&out, ", path id ", p.path_id());
    out += "\n";

    if (decided) {
      std::vector<std::string> status;
      if (p.best()) status.push_back("best");
      if (p.multipath() && multipath > 1) status.push_back("multipath");  // alone, it says nothing
      if (!p.best()) status.push_back(NotBestText(p));
      absl::StrAppend(&out, "    ", absl::StrJoin(status, ", "), "\n");
    }
    out += RenderPathAttributes(p, "    ");
  }
  return out;
}

std::string RenderRibSummary(const RibSummary& s) {
  std::string out;
  {
    const std::vector<Column> columns = {
        {"Family", false, 14}, {"Prefixes", true, 10}, {"Paths", true, 10}, {"Multipath", true, 10}};
    std::vector<std::vector<std::string>> rows;
    uint64_t prefixes = 0, paths = 0, multipath = 0;
    for (const FamilySummary& f : s.families()) {
      rows.push_back({Printable(f.family()), absl::StrCat(f.prefixes()), absl::StrCat(f.paths()),
                      absl::StrCat(f.multipath_prefixes())});
      prefixes += f.prefixes();
      paths += f.paths();
      multipath += f.multipath_prefixes();
    }
    if (s.families_size() > 1) {
      rows.push_back({"total", absl::StrCat(prefixes), absl::StrCat(paths), absl::StrCat(multipath)});
    }
    out += RenderColumns(columns, rows);
  }
  out += '\n';
  if (s.peers().empty()) {
    out += "No peers.\n";
  } else {
    const std::vector<Column> columns = {
        {"Peer", false, 15},          {"AS", true, 10},          {"IPv4 paths", true, 10}, {"IPv6 paths", true, 10},
        {"AS-loop rejects", true, 0}, {"Next-hop rejects", true, 0}, {"Withdrawn", true, 0},
    };
    std::vector<std::vector<std::string>> rows;
    for (const PeerRibSummary& p : s.peers()) {
      rows.push_back({Printable(p.peer()), absl::StrCat(p.peer_as()), absl::StrCat(p.paths_ipv4()),
                      absl::StrCat(p.paths_ipv6()), absl::StrCat(p.rejected_as_loop()),
                      absl::StrCat(p.rejected_next_hop()), absl::StrCat(p.withdrawn())});
    }
    out += RenderColumns(columns, rows);
  }
  out += '\n';
  absl::StrAppend(&out, "Attribute sets: ", s.attribute_sets(), "\n");
  absl::StrAppend(&out, "Memory: ", FormatBytes(s.memory_bytes()));
  if (s.memory_bytes() >= 1024) absl::StrAppend(&out, " (", s.memory_bytes(), " bytes)");
  absl::StrAppend(&out, ", ", s.bytes_per_path(), " bytes per path\n");
  return out;
}

}  // namespace bagd::bagctl
