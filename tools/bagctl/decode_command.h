// `bagctl decode`: offline decoding of pasted BGP messages (no daemon needed).
#pragma once

#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

#include "tools/bagctl/decode_render.h"

namespace bagd::bagctl {

inline constexpr int kExitOk = 0;
inline constexpr int kExitMalformed = 1;  // at least one message would not be accepted as is
inline constexpr int kExitUsage = 2;      // bad arguments or input that is not hex

struct DecodeOptions {
  wire::CodecContext ctx;
  bool json = false;
};

// Parses the flags of `bagctl decode`; non-flag arguments are hex appended to `hex`.
absl::Status ParseDecodeArgs(const std::vector<std::string>& args, DecodeOptions& opts, std::string& hex);

// Decodes every message in `hex` (the pure part, also used by the fuzz target).
absl::StatusOr<std::vector<DecodedMessage>> DecodeHexInput(std::string_view hex, const wire::CodecContext& ctx,
                                                           std::string* trailing_error);

// The whole command: returns the exit code.
int RunDecode(const std::vector<std::string>& args, std::istream& in, std::ostream& out, std::ostream& err);

}  // namespace bagd::bagctl
