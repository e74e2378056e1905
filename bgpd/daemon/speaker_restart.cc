// The speaker's half of graceful restart (RFC 4724) and route refresh (RFC 2918, RFC 7313):
// the RFC decisions, the timers and the status. The stale paths themselves are the
// pipeline's (Pipeline::BeginStale / SweepStale): the timers call the sweep.
#include <boost/asio/post.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "bgpd/daemon/speaker.h"
#include "bgpd/fsm/route_refresh.h"
#include "bgpd/session/log.h"

namespace bagd::daemon {

using namespace session;  // the session layer's types (Peer, Clock, log)

// --- Route refresh (RFC 2918, RFC 7313) ---------------------------------------------------

namespace {
// RFC 7313 §4.2 leaves how long to wait for an EoRR to the implementation. FRR removes the
// stale paths after its stale-path time, 360 s by default; so does bagd.
constexpr auto kStaleRefreshTimeout = std::chrono::seconds(360);
}  // namespace

Speaker::InboundRefresh& Speaker::RefreshOf(const Peer& peer) {
  if (refresh_.size() <= peer.rib_index) refresh_.resize(size_t{peer.rib_index} + 1);
  return refresh_[peer.rib_index];
}

void Speaker::OnRouteRefresh(Peer& peer, const wire::RouteRefreshMessage& m) {
  if (!peer.negotiated()) return;
  fsm::InboundRefreshState state;
  for (int f = 0; f < net::kFamilyCount; ++f) {
    state.end_of_rib[f] = end_of_rib_.contains({peer.rib_index, f});
    state.refreshing[f] =
        pipeline_->stale_cause(peer.rib_index, static_cast<net::Family>(f)) == rib::StaleCause::kRouteRefresh;
  }
  const fsm::RefreshAction a = fsm::ClassifyRouteRefresh(peer.config().fsm.local, *peer.negotiated(), m, state);
  control::v1::RouteRefreshStatus& st = peer.refresh_status();
  const std::string& name = peer.config().Name();
  switch (a.type) {
    case fsm::RefreshActionType::kIgnore:
      st.set_ignored(st.ignored() + 1);
      log::Warning("neighbor %s: ROUTE-REFRESH %s (AFI %d, SAFI %d) ignored: %s", name,
                   wire::RouteRefreshSubtypeName(m.subtype), m.afi, m.safi, a.reason);
      return;
    case fsm::RefreshActionType::kResend: {
      st.set_requests_received(st.requests_received() + 1);
      if (!a.reason.empty()) log::Info("neighbor %s: route refresh request: %s", name, a.reason);
      const size_t sent = ResendAdjRibOut(peer, a.family, a.enhanced);
      log::Info("neighbor %s: route refresh request for %s: Adj-RIB-Out re-sent, %d prefixes%s", name,
                net::FamilyName(a.family), sent, a.enhanced ? " between BoRR and EoRR" : "");
      return;
    }
    case fsm::RefreshActionType::kBeginStale:
      st.set_borr_received(st.borr_received() + 1);
      if (!a.reason.empty()) log::Info("neighbor %s: %s", name, a.reason);
      return BeginRefresh(peer, a.family);
    case fsm::RefreshActionType::kEndStale:
      st.set_eorr_received(st.eorr_received() + 1);
      return EndRefresh(peer, a.family, /*timed_out=*/false);
  }
}

void Speaker::RequestRefresh(Peer& peer, net::Family family) {
  peer.SendRouteRefresh(wire::RouteRefreshMessage::Make(family));
  control::v1::RouteRefreshStatus& st = peer.refresh_status();
  st.set_requests_sent(st.requests_sent() + 1);
}

size_t Speaker::ResendAdjRibOut(Peer& to, net::Family family, bool enhanced) {
  const size_t sent = pipeline_->Resend(to.rib_index, family, enhanced);
  control::v1::RouteRefreshStatus& st = to.refresh_status();
  st.set_adj_rib_out_resends(st.adj_rib_out_resends() + 1);
  st.set_prefixes_resent(st.prefixes_resent() + sent);
  return sent;
}

void Speaker::BeginRefresh(Peer& peer, net::Family family) {
  InboundRefresh& in = RefreshOf(peer);
  const int f = static_cast<int>(family);
  // RFC 7313 §4.2: every path of the peer in the family is stale; each one it sends again is
  // not (the pipeline's Ingest). A BoRR during a refresh starts it over.
  const size_t marked = pipeline_->BeginStale(peer.rib_index, family, rib::StaleCause::kRouteRefresh);
  if (!in.timeout[f]) in.timeout[f] = clock_->NewTimer();
  // The timer is the speaker's; the neighbor is looked up by index when it fires.
  in.timeout[f]->Start(kStaleRefreshTimeout, [this, index = peer.rib_index, family] {
    if (Peer* p = PeerAt(index)) EndRefresh(*p, family, /*timed_out=*/true);
  });
  ShowRefreshing(peer);
  log::Info("neighbor %s: BoRR %s: the neighbor re-sends its routes; %d paths stale until announced again "
            "(removed at EoRR, or in %d s without one)",
            peer.config().Name(), net::FamilyName(family), marked, kStaleRefreshTimeout.count());
}


void Speaker::EndRefresh(Peer& peer, net::Family family, bool timed_out) {
  InboundRefresh& in = RefreshOf(peer);
  const int f = static_cast<int>(family);
  if (in.timeout[f]) in.timeout[f]->Stop();
  const auto swept = pipeline_->SweepStale(peer.rib_index, family, rib::StaleCause::kRouteRefresh);
  if (!swept) return;
  control::v1::RouteRefreshStatus& st = peer.refresh_status();
  st.set_stale_paths_removed(st.stale_paths_removed() + swept->removed);
  if (timed_out) st.set_refreshes_timed_out(st.refreshes_timed_out() + 1);
  ShowRefreshing(peer);
  RefreshCounts(peer);
  RefreshRibMetrics();
  if (timed_out) {
    log::Warning("neighbor %s: no EoRR for %s within %d s of its BoRR: %d stale paths removed (of %d)",
                 peer.config().Name(), net::FamilyName(family), kStaleRefreshTimeout.count(), swept->removed,
                 swept->marked);
  } else {
    log::Info("neighbor %s: EoRR %s: refresh complete, %d stale paths removed (of %d marked at BoRR)",
              peer.config().Name(), net::FamilyName(family), swept->removed, swept->marked);
  }
}

void Speaker::ResetRefresh(Peer& peer) {
  // A refresh of the session that ended is over: its timers stop. Its marks went with the
  // session's paths (Pipeline::SessionDown), or are a restart's now (SessionLostGracefully).
  InboundRefresh& in = RefreshOf(peer);
  for (int f = 0; f < net::kFamilyCount; ++f) {
    if (in.timeout[f]) in.timeout[f]->Stop();
  }
  ShowRefreshing(peer);
}

void Speaker::ShowRefreshing(Peer& peer) {
  control::v1::RouteRefreshStatus& st = peer.refresh_status();
  st.clear_refreshing();
  for (int f = 0; f < net::kFamilyCount; ++f) {
    const auto family = static_cast<net::Family>(f);
    if (pipeline_->stale_cause(peer.rib_index, family) == rib::StaleCause::kRouteRefresh) {
      st.add_refreshing(net::FamilyName(family));
    }
  }
}

absl::StatusOr<control::v1::ClearNeighborResponse> Speaker::ClearNeighbor(
    const std::string& address, control::v1::ClearNeighborRequest::Mode mode) {
  using Request = control::v1::ClearNeighborRequest;
  auto a = net::IpAddress::Parse(address);
  if (!a.ok()) return a.status();
  Peer* p = FindPeer(a->ToString());
  if (p == nullptr) return absl::NotFoundError(absl::StrCat("no neighbor ", address, " is configured"));
  const bool hard = mode == Request::MODE_HARD;
  if (!p->established() || !p->negotiated()) {
    std::string state = fsm::StateName(p->state());
    if (p->admin_down()) absl::StrAppend(&state, ", administratively down");
    if (p->prefix_limit_down()) absl::StrAppend(&state, ", down after exceeding its maximum prefixes");
    return absl::FailedPreconditionError(absl::StrCat("neighbor ", address, " is not Established (", state,
                                                      "): there is no session to ", hard ? "reset" : "refresh"));
  }
  control::v1::ClearNeighborResponse r;
  const std::string& name = p->config().Name();
  if (hard) {
    log::Warning("neighbor %s: administrative reset requested: Cease / Administrative Reset, then a restart", name);
    p->Reset();
    return r;
  }
  const fsm::Negotiated n = *p->negotiated();  // a copy: the re-sends below run RIB work
  const bool in = mode == Request::MODE_SOFT_IN || mode == Request::MODE_SOFT;
  const bool out = mode == Request::MODE_SOFT_OUT || mode == Request::MODE_SOFT;
  if (in && !n.route_refresh) {
    // Nothing is done, not even the outbound half: the operator asked for both.
    return absl::FailedPreconditionError(absl::StrCat(
        "neighbor ", address, " did not offer route refresh (RFC 2918) in its OPEN, so it cannot be asked to re-send "
        "its routes; nothing was done (`bagctl neighbor ", address, " clear` resets the session instead)"));
  }
  for (int f = 0; f < net::kFamilyCount; ++f) {
    if (!n.families[f] || !in) continue;
    const auto family = static_cast<net::Family>(f);
    RequestRefresh(*p, family);
    r.add_refresh_requested(net::FamilyName(family));
    log::Info("neighbor %s: soft reset in: route refresh request sent for %s", name, net::FamilyName(family));
  }
  for (int f = 0; f < net::kFamilyCount; ++f) {
    if (!n.families[f] || !out) continue;
    const auto family = static_cast<net::Family>(f);
    const size_t sent = ResendAdjRibOut(*p, family, n.enhanced_route_refresh);
    r.add_resent(net::FamilyName(family));
    r.set_prefixes_resent(r.prefixes_resent() + sent);
    log::Info("neighbor %s: soft reset out: Adj-RIB-Out re-sent for %s, %d prefixes%s", name,
              net::FamilyName(family), sent, n.enhanced_route_refresh ? " between BoRR and EoRR" : "");
  }
  r.set_enhanced(out && n.enhanced_route_refresh);
  return r;
}

// --- Graceful restart (RFC 4724) -----------------------------------------------------------

Speaker::PeerRestart& Speaker::RestartOf(const Peer& peer) {
  if (restart_.size() <= peer.rib_index) restart_.resize(size_t{peer.rib_index} + 1);
  return restart_[peer.rib_index];
}

bool Speaker::HasRestartStale(const Peer& peer) const {
  for (int f = 0; f < net::kFamilyCount; ++f) {
    if (pipeline_->stale_cause(peer.rib_index, static_cast<net::Family>(f)) == rib::StaleCause::kGracefulRestart) {
      return true;
    }
  }
  return false;
}

bool Speaker::Restarting() const {
  return options_.fib != nullptr && options_.restart.restarting && !converged_ && !deferral_over_;
}

fsm::RestartState Speaker::RestartStateFor(const Peer& peer) const {
  (void)peer;
  fsm::RestartState r;
  // R only while bagd is still restarting (its tables not in yet): a later session reset is
  // not a restart of bagd. F as the FIB found it at start: the kernel kept bagd's routes.
  r.restarting = Restarting();
  r.forwarding_preserved = options_.fib != nullptr ? options_.restart.forwarding_preserved
                                                   : std::array<bool, net::kFamilyCount>{};
  return r;
}

bool Speaker::DefersEndOfRib(const Peer& peer) const { return pipeline_->initial_deferred(peer.rib_index); }

bool Speaker::DeferInitial(const Peer& peer) const {
  // A peer that sent the capability is a helper for the families we listed (its own list
  // is about its forwarding state, not ours); one without it drops our routes anyway.
  const auto& n = peer.negotiated();
  const fsm::LocalSettings& local = peer.config().fsm.local;
  bool listed = false;
  for (int f = 0; f < net::kFamilyCount; ++f) listed |= n && n->families[f] && local.graceful_restart_families[f];
  return Restarting() && n && n->peer_graceful_restart.offered && local.graceful_restart_time > 0 && listed;
}

void Speaker::ReleaseDeferred(const char* why) {
  if (deferral_over_) return;
  deferral_over_ = true;
  if (deferral_timer_) deferral_timer_->Stop();
  for (auto& p : peers_) {
    if (!pipeline_->initial_deferred(p->rib_index)) continue;
    pipeline_->ReleaseInitial(p->rib_index);  // the whole table now, then End-of-RIB
    p->SendEndOfRib();
    log::Info("neighbor %s: deferred initial advertisement sent (%s), then End-of-RIB", p->config().Name(), why);
  }
}

void Speaker::KeepStale(Peer& peer, const std::array<bool, net::kFamilyCount>& retain, uint16_t restart_time_s) {
  PeerRestart& gr = RestartOf(peer);
  const std::string& name = peer.config().Name();
  std::vector<std::string> kept;
  for (int f = 0; f < net::kFamilyCount; ++f) {
    if (retain[f]) kept.push_back(net::FamilyName(static_cast<net::Family>(f)));
  }
  const size_t marked = pipeline_->SessionLostGracefully(peer.rib_index, retain);
  gr.restarting = true;
  ++gr.restarts;
  if (!gr.restart_timer) gr.restart_timer = clock_->NewTimer();
  if (!gr.stale_timer) gr.stale_timer = clock_->NewTimer();
  gr.stale_timer->Stop();
  gr.deadline_ms = clock_->WallMs() + int64_t{restart_time_s} * 1000;
  // The timer is the speaker's; the neighbor is looked up by index when it fires.
  gr.restart_timer->Start(std::chrono::seconds(restart_time_s), [this, index = peer.rib_index, restart_time_s] {
    Peer* p = PeerAt(index);
    if (p == nullptr) return;
    RestartOf(*p).timers_expired++;
    SweepAllStale(*p, "restart_timer",
                  absl::StrCat("the session was not back within its restart time (", restart_time_s, " s)"));
    RestartOf(*p).restarting = false;
  });
  if (session_metrics_) session_metrics_->GracefulRestartEvents(name, "restart").Increment();
  log::Warning("neighbor %s: session lost without a NOTIFICATION: graceful restart (RFC 4724), %d paths kept as "
               "stale in %s for up to %d s; the FIB is unchanged",
               name, marked, absl::StrJoin(kept, ", "), restart_time_s);
}

void Speaker::SweepStale(Peer& peer, net::Family family, const char* event, const std::string& why) {
  if (auto swept = pipeline_->SweepStale(peer.rib_index, family, rib::StaleCause::kGracefulRestart)) {
    NoteSwept(peer, family, *swept, event, why);
  }
}

void Speaker::NoteSwept(Peer& peer, net::Family family, const Pipeline::Swept& swept, const char* event,
                        const std::string& why) {
  PeerRestart& gr = RestartOf(peer);
  gr.removed += swept.removed;
  if (!HasRestartStale(peer)) {
    if (gr.stale_timer) gr.stale_timer->Stop();
    if (gr.restart_timer) gr.restart_timer->Stop();
  }
  if (session_metrics_) session_metrics_->GracefulRestartEvents(peer.config().Name(), event).Increment();
  RefreshCounts(peer);
  RefreshRibMetrics();
  log::Info("neighbor %s: graceful restart %s: %s: %d stale paths removed (of %d kept)", peer.config().Name(),
            net::FamilyName(family), why, swept.removed, swept.marked);
}

void Speaker::SweepAllStale(Peer& peer, const char* event, const std::string& why) {
  for (int f = 0; f < net::kFamilyCount; ++f) SweepStale(peer, static_cast<net::Family>(f), event, why);
}

void Speaker::RestartedPeerUp(Peer& peer) {
  PeerRestart& gr = RestartOf(peer);
  if (!HasRestartStale(peer)) return;
  gr.restarting = false;
  if (gr.restart_timer) gr.restart_timer->Stop();
  const fsm::Negotiated& n = *peer.negotiated();
  const fsm::PeerGracefulRestart& offer = n.peer_graceful_restart;
  // RFC 4724 §4.2: a family that the new capability lacks, or lists without F (its
  // forwarding state is gone), has its stale paths removed at once.
  for (int f = 0; f < net::kFamilyCount; ++f) {
    const auto family = static_cast<net::Family>(f);
    if (pipeline_->stale_cause(peer.rib_index, family) != rib::StaleCause::kGracefulRestart) continue;
    if (!offer.offered) {
      SweepStale(peer, family, "forwarding_not_preserved", "its new OPEN has no Graceful Restart capability");
    } else if (!n.families[f] || !offer.families[f]) {
      SweepStale(peer, family, "forwarding_not_preserved", "its new Graceful Restart capability lacks the family");
    } else if (!offer.forwarding_preserved[f]) {
      SweepStale(peer, family, "forwarding_not_preserved", "its new OPEN says its forwarding state was not kept (F bit 0)");
    }
  }
  if (!HasRestartStale(peer)) return;
  // RFC 4724 §4.2 lets the upper bound be configured: stale_routes_time from now.
  const uint32_t t = peer.config().stale_routes_time_s;
  gr.deadline_ms = clock_->WallMs() + int64_t{t} * 1000;
  gr.stale_timer->Start(std::chrono::seconds(t), [this, index = peer.rib_index, t] {
    Peer* p = PeerAt(index);
    if (p == nullptr) return;
    RestartOf(*p).timers_expired++;
    SweepAllStale(*p, "stale_timer", absl::StrCat("no End-of-RIB within stale_routes_time (", t, " s)"));
  });
  log::Info("neighbor %s: back after its restart: stale paths replaced as it announces them, the rest removed at its "
            "End-of-RIB (or in %d s)", peer.config().Name(), t);
}


void Speaker::FillGracefulRestart(const Peer& peer, control::v1::GracefulRestartStatus& out) const {
  const fsm::LocalSettings& local = peer.config().fsm.local;
  out.set_enabled(local.graceful_restart && local.graceful_restart_time > 0);
  out.set_restart_time(local.graceful_restart_time);
  out.set_stale_routes_time(peer.config().stale_routes_time_s);
  const fsm::RestartState r = RestartStateFor(peer);
  for (int f = 0; f < net::kFamilyCount; ++f) {
    const char* name = net::FamilyName(static_cast<net::Family>(f));
    if (out.enabled() && local.families[f] && local.graceful_restart_families[f]) {
      out.add_families(name);
      if (r.forwarding_preserved[f]) out.add_forwarding_preserved_sent(name);
    }
  }
  out.set_restart_state_sent(r.restarting && out.families_size() > 0);
  if (const auto& n = peer.negotiated(); n && peer.established()) {
    const fsm::PeerGracefulRestart& o = n->peer_graceful_restart;
    out.set_peer_offered(o.offered);
    out.set_peer_restart_state(o.restart_state);
    out.set_peer_notification(o.notification);
    out.set_peer_restart_time(o.restart_time);
    for (int f = 0; f < net::kFamilyCount; ++f) {
      const char* name = net::FamilyName(static_cast<net::Family>(f));
      if (o.families[f]) out.add_peer_families(name);
      if (o.families[f] && o.forwarding_preserved[f]) out.add_peer_forwarding_preserved(name);
      if (n->graceful_restart_retain[f]) out.add_retained(name);
    }
  }
  out.set_initial_advertisement_deferred(pipeline_->initial_deferred(peer.rib_index));
  if (peer.rib_index >= restart_.size()) return;
  const PeerRestart& gr = restart_[peer.rib_index];
  out.set_restarts(gr.restarts);
  out.set_stale_paths_removed(gr.removed);
  out.set_timers_expired(gr.timers_expired);
  if (!HasRestartStale(peer)) return;
  out.set_phase(gr.restarting ? "restarting" : "stale");
  out.set_deadline_unix_ms(gr.deadline_ms);
  uint64_t stale = 0;
  for (int f = 0; f < net::kFamilyCount; ++f) {
    const auto family = static_cast<net::Family>(f);
    if (pipeline_->stale_cause(peer.rib_index, family) != rib::StaleCause::kGracefulRestart) continue;
    stale += pipeline_->stale(peer.rib_index, family)->stale();
    out.add_stale_families(net::FamilyName(family));
  }
  out.set_stale_paths(stale);
}

}  // namespace bagd::daemon
