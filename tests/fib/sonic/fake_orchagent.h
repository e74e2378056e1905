// A stand-in for SONiC's orchagent, written from the protocol description (project reference
// sonic-appl-db.md, sections 1-3 and 5; no swss code): it subscribes to the tables' channels,
// and per message pops up to `batch` pending keys with one Lua script (loaded once, run with
// EVALSHA, as swss' ConsumerStateTable pops): SPOP from T_KEY_SET; a key also in T_DEL_SET
// clears the main hash T:K; the staged hash _T:K is merged into T:K and dropped; the script
// returns the keys with their staged fields. It then applies them to an in-memory "ASIC" the
// way RouteOrch/NhgOrch treat them: a route naming a group that does not exist is kept
// pending, a group delete is refused while routes use it, a route with both nexthop_group
// and nexthop/ifname is dropped. Each of these is also recorded as a violation: bagd's
// ordering must never cause one. Optionally publishes success responses on
// APPL_DB_ROUTE_TABLE_RESPONSE_CHANNEL.
//
// Lean on purpose, so that a benchmark measures Redis and the protocol rather than this
// stand-in: the pop reply is flat (key, pair count, field, value, ...), fields are matched
// against a fixed list without building a map, routes live in a hash map with a per-group
// route count (a group delete checks a counter, not every route), and responses of one pop
// go out as one pipeline.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "fib_sync/sonic/redis_connection.h"

namespace bagd::fib::sonic::test {

class FakeOrchagent {
 public:
  struct Member {
    std::string nexthop, ifname;
    uint32_t weight = 0;
    bool operator==(const Member&) const = default;
  };
  struct Stats {
    size_t messages = 0;  // channel messages received
    size_t group_sets = 0, group_dels = 0, route_sets = 0, route_dels = 0;  // keys popped
    size_t responses = 0;
    size_t pops = 0;  // pop scripts run
    size_t keys() const { return group_sets + group_dels + route_sets + route_dels; }
  };

  // How the staged fields reach the main hash (the benchmark compares their Redis cost):
  // one HSET of all of them (default); one HSET per field, as swss' pop script does; or, when
  // there is no main hash yet, RENAME of the staging hash (what a pop could do; swss does not).
  enum class Merge { kOneHset, kHsetPerField, kRenameFresh };
  static absl::StatusOr<std::unique_ptr<FakeOrchagent>> Connect(const RedisAddress& a, size_t batch = 1024,
                                                                Merge merge = Merge::kOneHset);

  // Pops and applies until nothing is pending that a message announced; returns keys popped.
  size_t Drain();
  // As Drain, but first waits up to `ms` for a message (for a consumer in its own thread).
  size_t WaitAndDrain(int ms);

  // Routes of another channel (the ZMQ route path's stand-in, fake_zmq_orchagent.h) that use
  // a group: a group delete is refused while they do, as NhgOrch refuses it. With two
  // channels a delete may race ahead of the route message that moves routes off the group
  // (orchagent retries it), so that refusal is no violation; one still pending when
  // everything has arrived is (pending_group_deletes()).
  void set_other_users(std::function<size_t(const std::string& group)> f) { other_users_ = std::move(f); }
  const std::vector<std::string>& pending_group_deletes() const { return pending_group_dels_; }
  // Retries what waits (group deletes refused while used): after the other channel moved routes.
  void Retry() { RetryPending(); }

  // Which routes get a success response (default: none).
  void set_respond(std::function<bool(const std::string& key)> f) { respond_ = std::move(f); }

  const std::map<std::string, std::vector<Member>, std::less<>>& groups() const { return groups_; }
  const absl::flat_hash_map<std::string, std::string>& routes() const { return routes_; }  // key -> group name
  const std::vector<std::string>& violations() const { return violations_; }
  const Stats& stats() const { return stats_; }
  void ResetStats() { stats_ = {}; }
  bool connected() const { return db_->ok() && sub_->ok(); }

 private:
  // The fields of one popped key, as views into the pop's reply (fixed list; others ignored).
  enum Field { kNexthop, kIfname, kWeight, kNexthopGroup, kProtocol, kFieldCount };
  static constexpr absl::string_view kFieldNames[kFieldCount] = {"nexthop", "ifname", "weight", "nexthop_group",
                                                                 "protocol"};
  struct Entry {
    absl::string_view value[kFieldCount];
    unsigned present = 0;  // bit per Field
    size_t pairs = 0;      // every field/value pair, known or not
    bool has(Field f) const { return present & (1u << f); }
  };
  struct PendingRoute {
    std::string group, protocol;
  };

  explicit FakeOrchagent(size_t batch) : batch_(batch) {}
  size_t Pop(bool groups);  // one pop of up to `batch_` keys
  void ApplyGroup(const std::string& key, const Entry& e, bool del);
  void ApplyRoute(const std::string& key, const Entry& e, bool del);
  // A route whose group exists: installed (and answered).
  void Install(const std::string& key, absl::string_view group, absl::string_view protocol);
  void Unuse(const std::string& group);
  void RetryPending();
  void FlushResponses();
  bool Announced() const { return announced_groups_ > 0 || announced_routes_ > 0; }
  void Violation(std::string s) { violations_.push_back(std::move(s)); }

  size_t batch_;
  std::unique_ptr<RedisConnection> db_, sub_;
  std::string pop_sha_;
  std::vector<std::string> pop_argv_[2];  // the pop's EVALSHA for the group table, the route table
  size_t announced_groups_ = 0, announced_routes_ = 0;  // messages not yet served, per table
  std::map<std::string, std::vector<Member>, std::less<>> groups_;
  absl::flat_hash_map<std::string, size_t> group_users_;  // routes installed on each group
  absl::flat_hash_map<std::string, std::string> routes_;
  absl::flat_hash_map<std::string, PendingRoute> pending_routes_;  // waiting for their group
  std::vector<std::string> pending_group_dels_;  // refused while used; done once unused
  std::function<bool(const std::string&)> respond_;
  std::function<size_t(const std::string&)> other_users_;
  std::vector<std::vector<std::string>> responses_;  // PUBLISHes of the current pop
  std::vector<std::string> violations_;
  Stats stats_;
};

}  // namespace bagd::fib::sonic::test
