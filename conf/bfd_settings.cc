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

}  // namespace bagd::conf
