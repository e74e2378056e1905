// The BGP decision process (RFC 4271 §9.1.2.2, RFC 4456 §9) with reasons (design.md rule 5):
// comparing two paths says which one wins and at which step, so `bagctl show routes` can
// say "lost to 10.0.0.2: lower local-pref". Multipath eligibility (RFC 7938 practice:
// equal up to the IGP-cost step, same neighbor AS unless as-path multipath-relax) is here too.
#pragma once

#include <cstdint>

#include "rib/attribute_store.h"

namespace bagd::rib {

// Numbered as operators know them; the number is also the order of evaluation.
enum class DecisionStep : uint8_t {
  kNone = 0,          // identical for the decision
  kLocalPref = 1,     // higher LOCAL_PREF (RFC 4271 §9.1.2.2 preamble, §9.1.1)
  kAsPathLength = 2,  // shorter AS_PATH (a)
  kOrigin = 3,        // lower ORIGIN (b)
  kMed = 4,           // lower MED among paths from the same neighbor AS (c)
  kEbgpOverIbgp = 5,  // eBGP over iBGP (d)
  kRouterId = 6,      // lower BGP identifier, ORIGINATOR_ID when present (f, RFC 4456 §9)
  kClusterList = 7,   // shorter CLUSTER_LIST (RFC 4456 §9)
  kPeerAddress = 8,   // lower peer address (g)
  kPathId = 9,        // lower ADD-PATH path identifier (received paths of one peer)
};
const char* DecisionStepName(DecisionStep s);   // "local-pref", ...
const char* DecisionStepReason(DecisionStep s); // "lower local-pref" (why the loser lost)

struct DecisionConfig {
  bool always_compare_med = false;    // compare MED across neighbor ASes
  uint32_t maximum_paths_ebgp = 1;    // 1 = no multipath
  uint32_t maximum_paths_ibgp = 1;
  bool as_path_multipath_relax = false;  // multipath across neighbor ASes of equal AS_PATH length
};

// What the decision needs to know about the peer a path came from.
struct PathSource {
  bool ebgp = true;
  uint32_t router_id = 0;  // host order
  net::IpAddress address;
};

struct Candidate {
  const InternedAttributes* attrs = nullptr;
  const PathSource* source = nullptr;
  uint32_t path_id = 0;
  uint32_t peer = 0;  // the RIB's peer index: DecisionOrder's last tie-break, never Compare's
};

struct Comparison {
  int winner = 0;  // <0: a is better, >0: b is better, 0: equal
  DecisionStep step = DecisionStep::kNone;
};

Comparison Compare(const Candidate& a, const Candidate& b, const DecisionConfig& config);

// The order the RIB keeps each prefix's paths in (rib/rib.h), as a total order:
//   ClassOrder   steps 1-3 (local-pref, AS-path length, origin): paths equal here form a class;
//   MED          lower first, always compared (unlike Compare, which compares it only
//                between paths from one neighbor AS unless always-compare-med);
//   GroupOrder   steps 5-9 and then the peer index, so no two paths of a prefix are equal.
// DecisionOrder is these three in turn. Where Compare is itself a total order on a class
// (its MEDs are all equal, or it comes from one neighbor AS, or always-compare-med) the two
// agree, and the first path in DecisionOrder is Compare's best. Elsewhere Compare is not
// transitive (RFC 4271 §9.1.2.2 c), and the RIB ranks the class by deterministic MED instead
// (docs/config.md, "Decision order and deterministic MED").
int ClassOrder(const Candidate& a, const Candidate& b);
int GroupOrder(const Candidate& a, const Candidate& b);
int DecisionOrder(const Candidate& a, const Candidate& b);

// True if `other` may share multipath with `best` (both from the same kind of session,
// equal through the MED step, same neighbor AS unless relaxed).
bool MultipathEligible(const Candidate& best, const Candidate& other, const DecisionConfig& config);

}  // namespace bagd::rib
