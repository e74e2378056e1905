#include "tests/fib/sonic/fake_orchagent.h"

#include <poll.h>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace bagd::fib::sonic::test {

namespace {

// The consumer's pop, written from the description (sonic-appl-db.md section 1): atomically
// take up to ARGV[1] pending keys; for each, a pending delete clears the main hash, then the
// staged fields are merged into it and the staging hash is dropped. KEYS: key set, del set,
// staging prefix, main prefix. Returns one flat array: per key, the key, the number n of
// staged field/value pairs, then the n pairs; n = 0 is a delete. (swss reports a delete that
// has a SET staged behind it as a DEL followed by a SET; both end as the SET's fields, which
// is what this consumer applies: a replace.)
// ARGV[2]: "0" one HSET for all fields, "1" one per field (what swss' script costs Redis),
// "2" RENAME the staging hash when there is no main hash (same result, less work).
constexpr char kPopScript[] = R"lua(
local out, n = {}, 0
local per_field, rename = ARGV[2] == '1', ARGV[2] == '2'
local keys = redis.call('SPOP', KEYS[1], ARGV[1])
for _, k in ipairs(keys) do
  local main = KEYS[4] .. k
  if redis.call('SREM', KEYS[2], k) == 1 then redis.call('DEL', main) end
  local staged = KEYS[3] .. k
  local fv = redis.call('HGETALL', staged)
  local pairs = #fv
  out[n + 1] = k
  out[n + 2] = pairs / 2
  n = n + 2
  if pairs > 0 then
    if rename and redis.call('EXISTS', main) == 0 then
      redis.call('RENAME', staged, main)
    else
      if per_field then
        for i = 1, pairs, 2 do redis.call('HSET', main, fv[i], fv[i + 1]) end
      else
        redis.call('HSET', main, unpack(fv))
      end
      redis.call('DEL', staged)
    end
    for i = 1, pairs do out[n + i] = fv[i] end
    n = n + pairs
  end
end
return out
)lua";

constexpr const char* kGroupTable = "NEXTHOP_GROUP_TABLE";
constexpr const char* kRouteTable = "ROUTE_TABLE";

}  // namespace

absl::StatusOr<std::unique_ptr<FakeOrchagent>> FakeOrchagent::Connect(const RedisAddress& a, size_t batch,
                                                                     Merge merge) {
  std::unique_ptr<FakeOrchagent> o(new FakeOrchagent(std::max<size_t>(1, batch)));
  auto db = RedisConnection::Connect(a, std::chrono::milliseconds(5000));
  if (!db.ok()) return db.status();
  auto sub = RedisConnection::Connect(a, std::chrono::milliseconds(5000));
  if (!sub.ok()) return sub.status();
  auto sha = (*db)->Command({"SCRIPT", "LOAD", kPopScript});
  if (!sha.ok()) return sha.status();
  if (sha->is_error()) return absl::InternalError(sha->str);
  o->pop_sha_ = sha->str;
  int t = 0;
  for (const char* table : {kGroupTable, kRouteTable}) {
    const std::string name = table;
    o->pop_argv_[t++] = {"EVALSHA", o->pop_sha_, "4", name + "_KEY_SET", name + "_DEL_SET", "_" + name + ":",
                         name + ":", absl::StrCat(o->batch_), absl::StrCat(static_cast<int>(merge))};
    auto r = (*sub)->Command({"SUBSCRIBE", absl::StrCat(table, "_CHANNEL@0")});
    if (!r.ok()) return r.status();
    // Keys written while no consumer ran are served as if announced (as orchagent does at start).
    auto n = (*db)->Command({"SCARD", absl::StrCat(table, "_KEY_SET")});
    if (!n.ok()) return n.status();
    if (n->integer > 0) {
      (table == kGroupTable ? o->announced_groups_ : o->announced_routes_) +=
          static_cast<size_t>((n->integer + o->batch_ - 1) / o->batch_);
    }
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
      ++(m.elements[1].str.starts_with(kGroupTable) ? announced_groups_ : announced_routes_);
    }
    // Groups first, as a busy orchagent with both ready would often do; what is left out of
    // order shows up as a violation below either way.
    size_t round = 0;
    for (const bool groups : {true, false}) {
      size_t& announced = groups ? announced_groups_ : announced_routes_;
      while (announced > 0) {
        --announced;
        const size_t n = Pop(groups);
        round += n;
        // Fewer than asked: the set is empty, the other messages announced keys already taken.
        if (n < batch_) announced = 0;
      }
    }
    RetryPending();
    popped += round;
  }
}

size_t FakeOrchagent::Pop(bool groups) {
  auto r = db_->Command(pop_argv_[groups ? 0 : 1]);
  ++stats_.pops;
  const char* table = groups ? kGroupTable : kRouteTable;
  if (!r.ok() || r->type != RedisReply::Type::kArray) {
    Violation(absl::StrCat("pop of ", table, " failed: ", r.ok() ? r->str : r.status().ToString()));
    return 0;
  }
  const std::vector<RedisReply>& el = r->elements;
  size_t keys = 0;
  for (size_t i = 0; i < el.size();) {
    if (i + 1 >= el.size() || el[i + 1].type != RedisReply::Type::kInteger || el[i + 1].integer < 0 ||
        i + 2 + 2 * static_cast<size_t>(el[i + 1].integer) > el.size()) {
      Violation(absl::StrCat("pop of ", table, ": malformed reply at element ", i));
      break;
    }
    const std::string& key = el[i].str;
    Entry e;
    e.pairs = static_cast<size_t>(el[i + 1].integer);
    i += 2;
    for (size_t p = 0; p < e.pairs; ++p, i += 2) {
      const std::string& f = el[i].str;
      for (int k = 0; k < kFieldCount; ++k) {
        if (f == kFieldNames[k]) {
          e.value[k] = el[i + 1].str;
          e.present |= 1u << k;
          break;
        }
      }
    }
    ++keys;
    if (groups) {
      ApplyGroup(key, e, e.pairs == 0);
    } else {
      ApplyRoute(key, e, e.pairs == 0);
    }
  }
  FlushResponses();
  return keys;
}

void FakeOrchagent::ApplyGroup(const std::string& key, const Entry& e, bool del) {
  if (del) {
    ++stats_.group_dels;
    if (auto it = group_users_.find(key); it != group_users_.end() && it->second > 0) {
      Violation(absl::StrCat("group ", key, " deleted while ", it->second, " routes use it"));
      if (std::find(pending_group_dels_.begin(), pending_group_dels_.end(), key) == pending_group_dels_.end()) {
        pending_group_dels_.push_back(key);
      }
      return;
    }
    if (other_users_ && other_users_(key) > 0) {
      if (std::find(pending_group_dels_.begin(), pending_group_dels_.end(), key) == pending_group_dels_.end()) {
        pending_group_dels_.push_back(key);
      }
      return;
    }
    groups_.erase(key);
    return;
  }
  ++stats_.group_sets;
  std::erase(pending_group_dels_, key);  // a SET behind a queued DEL wins
  for (Field f : {kNexthop, kIfname, kWeight, kNexthopGroup}) {
    if (!e.has(f)) Violation(absl::StrCat("group ", key, " written without field ", kFieldNames[f]));
  }
  const std::vector<absl::string_view> nh = absl::StrSplit(e.value[kNexthop], ',');
  const std::vector<absl::string_view> ifn = absl::StrSplit(e.value[kIfname], ',');
  const std::vector<absl::string_view> w = absl::StrSplit(e.value[kWeight], ',');
  if (nh.size() != ifn.size() || nh.size() != w.size()) {
    Violation(absl::StrCat("group ", key, ": ", nh.size(), " next hops, ", ifn.size(), " names, ", w.size(), " weights"));
    return;
  }
  std::vector<Member> members;
  for (size_t i = 0; i < nh.size(); ++i) {
    if (ifn[i].empty()) Violation(absl::StrCat("group ", key, ": next hop ", nh[i], " without ifname"));
    uint32_t weight = 0;
    if (!absl::SimpleAtoi(w[i], &weight)) Violation(absl::StrCat("group ", key, ": weight '", w[i], "'"));
    members.push_back(Member{std::string(nh[i]), std::string(ifn[i]), weight});
  }
  groups_[key] = std::move(members);
}

void FakeOrchagent::ApplyRoute(const std::string& key, const Entry& e, bool del) {
  if (del) {
    ++stats_.route_dels;
    if (auto it = routes_.find(key); it != routes_.end()) {
      Unuse(it->second);
      routes_.erase(it);
    }
    pending_routes_.erase(key);
    return;
  }
  ++stats_.route_sets;
  for (Field f : {kNexthop, kIfname, kWeight, kNexthopGroup, kProtocol}) {
    if (!e.has(f)) Violation(absl::StrCat("route ", key, " written without field ", kFieldNames[f]));
  }
  const absl::string_view group = e.value[kNexthopGroup];
  if (!group.empty() && (!e.value[kNexthop].empty() || !e.value[kIfname].empty())) {
    Violation(absl::StrCat("route ", key, " has both nexthop_group and ips/aliases: dropped"));
    return;
  }
  if (group.empty()) {
    Violation(absl::StrCat("route ", key, " without nexthop_group"));
    return;
  }
  if (!groups_.contains(group)) {
    Violation(absl::StrCat("route ", key, " names group ", group, ", which does not exist"));
    pending_routes_[key] = PendingRoute{std::string(group), std::string(e.value[kProtocol])};
    return;
  }
  if (!pending_routes_.empty()) pending_routes_.erase(key);
  Install(key, group, e.value[kProtocol]);
}

void FakeOrchagent::Install(const std::string& key, absl::string_view group, absl::string_view protocol) {
  auto [it, counted] = routes_.try_emplace(key, group);
  if (!counted && it->second != group) {  // moved to another group
    Unuse(it->second);
    it->second = std::string(group);
    counted = true;
  }
  if (counted) ++group_users_[it->second];
  if (respond_ && respond_(key)) {
    nlohmann::json j = {"SWSS_RC_SUCCESS", key, "err_str", "SWSS_RC_SUCCESS", "protocol", std::string(protocol)};
    responses_.push_back({"PUBLISH", "APPL_DB_ROUTE_TABLE_RESPONSE_CHANNEL", j.dump()});
  }
}

void FakeOrchagent::Unuse(const std::string& group) {
  auto it = group_users_.find(group);
  if (it != group_users_.end() && it->second > 0) --it->second;
}

void FakeOrchagent::FlushResponses() {
  if (responses_.empty()) return;
  auto r = db_->Pipeline(responses_);
  for (const RedisReply& x : r.replies) stats_.responses += !x.is_error();
  responses_.clear();
}

void FakeOrchagent::RetryPending() {
  if (!pending_routes_.empty()) {
    std::vector<std::pair<std::string, PendingRoute>> ready;
    for (const auto& [key, p] : pending_routes_) {
      if (groups_.contains(p.group)) ready.emplace_back(key, p);
    }
    for (const auto& [key, p] : ready) {
      pending_routes_.erase(key);
      Install(key, p.group, p.protocol);  // counted in route_sets when popped
    }
    FlushResponses();
  }
  std::erase_if(pending_group_dels_, [&](const std::string& g) {
    auto it = group_users_.find(g);
    if (it != group_users_.end() && it->second > 0) return false;
    if (other_users_ && other_users_(g) > 0) return false;
    groups_.erase(g);
    return true;
  });
}

}  // namespace bagd::fib::sonic::test
