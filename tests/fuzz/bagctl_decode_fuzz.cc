// Fuzz target: `bagctl decode`'s input path (hex parsing, marker handling, splitting,
// decoding, JSON and text rendering).
#include <cstdint>
#include <string_view>

#include "tools/bagctl/decode_command.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  bagd::wire::CodecContext ctx;
  std::string trailing;
  auto decoded = bagd::bagctl::DecodeHexInput(text, ctx, &trailing);
  if (!decoded.ok()) return 0;
  for (size_t i = 0; i < decoded->size(); ++i) {
    (void)bagd::bagctl::MessageToJson((*decoded)[i], ctx).dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
    (void)bagd::bagctl::MessageToText((*decoded)[i], ctx, i);
  }
  return 0;
}
