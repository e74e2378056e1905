// UTF-8 checks for the control API.
//
// Proto3 `string` fields must hold valid UTF-8: protobuf refuses to parse a message that
// does not, so one neighbor whose peer sent a broken FQDN or RFC 9003 message would make
// the whole ListNeighbors answer unreadable. The server therefore scrubs what it sends,
// and checks what it is asked to send to a peer (RFC 9003 §2: UTF-8, RFC 3629).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace google::protobuf {
class Message;
}  // namespace google::protobuf

namespace bagd::control {

// RFC 3629 well-formed UTF-8: no overlong forms, no surrogates, nothing above U+10FFFF.
bool IsValidUtf8(std::string_view text);

// `text` with every ill-formed sequence replaced by U+FFFD.
std::string ToValidUtf8(std::string_view text);

// Replaces ill-formed UTF-8 in every `string` field of `message`, nested messages included.
// Returns how many field values were changed.
size_t ScrubInvalidUtf8(google::protobuf::Message& message);

}  // namespace bagd::control
