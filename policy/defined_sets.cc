#include "policy/defined_sets.h"

#include <algorithm>
#include <charconv>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "conf/policy_text.h"
#include "re2/re2.h"

namespace bagd::policy {

namespace {

net::IpAddress ToAddress(const conf::IpAddressText& a) {
  return a.v6 ? net::IpAddress::V6Bytes(a.bytes.data()) : net::IpAddress::V4Bytes(a.bytes.data());
}

net::Prefix HostPrefix(const net::IpAddress& a) {
  return net::Prefix::Make(a.afi(), a.bytes(), static_cast<uint8_t>(a.size() * 8));
}

absl::Status InSet(absl::string_view kind, absl::string_view name, const absl::Status& status) {
  return absl::InvalidArgumentError(absl::StrCat(kind, " \"", name, "\": ", status.message()));
}

}  // namespace

absl::StatusOr<net::Prefix> PrefixFromText(const std::string& text) {
  const std::optional<conf::PrefixText> p = conf::ParsePrefixText(text);
  if (!p) return absl::InvalidArgumentError(absl::StrCat("\"", text, "\" is not a prefix such as 10.0.0.0/8"));
  if (p->HasHostBits()) return absl::InvalidArgumentError(absl::StrCat(text, " has host bits set"));
  return net::Prefix::Make(p->address.v6 ? net::Afi::kIpv6 : net::Afi::kIpv4, p->address.bytes.data(),
                            static_cast<uint8_t>(p->length));
}

absl::StatusOr<net::IpAddress> AddressFromText(const std::string& text) {
  const auto a = conf::ParseIpAddressText(text);
  if (!a) return absl::InvalidArgumentError(absl::StrCat("\"", text, "\" ", conf::SyntaxProblem(text)));
  return ToAddress(*a);
}

// --- PrefixSet -------------------------------------------------------------------------------

PrefixSet PrefixSet::Make(std::string name, const std::vector<Entry>& entries) {
  PrefixSet set;
  set.name_ = std::move(name);
  for (const Entry& e : entries) {
    PerFamily& f = set.families_[static_cast<int>(e.prefix.family())];
    f.entries[e.prefix].emplace_back(e.ge, e.le);
    if (std::find(f.lengths.begin(), f.lengths.end(), e.prefix.length()) == f.lengths.end()) {
      f.lengths.push_back(e.prefix.length());
    }
  }
  for (PerFamily& f : set.families_) std::sort(f.lengths.begin(), f.lengths.end());
  return set;
}

absl::StatusOr<PrefixSet> PrefixSet::Compile(const config::v1::PrefixSet& set) {
  std::vector<Entry> entries;
  for (const config::v1::PrefixSetEntry& e : set.prefixes()) {
    const absl::StatusOr<net::Prefix> prefix = PrefixFromText(e.prefix());
    if (!prefix.ok()) return InSet("prefix set", set.name(), prefix.status());
    // The same rule as the validator (and FRR): len <= ge <= le <= max; 0 = not given.
    const uint32_t len = prefix->length(), max = prefix->afi() == net::Afi::kIpv4 ? 32 : 128;
    const uint32_t ge = e.ge() != 0 ? e.ge() : len;
    const uint32_t le = e.le() != 0 ? e.le() : (e.ge() != 0 ? max : len);
    if (ge < len || le > max || ge > le) {
      return absl::InvalidArgumentError(absl::StrCat("prefix set \"", set.name(), "\": ", e.prefix(), " ge ", ge,
                                                     " le ", le, " is not within ", len, "..", max));
    }
    entries.push_back({*prefix, static_cast<uint8_t>(ge), static_cast<uint8_t>(le)});
  }
  return Make(set.name(), entries);
}

absl::StatusOr<PrefixSet> PrefixSet::CompileNextHops(const config::v1::NextHopSet& set) {
  std::vector<Entry> entries;
  for (const std::string& text : set.next_hops()) {
    net::Prefix prefix;
    if (text.find('/') == std::string::npos) {
      const absl::StatusOr<net::IpAddress> a = AddressFromText(text);
      if (!a.ok()) return InSet("next-hop set", set.name(), a.status());
      prefix = HostPrefix(*a);
    } else {
      const absl::StatusOr<net::Prefix> p = PrefixFromText(text);
      if (!p.ok()) return InSet("next-hop set", set.name(), p.status());
      prefix = *p;
    }
    const uint8_t max = prefix.afi() == net::Afi::kIpv4 ? 32 : 128;
    entries.push_back({prefix, prefix.length(), max});
  }
  return Make(set.name(), entries);
}

bool PrefixSet::Contains(const net::Prefix& route) const {
  const PerFamily& f = families_[static_cast<int>(route.family())];
  for (const uint8_t length : f.lengths) {
    if (length > route.length()) break;
    const auto it = f.entries.find(net::Prefix::Make(route.afi(), route.bytes(), length));
    if (it == f.entries.end()) continue;
    for (const auto& [ge, le] : it->second) {
      if (route.length() >= ge && route.length() <= le) return true;
    }
  }
  return false;
}

bool PrefixSet::Contains(const net::IpAddress& address) const { return Contains(HostPrefix(address)); }

// --- CommunitySet ----------------------------------------------------------------------------

absl::StatusOr<CommunitySet> CommunitySet::Compile(const config::v1::CommunitySet& set) {
  CommunitySet out;
  out.name_ = set.name();
  for (const std::string& text : set.communities()) {
    const absl::StatusOr<conf::CommunityText> c = conf::ParseCommunityText(text);
    if (!c.ok()) return InSet("community set", set.name(), c.status());
    switch (c->kind) {
      case conf::CommunityText::Kind::kStandard: out.standard_.push_back(c->standard); break;
      case conf::CommunityText::Kind::kLarge:
        out.large_.emplace_back(c->large[0], c->large[1], c->large[2]);
        break;
      case conf::CommunityText::Kind::kExtended: out.extended_.push_back(c->extended); break;
      case conf::CommunityText::Kind::kLinkBandwidth:
        // Transitive, as FRR and Junos send it; matched as the exact 8 octets.
        out.extended_.push_back(
            wire::LinkBandwidth::FromBitsPerSecond(c->lb_asn, c->lb_bits_per_second, true).ToExtendedCommunity().raw);
        break;
    }
  }
  auto sort_unique = [](auto& v) {
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
  };
  sort_unique(out.standard_);
  sort_unique(out.large_);
  sort_unique(out.extended_);
  return out;
}

bool CommunitySet::ContainsAny(const wire::PathAttributes& attrs) const {
  for (const uint32_t c : attrs.communities) {
    if (std::binary_search(standard_.begin(), standard_.end(), c)) return true;
  }
  for (const wire::LargeCommunity& c : attrs.large_communities) {
    if (std::binary_search(large_.begin(), large_.end(), std::tuple(c.global_admin, c.local1, c.local2))) return true;
  }
  for (const wire::ExtendedCommunity& c : attrs.extended_communities) {
    if (std::binary_search(extended_.begin(), extended_.end(), c.raw)) return true;
  }
  return false;
}

bool CommunitySet::ContainsAll(const wire::PathAttributes& attrs) const {
  // A route carries a few communities and a set names a few: linear scans are cheapest.
  for (const uint32_t c : standard_) {
    if (std::find(attrs.communities.begin(), attrs.communities.end(), c) == attrs.communities.end()) return false;
  }
  for (const auto& [g, l1, l2] : large_) {
    if (std::find(attrs.large_communities.begin(), attrs.large_communities.end(), wire::LargeCommunity{g, l1, l2}) ==
        attrs.large_communities.end()) {
      return false;
    }
  }
  for (const uint64_t c : extended_) {
    if (std::find(attrs.extended_communities.begin(), attrs.extended_communities.end(),
                  wire::ExtendedCommunity{c}) == attrs.extended_communities.end()) {
      return false;
    }
  }
  return true;
}

bool CommunitySet::Match(const wire::PathAttributes& attrs, MatchType type) const {
  switch (type) {
    case MatchType::kAny: return ContainsAny(attrs);
    case MatchType::kAll: return ContainsAll(attrs);
    case MatchType::kInvert: return !ContainsAny(attrs);
  }
  return false;
}

// --- AS paths --------------------------------------------------------------------------------

void RenderAsPath(const wire::AsPath& path, std::string& out) {
  out.clear();
  char digits[10];
  for (const wire::AsPathSegment& s : path.segments) {
    if (!out.empty()) out += ' ';
    const bool sequence = s.type == wire::AsSegmentType::kSequence || s.type == wire::AsSegmentType::kConfedSequence;
    switch (s.type) {
      case wire::AsSegmentType::kSequence: break;
      case wire::AsSegmentType::kSet: out += '{'; break;
      case wire::AsSegmentType::kConfedSequence: out += '('; break;
      case wire::AsSegmentType::kConfedSet: out += '['; break;
    }
    for (size_t i = 0; i < s.asns.size(); ++i) {
      if (i > 0) out += sequence ? ' ' : ',';
      const auto [end, ec] = std::to_chars(digits, digits + sizeof digits, s.asns[i]);
      out.append(digits, end);
    }
    switch (s.type) {
      case wire::AsSegmentType::kSequence: break;
      case wire::AsSegmentType::kSet: out += '}'; break;
      case wire::AsSegmentType::kConfedSequence: out += ')'; break;
      case wire::AsSegmentType::kConfedSet: out += ']'; break;
    }
  }
}

absl::StatusOr<AsPathSet> AsPathSet::Compile(const config::v1::AsPathSet& set) {
  AsPathSet out;
  out.name_ = set.name();
  RE2::Options options;
  options.set_log_errors(false);
  for (const std::string& regex : set.regexes()) {
    auto re = std::make_shared<const RE2>(conf::TranslateAsPathRegex(regex), options);
    if (!re->ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("AS-path set \"", set.name(), "\": regex \"", regex, "\" does not compile: ",
                                                      conf::CheckAsPathRegex(regex).message()));
    }
    out.regexes_.push_back(std::move(re));
  }
  return out;
}

bool AsPathSet::Match(std::string_view text, MatchType type) const {
  const re2::StringPiece piece(text.data(), text.size());
  auto matches = [&](const std::shared_ptr<const RE2>& re) { return RE2::PartialMatch(piece, *re); };
  switch (type) {
    case MatchType::kAny: return std::any_of(regexes_.begin(), regexes_.end(), matches);
    case MatchType::kAll: return std::all_of(regexes_.begin(), regexes_.end(), matches);
    case MatchType::kInvert: return std::none_of(regexes_.begin(), regexes_.end(), matches);
  }
  return false;
}

// --- NeighborSet -----------------------------------------------------------------------------

absl::StatusOr<NeighborSet> NeighborSet::Compile(const config::v1::NeighborSet& set) {
  NeighborSet out;
  out.name_ = set.name();
  for (const std::string& text : set.addresses()) {
    const absl::StatusOr<net::IpAddress> a = AddressFromText(text);
    if (!a.ok()) return InSet("neighbor set", set.name(), a.status());
    out.addresses_.push_back(*a);
  }
  std::sort(out.addresses_.begin(), out.addresses_.end());
  return out;
}

bool NeighborSet::Contains(const net::IpAddress& address) const {
  return std::binary_search(addresses_.begin(), addresses_.end(), address);
}

}  // namespace bagd::policy
