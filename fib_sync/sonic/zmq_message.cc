#include "fib_sync/sonic/zmq_message.h"

#include <cstring>

#include "absl/strings/str_cat.h"

namespace bagd::fib::sonic {

namespace {

// The length words are the sender's size_t in its own byte order (swss writes them with a
// plain store); SONiC's switches are little-endian 64-bit, so are bagd's targets.
static_assert(sizeof(size_t) == 8, "the ZMQ route message uses an 8-byte size_t");
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the ZMQ route message is little-endian here");

void PutWord(std::string& out, uint64_t v) {
  char b[8];
  std::memcpy(b, &v, sizeof b);
  out.append(b, sizeof b);
}

size_t Digits(size_t n) { return absl::StrCat(n).size(); }

}  // namespace

ZmqMessageBuilder::ZmqMessageBuilder(absl::string_view db, absl::string_view table) : db_(db), table_(table) {
  Reset();
}

void ZmqMessageBuilder::Reset() {
  buf_.clear();
  PutWord(buf_, 0);  // the pair count, filled in by Take()
  String(db_);
  String(table_);
  pairs_ = 1;
  entries_ = 0;
}

void ZmqMessageBuilder::String(absl::string_view s) {
  PutWord(buf_, s.size());
  buf_.append(s.data(), s.size());
}

size_t ZmqMessageBuilder::SizeOf(const Write& w) {
  const size_t n = w.del ? 0 : w.fields.size();
  size_t bytes = 16 + w.key.size() + Digits(n);
  if (!w.del) {
    for (const auto& [f, v] : w.fields) bytes += 16 + f.size() + v.size();
  }
  return bytes;
}

void ZmqMessageBuilder::Add(const Write& w) {
  const size_t n = w.del ? 0 : w.fields.size();
  String(w.key);
  String(absl::StrCat(n));
  ++pairs_;
  if (!w.del) {
    for (const auto& [f, v] : w.fields) {
      String(f);
      String(v);
      ++pairs_;
    }
  }
  ++entries_;
}

std::string ZmqMessageBuilder::Take() {
  std::memcpy(buf_.data(), &pairs_, sizeof pairs_);
  std::string out = std::move(buf_);
  buf_ = std::string();
  Reset();
  return out;
}

}  // namespace bagd::fib::sonic
