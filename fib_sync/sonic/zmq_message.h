// The message of SONiC's ZMQ route path, the pure part: what orchagent's ZMQ consumer
// (sonic-swss-common ZmqServer / ZmqConsumerStateTable, reading what ZmqProducerStateTable
// sends) takes from its PULL socket. Facts, with their sources, in the project's reference
// notes (sonic-appl-db.md, "The ZMQ route path"; sonic-swss-common common/binaryserializer.h):
//
//   message := count pair...                  count: the number of pairs that follow
//   pair    := string string
//   string  := length bytes                   length: native size_t (8 bytes little-endian on
//                                             the amd64/arm64 switches SONiC runs on)
//   pairs   := (db name, table name)          e.g. ("APPL_DB", "ROUTE_TABLE")
//              then per entry (key, n) and n (field, value) pairs, n in decimal text;
//              n = 0 is a DEL.
//
// Many entries go in one message (fpmsyncd batches). orchagent refuses a message of 16 MiB
// or more (MQ_RESPONSE_MAX_COUNT): ZmqMessageBuilder says when the next entry would pass a
// bound the caller picks. No I/O here (fib_sync/sonic/zmq_route_sender.h sends).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "fib_sync/sonic/appldb_schema.h"

namespace bagd::fib::sonic {

// The largest message orchagent takes (exclusive): sonic-swss-common MQ_RESPONSE_MAX_COUNT.
inline constexpr size_t kZmqMaxMessageBytes = 16 * 1024 * 1024;
// The socket orchagent binds when swss_zmq is enabled: 127.0.0.1, port 8100 (ORCH_ZMQ_PORT;
// 8100 + ASIC index + 1 in a multi-ASIC namespace).
inline constexpr absl::string_view kZmqDefaultEndpoint = "tcp://127.0.0.1:8100";
inline constexpr absl::string_view kApplDbName = "APPL_DB";

// Builds one message for one table: Add() entries, then Take() the bytes (the builder starts
// over for the next message).
class ZmqMessageBuilder {
 public:
  ZmqMessageBuilder(absl::string_view db, absl::string_view table);
  // A SET with its complete field set, or a DEL (w.del: no fields are written).
  void Add(const Write& w);
  // The bytes a message with `w` added would grow by.
  static size_t SizeOf(const Write& w);
  size_t entries() const { return entries_; }
  size_t size() const { return buf_.size(); }
  bool empty() const { return entries_ == 0; }
  std::string Take();

 private:
  void Reset();
  void String(absl::string_view s);
  std::string db_, table_;
  std::string buf_;
  uint64_t pairs_ = 0;
  size_t entries_ = 0;
};

}  // namespace bagd::fib::sonic
