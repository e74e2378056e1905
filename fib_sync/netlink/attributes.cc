#include "fib_sync/netlink/attributes.h"

#include <linux/netlink.h>

#include <cassert>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace bagd::fib::netlink {

namespace {

void StoreU16(Bytes& out, size_t at, uint16_t v) { std::memcpy(out.data() + at, &v, 2); }
void StoreU32(Bytes& out, size_t at, uint32_t v) { std::memcpy(out.data() + at, &v, 4); }

template <typename T>
absl::StatusOr<T> AttrInt(const Attribute& a, const char* name) {
  if (a.payload.size() != sizeof(T)) {
    return absl::InvalidArgumentError(absl::StrCat(name, ": expected a ", sizeof(T), "-byte integer, got ",
                                                   a.payload.size(), " bytes"));
  }
  T v;
  std::memcpy(&v, a.payload.data(), sizeof(T));
  return v;
}

}  // namespace

MessageWriter::MessageWriter(Bytes& out, uint16_t type, uint16_t flags, uint32_t seq) : out_(out) {
  PadTo4();  // a batch is a sequence of NLMSG_ALIGNed messages
  start_ = out_.size();
  out_.resize(start_ + kNlmsgHeaderSize, 0);
  StoreU16(out_, start_ + 4, type);
  StoreU16(out_, start_ + 6, flags);
  StoreU32(out_, start_ + 8, seq);
  // nlmsg_pid stays 0: the kernel fills in the sender's port id.
}

void MessageWriter::AppendRaw(const uint8_t* p, size_t n) {
  if (n) out_.insert(out_.end(), p, p + n);
}

void MessageWriter::PadTo4() { out_.resize(Align4(out_.size()), 0); }

void MessageWriter::Attr(uint16_t type, const uint8_t* payload, size_t len) {
  assert(len <= 0xffff - kNlaHeaderSize && "attribute payload too large for nla_len");
  PadTo4();
  const size_t at = out_.size();
  out_.resize(at + kNlaHeaderSize, 0);
  StoreU16(out_, at, static_cast<uint16_t>(kNlaHeaderSize + len));
  StoreU16(out_, at + 2, type);
  AppendRaw(payload, len);
  PadTo4();
}

void MessageWriter::String(uint16_t type, std::string_view s) {
  PadTo4();
  const size_t at = out_.size();
  out_.resize(at + kNlaHeaderSize, 0);
  AppendRaw(reinterpret_cast<const uint8_t*>(s.data()), s.size());
  out_.push_back(0);
  assert(out_.size() - at <= 0xffff);
  StoreU16(out_, at, static_cast<uint16_t>(out_.size() - at));
  StoreU16(out_, at + 2, type);
  PadTo4();
}

size_t MessageWriter::BeginNested(uint16_t type) {
  PadTo4();
  const size_t at = out_.size();
  out_.resize(at + kNlaHeaderSize, 0);
  StoreU16(out_, at + 2, static_cast<uint16_t>(type | NLA_F_NESTED));
  return at;
}

void MessageWriter::EndNested(size_t token) {
  PadTo4();
  const size_t len = out_.size() - token;
  assert(len <= 0xffff && "nested attribute too large for nla_len");
  StoreU16(out_, token, static_cast<uint16_t>(len));
}

size_t MessageWriter::Finish() {
  PadTo4();
  StoreU32(out_, start_, static_cast<uint32_t>(out_.size() - start_));
  return start_;
}

absl::StatusOr<std::vector<Attribute>> ParseAttributes(ByteSpan data, const char* where) {
  std::vector<Attribute> attrs;
  size_t pos = 0;
  while (pos < data.size()) {
    const size_t left = data.size() - pos;
    if (left < kNlaHeaderSize) {
      // Trailing bytes too short for an attribute header: only zero padding is acceptable.
      for (size_t i = pos; i < data.size(); ++i) {
        if (data[i] != 0) {
          return absl::InvalidArgumentError(
              absl::StrCat(where, ": ", left, " trailing bytes after the last attribute"));
        }
      }
      break;
    }
    uint16_t len, type;
    std::memcpy(&len, data.data() + pos, 2);
    std::memcpy(&type, data.data() + pos + 2, 2);
    if (len < kNlaHeaderSize) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": attribute type ", type & NLA_TYPE_MASK, " at offset ", pos, " has length ", len,
                       " (below the 4-byte header)"));
    }
    if (len > left) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": attribute type ", type & NLA_TYPE_MASK, " at offset ", pos, " claims ", len,
                       " bytes but only ", left, " remain (truncated)"));
    }
    Attribute a;
    a.type = static_cast<uint16_t>(type & NLA_TYPE_MASK);
    a.nested = (type & NLA_F_NESTED) != 0;
    a.payload = data.subspan(pos + kNlaHeaderSize, len - kNlaHeaderSize);
    attrs.push_back(a);
    pos += Align4(len) < left ? Align4(len) : left;
  }
  return attrs;
}

absl::StatusOr<uint8_t> AttrU8(const Attribute& a, const char* name) { return AttrInt<uint8_t>(a, name); }
absl::StatusOr<uint16_t> AttrU16(const Attribute& a, const char* name) { return AttrInt<uint16_t>(a, name); }
absl::StatusOr<uint32_t> AttrU32(const Attribute& a, const char* name) { return AttrInt<uint32_t>(a, name); }
absl::StatusOr<uint64_t> AttrU64(const Attribute& a, const char* name) { return AttrInt<uint64_t>(a, name); }

std::string AttrString(const Attribute& a) {
  if (a.payload.empty()) return {};
  const auto* p = reinterpret_cast<const char*>(a.payload.data());
  const void* nul = std::memchr(p, 0, a.payload.size());
  return std::string(p, nul ? static_cast<const char*>(nul) - p : a.payload.size());
}

Header ReadHeader(ByteSpan data) {
  assert(data.size() >= kNlmsgHeaderSize);
  Header h;
  std::memcpy(&h.length, data.data(), 4);
  std::memcpy(&h.type, data.data() + 4, 2);
  std::memcpy(&h.flags, data.data() + 6, 2);
  std::memcpy(&h.seq, data.data() + 8, 4);
  std::memcpy(&h.pid, data.data() + 12, 4);
  return h;
}

}  // namespace bagd::fib::netlink
