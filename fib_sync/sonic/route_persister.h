// The persistence write of SONiC's ZMQ route path: the routes sent to orchagent over ZMQ are
// also written to APPL_DB's main hashes (ROUTE_TABLE:<key>, plain HSET of the complete field
// set, DEL), with no staging hash, key set or PUBLISH, so `show` tools and bagd's own restart
// (Dump) see them. swss' ZmqProducerStateTable does the same from a thread of its own
// (dbPersistence); so does this: orchagent's path does not wait for Redis (which takes about
// as long per route as a plain pipelined HSET loop, i.e. as long again as the ZMQ path).
//
// One writer thread with its own Redis connection takes batches in the order they were pushed
// (FIFO) and pipelines 1024 commands at a time. WaitIdle() returns once everything pushed is
// written or failed (the owner calls it before reading APPL_DB back). Entries that could not
// be written (Redis down) are counted and flagged (TakeLost()): the owner then resyncs, which
// reads APPL_DB and writes the difference again. The writer yields to orchagent's path: it
// waits while the owner sends (Hold/Release) and runs at nice 10.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "fib_sync/sonic/redis_connection.h"

namespace bagd::fib::sonic {

class RoutePersister {
 public:
  struct Entry {
    std::string key;    // ROUTE_TABLE key ("10.1.0.0/24")
    std::string group;  // nexthop_group; empty: a DEL
  };
  RoutePersister(RedisAddress address, std::chrono::milliseconds io_timeout, std::string protocol);
  ~RoutePersister();
  RoutePersister(const RoutePersister&) = delete;
  RoutePersister& operator=(const RoutePersister&) = delete;

  void Push(std::vector<Entry> batch);
  // While held, the writer takes no new batch: the owner holds it while it sends routes to
  // orchagent, so Redis and the writer do not take CPU from that path; what was pushed
  // meanwhile is written once released (or at destruction).
  void Hold();
  void Release();
  void WaitIdle();
  uint64_t written() const { return written_.load(); }
  uint64_t failed() const { return failed_.load(); }
  // True once after entries were lost (not written).
  bool TakeLost() { return lost_.exchange(false); }

 private:
  void Run();
  void Write(const std::vector<Entry>& batch);

  const RedisAddress address_;
  const std::chrono::milliseconds io_timeout_;
  const std::string protocol_;
  std::unique_ptr<RedisConnection> conn_;  // the writer thread's
  std::mutex mu_;
  std::condition_variable work_, idle_;
  std::deque<std::vector<Entry>> queue_;
  bool busy_ = false, stop_ = false;
  int held_ = 0;
  std::atomic<uint64_t> written_{0}, failed_{0};
  std::atomic<bool> lost_{false};
  std::thread thread_;
};

}  // namespace bagd::fib::sonic
