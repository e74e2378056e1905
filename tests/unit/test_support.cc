#include "tests/unit/test_support.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "tools/bagctl/hex_input.h"

namespace bagd::test {

wire::Bytes Hex(std::string_view hex) {
  auto b = bagctl::ParseHex(hex);
  if (!b.ok()) FAIL("bad hex in test: " << b.status().message());
  return *b;
}

std::string ToHex(wire::ByteSpan bytes) {
  static const char* d = "0123456789abcdef";
  std::string s;
  for (uint8_t b : bytes) {
    s.push_back(d[b >> 4]);
    s.push_back(d[b & 15]);
  }
  return s;
}

std::string TestDataPath(std::string_view relative) { return std::string(BAGD_TEST_DATA_DIR) + "/" + std::string(relative); }

namespace {

void ApplyContext(std::string_view line, wire::CodecContext& ctx) {
  ctx = wire::CodecContext{};
  ctx.ebgp = false;
  for (absl::string_view kv : absl::StrSplit(absl::string_view(line.data(), line.size()), ' ', absl::SkipEmpty())) {
    std::vector<std::string> parts = absl::StrSplit(kv, absl::MaxSplits('=', 1));
    if (parts.size() != 2) continue;
    if (parts[0] == "four-octet-as") ctx.four_octet_as = parts[1] == "1";
    if (parts[0] == "ext-message" || parts[0] == "extended-message") ctx.extended_message = parts[1] == "1";
    if (parts[0] == "ebgp") ctx.ebgp = parts[1] == "1";
    if (parts[0] == "add-path") {
      ctx.add_path[0] = absl::StrContains(parts[1], "ipv4");
      ctx.add_path[1] = absl::StrContains(parts[1], "ipv6");
    }
  }
}

}  // namespace

std::vector<WireVector> LoadWireVectors() {
  std::vector<WireVector> out;
  const std::filesystem::path dir = TestDataPath("wire");
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() != ".hex") continue;
    WireVector v;
    v.name = e.path().filename().string();
    v.ctx.ebgp = false;
    std::ifstream in(e.path());
    std::string line;
    while (std::getline(in, line)) {
      absl::string_view l = absl::StripAsciiWhitespace(line);
      if (l.empty()) continue;
      if (absl::ConsumePrefix(&l, "#")) {
        l = absl::StripLeadingAsciiWhitespace(l);
        if (absl::ConsumePrefix(&l, "context:")) {
          ApplyContext(std::string_view(l.data(), l.size()), v.ctx);
        } else {
          v.description += std::string(l) + "\n";
        }
        continue;
      }
      v.messages.push_back(Hex(std::string_view(l.data(), l.size())));
    }
    out.push_back(std::move(v));
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  return out;
}

wire::Message MustDecode(wire::ByteSpan bytes, const wire::CodecContext& ctx) {
  auto d = wire::DecodeMessage(bytes, ctx);
  if (!d.ok()) {
    FAIL("decode failed: " << d.error().reason << " ("
                           << wire::DescribeNotification(d.error().notification.code, d.error().notification.subcode)
                           << ") for " << ToHex(bytes));
  }
  return std::move(d).value();
}

wire::Bytes MustEncode(const wire::Message& m, const wire::CodecContext& ctx) {
  auto b = wire::EncodeMessage(m, ctx);
  if (!b.ok()) FAIL("encode failed: " << b.status().message());
  return *b;
}

wire::Bytes RawUpdate(std::string_view withdrawn_hex, std::string_view attrs_hex, std::string_view nlri_hex) {
  const wire::Bytes w = Hex(withdrawn_hex), a = Hex(attrs_hex), n = Hex(nlri_hex);
  wire::Bytes m(16, 0xff);
  const size_t len = 19 + 2 + w.size() + 2 + a.size() + n.size();
  m.push_back(static_cast<uint8_t>(len >> 8));
  m.push_back(static_cast<uint8_t>(len));
  m.push_back(2);
  m.push_back(static_cast<uint8_t>(w.size() >> 8));
  m.push_back(static_cast<uint8_t>(w.size()));
  m.insert(m.end(), w.begin(), w.end());
  m.push_back(static_cast<uint8_t>(a.size() >> 8));
  m.push_back(static_cast<uint8_t>(a.size()));
  m.insert(m.end(), a.begin(), a.end());
  m.insert(m.end(), n.begin(), n.end());
  return m;
}

}  // namespace bagd::test
