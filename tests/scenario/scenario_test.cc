// Scenario tests: the routing core (RIB, decision, multipath, weights, next-hop groups,
// hold-down) driven from files in tests/data/scenario/ on a fake clock, with a recording FIB.
// What runs is the daemon's own daemon::Pipeline, fed UPDATEs as the Speaker feeds it, its
// weights batch and hold-down timers on a ManualClock: the timings checked are the daemon's.
// The language is described in tests/data/scenario/README.md.
#include <catch2/catch.hpp>

#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "bgpd/daemon/pipeline.h"
#include "bgpd/session/clock.h"
#include "bgpd/session/log.h"
#include "wire/message.h"
#include "conf/rate_text.h"
#include "rib/weights/nexthop_group_registry.h"
#include "tests/daemon/null_outbound.h"
#include "tests/daemon/posted_tasks.h"
#include "tests/scenario/recording_fib.h"

namespace bagd::test {
namespace {

namespace fs = std::filesystem;

struct ScenarioError {
  std::string message;
};

absl::Duration ParseDuration(const std::string& s) {
  absl::Duration d;
  if (!absl::ParseDuration(s, &d)) throw ScenarioError{absl::StrCat("bad duration '", s, "' (e.g. 30s, 500ms, 2m)")};
  return d;
}

double ParseRateOrThrow(const std::string& s) {
  auto r = conf::ParseRate(s);
  if (!r.ok()) throw ScenarioError{std::string(r.status().message())};
  return *r;
}

uint64_t ParseNumber(const std::string& s) {
  uint64_t v = 0;
  if (!absl::SimpleAtoi(s, &v)) throw ScenarioError{absl::StrCat("bad number '", s, "'")};
  return v;
}

// `count` consecutive prefixes of the same length starting at `first`.
std::vector<net::Nlri> Prefixes(const net::Prefix& first, uint64_t count) {
  std::vector<net::Nlri> out;
  std::array<uint8_t, 16> bytes{};
  std::memcpy(bytes.data(), first.bytes(), 16);
  const int len = first.length();
  for (uint64_t i = 0; i < count; ++i) {
    out.push_back(net::Nlri{net::Prefix::Make(first.afi(), bytes.data(), static_cast<uint8_t>(len)), 0});
    // Add one at bit `len - 1`.
    int bit = len - 1;
    while (bit >= 0) {
      const int byte = bit / 8;
      const uint8_t inc = static_cast<uint8_t>(0x80 >> (bit % 8));
      const uint8_t before = bytes[byte];
      bytes[byte] = static_cast<uint8_t>(bytes[byte] + inc);
      if (bytes[byte] > before) break;  // no carry
      bit = byte * 8 - 1;               // carry into the previous byte's last bit
    }
  }
  return out;
}

// A neighbor whose session is never up for export: the scenarios look at the FIB only.
class SilentNeighbor final : public NullOutbound {
 public:
  using NullOutbound::NullOutbound;
  void SendUpdates(std::vector<wire::Bytes>) override { FAIL("a scenario neighbor was sent an UPDATE"); }
};

// An established eBGP neighbor that records what it is sent (`listener`): per prefix the
// link bandwidth of its last announcement (nullopt: none), withdrawals, and the UPDATE count.
class ListeningNeighbor final : public daemon::Outbound {
 public:
  explicit ListeningNeighbor(std::string name) : name_(std::move(name)) {}
  const std::string& name() const override { return name_; }
  bool established() const override { return true; }
  bool ebgp() const override { return true; }
  bool family_negotiated(net::Family f) const override { return f == net::Family::kIpv4Unicast; }
  wire::CodecContext EncodeContext() const override {
    wire::CodecContext c;
    c.ebgp = true;
    return c;
  }
  std::optional<net::IpAddress> LocalAddress() const override { return *net::IpAddress::Parse("192.0.2.254"); }
  uint32_t advertisement_interval_s() const override { return 0; }
  void SendUpdates(std::vector<wire::Bytes> messages) override {
    for (const wire::Bytes& m : messages) {
      auto d = wire::DecodeMessage(m, EncodeContext());
      if (!d.ok() || !std::holds_alternative<wire::UpdateMessage>(d.value())) FAIL("undecodable UPDATE sent");
      const auto& u = std::get<wire::UpdateMessage>(d.value());
      if (u.nlri.empty() && u.withdrawn.empty()) continue;  // End-of-RIB
      ++updates;
      for (const net::Nlri& n : u.withdrawn) sent[n.prefix] = Sent{false, std::nullopt};
      std::optional<double> lb;
      if (const auto chosen = u.attrs.SelectedLinkBandwidth().chosen) lb = chosen->bits_per_second();
      for (const net::Nlri& n : u.nlri) sent[n.prefix] = Sent{true, lb};
    }
  }
  void SendRouteRefresh(const wire::RouteRefreshMessage&) override {}
  void Advertised(size_t) override {}

  struct Sent {
    bool announced = false;
    std::optional<double> lb;
  };
  std::map<net::Prefix, Sent> sent;
  size_t updates = 0;

 private:
  std::string name_;
};

constexpr int64_t kStartMs = 1'800'000'000'000;

class Scenario {
 public:
  Scenario() : clock_(kStartMs) { MakePipeline(rib::WeightsConfig{}); }

  void Run(const std::string& path) {
    std::ifstream in(path);
    REQUIRE(in.good());
    std::string line;
    int line_no = 0;
    while (std::getline(in, line)) {
      ++line_no;
      if (auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
      std::vector<std::string> w = absl::StrSplit(line, ' ', absl::SkipWhitespace());
      if (w.empty()) continue;
      INFO(path << ":" << line_no << ": " << line);
      try {
        Execute(w);
      } catch (const ScenarioError& e) {
        FAIL(e.message);
      }
    }
    Flush();
  }

 private:
  static rib::DecisionConfig Decision() {
    rib::DecisionConfig c;
    c.maximum_paths_ebgp = 16;
    c.maximum_paths_ibgp = 16;
    c.as_path_multipath_relax = true;
    return c;
  }

  absl::Time Now() const { return absl::FromUnixMillis(clock_.WallMs()); }
  const rib::NextHopGroupRegistry& registry() const { return pipeline_->weights().groups(); }
  void MakePipeline(const rib::WeightsConfig& c) {
    pipeline_ = std::make_unique<daemon::Pipeline>(65000, Decision(), c, clock_, &fib_, nullptr, nullptr, posted_.post());
  }

  // Consecutive announce/withdraw/down lines are one burst: one batch for the weights stage,
  // run at once (the daemon waits 2 ms for it; the scenarios' clock stands still).
  void Flush() {
    posted_.RunAll();  // the pipeline's posted hand-off, as the event loop would run it, then the batch
    pipeline_->WeighNow();
    CheckFib();
  }

  void CheckFib() {
    const std::string err = fib_.TakeErrors();
    if (!err.empty()) FAIL("FIB update out of order: " << err);
  }

  net::Prefix Prefix(const std::string& s) {
    auto p = net::Prefix::Parse(s);
    if (!p.ok()) throw ScenarioError{absl::StrCat("bad prefix '", s, "'")};
    return *p;
  }

  rib::PeerIndex PeerNamed(const std::string& name) {
    auto it = peers_.find(name);
    if (it == peers_.end()) throw ScenarioError{absl::StrCat("no peer '", name, "'")};
    return it->second;
  }

  void Execute(const std::vector<std::string>& w) {
    const std::string& cmd = w[0];
    const bool burst = cmd == "announce" || cmd == "withdraw" || cmd == "down";
    if (!burst) Flush();
    if (cmd == "peer") return AddPeer(w);
    if (cmd == "listener") return AddListener(w);
    if (cmd == "local-capacity") {
      // local-capacity SOURCE RATE: the source's members now add up to RATE (raw, as the
      // capacity stage reports it; damped by the pipeline)
      pipeline_->ObserveLocalCapacity(w.at(1), ParseRateOrThrow(w.at(2)));
      return CheckFib();
    }
    if (cmd == "local-source") {
      // local-source PEER SOURCE|none: a reload moves the neighbor to another LAG (or none)
      local_source_[PeerNamed(w.at(1))] = w.at(2) == "none" ? "" : w.at(2);
      ApplyLocalSources();
      return CheckFib();
    }
    if (cmd == "announce") return Announce(w);
    if (cmd == "withdraw") return Withdraw(w);
    if (cmd == "down") return pipeline_->SessionDown(PeerNamed(w.at(1)));
    if (cmd == "up") {
      // up NAME: the session of a peer that went down is established again (no routes yet)
      const rib::PeerIndex index = PeerNamed(w.at(1));
      return pipeline_->SessionUp(index, router_id_.at(w.at(1)));
    }
    if (cmd == "advance") return Advance(ParseDuration(w.at(1)));
    if (cmd == "damping" || cmd == "limits" || cmd == "missing" || cmd == "mode") return Configure(w);
    if (cmd == "budget") return Budget(w);
    if (cmd == "expect") return Expect(w);
    throw ScenarioError{absl::StrCat("unknown command '", cmd, "'")};
  }

  void ApplyLocalSources() {
    std::vector<std::string> by_peer;
    for (const auto& [index, source] : local_source_) {
      if (by_peer.size() <= index) by_peer.resize(index + 1);
      by_peer[index] = source;
    }
    pipeline_->SetLocalCapacitySources(by_peer);
  }

  // `peer`/`listener NAME ADDRESS AS`: an eBGP neighbor whose router id is its rank.
  rib::PeerInfo InfoOf(const std::vector<std::string>& w) {
    rib::PeerInfo info;
    auto a = net::IpAddress::Parse(w.at(2));
    if (!a.ok()) throw ScenarioError{absl::StrCat("bad address '", w.at(2), "'")};
    info.source.address = *a;
    info.source.ebgp = true;
    info.source.router_id = static_cast<uint32_t>(peers_.size() + 1);
    info.asn = static_cast<uint32_t>(ParseNumber(w.at(3)));
    info.name = w.at(1);
    return info;
  }

  void AddListener(const std::vector<std::string>& w) {
    // listener NAME ADDRESS AS
    const rib::PeerInfo info = InfoOf(w);
    listeners_.emplace_back(w.at(1));
    rib::LinkBandwidthExport lb;  // EXPORT_AUTO: cumulative when we are the next hop
    const rib::PeerIndex index =
        pipeline_->AddNeighbor(info, info.source.address, listeners_.back(), daemon::NeighborPolicies{}, lb);
    pipeline_->SessionUp(index, info.source.router_id);
    peers_[w.at(1)] = index;
    listener_of_[w.at(1)] = &listeners_.back();
  }

  ListeningNeighbor& ListenerNamed(const std::string& name) {
    auto it = listener_of_.find(name);
    if (it == listener_of_.end()) throw ScenarioError{absl::StrCat("no listener '", name, "'")};
    return *it->second;
  }

  void AddPeer(const std::vector<std::string>& w) {
    // peer NAME ADDRESS AS [local SOURCE]
    const rib::PeerInfo info = InfoOf(w);
    const net::IpAddress a = info.source.address;
    const uint32_t router_id = info.source.router_id;
    neighbors_.emplace_back(w.at(1));
    const rib::PeerIndex index =
        pipeline_->AddNeighbor(info, a, neighbors_.back(), daemon::NeighborPolicies{}, rib::LinkBandwidthExport{});
    pipeline_->SessionUp(index, router_id);
    peers_[w.at(1)] = index;
    router_id_[w.at(1)] = router_id;
    next_hop_[w.at(1)] = a;
    asn_[w.at(1)] = info.asn;
    if (w.size() >= 6 && w[4] == "local") {
      local_source_[index] = w[5];
      ApplyLocalSources();
    } else if (w.size() > 4) {
      throw ScenarioError{"peer NAME ADDRESS AS [local SOURCE]"};
    }
  }

  void Announce(const std::vector<std::string>& w) {
    // announce NAME PREFIX [count N] [lb RATE | lb-non-transitive RATE]
    const std::string& name = w.at(1);
    const rib::PeerIndex peer = PeerNamed(name);
    uint64_t count = 1;
    wire::PathAttributes a;
    a.origin = wire::Origin::kIgp;
    a.as_path = wire::AsPath{{{wire::AsSegmentType::kSequence, {asn_[name]}}}};
    a.next_hop = next_hop_[name];
    for (size_t i = 3; i + 1 < w.size(); i += 2) {
      if (w[i] == "count") {
        count = ParseNumber(w[i + 1]);
      } else if (w[i] == "lb" || w[i] == "lb-non-transitive") {
        a.extended_communities.push_back(
            wire::LinkBandwidth::FromBitsPerSecond(asn_[name], ParseRateOrThrow(w[i + 1]), w[i] == "lb")
                .ToExtendedCommunity());
      } else {
        throw ScenarioError{absl::StrCat("unknown announce option '", w[i], "'")};
      }
    }
    wire::UpdateMessage update;
    update.attrs = std::move(a);
    update.nlri = Prefixes(Prefix(w.at(2)), count);
    pipeline_->Ingest(peer, update);
  }

  void Withdraw(const std::vector<std::string>& w) {
    // withdraw NAME PREFIX [count N]
    const uint64_t count = w.size() >= 5 && w[3] == "count" ? ParseNumber(w[4]) : 1;
    wire::UpdateMessage update;
    update.withdrawn = Prefixes(Prefix(w.at(2)), count);
    pipeline_->Ingest(PeerNamed(w.at(1)), update);
  }

  void Advance(absl::Duration d) {
    // The weights stage's hold-down timer fires at every due time on the way.
    if (d < absl::ZeroDuration() || d % absl::Milliseconds(1) != absl::ZeroDuration()) {
      throw ScenarioError{"advance: a whole number of milliseconds, not negative"};
    }
    clock_.Advance(absl::ToInt64Milliseconds(d));
    CheckFib();
  }

  void Configure(const std::vector<std::string>& w) {
    rib::WeightsConfig c = registry().config();
    const std::string& what = w[0];
    if (what == "mode") {
      for (auto& p : c.policy) p.use_link_bandwidth = w.at(1) != "ignore";
    } else if (what == "missing") {
      for (auto& p : c.policy) {
        if (w.at(1) == "equal-cost") {
          p.missing = rib::MissingBandwidth::kEqualCost;
        } else if (w.at(1) == "skip") {
          p.missing = rib::MissingBandwidth::kSkip;
        } else if (w.at(1) == "default") {
          p.missing = rib::MissingBandwidth::kDefaultWeight;
          p.default_bps = ParseRateOrThrow(w.at(2));
        } else {
          throw ScenarioError{"missing: equal-cost, skip or default RATE"};
        }
      }
    } else {
      for (size_t i = 1; i < w.size(); ++i) {
        std::pair<std::string, std::string> kv = absl::StrSplit(w[i], absl::MaxSplits('=', 1));
        const auto& [k, v] = kv;
        if (k == "decrease_delay") c.damping.decrease_delay = ParseDuration(v);
        else if (k == "increase_hold_down") c.damping.increase_hold_down = ParseDuration(v);
        else if (k == "min_change_percent") c.damping.min_change_percent = static_cast<double>(ParseNumber(v));
        else if (k == "max_hold_down") c.damping.max_hold_down = ParseDuration(v);
        else if (k == "half_life") c.damping.half_life = ParseDuration(v);
        else if (k == "new_path_settle") c.damping.new_path_settle = ParseDuration(v);
        else if (k == "early_reweight" && (v == "on" || v == "off")) c.early.enabled = v == "on";
        else if (k == "early_reweight_check") c.early.check_delay = ParseDuration(v);
        else if (k == "max_weight") c.limits.max_weight = static_cast<uint32_t>(ParseNumber(v));
        else if (k == "budget") c.limits.budget = static_cast<uint32_t>(ParseNumber(v));
        else throw ScenarioError{absl::StrCat("unknown setting '", k, "'")};
      }
    }
    // Policies and limits change the target weights: every route is weighed again, at once
    // (as a reload does).
    pipeline_->ReconfigureWeights(c, /*reweigh=*/what != "damping");
    CheckFib();
  }

  void Budget(const std::vector<std::string>& w) {
    // budget max_groups=N [reserve=N] [merge=same-next-hops|subset|superset] [weight=prefixes|bandwidth]
    // Before any peer: the pipeline is built with it (bagd starting with the limit). After:
    // a reload (on, changed or off: max_groups=0), with the FIB's limit set first as the
    // FIB stage's is.
    rib::WeightsConfig c = registry().config();
    if (!peers_.empty()) c.budget = rib::GroupBudgetConfig{};
    c.budget.improve_after = c.damping.increase_hold_down;
    c.budget.min_gain = c.damping.min_change_percent / 100;
    for (size_t i = 1; i < w.size(); ++i) {
      std::pair<std::string, std::string> kv = absl::StrSplit(w[i], absl::MaxSplits('=', 1));
      const auto& [k, v] = kv;
      if (k == "max_groups") c.budget.max_groups = static_cast<uint32_t>(ParseNumber(v));
      else if (k == "reserve") c.budget.reserve = static_cast<uint32_t>(ParseNumber(v));
      else if (k == "merge" && v == "same-next-hops") c.budget.scope = rib::MergeScope::kSameNextHops;
      else if (k == "merge" && v == "subset") c.budget.scope = rib::MergeScope::kSubset;
      else if (k == "merge" && v == "superset") c.budget.scope = rib::MergeScope::kSuperset;
      else if (k == "weight" && v == "prefixes") c.budget.weight_by = rib::MergeWeight::kPrefixes;
      else if (k == "weight" && v == "bandwidth") c.budget.weight_by = rib::MergeWeight::kBandwidth;
      else throw ScenarioError{absl::StrCat("unknown budget setting '", w[i], "'")};
    }
    fib_.set_limit(c.budget.max_groups);
    if (peers_.empty()) {
      MakePipeline(c);
    } else {
      pipeline_->ReconfigureWeights(c, /*reweigh=*/true);
      CheckFib();
    }
  }

  const rib::GroupServing& ServingOf(const net::Prefix& p) {
    const rib::NextHopGroup* g = registry().GroupOf(p);
    if (!g) throw ScenarioError{absl::StrCat(p.ToString(), " has no group")};
    if (!registry().budget()) throw ScenarioError{"no group budget (budget max_groups=N first)"};
    serving_ = registry().budget()->Serving(g->id);
    if (!serving_) throw ScenarioError{absl::StrCat(p.ToString(), ": its group is not in the budget")};
    return *serving_;
  }

  const rib::NextHopGroup::Member& MemberOf(const net::Prefix& p, const std::string& nh) {
    const rib::NextHopGroup* g = registry().GroupOf(p);
    if (!g) throw ScenarioError{absl::StrCat(p.ToString(), " has no group")};
    for (const auto& m : g->members) {
      if (m.next_hop.ToString() == nh) return m;
    }
    throw ScenarioError{absl::StrCat(p.ToString(), ": no member ", nh)};
  }

  void Expect(const std::vector<std::string>& w) {
    const std::string& what = w.at(1);
    if (what == "weights") {
      // expect weights PREFIX NH=W ... (exactly the installed members)
      const net::Prefix p = Prefix(w.at(2));
      const auto* members = fib_.GroupOfRoute(p);
      if (!members) throw ScenarioError{absl::StrCat(p.ToString(), " is not in the FIB")};
      std::string got, want;
      for (const auto& m : *members) absl::StrAppend(&got, got.empty() ? "" : " ", m.next_hop.ToString(), "=", m.weight);
      for (size_t i = 3; i < w.size(); ++i) absl::StrAppend(&want, want.empty() ? "" : " ", w[i]);
      CHECK(got == want);
    } else if (what == "merged" || what == "own") {
      // expect merged PREFIX [error PERCENT] | expect own PREFIX (served by its own weights)
      const rib::GroupServing& sv = ServingOf(Prefix(w.at(2)));
      CHECK(sv.slot != 0);
      CHECK(sv.merged == (what == "merged"));
      if (w.size() >= 5 && w[3] == "error") {
        double pct = 0;
        if (!absl::SimpleAtod(absl::StripSuffix(w[4], "%"), &pct)) throw ScenarioError{"error PERCENT, e.g. 12.5%"};
        CHECK(sv.error * 100 == Approx(pct).margin(0.01));
      }
    } else if (what == "installed") {
      // expect installed N: groups in the FIB (with a budget: its slots)
      CHECK(fib_.group_count() == ParseNumber(w.at(2)));
      if (registry().budget()) CHECK(registry().budget()->installed() == ParseNumber(w.at(2)));
    } else if (what == "budget") {
      // expect budget wanted=N merged=N unrouted=N
      if (!registry().budget()) throw ScenarioError{"no group budget"};
      const rib::GroupBudgetTotals t = registry().budget()->Totals();
      for (size_t i = 2; i < w.size(); ++i) {
        std::pair<std::string, std::string> kv = absl::StrSplit(w[i], absl::MaxSplits('=', 1));
        const size_t want = ParseNumber(kv.second);
        if (kv.first == "wanted") CHECK(t.wanted == want);
        else if (kv.first == "merged") CHECK(t.merged == want);
        else if (kv.first == "unrouted") CHECK(t.unrouted_prefixes == want);
        else if (kv.first == "promotions") CHECK(t.promotions == want);
        else throw ScenarioError{absl::StrCat("unknown budget total '", kv.first, "'")};
      }
    } else if (what == "no-route") {
      CHECK(fib_.GroupOfRoute(Prefix(w.at(2))) == nullptr);
    } else if (what == "ops") {
      // expect ops groups=N routes=N (FIB operations since the last `expect ops`)
      const auto [groups, routes] = fib_.TakeOps();
      for (size_t i = 2; i < w.size(); ++i) {
        std::pair<std::string, std::string> kv = absl::StrSplit(w[i], absl::MaxSplits('=', 1));
        const size_t want = ParseNumber(kv.second);
        if (kv.first == "groups") CHECK(groups == want);
        else if (kv.first == "routes") CHECK(routes == want);
        else throw ScenarioError{absl::StrCat("unknown ops counter '", kv.first, "'")};
      }
    } else if (what == "groups") {
      // Without a budget the FIB has every group the routes want; with one, see `installed`.
      CHECK(registry().group_count() == ParseNumber(w.at(2)));
      if (!registry().budget()) CHECK(fib_.group_count() == ParseNumber(w.at(2)));
    } else if (what == "routes") {
      CHECK(fib_.route_count() == ParseNumber(w.at(2)));
    } else if (what == "state") {
      // expect state PREFIX NH STATE [in DURATION]
      const auto& m = MemberOf(Prefix(w.at(2)), w.at(3));
      CHECK(std::string(rib::HoldDownStateName(m.hold.state())) == w.at(4));
      if (w.size() >= 7 && w[5] == "in") {
        // "in 30s" exactly, "in ~85s" within a second
        const bool approx = w[6][0] == '~';
        const absl::Duration want = ParseDuration(approx ? w[6].substr(1) : w[6]);
        const absl::Duration got = m.hold.due() - Now();
        INFO("due in " << absl::FormatDuration(got));
        if (approx) {
          CHECK(absl::AbsDuration(got - want) <= absl::Seconds(1));
        } else {
          CHECK(got == want);
        }
      }
    } else if (what == "counters") {
      const rib::WeightCounters& c = registry().counters();
      for (size_t i = 2; i < w.size(); ++i) {
        std::pair<std::string, std::string> kv = absl::StrSplit(w[i], absl::MaxSplits('=', 1));
        const uint64_t want = ParseNumber(kv.second);
        if (kv.first == "applied") CHECK(c.applied == want);
        else if (kv.first == "held") CHECK(c.held == want);
        else if (kv.first == "suppressed") CHECK(c.suppressed == want);
        else throw ScenarioError{absl::StrCat("unknown counter '", kv.first, "'")};
      }
    } else if (what == "sent") {
      // expect sent LISTENER PREFIX lb RATE | no-lb | withdrawn | nothing
      ListeningNeighbor& l = ListenerNamed(w.at(2));
      const net::Prefix p = Prefix(w.at(3));
      auto it = l.sent.find(p);
      const std::string& want = w.at(4);
      if (want == "nothing") {
        CHECK(it == l.sent.end());
        return;
      }
      if (it == l.sent.end()) throw ScenarioError{absl::StrCat(w.at(2), " was sent nothing for ", p.ToString())};
      if (want == "withdrawn") {
        CHECK_FALSE(it->second.announced);
      } else if (want == "no-lb") {
        CHECK(it->second.announced);
        CHECK_FALSE(it->second.lb.has_value());
      } else if (want == "lb") {
        CHECK(it->second.announced);
        REQUIRE(it->second.lb.has_value());
        // The community holds a float32 of bytes/s: compare at its precision.
        CHECK(*it->second.lb == Approx(ParseRateOrThrow(w.at(5))).epsilon(1e-6));
      } else {
        throw ScenarioError{"expect sent LISTENER PREFIX lb RATE | no-lb | withdrawn | nothing"};
      }
    } else if (what == "updates") {
      // expect updates LISTENER N: UPDATEs sent to it since the last `expect updates`
      ListeningNeighbor& l = ListenerNamed(w.at(2));
      CHECK(l.updates == ParseNumber(w.at(3)));
      l.updates = 0;
    } else if (what == "applied") {
      // expect applied PREFIX NH RATE (local|advertised): the bandwidth its weight is
      // computed from, and whether the local link decides it
      const auto& m = MemberOf(Prefix(w.at(2)), w.at(3));
      CHECK(m.effective == Approx(ParseRateOrThrow(w.at(4))));
      if (w.size() >= 6) {
        if (w[5] != "local" && w[5] != "advertised") throw ScenarioError{"expect applied PREFIX NH RATE local|advertised"};
        CHECK(m.local_capped == (w[5] == "local"));
      }
    } else if (what == "same-group") {
      // expect same-group PREFIX PREFIX
      const auto* a = registry().GroupOf(Prefix(w.at(2)));
      const auto* b = registry().GroupOf(Prefix(w.at(3)));
      REQUIRE(a != nullptr);
      CHECK(a == b);
    } else if (what == "group-id") {
      // expect group-id PREFIX N: ids stay across reweights
      const auto* g = registry().GroupOf(Prefix(w.at(2)));
      REQUIRE(g != nullptr);
      CHECK(g->id == ParseNumber(w.at(3)));
    } else {
      throw ScenarioError{absl::StrCat("unknown expectation '", what, "'")};
    }
  }

  session::ManualClock clock_;
  RecordingFib fib_;
  std::deque<SilentNeighbor> neighbors_;  // outlive the pipeline, which points at them
  std::deque<ListeningNeighbor> listeners_;
  std::map<std::string, ListeningNeighbor*> listener_of_;
  std::map<rib::PeerIndex, std::string> local_source_;  // `peer ... local SOURCE`
  PostedTasks posted_;  // the pipeline's posted hand-off, run by Flush
  std::unique_ptr<daemon::Pipeline> pipeline_;
  std::optional<rib::GroupServing> serving_;
  std::map<std::string, rib::PeerIndex> peers_;
  std::map<std::string, net::IpAddress> next_hop_;
  std::map<std::string, uint32_t> asn_;
  std::map<std::string, uint32_t> router_id_;
};

TEST_CASE("scenarios from tests/data/scenario", "[scenario]") {
  log::SetLevel(log::Level::kError);  // the pipeline's info lines (sessions up) are noise here
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(BAGD_SCENARIO_DIR)) {
    if (e.path().extension() == ".scenario") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  REQUIRE(files.size() >= 8);
  for (const auto& f : files) {
    DYNAMIC_SECTION(f.filename().string()) {
      Scenario s;
      s.Run(f.string());
    }
  }
  log::SetLevel(log::Level::kInfo);
}

}  // namespace
}  // namespace bagd::test
