#include "tools/bagctl/hex_input.h"

#include "absl/strings/str_format.h"

namespace bagd::bagctl {
namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

absl::StatusOr<wire::Bytes> ParseHex(std::string_view text) {
  wire::Bytes out;
  int pending = -1;
  size_t line = 1;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n') {
      ++line;
      continue;
    }
    if (c == '#' && (i == 0 || text[i - 1] == '\n')) {
      while (i + 1 < text.size() && text[i + 1] != '\n') ++i;
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\r' || c == ':' || c == ',' || c == '-') continue;
    if (c == '0' && i + 1 < text.size() && (text[i + 1] == 'x' || text[i + 1] == 'X') && pending < 0) {
      ++i;
      continue;
    }
    const int v = HexValue(c);
    if (v < 0) {
      return absl::InvalidArgumentError(
          absl::StrFormat("line %d: '%c' is not a hex digit (byte %d of the input)", line, c, i));
    }
    if (pending < 0) {
      pending = v;
    } else {
      out.push_back(static_cast<uint8_t>(pending << 4 | v));
      pending = -1;
    }
  }
  if (pending >= 0) return absl::InvalidArgumentError("odd number of hex digits");
  return out;
}

SplitResult SplitMessages(const wire::Bytes& data) {
  SplitResult res;
  size_t pos = 0;
  while (pos < data.size()) {
    const size_t left = data.size() - pos;
    // A marker-less message starts with its length, whose first octet is at most 0x10
    // (0xff only for a 65280+ octet extended message). So 0xff means "marker present";
    // a damaged marker then reaches the decoder, which reports Connection Not Synchronized.
    const bool marker = data[pos] == 0xff && left >= 19;
    const size_t hdr = marker ? 16 : 0;
    if (left < hdr + 3) {
      res.trailing_error = absl::StrFormat("%d trailing octets at offset %d do not make a BGP header", left, pos);
      break;
    }
    const size_t length = (size_t{data[pos + hdr]} << 8) | data[pos + hdr + 1];
    // The length field counts the marker even when the paste left it out.
    const size_t on_wire = marker ? length : (length >= 16 ? length - 16 : 0);
    RawMessage m;
    m.offset = pos;
    m.had_marker = marker;
    if (length < 19 || on_wire > left) {
      // Hand the decoder what there is: it reports the exact header error.
      m.bytes.assign(16, 0xff);
      m.bytes.insert(m.bytes.end(), data.begin() + pos + hdr, data.end());
      if (length >= 19 && on_wire > left) {
        res.trailing_error =
            absl::StrFormat("message at offset %d says %d octets but only %d are given", pos, length, left + 16 - hdr);
        break;
      }
      res.messages.push_back(std::move(m));
      break;
    }
    if (!marker) m.bytes.assign(16, 0xff);
    m.bytes.insert(m.bytes.end(), data.begin() + pos, data.begin() + pos + on_wire);
    res.messages.push_back(std::move(m));
    pos += on_wire;
  }
  return res;
}

}  // namespace bagd::bagctl
