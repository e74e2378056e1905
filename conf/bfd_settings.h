// A neighbor's BFD settings as they apply: the neighbor's `bfd` fields, else its profile's,
// else the defaults (docs/bfd.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "conf/bagd.pb.h"

namespace bagd::conf {

inline constexpr uint32_t kBfdDefaultIntervalMs = 300;  // FRR bfdd's default too
inline constexpr uint32_t kBfdDefaultMultiplier = 3;
inline constexpr uint32_t kBfdMinIntervalMs = 10;
inline constexpr uint32_t kBfdMaxIntervalMs = 60000;

struct BfdSettings {
  uint32_t min_tx_ms = kBfdDefaultIntervalMs;
  uint32_t min_rx_ms = kBfdDefaultIntervalMs;
  uint32_t multiplier = kBfdDefaultMultiplier;
  bool multihop = false;
  bool passive = false;
  bool hold_bgp_until_up = false;
  friend bool operator==(const BfdSettings&, const BfdSettings&) = default;
};

// Null when the neighbor has no `bfd`. A profile that does not exist counts as empty (the
// validator reports it).
std::optional<BfdSettings> EffectiveBfd(const bagd::config::v1::Config& config,
                                        const bagd::config::v1::Neighbor& neighbor);

// A capacity source's micro-BFD (RFC 7130) settings: its `micro_bfd` fields, else its
// profile's intervals and multiplier, else the defaults. Null when the source has none.
struct MicroBfdSettings {
  BfdSettings timers;  // min_tx, min_rx, multiplier (multihop, passive, hold: unused)
  std::string local_address, neighbor_address;
  bool require_up = false;
};
std::optional<MicroBfdSettings> EffectiveMicroBfd(const bagd::config::v1::Config& config,
                                                  const bagd::config::v1::CapacitySource& source);

}  // namespace bagd::conf
