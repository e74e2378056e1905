// The defaults of the configuration, applied once after validation so that the daemon
// reads complete values and never needs to know a default (docs/config.md, "Defaults").
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "conf/bagd.pb.h"

namespace bagd::conf {

inline constexpr uint32_t kBgpPort = 179;            // RFC 4271 §8.2.1
inline constexpr uint32_t kDefaultHoldTime = 90;     // RFC 4271 §10 suggests 90 s
inline constexpr uint32_t kDefaultConnectRetry = 5;  // short: peers are one hop away in a fabric
inline constexpr uint32_t kMaxHoldTime = 65535;      // a 2-octet field in OPEN
inline constexpr uint32_t kMaxPort = 65535;
inline constexpr std::size_t kMaxMd5KeyLength = 80;            // Linux TCP_MD5SIG_MAXKEYLEN
inline constexpr std::size_t kMaxShutdownMessageLength = 255;  // RFC 9003 §2
inline constexpr uint32_t kDefaultKernelTable = 254;           // RT_TABLE_MAIN
inline constexpr uint32_t kDefaultKernelProtocol = 186;        // RTPROT_BGP
inline constexpr uint32_t kDefaultResilientBuckets = 128;
inline constexpr uint32_t kDefaultResilientIdleTimer = 120;    // seconds
inline constexpr std::string_view kDefaultAppldbSocket = "/var/run/redis/redis.sock";
inline constexpr std::string_view kDefaultAppldbProtocol = "bagd";  // fib.appldb_protocol
inline constexpr uint32_t kDefaultAppldbConfirmTimeout = 10;     // fib.confirm_timeout, seconds
inline constexpr uint32_t kDefaultAppldbPopBatch = 128;          // fib.appldb_pop_batch (swss' default)
// After a restart: the longest the FIB waits for End-of-RIB, and how long a neighbor that is
// not Established holds that wait (seconds).
inline constexpr uint32_t kDefaultRestartHoldTime = 60;
inline constexpr uint32_t kDefaultFibAuditInterval = 30;
inline constexpr uint32_t kDefaultGroupSwapsPerRevisit = 2;  // seconds; BIRD's kernel scan is 20
inline constexpr uint32_t kDefaultRestartNeighborWait = 10;

// Graceful restart (GracefulRestart; docs/graceful-restart.md), seconds.
inline constexpr uint32_t kDefaultGracefulRestartTime = 120;   // FRR's and RFC 4724's usual value
inline constexpr uint32_t kMaxGracefulRestartTime = 4095;      // a 12-bit field (RFC 4724 §3)
inline constexpr uint32_t kDefaultStaleRoutesTime = 360;       // FRR's stalepath-time
inline constexpr uint32_t kMaxStaleRoutesTime = 3600;

// Hold-down damping (Damping; docs/damping.md), seconds unless named otherwise.
inline constexpr uint32_t kDefaultDecreaseDelay = 0;       // decreases at once: shed load
inline constexpr uint32_t kDefaultIncreaseHoldDown = 30;
inline constexpr uint32_t kDefaultMinChangePercent = 5;
inline constexpr uint32_t kDefaultMaxHoldDown = 600;       // raised to increase_hold_down
inline constexpr uint32_t kDefaultHalfLife = 300;
inline constexpr uint32_t kDefaultEarlyReweightCheck = 2;  // early_reweight_check
inline constexpr uint32_t kDefaultNewPathSettle = 10;      // new_path_settle
inline constexpr uint32_t kMaxDampingDelay = 3600;         // decrease_delay, increase_hold_down
inline constexpr uint32_t kMaxDampingHoldDown = 86400;     // max_hold_down, half_life

// Link bandwidth sent to a neighbor (NeighborLinkBandwidth; docs/link-bandwidth.md).
inline constexpr uint32_t kDefaultReadvertiseThresholdPercent = 5;
inline constexpr uint32_t kDefaultReadvertiseInterval = 5;  // seconds
inline constexpr uint32_t kMaxReadvertiseInterval = 3600;

// Dynamic neighbors a group holds at once (NeighborGroup.listen_limit), FRR's `bgp listen limit`.
inline constexpr uint32_t kDefaultListenLimit = 100;
inline constexpr uint32_t kMaxListenLimit = 65535;

// Maximum prefixes (MaxPrefixes): warn at 75 % of the limit, as FRR and IOS do.
inline constexpr uint32_t kDefaultPrefixWarningPercent = 75;

// Next-hop-group weights (Fib; docs/weights.md). 0 in the config: backend's limit / no limit.
inline constexpr uint32_t kMaxFibWeight = 65535;       // 16-bit nexthop weights
inline constexpr uint32_t kMaxFibGroupBudget = 65536;
// fib.max_groups: the most next-hop groups the FIB may hold (0: the backend's, or none).
inline constexpr uint32_t kMaxFibMaxGroups = 1u << 20;
// fib.group_reserve: groups kept free for make-before-break moves.
inline constexpr uint32_t kDefaultFibGroupReserve = 2;

// The timers a neighbor runs with after defaults: its own values, else the router's.
struct EffectiveTimers {
  uint32_t hold_time = 0;
  uint32_t keepalive = 0;
  uint32_t connect_retry = 0;
  bool hold_time_inherited = false;  // true: taken from router (for error messages)
};

// Router-level timers after defaults (hold 90, keepalive hold/3, connect retry 5).
EffectiveTimers RouterTimers(const bagd::config::v1::Router& router);

// A neighbor's timers after defaults: each absent one from `router` (itself defaulted); a
// neighbor that sets only hold_time gets keepalive hold_time/3.
EffectiveTimers NeighborTimers(const bagd::config::v1::Router& router,
                               const bagd::config::v1::Neighbor& neighbor);

// Fills in every default (see bagd.proto and docs/config.md):
//   router.listen        empty -> 0.0.0.0 port 179 and :: port 179; each port 0 -> 179
//   router.hold_time     absent -> 90; router.keepalive absent -> hold_time/3
//   router.connect_retry 0 -> 5; router.log_level unspecified -> LOG_LEVEL_INFO
//   neighbor.port        0 -> 179
//   neighbor.timers      each absent/0 field -> NeighborTimers()
//   neighbor.address_families empty -> IPV6_UNICAST for an IPv6 address, else IPV4_UNICAST
//   neighbor.link_bandwidth mode -> EXPORT_AUTO, encoding -> ENCODING_TRANSITIVE,
//                        readvertise_threshold_percent absent -> 5,
//                        readvertise_interval absent -> 5
//   neighbor.max_prefixes[] warning_threshold_percent absent -> 75
//   neighbor_groups[].listen_limit absent -> 100
//   router.graceful_restart enabled absent -> true, restart_time -> 120,
//                        stale_routes_time -> 360 (families stay as written: empty = all)
//   neighbor.graceful_restart each absent field -> router.graceful_restart's; families
//                        empty -> router's list, else address_families; then only those
//                        in address_families are kept
//   link_bandwidth       mode -> MODE_WEIGHTED, missing -> MISSING_EQUAL_COST
//   link_bandwidth.families[] mode, missing, default_bandwidth unset -> link_bandwidth's
//                        (after its defaults), so each listed family is complete
//   damping              each absent field: decrease_delay 0, increase_hold_down 30,
//                        min_change_percent 5, max_hold_down max(600, increase_hold_down),
//                        half_life 300, early_reweight true, early_reweight_check 2,
//                        new_path_settle 10
//   fib                  backend -> BACKEND_NETLINK, kernel_table -> 254,
//                        appldb_socket -> /var/run/redis/redis.sock, appldb_protocol ->
//                        bagd, confirm -> CONFIRM_NONE, confirm_timeout -> 10,
//                        appldb_pop_batch -> 128; max_weight
//                        and group_budget stay 0 (the backend's limit / no limit)
// Multipath has no defaults here (0 means "decided by the RIB").
// Rate strings (link_bandwidth, rate, reference, default_bandwidth) are kept as written;
// read them with ParseRate (conf/rate_text.h).
// Idempotent. Meant for a validated config; on an invalid one it still terminates but the
// result is unspecified.
void ApplyDefaults(bagd::config::v1::Config& config);

// The neighbor.* lines above for one neighbor, with `router` already defaulted (a dynamic
// neighbor of a group, made when its connection arrives).
void ApplyNeighborDefaults(const bagd::config::v1::Router& router, bagd::config::v1::Neighbor& neighbor);

}  // namespace bagd::conf
