#include "conf/rate_text.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <string>
#include <system_error>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace bagd::conf {

namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsSpace(char c) { return c == ' ' || c == '\t'; }
char Lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

// absl::StrCat in the abseil this builds with takes absl::string_view, not std::string_view.
absl::string_view View(std::string_view s) { return absl::string_view(s.data(), s.size()); }

constexpr std::string_view kUseUnits =
    "use a number with K, M, G or T (bits per second), e.g. \"100G\"";

absl::Status Bad(std::string_view text, std::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("\"", View(text), "\": ", View(why)));
}

bool EqualsIgnoringCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (Lower(a[i]) != Lower(b[i])) return false;
  }
  return true;
}

// The character at `at` as the user sees it: one ASCII character or one whole UTF-8
// sequence (so that "10µ" names 'µ', not half of it).
std::string_view CharacterAt(std::string_view s, std::size_t at) {
  std::size_t end = at + 1;
  if (static_cast<unsigned char>(s[at]) >= 0xc0) {
    while (end < s.size() && (static_cast<unsigned char>(s[end]) & 0xc0) == 0x80) ++end;
  }
  return s.substr(at, end - at);
}

}  // namespace

absl::StatusOr<double> ParseRate(std::string_view text) {
  std::string_view s = text;
  while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  if (s.empty()) {
    return Bad(text, "no rate given: write bits per second with a unit, e.g. \"100G\", "
                     "\"2.5G\" or \"800M\"");
  }
  if (s.front() == '-') {
    return Bad(text, "a rate cannot be negative: use 0 (a drained link) or more, e.g. \"100G\"");
  }
  if (s.front() == '+') return Bad(text, "write the number without a sign, e.g. \"100G\"");
  if (s.front() == '.' && s.size() > 1 && IsDigit(s[1])) {
    return Bad(text, absl::StrCat("write a digit before the decimal point: \"0",
                                  View(s), "\""));
  }
  if (!IsDigit(s.front())) {
    return Bad(text, absl::StrCat("not a number: ", View(kUseUnits)));
  }

  // The number: digits, optionally a decimal point and more digits.
  std::size_t i = 0;
  while (i < s.size() && IsDigit(s[i])) ++i;
  if (i < s.size() && s[i] == '.') {
    ++i;
    if (i == s.size() || !IsDigit(s[i])) {
      return Bad(text, "a digit must follow the decimal point, e.g. \"2.5G\"");
    }
    while (i < s.size() && IsDigit(s[i])) ++i;
    if (i < s.size() && s[i] == '.') return Bad(text, "more than one decimal point");
  }
  const std::string_view number = s.substr(0, i);
  if (i + 1 < s.size() && s[i] == ',' && IsDigit(s[i + 1])) {
    return Bad(text, "use a decimal point, not a comma, e.g. \"2.5G\"");
  }
  while (i < s.size() && IsSpace(s[i])) ++i;

  // The unit letter, then "bps", "bit/s" or "b/s".
  if (i + 1 < s.size() && (s[i] == 'e' || s[i] == 'E') &&
      (IsDigit(s[i + 1]) || s[i + 1] == '+' || s[i + 1] == '-')) {
    return Bad(text, "exponents are not accepted: use a unit instead, e.g. \"1G\" for 1e9 "
                     "bits per second");
  }
  int exponent = 0;
  std::string_view unit;
  if (i < s.size() && s[i] != 'b' && s[i] != 'B') {
    switch (Lower(s[i])) {
      case 'k': exponent = 3; break;
      case 'm': exponent = 6; break;
      case 'g': exponent = 9; break;
      case 't': exponent = 12; break;
      default:
        return Bad(text, absl::StrCat("unknown unit '", View(CharacterAt(s, i)), "': ",
                                      View(kUseUnits)));
    }
    unit = s.substr(i, 1);
    ++i;
  }
  if (const std::string_view suffix = s.substr(i); !suffix.empty()) {
    const std::string written = absl::StrCat(View(number), View(unit));
    if (suffix.front() == 'B' && !EqualsIgnoringCase(suffix, "bit/s")) {
      return Bad(text, absl::StrCat("'B' means bytes; rates are in bits per second: write \"",
                                    written, unit.empty() ? "bps" : "", "\" or \"", written,
                                    "bit/s\""));
    }
    if (!EqualsIgnoringCase(suffix, "bps") && !EqualsIgnoringCase(suffix, "bit/s") &&
        !EqualsIgnoringCase(suffix, "b/s")) {
      return Bad(text, absl::StrCat("unexpected \"", View(suffix), "\" after \"", written,
                                    "\": write \"", written, "\", \"", written, "bps\" or \"",
                                    written, "bit/s\""));
    }
  }

  // The decimal value the text spells, correctly rounded: "2.5G" is read as "2.5e9".
  const std::string decimal = absl::StrCat(View(number), "e", exponent);
  double value = 0;
  const auto [end, error] = std::from_chars(decimal.data(), decimal.data() + decimal.size(), value);
  if (error == std::errc::result_out_of_range ||
      (error == std::errc() && value > kMaxRateBitsPerSecond)) {
    return Bad(text, "above 1000T (1e15 bits per second), the largest rate bagd accepts");
  }
  if (error != std::errc() || end != decimal.data() + decimal.size() || !std::isfinite(value)) {
    return Bad(text, absl::StrCat("not a number: ", View(kUseUnits)));  // not reached
  }
  return value;
}

std::string FormatRate(double bps) {
  if (std::isnan(bps)) return "nan";
  if (std::isinf(bps)) return bps > 0 ? "inf" : "-inf";
  if (bps < 0) return "-" + FormatRate(-bps);
  if (bps == 0) return "0";
  // The shortest fixed-point text that reads back as `bps` (up to 309 integer digits).
  char buffer[512];
  const auto [end, error] =
      std::to_chars(buffer, buffer + sizeof buffer, bps, std::chars_format::fixed);
  if (error != std::errc()) return "nan";  // not reached: the buffer fits any double
  const std::string_view fixed(buffer, static_cast<std::size_t>(end - buffer));
  const std::size_t point = fixed.find('.');
  const std::string_view whole = fixed.substr(0, point);
  const std::string_view fraction =
      point == std::string_view::npos ? std::string_view() : fixed.substr(point + 1);
  if (whole == "0") return std::string(fixed);  // below 1 bit per second: no unit
  // Move the decimal point 3, 6, 9 or 12 places left, as far as the whole part allows: the
  // digits stay the same, so the text still reads back exactly as `bps`.
  static constexpr const char* kUnits[] = {"", "K", "M", "G", "T"};
  const std::size_t steps = std::min<std::size_t>(4, (whole.size() - 1) / 3);
  const std::size_t split = whole.size() - 3 * steps;
  std::string digits = absl::StrCat(View(whole.substr(split)), View(fraction));
  while (!digits.empty() && digits.back() == '0') digits.pop_back();
  return absl::StrCat(View(whole.substr(0, split)), digits.empty() ? "" : ".", digits,
                      kUnits[steps]);
}

}  // namespace bagd::conf
