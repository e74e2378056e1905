#include "mrt/rib_dump.h"

namespace bagd::mrt {

void RibDumpEncoder::Begin(const rib::Rib& rib, Bytes& out) {
  std::vector<IndexedPeer> peers;
  peer_count_ = std::min<size_t>(rib.peer_count(), kMaxRibEntries);
  peers.reserve(peer_count_);
  for (size_t i = 0; i < peer_count_; ++i) {
    const rib::PeerInfo& p = rib.peer(static_cast<rib::PeerIndex>(i));
    // A local source (config `networks`) has no address: it shows as 0.0.0.0 with our AS.
    peers.push_back(IndexedPeer{p.source.router_id, p.source.address, p.asn});
  }
  AppendPeerIndexTable(out, options_.timestamp, options_.collector_bgp_id, options_.view_name, peers);
  ++counts_.records;
}

bool RibDumpEncoder::Next(const rib::Rib& rib, Bytes& out, size_t max_paths) {
  if (done_) return true;
  memo_.clear();
  attr_bytes_.clear();
  size_t written = 0;
  bool stopped = false;
  rib.ForEachAfter(after_, [&](const net::Prefix& prefix, const rib::Destination& d) {
    if (written >= max_paths) {
      stopped = true;
      return false;
    }
    AppendPrefix(rib, prefix, d, out);
    written += d.size();
    after_ = prefix;
    return true;
  });
  if (!stopped) done_ = true;
  return done_;
}

void RibDumpEncoder::AppendPrefix(const rib::Rib& rib, const net::Prefix& prefix, const rib::Destination& d,
                                  Bytes& out) {
  (void)rib;
  if (d.empty()) return;
  const int family = static_cast<int>(prefix.family());
  entries_.clear();
  spans_.clear();
  bool add_path = false;
  for (const rib::Path& p : d.paths()) {
    if (entries_.size() == kMaxRibEntries || p.peer >= peer_count_) {
      ++counts_.skipped_paths;
      continue;
    }
    auto [it, fresh] = memo_.try_emplace(p.attrs.get());
    if (fresh) {
      const size_t at = attr_bytes_.size();
      if (!AppendMrtAttributes(p.attrs->key, attr_bytes_) || attr_bytes_.size() - at > 65535) {
        attr_bytes_.resize(at);
        memo_.erase(it);
        ++counts_.skipped_paths;
        continue;
      }
      it->second = {static_cast<uint32_t>(at), static_cast<uint32_t>(attr_bytes_.size() - at)};
    }
    RibEntry e;
    e.peer_index = static_cast<uint16_t>(p.peer);
    e.path_id = p.path_id;
    if (p.peer < options_.peers.size()) {
      const DumpPeerFacts& f = options_.peers[p.peer];
      e.originated_time = f.originated_time;
      add_path = add_path || f.add_path[family];
    }
    entries_.push_back(e);
    spans_.push_back(it->second);
  }
  if (entries_.empty()) return;
  // attr_bytes_ is complete for this prefix: the spans can point into it now.
  for (size_t i = 0; i < entries_.size(); ++i) {
    entries_[i].attributes = ByteSpan(attr_bytes_.data() + spans_[i].first, spans_[i].second);
  }
  AppendRibRecord(out, options_.timestamp, sequence_++, prefix, add_path, entries_);
  ++counts_.records;
  ++counts_.prefixes;
  counts_.paths += entries_.size();
}

}  // namespace bagd::mrt
