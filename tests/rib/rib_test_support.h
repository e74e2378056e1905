// Builders for RIB tests.
#pragma once

#include "rib/rib.h"

namespace bagd::rib::test {

struct AttrsBuilder {
  wire::PathAttributes a;
  AttrsBuilder() {
    a.origin = wire::Origin::kIgp;
    a.as_path = wire::AsPath{{{wire::AsSegmentType::kSequence, {65001}}}};
    a.next_hop = *net::IpAddress::Parse("10.0.0.1");
  }
  AttrsBuilder& Path(std::vector<uint32_t> asns) {
    a.as_path = wire::AsPath{{{wire::AsSegmentType::kSequence, std::move(asns)}}};
    return *this;
  }
  AttrsBuilder& LocalPref(uint32_t v) { a.local_pref = v; return *this; }
  AttrsBuilder& Med(uint32_t v) { a.med = v; return *this; }
  AttrsBuilder& Origin(wire::Origin o) { a.origin = o; return *this; }
  AttrsBuilder& NextHop(const char* nh) { a.next_hop = *net::IpAddress::Parse(nh); return *this; }
  AttrsBuilder& OriginatorId(uint32_t id) { a.originator_id = id; return *this; }
  AttrsBuilder& ClusterList(std::vector<uint32_t> c) { a.cluster_list = std::move(c); return *this; }
  AttrRef In(AttributeStore& s) const { return s.Intern(a); }
};

inline net::Nlri N(const char* p, uint32_t path_id = 0) { return net::Nlri{*net::Prefix::Parse(p), path_id}; }

inline PeerInfo Peer(const char* addr, uint32_t router_id, uint32_t asn, bool ebgp = true) {
  PeerInfo p;
  p.source.address = *net::IpAddress::Parse(addr);
  p.source.router_id = router_id;
  p.source.ebgp = ebgp;
  p.asn = asn;
  p.name = addr;
  return p;
}

}  // namespace bagd::rib::test
