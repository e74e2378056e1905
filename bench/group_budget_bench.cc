// The next-hop-group count budget (rib/weights/group_budget.h) on a table that wants many
// groups: 100k prefixes over 8 next hops whose bandwidth differs per prefix, as the
// capacity a degraded LAG leaves (8 members of 100G, 400G or 800G per next hop, k of them
// down for that destination). For budgets 128 / 512 / 2048, side by side on the same input:
// least-error merging (GroupBudget), first-fit (the first installed group with the same next
// hops) and plain ECMP for the groups that do not fit. Reports the worst and the
// traffic-weighted share error, the time GroupBudget takes to decide (median of 5 fresh
// runs), and the FIB operations one LAG member loss costs (next hop 1 loses a member for
// every prefix), next to the same loss without a budget. Prints markdown for
// docs/benchmarks.md. Deterministic input (fixed seed). Arguments: the budgets to run
// (default 128 512 2048), e.g. one budget under a profiler. `--digest` prints instead a
// digest of every decision (the FIB updates and each wanted group's slot and error) for the
// same budgets, for same-named scopes and weightings, and on a variant of the input where some
// prefixes lack a next hop (several next-hop sets): a change to the placement that must make
// the same choices shows the same digests before and after. Then the arrival-order case
// (issue 40): the same table with next hop 8 coming up last for 90 % of the prefixes; the
// worst error right after, after the revisits (swaps) and for a fresh placement of the same
// groups, and the CPU time of each revisit (`--no-arrival`: without it, `--arrival-only`:
// only it).
//
//   build-bench/bench/group_budget_bench [--digest] [--no-arrival | --arrival-only] [BUDGET...]
#include <algorithm>
#include <cstring>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "rib/weights/group_budget.h"
#include "rib/weights/group_budget_baselines.h"
#include "rib/weights/quantize.h"

using namespace bagd;
using namespace bagd::rib;

namespace {

constexpr int kPrefixes = 100000;
constexpr int kNextHops = 8;
constexpr uint64_t kSeed = 20261202;
constexpr double kGbps = 1e9 / 8;

// Members down on one next hop's LAG for one prefix: mostly none, sometimes a few.
int MembersDown(std::mt19937_64& rng) {
  const int r = std::uniform_int_distribution<int>(0, 99)(rng);
  if (r < 40) return 0;
  if (r < 70) return 1;
  if (r < 88) return 2;
  return 3;
}

struct Input {
  std::vector<std::array<int, kNextHops>> down;  // per prefix
  std::array<double, kNextHops> speed{};          // one LAG member, bytes/s
};

Input MakeInput() {
  std::mt19937_64 rng(kSeed);
  Input in;
  static constexpr double kSpeeds[] = {100, 400, 800};
  for (int j = 0; j < kNextHops; ++j) in.speed[j] = kSpeeds[j % 3] * kGbps;
  in.down.resize(kPrefixes);
  for (auto& d : in.down) {
    for (int j = 0; j < kNextHops; ++j) d[j] = MembersDown(rng);
  }
  return in;
}

net::Prefix PrefixOf(int i) {
  const uint8_t b[16] = {10, static_cast<uint8_t>(i >> 16), static_cast<uint8_t>(i >> 8), static_cast<uint8_t>(i)};
  return net::Prefix::Make(net::Afi::kIpv4, b, 32);
}

// The registry's view: one wanted group per distinct bandwidth vector (its key is the exact
// bandwidths), with the weights Quantize gives (16-bit kernel weights, no sum limit).
using Members = std::vector<FibGroupMember>;

Members WeightsOf(const Input& in, const std::array<int, kNextHops>& down) {
  std::vector<double> bw;
  for (int j = 0; j < kNextHops; ++j) bw.push_back((8 - down[j]) * in.speed[j]);
  const QuantizedWeights q = Quantize(bw, QuantizeLimits{});
  Members m;
  for (int j = 0; j < kNextHops; ++j) {
    m.push_back(FibGroupMember{*net::IpAddress::Parse(absl::StrCat("192.0.2.", j + 1)), q.weights[j]});
  }
  return m;
}

// The weights of `down` over next hops 1..`hops` only (the others not up yet).
Members WeightsOver(const Input& in, const std::array<int, kNextHops>& down, int hops) {
  std::vector<double> bw;
  for (int j = 0; j < hops; ++j) bw.push_back((8 - down[j]) * in.speed[j]);
  const QuantizedWeights q = Quantize(bw, QuantizeLimits{});
  Members m;
  for (int j = 0; j < hops; ++j) {
    m.push_back(FibGroupMember{*net::IpAddress::Parse(absl::StrCat("192.0.2.", j + 1)), q.weights[j]});
  }
  return m;
}

struct Table {
  std::vector<std::array<int, kNextHops>> keys;  // by id - 1
  std::vector<Members> members;
  std::vector<GroupId> route;
  std::vector<uint32_t> prefixes;  // per group
};

Table Build(const Input& in) {
  Table t;
  std::map<std::array<int, kNextHops>, GroupId> id_of;
  for (const auto& d : in.down) {
    auto [it, fresh] = id_of.try_emplace(d, static_cast<GroupId>(t.keys.size() + 1));
    if (fresh) {
      t.keys.push_back(d);
      t.members.push_back(WeightsOf(in, d));
      t.prefixes.push_back(0);
    }
    t.route.push_back(it->second);
    ++t.prefixes[it->second - 1];
  }
  return t;
}

FibUpdate FullUpdate(const Table& t) {
  FibUpdate u;
  for (size_t i = 0; i < t.members.size(); ++i) u.group_upserts.push_back(FibGroup{static_cast<GroupId>(i + 1), t.members[i]});
  for (int p = 0; p < kPrefixes; ++p) u.route_upserts.emplace_back(PrefixOf(p), t.route[p]);
  return u;
}

// Next hop 1 loses one LAG member for every prefix: each wanted group is re-keyed in place
// (no two old keys meet: k < 4 before), as the registry does when all its prefixes move.
FibUpdate MemberLoss(const Input& in, const Table& t) {
  FibUpdate u;
  for (size_t i = 0; i < t.keys.size(); ++i) {
    auto k = t.keys[i];
    k[0] += 1;
    u.group_upserts.push_back(FibGroup{static_cast<GroupId>(i + 1), WeightsOf(in, k)});
  }
  return u;
}

double One(GroupId) { return 1; }

// The variant for --digest: every 10th prefix's table loses one next hop (one of three,
// by prefix), so the wanted groups fall into several next-hop sets.
FibUpdate DropNextHops(const Table& t) {
  FibUpdate u = FullUpdate(t);
  std::map<std::pair<GroupId, int>, GroupId> ids;
  GroupId next = static_cast<GroupId>(t.members.size() + 1);
  std::vector<FibGroup> extra;
  for (int p = 0; p < kPrefixes; p += 10) {
    const int drop = p / 10 % 3 * 3;  // next hop 0, 3 or 6
    const GroupId from = t.route[p];
    auto [it, fresh] = ids.try_emplace({from, drop}, next);
    if (fresh) {
      Members m = t.members[from - 1];
      m.erase(m.begin() + drop);
      uint32_t g = 0;
      for (const auto& x : m) g = std::gcd(g, x.weight);
      for (auto& x : m) x.weight /= g;
      extra.push_back(FibGroup{next++, std::move(m)});
    }
    u.route_upserts[p].second = it->second;
  }
  // Groups no route wants any more are not sent.
  std::vector<uint32_t> users(next, 0);
  for (const auto& [p, id] : u.route_upserts) ++users[id];
  std::erase_if(u.group_upserts, [&](const FibGroup& g) { return users[g.id] == 0; });
  u.group_upserts.insert(u.group_upserts.end(), extra.begin(), extra.end());
  return u;
}

// FNV-1a over the decisions: stable across builds and runs.
struct Digest {
  uint64_t h = 1469598103934665603ull;
  void Bytes(const void* p, size_t n) {
    for (size_t i = 0; i < n; ++i) h = (h ^ static_cast<const uint8_t*>(p)[i]) * 1099511628211ull;
  }
  template <typename T>
  void Add(const T& v) {
    Bytes(&v, sizeof v);
  }
  void Add(const FibUpdate& u) {
    for (const FibGroup& g : u.group_upserts) {
      Add(g.id);
      for (const auto& m : g.members) {
        Bytes(m.next_hop.bytes(), m.next_hop.size());
        Add(m.weight);
      }
    }
    for (const auto& [p, id] : u.route_upserts) {
      Bytes(p.bytes(), 16);
      Add(id);
    }
    for (const auto& p : u.route_deletes) Bytes(p.bytes(), 16);
    for (const GroupId id : u.group_deletes) Add(id);
  }
};

int DigestMain(const std::vector<uint32_t>& budgets, const Table& t, const FibUpdate& full, const FibUpdate& loss) {
  const FibUpdate dropped = DropNextHops(t);
  const GroupId last = static_cast<GroupId>(t.members.size() * 2 + 1);
  for (const uint32_t budget : budgets) {
    for (const MergeScope scope : {MergeScope::kSameNextHops, MergeScope::kSubset, MergeScope::kSuperset}) {
      for (const MergeWeight by : {MergeWeight::kPrefixes, MergeWeight::kBandwidth}) {
        for (const bool drop : {false, true}) {
          if (!drop && scope != MergeScope::kSameNextHops) continue;  // one next-hop set: the same
          GroupBudgetConfig c;
          c.max_groups = budget;
          c.scope = scope;
          c.weight_by = by;
          GroupBudget b(c);
          auto bw = [](GroupId id) { return 1.0 + id % 7; };
          Digest d;
          d.Add(b.Apply(drop ? dropped : full, bw, absl::UnixEpoch()));
          if (!drop) d.Add(b.Apply(loss, bw, absl::UnixEpoch() + absl::Seconds(1)));
          for (GroupId id = 1; id < last; ++id) {
            if (auto s = b.Serving(id)) {
              d.Add(id);
              d.Add(s->slot);
              d.Add(s->error);
            }
          }
          const GroupBudgetTotals tot = b.Totals();
          std::printf("budget %u scope %s by %s%s: installed %zu merged %zu worst %.6f weighted %.6f digest %016llx\n",
                      budget, MergeScopeName(scope), by == MergeWeight::kPrefixes ? "prefixes" : "bandwidth",
                      drop ? " (some next hops dropped)" : "", tot.installed, tot.merged, tot.worst_error,
                      tot.weighted_error, static_cast<unsigned long long>(d.h));
        }
      }
    }
  }
  return 0;
}

double ThreadMs();
double Median(std::vector<double> v);

// The arrival-order case (issue 40): the same table, but next hop 8 is up for 90 % of the
// prefixes only (every 10th lacks it) and comes up last. While next hops 1-7 are up, their
// groups take every slot; when 8 comes up, 90 % of the prefixes move to a second next-hop
// set, which gets one slot at first (nothing else is free): the order the groups arrived in
// decides, unless revisits move slots between the two sets (swaps). Time then passes through
// every revisit the budget asks for (an hour at most), each an update of its own.
struct ArrivalResult {
  GroupBudgetTotals joined;  // right after next hop 8 came up
  GroupBudgetTotals settled;  // after the revisits
  double fresh_worst = 0;     // the final groups placed on an empty table
  double first_fit_worst = 0;
  size_t updates = 0;         // revisits that changed something
  size_t revisits = 0;        // updates the budget asked for
  size_t peak = 0;            // most groups in the FIB during any update
  absl::Duration settled_after;  // from next hop 8 coming up to the last change
  double revisit_ms_total = 0, revisit_ms_max = 0;
  std::vector<double> revisit_ms;
};

ArrivalResult Arrival(const Input& in, uint32_t budget, uint32_t swaps_per_revisit) {
  // Stage 1: next hops 1-7 for every prefix. Stage 2: next hop 8 joins 9 in 10 prefixes.
  // Keyed by the weights: the next hops are 1..n, in order.
  auto key_of = [](const Members& m) {
    std::vector<uint32_t> k;
    for (const auto& x : m) k.push_back(x.weight);
    return k;
  };
  std::map<std::vector<uint32_t>, GroupId> ids;
  std::vector<Members> members(1);  // by id
  std::vector<uint32_t> users(1);
  auto id_of = [&](const Members& m) {
    auto [it, fresh] = ids.try_emplace(key_of(m), static_cast<GroupId>(members.size()));
    if (fresh) {
      members.push_back(m);
      users.push_back(0);
    }
    return it->second;
  };
  std::vector<GroupId> route(kPrefixes);
  FibUpdate first;
  for (int p = 0; p < kPrefixes; ++p) {
    route[p] = id_of(WeightsOver(in, in.down[p], kNextHops - 1));
    ++users[route[p]];
    first.route_upserts.emplace_back(PrefixOf(p), route[p]);
  }
  for (GroupId id = 1; id < members.size(); ++id) first.group_upserts.push_back(FibGroup{id, members[id]});
  const GroupId first_new = static_cast<GroupId>(members.size());
  FibUpdate second;
  for (int p = 0; p < kPrefixes; ++p) {
    if (p % 10 == 0) continue;
    const GroupId id = id_of(WeightsOver(in, in.down[p], kNextHops));
    --users[route[p]];
    ++users[id];
    route[p] = id;
    second.route_upserts.emplace_back(PrefixOf(p), id);
  }
  for (GroupId id = first_new; id < members.size(); ++id) second.group_upserts.push_back(FibGroup{id, members[id]});
  for (GroupId id = 1; id < first_new; ++id) {
    if (users[id] == 0) second.group_deletes.push_back(id);
  }
  ArrivalResult r;
  GroupBudgetConfig c;
  c.max_groups = budget;
  c.swaps_per_revisit = swaps_per_revisit;
  GroupBudget b(c);
  const absl::Time t0 = absl::UnixEpoch();
  b.Apply(first, One, t0);
  r.peak = b.Totals().peak;
  const absl::Time joined = t0 + absl::Seconds(5);
  b.Apply(second, One, joined);
  r.peak = std::max(r.peak, b.Totals().peak);
  r.joined = b.Totals();
  absl::Time now = joined;
  absl::Time last_change = joined;
  while (auto due = b.NextDue(now)) {
    if (*due > joined + absl::Hours(1)) break;
    now = std::max(now, *due);
    const double t = ThreadMs();
    const FibUpdate u = b.Apply(FibUpdate{}, One, now);
    const double ms = ThreadMs() - t;
    r.revisit_ms.push_back(ms);
    r.revisit_ms_total += ms;
    r.revisit_ms_max = std::max(r.revisit_ms_max, ms);
    ++r.revisits;
    r.peak = std::max(r.peak, b.Totals().peak);
    if (!u.empty()) {
      ++r.updates;
      last_change = now;
    }
  }
  r.settled = b.Totals();
  r.settled_after = last_change - joined;
  // The same final groups, fresh; and first-fit in prefix order.
  FibUpdate all;
  std::vector<BaselineGroup> order;
  std::vector<uint32_t> seen(members.size(), 0);
  for (int p = 0; p < kPrefixes; ++p) {
    all.route_upserts.emplace_back(PrefixOf(p), route[p]);
    if (seen[route[p]]++ == 0) order.push_back(BaselineGroup{members[route[p]], 0});
  }
  for (auto& g : order) g.traffic = seen[ids.at(key_of(g.members))];
  for (GroupId id = 1; id < members.size(); ++id) {
    if (users[id] > 0) all.group_upserts.push_back(FibGroup{id, members[id]});
  }
  GroupBudget fresh(c);
  fresh.Apply(all, One, t0);
  r.fresh_worst = fresh.Totals().worst_error;
  r.first_fit_worst = FitFirstFit(order, budget - c.reserve).worst;
  return r;
}

void PrintArrival(const Input& in, const std::vector<uint32_t>& budgets) {
  std::printf("\nArrival order: next hops 1-7 up first, then next hop 8 for 9 in 10 prefixes "
              "(two next-hop sets; revisits for up to an hour after, each update timed)\n\n");
  std::printf("| budget | swaps per revisit | worst error when 8 joins | after revisits | fresh placement | ratio "
              "| first-fit | swaps | promotions | updates (asked) | settled after | revisit CPU ms: median, max, total "
              "| peak |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  std::vector<std::pair<uint32_t, uint32_t>> runs;  // (budget, swaps per revisit): 0 is the budget before swaps
  for (const uint32_t budget : budgets) {
    runs.emplace_back(budget, 0);
    runs.emplace_back(budget, GroupBudgetConfig{}.swaps_per_revisit);
  }
  for (const auto& [budget, per] : runs) {
    const ArrivalResult r = Arrival(in, budget, per);
    const double ratio = r.fresh_worst > 0 ? r.settled.worst_error / r.fresh_worst : 0;
    std::printf("| %u | %u%s | %.1f %% | %.1f %% | %.1f %% | %.2f | %.1f %% | %llu | %llu | %zu (%zu) | %s "
                "| %.1f, %.1f, %.0f | %zu |\n",
                budget, per, per == 0 ? " (no swaps)" : "", 100 * r.joined.worst_error, 100 * r.settled.worst_error,
                100 * r.fresh_worst, ratio, 100 * r.first_fit_worst, static_cast<unsigned long long>(r.settled.swaps),
                static_cast<unsigned long long>(r.settled.promotions), r.updates, r.revisits,
                absl::FormatDuration(r.settled_after).c_str(), r.revisit_ms.empty() ? 0.0 : Median(r.revisit_ms),
                r.revisit_ms_max, r.revisit_ms_total, r.peak);
  }
}

double ThreadMs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<uint32_t> budgets;
  bool digest = false;
  bool arrival = true;
  bool placement = true;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--digest") == 0) {
      digest = true;
    } else if (std::strcmp(argv[i], "--no-arrival") == 0) {
      arrival = false;
    } else if (std::strcmp(argv[i], "--arrival-only") == 0) {
      placement = false;
    } else {
      budgets.push_back(static_cast<uint32_t>(std::strtoul(argv[i], nullptr, 10)));
    }
  }
  if (budgets.empty()) budgets = {128, 512, 2048};
  const Input in = MakeInput();
  const Table t = Build(in);
  const FibUpdate full = FullUpdate(t);
  const FibUpdate loss = MemberLoss(in, t);
  if (digest) return DigestMain(budgets, t, full, loss);
  if (!placement) {
    PrintArrival(in, budgets);
    return 0;
  }
  size_t distinct_weights = 0;
  {
    std::map<std::vector<uint32_t>, int> seen;
    for (const auto& m : t.members) {
      std::vector<uint32_t> w;
      for (const auto& x : m) w.push_back(x.weight);
      distinct_weights += seen.try_emplace(w, 0).second;
    }
  }
  std::printf("%d prefixes over %d next hops (LAGs of 8 x 100G/400G/800G, 0-3 members down per prefix): "
              "%zu wanted groups, %zu distinct weight vectors\n\n",
              kPrefixes, kNextHops, t.members.size(), distinct_weights);
  std::vector<BaselineGroup> order;
  for (size_t i = 0; i < t.members.size(); ++i) order.push_back(BaselineGroup{t.members[i], double(t.prefixes[i])});
  const size_t no_budget_loss_ops = loss.group_upserts.size();

  std::printf("| budget | method | installed | worst error | weighted error | decide, CPU ms (median of 5) | member loss: FIB ops "
              "| worst error after |\n|---|---|---|---|---|---|---|---|\n");
  for (const uint32_t budget : budgets) {
    GroupBudgetConfig c;
    c.max_groups = budget;
    std::vector<double> ms;
    GroupBudgetTotals totals;
    size_t loss_ops = 0;
    GroupBudgetTotals after;
    for (int run = 0; run < 5; ++run) {
      GroupBudget b(c);
      // CPU time of this thread: the machine is shared, wall time measures the neighbours.
      const double t0 = ThreadMs();
      const FibUpdate out = b.Apply(full, One, absl::UnixEpoch());
      ms.push_back(ThreadMs() - t0);
      if (run == 0) {
        totals = b.Totals();
        const FibUpdate l = b.Apply(loss, One, absl::UnixEpoch() + absl::Seconds(1));
        loss_ops = l.operations();
        after = b.Totals();
      }
    }
    const size_t slots = budget - c.reserve;
    const BaselineFit ff = FitFirstFit(order, slots);
    const BaselineFit ecmp = FitEcmpOverflow(order, slots);
    std::printf("| %u | least-error | %zu | %.1f %% | %.2f %% | %.1f | %zu | %.1f %% |\n", budget, totals.installed,
                100 * totals.worst_error, 100 * totals.weighted_error, Median(ms), loss_ops, 100 * after.worst_error);
    std::printf("| %u | first-fit | %zu | %.1f %% | %.2f %% | | %zu (in place, one per installed group) | |\n", budget,
                ff.installed, 100 * ff.worst, 100 * ff.weighted, ff.installed);
    std::printf("| %u | ECMP overflow | %zu | %.1f %% | %.2f %% | | %zu (in place, one per installed group) | |\n",
                budget, ecmp.installed, 100 * ecmp.worst, 100 * ecmp.weighted, ecmp.installed);
  }
  std::printf("| none | exact groups | %zu | 0 %% | 0 %% | | %zu | |\n", t.members.size(), no_budget_loss_ops);
  if (arrival) PrintArrival(in, budgets);
  return 0;
}
