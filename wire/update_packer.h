// UPDATE packing: every prefix that shares one attribute set goes into as few messages
// as the negotiated message size allows (RFC 4271 §4.3, RFC 8654, RFC 4760).
#pragma once

#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "wire/message.h"

namespace bagd::wire {

// Announces `nlri` of `family` with `attrs`. IPv4 NLRI with an IPv4 NEXT_HOP go in the
// NLRI field; IPv6 NLRI, and IPv4 NLRI with an IPv6 next hop (RFC 8950), go in
// MP_REACH_NLRI, whose next hop is taken from attrs.mp_reach (its nlri are ignored).
absl::StatusOr<std::vector<Bytes>> PackAnnouncements(const PathAttributes& attrs, net::Family family,
                                                     std::span<const net::Nlri> nlri, const CodecContext& ctx);

// Withdraws `nlri` of `family`: the Withdrawn Routes field for IPv4, MP_UNREACH_NLRI for IPv6.
absl::StatusOr<std::vector<Bytes>> PackWithdrawals(net::Family family, std::span<const net::Nlri> nlri,
                                                   const CodecContext& ctx);

// The next hop of an UPDATE PackAnnouncements made, set to `next_hop` in place: the NEXT_HOP
// attribute's 4 octets, or MP_REACH_NLRI's next hop of the same length (16 octets, no link-local).
// This is how neighbors that share one export (the advertiser's update groups) share its packed
// bytes and still get their own next-hop-self. An error, and `update` unchanged, when the message
// holds no next hop of `next_hop`'s length.
absl::Status RewriteNextHop(Bytes& update, const net::IpAddress& next_hop);

}  // namespace bagd::wire
