// SONiC's APPL_DB (Redis) as a FIB backend: orchagent reads what bagd writes and programs the
// ASIC through SAI. What bagd writes (fib_sync/sonic/appldb_schema.h has the encoding):
//   NEXTHOP_GROUP_TABLE:bagd-<id>  nexthop=a,b  ifname=Ethernet0,Ethernet4  weight=3,1
//   ROUTE_TABLE:<prefix>           nexthop_group=bagd-<id>  protocol=bagd  (inline fields "")
// through the ProducerStateTable protocol: one Lua script (loaded once, run with EVALSHA) per
// batch of keys, many batches pipelined. A reweight is one group write; routes are not
// touched. Next hops are no APPL_DB objects: a NexthopOp only resolves the gateway's
// interface (the injected resolver: the kernel's connected interfaces on a SONiC host, where
// netdevs carry the SONiC port names).
//
// Ownership: groups by their name prefix, routes by `protocol`. Dump() reads both back (the
// main hashes with what is still staged for orchagent on top), so a restart with unchanged
// state adopts everything and writes nothing.
//
// Connection loss: the operation fails (the reconciler keeps it dirty), Service() reconnects
// with backoff and then emits kResyncNeeded, so the reconciler compares a fresh dump and
// writes the difference; until that dump, writes are refused (make-before-break holds even if
// the owner flushes before it resyncs). Nothing here blocks longer than the I/O timeout.
//
// Confirmation (optional): orchagent publishes each programmed route on
// APPL_DB_ROUTE_TABLE_RESPONSE_CHANNEL (only with suppress-fib-pending; failures are never
// published). A route written and not confirmed within confirm_timeout is written again and
// counted. Groups get no response: a group is confirmed by a confirmed route that uses it.
//
// The ZMQ route path (docs/sonic.md): when CONFIG_DB SYSTEM_DEFAULTS|swss_zmq is enabled (or
// the options force it), orchagent reads ROUTE_TABLE only from its ZMQ socket. Routes then go
// there, many to a message (fib_sync/sonic/zmq_message.h), and the same entries are written
// to APPL_DB's main hashes with plain HSET/DEL (no staging set, no PUBLISH), so `show` tools
// and a restart's Dump() see them. NEXTHOP_GROUP_TABLE stays on the Redis protocol above
// (orchagent's NhgOrch reads it from Redis either way). Order is kept: a run of group writes
// is staged before the routes that follow it are sent. After orchagent restarts (the socket
// reconnects) bagd sends again every group and route it has written.
//
// Not thread-safe; runs on the owner's thread. Time comes from the injected clock.
#pragma once

#include <chrono>
#include <queue>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "fib_sync/fib_backend.h"
#include "fib_sync/sonic/appldb_schema.h"
#include "fib_sync/sonic/redis_connection.h"
#include "fib_sync/sonic/route_persister.h"
#include "fib_sync/sonic/zmq_message.h"
#include "fib_sync/sonic/zmq_route_sender.h"

namespace bagd::fib::sonic {

using Clock = std::function<std::chrono::steady_clock::time_point()>;
// The interface through which a gateway is reached ("Ethernet0"), or why there is none.
using InterfaceResolver = std::function<absl::StatusOr<std::string>(const net::IpAddress&)>;

struct AppldbOptions {
  RedisAddress address{"/var/run/redis/redis.sock", "", 6379};
  std::string protocol = "bagd";  // ROUTE_TABLE protocol: marks bagd's routes
  bool confirm = false;           // wait for orchagent's responses
  std::chrono::milliseconds confirm_timeout{10000};
  std::chrono::milliseconds io_timeout{5000};
  std::chrono::milliseconds reconnect_first{100};
  std::chrono::milliseconds reconnect_max{10000};
  size_t keys_per_script = 512;     // keys staged by one EVALSHA
  size_t scripts_per_pipeline = 64; // EVALSHAs sent before their replies are read
  // Keys orchagent pops per channel message (its `-b`; swss' default is 128, SONiC's
  // orchagent.sh passes 1024): each script publishes one message per this many keys it made
  // newly pending. 1: one message per key, as swss' ProducerStateTable does.
  size_t pop_batch = 128;
  uint32_t max_members = 256;
  // Which way ROUTE_TABLE goes: kAuto follows CONFIG_DB SYSTEM_DEFAULTS|swss_zmq.
  enum class RoutePath : uint8_t { kAuto, kRedis, kZmq };
  RoutePath route_path = RoutePath::kAuto;
  std::string zmq_endpoint = std::string(kZmqDefaultEndpoint);
  int zmq_high_water_mark = 10000;            // messages queued in the socket (swss' value)
  std::chrono::milliseconds zmq_send_wait{5000};  // for room below the high-water mark
  size_t zmq_entries_per_message = 1024;      // routes per message (also bounded by bytes)
  size_t zmq_message_bytes = 4 * 1024 * 1024; // < 16 MiB, orchagent's limit
  bool zmq_persist = true;  // also HSET/DEL the main hashes in APPL_DB (its own thread and connection)
};

class AppldbBackend : public FibBackend {
 public:
  // Connects, refuses when orchagent takes routes over ZMQ (CONFIG_DB SYSTEM_DEFAULTS|swss_zmq),
  // reads MAX_NEXTHOP_GROUP_COUNT (STATE_DB SWITCH_CAPABILITY|switch), loads the script and
  // subscribes to the response channel.
  static absl::StatusOr<std::unique_ptr<AppldbBackend>> Open(const AppldbOptions& options,
                                                             InterfaceResolver resolver, Clock clock);

  FibCapabilities Capabilities() const override;
  std::vector<absl::Status> Apply(std::span<const FibOp> ops) override;
  absl::StatusOr<FibState> Dump() override;

  // The background work, due at the time it returns (or when event_fd() is readable): reads
  // responses, reconnects after a loss (then emits kResyncNeeded), writes again the routes
  // that were not confirmed in time.
  std::chrono::steady_clock::time_point Service();
  // The subscriber connection's socket (-1 while disconnected); changes on reconnect.
  int event_fd() const;
  bool connected() const { return main_ != nullptr; }
  // ROUTE_TABLE over ZMQ (the Redis protocol otherwise); decided once, in Open().
  bool zmq() const { return zmq_ != nullptr; }
  // "zmq tcp://127.0.0.1:8100" or "redis"; and why (for the log and bagctl).
  std::string route_path() const;
  const std::string& route_path_reason() const { return route_path_reason_; }
  const ZmqRouteSender* zmq_sender() const { return zmq_.get(); }
  // The ZMQ path: waits until the persistence write has put every route sent so far into
  // APPL_DB (its own thread; Dump() waits too), and updates counters().persist_*. The
  // persistence write starts once the owner's thread is idle (Service()) or here: a flush's
  // routes all go to orchagent first (what waits meanwhile: ~64 bytes a route).
  void WaitPersisted();

  enum class Confirmation : uint8_t { kNotAsked, kPending, kConfirmed, kAdopted };
  struct GroupView {
    std::string name;  // NEXTHOP_GROUP_TABLE key
    bool written = false;
    uint32_t routes = 0, confirmed = 0, pending = 0, retried = 0;  // routes written on it
  };
  std::optional<GroupView> Group(ObjectId id) const;
  std::optional<Confirmation> RouteConfirmation(const net::Prefix& p) const;
  size_t unconfirmed() const { return unconfirmed_now_; }  // past the timeout, not confirmed yet

  struct Counters {
    uint64_t group_writes = 0, group_deletes = 0, route_writes = 0, route_deletes = 0;  // keys staged
    uint64_t scripts = 0;            // EVALSHA calls
    uint64_t retries = 0;            // routes written again for want of a confirmation
    uint64_t timeouts = 0;           // routes that passed the confirmation timeout
    uint64_t confirmed = 0;          // routes confirmed by orchagent
    uint64_t failed_responses = 0;   // responses with a code other than SWSS_RC_SUCCESS
    uint64_t bad_responses = 0;      // messages bagd cannot read
    uint64_t stale_responses = 0;    // responses for an earlier write of a route (another group)
    uint64_t disconnects = 0, reconnects = 0;
    uint64_t bad_entries = 0;        // bagd-owned APPL_DB entries bagd cannot read
    uint64_t zmq_resends = 0;        // full resends after orchagent's socket reconnected
    uint64_t persist_writes = 0;     // main-hash HSET/DELs of the ZMQ path's persistence write
    uint64_t persist_failures = 0;   // persistence writes Redis refused or lost
  };
  const Counters& counters() const { return counters_; }
  // Why entries read back were skipped, and the last refusal (for the log), then cleared.
  std::vector<std::string> TakeProblems();
  uint32_t max_groups() const { return max_groups_; }
  const AppldbOptions& options() const { return options_; }

 private:
  struct Nexthop {
    net::IpAddress gateway;
    std::string ifname;
  };
  struct RouteMark {
    ObjectId group = 0;
    Confirmation state = Confirmation::kNotAsked;
    uint16_t tries = 0;
    std::chrono::steady_clock::time_point deadline{};
  };
  struct GroupMark {
    bool written = false;
    uint32_t routes = 0, confirmed = 0, pending = 0, retried = 0;
  };

  AppldbBackend(const AppldbOptions& o, InterfaceResolver r, Clock c)
      : options_(o), resolver_(std::move(r)), clock_(std::move(c)), backoff_(o.reconnect_first) {}
  absl::Status Connect();
  void Disconnect(const absl::Status& why);
  // Stages `writes` (one table each run) and returns one status per write.
  // Why nothing may be written now (not connected, or reconnected and not yet read back);
  // OK when writes may go.
  absl::Status WritesBlocked() const;
  std::vector<absl::Status> Stage(const TableKeys& table, const std::vector<Write>& writes);
  absl::StatusOr<std::map<std::string, std::map<std::string, std::string>>> ReadTable(
      const TableKeys& t, const std::string& key_pattern, const std::vector<std::string>& fields);
  ObjectId NexthopIdFor(const net::IpAddress& gw, const std::string& ifname);
  void MarkRoute(const net::Prefix& p, std::optional<ObjectId> group, Confirmation state);
  void OnResponse(const std::string& payload);
  void RetryUnconfirmed(std::chrono::steady_clock::time_point now);
  void Problem(std::string s);
  // The ZMQ path: routes as messages, then their persistence write; one status per write.
  std::vector<absl::Status> SendRoutes(const std::vector<Write>& writes, bool persist);
  void Persist(const std::vector<Write>& writes, size_t begin, size_t end);
  // After orchagent reconnected: every group (Redis) then every route (ZMQ) bagd has written.
  void ResendAll();

  AppldbOptions options_;
  InterfaceResolver resolver_;
  Clock clock_;
  std::unique_ptr<RedisConnection> main_, sub_;
  std::string sha_;
  uint32_t max_groups_ = 0;
  bool ever_connected_ = false;
  bool resync_pending_ = false;  // reconnected: no write before the next Dump()
  std::chrono::milliseconds backoff_;
  std::chrono::steady_clock::time_point next_connect_{};
  TableKeys routes_table_ = KeysOf(kRouteTable), groups_table_ = KeysOf(kGroupTable);
  std::unique_ptr<ZmqRouteSender> zmq_;
  std::string route_path_reason_;
  bool zmq_resend_pending_ = false;
  bool persist_resync_ = false;  // the persister lost routes: resync at the next Service()
  bool persist_held_ = false;    // routes sent since the last Service(): the persister waits
  void ReleasePersister();
  std::unique_ptr<RoutePersister> persister_;
  std::map<ObjectId, Fields> group_fields_;  // the ZMQ path: what each written group holds (for a resend)

  std::map<ObjectId, Nexthop> nexthops_;
  absl::flat_hash_map<net::IpAddress, ObjectId> nexthop_of_;
  ObjectId next_synthetic_ = 0xF0000000;  // ids for next hops read back from groups
  absl::flat_hash_map<ObjectId, GroupMark> groups_;
  absl::flat_hash_map<net::Prefix, RouteMark> routes_;
  struct Deadline {
    std::chrono::steady_clock::time_point at;
    net::Prefix prefix;
    bool operator>(const Deadline& o) const { return at > o.at; }
  };
  // Routes waiting for a confirmation, earliest deadline first; an entry whose route has
  // moved on (confirmed, rewritten, deleted) is skipped when it comes up.
  std::priority_queue<Deadline, std::vector<Deadline>, std::greater<Deadline>> confirm_queue_;
  size_t unconfirmed_now_ = 0;
  Counters counters_;
  std::vector<std::string> problems_;
};

}  // namespace bagd::fib::sonic
