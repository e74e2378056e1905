#include "fib_sync/sonic/redis_connection.h"

#include <hiredis/hiredis.h>
#include <poll.h>
#include <signal.h>

#include <mutex>

#include "absl/strings/str_cat.h"
#include "net/host_port.h"

namespace bagd::fib::sonic {

namespace {

timeval ToTimeval(std::chrono::milliseconds ms) {
  timeval tv{};
  tv.tv_sec = ms.count() / 1000;
  tv.tv_usec = (ms.count() % 1000) * 1000;
  return tv;
}

RedisReply Copy(const redisReply* r) {
  RedisReply out;
  switch (r->type) {
    case REDIS_REPLY_STRING:
      out.type = RedisReply::Type::kString;
      out.str.assign(r->str, r->len);
      break;
    case REDIS_REPLY_STATUS:
      out.type = RedisReply::Type::kStatus;
      out.str.assign(r->str, r->len);
      break;
    case REDIS_REPLY_ERROR:
      out.type = RedisReply::Type::kError;
      out.str.assign(r->str, r->len);
      break;
    case REDIS_REPLY_INTEGER:
      out.type = RedisReply::Type::kInteger;
      out.integer = r->integer;
      break;
    case REDIS_REPLY_ARRAY:
      out.type = RedisReply::Type::kArray;
      out.elements.reserve(r->elements);
      for (size_t i = 0; i < r->elements; ++i) out.elements.push_back(Copy(r->element[i]));
      break;
    default:
      out.type = RedisReply::Type::kNil;
  }
  return out;
}

absl::Status Append(redisContext* c, const std::vector<std::string>& argv) {
  std::vector<const char*> p;
  std::vector<size_t> len;
  p.reserve(argv.size());
  len.reserve(argv.size());
  for (const auto& a : argv) {
    p.push_back(a.data());
    len.push_back(a.size());
  }
  if (redisAppendCommandArgv(c, static_cast<int>(argv.size()), p.data(), len.data()) != REDIS_OK) {
    return absl::InternalError("redis: out of memory formatting a command");
  }
  return absl::OkStatus();
}

}  // namespace

std::string RedisAddress::ToString() const {
  return host.empty() ? absl::StrCat("unix:", unix_socket) : absl::StrCat(host, ":", port);
}

absl::StatusOr<RedisAddress> ParseRedisTcpAddress(const std::string& a) {
  absl::StatusOr<net::HostPort> hp = net::ParseHostPort(a);
  if (!hp.ok()) return hp.status();
  return RedisAddress{"", std::move(hp->host), hp->port};
}

absl::StatusOr<std::unique_ptr<RedisConnection>> RedisConnection::Connect(const RedisAddress& address,
                                                                         std::chrono::milliseconds timeout) {
  // hiredis write()s to the socket: a server that went away must be an error, not SIGPIPE
  // (which would end the daemon). Only if nobody chose a disposition for it.
  static std::once_flag sigpipe;
  std::call_once(sigpipe, [] {
    struct sigaction old {};
    if (sigaction(SIGPIPE, nullptr, &old) == 0 && old.sa_handler == SIG_DFL) signal(SIGPIPE, SIG_IGN);
  });
  const timeval tv = ToTimeval(timeout);
  redisContext* c = address.host.empty() ? redisConnectUnixWithTimeout(address.unix_socket.c_str(), tv)
                                         : redisConnectWithTimeout(address.host.c_str(), address.port, tv);
  if (c == nullptr) return absl::UnavailableError(absl::StrCat("redis ", address.ToString(), ": out of memory"));
  if (c->err) {
    absl::Status st = absl::UnavailableError(absl::StrCat("redis ", address.ToString(), ": ", c->errstr));
    redisFree(c);
    return st;
  }
  if (redisSetTimeout(c, tv) != REDIS_OK) {
    redisFree(c);
    return absl::UnavailableError(absl::StrCat("redis ", address.ToString(), ": cannot set the timeout"));
  }
  return std::unique_ptr<RedisConnection>(new RedisConnection(c, address));
}

RedisConnection::~RedisConnection() { redisFree(ctx_); }

bool RedisConnection::ok() const { return ctx_->err == 0; }
int RedisConnection::fd() const { return ctx_->fd; }

absl::Status RedisConnection::Error(const char* what) const {
  return absl::UnavailableError(
      absl::StrCat("redis ", address_.ToString(), ": ", what, ": ", ctx_->err ? ctx_->errstr : "connection lost"));
}

absl::StatusOr<RedisReply> RedisConnection::Command(const std::vector<std::string>& argv) {
  auto r = Pipeline({argv});
  if (!r.status.ok()) return r.status;
  return std::move(r.replies.front());
}

void AppendResp(std::string& out, std::initializer_list<std::string_view> head,
                const std::vector<std::pair<std::string, std::string>>& pairs) {
  auto bulk = [&out](std::string_view a) {
    absl::StrAppend(&out, "$", a.size(), "\r\n");
    out.append(a.data(), a.size());
    out.append("\r\n");
  };
  absl::StrAppend(&out, "*", head.size() + 2 * pairs.size(), "\r\n");
  for (std::string_view a : head) bulk(a);
  for (const auto& [f, v] : pairs) {
    bulk(f);
    bulk(v);
  }
}

RedisConnection::PipelineResult RedisConnection::PipelineFormatted(const std::string& resp, size_t n) {
  PipelineResult out;
  if (!ok()) {
    out.status = Error("not connected");
    return out;
  }
  if (redisAppendFormattedCommand(ctx_, resp.data(), resp.size()) != REDIS_OK) {
    out.status = Error("appending");
    return out;
  }
  return ReadReplies(n);
}

RedisConnection::PipelineResult RedisConnection::Pipeline(const std::vector<std::vector<std::string>>& commands) {
  PipelineResult out;
  if (!ok()) {
    out.status = Error("not connected");
    return out;
  }
  for (const auto& argv : commands) {
    if (auto st = Append(ctx_, argv); !st.ok()) {
      out.status = st;
      return out;
    }
  }
  return ReadReplies(commands.size());
}

RedisConnection::PipelineResult RedisConnection::ReadReplies(size_t n) {
  PipelineResult out;
  out.replies.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    void* raw = nullptr;
    if (!ok() || redisGetReply(ctx_, &raw) != REDIS_OK || raw == nullptr) {
      if (raw) freeReplyObject(raw);
      out.status = Error("reading a reply");
      return out;
    }
    out.replies.push_back(Copy(static_cast<redisReply*>(raw)));
    freeReplyObject(raw);
  }
  return out;
}

absl::Status RedisConnection::Send(const std::vector<std::string>& argv) {
  if (!ok()) return Error("not connected");
  if (auto st = Append(ctx_, argv); !st.ok()) return st;
  int done = 0;
  while (!done) {
    if (redisBufferWrite(ctx_, &done) != REDIS_OK) return Error("writing");
  }
  return absl::OkStatus();
}

absl::Status RedisConnection::ReadAvailable(std::vector<RedisReply>& out) {
  if (!ok()) return Error("not connected");
  while (true) {
    // Replies already buffered first; then one read() if the socket has more.
    void* raw = nullptr;
    if (redisGetReplyFromReader(ctx_, &raw) != REDIS_OK) return Error("parsing a reply");
    if (raw != nullptr) {
      out.push_back(Copy(static_cast<redisReply*>(raw)));
      freeReplyObject(raw);
      continue;
    }
    pollfd p{ctx_->fd, POLLIN, 0};
    const int n = poll(&p, 1, 0);
    if (n <= 0) return absl::OkStatus();
    if (redisBufferRead(ctx_) != REDIS_OK) return Error("reading");
  }
}

}  // namespace bagd::fib::sonic
