// A stand-in for orchagent's end of SONiC's ZMQ route path, written from the format's
// description (project reference sonic-appl-db.md, "The ZMQ route path"), not from bagd's
// encoder: it binds a ZMQ PULL socket where orchagent binds its own, and decodes each message
// by that description:
//   a count of pairs (8-byte little-endian size_t), then that many pairs of strings, each
//   string its length (the same 8-byte word) and its bytes; pair 1 = (db, table), then per
//   entry (key, number of fields in decimal) followed by that many (field, value) pairs;
//   0 fields = DEL.
// After every message it checks what RouteOrch would refuse or what would break
// make-before-break, and records each as a violation: a message it cannot decode, a db or
// table other than APPL_DB / ROUTE_TABLE, a SET without the complete field set bagd writes
// (nexthop_group and protocol set; nexthop, ifname, weight, blackhole present and empty: a
// route with both nexthop_group and nexthop/ifname is dropped), a route naming a group the
// Redis channel has not delivered (groups stay on NEXTHOP_GROUP_TABLE over Redis: the
// FakeOrchagent given pops them when a message names a group it has not seen).
//
// Close() and Bind() again model an orchagent restart (it starts empty); not calling
// Receive() models a slow one. Lean, as FakeOrchagent: routes in a hash map, a use count
// per group.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "tests/fib/sonic/fake_orchagent.h"

namespace bagd::fib::sonic::test {

// One decoded message, as the description defines it.
struct ZmqRouteMessage {
  std::string db, table;
  struct Entry {
    std::string key;
    bool del = false;
    std::vector<std::pair<std::string, std::string>> fields;
  };
  std::vector<Entry> entries;
};
absl::StatusOr<ZmqRouteMessage> DecodeZmqRouteMessage(absl::string_view bytes);

class FakeZmqOrchagent {
 public:
  struct Stats {
    size_t messages = 0, bytes = 0, route_sets = 0, route_dels = 0;
    size_t entries() const { return route_sets + route_dels; }
  };
  // Binds `endpoint` ("tcp://127.0.0.1:*" picks a free port: endpoint() says which).
  // `groups`: the Redis stand-in that takes NEXTHOP_GROUP_TABLE (may be null: no group check).
  static absl::StatusOr<std::unique_ptr<FakeZmqOrchagent>> Bind(const std::string& endpoint, FakeOrchagent* groups);
  ~FakeZmqOrchagent();

  // Waits up to `ms` for a message, then takes every message that is there; returns the
  // entries applied.
  size_t Receive(int ms);
  // Receives until `n` entries in all have arrived since the last ResetStats() (or `ms`
  // passed without a message).
  bool ReceiveUntil(size_t n, int ms);
  // A restart: the socket closes (what is queued for it is lost), the state is forgotten.
  void Close();
  absl::Status Rebind();

  const std::string& endpoint() const { return endpoint_; }
  const absl::flat_hash_map<std::string, std::string>& routes() const { return routes_; }  // key -> group
  size_t users(const std::string& group) const;
  const std::vector<std::string>& violations() const { return violations_; }
  const Stats& stats() const { return stats_; }
  void ResetStats() { stats_ = {}; }

 private:
  FakeZmqOrchagent() = default;
  absl::Status Open();
  void Apply(absl::string_view bytes);
  void Violation(std::string s) { violations_.push_back(std::move(s)); }

  std::string endpoint_;
  void* ctx_ = nullptr;
  void* socket_ = nullptr;
  FakeOrchagent* groups_ = nullptr;
  absl::flat_hash_map<std::string, std::string> routes_;
  absl::flat_hash_map<std::string, size_t> users_;
  std::vector<std::string> violations_;
  Stats stats_;
};

}  // namespace bagd::fib::sonic::test
