// BGP messages as values, and the pure codec entry points (design.md rule 1):
// bytes in, values or a DecodeError (with the exact NOTIFICATION to send) out.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "wire/byte_io.h"
#include "wire/capability.h"
#include "wire/codec_context.h"
#include "wire/notification.h"
#include "wire/path_attributes.h"

namespace bagd::wire {

enum class MessageType : uint8_t { kOpen = 1, kUpdate = 2, kNotification = 3, kKeepalive = 4, kRouteRefresh = 5 };
const char* MessageTypeName(uint8_t type);  // "OPEN", ...

// A non-capability optional parameter (RFC 4271 §4.2); bagd rejects these with 2/4
// but keeps them so the encoder is symmetric and bagctl can show them.
struct OptionalParameter {
  uint8_t type = 0;
  Bytes value;
  friend bool operator==(const OptionalParameter&, const OptionalParameter&) = default;
};

struct OpenMessage {
  uint8_t version = 4;
  uint16_t my_as = 0;  // the 2-octet field; AS_TRANS when the real AS is 4-octet
  uint16_t hold_time = 0;
  uint32_t bgp_id = 0;
  std::vector<Capability> capabilities;
  std::vector<OptionalParameter> other_parameters;
  bool extended_optional_parameters = false;  // RFC 9072 encoding was (or is to be) used
  // Capabilities whose value had the wrong shape (kept as UnknownCap).
  std::vector<uint8_t> malformed_capabilities;

  // The speaker's AS: the 4-octet AS capability if present, else my_as.
  uint32_t AsNumber() const;
  template <class T>
  const T* Find() const {
    for (const auto& c : capabilities)
      if (const T* t = std::get_if<T>(&c)) return t;
    return nullptr;
  }
  friend bool operator==(const OpenMessage&, const OpenMessage&) = default;
};

// Which decode produced an UPDATE's path attributes: UpdateDecoder gives the attributes it
// decodes a number no other decode in the process has, and keeps it while it reuses them for
// the same octets, so equal tokens mean equal attributes and the RIB interns a run of them
// once (AttributeStore::Intern). 0: no such promise (DecodeMessage, a message built in code).
// Only the decoder's own message carries one: a copy of a message starts at 0 (whoever has a
// copy may change its attributes). Not part of a message's value: == ignores it, so a
// decoder's message equals DecodeMessage's for the same octets.
struct AttributesToken {
  uint64_t value = 0;
  AttributesToken() = default;
  AttributesToken(const AttributesToken&) {}
  AttributesToken& operator=(const AttributesToken&) {
    value = 0;
    return *this;
  }
  friend bool operator==(const AttributesToken&, const AttributesToken&) { return true; }
};

struct UpdateMessage {
  std::vector<net::Nlri> withdrawn;  // IPv4 Withdrawn Routes field
  PathAttributes attrs;
  std::vector<net::Nlri> nlri;  // IPv4 NLRI field
  AttributesToken attrs_token;  // set by UpdateDecoder in its own message; 0 in a copy

  // Set by the decoder (RFC 7606). kTreatAsWithdraw means every route in nlri and
  // attrs.mp_reach must be handled as withdrawn.
  ErrorAction action = ErrorAction::kNone;
  std::vector<AttributeError> errors;
  std::optional<net::Family> disabled_family;  // with kAfiSafiDisable

  // RFC 4724 §2: an empty UPDATE (IPv4) or one with only an empty MP_UNREACH.
  std::optional<net::Family> EndOfRib() const;
  static UpdateMessage MakeEndOfRib(net::Family f);
  friend bool operator==(const UpdateMessage&, const UpdateMessage&) = default;
};

struct KeepaliveMessage {
  friend bool operator==(const KeepaliveMessage&, const KeepaliveMessage&) = default;
};

// RFC 7313 §3: the Message Subtype (RFC 2918's Reserved octet). Others are reserved and a
// receiver ignores the message (§5).
namespace route_refresh_subtype {
inline constexpr uint8_t kRequest = 0;  // a normal route refresh request (RFC 2918)
inline constexpr uint8_t kBorr = 1;     // Beginning of Route Refresh
inline constexpr uint8_t kEorr = 2;     // End of Route Refresh
}  // namespace route_refresh_subtype
// "request", "BoRR", "EoRR", "reserved".
const char* RouteRefreshSubtypeName(uint8_t subtype);

// RFC 2918 / RFC 7313. subtype 0 = normal request, 1 = BoRR, 2 = EoRR.
struct RouteRefreshMessage {
  uint16_t afi = 1;
  uint8_t subtype = 0;
  uint8_t safi = 1;
  Bytes orf;  // trailing ORF entries (RFC 5291) of a normal request, kept raw
  // For one of bagd's families (SAFI 1, unicast).
  static RouteRefreshMessage Make(net::Family f, uint8_t subtype = route_refresh_subtype::kRequest);
  friend bool operator==(const RouteRefreshMessage&, const RouteRefreshMessage&) = default;
};

using Message = std::variant<OpenMessage, UpdateMessage, NotificationMessage, KeepaliveMessage, RouteRefreshMessage>;
MessageType TypeOf(const Message& m);

// Why a message could not be accepted, and what to tell the peer.
struct DecodeError {
  NotificationMessage notification;
  std::string reason;
  friend bool operator==(const DecodeError&, const DecodeError&) = default;
};

template <class T>
class Decoded {
 public:
  Decoded(T value) : v_(std::move(value)) {}
  Decoded(DecodeError error) : v_(std::move(error)) {}
  bool ok() const { return v_.index() == 0; }
  const T& value() const& { return std::get<0>(v_); }
  T& value() & { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  const DecodeError& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, DecodeError> v_;
};

DecodeError MakeDecodeError(uint8_t code, uint8_t subcode, Bytes data, std::string reason);

// Stream framing: given the bytes buffered so far, tells whether a whole message is
// there (and its size), how many bytes are needed in total, or that the header is bad.
// It looks only at the first message and never past its declared length.
struct Frame {
  enum Kind { kNeedMore, kMessage, kError } kind = kNeedMore;
  size_t size = 0;  // kNeedMore: total bytes needed; kMessage: the message's length
  DecodeError error;
};
Frame NextFrame(ByteSpan buffered, const CodecContext& ctx);

// Decodes one whole message (header included).
Decoded<Message> DecodeMessage(ByteSpan message, const CodecContext& ctx);

// Decodes one session's UPDATEs, one after another, into a message it keeps (its vectors
// are reused, not allocated per UPDATE). The path attributes are decoded again only when
// their octets, the context or whether the NLRI field is empty differ from the previous
// UPDATE's: a table sent one prefix per UPDATE, all with the same attributes, has them
// decoded once. What Decode gives is what DecodeMessage gives for the same octets.
class UpdateDecoder {
 public:
  // `message` is one whole UPDATE (header included). The message returned is valid until
  // the next Decode.
  Decoded<const UpdateMessage*> Decode(ByteSpan message, const CodecContext& ctx);
  // How many times the path attributes were decoded (the rest reused the previous ones).
  uint64_t attribute_decodes() const { return memo_.decodes; }

  // What the kept message's attributes (attrs, action, errors, disabled_family) were
  // decoded from.
  struct AttributeMemo {
    Bytes octets;
    CodecContext ctx;
    bool has_nlri = false;
    bool valid = false;
    uint64_t decodes = 0;
  };

 private:
  UpdateMessage m_;
  AttributeMemo memo_;
};

// Encodes one message. Fails if it would exceed the negotiated size.
absl::StatusOr<Bytes> EncodeMessage(const Message& message, const CodecContext& ctx);

}  // namespace bagd::wire
