// Helpers shared by the unit tests.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "wire/message.h"

namespace bagd::test {

// Hex (spaces allowed) → bytes. Aborts the test on bad input.
wire::Bytes Hex(std::string_view hex);
std::string ToHex(wire::ByteSpan bytes);

// A file of tests/data/wire/: '#' comments, one '# context: ...' line, one message per line.
struct WireVector {
  std::string name;
  std::string description;  // the comment lines
  wire::CodecContext ctx;
  std::vector<wire::Bytes> messages;
};
std::vector<WireVector> LoadWireVectors();  // every *.hex in tests/data/wire, sorted by name
std::string TestDataPath(std::string_view relative);

// Decode that must succeed.
wire::Message MustDecode(wire::ByteSpan bytes, const wire::CodecContext& ctx);
wire::Bytes MustEncode(const wire::Message& m, const wire::CodecContext& ctx);

// A whole UPDATE message around raw withdrawn/attribute/NLRI fields (lengths computed).
wire::Bytes RawUpdate(std::string_view withdrawn_hex, std::string_view attrs_hex, std::string_view nlri_hex);

}  // namespace bagd::test
