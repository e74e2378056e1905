// Text views of the control API's routing table for `bagctl show routes` and
// `bagctl show rib-summary` (JSON: RenderProtoJson in neighbor_render.h).
// Pure functions of the messages, so every view is a golden string in the tests.
#pragma once

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "bgpd/control/control.pb.h"

namespace bagd::bagctl {

using control::v1::ListRoutesResponse;
using control::v1::RibSummary;
using control::v1::Route;
using control::v1::RoutePath;

// The origin code after the AS path: "igp" -> "i", "egp" -> "e", anything else "?".
std::string OriginCode(std::string_view origin);
// "IGP", "EGP", "incomplete"; other text as given (control characters escaped).
std::string OriginName(std::string_view origin);

// The number of a decision step as bagd evaluates them (rib/decision.h): "local-pref" 1,
// "as-path-length" 2, "origin" 3, "med" 4, "ebgp-over-ibgp" 5, "router-id" 6,
// "cluster-list-length" 7, "peer-address" 8, "path-id" 9; 0 for a name it does not know.
int DecisionStepNumber(std::string_view step);

// The status flags of a path in the table: "*>" best, "*=" multipath, "* " otherwise.
std::string RouteFlags(const RoutePath& path);
// Why a path is not the best one: "not best: longer AS path (step 2 as-path-length)".
// Empty for the best path.
std::string NotBestText(const RoutePath& path);

// A column of a text table: its header, whether it is right-aligned, its minimum width.
struct TableColumn {
  std::string header;
  bool right;
  size_t min_width;
};
// Rows (one cell per column) under a header line, columns `gap` blanks apart, each line
// starting with `indent`; no line ends in blanks. Widths count octets: cells are ASCII.
std::string RenderTable(const std::vector<TableColumn>& columns, const std::vector<std::vector<std::string>>& rows,
                        std::string_view indent = "", size_t gap = 1);
// Left-aligned columns with these headers (`bagctl show bfd`, `show bmp`).
std::vector<TableColumn> LeftColumns(const std::vector<std::string>& headers);

// How long ago `since_ms` was, at `now_ms` (Unix ms): "42s", "3m05s", "2h10m", "3d04h"; "-"
// for no time.
std::string FormatAge(int64_t since_ms, int64_t now_ms);

// "1023 B", "1.5 KiB", "12.3 MiB", "2.0 GiB".
std::string FormatBytes(uint64_t bytes);

// All routes as a table, like FRR's `show ip bgp` / BIRD's `show route`: one line per
// path, the prefix on the first line of its paths, then the counts.
std::string RenderRouteTable(const ListRoutesResponse& response);
// One route with every path and all its attributes, like FRR's `show ip bgp PREFIX`, and
// the weighted next-hop group it uses ("Next-hop group 7") when it has one.
std::string RenderRouteDetail(const Route& route);
// The same for a view of one neighbor's routes (show routes --neighbor ADDR): VIEW_ACCEPTED
// as VIEW_RIB; VIEW_RECEIVED and VIEW_ADVERTISED paths went through no decision, so they
// have no best / not-best line, and advertised paths say "to" the neighbor.
using RouteView = control::v1::ListRoutesRequest::View;
std::string RenderRouteDetail(const Route& route, RouteView view);
// The attribute lines of a path (AS path and origin, next hop, local pref and MED, link
// bandwidth, communities, RFC 4456), each line starting with `indent`: what the route
// detail and `bagctl policy test` show of a path.
std::string RenderPathAttributes(const RoutePath& path, std::string_view indent);
// RenderRouteTable as the pages of a ListRoutes stream arrive, so bagctl holds one page and
// never the whole table: the legend and the header with the first route, each page's lines
// as it comes, the counts at the end. Columns are as wide as the first page needs (at
// least their minimum) and only ever widen when a later page needs more, so one page
// renders exactly as RenderRouteTable.
class RouteTableWriter {
 public:
  explicit RouteTableWriter(std::ostream& out) : out_(out) {}
  void Add(const ListRoutesResponse& page);
  // The counts line ("Displayed N prefixes and M paths", or the --limit variant).
  void Finish(bool truncated);
  uint64_t prefixes() const { return prefixes_; }

 private:
  std::ostream& out_;
  std::vector<size_t> widths_;  // empty until the header is written
  uint64_t prefixes_ = 0;
  uint64_t paths_ = 0;
};

// `bagctl show routes --json` as the pages arrive: one JSON object with the same fields as
// RenderProtoJson(ListRoutesResponse) of all pages together ({"routes": [...],
// "truncated": ...}), written route by route; one page gives exactly RenderProtoJson's text.
class RouteJsonWriter {
 public:
  explicit RouteJsonWriter(std::ostream& out) : out_(out) {}
  absl::Status Add(const ListRoutesResponse& page);
  void Finish(bool truncated);

 private:
  std::ostream& out_;
  uint64_t routes_ = 0;
};

// Per family, per peer, attribute sets and memory.
std::string RenderRibSummary(const RibSummary& summary);

}  // namespace bagd::bagctl
