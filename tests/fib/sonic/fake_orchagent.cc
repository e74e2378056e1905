#include "tests/fib/sonic/fake_orchagent.h"

#include <poll.h>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace bagd::fib::sonic::test {

namespace {

// The consumer's pop, from the description: atomically take up to ARGV[1] pending keys; for
// each, a pending delete clears the main hash, the staged fields are merged into it.
// KEYS: key set, del set, staging prefix, main prefix. Returns {{key, {f, v, ...}}, ...}.
constexpr char kPopScript[] = R"lua(
local out = {}
local keys = redis.call('SPOP', KEYS[1], ARGV[1])
for _, k in ipairs(keys) do
  if redis.call('SREM', KEYS[2], k) == 1 then redis.call('DEL', KEYS[4] .. k) end
  local fv = redis.call('HGETALL', KEYS[3] .. k)
  if #fv > 0 then redis.call('HSET', KEYS[4] .. k, unpack(fv)) end
  redis.call('DEL', KEYS[3] .. k)
  table.insert(out, {k, fv})
end
return out
)lua";

const char* kGroupTable = "NEXTHOP_GROUP_TABLE";
const char* kRouteTable = "ROUTE_TABLE";

std::string Get(const std::map<std::string, std::string>& fv, const char* f) {
  auto it = fv.find(f);
  return it == fv.end() ? "" : it->second;
}

}  // namespace

absl::StatusOr<std::unique_ptr<FakeOrchagent>> FakeOrchagent::Connect(const RedisAddress& a, size_t batch) {
  std::unique_ptr<FakeOrchagent> o(new FakeOrchagent(batch));
  auto db = RedisConnection::Connect(a, std::chrono::milliseconds(5000));
  if (!db.ok()) return db.status();
  auto sub = RedisConnection::Connect(a, std::chrono::milliseconds(5000));
  if (!sub.ok()) return sub.status();
  auto sha = (*db)->Command({"SCRIPT", "LOAD", kPopScript});
  if (!sha.ok()) return sha.status();
  if (sha->is_error()) return absl::InternalError(sha->str);
  o->pop_sha_ = sha->str;
  for (const char* t : {kGroupTable, kRouteTable}) {
    auto r = (*sub)->Command({"SUBSCRIBE", absl::StrCat(t, "_CHANNEL@0")});
    if (!r.ok()) return r.status();
    // Keys written while no consumer ran are served as if announced (as orchagent does at start).
    auto n = (*db)->Command({"SCARD", absl::StrCat(t, "_KEY_SET")});
    if (!n.ok()) return n.status();
    if (n->integer > 0) o->Announced(t) += static_cast<size_t>((n->integer + batch - 1) / batch);
  }
  o->db_ = std::move(*db);
  o->sub_ = std::move(*sub);
  return o;
}

size_t FakeOrchagent::WaitAndDrain(int ms) {
  pollfd p{sub_->fd(), POLLIN, 0};
  poll(&p, 1, ms);
  return Drain();
}

bool FakeOrchagent::Announced() const { return announced_groups_ > 0 || announced_routes_ > 0; }

size_t& FakeOrchagent::Announced(const std::string& table) {
  return table == kGroupTable ? announced_groups_ : announced_routes_;
}

size_t FakeOrchagent::Drain() {
  size_t popped = 0;
  while (true) {
    std::vector<RedisReply> msgs;
    if (!sub_->ReadAvailable(msgs).ok()) return popped;
    if (msgs.empty() && !Announced()) {
      // Redis flushes the publisher's reply and the subscribers' messages independently:
      // a message may still be on its way. Keys pending mean one must come.
      size_t pending = 0;
      for (const char* t : {kGroupTable, kRouteTable}) {
        auto n = db_->Command({"SCARD", absl::StrCat(t, "_KEY_SET")});
        if (n.ok()) pending += static_cast<size_t>(n->integer);
      }
      if (pending == 0) return popped;
      pollfd p{sub_->fd(), POLLIN, 0};
      if (poll(&p, 1, 2000) <= 0) {
        Violation(absl::StrCat(pending, " keys pending and no message announced them"));
        ++announced_groups_;
        ++announced_routes_;
      }
      if (!sub_->ReadAvailable(msgs).ok()) return popped;
    }
    for (const RedisReply& m : msgs) {
      if (m.type != RedisReply::Type::kArray || m.elements.size() != 3 || m.elements[0].str != "message") continue;
      ++stats_.messages;
      const std::string& ch = m.elements[1].str;
      ++(ch.starts_with(kGroupTable) ? announced_groups_ : announced_routes_);
    }
    // Groups first, as a busy orchagent with both ready would often do; what is left out of
    // order shows up as a violation below either way.
    size_t round = 0;
    for (const char* t : {kGroupTable, kRouteTable}) {
      size_t& announced = Announced(t);
      while (announced > 0) {
        --announced;
        const size_t n = Pop(t, batch_);
        round += n;
        // Fewer than asked: the set is empty, the other messages announced keys already taken.
        if (n < batch_) announced = 0;
      }
    }
    RetryPending();
    popped += round;
  }
}

size_t FakeOrchagent::Pop(const std::string& table, size_t n) {
  auto r = db_->Command({"EVALSHA", pop_sha_, "4", table + "_KEY_SET", table + "_DEL_SET", "_" + table + ":",
                         table + ":", absl::StrCat(n)});
  if (!r.ok() || r->type != RedisReply::Type::kArray) {
    Violation(absl::StrCat("pop of ", table, " failed: ", r.ok() ? r->str : r.status().ToString()));
    return 0;
  }
  for (const RedisReply& e : r->elements) {
    std::map<std::string, std::string> fv;
    const RedisReply& pairs = e.elements[1];
    for (size_t i = 0; i + 1 < pairs.elements.size(); i += 2) fv[pairs.elements[i].str] = pairs.elements[i + 1].str;
    const std::string& key = e.elements[0].str;
    if (table == kGroupTable) {
      ApplyGroup(key, fv, fv.empty());
    } else {
      ApplyRoute(key, fv, fv.empty());
    }
  }
  return r->elements.size();
}

void FakeOrchagent::ApplyGroup(const std::string& key, const std::map<std::string, std::string>& fv, bool del) {
  if (del) {
    ++stats_.group_dels;
    for (const auto& [route, group] : routes_) {
      if (group == key) {
        Violation(absl::StrCat("group ", key, " deleted while route ", route, " uses it"));
        pending_group_dels_.insert(key);
        return;
      }
    }
    groups_.erase(key);
    return;
  }
  ++stats_.group_sets;
  pending_group_dels_.erase(key);  // a SET behind a queued DEL wins
  for (const char* f : {"nexthop", "ifname", "weight", "nexthop_group"}) {
    if (!fv.contains(f)) Violation(absl::StrCat("group ", key, " written without field ", f));
  }
  const std::vector<std::string> nh = absl::StrSplit(Get(fv, "nexthop"), ',');
  const std::vector<std::string> ifn = absl::StrSplit(Get(fv, "ifname"), ',');
  const std::vector<std::string> w = absl::StrSplit(Get(fv, "weight"), ',');
  if (nh.size() != ifn.size() || nh.size() != w.size()) {
    Violation(absl::StrCat("group ", key, ": ", nh.size(), " next hops, ", ifn.size(), " names, ", w.size(), " weights"));
    return;
  }
  std::vector<Member> members;
  for (size_t i = 0; i < nh.size(); ++i) {
    if (ifn[i].empty()) Violation(absl::StrCat("group ", key, ": next hop ", nh[i], " without ifname"));
    members.push_back(Member{nh[i], ifn[i], static_cast<uint32_t>(std::stoul(w[i]))});
  }
  groups_[key] = std::move(members);
}

void FakeOrchagent::ApplyRoute(const std::string& key, const std::map<std::string, std::string>& fv, bool del) {
  if (del) {
    ++stats_.route_dels;
    routes_.erase(key);
    pending_routes_.erase(key);
    return;
  }
  ++stats_.route_sets;
  for (const char* f : {"nexthop", "ifname", "weight", "nexthop_group", "protocol"}) {
    if (!fv.contains(f)) Violation(absl::StrCat("route ", key, " written without field ", f));
  }
  const std::string group = Get(fv, "nexthop_group");
  if (!group.empty() && (!Get(fv, "nexthop").empty() || !Get(fv, "ifname").empty())) {
    Violation(absl::StrCat("route ", key, " has both nexthop_group and ips/aliases: dropped"));
    return;
  }
  if (group.empty()) {
    Violation(absl::StrCat("route ", key, " without nexthop_group"));
    return;
  }
  if (!groups_.contains(group)) {
    Violation(absl::StrCat("route ", key, " names group ", group, ", which does not exist"));
    pending_routes_[key] = fv;
    return;
  }
  pending_routes_.erase(key);
  routes_[key] = group;
  route_protocol_[key] = Get(fv, "protocol");
  if (respond_ && respond_(key)) {
    nlohmann::json j = {"SWSS_RC_SUCCESS", key, "err_str", "SWSS_RC_SUCCESS", "protocol", Get(fv, "protocol")};
    auto r = db_->Command({"PUBLISH", "APPL_DB_ROUTE_TABLE_RESPONSE_CHANNEL", j.dump()});
    if (r.ok()) ++stats_.responses;
  }
}

void FakeOrchagent::RetryPending() {
  auto routes = pending_routes_;
  for (const auto& [key, fv] : routes) {
    if (groups_.contains(Get(fv, "nexthop_group"))) {
      --stats_.route_sets;  // counted when popped
      ApplyRoute(key, fv, false);
    }
  }
  auto dels = pending_group_dels_;
  for (const std::string& g : dels) {
    bool used = false;
    for (const auto& [route, group] : routes_) used = used || group == g;
    if (!used) {
      groups_.erase(g);
      pending_group_dels_.erase(g);
    }
  }
}

}  // namespace bagd::fib::sonic::test
