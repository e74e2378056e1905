// The whole RIB as TABLE_DUMP_V2 (RFC 6396 §4.3), encoded in slices so a caller on the
// event thread can stop between any two prefixes (a 1M-path table must never hold the
// thread for more than a few milliseconds at a time). Pure: the RIB in, bytes out.
//
// The dump is consistent per prefix, not across the table: between two slices the RIB may
// change, and a prefix is written as it is when its slice runs (docs/mrt.md).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "mrt/mrt_record.h"
#include "rib/rib.h"

namespace bagd::mrt {

// What the RIB does not know about a peer and the dump needs.
struct DumpPeerFacts {
  // RFC 6396 §4.3.4 Originated Time. bagd keeps no time per path; the daemon gives the time
  // the peer's session came up (a path from it is no older), 0 for an unknown one.
  uint32_t originated_time = 0;
  // The peer sends ADD-PATH path identifiers in the family (net::Family index): its paths
  // go into the RFC 8050 _ADDPATH records with their path id.
  std::array<bool, net::kFamilyCount> add_path{};
};

struct RibDumpOptions {
  uint32_t timestamp = 0;        // the records' MRT timestamp (seconds since the epoch)
  uint32_t collector_bgp_id = 0;  // our router id, host order
  std::string view_name;
  std::vector<DumpPeerFacts> peers;  // by RIB peer index; missing: defaults
};

struct RibDumpCounts {
  uint64_t prefixes = 0;  // RIB records written
  uint64_t paths = 0;     // RIB entries written
  uint64_t records = 0;   // every record, the PEER_INDEX_TABLE included
  uint64_t skipped_paths = 0;  // paths that could not be written (a peer index past 65535, bad attributes)
};

class RibDumpEncoder {
 public:
  RibDumpEncoder(RibDumpOptions options) : options_(std::move(options)) {}

  // The PEER_INDEX_TABLE: every peer the RIB has, in RIB index order, so a RIB entry's
  // Peer Index is the RIB's peer index. Call once, first.
  void Begin(const rib::Rib& rib, Bytes& out);
  // The RIB records of the prefixes after the last one written (IPv4 first, in table
  // order), until at least `max_paths` paths were written or the table ends. True: done.
  bool Next(const rib::Rib& rib, Bytes& out, size_t max_paths);
  const RibDumpCounts& counts() const { return counts_; }

 private:
  void AppendPrefix(const rib::Rib& rib, const net::Prefix& prefix, const rib::Destination& d, Bytes& out);

  RibDumpOptions options_;
  size_t peer_count_ = 0;  // peers in the PEER_INDEX_TABLE
  std::optional<net::Prefix> after_;
  bool done_ = false;
  uint32_t sequence_ = 0;
  RibDumpCounts counts_;
  // Per slice: the MRT form of attribute sets already seen in it (the store may free and
  // reuse an entry between slices, never inside one).
  absl::flat_hash_map<const rib::InternedAttributes*, std::pair<uint32_t, uint32_t>> memo_;
  Bytes attr_bytes_;
  std::vector<std::pair<uint32_t, uint32_t>> spans_;
  std::vector<RibEntry> entries_;
};

}  // namespace bagd::mrt
