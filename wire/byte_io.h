// Bounds-checked big-endian readers and writers for the BGP codec.
// The reader never reads past its span: every Read* returns false on underrun
// and leaves the output untouched, so decoders can report a precise error.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

namespace bagd::wire {

using Bytes = std::vector<uint8_t>;
using ByteSpan = std::span<const uint8_t>;

class ByteReader {
 public:
  explicit ByteReader(ByteSpan data) : data_(data) {}

  size_t remaining() const { return data_.size() - pos_; }
  size_t position() const { return pos_; }
  bool empty() const { return pos_ == data_.size(); }
  const uint8_t* cursor() const { return data_.data() + pos_; }

  bool ReadU8(uint8_t& out) {
    if (remaining() < 1) return false;
    out = data_[pos_++];
    return true;
  }
  bool ReadU16(uint16_t& out) {
    if (remaining() < 2) return false;
    out = static_cast<uint16_t>((data_[pos_] << 8) | data_[pos_ + 1]);
    pos_ += 2;
    return true;
  }
  bool ReadU32(uint32_t& out) {
    if (remaining() < 4) return false;
    out = (uint32_t{data_[pos_]} << 24) | (uint32_t{data_[pos_ + 1]} << 16) |
          (uint32_t{data_[pos_ + 2]} << 8) | uint32_t{data_[pos_ + 3]};
    pos_ += 4;
    return true;
  }
  bool ReadU64(uint64_t& out) {
    uint32_t hi = 0, lo = 0;
    if (remaining() < 8) return false;
    ReadU32(hi);
    ReadU32(lo);
    out = (uint64_t{hi} << 32) | lo;
    return true;
  }
  // A sub-span of exactly n bytes; false if fewer remain.
  bool ReadSpan(size_t n, ByteSpan& out) {
    if (remaining() < n) return false;
    out = data_.subspan(pos_, n);
    pos_ += n;
    return true;
  }
  bool Skip(size_t n) {
    if (remaining() < n) return false;
    pos_ += n;
    return true;
  }
  ByteSpan Rest() const { return data_.subspan(pos_); }

 private:
  ByteSpan data_;
  size_t pos_ = 0;
};

class ByteWriter {
 public:
  explicit ByteWriter(Bytes& out) : out_(out) {}

  size_t size() const { return out_.size(); }
  void U8(uint8_t v) { out_.push_back(v); }
  void U16(uint16_t v) {
    out_.push_back(static_cast<uint8_t>(v >> 8));
    out_.push_back(static_cast<uint8_t>(v));
  }
  void U32(uint32_t v) {
    U16(static_cast<uint16_t>(v >> 16));
    U16(static_cast<uint16_t>(v));
  }
  void U64(uint64_t v) {
    U32(static_cast<uint32_t>(v >> 32));
    U32(static_cast<uint32_t>(v));
  }
  void Append(ByteSpan bytes) { out_.insert(out_.end(), bytes.begin(), bytes.end()); }
  void Append(const uint8_t* p, size_t n) { out_.insert(out_.end(), p, p + n); }
  // Reserve a big-endian length field to be filled by PatchU8/PatchU16.
  size_t Placeholder(size_t width) {
    size_t at = out_.size();
    out_.resize(out_.size() + width, 0);
    return at;
  }
  void PatchU8(size_t at, uint8_t v) { out_[at] = v; }
  void PatchU16(size_t at, uint16_t v) {
    out_[at] = static_cast<uint8_t>(v >> 8);
    out_[at + 1] = static_cast<uint8_t>(v);
  }

 private:
  Bytes& out_;
};

}  // namespace bagd::wire
