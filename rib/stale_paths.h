// Stale paths, one rule for both causes (OpenBGPD's peer_stale / peer_begin_rrefresh, BIRD's
// rt_refresh_begin/end): enhanced route refresh's receiving side (RFC 7313 §4.2: a BoRR makes
// every path of the peer in the family stale until the EoRR) and graceful restart's helper
// (RFC 4724 §4.2: a restarting peer's paths are stale until its End-of-RIB). A path the peer
// announces (or withdraws) afterwards is no longer stale; at the end (EoRR, End-of-RIB, or a
// timer) the paths still stale are those the peer no longer has, and are removed. Pure: the
// pipeline owns the StaleTable and feeds it (bgpd/daemon/pipeline.h).
//
// The marks are a sorted list of the peer's paths taken at BoRR plus one bit per path
// (about 25 bytes per path, only for a peer in a refresh and only during it), not a flag in
// every rib::Path: paths stay 16 bytes (design.md rule 10) and the RIB's UPDATE path is
// untouched.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "net/ip_prefix.h"

namespace bagd::rib {

class StalePaths {
 public:
  // `paths`: the peer's paths in the family at BoRR (Rib::PathsOf), in any order.
  explicit StalePaths(std::vector<net::Nlri> paths);

  // The peer announced `nlri` since the BoRR: it is not stale. A path that was not there at
  // BoRR changes nothing.
  void Refreshed(const net::Nlri& nlri);

  size_t marked() const { return paths_.size(); }  // stale at BoRR
  size_t stale() const { return stale_; }          // still stale

  // The next up to `max` paths still stale, in table order (then path id), each once; empty
  // when there are no more. The caller removes them from the RIB.
  std::vector<net::Nlri> TakeStale(size_t max);

 private:
  std::vector<net::Nlri> paths_;  // sorted
  std::vector<bool> refreshed_;    // parallel to paths_
  size_t stale_ = 0;
  size_t next_ = 0;  // where TakeStale goes on
};

// Why a peer's paths in a family are stale.
enum class StaleCause : uint8_t { kRouteRefresh, kGracefulRestart };

// The marks per (peer, family), each with its cause. A new begin replaces what was marked (a
// BoRR during a refresh starts it over; a BoRR while a restart's paths are stale makes every
// path stale until the EoRR, which removes a superset of what the End-of-RIB would have).
class StaleTable {
 public:
  using PeerIndex = uint32_t;  // rib::PeerIndex
  // Every path in `paths` (the peer's in the family now) is stale, for `cause`.
  const StalePaths& Begin(PeerIndex peer, net::Family family, StaleCause cause, std::vector<net::Nlri> paths);
  // The peer sent `nlri` again (announced or withdrawn): not stale. Cheap when the peer has
  // no marks (asked per UPDATE).
  void Refreshed(PeerIndex peer, const net::Nlri& nlri);
  bool any(PeerIndex peer) const;
  // Null when the peer's family has no marks (or none for `cause`).
  const StalePaths* Find(PeerIndex peer, net::Family family) const;
  StalePaths* Find(PeerIndex peer, net::Family family, StaleCause cause);
  std::optional<StaleCause> cause(PeerIndex peer, net::Family family) const;
  void Clear(PeerIndex peer, net::Family family);
  void Clear(PeerIndex peer);

 private:
  struct Entry {
    std::optional<StalePaths> paths;
    StaleCause cause = StaleCause::kRouteRefresh;
  };
  std::vector<std::array<Entry, net::kFamilyCount>> by_peer_;
};

}  // namespace bagd::rib
