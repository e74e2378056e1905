// A small MRT reader for the tests, written from RFC 6396 §2-§4 independently of the
// encoders: it splits a file into records and a TABLE_DUMP_V2 RIB record into entries.
#pragma once

#include <cstdint>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

namespace bagd::mrt::test {

using Octets = std::vector<uint8_t>;

inline uint32_t Be32(const uint8_t* p) { return uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 | p[3]; }
inline uint16_t Be16(const uint8_t* p) { return static_cast<uint16_t>(p[0] << 8 | p[1]); }

struct Record {
  uint32_t timestamp = 0;
  uint16_t type = 0, subtype = 0;
  Octets body;  // after the 12-octet common header (for type 17, the microseconds first)
};

// nullopt when a record runs past the end.
inline std::optional<std::vector<Record>> SplitRecords(const Octets& data) {
  std::vector<Record> out;
  size_t i = 0;
  while (i < data.size()) {
    if (data.size() - i < 12) return std::nullopt;
    Record r;
    r.timestamp = Be32(&data[i]);
    r.type = Be16(&data[i + 4]);
    r.subtype = Be16(&data[i + 6]);
    const uint32_t len = Be32(&data[i + 8]);
    if (data.size() - i - 12 < len) return std::nullopt;
    r.body.assign(data.begin() + i + 12, data.begin() + i + 12 + len);
    out.push_back(std::move(r));
    i += 12 + len;
  }
  return out;
}

struct Entry {
  uint16_t peer_index = 0;
  uint32_t originated = 0;
  uint32_t path_id = 0;
  Octets attributes;
};
struct RibRecord {
  uint32_t sequence = 0;
  uint8_t length = 0;
  Octets prefix;
  std::vector<Entry> entries;
};

inline std::optional<RibRecord> ParseRib(const Record& r) {
  const bool add_path = r.subtype == 8 || r.subtype == 10;
  const Octets& b = r.body;
  RibRecord out;
  if (b.size() < 5) return std::nullopt;
  out.sequence = Be32(&b[0]);
  out.length = b[4];
  size_t i = 5;
  const size_t n = (out.length + 7) / 8;
  if (b.size() < i + n + 2) return std::nullopt;
  out.prefix.assign(b.begin() + i, b.begin() + i + n);
  i += n;
  const uint16_t count = Be16(&b[i]);
  i += 2;
  for (uint16_t k = 0; k < count; ++k) {
    Entry e;
    if (b.size() < i + 6 + (add_path ? 4 : 0) + 2) return std::nullopt;
    e.peer_index = Be16(&b[i]);
    e.originated = Be32(&b[i + 2]);
    i += 6;
    if (add_path) {
      e.path_id = Be32(&b[i]);
      i += 4;
    }
    const uint16_t alen = Be16(&b[i]);
    i += 2;
    if (b.size() < i + alen) return std::nullopt;
    e.attributes.assign(b.begin() + i, b.begin() + i + alen);
    i += alen;
    out.entries.push_back(std::move(e));
  }
  if (i != b.size()) return std::nullopt;
  return out;
}

inline Octets ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return Octets(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

inline Octets Hex(const std::string& text) {
  Octets out;
  int hi = -1;
  for (char c : text) {
    int v;
    if (c >= '0' && c <= '9') v = c - '0';
    else if (c >= 'a' && c <= 'f') v = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F') v = c - 'A' + 10;
    else continue;
    if (hi < 0) {
      hi = v;
    } else {
      out.push_back(static_cast<uint8_t>(hi << 4 | v));
      hi = -1;
    }
  }
  return out;
}

}  // namespace bagd::mrt::test
