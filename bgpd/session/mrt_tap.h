// The MRT updates log's tap on what peers send (docs/mrt.md): a Peer calls it with every
// message its connections deliver, as received (marker included), before decoding it.
// Called on the io thread; an implementation must only copy and queue, never block.
#pragma once

#include <cstdint>

#include "net/ip_prefix.h"
#include "wire/byte_io.h"

namespace bagd::session {

struct MrtReceivedMessage {
  net::IpAddress peer_address;
  net::IpAddress local_address;  // the connection's; the peer's family's zeros when unknown
  uint32_t peer_as = 0;
  uint32_t local_as = 0;
  bool four_octet_as = true;  // negotiated (RFC 6793); true before the OPENs are exchanged
  bool add_path = false;      // the peer sends ADD-PATH path ids in some family (RFC 7911)
  wire::ByteSpan message;     // valid only during the call
};

// A session's state change (RFC 6396 §4.4.1 numbering: 1 Idle ... 6 Established).
struct MrtStateChange {
  net::IpAddress peer_address;
  net::IpAddress local_address;  // as in MrtReceivedMessage
  uint32_t peer_as = 0;
  uint32_t local_as = 0;
  uint16_t old_state = 1;
  uint16_t new_state = 1;
};

class MrtMessageTap {
 public:
  virtual ~MrtMessageTap() = default;
  // False: the log is off; the Peer skips building the record.
  virtual bool mrt_enabled() const = 0;
  virtual void OnMrtMessage(const MrtReceivedMessage& m) = 0;
  // The neighbor's session (its primary connection) changed state.
  virtual void OnMrtStateChange(const MrtStateChange& /*s*/) {}
};

}  // namespace bagd::session
