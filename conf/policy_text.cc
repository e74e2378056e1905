#include "conf/policy_text.h"

#include <charconv>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "conf/rate_text.h"
#include "re2/re2.h"

namespace bagd::conf {

namespace {

// A decimal number without sign, spaces or leading '+' that fits in `max`.
// Debian's abseil has its own string_view (not std::string_view): the parsing below works on
// absl::string_view, converted once at the entry points.
absl::string_view Absl(std::string_view s) { return absl::string_view(s.data(), s.size()); }

std::optional<uint64_t> Number(absl::string_view text, uint64_t max) {
  if (text.empty() || text.size() > 10) return std::nullopt;
  uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || value > max) return std::nullopt;
  return value;
}

absl::Status Invalid(absl::string_view text, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("\"", text, "\": ", why));
}

// RFC 1997, RFC 8326, RFC 7999.
struct WellKnown {
  const char* name;
  uint32_t value;
};
constexpr WellKnown kWellKnown[] = {
    {"no-export", 0xFFFFFF01},           {"no-advertise", 0xFFFFFF02},
    {"no-export-subconfed", 0xFFFFFF03}, {"graceful-shutdown", 0xFFFF0000},
    {"blackhole", 0xFFFF029A},
};

constexpr uint32_t kMax16 = 0xFFFF;
constexpr uint32_t kMax32 = 0xFFFFFFFF;

}  // namespace

bool PrefixText::HasHostBits() const {
  bool host_bits = false;
  for (int bit = length; bit < max_length(); ++bit) host_bits |= (address.bytes[bit / 8] >> (7 - bit % 8)) & 1;
  return host_bits;
}

std::optional<PrefixText> ParsePrefixText(const std::string& text) {
  const size_t slash = text.find('/');
  if (slash == std::string::npos) return std::nullopt;
  const auto address = ParseIpAddressText(text.substr(0, slash));
  if (!address) return std::nullopt;
  PrefixText p{*address, 0};
  const auto length = Number(absl::string_view(text).substr(slash + 1), static_cast<uint64_t>(p.max_length()));
  if (!length || text.size() - slash - 1 > 3) return std::nullopt;
  p.length = static_cast<int>(*length);
  return p;
}

absl::StatusOr<CommunityText> ParseCommunityText(std::string_view written) {
  const absl::string_view text = Absl(written);
  CommunityText c;
  for (const WellKnown& w : kWellKnown) {
    if (text == w.name) {
      c.standard = w.value;
      return c;
    }
  }
  const std::vector<absl::string_view> parts = absl::StrSplit(text, ':');
  if (parts[0] == "rt" || parts[0] == "soo") {
    // RFC 4360 §4: sub-type 0x02 route target, 0x03 route origin; type 0x00 (2-octet AS)
    // or 0x02 (4-octet AS, RFC 5668).
    const uint64_t subtype = parts[0] == "rt" ? 0x02 : 0x03;
    const auto as = parts.size() == 3 ? Number(parts[1], kMax32) : std::nullopt;
    const auto value = parts.size() == 3 ? Number(parts[2], kMax32) : std::nullopt;
    if (!as || !value) {
      return Invalid(text, absl::StrCat("write ", parts[0], ":AS:NUMBER, e.g. \"", parts[0], ":65000:100\""));
    }
    c.kind = CommunityText::Kind::kExtended;
    if (*as <= kMax16) {
      c.extended = (uint64_t{0x00} << 56) | (subtype << 48) | (*as << 32) | *value;
    } else if (*value <= kMax16) {
      c.extended = (uint64_t{0x02} << 56) | (subtype << 48) | (*as << 16) | *value;
    } else {
      return Invalid(text, "with a 4-octet AS the number is 0..65535 (RFC 5668)");
    }
    return c;
  }
  if (parts[0] == "lb") {
    const auto as = parts.size() == 3 ? Number(parts[1], kMax32) : std::nullopt;
    if (!as) return Invalid(text, "write lb:AS:RATE, e.g. \"lb:65000:10G\"");
    const absl::StatusOr<double> rate = ParseRate(std::string_view(parts[2].data(), parts[2].size()));
    if (!rate.ok()) return Invalid(text, rate.status().message());
    c.kind = CommunityText::Kind::kLinkBandwidth;
    c.lb_asn = static_cast<uint32_t>(*as);
    c.lb_bits_per_second = *rate;
    return c;
  }
  if (parts.size() == 2) {
    const auto as = Number(parts[0], kMax16);
    const auto value = Number(parts[1], kMax16);
    if (!as || !value) {
      return Invalid(text, "a standard community is AS:VALUE, each 0..65535 (RFC 1997), e.g. \"65000:100\"");
    }
    c.standard = static_cast<uint32_t>(*as << 16 | *value);
    return c;
  }
  if (parts.size() == 3) {
    c.kind = CommunityText::Kind::kLarge;
    for (int i = 0; i < 3; ++i) {
      const auto part = Number(parts[i], kMax32);
      if (!part) {
        return Invalid(text, "a large community is GLOBAL:LOCAL1:LOCAL2, each 0..4294967295 (RFC 8092)");
      }
      c.large[i] = static_cast<uint32_t>(*part);
    }
    return c;
  }
  return Invalid(text,
                 "not a community: write \"65000:100\" (standard), \"65000:1:2\" (large), "
                 "\"rt:65000:100\", \"soo:65000:100\", \"lb:65000:10G\" (extended) or a well-known "
                 "name such as \"no-export\"");
}

std::string TranslateAsPathRegex(std::string_view regex) {
  std::string out;
  out.reserve(regex.size() + 16);
  bool in_class = false;
  for (size_t i = 0; i < regex.size(); ++i) {
    const char ch = regex[i];
    if (ch == '\\' && i + 1 < regex.size()) {  // an escape is copied as is, `\_` included
      out += ch;
      out += regex[++i];
      continue;
    }
    if (in_class) {
      if (ch == ']') in_class = false;
      out += ch;
    } else if (ch == '[') {
      in_class = true;
      out += ch;
      // "[]abc]" and "[^]abc]": a leading ']' is a member, not the end.
      if (i + 1 < regex.size() && regex[i + 1] == '^') out += regex[++i];
      if (i + 1 < regex.size() && regex[i + 1] == ']') out += regex[++i];
    } else if (ch == '_') {
      out += "(?:^|$|[ ,{}()])";
    } else {
      out += ch;
    }
  }
  return out;
}

absl::Status CheckAsPathRegex(std::string_view regex) {
  RE2::Options options;
  options.set_log_errors(false);
  const RE2 re(TranslateAsPathRegex(regex), options);
  if (re.ok()) return absl::OkStatus();
  // RE2 quotes the pattern it was given, the translation: say it in the user's terms when
  // the regex as written has the same problem (`_` is an ordinary character to RE2).
  const RE2 as_written(std::string(regex), options);
  return absl::InvalidArgumentError(as_written.ok() ? re.error() : as_written.error());
}

}  // namespace bagd::conf
