#include "bgpd/daemon/bfd_stage.h"

#include <boost/asio/post.hpp>

#include "absl/strings/str_cat.h"
#include "bgpd/daemon/capacity_stage.h"
#include "bgpd/daemon/speaker.h"
#include "bgpd/session/log.h"
#include "conf/bfd_settings.h"

namespace bagd::daemon {

std::vector<bfd::SessionSpec> BfdSessionSpecs(const config::v1::Config& config,
                                               const std::function<bool(const std::string&)>& skip) {
  std::vector<bfd::SessionSpec> out;
  for (const auto& n : config.neighbors()) {
    const auto settings = conf::EffectiveBfd(config, n);
    if (!settings) continue;
    if (skip && skip(n.address())) continue;
    auto peer = net::IpAddress::Parse(n.address());
    if (!peer.ok()) continue;  // the validator has said so
    bfd::SessionSpec s;
    s.peer = *peer;
    s.name = peer->ToString();
    if (!n.local_address().empty()) {
      if (auto local = net::IpAddress::Parse(n.local_address()); local.ok()) s.local = *local;
    }
    s.multihop = settings->multihop;
    s.config.desired_min_tx_us = settings->min_tx_ms * 1000;
    s.config.required_min_rx_us = settings->min_rx_ms * 1000;
    s.config.detect_mult = static_cast<uint8_t>(settings->multiplier);
    s.config.passive = settings->passive;
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<bfd::SessionSpec> MicroBfdSessionSpecs(const config::v1::Config& config) {
  std::vector<bfd::SessionSpec> out;
  for (const auto& c : config.capacity_sources()) {
    const auto settings = conf::EffectiveMicroBfd(config, c);
    if (!settings) continue;
    auto peer = net::IpAddress::Parse(settings->neighbor_address);
    auto local = net::IpAddress::Parse(settings->local_address);
    if (!peer.ok() || !local.ok()) continue;  // the validator has said so
    for (const auto& member : c.members()) {
      bfd::SessionSpec s;
      s.peer = *peer;
      s.local = *local;
      s.name = peer->ToString();
      s.interface = member;
      s.capacity_source = c.name();
      s.config.desired_min_tx_us = settings->timers.min_tx_ms * 1000;
      s.config.required_min_rx_us = settings->timers.min_rx_ms * 1000;
      s.config.detect_mult = static_cast<uint8_t>(settings->timers.multiplier);
      out.push_back(std::move(s));
    }
  }
  return out;
}

fib::BfdLiveness NextLiveness(fib::BfdLiveness previous, const bfd::Transition& t) {
  if (t.to == bfd::State::kUp) return fib::BfdLiveness::kUp;
  if (t.Failure()) return fib::BfdLiveness::kFailed;
  if (t.from == bfd::State::kUp && t.remote_admin_down) return fib::BfdLiveness::kAdminDown;
  return previous;
}

BfdStage::BfdStage(boost::asio::io_context& io, Speaker& speaker, prometheus::Registry* registry,
                   control::EventSink* events, bfd::EngineOptions engine_options)
    : io_(io), speaker_(speaker), events_(events), engine_options_(std::move(engine_options)) {
  if (registry != nullptr) {
    metrics_ = std::make_unique<bfd::EngineMetrics>(*registry);
    engine_options_.metrics = metrics_.get();
  }
  // The engine's thread hands each change to the event thread; a change still queued when
  // the stage is gone is dropped.
  engine_options_.on_change = [this, watch = lifetime_.watch()](const bfd::StateChange& c) {
    boost::asio::post(io_, [this, watch, c] {
      if (!watch.expired()) OnChange(c);
    });
  };
}

BfdStage::~BfdStage() = default;

absl::Status BfdStage::Apply(const config::v1::Config& config) {
  // Dynamic neighbors (listen ranges) run without BFD for now (docs/bfd.md); the running
  // config lists them while they live.
  auto dynamic = [this](const std::string& address) {
    auto parsed = net::IpAddress::Parse(address);
    if (!parsed.ok()) return false;
    const auto status = speaker_.ListNeighbors(parsed->ToString());
    return !status.empty() && status.front().dynamic();
  };
  auto specs = BfdSessionSpecs(config, dynamic);
  // Micro-BFD: the sessions, and which members of which source they watch. A member whose
  // session keeps its addresses keeps its liveness; a new session starts "not up yet".
  std::map<std::string, MicroMember> micro;
  std::vector<std::pair<std::string, std::string>> reset;  // (source, member): new addresses
  if (capacity_ != nullptr) {
    auto micro_specs = MicroBfdSessionSpecs(config);
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (const auto& s : micro_specs) {
        const std::string key = absl::StrCat(s.capacity_source, "/", s.interface);
        MicroMember m;
        m.peer = s.peer.ToString();
        m.local = s.local ? s.local->ToString() : "";
        for (const auto& c : config.capacity_sources()) {
          if (c.name() == s.capacity_source) m.require_up = c.micro_bfd().require_up();
        }
        const auto it = micro_.find(key);
        if (it != micro_.end() && it->second.peer == m.peer) {  // the engine keeps the session
          m.liveness = it->second.liveness;
        } else if (it != micro_.end()) {
          reset.emplace_back(s.capacity_source, s.interface);
        }
        micro[key] = std::move(m);
      }
    }
    for (const auto& c : config.capacity_sources()) {
      std::vector<std::string> members;
      for (const auto& s : micro_specs) {
        if (s.capacity_source == c.name()) members.push_back(s.interface);
      }
      capacity_->SetMicroBfd(c.name(), members, c.micro_bfd().require_up());
    }
    for (const auto& [source, member] : reset) {
      capacity_->SetMemberLiveness(source, member, fib::BfdLiveness::kUnknown);
    }
    specs.insert(specs.end(), micro_specs.begin(), micro_specs.end());
  }
  absl::flat_hash_map<std::string, bool> hold;
  for (const auto& n : config.neighbors()) {
    auto peer = net::IpAddress::Parse(n.address());
    if (!peer.ok()) continue;
    const auto settings = conf::EffectiveBfd(config, n);
    hold[peer->ToString()] = settings && settings->hold_bgp_until_up;
    // A neighbor without BFD (any more) does not wait for it.
    if (!settings) {
      if (Peer* p = speaker_.FindPeer(peer->ToString())) p->BfdUp();
    }
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    hold_ = std::move(hold);
    micro_ = std::move(micro);
  }
  if (!engine_ && specs.empty()) return absl::OkStatus();
  if (!engine_) {
    auto engine = std::make_unique<bfd::Engine>(engine_options_);
    if (auto st = engine->Start(); !st.ok()) return st;
    std::lock_guard<std::mutex> lock(mu_);
    engine_ = std::move(engine);
    log::Info("bfd: engine started (UDP %d single hop, %d multihop, %d micro-BFD)",
              engine_options_.single_hop_listen_port, engine_options_.multihop_listen_port,
              engine_options_.micro_listen_port);
  }
  engine_->Apply(specs);
  // hold_bgp_until_up newly set on a session that is already Up, or turned off: no wait.
  for (const auto& s : engine_->Snapshot()) {
    if (!s.spec.interface.empty()) continue;  // micro-BFD: no BGP session waits for it
    Peer* p = speaker_.FindPeer(s.spec.name);
    if (p == nullptr) continue;
    bool holds = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      const auto it = hold_.find(s.spec.name);
      holds = it != hold_.end() && it->second;
    }
    if (s.state == bfd::State::kUp || (!holds && s.flaps == 0)) p->BfdUp();
  }
  return absl::OkStatus();
}

std::vector<control::v1::BfdSession> BfdStage::Sessions(const std::string& peer) const {
  std::vector<control::v1::BfdSession> out;
  std::lock_guard<std::mutex> lock(mu_);
  if (!engine_) return out;
  for (const auto& s : engine_->Snapshot()) {
    if (!peer.empty() && s.spec.name != peer) continue;
    control::v1::BfdSession b;
    b.set_peer(s.spec.name);
    if (s.spec.local) b.set_local_address(s.spec.local->ToString());
    b.set_multihop(s.spec.multihop);
    b.set_state(bfd::StateName(s.state));
    b.set_remote_state(bfd::StateName(s.remote_state));
    b.set_local_discriminator(s.local_discr);
    b.set_remote_discriminator(s.remote_discr);
    b.set_local_diagnostic(bfd::DiagName(s.local_diag));
    b.set_remote_diagnostic(bfd::DiagName(s.remote_diag));
    b.set_desired_min_tx_us(s.spec.config.desired_min_tx_us);
    b.set_required_min_rx_us(s.spec.config.required_min_rx_us);
    b.set_detect_multiplier(s.spec.config.detect_mult);
    b.set_passive(s.spec.config.passive);
    if (s.spec.interface.empty()) {
      const auto it = hold_.find(s.spec.name);
      b.set_hold_bgp_until_up(it != hold_.end() && it->second);
    } else {
      b.set_interface(s.spec.interface);
      b.set_capacity_source(s.spec.capacity_source);
      const auto m = micro_.find(absl::StrCat(s.spec.capacity_source, "/", s.spec.interface));
      const fib::BfdLiveness l = m == micro_.end() ? fib::BfdLiveness::kUnknown : m->second.liveness;
      b.set_member_liveness(fib::BfdLivenessName(l));
      b.set_member_allowed(fib::BfdAllows(l, m != micro_.end() && m->second.require_up));
    }
    b.set_tx_interval_us(s.tx_interval_us);
    b.set_detection_time_us(static_cast<uint64_t>(s.detection_time_us));
    b.set_remote_min_rx_us(s.remote_min_rx_us);
    b.set_remote_min_tx_us(s.remote_desired_min_tx_us);
    b.set_remote_detect_multiplier(s.remote_detect_mult);
    b.set_poll_active(s.poll_active);
    b.set_up_since_unix_ms(s.up_since_unix_ms);
    b.set_last_change_unix_ms(s.last_change_unix_ms);
    b.set_flaps(s.flaps);
    b.set_packets_in(s.packets_in);
    b.set_packets_out(s.packets_out);
    b.set_send_errors(s.send_errors);
    b.set_source_port(s.source_port);
    b.set_last_error(s.last_error);
    out.push_back(std::move(b));
  }
  return out;
}

void BfdStage::OnMicroChange(const bfd::StateChange& c) {
  const bfd::Transition& t = c.transition;
  const std::string key = absl::StrCat(c.capacity_source, "/", c.interface);
  fib::BfdLiveness before, after;
  bool require_up = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = micro_.find(key);
    // A change of a session removed (or readdressed) by a reload since: not this member's.
    if (it == micro_.end() || it->second.peer != c.peer.ToString()) return;
    before = it->second.liveness;
    after = NextLiveness(before, t);
    it->second.liveness = after;
    require_up = it->second.require_up;
  }
  const bool was = fib::BfdAllows(before, require_up), is = fib::BfdAllows(after, require_up);
  const std::string action = was && !is ? "member down" : !was && is ? "member up" : "none";
  log::Event(t.Failure() ? log::Level::kWarning : log::Level::kInfo,
             {{"neighbor", c.name},
              {"event", "bfd"},
              {"interface", c.interface},
              {"capacity_source", c.capacity_source},
              {"from", bfd::StateName(t.from)},
              {"to", bfd::StateName(t.to)}},
             "micro-bfd %s member %s (%s): %s -> %s%s%s", c.capacity_source, c.interface, c.name,
             bfd::StateName(t.from), bfd::StateName(t.to),
             t.diag == bfd::Diag::kNone ? "" : absl::StrCat(": ", bfd::DiagName(t.diag)),
             action == "member down" ? absl::StrCat("; ", c.interface, " no longer counts in ", c.capacity_source,
                                                    "'s capacity")
             : action == "member up"
                 ? absl::StrCat("; ", c.interface, " counts again in ", c.capacity_source,
                                "'s capacity (after the hold-down)")
             : t.remote_admin_down ? std::string(" (the far end's AdminDown: not a failure, the member stays)")
                                   : std::string());
  // The cause logged first, then the capacity stage's line about its effect.
  if (capacity_ != nullptr) capacity_->SetMemberLiveness(c.capacity_source, c.interface, after);
  if (events_ != nullptr) {
    control::v1::Event e;
    e.set_time_unix_ms(c.unix_ms);
    auto& b = *e.mutable_bfd();
    b.set_peer(c.name);
    b.set_from(bfd::StateName(t.from));
    b.set_to(bfd::StateName(t.to));
    b.set_diagnostic(bfd::DiagName(t.diag));
    b.set_remote_admin_down(t.remote_admin_down);
    b.set_bgp_action("none");
    b.set_interface(c.interface);
    b.set_capacity_source(c.capacity_source);
    b.set_capacity_action(action);
    events_->Publish(std::move(e));
  }
}

void BfdStage::OnChange(const bfd::StateChange& c) {
  if (!c.interface.empty()) return OnMicroChange(c);  // micro-BFD: the LAG's capacity, not BGP
  const bfd::Transition& t = c.transition;
  const bool warn = t.Failure();
  log::Event(warn ? log::Level::kWarning : log::Level::kInfo,
             {{"neighbor", c.name}, {"event", "bfd"}, {"from", bfd::StateName(t.from)}, {"to", bfd::StateName(t.to)}},
             "bfd %s%s: %s -> %s%s%s", c.name, c.multihop ? " (multihop)" : "", bfd::StateName(t.from),
             bfd::StateName(t.to), t.diag == bfd::Diag::kNone ? "" : absl::StrCat(": ", bfd::DiagName(t.diag)),
             t.remote_admin_down ? " (the peer's AdminDown: not a failure, BGP stays)" : "");
  Peer* peer = speaker_.FindPeer(c.name);
  std::string action = "none";
  if (peer != nullptr && t.Failure()) {
    peer->BfdDown(bfd::DiagName(t.diag));
    action = "down";
  } else if (peer != nullptr && t.to == bfd::State::kUp) {
    if (peer->waiting_for_bfd()) action = "start";
    peer->BfdUp();
  }
  if (events_ != nullptr) {
    control::v1::Event e;
    e.set_time_unix_ms(c.unix_ms);
    auto& b = *e.mutable_bfd();
    b.set_peer(c.name);
    b.set_multihop(c.multihop);
    b.set_from(bfd::StateName(t.from));
    b.set_to(bfd::StateName(t.to));
    b.set_diagnostic(bfd::DiagName(t.diag));
    b.set_remote_admin_down(t.remote_admin_down);
    b.set_bgp_action(action);
    events_->Publish(std::move(e));
  }
}

}  // namespace bagd::daemon
