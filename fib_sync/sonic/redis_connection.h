// One connection to a Redis server over hiredis' synchronous API (Debian libhiredis-dev
// 0.14, what SONiC links): commands, pipelines (many commands sent, then their replies read),
// and the subscriber side of pub/sub read without blocking. Replies are copied into owning
// values, so nothing of hiredis escapes. Every I/O has a timeout; after a transport error the
// connection is dead (ok() false) and the owner reconnects. The first Connect() ignores
// SIGPIPE process-wide (unless a handler is set): a vanished server is an error, not an exit.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

struct redisContext;

namespace bagd::fib::sonic {

struct RedisAddress {
  std::string unix_socket;  // used when host is empty
  std::string host;
  uint16_t port = 6379;
  std::string ToString() const;
};
// "127.0.0.1:6379", "[::1]:6379", "localhost:6379" as a TCP address (net::ParseHostPort).
absl::StatusOr<RedisAddress> ParseRedisTcpAddress(const std::string& text);

struct RedisReply {
  enum class Type { kNil, kString, kStatus, kError, kInteger, kArray };
  Type type = Type::kNil;
  std::string str;  // kString, kStatus, kError
  int64_t integer = 0;
  std::vector<RedisReply> elements;
  bool is_error() const { return type == Type::kError; }
};

// Appends one command in RESP ("*2\r\n$3\r\nDEL\r\n$1\r\nk\r\n") to `out`.
void AppendResp(std::string& out, std::initializer_list<std::string_view> head,
                const std::vector<std::pair<std::string, std::string>>& pairs = {});

class RedisConnection {
 public:
  static absl::StatusOr<std::unique_ptr<RedisConnection>> Connect(const RedisAddress& address,
                                                                   std::chrono::milliseconds timeout);
  ~RedisConnection();
  RedisConnection(const RedisConnection&) = delete;
  RedisConnection& operator=(const RedisConnection&) = delete;

  // One command; a Redis error reply is a reply (is_error()), not a failed status.
  absl::StatusOr<RedisReply> Command(const std::vector<std::string>& argv);
  // Sends every command, then reads the replies, in order. A transport failure returns the
  // replies read so far with the error in `status` (the connection is then dead).
  struct PipelineResult {
    absl::Status status;
    std::vector<RedisReply> replies;
  };
  PipelineResult Pipeline(const std::vector<std::vector<std::string>>& commands);
  // As Pipeline, for `n` commands already in Redis' wire format (RESP arrays of bulk strings,
  // e.g. built with AppendResp): no per-argument vectors for a long run of small commands.
  PipelineResult PipelineFormatted(const std::string& resp, size_t n);
  // Reads the replies of `n` commands sent with Send(), in order (a pipeline whose commands
  // Redis runs while the next ones are still being built).
  PipelineResult ReadReplies(size_t n);
  // Subscriber side: the replies (pub/sub messages) that can be read without blocking.
  absl::Status ReadAvailable(std::vector<RedisReply>& out);
  // Sends a command without waiting for its reply (SUBSCRIBE).
  absl::Status Send(const std::vector<std::string>& argv);

  bool ok() const;
  int fd() const;
  const RedisAddress& address() const { return address_; }

 private:
  RedisConnection(redisContext* c, RedisAddress a) : ctx_(c), address_(std::move(a)) {}
  absl::Status Error(const char* what) const;
  redisContext* ctx_;
  RedisAddress address_;
};

}  // namespace bagd::fib::sonic
