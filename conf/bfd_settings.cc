#include "conf/bfd_settings.h"

namespace bagd::conf {

namespace v1 = bagd::config::v1;

namespace {

// Bfd and BfdProfile have the same optional fields: whichever sets one wins over `out`.
template <typename M>
void Overlay(const M& m, BfdSettings& out) {
  if (m.has_min_tx()) out.min_tx_ms = m.min_tx();
  if (m.has_min_rx()) out.min_rx_ms = m.min_rx();
  if (m.has_multiplier()) out.multiplier = m.multiplier();
  if (m.has_multihop()) out.multihop = m.multihop();
  if (m.has_passive()) out.passive = m.passive();
  if (m.has_hold_bgp_until_up()) out.hold_bgp_until_up = m.hold_bgp_until_up();
}

}  // namespace

std::optional<BfdSettings> EffectiveBfd(const v1::Config& config, const v1::Neighbor& neighbor) {
  if (!neighbor.has_bfd()) return std::nullopt;
  BfdSettings s;
  if (!neighbor.bfd().profile().empty()) {
    for (const auto& p : config.bfd_profiles()) {
      if (p.name() == neighbor.bfd().profile()) {
        Overlay(p, s);
        break;
      }
    }
  }
  Overlay(neighbor.bfd(), s);
  return s;
}

std::optional<MicroBfdSettings> EffectiveMicroBfd(const v1::Config& config, const v1::CapacitySource& source) {
  if (!source.has_micro_bfd()) return std::nullopt;
  const v1::MicroBfd& m = source.micro_bfd();
  MicroBfdSettings s;
  if (!m.profile().empty()) {
    for (const auto& p : config.bfd_profiles()) {
      if (p.name() == m.profile()) {
        Overlay(p, s.timers);
        break;
      }
    }
  }
  if (m.has_min_tx()) s.timers.min_tx_ms = m.min_tx();
  if (m.has_min_rx()) s.timers.min_rx_ms = m.min_rx();
  if (m.has_multiplier()) s.timers.multiplier = m.multiplier();
  // A profile's role fields mean nothing for a member: single hop, active, no BGP.
  s.timers.multihop = false;
  s.timers.passive = false;
  s.timers.hold_bgp_until_up = false;
  s.local_address = m.local_address();
  s.neighbor_address = m.neighbor_address();
  s.require_up = m.require_up();
  return s;
}

}  // namespace bagd::conf
