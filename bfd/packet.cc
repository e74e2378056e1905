#include "bfd/packet.h"

#include "absl/status/status.h"
#include "absl/strings/str_format.h"

namespace bagd::bfd {

const char* StateName(State s) {
  switch (s) {
    case State::kAdminDown: return "AdminDown";
    case State::kDown: return "Down";
    case State::kInit: return "Init";
    case State::kUp: return "Up";
  }
  return "?";
}

const char* DiagName(Diag d) {
  switch (d) {
    case Diag::kNone: return "none";
    case Diag::kControlDetectionTimeExpired: return "control detection time expired";
    case Diag::kEchoFunctionFailed: return "echo function failed";
    case Diag::kNeighborSignaledSessionDown: return "neighbor signaled session down";
    case Diag::kForwardingPlaneReset: return "forwarding plane reset";
    case Diag::kPathDown: return "path down";
    case Diag::kConcatenatedPathDown: return "concatenated path down";
    case Diag::kAdministrativelyDown: return "administratively down";
    case Diag::kReverseConcatenatedPathDown: return "reverse concatenated path down";
  }
  return "unassigned";
}

const char* ReasonLabel(DropReason r) {
  switch (r) {
    case DropReason::kNone: return "none";
    case DropReason::kShort: return "short";
    case DropReason::kBadVersion: return "bad_version";
    case DropReason::kBadLength: return "bad_length";
    case DropReason::kZeroMultiplier: return "zero_multiplier";
    case DropReason::kMultipoint: return "multipoint";
    case DropReason::kZeroMyDiscriminator: return "zero_my_discriminator";
    case DropReason::kYourDiscriminatorZero: return "zero_your_discriminator";
    case DropReason::kAuthNotSupported: return "auth_not_supported";
    case DropReason::kBadTtl: return "bad_ttl";
    case DropReason::kUnknownDiscriminator: return "unknown_discriminator";
    case DropReason::kNoSession: return "no_session";
    case DropReason::kAdminDown: return "admin_down";
    case DropReason::kCount: break;
  }
  return "?";
}

namespace {

uint32_t Get32(std::span<const uint8_t> b, size_t at) {
  return uint32_t{b[at]} << 24 | uint32_t{b[at + 1]} << 16 | uint32_t{b[at + 2]} << 8 | uint32_t{b[at + 3]};
}

void Put32(std::vector<uint8_t>& out, uint32_t v) {
  out.push_back(static_cast<uint8_t>(v >> 24));
  out.push_back(static_cast<uint8_t>(v >> 16));
  out.push_back(static_cast<uint8_t>(v >> 8));
  out.push_back(static_cast<uint8_t>(v));
}

absl::Status Drop(DropReason* out, DropReason r, std::string message) {
  if (out != nullptr) *out = r;
  return absl::InvalidArgumentError(std::move(message));
}

}  // namespace

absl::StatusOr<ControlPacket> Decode(std::span<const uint8_t> b, DropReason* reason) {
  if (reason != nullptr) *reason = DropReason::kNone;
  if (b.size() < kMinLength) {
    return Drop(reason, DropReason::kShort, absl::StrFormat("BFD packet of %d octets: at least 24 expected", b.size()));
  }
  const uint8_t version = b[0] >> 5;
  if (version != kVersion) {
    return Drop(reason, DropReason::kBadVersion, absl::StrFormat("BFD version %d: only version 1 is known", version));
  }
  ControlPacket p;
  p.diag = static_cast<Diag>(b[0] & 0x1f);
  p.state = static_cast<State>(b[1] >> 6);
  p.poll = (b[1] & 0x20) != 0;
  p.final = (b[1] & 0x10) != 0;
  p.control_plane_independent = (b[1] & 0x08) != 0;
  p.auth_present = (b[1] & 0x04) != 0;
  p.demand = (b[1] & 0x02) != 0;
  p.multipoint = (b[1] & 0x01) != 0;
  p.detect_mult = b[2];
  const size_t length = b[3];
  // §6.8.6: Length below the minimum (24, or 26 with the A bit) or above the payload: discard.
  if (length < (p.auth_present ? kMinAuthLength : kMinLength)) {
    return Drop(reason, DropReason::kBadLength, absl::StrFormat("BFD Length field %d is below the minimum", length));
  }
  if (length > b.size()) {
    return Drop(reason, DropReason::kShort,
                absl::StrFormat("BFD Length field %d exceeds the %d octets received", length, b.size()));
  }
  if (p.detect_mult == 0) return Drop(reason, DropReason::kZeroMultiplier, "BFD Detect Mult is zero");
  if (p.multipoint) return Drop(reason, DropReason::kMultipoint, "BFD Multipoint (M) bit is set");
  p.my_discriminator = Get32(b, 4);
  p.your_discriminator = Get32(b, 8);
  p.desired_min_tx_us = Get32(b, 12);
  p.required_min_rx_us = Get32(b, 16);
  p.required_min_echo_rx_us = Get32(b, 20);
  if (p.my_discriminator == 0) {
    return Drop(reason, DropReason::kZeroMyDiscriminator, "BFD My Discriminator is zero");
  }
  if (p.your_discriminator == 0 && p.state != State::kDown && p.state != State::kAdminDown) {
    return Drop(reason, DropReason::kYourDiscriminatorZero,
                absl::StrFormat("BFD Your Discriminator is zero in state %s", StateName(p.state)));
  }
  if (p.auth_present) {
    return Drop(reason, DropReason::kAuthNotSupported, "BFD authentication (A bit) is not supported");
  }
  return p;
}

std::vector<uint8_t> Encode(const ControlPacket& p) {
  std::vector<uint8_t> out;
  out.reserve(kMinLength);
  out.push_back(static_cast<uint8_t>(kVersion << 5 | (static_cast<uint8_t>(p.diag) & 0x1f)));
  out.push_back(static_cast<uint8_t>(static_cast<uint8_t>(p.state) << 6 | (p.poll ? 0x20 : 0) | (p.final ? 0x10 : 0) |
                                     (p.control_plane_independent ? 0x08 : 0) | (p.auth_present ? 0x04 : 0) |
                                     (p.demand ? 0x02 : 0) | (p.multipoint ? 0x01 : 0)));
  out.push_back(p.detect_mult);
  out.push_back(static_cast<uint8_t>(kMinLength));
  Put32(out, p.my_discriminator);
  Put32(out, p.your_discriminator);
  Put32(out, p.desired_min_tx_us);
  Put32(out, p.required_min_rx_us);
  Put32(out, p.required_min_echo_rx_us);
  return out;
}

std::string ToString(const ControlPacket& p) {
  return absl::StrFormat("state %s diag %d%s%s mult %d my %u your %u tx %uus rx %uus", StateName(p.state),
                         static_cast<int>(p.diag), p.poll ? " P" : "", p.final ? " F" : "", p.detect_mult,
                         p.my_discriminator, p.your_discriminator, p.desired_min_tx_us, p.required_min_rx_us);
}

}  // namespace bagd::bfd
