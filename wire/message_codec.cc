#include "net/overloaded.h"
#include "wire/message.h"

#include <algorithm>
#include <atomic>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace bagd::wire {
namespace {


constexpr uint8_t kMarkerByte = 0xff;
constexpr size_t kMarkerSize = 16;

Bytes U16Bytes(uint16_t v) { return Bytes{static_cast<uint8_t>(v >> 8), static_cast<uint8_t>(v)}; }

DecodeError BadLength(uint16_t length, std::string reason) {
  return MakeDecodeError(1, header_error::kBadMessageLength, U16Bytes(length), std::move(reason));
}

// A number no attribute decode in the process has had yet (never 0): AttributesToken.
uint64_t NewAttributesToken() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

// RFC 4271 §4.1 / §6.1: the header checks, given at least 19 octets.
std::optional<DecodeError> CheckHeader(ByteSpan h, const CodecContext& ctx) {
  // The marker as two words first (every message passes here twice: framing and decoding).
  uint64_t marker[2];
  static_assert(sizeof marker == kMarkerSize);
  std::memcpy(marker, h.data(), kMarkerSize);
  if ((marker[0] & marker[1]) != ~uint64_t{0}) {
    for (size_t i = 0; i < kMarkerSize; ++i) {
      if (h[i] != kMarkerByte) {
        return MakeDecodeError(1, header_error::kConnectionNotSynchronized, {},
                               absl::StrFormat("marker octet %d is 0x%02x, not 0xff", i, h[i]));
      }
    }
  }
  const uint16_t length = static_cast<uint16_t>((h[16] << 8) | h[17]);
  const uint8_t type = h[18];
  if (type < 1 || type > 5) {
    return MakeDecodeError(1, header_error::kBadMessageType, Bytes{type},
                           absl::StrFormat("unknown message type %d", type));
  }
  // RFC 8654 §4: OPEN and KEEPALIVE stay within 4096 octets even with extended messages.
  const size_t max = (type == 1 || type == 4) ? kMaxMessageSize : ctx.max_message_size();
  if (length < kHeaderSize || length > max) {
    return BadLength(length, absl::StrFormat("length %d outside %d..%d", length, kHeaderSize, max));
  }
  size_t min = kHeaderSize;
  switch (static_cast<MessageType>(type)) {
    case MessageType::kOpen: min = 29; break;
    case MessageType::kUpdate: min = 23; break;
    case MessageType::kNotification: min = 21; break;
    case MessageType::kKeepalive: min = 19; break;
    case MessageType::kRouteRefresh: min = 23; break;
  }
  if (length < min || (type == 4 && length != 19)) {
    return BadLength(length, absl::StrFormat("%s of length %d (minimum %d)", MessageTypeName(type), length, min));
  }
  return std::nullopt;
}

Decoded<Message> DecodeOpen(ByteSpan body, uint16_t length) {
  ByteReader r(body);
  OpenMessage m;
  uint8_t opt_len = 0;
  r.ReadU8(m.version);
  r.ReadU16(m.my_as);
  r.ReadU16(m.hold_time);
  r.ReadU32(m.bgp_id);
  r.ReadU8(opt_len);
  if (m.version != 4) {
    // RFC 4271 §6.2: data is the largest locally supported version.
    return MakeDecodeError(2, open_error::kUnsupportedVersion, U16Bytes(4),
                           absl::StrFormat("BGP version %d, only 4 is supported", m.version));
  }
  ByteSpan params;
  bool extended = false;
  if (opt_len == 255 && r.remaining() >= 1 && *r.cursor() == 255) {
    // RFC 9072 §2: Non-Ext OP Type 255, then a 2-octet Extended Opt. Parm. Length.
    uint8_t marker = 0;
    uint16_t ext_len = 0;
    r.ReadU8(marker);
    if (!r.ReadU16(ext_len) || !r.ReadSpan(ext_len, params)) {
      return BadLength(length, "extended optional parameters overrun the OPEN");
    }
    extended = true;
  } else if (!r.ReadSpan(opt_len, params)) {
    return BadLength(length, absl::StrFormat("optional parameters length %d overruns the OPEN", opt_len));
  }
  if (!r.empty()) return BadLength(length, "octets after the optional parameters");
  m.extended_optional_parameters = extended;
  ByteReader pr(params);
  while (!pr.empty()) {
    uint8_t type = 0;
    uint16_t len = 0;
    bool ok = pr.ReadU8(type);
    if (extended) {
      ok = ok && pr.ReadU16(len);
    } else {
      uint8_t l8 = 0;
      ok = ok && pr.ReadU8(l8);
      len = l8;
    }
    ByteSpan value;
    if (!ok || !pr.ReadSpan(len, value)) {
      return MakeDecodeError(2, 0, {}, "optional parameter overruns the optional parameters field");
    }
    if (type != 2) {
      // RFC 4271 §6.2 / RFC 5492: only Capabilities (2) are supported.
      m.other_parameters.push_back(OptionalParameter{type, Bytes(value.begin(), value.end())});
      continue;
    }
    ByteReader cr(value);
    while (!cr.empty()) {
      uint8_t code = 0, clen = 0;
      ByteSpan cval;
      if (!cr.ReadU8(code) || !cr.ReadU8(clen) || !cr.ReadSpan(clen, cval)) {
        return MakeDecodeError(2, 0, {}, "capability overruns its optional parameter");
      }
      bool malformed = false;
      m.capabilities.push_back(DecodeCapability(code, cval, &malformed));
      if (malformed) m.malformed_capabilities.push_back(code);
    }
  }
  if (!m.other_parameters.empty()) {
    return MakeDecodeError(2, open_error::kUnsupportedOptionalParameter, {},
                           absl::StrFormat("unsupported optional parameter type %d", m.other_parameters[0].type));
  }
  return Message{std::move(m)};
}

// An UPDATE body into `m`: its vectors are cleared and refilled. With `memo`, the path
// attributes are decoded only when they differ from what m's were decoded from.
std::optional<DecodeError> DecodeUpdateInto(ByteSpan body, const CodecContext& ctx, UpdateMessage& m,
                                            UpdateDecoder::AttributeMemo* memo) {
  ByteReader r(body);
  uint16_t wlen = 0, alen = 0;
  ByteSpan withdrawn, attrs;
  r.ReadU16(wlen);
  if (!r.ReadSpan(wlen, withdrawn)) {
    return MakeDecodeError(3, update_error::kMalformedAttributeList, {},
                           absl::StrFormat("withdrawn routes length %d overruns the UPDATE", wlen));
  }
  if (!r.ReadU16(alen) || !r.ReadSpan(alen, attrs)) {
    return MakeDecodeError(3, update_error::kMalformedAttributeList, {},
                           "total path attribute length overruns the UPDATE");
  }
  const bool ap4 = ctx.AddPath(net::Family::kIpv4Unicast);
  m.withdrawn.clear();
  m.nlri.clear();
  // RFC 7606 §5.3: a malformed withdrawn-routes or NLRI field cannot be parsed around.
  if (!DecodeNlriList(withdrawn, net::Afi::kIpv4, ap4, m.withdrawn)) {
    return MakeDecodeError(3, update_error::kInvalidNetworkField, {}, "withdrawn routes field malformed");
  }
  if (!DecodeNlriList(r.Rest(), net::Afi::kIpv4, ap4, m.nlri)) {
    return MakeDecodeError(3, update_error::kInvalidNetworkField, {}, "NLRI field malformed");
  }
  const bool has_nlri = !m.nlri.empty();
  if (memo != nullptr && memo->valid && memo->has_nlri == has_nlri && memo->ctx == ctx &&
      std::equal(attrs.begin(), attrs.end(), memo->octets.begin(), memo->octets.end())) {
    return std::nullopt;  // m's attributes are what these octets decode to
  }
  if (memo != nullptr) {
    memo->valid = false;  // m's attributes change below
    ++memo->decodes;
  }
  m.attrs_token = {};
  AttributeDecodeResult a = DecodePathAttributes(attrs, ctx, has_nlri);
  if (a.action == ErrorAction::kSessionReset) {
    std::string reason;
    for (const auto& e : a.errors) {
      if (e.action == ErrorAction::kSessionReset) {
        reason = e.reason;
        break;
      }
    }
    return MakeDecodeError(3, a.notify_subcode, std::move(a.notify_data), std::move(reason));
  }
  m.attrs = std::move(a.attrs);
  m.action = a.action;
  m.errors = std::move(a.errors);
  m.disabled_family = a.disabled_family;
  if (memo != nullptr) {
    memo->octets.assign(attrs.begin(), attrs.end());
    memo->ctx = ctx;
    memo->has_nlri = has_nlri;
    memo->valid = true;
    m.attrs_token.value = NewAttributesToken();
  }
  return std::nullopt;
}

Decoded<Message> DecodeUpdate(ByteSpan body, const CodecContext& ctx) {
  UpdateMessage m;
  if (auto err = DecodeUpdateInto(body, ctx, m, nullptr)) return std::move(*err);
  return Message{std::move(m)};
}

// The header checks DecodeMessage makes, for a message of any type.
std::optional<DecodeError> CheckWhole(ByteSpan message, const CodecContext& ctx) {
  if (message.size() < kHeaderSize) {
    return BadLength(static_cast<uint16_t>(message.size()), "shorter than the 19-octet header");
  }
  if (auto err = CheckHeader(message.first(kHeaderSize), ctx)) return err;
  const uint16_t length = static_cast<uint16_t>((message[16] << 8) | message[17]);
  if (length != message.size()) {
    return BadLength(length, absl::StrFormat("header says %d octets, %d given", length, message.size()));
  }
  return std::nullopt;
}

Decoded<Message> DecodeRouteRefresh(ByteSpan whole, ByteSpan body) {
  ByteReader r(body);
  RouteRefreshMessage m;
  r.ReadU16(m.afi);
  r.ReadU8(m.subtype);
  r.ReadU8(m.safi);
  if ((m.subtype == route_refresh_subtype::kBorr || m.subtype == route_refresh_subtype::kEorr) && !r.empty()) {
    // RFC 7313 §5: BoRR/EoRR are exactly 4 octets after the header; data = the message.
    return MakeDecodeError(7, route_refresh_error::kInvalidMessageLength, Bytes(whole.begin(), whole.end()),
                           "BoRR/EoRR ROUTE-REFRESH longer than 23 octets");
  }
  m.orf.assign(r.Rest().begin(), r.Rest().end());
  return Message{std::move(m)};
}

void WriteHeader(Bytes& out, MessageType type) {
  out.assign(kMarkerSize, kMarkerByte);
  out.push_back(0);
  out.push_back(0);
  out.push_back(static_cast<uint8_t>(type));
}

void EncodeOpenBody(const OpenMessage& m, Bytes& out) {
  ByteWriter w(out);
  w.U8(m.version);
  w.U16(m.my_as);
  w.U16(m.hold_time);
  w.U32(m.bgp_id);
  // All capabilities in one Capabilities parameter.
  Bytes caps;
  for (const auto& c : m.capabilities) {
    Bytes v;
    EncodeCapabilityValue(c, v);
    caps.push_back(CapabilityCodeOf(c));
    caps.push_back(static_cast<uint8_t>(std::min<size_t>(v.size(), 255)));
    caps.insert(caps.end(), v.begin(), v.begin() + std::min<size_t>(v.size(), 255));
  }
  struct Param {
    uint8_t type = 0;
    const Bytes* value;
  };
  std::vector<Param> params;
  if (!caps.empty()) params.push_back({2, &caps});
  for (const auto& p : m.other_parameters) params.push_back({p.type, &p.value});
  size_t short_len = 0;
  for (const auto& p : params) short_len += 2 + p.value->size();
  bool extended = m.extended_optional_parameters;
  for (const auto& p : params) extended |= p.value->size() > 255;
  extended |= short_len > 254;  // RFC 9072: 255 as a length means "extended follows"
  if (!extended) {
    w.U8(static_cast<uint8_t>(short_len));
    for (const auto& p : params) {
      w.U8(p.type);
      w.U8(static_cast<uint8_t>(p.value->size()));
      w.Append(*p.value);
    }
    return;
  }
  size_t ext_len = 0;
  for (const auto& p : params) ext_len += 3 + p.value->size();
  w.U8(255);
  w.U8(255);
  w.U16(static_cast<uint16_t>(ext_len));
  for (const auto& p : params) {
    w.U8(p.type);
    w.U16(static_cast<uint16_t>(p.value->size()));
    w.Append(*p.value);
  }
}

void EncodeUpdateBody(const UpdateMessage& m, const CodecContext& ctx, Bytes& out) {
  ByteWriter w(out);
  const bool ap4 = ctx.AddPath(net::Family::kIpv4Unicast);
  const size_t wpos = w.Placeholder(2);
  for (const auto& n : m.withdrawn) EncodeNlri(n, ap4, out);
  w.PatchU16(wpos, static_cast<uint16_t>(out.size() - wpos - 2));
  const size_t apos = w.Placeholder(2);
  EncodePathAttributes(m.attrs, ctx, out);
  w.PatchU16(apos, static_cast<uint16_t>(out.size() - apos - 2));
  for (const auto& n : m.nlri) EncodeNlri(n, ap4, out);
}

}  // namespace

const char* MessageTypeName(uint8_t type) {
  switch (type) {
    case 1: return "OPEN";
    case 2: return "UPDATE";
    case 3: return "NOTIFICATION";
    case 4: return "KEEPALIVE";
    case 5: return "ROUTE-REFRESH";
  }
  return "UNKNOWN";
}

const char* RouteRefreshSubtypeName(uint8_t subtype) {
  switch (subtype) {
    case route_refresh_subtype::kRequest: return "request";
    case route_refresh_subtype::kBorr: return "BoRR";
    case route_refresh_subtype::kEorr: return "EoRR";
  }
  return "reserved";
}

MessageType TypeOf(const Message& m) { return static_cast<MessageType>(m.index() + 1); }

uint32_t OpenMessage::AsNumber() const {
  if (const auto* c = Find<FourOctetAsCap>()) return c->asn;
  return my_as;
}

std::optional<net::Family> UpdateMessage::EndOfRib() const {
  if (!withdrawn.empty() || !nlri.empty()) return std::nullopt;
  if (attrs == PathAttributes{}) return net::Family::kIpv4Unicast;
  PathAttributes only_unreach;
  only_unreach.mp_unreach = attrs.mp_unreach;
  if (attrs.mp_unreach && attrs.mp_unreach->withdrawn.empty() && attrs == only_unreach) {
    return attrs.mp_unreach->family;
  }
  return std::nullopt;
}

UpdateMessage UpdateMessage::MakeEndOfRib(net::Family f) {
  UpdateMessage m;
  if (f != net::Family::kIpv4Unicast) m.attrs.mp_unreach = MpUnreach{f, {}};
  return m;
}

RouteRefreshMessage RouteRefreshMessage::Make(net::Family f, uint8_t subtype) {
  return RouteRefreshMessage{static_cast<uint16_t>(net::FamilyAfi(f)), subtype, static_cast<uint8_t>(net::Safi::kUnicast), {}};
}

DecodeError MakeDecodeError(uint8_t code, uint8_t subcode, Bytes data, std::string reason) {
  return DecodeError{NotificationMessage{code, subcode, std::move(data)}, std::move(reason)};
}

Frame NextFrame(ByteSpan buffered, const CodecContext& ctx) {
  Frame f;
  if (buffered.size() < kHeaderSize) {
    // Detect a broken marker as early as the bytes allow (a whole header: CheckHeader does).
    for (size_t i = 0; i < std::min(buffered.size(), kMarkerSize); ++i) {
      if (buffered[i] != kMarkerByte) {
        f.kind = Frame::kError;
        f.error = MakeDecodeError(1, header_error::kConnectionNotSynchronized, {},
                                  absl::StrFormat("marker octet %d is 0x%02x, not 0xff", i, buffered[i]));
        return f;
      }
    }
    f.size = kHeaderSize;
    return f;
  }
  if (auto err = CheckHeader(buffered.first(kHeaderSize), ctx)) {
    f.kind = Frame::kError;
    f.error = std::move(*err);
    return f;
  }
  f.size = static_cast<size_t>((buffered[16] << 8) | buffered[17]);
  f.kind = buffered.size() >= f.size ? Frame::kMessage : Frame::kNeedMore;
  return f;
}

Decoded<Message> DecodeMessage(ByteSpan message, const CodecContext& ctx) {
  if (auto err = CheckWhole(message, ctx)) return std::move(*err);
  const uint16_t length = static_cast<uint16_t>(message.size());
  const ByteSpan body = message.subspan(kHeaderSize);
  switch (static_cast<MessageType>(message[18])) {
    case MessageType::kOpen: return DecodeOpen(body, length);
    case MessageType::kUpdate: return DecodeUpdate(body, ctx);
    case MessageType::kNotification:
      return Message{NotificationMessage{body[0], body[1], Bytes(body.begin() + 2, body.end())}};
    case MessageType::kKeepalive: return Message{KeepaliveMessage{}};
    case MessageType::kRouteRefresh: return DecodeRouteRefresh(message, body);
  }
  return MakeDecodeError(1, header_error::kBadMessageType, Bytes{message[18]}, "unknown message type");
}

Decoded<const UpdateMessage*> UpdateDecoder::Decode(ByteSpan message, const CodecContext& ctx) {
  if (auto err = CheckWhole(message, ctx)) return std::move(*err);
  if (message[18] != static_cast<uint8_t>(MessageType::kUpdate)) {
    return MakeDecodeError(1, header_error::kBadMessageType, Bytes{message[18]},
                           absl::StrFormat("%s given to the UPDATE decoder", MessageTypeName(message[18])));
  }
  if (auto err = DecodeUpdateInto(message.subspan(kHeaderSize), ctx, m_, &memo_)) return std::move(*err);
  return &m_;
}

absl::StatusOr<Bytes> EncodeMessage(const Message& message, const CodecContext& ctx) {
  Bytes out;
  out.reserve(64);
  WriteHeader(out, TypeOf(message));
  std::visit(net::Overloaded{
                 [&](const OpenMessage& m) { EncodeOpenBody(m, out); },
                 [&](const UpdateMessage& m) { EncodeUpdateBody(m, ctx, out); },
                 [&](const NotificationMessage& m) {
                   out.push_back(m.code);
                   out.push_back(m.subcode);
                   out.insert(out.end(), m.data.begin(), m.data.end());
                 },
                 [](const KeepaliveMessage&) {},
                 [&](const RouteRefreshMessage& m) {
                   ByteWriter w(out);
                   w.U16(m.afi);
                   w.U8(m.subtype);
                   w.U8(m.safi);
                   w.Append(m.orf);
                 },
             },
             message);
  const size_t max = (TypeOf(message) == MessageType::kOpen) ? kMaxMessageSize : ctx.max_message_size();
  if (out.size() > max) {
    return absl::OutOfRangeError(absl::StrFormat("%s of %d octets exceeds the %d-octet limit",
                                                 MessageTypeName(static_cast<uint8_t>(TypeOf(message))),
                                                 out.size(), max));
  }
  out[16] = static_cast<uint8_t>(out.size() >> 8);
  out[17] = static_cast<uint8_t>(out.size());
  return out;
}

}  // namespace bagd::wire
