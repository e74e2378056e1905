// Presentation of decoded BGP messages for `bagctl decode`: JSON with stable field
// names (docs/bagctl-decode.md) and a readable text form.
#pragma once

#include <string>

#include "wire/message.h"
#include "nlohmann/json.hpp"
#include "tools/bagctl/hex_input.h"

namespace bagd::bagctl {

// One message's decode outcome.
struct DecodedMessage {
  RawMessage raw;
  std::optional<wire::Message> message;      // set when it decoded (maybe with RFC 7606 errors)
  std::optional<wire::DecodeError> error;    // set when the session would be reset
  // True if this message would make bagd do anything but accept it as is.
  bool malformed() const;
};

nlohmann::json MessageToJson(const DecodedMessage& d, const wire::CodecContext& ctx);
std::string MessageToText(const DecodedMessage& d, const wire::CodecContext& ctx, size_t index);

}  // namespace bagd::bagctl
