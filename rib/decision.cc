#include "rib/decision.h"

namespace bagd::rib {
namespace {

template <class T>
int Lower(T a, T b) {
  return a < b ? -1 : (a > b ? 1 : 0);
}

}  // namespace

const char* DecisionStepName(DecisionStep s) {
  switch (s) {
    case DecisionStep::kNone: return "none";
    case DecisionStep::kLocalPref: return "local-pref";
    case DecisionStep::kAsPathLength: return "as-path-length";
    case DecisionStep::kOrigin: return "origin";
    case DecisionStep::kMed: return "med";
    case DecisionStep::kEbgpOverIbgp: return "ebgp-over-ibgp";
    case DecisionStep::kRouterId: return "router-id";
    case DecisionStep::kClusterList: return "cluster-list-length";
    case DecisionStep::kPeerAddress: return "peer-address";
    case DecisionStep::kPathId: return "path-id";
  }
  return "?";
}

const char* DecisionStepReason(DecisionStep s) {
  switch (s) {
    case DecisionStep::kNone: return "equal";
    case DecisionStep::kLocalPref: return "lower local-pref";
    case DecisionStep::kAsPathLength: return "longer AS path";
    case DecisionStep::kOrigin: return "worse origin";
    case DecisionStep::kMed: return "higher MED";
    case DecisionStep::kEbgpOverIbgp: return "iBGP path, eBGP preferred";
    case DecisionStep::kRouterId: return "higher router id";
    case DecisionStep::kClusterList: return "longer cluster list";
    case DecisionStep::kPeerAddress: return "higher peer address";
    case DecisionStep::kPathId: return "higher path id";
  }
  return "?";
}

Comparison Compare(const Candidate& a, const Candidate& b, const DecisionConfig& config) {
  const InternedAttributes& x = *a.attrs;
  const InternedAttributes& y = *b.attrs;
  auto decide = [](int w, DecisionStep s) { return Comparison{w, w == 0 ? DecisionStep::kNone : s}; };
  // 1. Higher LOCAL_PREF.
  if (int w = Lower(y.local_pref, x.local_pref)) return decide(w, DecisionStep::kLocalPref);
  // 2. Shorter AS_PATH (a SET counts 1, confederation segments 0).
  if (int w = Lower(x.as_path_length, y.as_path_length)) return decide(w, DecisionStep::kAsPathLength);
  // 3. Lower ORIGIN.
  if (int w = Lower(x.origin, y.origin)) return decide(w, DecisionStep::kOrigin);
  // 4. Lower MED, when both come from the same neighbor AS (or always-compare-med).
  //    A missing MED counts as 0 (RFC 4271 §9.1.2.2 c).
  if (config.always_compare_med || x.neighbor_as == y.neighbor_as) {
    if (int w = Lower(x.med, y.med)) return decide(w, DecisionStep::kMed);
  }
  // 5. eBGP over iBGP.
  if (int w = Lower(a.source->ebgp ? 0 : 1, b.source->ebgp ? 0 : 1)) return decide(w, DecisionStep::kEbgpOverIbgp);
  // (The interior cost to the next hop would be here; bagd has no IGP.)
  // 6. Lower BGP identifier; ORIGINATOR_ID stands in for it when present (RFC 4456 §9).
  const uint32_t ida = x.originator_id.value_or(a.source->router_id);
  const uint32_t idb = y.originator_id.value_or(b.source->router_id);
  if (int w = Lower(ida, idb)) return decide(w, DecisionStep::kRouterId);
  // 7. Shorter CLUSTER_LIST.
  if (int w = Lower(x.cluster_list_length, y.cluster_list_length)) return decide(w, DecisionStep::kClusterList);
  // 8. Lower peer address.
  if (int w = Lower(a.source->address, b.source->address)) return decide(w, DecisionStep::kPeerAddress);
  // 9. Lower path identifier (several paths from one ADD-PATH peer).
  return decide(Lower(a.path_id, b.path_id), DecisionStep::kPathId);
}

int ClassOrder(const Candidate& a, const Candidate& b) {
  const InternedAttributes& x = *a.attrs;
  const InternedAttributes& y = *b.attrs;
  if (int w = Lower(y.local_pref, x.local_pref)) return w;
  if (int w = Lower(x.as_path_length, y.as_path_length)) return w;
  return Lower(x.origin, y.origin);
}

int GroupOrder(const Candidate& a, const Candidate& b) {
  if (int w = Lower(a.source->ebgp ? 0 : 1, b.source->ebgp ? 0 : 1)) return w;
  const InternedAttributes& x = *a.attrs;
  const InternedAttributes& y = *b.attrs;
  if (int w = Lower(x.originator_id.value_or(a.source->router_id), y.originator_id.value_or(b.source->router_id))) return w;
  if (int w = Lower(x.cluster_list_length, y.cluster_list_length)) return w;
  if (int w = Lower(a.source->address, b.source->address)) return w;
  if (int w = Lower(a.path_id, b.path_id)) return w;
  return Lower(a.peer, b.peer);
}

int DecisionOrder(const Candidate& a, const Candidate& b) {
  if (int w = ClassOrder(a, b)) return w;
  if (int w = Lower(a.attrs->med, b.attrs->med)) return w;
  return GroupOrder(a, b);
}

bool MultipathEligible(const Candidate& best, const Candidate& other, const DecisionConfig& config) {
  const InternedAttributes& x = *best.attrs;
  const InternedAttributes& y = *other.attrs;
  if (best.source->ebgp != other.source->ebgp) return false;
  if ((best.source->ebgp ? config.maximum_paths_ebgp : config.maximum_paths_ibgp) <= 1) return false;
  if (x.local_pref != y.local_pref || x.as_path_length != y.as_path_length || x.origin != y.origin) return false;
  const bool same_as = x.neighbor_as == y.neighbor_as;
  if (!same_as && !config.as_path_multipath_relax) return false;
  if ((same_as || config.always_compare_med) && x.med != y.med) return false;
  return true;
}

}  // namespace bagd::rib
