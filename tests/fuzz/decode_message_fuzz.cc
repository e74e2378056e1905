// Fuzz target: the message decoder and the stream framer, under every decode context.
// Whatever decodes must re-encode, and the re-encoding must decode to the same value.
#include <cstdint>
#include <cstdlib>

#include "wire/message.h"

using namespace bagd::wire;
using namespace bagd::net;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  CodecContext ctx;
  ctx.four_octet_as = data[0] & 1;
  ctx.extended_message = data[0] & 2;
  ctx.add_path = {static_cast<bool>(data[0] & 4), static_cast<bool>(data[0] & 8)};
  ctx.ebgp = data[0] & 16;
  ByteSpan rest(data + 1, size - 1);
  // Walk the input as a stream, as a session would.
  while (!rest.empty()) {
    const Frame f = NextFrame(rest, ctx);
    if (f.kind != Frame::kMessage) break;
    auto d = DecodeMessage(rest.first(f.size), ctx);
    if (d.ok()) {
      auto bytes = EncodeMessage(d.value(), ctx);
      if (bytes.ok()) {
        auto again = DecodeMessage(*bytes, ctx);
        if (!again.ok()) std::abort();
        // Values the encoder normalises (error lists, AS4 merge, open param form) aside,
        // a clean UPDATE must round-trip exactly.
        if (const auto* u = std::get_if<UpdateMessage>(&d.value())) {
          const auto* u2 = std::get_if<UpdateMessage>(&again.value());
          if (!u2) std::abort();
          if (u->action == ErrorAction::kNone && ctx.four_octet_as &&
              (u2->nlri != u->nlri || u2->withdrawn != u->withdrawn || !(u2->attrs == u->attrs)))
            std::abort();
        }
      }
    }
    rest = rest.subspan(f.size);
  }
  return 0;
}
