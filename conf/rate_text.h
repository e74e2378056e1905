// Rates in the configuration (link bandwidth): text such as "100G" <-> bits per second.
//
// Accepted (ParseRate):
//   "10000000000"             plain bits per second (a decimal fraction is allowed: "1.5")
//   "100G" "2.5G" "800M" "1T" a decimal number and an SI unit K, M, G or T (x 1e3, 1e6, 1e9,
//                             1e12); the unit letter in either case ("100g")
//   "400Gbps" "25Gbit/s"      ... optionally followed by "bps", "bit/s" or "b/s" (also
//   "100Gb/s" "1000bps"       without a unit letter: "1000bps" is 1000 bits per second)
// Spaces around the text and between the number and the unit are ignored ("100 Gbps").
// The result is 0 (a drained link) up to kMaxRateBitsPerSecond (1e15, "1000T").
// Rejected, each with an actionable message: empty text, negative numbers, NaN/infinity,
// exponents ("1e9"), decimal commas ("2,5G"), other units ("10Q", "1P"), bytes ("100GB/s"),
// anything after the unit, and values above 1e15 bits per second.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace bagd::conf {

// The largest rate a configuration may give: 1000 Tbit/s, far above any link, and small
// enough that the link bandwidth community (float32 bytes per second) holds it easily.
inline constexpr double kMaxRateBitsPerSecond = 1e15;

// `text` as bits per second. The value is the decimal number the text spells, correctly
// rounded to a double ("0.1G" is exactly 1e8). On failure an InvalidArgument status whose
// message quotes the text and says what to write instead, e.g.
//   "10Q": unknown unit 'Q': use a number with K, M, G or T (bits per second), e.g. "100G"
// so callers prefix it with the field name: `link_bandwidth "10Q": unknown unit ...`.
absl::StatusOr<double> ParseRate(std::string_view text);

// `bps` in the shortest form with the largest unit that keeps it exact: 100e9 -> "100G",
// 2.5e9 -> "2.5G", 800e6 -> "800M", 1e12 -> "1T", 1500 -> "1.5K", 999 -> "999", 0 -> "0".
// ParseRate(FormatRate(x)) == x for every x that ParseRate can return. Out-of-range input
// is still written ("2000T", "-1G", "inf", "nan") but does not parse back.
std::string FormatRate(double bps);

}  // namespace bagd::conf
