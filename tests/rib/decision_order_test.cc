// The RIB keeps each prefix's paths in decision order and looks at the multipath set again
// only when a change reaches into it (rib/rib.h). These property tests check that against a
// decision made from scratch, written here with Compare and MultipathEligible only (the RFC
// steps, rib/decision.h): for random arrival, replacement and withdrawal orders of up to 200
// paths per prefix, after every step the paths are in the from-scratch order, the multipath
// set is the from-scratch one, and a change is recorded exactly when the set moved.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <random>

#include "absl/strings/str_cat.h"
#include "tests/rib/rib_test_support.h"

using namespace bagd;
using namespace bagd::rib;
using namespace bagd::rib::test;

namespace {

struct Key {
  PeerIndex peer;
  uint32_t path_id;
  friend bool operator<(const Key& a, const Key& b) {
    return a.peer != b.peer ? a.peer < b.peer : a.path_id < b.path_id;
  }
};

// The decision from scratch over `paths`: the order and the multipath set as indices into it.
struct Reference {
  std::vector<Path> order;
  uint32_t bits = 0;
};

Reference Decide(const Rib& rib, std::vector<Path> paths, const DecisionConfig& cfg) {
  Reference ref;
  if (paths.empty()) return ref;
  auto cand = [&](const Path& p) { return rib.CandidateOf(p); };
  // Compare, with the peer as a tie-break where it says equal (it never does here: every
  // peer has its own address).
  auto better = [&](const Path& a, const Path& b) {
    const int w = Compare(cand(a), cand(b), cfg).winner;
    return w != 0 ? w < 0 : a.peer < b.peer;
  };
  // Classes: equal local-pref, AS-path length and origin; better classes first.
  auto class_key = [](const Path& p) {
    return std::make_tuple(-static_cast<int64_t>(p.attrs->local_pref), p.attrs->as_path_length, p.attrs->origin);
  };
  std::map<std::tuple<int64_t, uint32_t, uint8_t>, std::vector<Path>> classes;
  for (Path& p : paths) classes[class_key(p)].push_back(std::move(p));
  for (auto& [key, members] : classes) {
    bool one_med = true, one_as = true;
    for (const Path& p : members) {
      one_med = one_med && p.attrs->med == members[0].attrs->med;
      one_as = one_as && p.attrs->neighbor_as == members[0].attrs->neighbor_as;
    }
    if (cfg.always_compare_med || one_med || one_as) {
      // Compare is a total order here.
      std::sort(members.begin(), members.end(), better);
    } else {
      // Deterministic MED: per neighbor AS its paths by Compare, the ASes by their bests.
      std::map<uint32_t, std::vector<Path>> by_as;
      for (Path& p : members) by_as[p.attrs->neighbor_as].push_back(std::move(p));
      std::vector<std::vector<Path>> groups;
      for (auto& [as, g] : by_as) {
        std::sort(g.begin(), g.end(), better);
        groups.push_back(std::move(g));
      }
      std::sort(groups.begin(), groups.end(), [&](const auto& a, const auto& b) { return better(a[0], b[0]); });
      members.clear();
      for (auto& g : groups) {
        for (Path& p : g) members.push_back(std::move(p));
      }
    }
    for (Path& p : members) ref.order.push_back(std::move(p));
  }
  // The best and the first eligible paths after it, within the first 32.
  const Candidate best = cand(ref.order[0]);
  const uint32_t max = best.source->ebgp ? cfg.maximum_paths_ebgp : cfg.maximum_paths_ibgp;
  ref.bits = 1;
  uint32_t taken = 1;
  for (size_t i = 1; i < ref.order.size() && i < 32 && taken < max; ++i) {
    if (class_key(ref.order[i]) != class_key(ref.order[0])) break;
    if (MultipathEligible(best, cand(ref.order[i]), cfg)) {
      ref.bits |= uint32_t{1} << i;
      ++taken;
    }
  }
  return ref;
}

PathSet SetOf(const Reference& r) {
  PathSet s;
  for (uint32_t b = r.bits; b != 0; b &= b - 1) s.push_back(r.order[__builtin_ctz(b)]);
  return s;
}

DecisionConfig RandomConfig(std::mt19937& rng) {
  DecisionConfig c;
  c.always_compare_med = rng() % 4 == 0;
  const uint32_t widths[] = {1, 2, 4, 8, 32};
  c.maximum_paths_ebgp = widths[rng() % 5];
  c.maximum_paths_ibgp = widths[rng() % 3];
  c.as_path_multipath_relax = rng() % 3 != 0;
  return c;
}

// A pool of attribute sets that tie and differ at every step of the decision.
std::vector<AttrRef> RandomAttributes(std::mt19937& rng, AttributeStore& store, size_t n) {
  std::vector<AttrRef> out;
  for (size_t i = 0; i < n; ++i) {
    AttrsBuilder b;
    const uint32_t as = 65001 + rng() % 4;
    b.Path(std::vector<uint32_t>(1 + rng() % 2, as));
    if (rng() % 5 == 0) b.LocalPref(200);
    if (rng() % 4 == 0) b.Origin(wire::Origin::kIncomplete);
    if (rng() % 3 != 0) b.Med(static_cast<uint32_t>(rng() % 3) * 10);
    if (rng() % 6 == 0) b.OriginatorId(static_cast<uint32_t>(rng() % 8));
    if (rng() % 6 == 0) b.ClusterList(std::vector<uint32_t>(1 + rng() % 2, 7));
    b.NextHop(absl::StrCat("10.1.", i / 200, ".", 1 + i % 200).c_str());
    out.push_back(b.In(store));
  }
  return out;
}

struct World {
  explicit World(std::mt19937& rng, size_t peers, const DecisionConfig& cfg) : rib(65000, cfg) {
    for (size_t i = 0; i < peers; ++i) {
      const std::string addr = absl::StrCat("10.0.", i / 250, ".", 1 + i % 250);
      // Few router ids, so the peer address decides often; some iBGP.
      rib.AddPeer(Peer(addr.c_str(), static_cast<uint32_t>(1 + rng() % 6), 65001, rng() % 5 != 0));
    }
  }
  Rib rib;
  std::map<Key, AttrRef> paths;  // what the RIB should hold for the prefix
};

const net::Prefix kPrefix = *net::Prefix::Parse("192.0.2.0/24");

std::vector<Path> Current(const World& w) {
  std::vector<Path> out;
  for (const auto& [k, a] : w.paths) out.push_back(Path{k.peer, k.path_id, a});
  return out;
}

// The RIB against the from-scratch decision; `before`: the reference set before the step.
void Check(World& w, const DecisionConfig& cfg, const PathSet& before, const std::string& step) {
  INFO(step);
  const Reference ref = Decide(w.rib, Current(w), cfg);
  const Destination* d = w.rib.Find(kPrefix);
  if (ref.order.empty()) {
    REQUIRE(d == nullptr);
  } else {
    REQUIRE(d != nullptr);
    REQUIRE(d->size() == ref.order.size());
    for (size_t i = 0; i < ref.order.size(); ++i) {
      INFO("index " << i);
      REQUIRE(d->paths()[i] == ref.order[i]);
    }
    REQUIRE(d->multipath() == ref.bits);
    REQUIRE(d->best() == 0);
  }
  const PathSet now = SetOf(ref);
  const std::vector<RouteChange> changes = w.rib.TakeChanges();
  if (now == before) {
    REQUIRE(changes.empty());
  } else {
    REQUIRE(changes.size() == 1);
    CHECK(changes[0].old_multipath == before);
    CHECK(changes[0].new_multipath == now);
  }
  REQUIRE(w.rib.path_count() == w.paths.size());
}

}  // namespace

TEST_CASE("decision order: incremental = from scratch, random arrivals, replacements and withdrawals",
          "[rib][decision][property]") {
  std::mt19937 rng(20261207);
  for (int round = 0; round < 150; ++round) {
    AttributeStore store;
    DecisionConfig cfg = RandomConfig(rng);
    const size_t peers = 1 + rng() % 60;
    const uint32_t ids = 1 + rng() % 4;  // ADD-PATH: up to 4 paths per peer, 240 at most
    World w(rng, peers, cfg);
    const std::vector<AttrRef> pool = RandomAttributes(rng, store, 2 + rng() % 14);
    const int steps = 100 + static_cast<int>(rng() % 500);
    for (int s = 0; s < steps; ++s) {
      const PathSet before = SetOf(Decide(w.rib, Current(w), cfg));
      const uint32_t op = rng() % 100;
      const PeerIndex peer = static_cast<PeerIndex>(rng() % peers);
      const uint32_t id = static_cast<uint32_t>(rng() % ids);
      std::string what;
      if (op < 60 && w.paths.size() < 200) {  // announce: new or replacing
        const AttrRef& a = pool[rng() % pool.size()];
        const net::Nlri n[] = {net::Nlri{kPrefix, id}};
        w.rib.Announce(peer, n, a);
        w.paths[Key{peer, id}] = a;
        what = absl::StrCat("announce ", peer, "/", id);
      } else if (op < 92 && !w.paths.empty()) {  // withdraw one that is there
        auto it = w.paths.begin();
        std::advance(it, rng() % w.paths.size());
        const net::Nlri n[] = {net::Nlri{kPrefix, it->first.path_id}};
        what = absl::StrCat("withdraw ", it->first.peer, "/", it->first.path_id);
        w.rib.Withdraw(it->first.peer, n);
        w.paths.erase(it);
      } else if (op < 98) {  // the session goes
        w.rib.PeerDown(peer);
        for (auto it = w.paths.begin(); it != w.paths.end();) it = it->first.peer == peer ? w.paths.erase(it) : std::next(it);
        what = absl::StrCat("peer down ", peer);
      } else {  // a reload changes the decision configuration
        cfg = RandomConfig(rng);
        w.rib.SetDecisionConfig(cfg);
        what = "new decision config";
      }
      Check(w, cfg, before, absl::StrCat("round ", round, " step ", s, ": ", what));
    }
    // Arrival order does not matter: the same paths announced afresh in a shuffled order.
    Rib fresh(65000, cfg);
    for (PeerIndex p = 0; p < peers; ++p) fresh.AddPeer(w.rib.peer(p));
    std::vector<Path> all = Current(w);
    std::shuffle(all.begin(), all.end(), rng);
    for (const Path& p : all) {
      const net::Nlri n[] = {net::Nlri{kPrefix, p.path_id}};
      fresh.Announce(p.peer, n, p.attrs);
    }
    const Destination* a = w.rib.Find(kPrefix);
    const Destination* b = fresh.Find(kPrefix);
    REQUIRE((a == nullptr) == (b == nullptr));
    if (a != nullptr) {
      REQUIRE(a->size() == b->size());
      for (size_t i = 0; i < a->size(); ++i) CHECK(a->paths()[i] == b->paths()[i]);
      CHECK(a->multipath() == b->multipath());
    }
  }
}

TEST_CASE("decision order: a new path past the multipath set records no change", "[rib][decision]") {
  // 128 peers of distinct ASes with equal attributes but the router id: the eight lowest
  // router ids are the 8-way set whatever the order they come in, and the other 120 paths
  // change nothing.
  AttributeStore store;
  DecisionConfig cfg;
  cfg.maximum_paths_ebgp = 8;
  cfg.as_path_multipath_relax = true;
  Rib rib(65000, cfg);
  std::vector<PeerIndex> peers;
  std::vector<AttrRef> attrs;
  for (uint32_t i = 0; i < 128; ++i) {
    const std::string addr = absl::StrCat("10.0.", i / 200, ".", 1 + i % 200);
    peers.push_back(rib.AddPeer(Peer(addr.c_str(), 1000 + i, 65001 + i)));
    attrs.push_back(AttrsBuilder().Path({65001 + i}).NextHop(addr.c_str()).In(store));
  }
  std::vector<uint32_t> order(128);
  for (uint32_t i = 0; i < 128; ++i) order[i] = i;
  std::mt19937 rng(42);
  std::shuffle(order.begin(), order.end(), rng);
  const net::Nlri n[] = {N("192.0.2.0/24")};
  size_t changes = 0;
  for (uint32_t i : order) {
    rib.Announce(peers[i], n, attrs[i]);
    const size_t c = rib.TakeChanges().size();
    // A change iff the path is one of the eight best of those that have arrived.
    size_t better = 0;
    for (uint32_t j : order) {
      if (j == i) break;
      if (j < i) ++better;
    }
    CHECK(c == (better < 8 ? 1u : 0u));
    changes += c;
  }
  const Destination* d = rib.Find(*net::Prefix::Parse("192.0.2.0/24"));
  REQUIRE(d != nullptr);
  CHECK(d->multipath() == 0xff);
  for (uint32_t i = 0; i < 128; ++i) CHECK(d->paths()[i].peer == peers[i]);
  CHECK(changes < 128);
  // Withdrawing a path outside the set changes nothing; one inside it brings in the ninth.
  const net::Nlri w[] = {N("192.0.2.0/24")};
  rib.Withdraw(peers[100], w);
  CHECK(rib.TakeChanges().empty());
  rib.Withdraw(peers[3], w);
  const auto ch = rib.TakeChanges();
  REQUIRE(ch.size() == 1);
  REQUIRE(ch[0].new_multipath.size() == 8);
  CHECK(ch[0].new_multipath.back().peer == peers[8]);
}
