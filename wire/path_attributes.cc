#include "wire/path_attributes.h"

#include <algorithm>
#include <bitset>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "wire/notification.h"

namespace bagd::wire {

const char* OriginName(Origin o) {
  switch (o) {
    case Origin::kIgp: return "igp";
    case Origin::kEgp: return "egp";
    case Origin::kIncomplete: return "incomplete";
  }
  return "?";
}

size_t AsPath::Length() const {
  size_t n = 0;
  for (const auto& s : segments) {
    if (s.type == AsSegmentType::kSequence) n += s.asns.size();
    if (s.type == AsSegmentType::kSet) n += 1;
  }
  return n;
}

uint32_t AsPath::FirstAs() const {
  for (const auto& s : segments) {
    if (s.type == AsSegmentType::kSequence && !s.asns.empty()) return s.asns.front();
    if (s.type == AsSegmentType::kSet) return 0;
  }
  return 0;
}

bool AsPath::Contains(uint32_t asn) const {
  for (const auto& s : segments)
    if (std::find(s.asns.begin(), s.asns.end(), asn) != s.asns.end()) return true;
  return false;
}

std::string AsPath::ToString() const {
  std::vector<std::string> parts;
  for (const auto& s : segments) {
    const std::string body = absl::StrJoin(s.asns, s.type == AsSegmentType::kSequence ||
                                                             s.type == AsSegmentType::kConfedSequence
                                                         ? " "
                                                         : ",");
    switch (s.type) {
      case AsSegmentType::kSequence: parts.push_back(body); break;
      case AsSegmentType::kSet: parts.push_back(absl::StrCat("{", body, "}")); break;
      case AsSegmentType::kConfedSequence: parts.push_back(absl::StrCat("(", body, ")")); break;
      case AsSegmentType::kConfedSet: parts.push_back(absl::StrCat("[", body, "]")); break;
    }
  }
  return absl::StrJoin(parts, " ");
}

void PathAttributes::ReplaceLinkBandwidth(std::optional<wire::LinkBandwidth> lb) {
  std::erase_if(extended_communities,
                [](const ExtendedCommunity& ec) { return LinkBandwidth::FromExtendedCommunity(ec).has_value(); });
  if (lb) extended_communities.push_back(lb->ToExtendedCommunity());
}

bool DecodeNlriList(ByteSpan data, net::Afi afi, bool add_path, std::vector<net::Nlri>& out) {
  const uint8_t* p = data.data();
  const uint8_t* const end = p + data.size();
  const unsigned max_len = afi == net::Afi::kIpv4 ? 32 : 128;
  out.reserve(out.size() + data.size() / (afi == net::Afi::kIpv4 ? 4 : 7) + 1);
  while (p < end) {
    uint32_t path_id = 0;
    if (add_path) {
      if (end - p < 5) return false;
      path_id = (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
      p += 4;
    }
    const unsigned len = *p++;
    if (len > max_len) return false;
    const unsigned nbytes = (len + 7) / 8;
    if (static_cast<size_t>(end - p) < nbytes) return false;
    out.push_back(net::Nlri{net::Prefix::Make(afi, p, static_cast<uint8_t>(len)), path_id});
    p += nbytes;
  }
  return true;
}

void EncodeNlri(const net::Nlri& n, bool add_path, Bytes& out) {
  ByteWriter w(out);
  if (add_path) w.U32(n.path_id);
  w.U8(n.prefix.length());
  w.Append(n.prefix.bytes(), (n.prefix.length() + 7) / 8);
}

void EncodeAttributeHeader(uint8_t flags, uint8_t type, size_t value_len, Bytes& out) {
  ByteWriter w(out);
  flags &= static_cast<uint8_t>(~attr_flag::kExtendedLength);
  if (value_len > 255) {
    w.U8(flags | attr_flag::kExtendedLength);
    w.U8(type);
    w.U16(static_cast<uint16_t>(value_len));
  } else {
    w.U8(flags);
    w.U8(type);
    w.U8(static_cast<uint8_t>(value_len));
  }
}

void EncodeMpReachHeader(const MpReach& mp, Bytes& out) {
  ByteWriter w(out);
  w.U16(static_cast<uint16_t>(net::FamilyAfi(mp.family)));
  w.U8(static_cast<uint8_t>(net::Safi::kUnicast));
  const size_t nh_len = mp.next_hop.size() + (mp.link_local ? 16 : 0);
  w.U8(static_cast<uint8_t>(nh_len));
  w.Append(mp.next_hop.bytes(), mp.next_hop.size());
  if (mp.link_local) w.Append(mp.link_local->bytes(), 16);
  w.U8(0);  // reserved (was SNPA count)
}

namespace {

constexpr uint8_t kOT = attr_flag::kOptional | attr_flag::kTransitive;
constexpr uint8_t kON = attr_flag::kOptional;
constexpr uint8_t kWK = attr_flag::kTransitive;

// Decoder state for one attribute field.
class AttributeDecoder {
 public:
  AttributeDecoder(const CodecContext& ctx, AttributeDecodeResult& res) : ctx_(ctx), res_(res) {}

  void Run(ByteSpan field, bool has_ipv4_nlri);

 private:
  void Record(uint8_t type, ErrorAction action, uint8_t subcode, std::string reason, ByteSpan whole = {}) {
    res_.errors.push_back(AttributeError{type, action, subcode, std::move(reason)});
    if (action > res_.action) {
      res_.action = action;
      res_.notify_subcode = subcode;
      res_.notify_data.assign(whole.begin(), whole.end());
    }
  }
  // The attribute is malformed: apply its row of the RFC 7606 table.
  void Malformed(const AttributeRule& rule, uint8_t subcode, std::string reason, ByteSpan whole) {
    Record(rule.type, rule.on_malformed, subcode, absl::StrCat(rule.name, ": ", reason), whole);
  }
  bool DecodeAsPath(ByteSpan v, size_t as_size, AsPath& out, std::string& why);
  void DecodeKnown(const AttributeRule& rule, uint8_t flags, ByteSpan v, ByteSpan whole);
  void DecodeMpReach(const AttributeRule& rule, uint8_t flags, ByteSpan v, ByteSpan whole);
  void DecodeMpUnreach(const AttributeRule& rule, uint8_t flags, ByteSpan v, ByteSpan whole);
  void MergeAs4();

  const CodecContext& ctx_;
  AttributeDecodeResult& res_;
  PathAttributes& a_ = res_.attrs;
  std::optional<AsPath> as4_path_;
  std::optional<Aggregator> as4_aggregator_;
};

bool AttributeDecoder::DecodeAsPath(ByteSpan v, size_t as_size, AsPath& out, std::string& why) {
  ByteReader r(v);
  while (!r.empty()) {
    uint8_t type = 0, count = 0;
    if (!r.ReadU8(type) || !r.ReadU8(count)) {
      why = "a single octet left after the last segment";
      return false;
    }
    if (type < 1 || type > 4) {
      why = absl::StrFormat("unknown segment type %d", type);
      return false;
    }
    if (count == 0) {
      why = "segment of length zero";
      return false;
    }
    if (r.remaining() < count * as_size) {
      why = absl::StrFormat("segment of %d ASNs overruns the attribute", count);
      return false;
    }
    AsPathSegment seg{static_cast<AsSegmentType>(type), {}};
    seg.asns.reserve(count);
    for (int i = 0; i < count; ++i) {
      if (as_size == 4) {
        uint32_t asn = 0;
        r.ReadU32(asn);
        seg.asns.push_back(asn);
      } else {
        uint16_t asn = 0;
        r.ReadU16(asn);
        seg.asns.push_back(asn);
      }
    }
    out.segments.push_back(std::move(seg));
  }
  return true;
}

void AttributeDecoder::DecodeMpReach(const AttributeRule& rule, uint8_t flags, ByteSpan v, ByteSpan whole) {
  ByteReader r(v);
  uint16_t afi = 0;
  uint8_t safi = 0, nh_len = 0;
  if (!r.ReadU16(afi) || !r.ReadU8(safi)) {
    // RFC 7606 §7.11: the family cannot be determined → session reset.
    Record(rule.type, ErrorAction::kSessionReset, rule.subcode, "MP_REACH_NLRI: too short for AFI/SAFI", whole);
    return;
  }
  const auto family = net::FamilyFromAfiSafi(afi, safi);
  if (!family) {
    // RFC 4760: a family we do not route is ignored. Keep it visible.
    a_.unknown.push_back(UnknownAttribute{static_cast<uint8_t>(flags & ~attr_flag::kExtendedLength), rule.type, Bytes(v.begin(), v.end())});
    return;
  }
  auto disable = [&](std::string why) {
    res_.disabled_family = *family;
    Malformed(rule, rule.subcode, absl::StrCat(net::FamilyName(*family), " ", why), whole);
  };
  ByteSpan nh;
  uint8_t reserved = 0;
  if (!r.ReadU8(nh_len) || !r.ReadSpan(nh_len, nh) || !r.ReadU8(reserved)) {
    return disable("next hop length overruns the attribute");
  }
  MpReach mp;
  mp.family = *family;
  if (nh_len == 4 && *family == net::Family::kIpv4Unicast) {
    mp.next_hop = net::IpAddress::V4Bytes(nh.data());
  } else if (nh_len == 16 || nh_len == 32) {
    // IPv6 next hop; for IPv4 NLRI this is RFC 8950. 32 octets = global + link-local (RFC 2545 §3).
    mp.next_hop = net::IpAddress::V6Bytes(nh.data());
    if (nh_len == 32) mp.link_local = net::IpAddress::V6Bytes(nh.data() + 16);
  } else {
    return disable(absl::StrFormat("next hop length %d is invalid", nh_len));
  }
  if (!DecodeNlriList(r.Rest(), net::FamilyAfi(*family), ctx_.AddPath(*family), mp.nlri)) {
    return disable("NLRI malformed");
  }
  a_.mp_reach = std::move(mp);
}

void AttributeDecoder::DecodeMpUnreach(const AttributeRule& rule, uint8_t flags, ByteSpan v, ByteSpan whole) {
  ByteReader r(v);
  uint16_t afi = 0;
  uint8_t safi = 0;
  if (!r.ReadU16(afi) || !r.ReadU8(safi)) {
    Record(rule.type, ErrorAction::kSessionReset, rule.subcode, "MP_UNREACH_NLRI: too short for AFI/SAFI", whole);
    return;
  }
  const auto family = net::FamilyFromAfiSafi(afi, safi);
  if (!family) {
    a_.unknown.push_back(UnknownAttribute{static_cast<uint8_t>(flags & ~attr_flag::kExtendedLength), rule.type, Bytes(v.begin(), v.end())});
    return;
  }
  MpUnreach mp;
  mp.family = *family;
  if (!DecodeNlriList(r.Rest(), net::FamilyAfi(*family), ctx_.AddPath(*family), mp.withdrawn)) {
    res_.disabled_family = *family;
    return Malformed(rule, rule.subcode, absl::StrCat(net::FamilyName(*family), " withdrawn NLRI malformed"), whole);
  }
  a_.mp_unreach = std::move(mp);
}

template <class T, class F>
bool DecodeList(ByteSpan v, size_t item, std::vector<T>& out, F read_one) {
  if (v.empty() || v.size() % item != 0) return false;
  ByteReader r(v);
  out.reserve(v.size() / item);
  while (!r.empty()) out.push_back(read_one(r));
  return true;
}

void AttributeDecoder::DecodeKnown(const AttributeRule& rule, uint8_t flags, ByteSpan v, ByteSpan whole) {
  ByteReader r(v);
  const auto bad_len = [&](std::string_view expect) {
    Malformed(rule, update_error::kAttributeLengthError,
              absl::StrFormat("length %d, expected %s", v.size(), expect), whole);
  };
  const auto read_u32 = [&](std::optional<uint32_t>& out) {
    uint32_t x = 0;
    if (!r.ReadU32(x) || !r.empty()) return bad_len("4");
    out = x;
  };
  const auto read_u32_list = [&](std::vector<uint32_t>& out) {
    if (!DecodeList(v, 4, out, [](ByteReader& rr) {
          uint32_t x = 0;
          rr.ReadU32(x);
          return x;
        }))
      bad_len("a non-zero multiple of 4");
  };
  switch (static_cast<AttrType>(rule.type)) {
    case AttrType::kOrigin: {
      if (v.size() != 1) return bad_len("1");
      if (v[0] > 2) return Malformed(rule, rule.subcode, absl::StrFormat("undefined value %d", v[0]), whole);
      a_.origin = static_cast<Origin>(v[0]);
      return;
    }
    case AttrType::kAsPath: {
      AsPath path;
      std::string why;
      if (!DecodeAsPath(v, ctx_.four_octet_as ? 4 : 2, path, why)) return Malformed(rule, rule.subcode, why, whole);
      if (ctx_.ebgp && !ctx_.confederation_peer) {
        for (const auto& s : path.segments) {
          if (s.type == AsSegmentType::kConfedSequence || s.type == AsSegmentType::kConfedSet) {
            // RFC 5065 §5 / RFC 7606 §7.2: confederation segments from outside the confederation.
            return Malformed(rule, rule.subcode, "AS_CONFED segment from an eBGP peer outside the confederation",
                             whole);
          }
        }
      }
      a_.as_path = std::move(path);
      return;
    }
    case AttrType::kNextHop: {
      if (v.size() != 4) return bad_len("4");
      const net::IpAddress nh = net::IpAddress::V4Bytes(v.data());
      const uint32_t h = nh.v4();
      // RFC 4271 §6.3 semantic check: not 0.0.0.0, not broadcast, not class D/E.
      if (h == 0 || h == 0xffffffffu || (h >> 28) >= 0xe) {
        return Malformed(rule, rule.subcode, absl::StrCat("invalid address ", nh.ToString()), whole);
      }
      a_.next_hop = nh;
      return;
    }
    case AttrType::kMed: return read_u32(a_.med);
    case AttrType::kLocalPref: return read_u32(a_.local_pref);
    case AttrType::kAtomicAggregate:
      if (!v.empty()) return bad_len("0");
      a_.atomic_aggregate = true;
      return;
    case AttrType::kAggregator:
    case AttrType::kAs4Aggregator: {
      const bool as4 = rule.type == 18 || ctx_.four_octet_as;
      if (v.size() != (as4 ? 8u : 6u)) return bad_len(as4 ? "8" : "6");
      Aggregator ag;
      if (as4) {
        r.ReadU32(ag.asn);
      } else {
        uint16_t asn = 0;
        r.ReadU16(asn);
        ag.asn = asn;
      }
      ag.address = net::IpAddress::V4Bytes(r.cursor());
      if (rule.type == 18) {
        as4_aggregator_ = ag;
      } else {
        a_.aggregator = ag;
      }
      return;
    }
    case AttrType::kCommunities:
      return read_u32_list(a_.communities);
    case AttrType::kOriginatorId: return read_u32(a_.originator_id);
    case AttrType::kClusterList:
      return read_u32_list(a_.cluster_list);
    case AttrType::kMpReachNlri: return DecodeMpReach(rule, flags, v, whole);
    case AttrType::kMpUnreachNlri: return DecodeMpUnreach(rule, flags, v, whole);
    case AttrType::kExtendedCommunities:
      if (!DecodeList(v, 8, a_.extended_communities, [](ByteReader& rr) {
            uint64_t x = 0;
            rr.ReadU64(x);
            return ExtendedCommunity{x};
          }))
        return bad_len("a non-zero multiple of 8");
      return;
    case AttrType::kAs4Path: {
      AsPath path;
      std::string why;
      if (!DecodeAsPath(v, 4, path, why)) return Malformed(rule, rule.subcode, why, whole);
      // RFC 6793 §6: confederation segments in AS4_PATH are discarded, the rest is used.
      std::erase_if(path.segments, [](const AsPathSegment& s) {
        return s.type == AsSegmentType::kConfedSequence || s.type == AsSegmentType::kConfedSet;
      });
      as4_path_ = std::move(path);
      return;
    }
    case AttrType::kIpv6ExtendedCommunities:
      if (!DecodeList(v, 20, a_.ipv6_extended_communities, [](ByteReader& rr) {
            Ipv6ExtendedCommunity ec;
            std::copy_n(rr.cursor(), 20, ec.bytes.begin());
            rr.Skip(20);
            return ec;
          }))
        return bad_len("a non-zero multiple of 20");
      return;
    case AttrType::kLargeCommunities:
      if (!DecodeList(v, 12, a_.large_communities, [](ByteReader& rr) {
            LargeCommunity lc;
            rr.ReadU32(lc.global_admin);
            rr.ReadU32(lc.local1);
            rr.ReadU32(lc.local2);
            return lc;
          }))
        return bad_len("a non-zero multiple of 12");
      return;
  }
}

void AttributeDecoder::MergeAs4() {
  if (ctx_.four_octet_as) {
    // RFC 6793 §4.1: between two NEW speakers these attributes must not appear; discard.
    if (as4_path_) Record(17, ErrorAction::kAttributeDiscard, 0, "AS4_PATH on a 4-octet-AS session, ignored");
    if (as4_aggregator_)
      Record(18, ErrorAction::kAttributeDiscard, 0, "AS4_AGGREGATOR on a 4-octet-AS session, ignored");
    return;
  }
  // RFC 6793 §4.2.3.
  if (a_.aggregator && a_.aggregator->asn != kAsTrans) {
    return;  // AS4_AGGREGATOR and AS4_PATH are ignored
  }
  if (a_.aggregator && as4_aggregator_) a_.aggregator = as4_aggregator_;
  if (!as4_path_ || !a_.as_path) return;
  const size_t n = a_.as_path->Length(), m = as4_path_->Length();
  if (n < m) return;  // AS4_PATH is ignored
  size_t budget = n - m;
  AsPath merged;
  for (const auto& s : a_.as_path->segments) {
    if (s.type == AsSegmentType::kConfedSequence || s.type == AsSegmentType::kConfedSet) {
      merged.segments.push_back(s);
      continue;
    }
    if (budget == 0) break;
    if (s.type == AsSegmentType::kSet) {
      merged.segments.push_back(s);
      --budget;
      continue;
    }
    const size_t take = std::min(budget, s.asns.size());
    merged.segments.push_back(AsPathSegment{s.type, {s.asns.begin(), s.asns.begin() + take}});
    budget -= take;
  }
  for (const auto& s : as4_path_->segments) {
    if (!merged.segments.empty() && s.type == AsSegmentType::kSequence &&
        merged.segments.back().type == AsSegmentType::kSequence) {
      auto& back = merged.segments.back().asns;
      back.insert(back.end(), s.asns.begin(), s.asns.end());
    } else {
      merged.segments.push_back(s);
    }
  }
  a_.as_path = std::move(merged);
}

void AttributeDecoder::Run(ByteSpan field, bool has_ipv4_nlri) {
  ByteReader r(field);
  std::bitset<256> seen;
  while (!r.empty()) {
    const size_t start = r.position();
    uint8_t flags = 0, type = 0;
    uint16_t len = 0;
    bool header_ok = r.ReadU8(flags) && r.ReadU8(type);
    if (header_ok) {
      if (flags & attr_flag::kExtendedLength) {
        header_ok = r.ReadU16(len);
      } else {
        uint8_t l8 = 0;
        header_ok = r.ReadU8(l8);
        len = l8;
      }
    }
    if (!header_ok) {
      // RFC 7606 §4: too few octets left for an attribute header.
      Record(type, ErrorAction::kTreatAsWithdraw, update_error::kMalformedAttributeList,
             "attribute header truncated at the end of the path attributes");
      break;
    }
    ByteSpan value;
    if (!r.ReadSpan(len, value)) {
      // RFC 7606 §4: an attribute's length overruns the Total Path Attribute Length.
      Record(type, ErrorAction::kTreatAsWithdraw, update_error::kAttributeLengthError,
             absl::StrFormat("%s: length %d overruns the path attributes", AttributeName(type), len));
      break;
    }
    const ByteSpan whole = field.subspan(start, r.position() - start);
    if (seen[type]) {
      if (type == 14 || type == 15) {
        // RFC 7606 §3 (g): repeated MP_REACH/MP_UNREACH → Malformed Attribute List.
        Record(type, ErrorAction::kSessionReset, update_error::kMalformedAttributeList,
               absl::StrCat(AttributeName(type), " appears more than once"));
      } else {
        Record(type, ErrorAction::kAttributeDiscard, update_error::kMalformedAttributeList,
               absl::StrCat(AttributeName(type), " appears more than once; later copies discarded"));
      }
      continue;
    }
    seen[type] = true;
    const AttributeRule* rule = FindAttributeRule(type);
    if (rule == nullptr) {
      if (!(flags & attr_flag::kOptional)) {
        Record(type, ErrorAction::kSessionReset, update_error::kUnrecognizedWellKnownAttribute,
               absl::StrFormat("unrecognized well-known attribute %d", type), whole);
        continue;
      }
      // RFC 4271 §5: an unrecognized optional transitive attribute is passed on with
      // the Partial bit set; store it that way so the encoder re-sends it correctly.
      uint8_t keep = flags & static_cast<uint8_t>(~attr_flag::kExtendedLength);
      if (keep & attr_flag::kTransitive) keep |= attr_flag::kPartial;
      a_.unknown.push_back(UnknownAttribute{keep, type, Bytes(value.begin(), value.end())});
      continue;
    }
    if ((flags & (attr_flag::kOptional | attr_flag::kTransitive)) != ExpectedFlags(rule->category)) {
      // RFC 7606 §3 (c): flags in conflict with the attribute's definition → malformed.
      if (type == 14 || type == 15) {
        Record(type, ErrorAction::kSessionReset, update_error::kAttributeFlagsError,
               absl::StrFormat("%s: flags 0x%02x conflict with its definition", rule->name, flags), whole);
      } else {
        Malformed(*rule, update_error::kAttributeFlagsError,
                  absl::StrFormat("flags 0x%02x conflict with its definition", flags), whole);
      }
      continue;
    }
    if (rule->discard_from_ebgp && ctx_.ebgp && !ctx_.confederation_peer) {
      Record(type, ErrorAction::kAttributeDiscard, 0,
             absl::StrCat(rule->name, " received from an eBGP peer, ignored (", rule->rfc, ")"));
      continue;
    }
    DecodeKnown(*rule, flags, value, whole);
  }
  MergeAs4();
  // Unknown attributes in type order, as the encoder writes them, so decode∘encode is stable.
  std::stable_sort(a_.unknown.begin(), a_.unknown.end(),
                   [](const UnknownAttribute& x, const UnknownAttribute& y) { return x.type < y.type; });

  // RFC 7606 §3 (d): mandatory attributes, only when the UPDATE announces something.
  const bool announces = has_ipv4_nlri || (a_.mp_reach && !a_.mp_reach->nlri.empty());
  if (announces && res_.action < ErrorAction::kTreatAsWithdraw) {
    const auto missing = [&](uint8_t t) {
      Record(t, ErrorAction::kTreatAsWithdraw, update_error::kMissingWellKnownAttribute,
             absl::StrCat("missing well-known attribute ", AttributeName(t)));
    };
    if (!a_.origin && !seen[1]) missing(1);
    if (!a_.as_path && !seen[2]) missing(2);
    if (has_ipv4_nlri && !a_.next_hop && !seen[3]) missing(3);
  }
}

void EncodeAsPath(const AsPath& path, bool four_octet, bool drop_confed, Bytes& out) {
  ByteWriter w(out);
  for (const auto& s : path.segments) {
    if (drop_confed && (s.type == AsSegmentType::kConfedSequence || s.type == AsSegmentType::kConfedSet)) continue;
    // A segment holds at most 255 ASNs; longer ones are split (same type).
    for (size_t i = 0; i < s.asns.size() || (i == 0 && s.asns.empty()); i += 255) {
      const size_t n = std::min<size_t>(255, s.asns.size() - i);
      w.U8(static_cast<uint8_t>(s.type));
      w.U8(static_cast<uint8_t>(n));
      for (size_t k = i; k < i + n; ++k) {
        if (four_octet) {
          w.U32(s.asns[k]);
        } else {
          w.U16(static_cast<uint16_t>(s.asns[k] > 0xffff ? kAsTrans : s.asns[k]));
        }
      }
      if (s.asns.empty()) break;
    }
  }
}

// Appends one attribute: header + value produced by `body`.
template <class F>
void Attr(uint8_t flags, uint8_t type, Bytes& out, F body) {
  Bytes value;
  body(value);
  EncodeAttributeHeader(flags, type, value.size(), out);
  out.insert(out.end(), value.begin(), value.end());
}

}  // namespace

AttributeDecodeResult DecodePathAttributes(ByteSpan field, const CodecContext& ctx, bool has_ipv4_nlri) {
  AttributeDecodeResult res;
  AttributeDecoder(ctx, res).Run(field, has_ipv4_nlri);
  return res;
}

void EncodePathAttributes(const PathAttributes& a, const CodecContext& ctx, Bytes& out) {
  std::vector<const UnknownAttribute*> unknown;
  for (const auto& u : a.unknown) unknown.push_back(&u);
  std::stable_sort(unknown.begin(), unknown.end(), [](auto* x, auto* y) { return x->type < y->type; });
  auto next_unknown = unknown.begin();
  // Unknown attributes are interleaved so the whole list is in ascending type order.
  auto unknown_below = [&](int type) {
    for (; next_unknown != unknown.end() && (*next_unknown)->type < type; ++next_unknown) {
      const UnknownAttribute& u = **next_unknown;
      EncodeAttributeHeader(u.flags, u.type, u.value.size(), out);
      out.insert(out.end(), u.value.begin(), u.value.end());
    }
  };
  const auto u32 = [](uint32_t x) { return [x](Bytes& v) { ByteWriter(v).U32(x); }; };
  bool needs_as4_path = false;

  unknown_below(1);
  if (a.origin) Attr(kWK, 1, out, [&](Bytes& v) { v.push_back(static_cast<uint8_t>(*a.origin)); });
  unknown_below(2);
  if (a.as_path) {
    Attr(kWK, 2, out, [&](Bytes& v) { EncodeAsPath(*a.as_path, ctx.four_octet_as, false, v); });
    if (!ctx.four_octet_as) {
      for (const auto& s : a.as_path->segments)
        for (uint32_t asn : s.asns) needs_as4_path |= asn > 0xffff;
    }
  }
  unknown_below(3);
  if (a.next_hop) Attr(kWK, 3, out, [&](Bytes& v) { ByteWriter(v).Append(a.next_hop->bytes(), 4); });
  unknown_below(4);
  if (a.med) Attr(kON, 4, out, u32(*a.med));
  unknown_below(5);
  if (a.local_pref) Attr(kWK, 5, out, u32(*a.local_pref));
  unknown_below(6);
  if (a.atomic_aggregate) Attr(kWK, 6, out, [](Bytes&) {});
  unknown_below(7);
  if (a.aggregator) {
    Attr(kOT, 7, out, [&](Bytes& v) {
      ByteWriter w(v);
      if (ctx.four_octet_as) {
        w.U32(a.aggregator->asn);
      } else {
        w.U16(static_cast<uint16_t>(a.aggregator->asn > 0xffff ? kAsTrans : a.aggregator->asn));
      }
      w.Append(a.aggregator->address.bytes(), 4);
    });
  }
  unknown_below(8);
  if (!a.communities.empty()) {
    Attr(kOT, 8, out, [&](Bytes& v) {
      for (uint32_t c : a.communities) ByteWriter(v).U32(c);
    });
  }
  unknown_below(9);
  if (a.originator_id) Attr(kON, 9, out, u32(*a.originator_id));
  unknown_below(10);
  if (!a.cluster_list.empty()) {
    Attr(kON, 10, out, [&](Bytes& v) {
      for (uint32_t c : a.cluster_list) ByteWriter(v).U32(c);
    });
  }
  unknown_below(14);
  if (a.mp_reach) {
    Attr(kON, 14, out, [&](Bytes& v) {
      EncodeMpReachHeader(*a.mp_reach, v);
      const bool ap = ctx.AddPath(a.mp_reach->family);
      for (const auto& n : a.mp_reach->nlri) EncodeNlri(n, ap, v);
    });
  }
  unknown_below(15);
  if (a.mp_unreach) {
    Attr(kON, 15, out, [&](Bytes& v) {
      ByteWriter w(v);
      w.U16(static_cast<uint16_t>(net::FamilyAfi(a.mp_unreach->family)));
      w.U8(static_cast<uint8_t>(net::Safi::kUnicast));
      const bool ap = ctx.AddPath(a.mp_unreach->family);
      for (const auto& n : a.mp_unreach->withdrawn) EncodeNlri(n, ap, v);
    });
  }
  unknown_below(16);
  if (!a.extended_communities.empty()) {
    Attr(kOT, 16, out, [&](Bytes& v) {
      for (const auto& c : a.extended_communities) ByteWriter(v).U64(c.raw);
    });
  }
  unknown_below(17);
  if (needs_as4_path) {
    // RFC 6793 §4.2.2: AS4_PATH carries the true path, without confederation segments.
    Attr(kOT, 17, out, [&](Bytes& v) { EncodeAsPath(*a.as_path, true, true, v); });
  }
  unknown_below(18);
  if (!ctx.four_octet_as && a.aggregator && a.aggregator->asn > 0xffff) {
    Attr(kOT, 18, out, [&](Bytes& v) {
      ByteWriter w(v);
      w.U32(a.aggregator->asn);
      w.Append(a.aggregator->address.bytes(), 4);
    });
  }
  unknown_below(25);
  if (!a.ipv6_extended_communities.empty()) {
    Attr(kOT, 25, out, [&](Bytes& v) {
      for (const auto& c : a.ipv6_extended_communities) ByteWriter(v).Append(c.bytes.data(), 20);
    });
  }
  unknown_below(32);
  if (!a.large_communities.empty()) {
    Attr(kOT, 32, out, [&](Bytes& v) {
      ByteWriter w(v);
      for (const auto& c : a.large_communities) {
        w.U32(c.global_admin);
        w.U32(c.local1);
        w.U32(c.local2);
      }
    });
  }
  unknown_below(256);
}

}  // namespace bagd::wire
