// The weights stage: the RIB's change sets (rib::RouteChangeListener, the contract with the
// RIB) → next-hop groups with weights and hold-down (rib::NextHopGroupRegistry) → the FIB
// (rib::FibSink, the contract with fib_sync/). A burst of changes is batched for
// kWeightsBatchDelay, so a neighbor re-announcing many prefixes with a new bandwidth moves
// their group once; the hold-down's own timer re-runs the registry when a held weight is due.
// Time comes from the injected clock: the replay tests drive it by hand.
#pragma once

#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "bgpd/daemon/routing_metrics.h"
#include "bgpd/daemon/weight_events.h"
#include "bgpd/session/clock.h"
#include "rib/fib_update.h"
#include "rib/rib.h"
#include "rib/weights/nexthop_group_registry.h"

namespace bagd::daemon {

class WeightsStage final : public rib::RouteChangeListener {
 public:
  // `fib`: null computes and drops (no FIB backend); `metrics` (the weights stage's series of
  // RoutingMetrics) and `events` (WatchEvents: each weight change handed to the FIB, with its
  // cause) may be null.
  WeightsStage(const rib::Rib& rib, const rib::WeightsConfig& config, session::Clock& clock, rib::FibSink* fib,
               RoutingMetrics* metrics, control::EventSink* events = nullptr);

  void OnRouteChanges(std::span<const rib::RouteChange> changes) override;
  // The batch now, without waiting for its timer (the initial tables are in).
  void RunNow();
  // New damping, link-bandwidth policy or FIB limits (reload). `reweigh`: every route is
  // weighed again at once (an operator's change, not the network's: no hold-down).
  void Reconfigure(const rib::WeightsConfig& config, bool reweigh);
  // Local capacity (docs/capacity.md): the sources by index (names only added, indexes
  // stable) and which one each neighbor (by RIB index) is reached over. A change of the
  // latter re-resolves every route at once (an operator's change: no hold-down), without
  // touching a session.
  void SetLocalSources(std::vector<std::string> names, rib::LocalSourceOfPeer by_peer);
  // A source's capacity after its own hold-down (LocalCapacity): its groups are re-weighed.
  void SetLocalCapacity(int16_t index, double bps);

  const rib::NextHopGroupRegistry& groups() const { return groups_; }
  // Told each batch's prefixes once the registry has weighed them (BMP's Loc-RIB: the
  // bandwidth applied to each member, docs/bmp.md); may be empty. Not told of in-place
  // re-weighs (a hold-down expiring, a local capacity change).
  void set_weighed_observer(std::function<void(std::span<const rib::MembersView>)> f) { weighed_ = std::move(f); }
  rib::FibSink* fib() const { return fib_; }

 private:
  void Run();
  // The gone prefixes so far (a session loss: they have no route at all any more) through
  // the registry now, as one slice of their own; those that came back meanwhile wait for Run.
  // The FIB update waits for Run too (the hold timer runs the batch first if it is due
  // before: gone_unpublished_).
  void RunGone();
  // pending_ merged into one sorted run, each prefix once.
  void CompactPending();
  void ReweighAll();  // every route's members again, at once (no hold-down)
  // Early reweight: one slice of a due check of a group's prefixes (docs/weights.md).
  bool RunCheckSlice();  // false: no check was due
  // Publish, then Rearm.
  void FlushFib(WeightEventReporter::Context context);
  // Hands the registry's FIB update on (and to the weight events, as caused by `context`).
  void Publish(WeightEventReporter::Context context);
  // Metrics, and the hold-down timer for the registry's next due time.
  void Rearm();
  void RefreshMetrics();
  absl::Time Now() const { return absl::FromUnixMillis(clock_.WallMs()); }

  const rib::Rib& rib_;
  std::function<void(std::span<const rib::MembersView>)> weighed_;
  session::Clock& clock_;
  rib::FibSink* fib_;
  RoutingMetrics* metrics_;
  std::optional<WeightEventReporter> events_;
  rib::NextHopGroupRegistry groups_;
  // Changed since the last batch, may repeat. A deque: it grows without copying itself
  // (no old and new array at once) and gives its blocks back as the batch takes them.
  std::deque<net::Prefix> pending_;
  std::vector<size_t> runs_;           // where each sorted run of pending_ starts
  // Changed to no route at all since the last batch, may repeat. A full table going (a
  // session loss) is taken in slices of these as it comes, not in one batch: a gone prefix
  // leaves its group whatever the others do, so taking it early changes nothing for it, and
  // the batch's ~60 bytes a prefix are held for a slice only. The routes end the same as
  // with one batch; which group serves them may not: the group a gone prefix leaves is then
  // judged on the prefixes it keeps (re-keyed in place if those all change alike, from its
  // current state even if it was following an early reweight, where one batch holding both
  // would have split them off), and a group the slices deleted is not there for others
  // moving to its key to join (they re-key in place, their own damping state).
  std::vector<net::Prefix> gone_;
  size_t compact_at_ = 65536;  // pending_'s size that merges it (CompactPending)
  bool gone_unpublished_ = false;  // RunGone changed the registry since the last Run
  rib::MembersBatch batch_;            // storage kept between batches
  rib::LocalSourceOfPeer local_;       // each neighbor's local capacity source
  std::unique_ptr<session::Timer> batch_timer_;
  std::unique_ptr<session::Timer> hold_timer_;
  bool scheduled_ = false;
};

}  // namespace bagd::daemon
