// Enhanced route refresh, the receiving side (RFC 7313 §4.2): when a peer begins to re-send
// a family (BoRR), every path it has there becomes stale; a path it announces (or withdraws)
// afterwards is no longer stale; at the end (EoRR, or when no EoRR comes in time) the paths
// still stale are those the peer no longer has, and are removed. Pure: the speaker feeds it.
//
// The marks are a sorted list of the peer's paths taken at BoRR plus one bit per path
// (about 25 bytes per path, only for a peer in a refresh and only during it), not a flag in
// every rib::Path: paths stay 16 bytes (design.md rule 10) and the RIB's UPDATE path is
// untouched.
#pragma once

#include <cstddef>
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

}  // namespace bagd::rib
