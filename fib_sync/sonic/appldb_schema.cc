#include "fib_sync/sonic/appldb_schema.h"

#include <nlohmann/json.hpp>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/match.h"

namespace bagd::fib::sonic {

TableKeys KeysOf(absl::string_view table, int db) {
  TableKeys t;
  t.table = std::string(table);
  t.key_set = absl::StrCat(table, "_KEY_SET");
  t.del_set = absl::StrCat(table, "_DEL_SET");
  t.staging = absl::StrCat("_", table, ":");
  t.main = absl::StrCat(table, ":");
  t.channel = absl::StrCat(table, "_CHANNEL@", db);
  return t;
}

std::string GroupName(uint32_t id) { return absl::StrCat(kGroupPrefix, id); }

std::optional<uint32_t> GroupIdOf(absl::string_view name) {
  if (!absl::StartsWith(name, kGroupPrefix)) return std::nullopt;
  name.remove_prefix(kGroupPrefix.size());
  if (name.empty() || name.size() > 10) return std::nullopt;
  for (char c : name) {
    if (c < '0' || c > '9') return std::nullopt;
  }
  uint64_t v = 0;
  if (!absl::SimpleAtoi(name, &v) || v == 0 || v > UINT32_MAX) return std::nullopt;
  if (GroupName(static_cast<uint32_t>(v)) != absl::StrCat(kGroupPrefix, name)) return std::nullopt;  // "bagd-007"
  return static_cast<uint32_t>(v);
}

std::string RouteKey(const net::Prefix& p) {
  const unsigned full = p.afi() == net::Afi::kIpv4 ? 32 : 128;
  if (p.length() == full) return p.address().ToString();
  return p.ToString();
}

absl::StatusOr<net::Prefix> ParseRouteKey(absl::string_view key) {
  if (absl::StartsWith(key, "Vrf")) return absl::InvalidArgumentError(absl::StrCat("'", key, "' is a VRF route"));
  auto p = net::Prefix::Parse(std::string_view(key.data(), key.size()));
  if (!p.ok()) return absl::InvalidArgumentError(absl::StrCat("'", key, "' is not a prefix"));
  // Host bits set ("10.0.0.1/24") are not a spelling bagd writes: refuse rather than guess.
  if (key.find('/') != absl::string_view::npos && p->ToString() != key) {
    return absl::InvalidArgumentError(absl::StrCat("'", key, "' is not a prefix in canonical form"));
  }
  return p;
}

Fields GroupFields(const std::vector<GroupMember>& members) {
  std::vector<std::string> nh, ifn, w;
  for (const GroupMember& m : members) {
    nh.push_back(m.gateway.ToString());
    ifn.push_back(m.ifname);
    w.push_back(absl::StrCat(m.weight));
  }
  return {
      {"nexthop", absl::StrJoin(nh, ",")}, {"ifname", absl::StrJoin(ifn, ",")}, {"weight", absl::StrJoin(w, ",")},
      {"nexthop_group", ""},               {"mpls_nh", ""},                     {"seg_src", ""},
  };
}

Fields RouteFields(absl::string_view group_name, absl::string_view protocol) {
  return {
      {"nexthop_group", std::string(group_name)}, {"protocol", std::string(protocol)}, {"nexthop", ""},
      {"ifname", ""}, {"weight", ""}, {"blackhole", ""},
  };
}

absl::StatusOr<std::vector<GroupMember>> ParseGroup(const std::map<std::string, std::string>& fields) {
  auto get = [&](const char* f) -> absl::string_view {
    auto it = fields.find(f);
    return it == fields.end() ? absl::string_view() : absl::string_view(it->second);
  };
  if (!get("nexthop_group").empty()) return absl::InvalidArgumentError("a recursive group (nexthop_group is set)");
  const std::vector<absl::string_view> nh = absl::StrSplit(get("nexthop"), ',');
  const std::vector<absl::string_view> ifn = absl::StrSplit(get("ifname"), ',');
  std::vector<absl::string_view> w;
  if (!get("weight").empty()) w = absl::StrSplit(get("weight"), ',');
  if (get("nexthop").empty()) return absl::InvalidArgumentError("no nexthop field");
  if (ifn.size() != nh.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(nh.size(), " next hops but ", ifn.size(), " interface names"));
  }
  std::vector<GroupMember> out;
  for (size_t i = 0; i < nh.size(); ++i) {
    auto a = net::IpAddress::Parse(std::string_view(nh[i].data(), nh[i].size()));
    if (!a.ok()) return absl::InvalidArgumentError(absl::StrCat("next hop '", nh[i], "' is not an address"));
    GroupMember m{*a, std::string(ifn[i]), 1};
    if (w.size() == nh.size()) {
      uint32_t v = 0;
      if (!absl::SimpleAtoi(w[i], &v)) return absl::InvalidArgumentError(absl::StrCat("weight '", w[i], "' is not a number"));
      m.weight = v;
    }
    out.push_back(std::move(m));
  }
  return out;
}

// Written from the protocol description (sonic-appl-db.md sections 1 and 3), not from swss.
// ARGV[1] is the consumer's pop batch B: the script publishes ceil(added / B) messages for the
// keys it newly added, after staging them all. Each message lets the consumer pop up to B
// keys, so the messages outstanding always cover the keys pending; with B = 1 this is swss'
// one message per newly pending key.
// Per key the effect is the protocol's (SADD to the key set; a SET's fields into the staging
// hash with one HSET; a DEL adds to the del set and drops the staging hash), but the SADDs of
// the whole batch are one variadic call per 1000 keys at the end (inside the same atomic
// script, so no consumer can tell): Redis' per-call cost, not the set insert, was most of a
// per-key SADD. The del-set SADDs are batched the same way. 1000 stays below Lua's unpack()
// limit (LUAI_MAXCSTACK, 8000).
const char kStageScript[] = R"lua(
local channel, key_set, del_set, staging = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local batch = tonumber(ARGV[1])
local keys, dels = {}, {}
local i = 2
while i <= #ARGV do
  local op, key, n = ARGV[i], ARGV[i + 1], tonumber(ARGV[i + 2])
  i = i + 3
  keys[#keys + 1] = key
  if op == 'D' then
    dels[#dels + 1] = key
    redis.call('DEL', staging .. key)
  elseif n > 0 then
    redis.call('HSET', staging .. key, unpack(ARGV, i, i + 2 * n - 1))
  end
  i = i + 2 * n
end
local function sadd(set, members)
  local added = 0
  for b = 1, #members, 1000 do
    added = added + redis.call('SADD', set, unpack(members, b, math.min(#members, b + 999)))
  end
  return added
end
sadd(del_set, dels)
local added = sadd(key_set, keys)
local messages = math.floor((added + batch - 1) / batch)
for m = 1, messages do
  redis.call('PUBLISH', channel, 'G')
end
return messages
)lua";

std::vector<std::string> StageCommand(const std::string& sha, const TableKeys& t, const std::vector<Write>& writes,
                                      size_t begin, size_t end, size_t pop_batch) {
  std::vector<std::string> argv = {"EVALSHA", sha, "4", t.channel, t.key_set, t.del_set, t.staging,
                                   absl::StrCat(std::max<size_t>(1, pop_batch))};
  for (size_t i = begin; i < end; ++i) {
    const Write& w = writes[i];
    argv.push_back(w.del ? "D" : "S");
    argv.push_back(w.key);
    argv.push_back(absl::StrCat(w.del ? 0 : w.fields.size()));
    if (w.del) continue;
    for (const auto& [f, v] : w.fields) {
      argv.push_back(f);
      argv.push_back(v);
    }
  }
  return argv;
}

absl::StatusOr<Response> ParseResponse(absl::string_view json) {
  const nlohmann::json j = nlohmann::json::parse(json.data(), json.data() + json.size(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return absl::InvalidArgumentError("response is not JSON");
  if (!j.is_array() || j.size() < 2) return absl::InvalidArgumentError("response is not an array of at least 2 strings");
  for (const auto& e : j) {
    if (!e.is_string()) return absl::InvalidArgumentError("response has an element that is not a string");
  }
  if (j.size() % 2 != 0) return absl::InvalidArgumentError("response has a field without a value");
  Response r;
  r.code = j[0].get<std::string>();
  r.key = j[1].get<std::string>();
  for (size_t i = 2; i + 1 < j.size(); i += 2) r.fields[j[i].get<std::string>()] = j[i + 1].get<std::string>();
  return r;
}

}  // namespace bagd::fib::sonic
