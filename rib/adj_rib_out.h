// What bagd has sent a neighbor, per prefix (its Adj-RIB-Out; the advertiser's, one per
// neighbor), with the prefix's bandwidth re-advertisement state toward that neighbor.
//
// The state lives in the entry rather than in a table of its own: while a neighbor's table
// comes in, every prefix's cumulative bandwidth changes with each path that joins its
// multipath set, so every prefix sent to every other neighbor had a second entry of ~17
// bytes; in the entry it is 8 bytes more of the same B-tree slot. It goes with the entry:
// a prefix withdrawn and announced again starts afresh.
#pragma once

#include <cstdint>

#include "rib/attribute_store.h"
#include "rib/prefix_map.h"

namespace bagd::rib {

struct AdjRibOutEntry {
  AttrRef attrs;  // the attributes the neighbor was sent
  // BandwidthReadvertisement's state (rib/weights/link_bandwidth_export.h); 0: none.
  uint64_t readvertisement = 0;
};

using AdjRibOut = PrefixMap<AdjRibOutEntry>;

}  // namespace bagd::rib
