#include "tests/fib/sonic/fake_zmq_orchagent.h"

#include <zmq.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace bagd::fib::sonic::test {

namespace {

// Reads the description's words: 8 bytes, least significant first.
bool Word(absl::string_view& in, uint64_t& v) {
  if (in.size() < 8) return false;
  v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(in[i]);
  in.remove_prefix(8);
  return true;
}

bool Str(absl::string_view& in, std::string& out) {
  uint64_t n = 0;
  if (!Word(in, n) || n > in.size()) return false;
  out.assign(in.data(), n);
  in.remove_prefix(n);
  return true;
}

}  // namespace

absl::StatusOr<ZmqRouteMessage> DecodeZmqRouteMessage(absl::string_view in) {
  uint64_t pairs = 0;
  if (!Word(in, pairs)) return absl::InvalidArgumentError("shorter than the pair count");
  if (pairs == 0) return absl::InvalidArgumentError("no (db, table) pair");
  ZmqRouteMessage m;
  if (!Str(in, m.db) || !Str(in, m.table)) return absl::InvalidArgumentError("truncated (db, table) pair");
  uint64_t left = pairs - 1;
  while (left > 0) {
    ZmqRouteMessage::Entry e;
    std::string count;
    if (!Str(in, e.key) || !Str(in, count)) return absl::InvalidArgumentError("truncated entry head");
    --left;
    uint64_t n = 0;
    if (count.empty() || !absl::SimpleAtoi(count, &n)) {
      return absl::InvalidArgumentError(absl::StrCat("entry ", e.key, ": field count '", count, "'"));
    }
    if (n > left) return absl::InvalidArgumentError(absl::StrCat("entry ", e.key, ": ", n, " fields, ", left, " pairs left"));
    e.del = n == 0;
    for (uint64_t i = 0; i < n; ++i) {
      std::string f, v;
      if (!Str(in, f) || !Str(in, v)) return absl::InvalidArgumentError(absl::StrCat("entry ", e.key, ": truncated field"));
      e.fields.emplace_back(std::move(f), std::move(v));
    }
    left -= n;
    m.entries.push_back(std::move(e));
  }
  if (!in.empty()) return absl::InvalidArgumentError(absl::StrCat(in.size(), " bytes after the last pair"));
  return m;
}

absl::StatusOr<std::unique_ptr<FakeZmqOrchagent>> FakeZmqOrchagent::Bind(const std::string& endpoint,
                                                                          FakeOrchagent* groups) {
  std::unique_ptr<FakeZmqOrchagent> o(new FakeZmqOrchagent());
  o->endpoint_ = endpoint;
  o->groups_ = groups;
  o->ctx_ = zmq_ctx_new();
  if (auto st = o->Open(); !st.ok()) return st;
  if (groups) {
    FakeZmqOrchagent* self = o.get();
    groups->set_other_users([self](const std::string& g) { return self->users(g); });
  }
  return o;
}

absl::Status FakeZmqOrchagent::Open() {
  socket_ = zmq_socket(ctx_, ZMQ_PULL);
  const int linger = 0;
  zmq_setsockopt(socket_, ZMQ_LINGER, &linger, sizeof linger);
  if (zmq_bind(socket_, endpoint_.c_str()) != 0) {
    return absl::UnavailableError(absl::StrCat("bind ", endpoint_, ": ", zmq_strerror(errno)));
  }
  char last[256];
  size_t len = sizeof last;
  if (zmq_getsockopt(socket_, ZMQ_LAST_ENDPOINT, last, &len) == 0) endpoint_ = last;
  return absl::OkStatus();
}

FakeZmqOrchagent::~FakeZmqOrchagent() {
  if (groups_) groups_->set_other_users(nullptr);
  if (socket_) zmq_close(socket_);
  if (ctx_) zmq_ctx_term(ctx_);
}

void FakeZmqOrchagent::Close() {
  if (socket_) zmq_close(socket_);
  socket_ = nullptr;
  routes_.clear();
  users_.clear();
}

absl::Status FakeZmqOrchagent::Rebind() {
  if (socket_) return absl::OkStatus();
  // The port may stay busy for a moment after the close (the socket is closed by libzmq's
  // I/O thread): another thread, not a timer of ours.
  absl::Status st;
  for (int i = 0; i < 200; ++i) {
    st = Open();
    if (st.ok()) return st;
    zmq_close(socket_);
    socket_ = nullptr;
    zmq_pollitem_t none{nullptr, -1, 0, 0};
    zmq_poll(&none, 0, 10);
  }
  return st;
}

size_t FakeZmqOrchagent::users(const std::string& group) const {
  auto it = users_.find(group);
  return it == users_.end() ? 0 : it->second;
}

size_t FakeZmqOrchagent::Receive(int ms) {
  if (!socket_) return 0;
  const size_t before = stats_.entries();
  zmq_pollitem_t item{socket_, 0, ZMQ_POLLIN, 0};
  if (zmq_poll(&item, 1, ms) <= 0) return 0;
  zmq_msg_t msg;
  zmq_msg_init(&msg);
  while (zmq_msg_recv(&msg, socket_, ZMQ_DONTWAIT) >= 0) {
    Apply(absl::string_view(static_cast<const char*>(zmq_msg_data(&msg)), zmq_msg_size(&msg)));
  }
  zmq_msg_close(&msg);
  return stats_.entries() - before;
}

bool FakeZmqOrchagent::ReceiveUntil(size_t n, int ms) {
  while (stats_.entries() < n) {
    if (Receive(ms) == 0 && stats_.entries() < n) return false;
  }
  return true;
}

void FakeZmqOrchagent::Apply(absl::string_view bytes) {
  ++stats_.messages;
  stats_.bytes += bytes.size();
  auto m = DecodeZmqRouteMessage(bytes);
  if (!m.ok()) {
    Violation(absl::StrCat("message ", stats_.messages, " (", bytes.size(), " bytes): ", m.status().message()));
    return;
  }
  if (m->db != "APPL_DB" || m->table != "ROUTE_TABLE") {
    Violation(absl::StrCat("message for ", m->db, "/", m->table, ", not APPL_DB/ROUTE_TABLE"));
    return;
  }
  // The groups bagd wrote before this message went out are in Redis by now: a group not seen
  // yet is popped from there before the route naming it is judged (only then: a Redis round
  // trip per message would make this stand-in wait behind the persistence write).
  bool drained = false;
  for (const auto& e : m->entries) {
    auto old = routes_.find(e.key);
    if (e.del) {
      ++stats_.route_dels;
      if (old != routes_.end()) {
        --users_[old->second];
        routes_.erase(old);
      }
      continue;
    }
    ++stats_.route_sets;
    // bagd's complete field set (reference section 1, consequence 1).
    std::string group, protocol;
    size_t empty_inline = 0;
    for (const auto& [f, v] : e.fields) {
      if (f == "nexthop_group") {
        group = v;
      } else if (f == "protocol") {
        protocol = v;
      } else if (f == "nexthop" || f == "ifname" || f == "weight" || f == "blackhole") {
        if (!v.empty()) Violation(absl::StrCat("route ", e.key, ": ", f, "='", v, "' next to a group: dropped"));
        ++empty_inline;
      }
    }
    if (group.empty()) Violation(absl::StrCat("route ", e.key, " without nexthop_group"));
    if (protocol.empty()) Violation(absl::StrCat("route ", e.key, " without protocol"));
    if (empty_inline != 4) Violation(absl::StrCat("route ", e.key, ": ", empty_inline, " of 4 inline fields present"));
    if (groups_ && !drained && !groups_->groups().contains(group)) {
      groups_->Drain();
      drained = true;
    }
    if (groups_ && !groups_->groups().contains(group)) {
      Violation(absl::StrCat("route ", e.key, " names group ", group, " before the group was written"));
    }
    if (old != routes_.end()) {
      if (old->second == group) continue;
      --users_[old->second];
      old->second = group;
    } else {
      routes_.emplace(e.key, group);
    }
    ++users_[group];
  }
  // Routes moved off a group may free a delete NhgOrch refused.
  if (groups_) groups_->Retry();
}

}  // namespace bagd::fib::sonic::test
