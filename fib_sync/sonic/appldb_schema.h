// SONiC APPL_DB as bagd writes it, the pure part: Redis key names of the ProducerStateTable
// protocol, the field sets of NEXTHOP_GROUP_TABLE and ROUTE_TABLE entries, bagd's group names,
// the Lua script that stages a batch of keys, reading entries back, and the JSON messages of
// APPL_DB_ROUTE_TABLE_RESPONSE_CHANNEL. No I/O (fib_sync/sonic/appldb_backend.h does that).
//
// Facts from sonic-net/sonic-swss-common and sonic-net/sonic-swss, collected with their
// sources in the project's reference notes (sonic-appl-db.md): per key K of table T, a writer
// adds K to `T_KEY_SET`, writes the fields into the staging hash `_T:K` (a delete also adds K
// to `T_DEL_SET` and drops `_T:K`), and publishes "G" on `T_CHANNEL@0` when K was not pending
// yet. The consumer (orchagent) moves `_T:K` into `T:K`. Staged fields merge field by field,
// so every write carries the complete field set, with "" for the fields bagd does not use.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include "absl/strings/string_view.h"
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "net/ip_prefix.h"

namespace bagd::fib::sonic {

inline constexpr int kApplDb = 0;
inline constexpr int kConfigDb = 4;
inline constexpr int kStateDb = 6;
inline constexpr absl::string_view kRouteTable = "ROUTE_TABLE";
inline constexpr absl::string_view kGroupTable = "NEXTHOP_GROUP_TABLE";
inline constexpr absl::string_view kResponseChannel = "APPL_DB_ROUTE_TABLE_RESPONSE_CHANNEL";
// Every group bagd writes is NEXTHOP_GROUP_TABLE:bagd-<object id>; fpmsyncd uses zebra's
// decimal ids, so the prefix keeps the two apart and marks what bagd owns.
inline constexpr absl::string_view kGroupPrefix = "bagd-";

// The Redis names of one ProducerStateTable in APPL_DB.
struct TableKeys {
  std::string table;    // "ROUTE_TABLE"
  std::string key_set;  // "ROUTE_TABLE_KEY_SET"
  std::string del_set;  // "ROUTE_TABLE_DEL_SET"
  std::string staging;  // "_ROUTE_TABLE:" (+ key)
  std::string main;     // "ROUTE_TABLE:" (+ key)
  std::string channel;  // "ROUTE_TABLE_CHANNEL@0"
};
TableKeys KeysOf(absl::string_view table, int db = kApplDb);

using Fields = std::vector<std::pair<std::string, std::string>>;

// One key to stage: a SET with its complete field set, or a DEL.
struct Write {
  std::string key;
  bool del = false;
  Fields fields;
};

// Group names: "bagd-195887105" <-> 195887105. Anything else is not bagd's.
std::string GroupName(uint32_t id);
std::optional<uint32_t> GroupIdOf(absl::string_view name);

// ROUTE_TABLE keys as fpmsyncd spells them (libnl's nl_addr2str): a host route without its
// length ("10.0.0.1", "2001:db8::1"), any other "10.0.0.0/24". Parsing accepts both; a VRF
// key ("Vrf-red:10.0.0.0/24") is not bagd's and is refused.
std::string RouteKey(const net::Prefix& p);
absl::StatusOr<net::Prefix> ParseRouteKey(absl::string_view key);

struct GroupMember {
  net::IpAddress gateway;
  std::string ifname;
  uint32_t weight = 1;
};
// NEXTHOP_GROUP_TABLE fields: nexthop, ifname, weight (comma-separated, one per member, same
// order), and the group fields bagd does not use, empty.
Fields GroupFields(const std::vector<GroupMember>& members);
// ROUTE_TABLE fields: nexthop_group and protocol, the inline next-hop fields empty (orchagent
// drops a route that has both).
Fields RouteFields(absl::string_view group_name, absl::string_view protocol);

// A NEXTHOP_GROUP_TABLE hash read back. Weights apply only when there is one per next hop
// (as orchagent reads them); otherwise every member weighs 1.
absl::StatusOr<std::vector<GroupMember>> ParseGroup(const std::map<std::string, std::string>& fields);

// The Lua script that stages a batch of writes to one table, atomically, with the per-key
// effect of the ProducerStateTable protocol (above). KEYS: channel, key set, del set,
// staging prefix. ARGV: the consumer's pop batch B, then per write "S"|"D", key, field count
// n, then n field/value pairs. Publishes ceil(newly pending keys / B) messages (orchagent pops
// up to B keys per message) and returns that number.
extern const char kStageScript[];
// EVALSHA arguments for `writes` (one table) with the script's SHA1.
std::vector<std::string> StageCommand(const std::string& sha, const TableKeys& t, const std::vector<Write>& writes,
                                      size_t begin, size_t end, size_t pop_batch);

// A message on APPL_DB_ROUTE_TABLE_RESPONSE_CHANNEL: ["SWSS_RC_SUCCESS", "<key>", "err_str",
// "SWSS_RC_SUCCESS", "protocol", "bgp"] (sonic-swss ResponsePublisher::publishWrite).
struct Response {
  std::string code;  // "SWSS_RC_SUCCESS", "SWSS_RC_FULL", ...
  std::string key;   // the key as written
  std::map<std::string, std::string> fields;
  bool ok() const { return code == "SWSS_RC_SUCCESS"; }
};
absl::StatusOr<Response> ParseResponse(absl::string_view json);

}  // namespace bagd::fib::sonic
