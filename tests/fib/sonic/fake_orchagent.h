// A stand-in for SONiC's orchagent, written from the protocol description (project reference
// sonic-appl-db.md, sections 1-3 and 5; no swss code): it subscribes to the tables' channels,
// and per message pops up to `batch` pending keys atomically (SPOP from T_KEY_SET; a key also
// in T_DEL_SET clears the main hash T:K; the staged hash _T:K is merged into T:K and dropped),
// then applies them to an in-memory "ASIC" the way RouteOrch/NhgOrch treat them: a route
// naming a group that does not exist is kept pending, a group delete is refused while routes
// use it, a route with both nexthop_group and nexthop/ifname is dropped. Each of these is
// also recorded as a violation: bagd's ordering must never cause one. Optionally publishes
// success responses on APPL_DB_ROUTE_TABLE_RESPONSE_CHANNEL.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

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
    size_t keys() const { return group_sets + group_dels + route_sets + route_dels; }
  };

  static absl::StatusOr<std::unique_ptr<FakeOrchagent>> Connect(const RedisAddress& a, size_t batch = 1024);

  // Pops and applies until nothing is pending that a message announced; returns keys popped.
  size_t Drain();
  // As Drain, but first waits up to `ms` for a message (for a consumer in its own thread).
  size_t WaitAndDrain(int ms);

  // Which routes get a success response (default: none).
  void set_respond(std::function<bool(const std::string& key)> f) { respond_ = std::move(f); }

  const std::map<std::string, std::vector<Member>>& groups() const { return groups_; }
  const std::map<std::string, std::string>& routes() const { return routes_; }  // key -> group name
  const std::vector<std::string>& violations() const { return violations_; }
  const Stats& stats() const { return stats_; }
  void ResetStats() { stats_ = {}; }
  bool connected() const { return db_->ok() && sub_->ok(); }

 private:
  explicit FakeOrchagent(size_t batch) : batch_(batch) {}
  size_t Pop(const std::string& table, size_t n);
  void ApplyGroup(const std::string& key, const std::map<std::string, std::string>& fv, bool del);
  void ApplyRoute(const std::string& key, const std::map<std::string, std::string>& fv, bool del);
  void RetryPending();
  bool Announced() const;
  void Violation(std::string s) { violations_.push_back(std::move(s)); }

  size_t batch_;
  std::unique_ptr<RedisConnection> db_, sub_;
  std::string pop_sha_;
  size_t& Announced(const std::string& table);
  size_t announced_groups_ = 0, announced_routes_ = 0;  // messages not yet served, per table
  std::map<std::string, std::vector<Member>> groups_;
  std::map<std::string, std::string> routes_;
  std::map<std::string, std::string> route_protocol_;
  std::map<std::string, std::map<std::string, std::string>> pending_routes_;  // waiting for their group
  std::set<std::string> pending_group_dels_;
  std::function<bool(const std::string&)> respond_;
  std::vector<std::string> violations_;
  Stats stats_;
};

}  // namespace bagd::fib::sonic::test
