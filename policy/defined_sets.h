// The defined sets of the routing policy (conf/bagd.proto DefinedSets), compiled once into
// immutable lookup structures: prefix sets as hash maps per entry length, communities as
// sorted flat vectors, AS-path regexes compiled by RE2. Every Match* function is read-only
// and allocates nothing, so sets are shared by all policies and statements that name them.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"
#include "wire/path_attributes.h"
#include "conf/bagd.pb.h"

namespace re2 {
class RE2;
}

namespace bagd::policy {

// How a route's values are compared with a set (SetMatchType in bagd.proto).
enum class MatchType : uint8_t { kAny, kAll, kInvert };

// Prefixes with length ranges. An entry P ge A le B matches a route prefix R when R lies in
// P and A <= len(R) <= B. Entries are keyed by P in one hash map per family; a lookup masks R
// to each distinct entry length <= len(R) (at most 33 or 129, in practice a handful), so the
// cost does not grow with the number of entries.
class PrefixSet {
 public:
  struct Entry {
    net::Prefix prefix;
    uint8_t ge = 0;
    uint8_t le = 0;
  };
  static PrefixSet Make(std::string name, const std::vector<Entry>& entries);
  // From the config; InvalidArgument on a prefix or range the validator would reject.
  static absl::StatusOr<PrefixSet> Compile(const config::v1::PrefixSet& set);
  // A next-hop set: each address is an exact host prefix, each prefix covers its longer ones.
  static absl::StatusOr<PrefixSet> CompileNextHops(const config::v1::NextHopSet& set);

  bool Contains(const net::Prefix& route) const;
  bool Contains(const net::IpAddress& address) const;  // as a /32 or /128
  const std::string& name() const { return name_; }

 private:
  using Ranges = absl::InlinedVector<std::pair<uint8_t, uint8_t>, 1>;  // (ge, le)
  struct PerFamily {
    std::vector<uint8_t> lengths;  // distinct entry lengths, ascending
    absl::flat_hash_map<net::Prefix, Ranges> entries;
  };
  std::string name_;
  PerFamily families_[net::kFamilyCount];
};

// Standard, large and extended communities, each kind a sorted vector.
class CommunitySet {
 public:
  static absl::StatusOr<CommunitySet> Compile(const config::v1::CommunitySet& set);
  // kAny: some community of the route is in the set; kAll: every member of the set is on
  // the route; kInvert: none of the route's communities is in the set.
  bool Match(const wire::PathAttributes& attrs, MatchType type) const;
  const std::string& name() const { return name_; }

 private:
  bool ContainsAny(const wire::PathAttributes& attrs) const;
  bool ContainsAll(const wire::PathAttributes& attrs) const;
  std::string name_;
  std::vector<uint32_t> standard_;
  std::vector<std::tuple<uint32_t, uint32_t, uint32_t>> large_;
  std::vector<uint64_t> extended_;
};

// The AS path as FRR prints it for regex matching: "65001 65002 {65003,65004} (65010 65011)"
// (sequence members separated by a space, sets in braces with commas, confederation
// sequences in parentheses, confederation sets in square brackets). Written into `out`,
// whose capacity is reused: no allocation once it has grown to the longest path seen.
void RenderAsPath(const wire::AsPath& path, std::string& out);

// FRR/GoBGP-style regexes (conf/policy_text.h TranslateAsPathRegex), compiled once.
class AsPathSet {
 public:
  static absl::StatusOr<AsPathSet> Compile(const config::v1::AsPathSet& set);
  // kAny: a regex matches the text; kAll: every regex does; kInvert: none does.
  bool Match(std::string_view as_path_text, MatchType type) const;
  const std::string& name() const { return name_; }

 private:
  std::string name_;
  std::vector<std::shared_ptr<const re2::RE2>> regexes_;
};

// Neighbor addresses, sorted.
class NeighborSet {
 public:
  static absl::StatusOr<NeighborSet> Compile(const config::v1::NeighborSet& set);
  bool Contains(const net::IpAddress& address) const;
  const std::string& name() const { return name_; }

 private:
  std::string name_;
  std::vector<net::IpAddress> addresses_;
};

// Conversions from the config's text forms (conf/policy_text.h) to codec values.
absl::StatusOr<net::Prefix> PrefixFromText(const std::string& text);
absl::StatusOr<net::IpAddress> AddressFromText(const std::string& text);

}  // namespace bagd::policy
