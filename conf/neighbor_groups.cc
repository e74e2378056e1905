#include "conf/neighbor_groups.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <map>
#include <tuple>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "conf/config_defaults.h"

namespace bagd::conf {

namespace {

namespace v1 = bagd::config::v1;
namespace pb = google::protobuf;

// The names below are this file's contract with bagd.proto (SchemaField aborts on a wrong one).
constexpr auto Field = SchemaField;


constexpr size_t kMaxGroupName = 64;

bool GoodGroupName(const std::string& name) {
  if (name.empty() || name.size() > kMaxGroupName) return false;
  for (char c : name) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') return false;
  }
  return true;
}

// One field of `from` onto `to` (same message type), replacing what `to` had.
void CopyField(const pb::Message& from, pb::Message& to, const pb::FieldDescriptor* f) {
  const pb::Reflection* r = from.GetReflection();
  const pb::Reflection* w = to.GetReflection();
  w->ClearField(&to, f);
  if (f->is_repeated()) {
    for (int j = 0; j < r->FieldSize(from, f); ++j) {
      switch (f->cpp_type()) {
        case pb::FieldDescriptor::CPPTYPE_INT32: w->AddInt32(&to, f, r->GetRepeatedInt32(from, f, j)); break;
        case pb::FieldDescriptor::CPPTYPE_INT64: w->AddInt64(&to, f, r->GetRepeatedInt64(from, f, j)); break;
        case pb::FieldDescriptor::CPPTYPE_UINT32: w->AddUInt32(&to, f, r->GetRepeatedUInt32(from, f, j)); break;
        case pb::FieldDescriptor::CPPTYPE_UINT64: w->AddUInt64(&to, f, r->GetRepeatedUInt64(from, f, j)); break;
        case pb::FieldDescriptor::CPPTYPE_DOUBLE: w->AddDouble(&to, f, r->GetRepeatedDouble(from, f, j)); break;
        case pb::FieldDescriptor::CPPTYPE_FLOAT: w->AddFloat(&to, f, r->GetRepeatedFloat(from, f, j)); break;
        case pb::FieldDescriptor::CPPTYPE_BOOL: w->AddBool(&to, f, r->GetRepeatedBool(from, f, j)); break;
        case pb::FieldDescriptor::CPPTYPE_ENUM: w->AddEnumValue(&to, f, r->GetRepeatedEnumValue(from, f, j)); break;
        case pb::FieldDescriptor::CPPTYPE_STRING: w->AddString(&to, f, r->GetRepeatedString(from, f, j)); break;
        case pb::FieldDescriptor::CPPTYPE_MESSAGE: w->AddMessage(&to, f)->CopyFrom(r->GetRepeatedMessage(from, f, j)); break;
      }
    }
    return;
  }
  switch (f->cpp_type()) {
    case pb::FieldDescriptor::CPPTYPE_INT32: w->SetInt32(&to, f, r->GetInt32(from, f)); break;
    case pb::FieldDescriptor::CPPTYPE_INT64: w->SetInt64(&to, f, r->GetInt64(from, f)); break;
    case pb::FieldDescriptor::CPPTYPE_UINT32: w->SetUInt32(&to, f, r->GetUInt32(from, f)); break;
    case pb::FieldDescriptor::CPPTYPE_UINT64: w->SetUInt64(&to, f, r->GetUInt64(from, f)); break;
    case pb::FieldDescriptor::CPPTYPE_DOUBLE: w->SetDouble(&to, f, r->GetDouble(from, f)); break;
    case pb::FieldDescriptor::CPPTYPE_FLOAT: w->SetFloat(&to, f, r->GetFloat(from, f)); break;
    case pb::FieldDescriptor::CPPTYPE_BOOL: w->SetBool(&to, f, r->GetBool(from, f)); break;
    case pb::FieldDescriptor::CPPTYPE_ENUM: w->SetEnumValue(&to, f, r->GetEnumValue(from, f)); break;
    case pb::FieldDescriptor::CPPTYPE_STRING: w->SetString(&to, f, r->GetString(from, f)); break;
    case pb::FieldDescriptor::CPPTYPE_MESSAGE: w->MutableMessage(&to, f)->CopyFrom(r->GetMessage(from, f)); break;
  }
}

// What `own` (the neighbor's block, at `at` in the file) sets, onto `merged` (its group's
// settings): a list it has replaces the group's; a block it has is merged field by field; a
// value with presence when present; a plain yes/no, number or text when not the default or
// when written in the file (so `passive: false` in the neighbor overrides the group's true).
void Overlay(const pb::Message& own, pb::Message& merged, const FieldPath& at, const FieldLocator* locator) {
  const pb::Descriptor* d = own.GetDescriptor();
  const pb::Reflection* r = own.GetReflection();
  for (int k = 0; k < d->field_count(); ++k) {
    const pb::FieldDescriptor* f = d->field(k);
    const FieldPath path = Child(at, f);
    if (f->is_repeated()) {
      if (r->FieldSize(own, f) > 0) CopyField(own, merged, f);
    } else if (f->cpp_type() == pb::FieldDescriptor::CPPTYPE_MESSAGE) {
      if (r->HasField(own, f)) Overlay(r->GetMessage(own, f), *merged.GetReflection()->MutableMessage(&merged, f), path, locator);
    } else if (r->HasField(own, f) || (!f->has_presence() && locator != nullptr && locator->Find(path).has_value())) {
      CopyField(own, merged, f);
    }
  }
}

// A unicast address inside `range` for a group's template: its first host (the address
// itself for a /32 or /128).
std::string FirstHost(const net::Prefix& range) {
  const unsigned bits = range.afi() == net::Afi::kIpv4 ? 32 : 128;
  std::array<uint8_t, 16> b{};
  std::memcpy(b.data(), range.bytes(), bits / 8);
  if (range.length() < bits) b[bits / 8 - 1] |= 1;  // host bits are clear: the last one set
  return (range.afi() == net::Afi::kIpv4 ? net::IpAddress::V4Bytes(b.data()) : net::IpAddress::V6Bytes(b.data())).ToString();
}

bool Contains(const net::Prefix& range, const net::IpAddress& address) {
  return range.afi() == address.afi() && net::Prefix::Make(address.afi(), address.bytes(), range.length()) == range;
}

class Expander {
 public:
  Expander(const v1::Config& config, std::string_view file_name, const FieldLocator* locator)
      : config_(config), file_name_(file_name), locator_(locator) {}

  ExpandedNeighbors Run() {
    ExpandedNeighbors out;
    CheckGroups();
    CheckMembers();
    std::stable_sort(errors_.begin(), errors_.end(), [](const ConfigError& a, const ConfigError& b) {
      return std::tie(a.line, a.column) < std::tie(b.line, b.column);
    });
    out.errors = std::move(errors_);
    out.config = config_;
    if (!out.errors.empty()) {
      for (int i = 0; i < config_.neighbors_size(); ++i) out.origins.push_back({i, -1, NeighborName(i)});
      return out;
    }
    out.config.clear_neighbors();
    std::vector<int> members(config_.neighbor_groups_size(), 0);
    for (int i = 0; i < config_.neighbors_size(); ++i) {
      const v1::Neighbor& own = config_.neighbors(i);
      if (own.group().empty()) {
        *out.config.add_neighbors() = own;
        out.origins.push_back({i, -1, NeighborName(i)});
        continue;
      }
      const int g = by_name_.at(own.group());
      ++members[g];
      v1::Neighbor merged = config_.neighbor_groups(g).settings();
      Overlay(own, merged, {{neighbors_, i}}, locator_);
      *out.config.add_neighbors() = std::move(merged);
      out.origins.push_back({i, g, absl::StrCat(NeighborName(i), " (group ", own.group(), ")")});
    }
    for (int g = 0; g < config_.neighbor_groups_size(); ++g) {
      const v1::NeighborGroup& group = config_.neighbor_groups(g);
      if (group.listen_ranges().empty() && members[g] > 0) continue;
      v1::Neighbor made = group.settings();
      made.set_group(group.name());
      if (!group.listen_ranges().empty()) {
        made.set_address(FirstHost(*net::Prefix::Parse(group.listen_ranges(0))));
        made.set_passive(true);
      } else {
        const bool v6 = made.local_address().find(':') != std::string::npos;
        made.set_address(v6 ? "2001:db8::1" : "192.0.2.1");  // RFC 3849 / RFC 5737
      }
      *out.config.add_neighbors() = std::move(made);
      out.origins.push_back({-1, g, absl::StrCat("group ", group.name())});
    }
    return out;
  }

 private:
  void Error(const FieldPath& path, std::string message) {
    const SourceLocation at = locator_ != nullptr ? locator_->Locate(path) : SourceLocation{};
    errors_.push_back(ConfigError{std::string(file_name_), at.line, at.column, Printable(message)});
  }
  std::string AtLine(const FieldPath& path) const {
    const auto at = locator_ != nullptr ? locator_->Find(path) : std::nullopt;
    return at ? absl::StrCat(" at line ", at->line) : std::string();
  }
  std::string NeighborName(int i) const {
    const std::string& a = config_.neighbors(i).address();
    return a.empty() ? absl::StrCat("neighbor #", i + 1) : absl::StrCat("neighbor ", a);
  }

  void CheckGroups() {
    const pb::Descriptor* d = v1::NeighborGroup::descriptor();
    const pb::Descriptor* nd = v1::Neighbor::descriptor();
    std::map<net::Prefix, FieldPath> ranges;
    for (int g = 0; g < config_.neighbor_groups_size(); ++g) {
      const v1::NeighborGroup& group = config_.neighbor_groups(g);
      const FieldPath base = {{groups_, g}};
      auto path = [&](const char* name, int index = -1) { return Child(base, Field(d, name), index); };
      const FieldPath settings = path("settings");
      std::string prefix = absl::StrCat("neighbor group \"", group.name(), "\": ");
      if (group.name().empty()) {
        prefix = absl::StrCat("neighbor group #", g + 1, ": ");
        Error(base, absl::StrCat(prefix, "name is required (neighbors name their group with `group`)"));
      } else if (!GoodGroupName(group.name())) {
        Error(path("name"), absl::StrCat(prefix, "name may hold letters, digits, '-', '_' and '.', at most ",
                                         kMaxGroupName, " characters"));
      } else if (const auto [it, inserted] = by_name_.emplace(group.name(), g); !inserted) {
        Error(path("name"), absl::StrCat("neighbor group \"", group.name(), "\" is already defined",
                                         AtLine(Child({{groups_, it->second}}, Field(d, "name"))),
                                         ": each name may appear only once"));
      }
      if (!group.settings().address().empty()) {
        Error(Child(settings, Field(nd, "address")),
              absl::StrCat(prefix, "settings cannot set address: each neighbor has its own (a dynamic neighbor's "
                                   "is the address its connection comes from)"));
      }
      if (!group.settings().group().empty()) {
        Error(Child(settings, Field(nd, "group")), absl::StrCat(prefix, "settings cannot name a group: groups do not nest"));
      }
      for (int j = 0; j < group.listen_ranges_size(); ++j) {
        const std::string& text = group.listen_ranges(j);
        auto parsed = net::Prefix::Parse(text);
        if (!parsed.ok()) {
          Error(path("listen_ranges", j), absl::StrCat(prefix, "listen range \"", text,
                                                       "\" is not a prefix (e.g. 10.1.0.0/16 or 2001:db8:1::/48)"));
          continue;
        }
        if (parsed->address() != net::IpAddress::Parse(text.substr(0, text.find('/'))).value_or(parsed->address())) {
          Error(path("listen_ranges", j), absl::StrCat(prefix, "listen range ", text, " has host bits set: use ",
                                                       parsed->ToString()));
          continue;
        }
        if (const auto [it, inserted] = ranges.emplace(*parsed, path("listen_ranges", j)); !inserted) {
          Error(path("listen_ranges", j), absl::StrCat(prefix, "listen range ", text, " is already given",
                                                       AtLine(it->second), ": each range may belong to one group"));
        }
      }
      if (group.has_listen_limit() && (group.listen_limit() == 0 || group.listen_limit() > kMaxListenLimit)) {
        Error(path("listen_limit"), absl::StrCat(prefix, "listen_limit ", group.listen_limit(),
                                                 " is out of range: use 1..", kMaxListenLimit));
      }
      if (!group.listen_ranges().empty()) {
        for (const char* key : {"password", "password_file"}) {
          const pb::FieldDescriptor* f = Field(nd, key);
          if (group.settings().GetReflection()->HasField(group.settings(), f)) {
            Error(Child(settings, f), absl::StrCat(prefix, key,
                                                   " is not supported with listen_ranges: the kernel's TCP-MD5 key "
                                                   "is per address; configure those neighbors one by one"));
          }
        }
      }
    }
  }

  void CheckMembers() {
    const pb::FieldDescriptor* group_field = Field(v1::Neighbor::descriptor(), "group");
    for (int i = 0; i < config_.neighbors_size(); ++i) {
      const std::string& name = config_.neighbors(i).group();
      if (name.empty() || by_name_.contains(name)) continue;
      std::vector<std::string> known;
      for (const auto& [known_name, g] : by_name_) known.push_back(absl::StrCat("\"", known_name, "\""));
      Error(Child({{neighbors_, i}}, group_field),
            absl::StrCat(NeighborName(i), ": group \"", name, "\" is not defined in neighbor_groups",
                         known.empty() ? std::string() : absl::StrCat(" (defined: ", absl::StrJoin(known, ", "), ")")));
    }
  }

  const v1::Config& config_;
  std::string_view file_name_;
  const FieldLocator* locator_;
  const pb::FieldDescriptor* neighbors_ = Field(v1::Config::descriptor(), "neighbors");
  const pb::FieldDescriptor* groups_ = Field(v1::Config::descriptor(), "neighbor_groups");
  std::map<std::string, int> by_name_;
  std::vector<ConfigError> errors_;
};

}  // namespace

ExpandedNeighbors ExpandNeighborGroups(const v1::Config& config, std::string_view file_name,
                                       const FieldLocator* locator) {
  return Expander(config, file_name, locator).Run();
}

std::optional<SourceLocation> ExpandedFieldLocator::Find(const FieldPath& path) const {
  static const pb::FieldDescriptor* const neighbors = Field(v1::Config::descriptor(), "neighbors");
  static const pb::FieldDescriptor* const groups = Field(v1::Config::descriptor(), "neighbor_groups");
  static const pb::FieldDescriptor* const settings = Field(v1::NeighborGroup::descriptor(), "settings");
  if (file_ == nullptr) return std::nullopt;
  if (path.empty() || path[0].first != neighbors || path[0].second < 0 ||
      static_cast<size_t>(path[0].second) >= origins_.size()) {
    return file_->Find(path);
  }
  const NeighborOrigin& o = origins_[static_cast<size_t>(path[0].second)];
  const FieldPath rest(path.begin() + 1, path.end());
  if (o.neighbor >= 0) {
    FieldPath own = {{neighbors, o.neighbor}};
    own.insert(own.end(), rest.begin(), rest.end());
    if (auto at = file_->Find(own)) return at;
  }
  if (o.group >= 0) {
    FieldPath in_group = {{groups, o.group}};
    if (!rest.empty()) {
      in_group.emplace_back(settings, -1);
      in_group.insert(in_group.end(), rest.begin(), rest.end());
    }
    if (auto at = file_->Find(in_group)) return at;
  }
  return std::nullopt;
}

void DropTemplates(ExpandedNeighbors& expanded) {
  auto* list = expanded.config.mutable_neighbors();
  int kept = 0;
  for (int i = 0; i < list->size(); ++i) {
    if (expanded.origins[static_cast<size_t>(i)].neighbor < 0) continue;
    if (kept != i) list->SwapElements(kept, i);
    expanded.origins[static_cast<size_t>(kept)] = expanded.origins[static_cast<size_t>(i)];
    ++kept;
  }
  while (list->size() > kept) list->RemoveLast();
  expanded.origins.resize(static_cast<size_t>(kept));
}

std::optional<ListenRangeMatch> MatchListenRange(const v1::Config& config, const net::IpAddress& address) {
  std::optional<ListenRangeMatch> best;
  int best_length = -1;
  for (int g = 0; g < config.neighbor_groups_size(); ++g) {
    for (const std::string& text : config.neighbor_groups(g).listen_ranges()) {
      auto range = net::Prefix::Parse(text);
      if (!range.ok() || !Contains(*range, address) || range->length() <= best_length) continue;
      best_length = range->length();
      best = ListenRangeMatch{g, text};
    }
  }
  return best;
}

v1::Neighbor DynamicNeighbor(const v1::Config& config, int group, const net::IpAddress& address) {
  const v1::NeighborGroup& g = config.neighbor_groups(group);
  v1::Neighbor n = g.settings();
  n.set_address(address.ToString());
  n.set_group(g.name());
  n.set_passive(true);
  ApplyNeighborDefaults(config.router(), n);
  return n;
}

}  // namespace bagd::conf
