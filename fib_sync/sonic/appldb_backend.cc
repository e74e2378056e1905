#include "fib_sync/sonic/appldb_backend.h"

#include <algorithm>

#include "absl/container/flat_hash_set.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "net/overloaded.h"

namespace bagd::fib::sonic {

namespace {

constexpr size_t kMaxProblems = 50;
constexpr size_t kReadBatch = 1000;  // keys per pipelined read
constexpr int kMaxBackoffShift = 5;  // a route unconfirmed again waits up to 32 timeouts

using FieldMap = std::map<std::string, std::string>;

FieldMap PairsToMap(const RedisReply& r) {
  FieldMap m;
  for (size_t i = 0; i + 1 < r.elements.size(); i += 2) m[r.elements[i].str] = r.elements[i + 1].str;
  return m;
}

}  // namespace

absl::StatusOr<std::unique_ptr<AppldbBackend>> AppldbBackend::Open(const AppldbOptions& options,
                                                                 InterfaceResolver resolver, Clock clock) {
  if (!resolver) return absl::InvalidArgumentError("appldb: no interface resolver");
  if (!clock) clock = [] { return std::chrono::steady_clock::now(); };
  std::unique_ptr<AppldbBackend> b(new AppldbBackend(options, std::move(resolver), std::move(clock)));
  if (auto st = b->Connect(); !st.ok()) {
    return absl::UnavailableError(absl::StrCat("cannot use APPL_DB: ", st.message(),
                                               " (is the redis server up? see fib.appldb_socket / appldb_address)"));
  }
  // With the ZMQ route path orchagent reads ROUTE_TABLE only from ZMQ: Redis writes would be
  // accepted and never programmed (sonic-swss orchagent/zmqorch.cpp ZmqOrch::addConsumer,
  // orchagent/orchdaemon.cpp). Then routes go over ZMQ, groups still through Redis.
  auto zmq = b->main_->Pipeline({{"SELECT", absl::StrCat(kConfigDb)},
                                 {"HGET", "SYSTEM_DEFAULTS|swss_zmq", "status"},
                                 {"SELECT", absl::StrCat(kApplDb)}});
  if (!zmq.status.ok()) return zmq.status;
  const bool zmq_enabled = zmq.replies[1].type == RedisReply::Type::kString && zmq.replies[1].str == "enabled";
  using Path = AppldbOptions::RoutePath;
  if (zmq_enabled && options.route_path == Path::kRedis) {
    return absl::FailedPreconditionError(
        "CONFIG_DB (db 4) SYSTEM_DEFAULTS|swss_zmq has status=enabled: orchagent then takes ROUTE_TABLE only over "
        "ZMQ and ignores what is written to Redis, but fib.appldb_route_path is ROUTE_PATH_REDIS, so bagd could not "
        "program any route. Leave appldb_route_path unset (it follows swss_zmq) or set ROUTE_PATH_ZMQ");
  }
  if (zmq_enabled || options.route_path == Path::kZmq) {
    b->route_path_reason_ = zmq_enabled ? "CONFIG_DB SYSTEM_DEFAULTS|swss_zmq status=enabled"
                                        : "fib.appldb_route_path is ROUTE_PATH_ZMQ";
    ZmqRouteSender::Options zo;
    zo.endpoint = options.zmq_endpoint;
    zo.high_water_mark = options.zmq_high_water_mark;
    zo.send_wait = options.zmq_send_wait;
    auto z = ZmqRouteSender::Open(zo);
    if (!z.ok()) return z.status();
    b->zmq_ = std::move(*z);
    if (options.zmq_persist) {
      b->persister_ = std::make_unique<RoutePersister>(options.address, options.io_timeout, options.protocol);
    }
  } else {
    b->route_path_reason_ = options.route_path == Path::kRedis ? "fib.appldb_route_path is ROUTE_PATH_REDIS"
                                                               : "CONFIG_DB SYSTEM_DEFAULTS|swss_zmq is not enabled";
  }
  b->ever_connected_ = true;
  return b;
}

absl::Status AppldbBackend::Connect() {
  auto main = RedisConnection::Connect(options_.address, options_.io_timeout);
  if (!main.ok()) return main.status();
  auto r = (*main)->Pipeline({{"CLIENT", "SETNAME", "bagd"},
                              {"SELECT", absl::StrCat(kStateDb)},
                              {"HGET", "SWITCH_CAPABILITY|switch", "MAX_NEXTHOP_GROUP_COUNT"},
                              {"SELECT", absl::StrCat(kApplDb)},
                              {"SCRIPT", "LOAD", kStageScript}});
  if (!r.status.ok()) return r.status;
  for (const RedisReply& x : r.replies) {
    if (x.is_error()) return absl::UnavailableError(absl::StrCat("redis ", options_.address.ToString(), ": ", x.str));
  }
  r.replies.erase(r.replies.begin());  // CLIENT SETNAME: "OK"
  max_groups_ = 0;
  if (r.replies[1].type == RedisReply::Type::kString) {
    uint32_t v = 0;
    if (absl::SimpleAtoi(r.replies[1].str, &v)) {
      max_groups_ = v;
    } else {
      Problem(absl::StrCat("STATE_DB SWITCH_CAPABILITY|switch MAX_NEXTHOP_GROUP_COUNT '", r.replies[1].str,
                           "' is not a number: ignored"));
    }
  }
  sha_ = r.replies[3].str;
  auto sub = RedisConnection::Connect(options_.address, options_.io_timeout);
  if (!sub.ok()) return sub.status();
  auto s = (*sub)->Pipeline({{"CLIENT", "SETNAME", "bagd-responses"}, {"SUBSCRIBE", std::string(kResponseChannel)}});
  if (!s.status.ok()) return s.status;
  main_ = std::move(*main);
  sub_ = std::move(*sub);
  return absl::OkStatus();
}

void AppldbBackend::Disconnect(const absl::Status& why) {
  if (main_ != nullptr) {
    ++counters_.disconnects;
    Problem(absl::StrCat("lost the connection: ", why.message(), "; reconnecting"));
  }
  main_.reset();
  sub_.reset();
  next_connect_ = clock_() + backoff_;
}

int AppldbBackend::event_fd() const { return sub_ ? sub_->fd() : -1; }

void AppldbBackend::Problem(std::string s) {
  if (problems_.size() < kMaxProblems) problems_.push_back(std::move(s));
}

std::vector<std::string> AppldbBackend::TakeProblems() {
  std::vector<std::string> out;
  out.swap(problems_);
  return out;
}

FibCapabilities AppldbBackend::Capabilities() const {
  FibCapabilities c;
  c.max_weight = 65535;  // orchagent passes the integer to SAI (u32); bagd's own bound
  c.max_members = options_.max_members;
  c.resilient_groups = false;
  c.max_groups = max_groups_;
  return c;
}

std::string AppldbBackend::route_path() const {
  return zmq_ ? absl::StrCat("zmq ", zmq_->options().endpoint) : std::string("redis");
}

absl::Status AppldbBackend::WritesBlocked() const {
  // After a reconnect nothing is written until the owner has read the state back: what it
  // believes installed may be gone (an empty Redis), and a route written now could name a
  // group that is not there.
  if (main_ == nullptr) return absl::UnavailableError(absl::StrCat("redis ", options_.address.ToString(), ": not connected (reconnecting)"));
  if (resync_pending_) {
    return absl::UnavailableError(absl::StrCat("redis ", options_.address.ToString(), ": reconnected, waiting for the resync"));
  }
  return absl::OkStatus();
}

std::vector<absl::Status> AppldbBackend::SendRoutes(const std::vector<Write>& writes, bool persist) {
  std::vector<absl::Status> st(writes.size());
  if (writes.empty()) return st;
  if (absl::Status down = WritesBlocked(); !down.ok()) {
    std::fill(st.begin(), st.end(), down);
    return st;
  }
  const size_t per = std::max<size_t>(1, options_.zmq_entries_per_message);
  const size_t bytes = std::clamp<size_t>(options_.zmq_message_bytes, 4096, kZmqMaxMessageBytes - 1);
  ZmqMessageBuilder b(kApplDbName, kRouteTable);
  size_t begin = 0;
  absl::Status failed;
  auto flush = [&](size_t end) {
    if (b.empty() || !failed.ok()) return;
    failed = zmq_->Send(b.Take());
    if (!failed.ok()) {
      // Kept dirty by the owner and sent again later; what follows waits too (order).
      Problem(std::string(failed.message()));
      return;
    }
    for (size_t k = begin; k < end; ++k) ++(writes[k].del ? counters_.route_deletes : counters_.route_writes);
    if (persist && persister_) Persist(writes, begin, end);
    begin = end;
  };
  // The persistence write waits until the owner's thread is idle again (Service(), Dump()):
  // a flush sends its routes in chunks, and orchagent's path goes first for all of them.
  if (persist && persister_ && !persist_held_) {
    persister_->Hold();
    persist_held_ = true;
  }
  for (size_t k = 0; k < writes.size() && failed.ok(); ++k) {
    const size_t add = ZmqMessageBuilder::SizeOf(writes[k]);
    if (!b.empty() && (b.entries() >= per || b.size() + add > bytes)) flush(k);
    if (!failed.ok()) break;
    b.Add(writes[k]);
  }
  flush(writes.size());
  if (!failed.ok()) {
    for (size_t k = begin; k < writes.size(); ++k) st[k] = failed;
  }
  return st;
}

void AppldbBackend::Persist(const std::vector<Write>& writes, size_t begin, size_t end) {
  // Plain writes of the main hashes, as swss' ZmqProducerStateTable does with dbPersistence:
  // no staging hash, no key set, no PUBLISH (orchagent must not take these from Redis); on the
  // persister's own thread, so orchagent's path does not wait for Redis.
  std::vector<RoutePersister::Entry> batch;
  batch.reserve(end - begin);
  for (size_t k = begin; k < end; ++k) {
    const Write& w = writes[k];
    std::string group;
    if (!w.del) {
      for (const auto& [f, v] : w.fields) {
        if (f == "nexthop_group") group = v;
      }
    }
    batch.push_back(RoutePersister::Entry{w.key, std::move(group)});
  }
  persister_->Push(std::move(batch));
}

void AppldbBackend::ReleasePersister() {
  if (!persist_held_) return;
  persist_held_ = false;
  persister_->Release();
}

void AppldbBackend::WaitPersisted() {
  if (!persister_) return;
  ReleasePersister();
  persister_->WaitIdle();
  counters_.persist_writes = persister_->written();
  counters_.persist_failures = persister_->failed();
}

void AppldbBackend::ResendAll() {
  std::vector<Write> groups;
  for (const auto& [id, fields] : group_fields_) groups.push_back(Write{GroupName(id), false, fields});
  for (const absl::Status& s : Stage(groups_table_, groups)) {
    if (!s.ok()) return;  // tried again at the next Service()
  }
  std::vector<Write> routes;
  routes.reserve(routes_.size());
  for (const auto& [p, m] : routes_) {
    routes.push_back(Write{RouteKey(p), false, RouteFields(GroupName(m.group), options_.protocol)});
  }
  // Sorted: the same order whatever the hash map's (a consumer sees a stable sequence).
  std::sort(routes.begin(), routes.end(), [](const Write& a, const Write& b) { return a.key < b.key; });
  for (const absl::Status& s : SendRoutes(routes, /*persist=*/false)) {
    if (!s.ok()) return;
  }
  zmq_resend_pending_ = false;
  ++counters_.zmq_resends;
}

std::vector<absl::Status> AppldbBackend::Stage(const TableKeys& table, const std::vector<Write>& writes) {
  std::vector<absl::Status> st(writes.size());
  if (writes.empty()) return st;
  if (absl::Status down = WritesBlocked(); !down.ok()) {
    std::fill(st.begin(), st.end(), down);
    return st;
  }
  const size_t per = std::max<size_t>(1, options_.keys_per_script);
  std::vector<std::pair<size_t, size_t>> chunks;
  for (size_t b = 0; b < writes.size(); b += per) chunks.emplace_back(b, std::min(writes.size(), b + per));
  bool reload = false;
  const size_t round = std::max<size_t>(1, options_.scripts_per_pipeline);
  for (size_t c0 = 0; c0 < chunks.size(); c0 += round) {
    const size_t c1 = std::min(chunks.size(), c0 + round);
    // Each script goes out as soon as it is built: Redis runs it while the next is built.
    size_t sent = 0;
    absl::Status send_st;
    for (size_t c = c0; c < c1 && send_st.ok(); ++c) {
      send_st = main_->Send(StageCommand(sha_, table, writes, chunks[c].first, chunks[c].second, options_.pop_batch));
      sent += send_st.ok();
    }
    auto r = main_->ReadReplies(sent);
    if (r.status.ok() && !send_st.ok()) r.status = send_st;
    for (size_t c = c0; c < c1; ++c) {
      const size_t q = c - c0;
      absl::Status s;
      if (q < r.replies.size()) {
        ++counters_.scripts;
        if (r.replies[q].is_error()) {
          if (r.replies[q].str.starts_with("NOSCRIPT")) reload = true;
          s = absl::UnavailableError(absl::StrCat("redis refused the write: ", r.replies[q].str));
        }
      } else {
        s = r.status;
      }
      for (size_t k = chunks[c].first; k < chunks[c].second; ++k) {
        st[k] = s;
        if (!s.ok()) continue;
        const bool group = table.table == kGroupTable;
        uint64_t& n = writes[k].del ? (group ? counters_.group_deletes : counters_.route_deletes)
                                    : (group ? counters_.group_writes : counters_.route_writes);
        ++n;
      }
    }
    if (!r.status.ok()) {
      Disconnect(r.status);
      for (size_t c = c1; c < chunks.size(); ++c) {
        for (size_t k = chunks[c].first; k < chunks[c].second; ++k) st[k] = r.status;
      }
      return st;
    }
  }
  if (reload && main_) {
    // The server forgot the script (SCRIPT FLUSH): load it again; the failed keys stay dirty.
    auto r = main_->Command({"SCRIPT", "LOAD", kStageScript});
    if (r.ok() && r->type == RedisReply::Type::kString) sha_ = r->str;
    if (!r.ok()) Disconnect(r.status());
  }
  return st;
}

void AppldbBackend::MarkRoute(const net::Prefix& p, std::optional<ObjectId> group, Confirmation state) {
  auto it = routes_.find(p);
  if (it != routes_.end()) {
    auto git = groups_.find(it->second.group);
    if (git != groups_.end()) {
      GroupMark& g = git->second;
      --g.routes;
      if (it->second.state == Confirmation::kConfirmed || it->second.state == Confirmation::kAdopted) --g.confirmed;
      if (it->second.state == Confirmation::kPending) {
        --g.pending;
        if (it->second.tries > 0) --g.retried;
      }
      if (g.routes == 0 && !g.written) groups_.erase(git);  // deleted while routes used it: gone now
    }
    if (it->second.state == Confirmation::kPending && it->second.tries > 0) --unconfirmed_now_;
    if (!group) {
      routes_.erase(it);
      return;
    }
  }
  if (!group) return;
  RouteMark& m = routes_[p];
  m = RouteMark{*group, state, 0, {}};
  GroupMark& g = groups_[*group];
  ++g.routes;
  if (state == Confirmation::kConfirmed || state == Confirmation::kAdopted) ++g.confirmed;
  if (state == Confirmation::kPending) {
    ++g.pending;
    m.deadline = clock_() + options_.confirm_timeout;
    confirm_queue_.push(Deadline{m.deadline, p});
  }
}

std::vector<absl::Status> AppldbBackend::Apply(std::span<const FibOp> ops) {
  std::vector<absl::Status> out(ops.size());
  size_t i = 0;
  while (i < ops.size()) {
    if (const auto* n = std::get_if<NexthopOp>(&ops[i])) {
      if (n->remove) {
        auto it = nexthops_.find(n->id);
        if (it != nexthops_.end()) {
          auto o = nexthop_of_.find(it->second.gateway);
          if (o != nexthop_of_.end() && o->second == n->id) nexthop_of_.erase(o);
          nexthops_.erase(it);
        }
      } else if (auto ifname = resolver_(n->gateway); !ifname.ok()) {
        out[i] = ifname.status();
      } else {
        nexthops_[n->id] = Nexthop{n->gateway, *ifname};
        nexthop_of_[n->gateway] = n->id;
      }
      ++i;
      continue;
    }
    // A run of writes to one table, staged together.
    const bool group = std::holds_alternative<GroupOp>(ops[i]);
    std::vector<Write> writes;
    std::vector<size_t> index;
    size_t j = i;
    for (; j < ops.size(); ++j) {
      if (std::holds_alternative<NexthopOp>(ops[j]) || std::holds_alternative<GroupOp>(ops[j]) != group) break;
      Write w;
      if (group) {
        const GroupOp& g = std::get<GroupOp>(ops[j]);
        w.key = GroupName(g.id);
        w.del = g.remove;
        if (!g.remove) {
          std::vector<GroupMember> members;
          absl::Status bad;
          for (const auto& [nh, weight] : g.members) {
            auto it = nexthops_.find(nh);
            if (it == nexthops_.end()) {
              bad = absl::FailedPreconditionError(absl::StrCat("next hop ", nh, " is not known"));
              break;
            }
            members.push_back(GroupMember{it->second.gateway, it->second.ifname, weight});
          }
          if (members.empty() && bad.ok()) bad = absl::InvalidArgumentError("a group without members");
          // By address, for the operator reading APPL_DB (read back by address, so the order
          // never causes a write).
          std::sort(members.begin(), members.end(),
                    [](const GroupMember& a, const GroupMember& b) { return a.gateway < b.gateway; });
          if (!bad.ok()) {
            out[j] = bad;
            continue;
          }
          w.fields = GroupFields(members);
        }
      } else {
        const RouteOp& r = std::get<RouteOp>(ops[j]);
        w.key = RouteKey(r.prefix);
        w.del = r.remove;
        if (!r.remove) w.fields = RouteFields(GroupName(r.group), options_.protocol);
      }
      writes.push_back(std::move(w));
      index.push_back(j);
    }
    const auto st = group || !zmq_ ? Stage(group ? groups_table_ : routes_table_, writes)
                                   : SendRoutes(writes, options_.zmq_persist);
    for (size_t k = 0; k < index.size(); ++k) {
      out[index[k]] = st[k];
      if (!st[k].ok()) continue;
      if (group) {
        const GroupOp& g = std::get<GroupOp>(ops[index[k]]);
        if (zmq_) {
          if (g.remove) {
            group_fields_.erase(g.id);
          } else {
            group_fields_[g.id] = writes[k].fields;
          }
        }
        if (g.remove) {
          auto it = groups_.find(g.id);
          if (it != groups_.end() && it->second.routes == 0) {
            groups_.erase(it);
          } else if (it != groups_.end()) {
            it->second.written = false;
          }
        } else {
          groups_[g.id].written = true;
        }
      } else {
        const RouteOp& r = std::get<RouteOp>(ops[index[k]]);
        MarkRoute(r.prefix, r.remove ? std::nullopt : std::optional<ObjectId>(r.group),
                  options_.confirm ? Confirmation::kPending : Confirmation::kNotAsked);
      }
    }
    i = j;
  }
  return out;
}

absl::StatusOr<std::map<std::string, FieldMap>> AppldbBackend::ReadTable(const TableKeys& t,
                                                                         const std::string& key_prefix,
                                                                         const std::vector<std::string>& fields) {
  if (main_ == nullptr) {
    return absl::UnavailableError(absl::StrCat("redis ", options_.address.ToString(), ": not connected"));
  }
  std::map<std::string, FieldMap> out;
  auto fail = [&](const absl::Status& st) {
    Disconnect(st);
    return st;
  };
  // Main hashes: what orchagent has taken.
  std::vector<std::string> keys;
  std::string cursor = "0";
  do {
    auto r = main_->Command({"SCAN", cursor, "MATCH", absl::StrCat(t.main, key_prefix, "*"), "COUNT", "10000"});
    if (!r.ok()) return fail(r.status());
    if (r->type != RedisReply::Type::kArray || r->elements.size() != 2) {
      return absl::InternalError(absl::StrCat("redis: SCAN answered ", r->is_error() ? r->str : "something else"));
    }
    cursor = r->elements[0].str;
    for (RedisReply& k : r->elements[1].elements) keys.push_back(std::move(k.str));
  } while (cursor != "0");
  for (size_t b = 0; b < keys.size(); b += kReadBatch) {
    const size_t e = std::min(keys.size(), b + kReadBatch);
    std::vector<std::vector<std::string>> cmds;
    for (size_t i = b; i < e; ++i) {
      if (fields.empty()) {
        cmds.push_back({"HGETALL", keys[i]});
      } else {
        std::vector<std::string> c = {"HMGET", keys[i]};
        c.insert(c.end(), fields.begin(), fields.end());
        cmds.push_back(std::move(c));
      }
    }
    auto r = main_->Pipeline(cmds);
    if (!r.status.ok()) return fail(r.status);
    for (size_t i = b; i < e; ++i) {
      const RedisReply& x = r.replies[i - b];
      if (x.type != RedisReply::Type::kArray) continue;  // not a hash (a WRONGTYPE error)
      FieldMap m;
      if (fields.empty()) {
        m = PairsToMap(x);
      } else {
        for (size_t f = 0; f < fields.size() && f < x.elements.size(); ++f) {
          if (x.elements[f].type == RedisReply::Type::kString) m[fields[f]] = x.elements[f].str;
        }
      }
      if (!m.empty()) out[keys[i].substr(t.main.size())] = std::move(m);
    }
  }
  // What is staged and not taken yet (orchagent busy or down) is what the table will be.
  auto pending = main_->Pipeline({{"SMEMBERS", t.key_set}, {"SMEMBERS", t.del_set}});
  if (!pending.status.ok()) return fail(pending.status);
  std::vector<std::string> staged;
  absl::flat_hash_set<std::string> deleting;
  for (const RedisReply& k : pending.replies[1].elements) deleting.insert(k.str);
  for (const RedisReply& k : pending.replies[0].elements) {
    if (k.str.starts_with(key_prefix)) staged.push_back(k.str);
  }
  for (size_t b = 0; b < staged.size(); b += kReadBatch) {
    const size_t e = std::min(staged.size(), b + kReadBatch);
    std::vector<std::vector<std::string>> cmds;
    for (size_t i = b; i < e; ++i) cmds.push_back({"HGETALL", t.staging + staged[i]});
    auto r = main_->Pipeline(cmds);
    if (!r.status.ok()) return fail(r.status);
    for (size_t i = b; i < e; ++i) {
      FieldMap m = PairsToMap(r.replies[i - b]);
      if (!fields.empty()) {
        std::erase_if(m, [&](const auto& kv) { return std::find(fields.begin(), fields.end(), kv.first) == fields.end(); });
      }
      if (deleting.contains(staged[i])) out.erase(staged[i]);
      if (m.empty()) {
        if (deleting.contains(staged[i])) continue;
      }
      FieldMap& have = out[staged[i]];
      for (auto& [f, v] : m) have[f] = std::move(v);
      if (have.empty()) out.erase(staged[i]);
    }
  }
  return out;
}

ObjectId AppldbBackend::NexthopIdFor(const net::IpAddress& gw, const std::string& ifname) {
  if (auto it = nexthop_of_.find(gw); it != nexthop_of_.end()) return it->second;
  const ObjectId id = next_synthetic_++;
  nexthops_[id] = Nexthop{gw, ifname};
  nexthop_of_[gw] = id;
  return id;
}

absl::StatusOr<FibState> AppldbBackend::Dump() {
  WaitPersisted();  // what was sent is in APPL_DB before it is read back
  auto groups = ReadTable(groups_table_, std::string(kGroupPrefix), {});
  if (!groups.ok()) return groups.status();
  auto routes = ReadTable(routes_table_, "", {"protocol", "nexthop_group"});
  if (!routes.ok()) return routes.status();
  FibState s;
  absl::flat_hash_map<ObjectId, GroupMark> marks;
  group_fields_.clear();
  for (const auto& [name, fields] : *groups) {
    const auto id = GroupIdOf(name);
    if (!id) {
      ++counters_.bad_entries;
      Problem(absl::StrCat("NEXTHOP_GROUP_TABLE:", name, " has bagd's prefix but no object id: left alone"));
      continue;
    }
    auto members = ParseGroup(fields);
    if (!members.ok()) {
      // bagd's, unreadable: an empty member list makes the reconciler replace or sweep it.
      ++counters_.bad_entries;
      Problem(absl::StrCat("NEXTHOP_GROUP_TABLE:", name, ": ", members.status().message()));
      s.groups[*id];
      marks[*id].written = true;
      continue;
    }
    auto& out = s.groups[*id];
    for (const GroupMember& m : *members) out.emplace_back(NexthopIdFor(m.gateway, m.ifname), m.weight);
    if (zmq_) group_fields_[*id] = GroupFields(*members);
    marks[*id].written = true;
  }
  for (const auto& [id, nh] : nexthops_) s.nexthops[id] = nh.gateway;
  // The routes bagd wrote; their confirmation state starts as "adopted" (orchagent took them
  // before) unless they are still pending here.
  absl::flat_hash_map<net::Prefix, RouteMark> adopted;
  for (const auto& [key, fields] : *routes) {
    auto proto = fields.find("protocol");
    if (proto == fields.end() || proto->second != options_.protocol) continue;
    auto p = ParseRouteKey(key);
    if (!p.ok()) {
      ++counters_.bad_entries;
      Problem(absl::StrCat("ROUTE_TABLE:", key, " has protocol ", options_.protocol, ": ", p.status().message()));
      continue;
    }
    auto g = fields.find("nexthop_group");
    const ObjectId gid = g == fields.end() ? 0 : GroupIdOf(g->second).value_or(0);
    s.routes[*p] = gid;
    auto old = routes_.find(*p);
    if (old != routes_.end() && old->second.group == gid) {
      adopted[*p] = old->second;
    } else {
      adopted[*p] = RouteMark{gid, Confirmation::kAdopted, 0, {}};
    }
  }
  // What we know is what the dump says now.
  resync_pending_ = false;
  routes_ = std::move(adopted);
  groups_.clear();
  unconfirmed_now_ = 0;
  for (const auto& [id, m] : marks) groups_[id] = m;
  for (const auto& [p, m] : routes_) {
    GroupMark& g = groups_[m.group];
    ++g.routes;
    if (m.state == Confirmation::kConfirmed || m.state == Confirmation::kAdopted) ++g.confirmed;
    if (m.state == Confirmation::kPending) {
      ++g.pending;
      if (m.tries > 0) {
        ++g.retried;
        ++unconfirmed_now_;
      }
    }
  }
  return s;
}

void AppldbBackend::OnResponse(const std::string& payload) {
  auto r = ParseResponse(payload);
  if (!r.ok()) {
    ++counters_.bad_responses;
    Problem(absl::StrCat("response channel: ", r.status().message(), ": ", payload.substr(0, 200)));
    return;
  }
  auto p = ParseRouteKey(r->key);
  if (!p.ok()) return;  // not a route bagd writes
  auto it = routes_.find(*p);
  if (it == routes_.end() || it->second.state != Confirmation::kPending) return;  // not ours, or a delete's
  // The answer belongs to the write it answers: a response naming another group is for an
  // earlier write of this route (bagd wrote it again since), and confirms nothing of the
  // newer one (FRR PR 23022 is that bug).
  if (auto g = r->fields.find("nexthop_group"); g != r->fields.end() && g->second != GroupName(it->second.group)) {
    ++counters_.stale_responses;
    return;
  }
  if (!r->ok()) {
    // Not published by current orchagents, but if it comes: the route stays pending and is
    // written again at its deadline.
    ++counters_.failed_responses;
    Problem(absl::StrCat("orchagent refused route ", r->key, ": ", r->code));
    return;
  }
  ++counters_.confirmed;
  GroupMark& g = groups_[it->second.group];
  --g.pending;
  ++g.confirmed;
  if (it->second.tries > 0) {
    --g.retried;
    --unconfirmed_now_;
  }
  it->second.state = Confirmation::kConfirmed;
  it->second.tries = 0;
}

void AppldbBackend::RetryUnconfirmed(std::chrono::steady_clock::time_point now) {
  std::vector<Write> writes;
  while (!confirm_queue_.empty() && confirm_queue_.top().at <= now) {
    const Deadline d = confirm_queue_.top();
    confirm_queue_.pop();
    const auto& [deadline, p] = d;
    auto it = routes_.find(p);
    if (it == routes_.end() || it->second.state != Confirmation::kPending || it->second.deadline != deadline) continue;
    RouteMark& m = it->second;
    if (m.tries == 0) {
      ++counters_.timeouts;
      ++unconfirmed_now_;
      ++groups_[m.group].retried;
    }
    if (m.tries < UINT16_MAX) ++m.tries;
    m.deadline = now + options_.confirm_timeout * (1 << std::min<int>(m.tries, kMaxBackoffShift));
    confirm_queue_.push(Deadline{m.deadline, p});
    writes.push_back(Write{RouteKey(p), false, RouteFields(GroupName(m.group), options_.protocol)});
  }
  if (writes.empty()) return;
  const auto st = zmq_ ? SendRoutes(writes, options_.zmq_persist) : Stage(routes_table_, writes);
  for (const auto& s : st) counters_.retries += s.ok();
}

std::chrono::steady_clock::time_point AppldbBackend::Service() {
  auto now = clock_();
  bool reconnected = false;
  if (sub_ != nullptr) {
    std::vector<RedisReply> msgs;
    const absl::Status st = sub_->ReadAvailable(msgs);
    for (const RedisReply& m : msgs) {
      if (m.type == RedisReply::Type::kArray && m.elements.size() == 3 && m.elements[0].str == "message") {
        OnResponse(m.elements[2].str);
      }
    }
    if (!st.ok()) Disconnect(st);
  }
  if (main_ != nullptr && !main_->ok()) Disconnect(absl::UnavailableError("the connection failed"));
  if (main_ == nullptr && now >= next_connect_) {
    if (auto st = Connect(); st.ok()) {
      if (ever_connected_) {
        ++counters_.reconnects;
        resync_pending_ = true;
      }
      ever_connected_ = true;
      backoff_ = options_.reconnect_first;
      reconnected = true;
    } else {
      next_connect_ = now + backoff_;
      backoff_ = std::min(backoff_ * 2, options_.reconnect_max);
    }
  }
  if (main_ != nullptr && options_.confirm) RetryUnconfirmed(now);
  if (zmq_) {
    // orchagent restarted (its socket came back): what was in flight, or queued in the
    // dead connection, is lost, and a restarted orchagent starts empty. Send everything.
    if (zmq_->PollEvents().reconnected) {
      zmq_resend_pending_ = true;
      Problem(absl::StrCat("zmq ", zmq_->options().endpoint, ": orchagent reconnected; sending every group and route again"));
    }
    if (zmq_resend_pending_ && main_ != nullptr && !resync_pending_) ResendAll();
    if (persister_) {
      ReleasePersister();  // the owner is between flushes: APPL_DB catches up
      counters_.persist_writes = persister_->written();
      counters_.persist_failures = persister_->failed();
      if (persister_->TakeLost()) {
        // Routes orchagent has but APPL_DB does not: the resync reads APPL_DB and writes them again.
        Problem("the persistence write to APPL_DB lost routes (redis down?); resyncing");
        persist_resync_ = true;
      }
    }
  }
  auto next = now + std::chrono::seconds(1);
  if (zmq_) next = std::min(next, now + std::chrono::milliseconds(100));  // the socket monitor
  if (main_ == nullptr) next = std::min(next, next_connect_);
  if (!confirm_queue_.empty()) next = std::min(next, confirm_queue_.top().at);
  // Last: the handler may flush right away, writing through this backend.
  if (reconnected || (persist_resync_ && main_ != nullptr && !resync_pending_)) {
    persist_resync_ = false;
    Emit(FibEvent::Of(FibEvent::Kind::kResyncNeeded, 0));
  }
  return next;
}

std::optional<AppldbBackend::GroupView> AppldbBackend::Group(ObjectId id) const {
  auto it = groups_.find(id);
  if (it == groups_.end()) return std::nullopt;
  return GroupView{GroupName(id), it->second.written, it->second.routes, it->second.confirmed, it->second.pending,
                   it->second.retried};
}

std::optional<AppldbBackend::Confirmation> AppldbBackend::RouteConfirmation(const net::Prefix& p) const {
  auto it = routes_.find(p);
  if (it == routes_.end()) return std::nullopt;
  return it->second.state;
}

}  // namespace bagd::fib::sonic
