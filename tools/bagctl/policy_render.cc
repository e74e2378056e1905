#include "tools/bagctl/policy_render.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "tools/bagctl/neighbor_render.h"
#include "tools/bagctl/route_render.h"

namespace bagd::bagctl {
namespace {

std::string JoinPrintable(const google::protobuf::RepeatedPtrField<std::string>& items) {
  std::vector<std::string> shown;
  for (const std::string& s : items) shown.push_back(Printable(s));
  return absl::StrJoin(shown, ", ");
}

// policy::Trace::ToString's line for one statement, without the policy's name.
std::string TraceLine(const control::v1::PolicyStatementTrace& t) {
  const std::string conditions = JoinPrintable(t.conditions());
  if (t.matched()) {
    std::string line = "matched";
    if (!conditions.empty()) absl::StrAppend(&line, " (", conditions, ")");
    if (!t.applied().empty()) absl::StrAppend(&line, ": ", JoinPrintable(t.applied()));
    return line;
  }
  return absl::StrCat("no match (", conditions.empty() ? Printable(t.failed_condition()) : conditions, ")");
}

std::string SourceText(const control::v1::TestPolicyResponse& r) {
  if (r.source() == "local") return "a local route";
  const std::string kind = r.source() == "ibgp" ? "iBGP" : "eBGP";
  if (r.neighbor().empty()) return absl::StrCat("an ", kind, " route from no neighbor");
  return absl::StrCat("an ", kind, " route from ", Printable(r.neighbor()));
}

}  // namespace

std::string RenderPolicyTest(const control::v1::TestPolicyResponse& r) {
  std::string out = absl::StrCat("Policy ", Printable(r.policy()), " on ", Printable(r.prefix()), ", ", SourceText(r),
                                 ":\n");
  for (const auto& t : r.trace()) absl::StrAppend(&out, "  ", Printable(t.statement()), ": ", TraceLine(t), "\n");
  if (r.trace().empty()) out += "  (the policy has no statements)\n";
  absl::StrAppend(&out, "Verdict: ", Printable(r.verdict()));
  if (!r.statement().empty()) absl::StrAppend(&out, " (statement ", Printable(r.statement()), ")");
  if (r.verdict() == "no decision") out += ": the next policy of the chain, or the neighbor's default, decides";
  out += "\n\nRoute tested:\n";
  out += RenderPathAttributes(r.route(), "  ");
  if (r.verdict() == "reject") {
    out += "\nRejected: no action is applied.\n";
  } else if (!r.modified()) {
    out += "\nAttributes after the policy: unchanged\n";
  } else {
    out += "\nAttributes after the policy:\n";
    out += RenderPathAttributes(r.result(), "  ");
  }
  std::vector<std::string> deferred;
  if (r.next_hop_self()) deferred.push_back("next-hop self");
  if (!r.link_bandwidth_export().empty()) deferred.push_back(absl::StrCat("link-bandwidth ", Printable(r.link_bandwidth_export())));
  if (!deferred.empty() && r.verdict() != "reject") {
    absl::StrAppend(&out, "Left to the export stage: ", absl::StrJoin(deferred, ", "), "\n");
  }
  return out;
}

std::string RenderPolicyCounters(const control::v1::ListPoliciesResponse& response) {
  if (response.policies().empty()) return "No policies are defined.\n";
  const std::vector<TableColumn> columns = {
      {"Policy", false, 6}, {"#", true, 2}, {"Statement", false, 9}, {"Hits", true, 10}};
  std::vector<std::vector<std::string>> rows;
  for (const auto& p : response.policies()) {
    if (p.statements().empty()) rows.push_back({Printable(p.name()), "", "(no statements)", ""});
    for (int i = 0; i < p.statements_size(); ++i) {
      const auto& s = p.statements(i);
      rows.push_back({i == 0 ? Printable(p.name()) : "", absl::StrCat(i + 1), Printable(s.name()), absl::StrCat(s.hits())});
    }
  }
  return RenderTable(columns, rows) +
         "\nHits: routes whose conditions all held at the statement since the policies were loaded (start or "
         "reload);\nbagctl policy test does not count.\n";
}

}  // namespace bagd::bagctl
