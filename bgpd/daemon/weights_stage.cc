#include "bgpd/daemon/weights_stage.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "bgpd/session/log.h"

namespace bagd::daemon {

namespace {
// A burst of UPDATEs (a peer re-announcing its routes with a new bandwidth) arrives within
// microseconds; one batch makes it one group operation instead of a route move per message.
constexpr auto kWeightsBatchDelay = std::chrono::milliseconds(2);
// Prefixes per slice of an early-reweight check (a few milliseconds of work): the sessions
// are served between slices, so the check runs at about the ingest rate.
constexpr size_t kCheckSlice = 16384;
// Gone prefixes taken as one slice (WeightsStage::gone_): a few MB of batch at a time.
constexpr size_t kGoneSlice = 65536;
// pending_ is merged down to each prefix once when it reaches this (or a quarter more than
// it held after the last merge): several neighbors going at once change the same prefixes
// each. The merge then joins a quarter's new runs to one sorted run: its buffer is the
// quarter (std::inplace_merge takes the shorter side).
constexpr size_t kCompactAt = 65536;
}  // namespace

WeightsStage::WeightsStage(const rib::Rib& rib, const rib::WeightsConfig& config, session::Clock& clock,
                           rib::FibSink* fib, RoutingMetrics* metrics, control::EventSink* events)
    : rib_(rib),
      clock_(clock),
      fib_(fib),
      metrics_(metrics),
      groups_(config),
      batch_timer_(clock.NewTimer()),
      hold_timer_(clock.NewTimer()) {
  groups_.set_fib_tracking(fib_ != nullptr);
  if (fib_ != nullptr) fib_->SetGroupLimit(groups_.config().budget.max_groups);  // the FIB's own cap
  if (events != nullptr) events_.emplace(events);
}

void WeightsStage::OnRouteChanges(std::span<const rib::RouteChange> changes) {
  if (changes.empty()) return;
  // Each change set is in table order: the batch is a list of sorted runs, merged later. A
  // set that continues the previous run in order extends it.
  bool first = true;
  for (const auto& c : changes) {
    if (c.new_multipath.empty()) {
      gone_.push_back(c.prefix);
      continue;
    }
    if (first && (pending_.empty() || net::InTableOrder(c.prefix, pending_.back()))) runs_.push_back(pending_.size());
    first = false;
    pending_.push_back(c.prefix);
  }
  if (gone_.size() >= kGoneSlice) RunGone();
  if (pending_.size() >= compact_at_) {
    CompactPending();
    compact_at_ = std::max(kCompactAt, pending_.size() + pending_.size() / 4);
  }
  if (scheduled_) return;
  scheduled_ = true;
  batch_timer_->Start(kWeightsBatchDelay, [this] {
    scheduled_ = false;
    Run();
  });
}

void WeightsStage::RunNow() {
  if (!scheduled_) return;
  batch_timer_->Stop();
  scheduled_ = false;
  Run();
}

void WeightsStage::RunGone() {
  std::sort(gone_.begin(), gone_.end(), net::InTableOrder);
  gone_.erase(std::unique(gone_.begin(), gone_.end()), gone_.end());
  bool back = false;  // a prefix that has a route again: to the next batch, as any change
  batch_.Reserve(gone_.size());
  for (const net::Prefix& prefix : gone_) {
    if (rib::HasMembers(rib_, prefix)) {
      if (!back) runs_.push_back(pending_.size());  // one more sorted run
      back = true;
      pending_.push_back(prefix);
      continue;
    }
    batch_.Add(rib_, prefix, local_);
  }
  gone_.clear();
  if (batch_.size() == 0) return;
  groups_.Update(batch_.View(), Now());
  batch_.Clear();
  // The FIB hears of it with the batch (Run): a group whose every route goes is then
  // deleted with its routes in one update, which the kernel takes in one pass over its
  // table (docs/fib.md); a slice's deletes on their own would be one operation a route.
  // (The hold timer runs the batch first if it fires before.)
  gone_unpublished_ = true;
}

void WeightsStage::CompactPending() {
  // Each changed prefix once, in table order (deterministic group ids for the same input;
  // in-order RIB lookups): the sorted runs merged pairwise, n log(runs) instead of a sort.
  auto& v = pending_;
  std::vector<size_t>& runs = runs_;
  runs.push_back(v.size());
  if (runs.size() > 64) {  // many short runs: a sort is cheaper than the merge passes
    std::sort(v.begin(), v.end(), net::InTableOrder);
    runs.clear();
  }
  while (runs.size() > 2) {
    std::vector<size_t> merged;
    for (size_t i = 0; i + 1 < runs.size(); i += 2) {
      merged.push_back(runs[i]);
      if (i + 2 < runs.size()) {
        std::inplace_merge(v.begin() + static_cast<ptrdiff_t>(runs[i]), v.begin() + static_cast<ptrdiff_t>(runs[i + 1]),
                           v.begin() + static_cast<ptrdiff_t>(runs[i + 2]), net::InTableOrder);
      }  // else an odd run out, to the end: merged in the next pass
    }
    merged.push_back(v.size());
    runs = std::move(merged);
  }
  runs.clear();
  v.erase(std::unique(v.begin(), v.end()), v.end());
  if (!v.empty()) runs.push_back(0);  // one sorted run
}

void WeightsStage::Run() {
  // The gone prefixes left over are changes like the others (one batch decides the same).
  if (!gone_.empty()) {
    std::sort(gone_.begin(), gone_.end(), net::InTableOrder);
    runs_.push_back(pending_.size());
    pending_.insert(pending_.end(), gone_.begin(), gone_.end());
    gone_.clear();
    if (gone_.capacity() > 2 * kGoneSlice) gone_.shrink_to_fit();
  }
  CompactPending();
  runs_.clear();
  compact_at_ = kCompactAt;
  // The members as the RIB has them now (the change set said where to look; reading them
  // here, not carrying them in the batch, keeps a full-table batch at ~40 bytes a prefix).
  batch_.Reserve(pending_.size());
  while (!pending_.empty()) {  // each block given back once taken: before the registry's own peak
    batch_.Add(rib_, pending_.front(), local_);
    pending_.pop_front();
  }
  pending_.shrink_to_fit();
  if (runs_.capacity() > 4096) runs_.shrink_to_fit();
  groups_.Update(batch_.View(), Now());
  if (weighed_) weighed_(batch_.View());
  batch_.Clear();
  gone_unpublished_ = false;
  FlushFib(WeightEventReporter::Context::kRouteChanges);
}

bool WeightsStage::RunCheckSlice() {
  std::optional<rib::CheckSlice> slice = groups_.TakeCheckSlice(Now(), kCheckSlice);
  if (!slice) return false;
  // The members as the RIB has them now, as a batch reads them.
  for (const net::Prefix& prefix : slice->prefixes) batch_.Add(rib_, prefix, local_);
  groups_.Check(slice->group, batch_.View(), Now());
  batch_.Clear();
  return true;
}

void WeightsStage::Reconfigure(const rib::WeightsConfig& config, bool reweigh) {
  RunNow();
  groups_.Reconfigure(config, Now());
  // The FIB's own cap before the update the new limit causes: a lower one only deletes, a
  // higher one lets the creates through.
  if (fib_ != nullptr) fib_->SetGroupLimit(groups_.config().budget.max_groups);
  if (reweigh) ReweighAll();
  FlushFib(WeightEventReporter::Context::kReload);
}

void WeightsStage::ReweighAll() {
  rib::MembersBatch all;
  rib_.ForEach([&](const net::Prefix& prefix, const rib::Destination&) { all.Add(rib_, prefix, local_); });
  groups_.Update(all.View(), Now(), /*immediate=*/true);
  if (weighed_) weighed_(all.View());
}

void WeightsStage::SetLocalSources(std::vector<std::string> names, rib::LocalSourceOfPeer by_peer) {
  // Trailing "none" entries say nothing: compare without them.
  while (!by_peer.empty() && by_peer.back() < 0) by_peer.pop_back();
  groups_.SetLocalSources(std::move(names));  // same index, same name: values kept
  if (by_peer == local_) return;
  RunNow();
  local_ = std::move(by_peer);
  ReweighAll();
  FlushFib(WeightEventReporter::Context::kReload);  // a neighbor moved to another source by a reload
}

void WeightsStage::SetLocalCapacity(int16_t index, double bps) {
  RunNow();
  groups_.SetLocalCapacity(index, bps);
  FlushFib(WeightEventReporter::Context::kLocalCapacity);
}

void WeightsStage::FlushFib(WeightEventReporter::Context context) {
  Publish(context);
  Rearm();
}

void WeightsStage::Publish(WeightEventReporter::Context context) {
  for (const std::string& n : groups_.TakeNotices()) log::Warning("%s", n);
  const rib::FibUpdate u = groups_.TakeFibUpdate();
  if (!u.empty()) {
    log::Debug("fib: %d group upserts, %d route upserts, %d route deletes, %d group deletes", u.group_upserts.size(),
               u.route_upserts.size(), u.route_deletes.size(), u.group_deletes.size());
    for (const rib::FibGroup& g : u.group_upserts) {
      std::string members;
      for (const auto& m : g.members) absl::StrAppend(&members, members.empty() ? "" : " ", m.next_hop.ToString(), "*", m.weight);
      log::Debug("fib: group %d = %s", g.id, members);
    }
    if (fib_ != nullptr) fib_->Apply(u);
    if (events_) events_->Report(u, groups_, context, clock_.WallMs());
  }
}

void WeightsStage::Rearm() {
  RefreshMetrics();
  if (auto due = groups_.NextDue()) {
    // Rounded up to the clock's millisecond: the timer fires at the due time, never before
    // it (a wait cut down to whole milliseconds would fire early, find nothing due, and
    // re-arm). A timer that fires early anyway (the wall clock stepped) re-arms the same way.
    const absl::Duration wait = std::max(*due - Now(), absl::ZeroDuration());
    hold_timer_->Start(absl::ToChronoMilliseconds(absl::Ceil(wait, absl::Milliseconds(1))), [this] {
      // Gone slices the registry took are published with their batch, not by this timer.
      if (gone_unpublished_) RunNow();
      groups_.Expire(Now());
      Publish(WeightEventReporter::Context::kHoldDownExpiry);
      if (RunCheckSlice()) Publish(WeightEventReporter::Context::kEarlyCheck);
      Rearm();
    });
  } else {
    hold_timer_->Stop();
  }
}

void WeightsStage::RefreshMetrics() {
  if (!metrics_) return;
  const rib::WeightCounters& c = groups_.counters();
  metrics_->NextHopGroups().Set(static_cast<double>(groups_.group_count()));
  metrics_->QuantizationMaxError().Set(groups_.max_error());
  metrics_->LocalCapacityCappedMembers().Set(static_cast<double>(groups_.local_capped_members()));
  for (int16_t i = 0; const rib::LocalLink* l = groups_.local_link(i); ++i) {
    if (l->known) metrics_->LocalCapacity(l->name).Set(l->bps);
  }
  auto sync = [](prometheus::Counter& counter, uint64_t value) {
    const double delta = static_cast<double>(value) - counter.Value();
    if (delta > 0) counter.Increment(delta);
  };
  sync(metrics_->WeightChanges("applied"), c.applied);
  sync(metrics_->WeightChanges("held"), c.held);
  sync(metrics_->WeightChanges("suppressed"), c.suppressed);
  sync(metrics_->FibOperations("group"), c.group_updates);
  sync(metrics_->FibOperations("route"), c.route_updates);
  sync(metrics_->EarlyReweight("followed"), c.early_reweights);
  sync(metrics_->EarlyReweight("checked"), c.early_checked);
  sync(metrics_->EarlyReweight("moved"), c.early_moved);
  sync(metrics_->EarlyReweight("reverted"), c.early_reverted);
  if (const rib::GroupBudget* b = groups_.budget()) {
    const rib::GroupBudgetTotals t = b->Totals();
    metrics_->GroupBudget("limit").Set(b->config().max_groups);
    metrics_->GroupBudget("wanted").Set(static_cast<double>(t.wanted));
    metrics_->GroupBudget("installed").Set(static_cast<double>(t.installed));
    metrics_->GroupBudget("merged").Set(static_cast<double>(t.merged));
    metrics_->GroupBudget("merged_prefixes").Set(static_cast<double>(t.merged_prefixes));
    metrics_->GroupBudget("unrouted_prefixes").Set(static_cast<double>(t.unrouted_prefixes));
    metrics_->GroupBudget("merge_worst_error").Set(t.worst_error);
    metrics_->GroupBudget("merge_weighted_error").Set(t.weighted_error);
    sync(metrics_->GroupBudgetRouteMoves(), t.route_moves);
    sync(metrics_->GroupBudgetSwaps(), t.swaps);
  }
}

}  // namespace bagd::daemon
