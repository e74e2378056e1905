#include "wire/update_packer.h"

#include <algorithm>

#include "absl/strings/str_format.h"
#include "wire/rfc7606.h"

namespace bagd::wire {
namespace {

constexpr size_t kUpdateFixed = kHeaderSize + 2 + 2;  // header, withdrawn len, attr len

// A run of NLRI and its encoded size in octets.
struct NlriChunk {
  std::span<const net::Nlri> nlri;
  size_t octets = 0;
};

// Splits `nlri` into runs whose encoded size fits `budget` octets each.
absl::StatusOr<std::vector<NlriChunk>> Chunk(std::span<const net::Nlri> nlri, bool add_path, size_t budget) {
  std::vector<NlriChunk> chunks;
  size_t begin = 0, used = 0;
  for (size_t i = 0; i < nlri.size(); ++i) {
    const size_t sz = EncodedNlriSize(nlri[i], add_path);
    if (sz > budget) {
      return absl::OutOfRangeError(
          absl::StrFormat("no room for %s: the attributes leave %d octets", nlri[i].prefix.ToString(), budget));
    }
    if (used + sz > budget) {
      chunks.push_back({nlri.subspan(begin, i - begin), used});
      begin = i;
      used = 0;
    }
    used += sz;
  }
  if (begin < nlri.size()) chunks.push_back({nlri.subspan(begin), used});
  return chunks;
}

// `reserve`: the message's size (or a bound on it). The messages wait in a session's send
// queue until the socket takes them, so each gets the octets it needs, not the largest
// message the session allows: an UPDATE of a few prefixes with 4096 (or 65535) reserved
// held most of an exporting table's transient memory.
void StartUpdate(Bytes& msg, size_t reserve) {
  msg.clear();
  msg.reserve(reserve);
  msg.assign(16, 0xff);
  msg.insert(msg.end(), {0, 0, static_cast<uint8_t>(MessageType::kUpdate)});
}

void FinishUpdate(Bytes& msg) {
  msg[16] = static_cast<uint8_t>(msg.size() >> 8);
  msg[17] = static_cast<uint8_t>(msg.size());
}

}  // namespace

absl::StatusOr<std::vector<Bytes>> PackAnnouncements(const PathAttributes& attrs, net::Family family,
                                                     std::span<const net::Nlri> nlri, const CodecContext& ctx) {
  std::vector<Bytes> out;
  if (nlri.empty()) return out;
  const size_t max = ctx.max_message_size();
  const bool add_path = ctx.AddPath(family);
  const bool use_mp = family != net::Family::kIpv4Unicast || (attrs.mp_reach && !attrs.next_hop);

  if (!use_mp) {
    if (!attrs.next_hop) return absl::InvalidArgumentError("IPv4 announcement without a next hop");
    PathAttributes a = attrs;
    a.mp_reach.reset();
    a.mp_unreach.reset();
    Bytes encoded;
    EncodePathAttributes(a, ctx, encoded);
    if (kUpdateFixed + encoded.size() >= max) return absl::OutOfRangeError("path attributes exceed the message size");
    auto chunks = Chunk(nlri, add_path, max - kUpdateFixed - encoded.size());
    if (!chunks.ok()) return chunks.status();
    for (const auto& chunk : *chunks) {
      Bytes& msg = out.emplace_back();
      StartUpdate(msg, kUpdateFixed + encoded.size() + chunk.octets);
      ByteWriter w(msg);
      w.U16(0);
      w.U16(static_cast<uint16_t>(encoded.size()));
      w.Append(encoded);
      for (const auto& n : chunk.nlri) EncodeNlri(n, add_path, msg);
      FinishUpdate(msg);
    }
    return out;
  }

  if (!attrs.mp_reach) return absl::InvalidArgumentError("MP announcement without an MP_REACH next hop");
  // Each message is the attribute set with MP_REACH carrying one chunk; the encoder keeps
  // the canonical attribute order. The budget assumes MP_REACH may need an extended length.
  UpdateMessage m;
  m.attrs = attrs;
  m.attrs.mp_reach->family = family;
  m.attrs.mp_reach->nlri.clear();
  m.attrs.mp_unreach.reset();
  Bytes empty;
  EncodePathAttributes(m.attrs, ctx, empty);
  const size_t fixed = kUpdateFixed + empty.size() + 1;
  if (fixed >= max) return absl::OutOfRangeError("path attributes exceed the message size");
  auto chunks = Chunk(nlri, add_path, max - fixed);
  if (!chunks.ok()) return chunks.status();
  for (const auto& chunk : *chunks) {
    m.attrs.mp_reach->nlri.assign(chunk.nlri.begin(), chunk.nlri.end());
    auto msg = EncodeMessage(m, ctx);
    if (!msg.ok()) return msg.status();
    msg->shrink_to_fit();  // the encoder's buffer grew by doubling
    out.push_back(*std::move(msg));
  }
  return out;
}

absl::StatusOr<std::vector<Bytes>> PackWithdrawals(net::Family family, std::span<const net::Nlri> nlri,
                                                   const CodecContext& ctx) {
  std::vector<Bytes> out;
  if (nlri.empty()) return out;
  const size_t max = ctx.max_message_size();
  const bool add_path = ctx.AddPath(family);
  const bool mp = family != net::Family::kIpv4Unicast;
  const size_t fixed = kUpdateFixed + (mp ? 4 + 3 : 0);
  auto chunks = Chunk(nlri, add_path, max - fixed);
  if (!chunks.ok()) return chunks.status();
  for (const auto& chunk : *chunks) {
    Bytes& msg = out.emplace_back();
    const size_t len = chunk.octets;
    StartUpdate(msg, fixed + len);
    ByteWriter w(msg);
    if (!mp) {
      w.U16(static_cast<uint16_t>(len));
      for (const auto& n : chunk.nlri) EncodeNlri(n, add_path, msg);
      w.U16(0);
    } else {
      w.U16(0);
      const size_t alen_at = w.Placeholder(2);
      EncodeAttributeHeader(attr_flag::kOptional, 15, 3 + len, msg);
      w.U16(static_cast<uint16_t>(net::FamilyAfi(family)));
      w.U8(static_cast<uint8_t>(net::Safi::kUnicast));
      for (const auto& n : chunk.nlri) EncodeNlri(n, add_path, msg);
      w.PatchU16(alen_at, static_cast<uint16_t>(msg.size() - alen_at - 2));
    }
    FinishUpdate(msg);
  }
  return out;
}

absl::Status RewriteNextHop(Bytes& update, const net::IpAddress& next_hop) {
  const size_t size = update.size();
  auto u16 = [&](size_t at) { return static_cast<size_t>(update[at] << 8 | update[at + 1]); };
  if (size < kHeaderSize + 4) return absl::InvalidArgumentError("not an UPDATE");
  size_t at = kHeaderSize;
  at += 2 + u16(at);  // withdrawn routes
  if (at + 2 > size) return absl::InvalidArgumentError("truncated UPDATE");
  const size_t end = at + 2 + u16(at);
  at += 2;
  if (end > size) return absl::InvalidArgumentError("truncated path attributes");
  while (at + 3 <= end) {
    const uint8_t flags = update[at], type = update[at + 1];
    const bool extended = flags & attr_flag::kExtendedLength;
    if (at + (extended ? 4 : 3) > end) break;
    const size_t length = extended ? u16(at + 2) : update[at + 2];
    const size_t value = at + (extended ? 4 : 3);
    if (value + length > end) break;
    if (type == static_cast<uint8_t>(AttrType::kNextHop) && next_hop.is_v4() && length == 4) {
      std::copy_n(next_hop.bytes(), 4, update.begin() + value);
      return absl::OkStatus();
    }
    // MP_REACH_NLRI: AFI (2), SAFI (1), next hop length (1), next hop.
    if (type == static_cast<uint8_t>(AttrType::kMpReachNlri) && length >= 4 && update[value + 3] == next_hop.size() && length >= 4 + next_hop.size()) {
      std::copy_n(next_hop.bytes(), next_hop.size(), update.begin() + value + 4);
      return absl::OkStatus();
    }
    at = value + length;
  }
  return absl::NotFoundError("no next hop of that length in the UPDATE");
}

}  // namespace bagd::wire
