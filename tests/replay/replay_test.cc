// Replay of the daemon's routing path from an event log, against golden outputs (holo's
// conformance topologies are the model): tests/data/replay/<case>/ holds `config.textproto`
// (a bagd config), `events` (what happens) and `expected` (what comes out). The routing
// path is the daemon's own daemon::Pipeline, fed as the Speaker feeds it; the sessions are
// recorders and the FIB a recording sink. No sockets, no sleeps: time is a ManualClock.
//
// Events, one per line (# starts a comment):
//   up NEIGHBOR [families ipv4,ipv6] [local ADDR] [id ROUTER_ID]   the session is Established
//   down NEIGHBOR                                                  the session ended
//   down NEIGHBOR graceful [ipv4,ipv6]     ended without a NOTIFICATION, graceful restart keeping
//                                          the listed families' paths (default: both) as stale
//   eor NEIGHBOR [ipv4|ipv6]               its End-of-RIB (default ipv4): a restart's stale paths go
//   borr NEIGHBOR [ipv4|ipv6]              its BoRR (RFC 7313): its paths stale until the EoRR
//   eorr NEIGHBOR [ipv4|ipv6]              its EoRR: the paths still stale go
//   network add PREFIX [lb RATE]           the control API's AddNetwork (bandwidth in bits/s text)
//   network delete PREFIX                  the control API's DeleteNetwork
//   update NEIGHBOR HEX                                            an UPDATE's bytes, header included
//   announce NEIGHBOR PREFIX[,PREFIX] [nh ADDR] [path "ASN ..."] [lb RATE | lb-non-transitive RATE]
//            [communities A:B,..] [med N]
//                                      an UPDATE built from these, encoded, then decoded as bytes
//   withdraw NEIGHBOR PREFIX[,PREFIX]
//   tick DURATION                      the clock moves on (timers fire: MRAI, weights batch, hold-down)
//   reload FILE                        SIGHUP with FILE (in the case's directory): the daemon's own
//                                      PlanReload and Pipeline::Apply; neighbors removed, added
//                                      (down until an `up`) or reset as the speaker does it
//   show nexthop-groups | routes       bagctl's JSON (the control API's messages)
//   show advertised NEIGHBOR           our Adj-RIB-Out to it
// The transcript echoes each event ("> event") and lists what it caused: the UPDATEs each
// neighbor was sent, as `bagctl decode` prints them, and the FIB operations.
//
// BAGD_REPLAY_REGENERATE=1 rewrites the `expected` files from what the code does now (then
// read the diff before committing it).
#include <google/protobuf/util/json_util.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "bgpd/daemon/config_translation.h"
#include "bgpd/daemon/pipeline.h"
#include "bgpd/daemon/reload_plan.h"
#include "bgpd/daemon/rib_view.h"
#include "bgpd/session/log.h"
#include "conf/config_loader.h"
#include "conf/rate_text.h"
#include "tests/daemon/posted_tasks.h"
#include "tools/bagctl/decode_command.h"
#include "tools/bagctl/decode_render.h"

namespace bagd::daemon {
namespace {

namespace fs = std::filesystem;

std::string Hex(const wire::Bytes& b) {
  static const char* d = "0123456789abcdef";
  std::string s;
  for (uint8_t c : b) {
    s += d[c >> 4];
    s += d[c & 15];
  }
  return s;
}

// A neighbor's session as the advertiser sees it: what it is sent goes to the transcript.
class RecordingSession final : public Outbound {
 public:
  RecordingSession(std::string name, bool ebgp, std::vector<std::string>& out) : name_(std::move(name)), ebgp_(ebgp), out_(out) {}
  const std::string& name() const override { return name_; }
  bool established() const override { return up_; }
  bool ebgp() const override { return ebgp_; }
  bool family_negotiated(net::Family f) const override { return up_ && families_[static_cast<int>(f)]; }
  wire::CodecContext EncodeContext() const override {
    wire::CodecContext c;
    c.ebgp = ebgp_;
    return c;
  }
  std::optional<net::IpAddress> LocalAddress() const override { return local_; }
  uint32_t advertisement_interval_s() const override { return mrai_; }
  void SendUpdates(std::vector<wire::Bytes> messages) override {
    for (const wire::Bytes& m : messages) {
      std::string trailing;
      auto decoded = bagctl::DecodeHexInput(Hex(m), EncodeContext(), &trailing);
      std::string text = decoded.ok() && !decoded->empty() ? bagctl::MessageToText(decoded->front(), EncodeContext(), 0)
                                                           : "(undecodable)";
      // One message per block: "< to NEIGHBOR" then the decoded lines, indented.
      out_.push_back(absl::StrCat("< to ", name_));
      for (absl::string_view line : absl::StrSplit(text, '\n')) {
        if (!line.empty()) out_.push_back(absl::StrCat("    ", line));
      }
    }
  }
  void SendRouteRefresh(const wire::RouteRefreshMessage& m) override {
    out_.push_back(absl::StrCat("< to ", name_, " ROUTE-REFRESH subtype ", m.subtype));
  }
  void Advertised(size_t prefixes) override { advertised_ = prefixes; }

  bool up_ = false;
  std::array<bool, net::kFamilyCount> families_{};
  std::optional<net::IpAddress> local_;
  uint32_t mrai_ = 0;
  size_t advertised_ = 0;

 private:
  std::string name_;
  bool ebgp_;
  std::vector<std::string>& out_;
};

class RecordingFib final : public rib::FibSink {
 public:
  explicit RecordingFib(std::vector<std::string>& out) : out_(out) {}
  void Apply(const rib::FibUpdate& u) override {
    for (const rib::FibGroup& g : u.group_upserts) {
      std::vector<std::string> m;
      for (const auto& x : g.members) m.push_back(absl::StrCat(x.next_hop.ToString(), "*", x.weight));
      out_.push_back(absl::StrCat("< fib group ", g.id, " = ", absl::StrJoin(m, " ")));
    }
    for (const auto& [p, g] : u.route_upserts) out_.push_back(absl::StrCat("< fib route ", p.ToString(), " -> group ", g));
    for (const auto& p : u.route_deletes) out_.push_back(absl::StrCat("< fib route ", p.ToString(), " deleted"));
    for (const auto& g : u.group_deletes) out_.push_back(absl::StrCat("< fib group ", g, " deleted"));
  }

 private:
  std::vector<std::string>& out_;
};

absl::StatusOr<int64_t> DurationMs(absl::string_view text) {
  int64_t n = 0;
  if (absl::ConsumeSuffix(&text, "ms") && absl::SimpleAtoi(text, &n)) return n;
  if (absl::ConsumeSuffix(&text, "s") && absl::SimpleAtoi(text, &n)) return n * 1000;
  if (absl::ConsumeSuffix(&text, "m") && absl::SimpleAtoi(text, &n)) return n * 60000;
  return absl::InvalidArgumentError(absl::StrCat("bad duration '", text, "'"));
}

// Splits on spaces, keeping "quoted words" whole.
std::vector<std::string> Words(const std::string& line) {
  std::vector<std::string> w;
  std::string cur;
  bool quoted = false, had_quotes = false;  // "" is an empty word
  for (char c : line) {
    if (c == '"') {
      quoted = !quoted;
      had_quotes = true;
      continue;
    }
    if (c == ' ' && !quoted) {
      if (!cur.empty() || had_quotes) w.push_back(cur);
      cur.clear();
      had_quotes = false;
      continue;
    }
    cur += c;
  }
  if (!cur.empty() || had_quotes) w.push_back(cur);
  return w;
}

class Replay {
 public:
  explicit Replay(const fs::path& dir) : dir_(dir), fib_(out_) {
    config_ = Load("config.textproto");
    auto weights = WeightsConfigOf(config_);
    if (!weights.ok()) throw std::runtime_error(weights.status().ToString());
    pipeline_ = std::make_unique<Pipeline>(config_.router().asn(), DecisionConfigOf(config_), *weights, clock_, &fib_,
                                           nullptr, nullptr, posted_.post());
    auto set = policy::PolicySet::Compile(config_);
    if (!set.ok()) throw std::runtime_error(set.status().ToString());
    policies_ = std::make_shared<policy::PolicySet>(*std::move(set));
    for (const auto& n : config_.neighbors()) {
      auto address = net::IpAddress::Parse(n.address());
      auto chains = PoliciesOf(config_, n, *policies_);
      auto lb = LinkBandwidthExportOf(n.link_bandwidth());
      if (!address.ok() || !chains.ok() || !lb.ok()) throw std::runtime_error("neighbor " + n.address());
      AddNeighbor(address->ToString(), n.remote_as() != config_.router().asn(), n.advertisement_interval(), *chains, *lb);
    }
    auto networks = NetworksOf(config_);
    if (!networks.ok()) throw std::runtime_error(networks.status().ToString());
    pipeline_->SetNetworks(*std::move(networks));
    pipeline_->StartOriginating();
  }

  std::string Run() {
    std::ifstream in(dir_ / "events");
    if (!in) throw std::runtime_error("no events file in " + dir_.string());
    std::string line;
    std::vector<std::string> transcript;
    int line_no = 0;
    while (std::getline(in, line)) {
      ++line_no;
      const std::string event(absl::StripAsciiWhitespace(line.substr(0, line.find('#'))));
      if (event.empty()) continue;
      out_.clear();
      auto st = Apply(event);
      posted_.RunAll();  // what the event loop runs after the event: the pipeline's posted hand-off
      if (!st.ok()) {
        throw std::runtime_error(absl::StrCat((dir_ / "events").string(), ":", line_no, ": ", st.message()));
      }
      transcript.push_back("> " + event);
      transcript.insert(transcript.end(), out_.begin(), out_.end());
    }
    return absl::StrJoin(transcript, "\n") + "\n";
  }

 private:
  struct Neighbor {
    rib::PeerIndex index = 0;
    std::unique_ptr<RecordingSession> session;
    bool ebgp = true;
    wire::UpdateDecoder updates;  // as a session decodes (Peer's slot): attribute runs interned by token
  };

  config::v1::Config Load(const std::string& file) {
    std::ifstream in(dir_ / file);
    std::stringstream text;
    text << in.rdbuf();
    conf::LoadedConfig loaded = conf::ParseConfig(text.str(), (dir_ / file).string());
    if (!loaded.ok()) throw std::runtime_error(loaded.errors.front().ToString());
    return loaded.config;
  }

  // A neighbor as the speaker adds one (Configure, a reload): its session down until `up`.
  rib::PeerIndex AddNeighbor(const std::string& name, bool ebgp, uint32_t mrai, const NeighborPolicies& chains,
                             const rib::LinkBandwidthExport& lb) {
    auto s = std::make_unique<RecordingSession>(name, ebgp, out_);
    s->mrai_ = mrai;
    const net::IpAddress address = *net::IpAddress::Parse(name);
    rib::PeerInfo info;
    info.source.ebgp = ebgp;
    info.source.address = address;
    for (const auto& n : config_.neighbors()) {
      if (net::IpAddress::Parse(n.address())->ToString() == name) info.asn = n.remote_as();
    }
    info.name = name;
    const rib::PeerIndex index = pipeline_->AddNeighbor(std::move(info), address, *s, chains, lb);
    neighbors_[name] = Neighbor{index, std::move(s), ebgp, {}};
    return index;
  }

  static absl::StatusOr<net::Family> FamilyWord(const std::vector<std::string>& w, size_t at) {
    if (w.size() <= at || w[at] == "ipv4") return net::Family::kIpv4Unicast;
    if (w[at] == "ipv6") return net::Family::kIpv6Unicast;
    return absl::InvalidArgumentError(absl::StrCat("family '", w[at], "': ipv4 or ipv6"));
  }

  absl::StatusOr<Neighbor*> Find(const std::string& name) {
    auto it = neighbors_.find(name);
    if (it == neighbors_.end()) return absl::NotFoundError(absl::StrCat("no neighbor ", name, " in the config"));
    return &it->second;
  }

  absl::Status Ingest(Neighbor& n, const wire::Bytes& bytes) {
    wire::CodecContext ctx;
    ctx.ebgp = n.ebgp;
    auto m = n.updates.Decode(bytes, ctx);
    if (!m.ok()) return absl::InvalidArgumentError(absl::StrCat("UPDATE does not decode: ", m.error().reason));
    const wire::UpdateMessage* u = m.value();
    if (auto eor = u->EndOfRib()) {
      (void)pipeline_->EndOfRib(n.index, *eor);
    } else {
      pipeline_->Ingest(n.index, *u);
    }
    return absl::OkStatus();
  }

  absl::Status Apply(const std::string& event) {
    const std::vector<std::string> w = Words(event);
    const std::string& cmd = w[0];
    if (cmd == "tick" && w.size() == 2) {
      auto ms = DurationMs(w[1]);
      if (!ms.ok()) return ms.status();
      clock_.Advance(*ms);
      return absl::OkStatus();
    }
    if (cmd == "show" && w.size() >= 2) return Show(w);
    if (cmd == "reload" && w.size() == 2) return Reload(w[1]);
    if (cmd == "network" && w.size() >= 3) return Network(w);
    if (w.size() < 2) return absl::InvalidArgumentError(absl::StrCat("'", cmd, "' needs a neighbor"));
    auto n = Find(w[1]);
    if (!n.ok()) return n.status();
    Neighbor& nb = **n;
    if (cmd == "up") {
      RecordingSession& s = *nb.session;
      s.families_ = {true, false};
      const auto address = net::IpAddress::Parse(w[1]);
      s.local_ = *net::IpAddress::Parse(address->is_v4() ? "192.0.2.254" : "2001:db8::fe");
      uint32_t id = 0x0a000000 + nb.index;
      for (size_t i = 2; i + 1 < w.size(); i += 2) {
        if (w[i] == "families") s.families_ = {absl::StrContains(w[i + 1], "ipv4"), absl::StrContains(w[i + 1], "ipv6")};
        if (w[i] == "local") {
          auto a = net::IpAddress::Parse(w[i + 1]);
          if (!a.ok()) return a.status();
          s.local_ = *a;
        }
        if (w[i] == "id") {
          auto a = net::IpAddress::Parse(w[i + 1]);
          if (!a.ok() || !a->is_v4()) return absl::InvalidArgumentError("id: an IPv4 address");
          id = a->v4();
        }
      }
      s.up_ = true;
      pipeline_->SessionUp(nb.index, id);
      return absl::OkStatus();
    }
    if (cmd == "down" && w.size() >= 3 && w[2] == "graceful") {
      std::array<bool, net::kFamilyCount> retain{true, true};
      if (w.size() > 3) retain = {absl::StrContains(w[3], "ipv4"), absl::StrContains(w[3], "ipv6")};
      const size_t kept = pipeline_->SessionLostGracefully(nb.index, retain);
      nb.session->up_ = false;
      out_.push_back(absl::StrCat("< ", kept, " paths kept stale"));
      return absl::OkStatus();
    }
    if (cmd == "down") {
      pipeline_->SessionDown(nb.index);
      nb.session->up_ = false;
      return absl::OkStatus();
    }
    if (cmd == "eor" || cmd == "borr" || cmd == "eorr") {
      auto family = FamilyWord(w, 2);
      if (!family.ok()) return family.status();
      if (cmd == "borr") {
        const size_t marked = pipeline_->BeginStale(nb.index, *family, rib::StaleCause::kRouteRefresh);
        out_.push_back(absl::StrCat("< ", marked, " paths stale"));
        return absl::OkStatus();
      }
      auto swept = cmd == "eor" ? pipeline_->EndOfRib(nb.index, *family)
                                : pipeline_->SweepStale(nb.index, *family, rib::StaleCause::kRouteRefresh);
      if (swept) out_.push_back(absl::StrCat("< ", swept->removed, " stale paths removed of ", swept->marked));
      return absl::OkStatus();
    }
    if (cmd == "update" && w.size() == 3) {
      wire::Bytes b;
      for (size_t i = 0; i + 1 < w[2].size(); i += 2) b.push_back(static_cast<uint8_t>(std::stoi(w[2].substr(i, 2), nullptr, 16)));
      return Ingest(nb, b);
    }
    if ((cmd == "announce" || cmd == "withdraw") && w.size() >= 3) {
      wire::UpdateMessage u;
      std::vector<net::Nlri> nlri;
      for (absl::string_view p : absl::StrSplit(w[2], ',')) {
        auto prefix = net::Prefix::Parse(std::string_view(p.data(), p.size()));
        if (!prefix.ok()) return prefix.status();
        nlri.push_back(net::Nlri{*prefix, 0});
      }
      const bool v6 = nlri.front().prefix.family() == net::Family::kIpv6Unicast;
      if (cmd == "withdraw") {
        if (v6) {
          u.attrs.mp_unreach = wire::MpUnreach{net::Family::kIpv6Unicast, nlri};
        } else {
          u.withdrawn = nlri;
        }
      } else {
        wire::PathAttributes& a = u.attrs;
        a.origin = wire::Origin::kIgp;
        // Default AS_PATH: the neighbor's AS (eBGP), empty (iBGP).
        a.as_path = wire::AsPath{{wire::AsPathSegment{wire::AsSegmentType::kSequence, {}}}};
        for (const auto& n : config_.neighbors()) {
          if (net::IpAddress::Parse(n.address())->ToString() == w[1] && nb.ebgp) a.as_path->segments[0].asns = {n.remote_as()};
        }
        net::IpAddress nh = *net::IpAddress::Parse(w[1]);
        for (size_t i = 3; i + 1 < w.size(); i += 2) {
          const std::string& k = w[i];
          const std::string& v = w[i + 1];
          if (k == "nh") {
            auto x = net::IpAddress::Parse(v);
            if (!x.ok()) return x.status();
            nh = *x;
          } else if (k == "path") {
            a.as_path->segments[0].asns.clear();  // "" : an empty AS_PATH
            for (absl::string_view asn : absl::StrSplit(v, ' ', absl::SkipEmpty())) {
              uint32_t x = 0;
              if (!absl::SimpleAtoi(asn, &x)) return absl::InvalidArgumentError("bad path");
              a.as_path->segments[0].asns.push_back(x);
            }
          } else if (k == "lb" || k == "lb-non-transitive") {
            auto r = conf::ParseRate(v);
            if (!r.ok()) return r.status();
            const uint32_t asn = a.as_path->segments[0].asns.empty() ? config_.router().asn()
                                                                     : a.as_path->segments[0].asns.front();
            a.extended_communities.push_back(
                wire::LinkBandwidth::FromBitsPerSecond(asn & 0xffff, *r, k == "lb").ToExtendedCommunity());
          } else if (k == "communities") {
            for (absl::string_view c : absl::StrSplit(v, ',')) {
              std::pair<std::string, std::string> hl = absl::StrSplit(c, ':');
              uint32_t hi = 0, lo = 0;
              if (!absl::SimpleAtoi(hl.first, &hi) || !absl::SimpleAtoi(hl.second, &lo)) {
                return absl::InvalidArgumentError("bad community");
              }
              a.communities.push_back(hi << 16 | lo);
            }
          } else if (k == "med") {
            uint32_t x = 0;
            if (!absl::SimpleAtoi(v, &x)) return absl::InvalidArgumentError("bad med");
            a.med = x;
          } else {
            return absl::InvalidArgumentError(absl::StrCat("unknown announce option '", k, "'"));
          }
        }
        if (a.as_path->segments[0].asns.empty()) a.as_path->segments.clear();
        if (!nb.ebgp) a.local_pref = 100;
        if (v6) {
          a.mp_reach = wire::MpReach{net::Family::kIpv6Unicast, nh, std::nullopt, nlri};
        } else {
          a.next_hop = nh;
          u.nlri = nlri;
        }
      }
      wire::CodecContext ctx;
      ctx.ebgp = nb.ebgp;
      auto bytes = wire::EncodeMessage(wire::Message{u}, ctx);
      if (!bytes.ok()) return bytes.status();
      return Ingest(nb, *bytes);
    }
    return absl::InvalidArgumentError(absl::StrCat("unknown event '", event, "'"));
  }

  absl::Status Show(const std::vector<std::string>& w) {
    google::protobuf::util::JsonPrintOptions json;
    json.add_whitespace = true;
    json.preserve_proto_field_names = true;
    std::string text;
    if (w[1] == "nexthop-groups") {
      auto r = ListNextHopGroups(pipeline_->rib(), pipeline_->weights().groups(), control::v1::ListNextHopGroupsRequest{},
                                 absl::FromUnixMillis(clock_.WallMs()));
      if (!r.ok()) return r.status();
      (void)google::protobuf::util::MessageToJsonString(*r, &text, json);
    } else if (w[1] == "routes") {
      auto page = ListRoutesPage(pipeline_->rib(), control::v1::ListRoutesRequest{}, 1000);
      if (!page.ok()) return page.status();
      control::v1::ListRoutesResponse r;
      for (auto& route : page->routes) *r.add_routes() = route;
      (void)google::protobuf::util::MessageToJsonString(r, &text, json);
    } else if (w[1] == "advertised" && w.size() == 3) {
      auto n = Find(w[2]);
      if (!n.ok()) return n.status();
      const auto* out = pipeline_->advertiser().advertised((*n)->index);
      std::vector<std::pair<net::Prefix, std::string>> rows;
      out->ForEachIn(net::Family::kIpv4Unicast, [&](const net::Prefix& p, const rib::AdjRibOut::Entry& e) {
        rows.emplace_back(p, DescribeAttributes(out->attrs(e)->attrs));
      });
      out->ForEachIn(net::Family::kIpv6Unicast, [&](const net::Prefix& p, const rib::AdjRibOut::Entry& e) {
        rows.emplace_back(p, DescribeAttributes(out->attrs(e)->attrs));
      });
      std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return net::InTableOrder(a.first, b.first); });
      for (const auto& [p, d] : rows) absl::StrAppend(&text, p.ToString(), " ", d, "\n");
    } else {
      return absl::InvalidArgumentError("show: nexthop-groups, routes or advertised NEIGHBOR");
    }
    for (absl::string_view line : absl::StrSplit(text, '\n')) {
      if (!line.empty()) out_.push_back(absl::StrCat("< ", line));
    }
    return absl::OkStatus();
  }

  static std::string DescribeAttributes(const wire::PathAttributes& a) {
    std::string s = absl::StrCat("path [", a.as_path ? a.as_path->ToString() : "", "]");
    if (auto nh = a.mp_reach ? std::optional(a.mp_reach->next_hop) : a.next_hop) absl::StrAppend(&s, " nh ", nh->ToString());
    if (auto lb = a.SelectedLinkBandwidth().chosen) absl::StrAppend(&s, " lb ", lb->ToString());
    if (!a.communities.empty()) {
      std::vector<std::string> c;
      for (uint32_t x : a.communities) c.push_back(absl::StrCat(x >> 16, ":", x & 0xffff));
      absl::StrAppend(&s, " communities ", absl::StrJoin(c, ","));
    }
    return s;
  }

  // As Speaker::Reload: the daemon's PlanReload, the session half done on the recorders,
  // then the daemon's Pipeline::Apply.
  absl::Status Reload(const std::string& file) {
    config::v1::Config next = Load(file);
    auto plan = PlanReload(config_, next, pipeline_->api_networks());
    if (!plan.ok()) return plan.status();
    for (const std::string& name : plan->removed) {
      auto nb = Find(name);
      if (!nb.ok()) return nb.status();
      out_.push_back(absl::StrCat("< ", name, " removed: Cease / Peer De-configured"));
      pipeline_->RemoveNeighbor((*nb)->index);
      retired_.push_back(std::move((*nb)->session));  // the advertiser no longer refers to it
      neighbors_.erase(name);
    }
    config_ = plan->running;  // the new neighbors' AS numbers
    std::vector<rib::PeerIndex> indices(plan->neighbors.size());
    for (size_t i = 0; i < plan->neighbors.size(); ++i) {
      const NeighborPlan& n = plan->neighbors[i];
      if (n.kind == NeighborPlan::Kind::kReset) {
        out_.push_back(absl::StrCat("< ", n.name, " reset: Cease / Other Configuration Change (",
                                    absl::StrJoin(n.changed_fields, ", "), ")"));
        auto nb = Find(n.name);
        if (!nb.ok()) return nb.status();
        pipeline_->RemoveNeighbor((*nb)->index);
        retired_.push_back(std::move((*nb)->session));
        neighbors_.erase(n.name);
      }
      if (n.kind != NeighborPlan::Kind::kKept) {
        if (n.kind == NeighborPlan::Kind::kAdded) out_.push_back(absl::StrCat("< ", n.name, " added"));
        indices[i] = AddNeighbor(n.name, n.peer.ebgp(), n.peer.advertisement_interval_s, n.policies, n.lb_export);
        continue;
      }
      auto nb = Find(n.name);
      if (!nb.ok()) return nb.status();
      (*nb)->session->mrai_ = n.peer.advertisement_interval_s;
      indices[i] = (*nb)->index;
    }
    const std::vector<Pipeline::Reconfigured> done = pipeline_->Apply(*plan, indices);
    for (size_t i = 0; i < done.size(); ++i) {
      // The Speaker asks the neighbor to re-send (ROUTE-REFRESH); the replay shows the ask.
      Neighbor& nb = neighbors_.at(plan->neighbors[i].name);
      if (done[i].needs_refresh) {
        nb.session->SendRouteRefresh(wire::RouteRefreshMessage::Make(net::Family::kIpv4Unicast));
      }
    }
    for (const std::string& r : plan->needs_restart) out_.push_back(absl::StrCat("< needs a restart: ", r));
    policies_ = plan->policies;
    return absl::OkStatus();
  }

  absl::Status Network(const std::vector<std::string>& w) {
    auto prefix = net::Prefix::Parse(w[2]);
    if (!prefix.ok()) return prefix.status();
    if (w[1] == "delete") return pipeline_->DeleteNetwork(*prefix);
    if (w[1] != "add") return absl::InvalidArgumentError("network add|delete PREFIX");
    daemon::Network n;
    n.nlri = net::Nlri{*prefix, 0};
    if (w.size() == 5 && w[3] == "lb") {
      auto r = conf::ParseRate(w[4]);
      if (!r.ok()) return r.status();
      n.link_bandwidth_bps = *r;
    }
    auto replaced = pipeline_->AddNetwork(n);
    if (!replaced.ok()) return replaced.status();
    if (*replaced) out_.push_back("< replaced the one added before");
    return absl::OkStatus();
  }

  fs::path dir_;
  std::vector<std::string> out_;  // what the current event caused
  session::ManualClock clock_;
  RecordingFib fib_;
  config::v1::Config config_;
  std::shared_ptr<const policy::PolicySet> policies_;
  std::vector<std::unique_ptr<RecordingSession>> retired_;  // sessions of removed neighbors
  test::PostedTasks posted_;                                // the pipeline's posted hand-off
  std::map<std::string, Neighbor> neighbors_;
  std::unique_ptr<Pipeline> pipeline_;  // after the clock, sessions and policies it points to
};

TEST_CASE("Replay: every case in tests/data/replay matches its golden transcript", "[replay]") {
  log::SetLevel(log::Level::kError);
  const fs::path root = fs::path(BAGD_SOURCE_DIR) / "tests/data/replay";
  const bool regenerate = getenv("BAGD_REPLAY_REGENERATE") != nullptr;
  std::vector<fs::path> cases;
  for (const auto& e : fs::directory_iterator(root)) {
    if (e.is_directory()) cases.push_back(e.path());
  }
  std::sort(cases.begin(), cases.end());
  REQUIRE(cases.size() >= 10);
  for (const fs::path& dir : cases) {
    DYNAMIC_SECTION(dir.filename().string()) {
      std::string got;
      try {
        got = Replay(dir).Run();
      } catch (const std::exception& e) {
        FAIL(e.what());
      }
      const fs::path golden = dir / "expected";
      if (regenerate) {
        std::ofstream(golden) << got;
        WARN("regenerated " << golden.string());
        continue;
      }
      std::ifstream in(golden);
      REQUIRE(in.good());
      std::stringstream want;
      want << in.rdbuf();
      CHECK(got == want.str());
    }
  }
  log::SetLevel(log::Level::kInfo);
}

}  // namespace
}  // namespace bagd::daemon
