// Turning what an engineer pastes into BGP messages: hex with or without separators
// (spaces, colons, newlines, "0x"), each message with or without its 16-octet marker,
// several messages back to back.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "wire/byte_io.h"

namespace bagd::bagctl {

// Hex text → bytes. Lines starting with '#' are comments.
absl::StatusOr<wire::Bytes> ParseHex(std::string_view text);

// One message as found in the input, marker restored.
struct RawMessage {
  size_t offset = 0;  // where it starts in the pasted bytes
  bool had_marker = true;
  wire::Bytes bytes;
};

// Splits the pasted bytes into messages. A message that does not start with the marker is
// taken to be marker-less (length, type, body) and gets the marker back. Returns what was
// split so far plus an error for trailing bytes that do not make a whole message.
struct SplitResult {
  std::vector<RawMessage> messages;
  std::string trailing_error;  // empty when every byte was used
};
SplitResult SplitMessages(const wire::Bytes& data);

}  // namespace bagd::bagctl
