#include "bgpd/daemon/weight_events.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace bagd::daemon {
namespace {

std::string Rate(double bps) {
  if (bps >= 1e9) return absl::StrFormat("%gG", bps / 1e9);
  if (bps >= 1e6) return absl::StrFormat("%gM", bps / 1e6);
  return absl::StrFormat("%g", bps);
}

}  // namespace

void WeightEventReporter::Report(const rib::FibUpdate& update, const rib::NextHopGroupRegistry& groups,
                                 Context context, int64_t now_unix_ms) {
  const rib::GroupBudget* budget = groups.budget();
  rib::GroupBudgetTotals totals;
  if (budget != nullptr) totals = budget->Totals();
  auto base = [&] {
    control::v1::Event out;
    out.set_time_unix_ms(now_unix_ms);
    control::v1::WeightsEvent& w = *out.mutable_weights();
    if (budget != nullptr) {
      w.set_budget_wanted(totals.wanted);
      w.set_budget_installed(totals.installed);
      w.set_budget_merged(totals.merged);
    }
    return out;
  };

  for (const rib::FibGroup& g : update.group_upserts) {
    const rib::NextHopGroup* known = groups.Find(g.id);
    std::vector<Member> now;
    now.reserve(g.members.size());
    for (const rib::FibGroupMember& m : g.members) {
      Member n{m.next_hop, m.weight, 0, 0};
      if (known != nullptr) {
        auto it = std::find_if(known->members.begin(), known->members.end(),
                               [&](const rib::NextHopGroup::Member& k) { return k.next_hop == m.next_hop; });
        if (it != known->members.end()) {
          n.bps = it->bps;
          n.applied_bps = it->hold.applied();
        }
      }
      now.push_back(n);
    }
    auto [slot, inserted] = last_.try_emplace(g.id);
    const std::vector<Member> before = inserted ? std::vector<Member>{} : std::move(slot->second);
    slot->second = now;
    if (!sink_) continue;

    control::v1::Event out = base();
    control::v1::WeightsEvent& w = *out.mutable_weights();
    w.set_group(g.id);
    if (known != nullptr) {
      w.set_family(net::FamilyName(known->family));
      w.set_prefixes(known->prefixes);
    }
    // Every next hop before or after, by next hop (both lists are sorted by it).
    bool left = false, joined = false, bandwidth = false;
    std::string detail;
    size_t i = 0, j = 0;
    while (i < before.size() || j < now.size()) {
      control::v1::WeightChange& c = *w.add_members();
      const bool take_old = j == now.size() || (i < before.size() && before[i].next_hop < now[j].next_hop);
      const bool take_new = i == before.size() || (j < now.size() && now[j].next_hop < before[i].next_hop);
      if (take_old) {
        c.set_next_hop(before[i].next_hop.ToString());
        c.set_old_weight(before[i].weight);
        c.set_old_bandwidth_bps(before[i].bps);
        if (!inserted) left = true;
        absl::StrAppend(&detail, detail.empty() ? "" : ", ", before[i].next_hop.ToString(), " left");
        ++i;
        continue;
      }
      c.set_next_hop(now[j].next_hop.ToString());
      c.set_new_weight(now[j].weight);
      c.set_bandwidth_bps(now[j].bps);
      c.set_applied_bandwidth_bps(now[j].applied_bps);
      if (take_new) {
        if (!inserted) {
          joined = true;
          absl::StrAppend(&detail, detail.empty() ? "" : ", ", now[j].next_hop.ToString(), " joined");
        }
        ++j;
        continue;
      }
      c.set_old_weight(before[i].weight);
      c.set_old_bandwidth_bps(before[i].bps);
      if (before[i].applied_bps != now[j].applied_bps) {
        bandwidth = true;
        absl::StrAppend(&detail, detail.empty() ? "" : ", ", now[j].next_hop.ToString(), " ",
                        Rate(before[i].applied_bps), " -> ", Rate(now[j].applied_bps));
      } else if (before[i].bps != now[j].bps) {
        bandwidth = true;
        absl::StrAppend(&detail, detail.empty() ? "" : ", ", now[j].next_hop.ToString(), " advertises ",
                        Rate(now[j].bps), " (held at ", Rate(now[j].applied_bps), ")");
      }
      ++i;
      ++j;
    }
    const char* cause = "other";
    if (inserted) {
      cause = "new-group";
    } else if (left) {
      cause = "next-hop-down";
    } else if (joined) {
      cause = "next-hop-up";
    } else if (context == Context::kReload) {
      cause = "reload";
    } else if (context == Context::kHoldDownExpiry) {
      cause = "hold-down-expiry";
    } else if (context == Context::kEarlyCheck) {
      cause = "early-reweight-check";
    } else if (context == Context::kLocalCapacity) {
      cause = "local-capacity";
    } else if (bandwidth) {
      cause = "link-bandwidth";
    } else if (budget != nullptr) {
      cause = "budget";  // the same members and bandwidths: the budget moved the weights
    }
    w.set_cause(cause);
    w.set_detail(detail);
    sink_->Publish(std::move(out));
  }

  for (rib::GroupId id : update.group_deletes) {
    auto it = last_.find(id);
    if (it == last_.end()) continue;
    const std::vector<Member> before = std::move(it->second);
    last_.erase(it);
    if (!sink_) continue;
    control::v1::Event out = base();
    control::v1::WeightsEvent& w = *out.mutable_weights();
    w.set_group(id);
    w.set_cause("group-removed");
    for (const Member& m : before) {
      control::v1::WeightChange& c = *w.add_members();
      c.set_next_hop(m.next_hop.ToString());
      c.set_old_weight(m.weight);
      c.set_old_bandwidth_bps(m.bps);
    }
    sink_->Publish(std::move(out));
  }
}

}  // namespace bagd::daemon
