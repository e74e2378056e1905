// The routing policy engine: policies from the config (conf/bagd.proto Policy) compiled
// into immutable objects, and a pure evaluation of one route against one policy or a chain.
//
// Semantics (docs/policy.md): statements run in order; the first whose conditions all hold
// applies its actions; ACCEPT or REJECT ends the policy, NEXT goes on with the following
// statement on the modified attributes. A route that reaches the end gets kNoDecision: the
// next policy of the chain, then the chain's default, decides (RFC 8212 §3: reject for eBGP
// unless configured). Not wired into the speaker yet (issue 13).
//
// Cost: evaluation allocates nothing unless an action changes the attributes (then one copy
// of the PathAttributes) or a Trace is asked for. A policy that never looks at the prefix has
// depends_on_prefix() false: the export stage may evaluate it once per attribute set.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "wire/path_attributes.h"
#include "conf/bagd.pb.h"
#include "policy/defined_sets.h"

namespace bagd::policy {

enum class RouteSource : uint8_t { kEbgp, kIbgp, kLocal };

namespace internal {
struct Statement;
}

// What a run of evaluations of one route but for its prefix has in common (the prefixes of
// one UPDATE): each statement's conditions other than the prefix set, tested once while the
// attributes are the route's own (no action of an earlier statement changed them). Clear()
// it before a route that differs in anything but the prefix.
class ConditionMemo {
 public:
  void Clear() { rest_.clear(); }

 private:
  friend void EvaluateInto(const class CompiledPolicy&, const struct RouteContext&, struct PolicyResult&,
                           struct Trace*, uint64_t);
  std::vector<std::pair<const internal::Statement*, bool>> rest_;  // statement -> the rest held
};

// The route being evaluated. `attributes` must outlive the evaluation.
struct RouteContext {
  net::Prefix prefix;
  const wire::PathAttributes* attributes = nullptr;
  std::optional<net::IpAddress> neighbor;  // the neighbor it came from; none for local routes
  RouteSource source = RouteSource::kEbgp;
  // Optional: shared by evaluations that differ only in `prefix` (ConditionMemo). Not used
  // while tracing, so a trace always shows every condition tested.
  ConditionMemo* memo = nullptr;
};

enum class Verdict : uint8_t { kAccept, kReject, kNoDecision };
const char* VerdictName(Verdict v);  // "accept", "reject", "no decision"

// The conditions of a statement, in the order they are tested (cheapest first).
enum class Condition : uint8_t {
  kSource, kNeighborSet, kOrigin, kAsPathLength, kPrefixSet, kNextHopSet, kCommunitySet,
  kLinkBandwidth, kAsPathSet,
};
const char* ConditionName(Condition c);  // "source", "neighbor-set", ...

// Actions that need what only the export stage knows (the session's own address, the
// multipath set): carried in the result for it to apply.
enum class LinkBandwidthExport : uint8_t { kNone, kCumulative, kNumMultipaths };
struct DeferredActions {
  bool next_hop_self = false;
  LinkBandwidthExport link_bandwidth = LinkBandwidthExport::kNone;
  double reference_bits_per_second = 0;  // kNumMultipaths: per path
  uint32_t link_bandwidth_asn = 0;
  bool link_bandwidth_transitive = true;
  friend bool operator==(const DeferredActions&, const DeferredActions&) = default;
};

struct PolicyResult {
  Verdict verdict = Verdict::kNoDecision;
  // The statement whose ACCEPT/REJECT decided (index into the policy), -1 when none did.
  // With a chain: the policy that decided, as an index into the chain.
  int statement = -1;
  int policy = -1;
  // Set only when an action changed the attributes; otherwise the route's own apply.
  std::optional<wire::PathAttributes> modified;
  DeferredActions deferred;

  const wire::PathAttributes& attributes(const RouteContext& route) const {
    return modified ? *modified : *route.attributes;
  }
};

// Why each statement matched or not, for `bagctl policy test` (design.md rule 5).
struct StatementTrace {
  std::string policy;
  std::string statement;
  bool matched = false;
  std::optional<Condition> failed;   // !matched: the first condition that did not hold
  // The conditions as written, e.g. `prefix-set "bogons"`, `as-path-length 2..3`: matched,
  // every one (they all held); not matched, the one that failed.
  std::vector<std::string> conditions;
  std::vector<std::string> applied;  // matched: the actions, as text ("local-pref 200")
};
struct Trace {
  std::vector<StatementTrace> statements;
  // One line per statement: `from-spines drain: matched (community-set "drain"): link-bandwidth
  // 0bps, accept` or `sane bogons: no match (prefix-set "bogons")`.
  std::string ToString() const;
};

class CompiledPolicy;

struct EvaluateOptions {
  // False for an evaluation that is not a real route (bagctl policy test): hits() stay.
  bool count_hits = true;
  // How many routes this evaluation stands for: the prefixes of an UPDATE whose chain does
  // not test the prefix are evaluated once, and each statement's hits count them all.
  uint64_t routes = 1;
};

// Every policy of one config, compiled, with the sets they share.
class PolicySet {
 public:
  // InvalidArgument naming the policy, statement and value on anything the validator
  // (conf/config_validator.cc) would reject; run the validator first for file:line:col.
  static absl::StatusOr<PolicySet> Compile(const config::v1::Config& config);

  const CompiledPolicy* Find(std::string_view name) const;  // nullptr when not defined
  size_t size() const { return policies_.size(); }
  // The names of every policy, sorted (bagctl show policies, error messages).
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    out.reserve(policies_.size());
    for (const auto& entry : policies_) out.push_back(entry.first);
    std::sort(out.begin(), out.end());
    return out;
  }

 private:
  absl::flat_hash_map<std::string, std::shared_ptr<const CompiledPolicy>> policies_;
};

class CompiledPolicy {
 public:
  ~CompiledPolicy();
  const std::string& name() const { return name_; }
  // True when some statement tests the prefix (a prefix set): the result may differ between
  // two routes with the same attributes, source and neighbor.
  bool depends_on_prefix() const { return depends_on_prefix_; }
  // True when some statement tests the neighbor or the source.
  bool depends_on_neighbor() const { return depends_on_neighbor_; }
  size_t statement_count() const;
  const std::string& statement_name(size_t i) const;
  // Routes whose conditions held at statement i, since compile. Counted by Evaluate on the
  // one thread that evaluates (the routing core); read from the same thread.
  uint64_t hits(size_t i) const { return hits_[i]; }

 private:
  friend class PolicySet;
  friend PolicyResult Evaluate(const CompiledPolicy&, const RouteContext&, Trace*, EvaluateOptions);
  friend void EvaluateInto(const CompiledPolicy&, const RouteContext&, PolicyResult&, Trace*, uint64_t);
  CompiledPolicy() = default;

  std::string name_;
  std::vector<internal::Statement> statements_;
  bool depends_on_prefix_ = false;
  bool depends_on_neighbor_ = false;
  mutable std::vector<uint64_t> hits_;  // statistics only: not part of the policy's meaning
};

// One route through one policy. `trace`, when given, receives a line per statement tested.
PolicyResult Evaluate(const CompiledPolicy& policy, const RouteContext& route, Trace* trace = nullptr,
                      EvaluateOptions options = {});

// One route through a chain (Neighbor.import_policies / export_policies): each policy sees
// the attributes as the previous one left them; the first ACCEPT or REJECT ends the chain;
// a route no policy decided gets `default_verdict` (RFC 8212 §3: kReject for eBGP).
PolicyResult EvaluateChain(std::span<const CompiledPolicy* const> chain, const RouteContext& route,
                           Verdict default_verdict, Trace* trace = nullptr, EvaluateOptions options = {});

}  // namespace bagd::policy
