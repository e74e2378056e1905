// Netlink framing: message headers and type-length-value attributes (struct nlattr), in
// host byte order as the kernel uses them. The writer appends to a byte vector; the reader
// splits a span and never reads past it: every length is checked before it is trusted.
// No sockets, no I/O.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "net/ip_prefix.h"

namespace bagd::fib::netlink {

using Bytes = std::vector<uint8_t>;
using ByteSpan = std::span<const uint8_t>;

// NLMSG_ALIGN and NLA_ALIGN: both round up to 4 bytes.
inline constexpr size_t Align4(size_t n) { return (n + 3) & ~size_t{3}; }
inline constexpr size_t kNlmsgHeaderSize = 16;  // struct nlmsghdr
inline constexpr size_t kNlaHeaderSize = 4;     // struct nlattr

// struct nlmsghdr, decoded.
struct Header {
  uint32_t length = 0;  // nlmsg_len, header included, padding excluded
  uint16_t type = 0;
  uint16_t flags = 0;
  uint32_t seq = 0;
  uint32_t pid = 0;
  friend bool operator==(const Header&, const Header&) = default;
};

// Builds one netlink message: header, fixed family header, attributes. The message starts
// at the current end of `out` (which may already hold earlier messages of a batch).
// Attribute payloads larger than a u16 length are invariant violations (assert): callers
// validate sizes first.
class MessageWriter {
 public:
  MessageWriter(Bytes& out, uint16_t type, uint16_t flags, uint32_t seq);

  size_t offset() const { return start_; }  // where this message's header starts in `out`

  // The fixed header (struct nhmsg, rtmsg, ifinfomsg) as raw host-order bytes.
  template <typename T>
  void Fixed(const T& value) {
    AppendRaw(reinterpret_cast<const uint8_t*>(&value), sizeof(T));
  }

  void U8(uint16_t type, uint8_t v) { Attr(type, &v, 1); }
  void U16(uint16_t type, uint16_t v) { Attr(type, reinterpret_cast<const uint8_t*>(&v), 2); }
  void U32(uint16_t type, uint32_t v) { Attr(type, reinterpret_cast<const uint8_t*>(&v), 4); }
  void U64(uint16_t type, uint64_t v) { Attr(type, reinterpret_cast<const uint8_t*>(&v), 8); }
  void Flag(uint16_t type) { Attr(type, nullptr, 0); }
  void String(uint16_t type, std::string_view s);  // NUL-terminated, as NLA_NUL_STRING
  void Address(uint16_t type, const net::IpAddress& a) { Attr(type, a.bytes(), a.size()); }
  void Raw(uint16_t type, ByteSpan payload) { Attr(type, payload.data(), payload.size()); }

  // Nested attributes: BeginNested returns a token for EndNested. NLA_F_NESTED is set, as
  // the kernel's strict validation (nla_parse_nested) requires.
  size_t BeginNested(uint16_t type);
  void EndNested(size_t token);

  // Writes nlmsg_len. Call once, after the last attribute. Returns the message's offset.
  size_t Finish();

 private:
  void Attr(uint16_t type, const uint8_t* payload, size_t len);
  void AppendRaw(const uint8_t* p, size_t n);
  void PadTo4();

  Bytes& out_;
  size_t start_;
};

// One attribute as found in a message. `payload` points into the parsed buffer.
struct Attribute {
  uint16_t type = 0;    // NLA_TYPE_MASK applied
  bool nested = false;  // NLA_F_NESTED was set (the kernel does not set it everywhere)
  ByteSpan payload;
};

// Splits `data` (a run of attributes) into attributes. Fails, naming `where`, when a header
// or a length runs past the data, a length is below 4, or non-padding bytes trail.
// The last attribute may omit its padding.
absl::StatusOr<std::vector<Attribute>> ParseAttributes(ByteSpan data, const char* where);

// Typed payload accessors. Integers must have exactly their size; `name` (e.g. "NHA_OIF")
// goes into the error message.
absl::StatusOr<uint8_t> AttrU8(const Attribute& a, const char* name);
absl::StatusOr<uint16_t> AttrU16(const Attribute& a, const char* name);
absl::StatusOr<uint32_t> AttrU32(const Attribute& a, const char* name);
absl::StatusOr<uint64_t> AttrU64(const Attribute& a, const char* name);
// A string up to its first NUL (or the whole payload when there is none).
std::string AttrString(const Attribute& a);

// Reads the struct nlmsghdr at the start of `data` (at least kNlmsgHeaderSize bytes).
Header ReadHeader(ByteSpan data);

}  // namespace bagd::fib::netlink
