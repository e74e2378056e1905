#include "rib/weights/link_bandwidth_export.h"

#include <algorithm>

#include <cmath>

namespace bagd::rib {

const char* LinkBandwidthExportModeName(LinkBandwidthExportMode m) {
  switch (m) {
    case LinkBandwidthExportMode::kAuto: return "auto";
    case LinkBandwidthExportMode::kNone: return "none";
    case LinkBandwidthExportMode::kPass: return "pass";
    case LinkBandwidthExportMode::kFixed: return "fixed";
    case LinkBandwidthExportMode::kCumulative: return "cumulative";
    case LinkBandwidthExportMode::kNumMultipaths: return "num-multipaths";
  }
  return "?";
}

namespace {

std::optional<double> Cumulative(std::span<const std::optional<wire::LinkBandwidth>> multipath) {
  if (multipath.empty()) return std::nullopt;
  double sum = 0;
  for (const auto& lb : multipath) {
    if (!lb) return std::nullopt;  // RFC 10005 practice (FRR, IOS-XR): all or nothing
    sum += lb->bits_per_second();
  }
  return sum;
}

std::optional<wire::LinkBandwidth> Pass(std::span<const std::optional<wire::LinkBandwidth>> multipath,
                                        bool next_hop_unchanged) {
  // A bandwidth describes the link to the next hop; with another next hop it would lie.
  if (!next_hop_unchanged || multipath.empty()) return std::nullopt;
  return multipath.front();
}

}  // namespace

std::optional<wire::LinkBandwidth> ExportLinkBandwidth(const LinkBandwidthExport& config,
                                                       std::span<const std::optional<wire::LinkBandwidth>> multipath,
                                                       bool next_hop_unchanged, uint32_t local_as) {
  auto make = [&](double bps) { return wire::LinkBandwidth::FromBitsPerSecond(local_as, bps, config.transitive); };
  switch (config.mode) {
    case LinkBandwidthExportMode::kNone:
      return std::nullopt;
    case LinkBandwidthExportMode::kPass:
      return Pass(multipath, next_hop_unchanged);
    case LinkBandwidthExportMode::kFixed:
      return make(config.fixed_bps);
    case LinkBandwidthExportMode::kCumulative:
      if (auto sum = Cumulative(multipath)) return make(*sum);
      return std::nullopt;
    case LinkBandwidthExportMode::kNumMultipaths:
      if (multipath.empty()) return std::nullopt;
      return make(static_cast<double>(multipath.size()) * config.reference_bps);
    case LinkBandwidthExportMode::kAuto:
      if (!next_hop_unchanged) {
        if (auto sum = Cumulative(multipath)) return make(*sum);
      }
      return Pass(multipath, next_hop_unchanged);
  }
  return std::nullopt;
}

BandwidthReadvertisement::Decision BandwidthReadvertisement::Check(uint32_t& state, double old_bps, double new_bps,
                                                                   absl::Time now,
                                                                   const LinkBandwidthExport& config) const {
  if (old_bps > 0 && std::abs(new_bps - old_bps) * 100.0 < config.readvertise_threshold_percent * old_bps) {
    return {Verdict::kSuppress, absl::InfinitePast()};
  }
  if (!Tracked(state)) return {Verdict::kSend, absl::InfinitePast()};
  const absl::Time allowed = absl::FromUnixMillis(epoch_ms_ + (state >> 2)) + config.readvertise_interval;
  if (now >= allowed) {
    state &= kDeferred;  // quiet for an interval: forget the time (a mark stays)
    return {Verdict::kSend, absl::InfinitePast()};
  }
  return {Verdict::kDefer, allowed};
}

void BandwidthReadvertisement::Sent(AdjRibOut& out, AdjRibOut::Entry& e, absl::Time now) {
  const int64_t now_ms = absl::ToUnixMillis(now);
  if (!has_epoch_ || now_ms < epoch_ms_ || now_ms - epoch_ms_ >= kSpanMs) Rebase(out, now_ms);
  e.readvertisement = static_cast<uint32_t>(now_ms - epoch_ms_) << 2 | kHasTime | (e.readvertisement & kDeferred);
}

void BandwidthReadvertisement::Rebase(AdjRibOut& out, int64_t now_ms) {
  const int64_t from = epoch_ms_, to = now_ms - kSpanMs / 2;
  if (has_epoch_) {
    out.ForEach([&](const net::Prefix&, AdjRibOut::Entry& e) {
      if (!Tracked(e.readvertisement)) return;
      const int64_t at = from + (e.readvertisement >> 2) - to;
      e.readvertisement &= kDeferred;
      if (at >= 0 && at < kSpanMs) e.readvertisement |= static_cast<uint32_t>(at) << 2 | kHasTime;
    });
  }
  epoch_ms_ = to;
  has_epoch_ = true;
}

void BandwidthReadvertisement::Defer(uint32_t& state, const net::Prefix& prefix) {
  if (state & kDeferred) return;
  state |= kDeferred;
  ++deferred_;
  if (!listed_all_) return;
  if (listed_.size() < kListedMax) {
    listed_.push_back(prefix);
  } else {
    listed_all_ = false;
    std::vector<net::Prefix>().swap(listed_);
  }
}

std::vector<net::Prefix> BandwidthReadvertisement::TakeDeferred(AdjRibOut& out) {
  std::vector<net::Prefix> taken;
  if (deferred_ > 0) {
    taken.reserve(std::min(deferred_, out.size()));
    auto take = [&](const net::Prefix& prefix, AdjRibOut::Entry& e) {
      if ((e.readvertisement & kDeferred) == 0) return;  // withdrawn meanwhile, or listed twice
      taken.push_back(prefix);
      e.readvertisement &= ~kDeferred;
    };
    if (listed_all_) {
      std::sort(listed_.begin(), listed_.end(), net::InTableOrder);
      for (const net::Prefix& p : listed_) {
        if (AdjRibOut::Entry* e = out.Find(p)) take(p, *e);
      }
    } else {
      out.ForEach(take);
    }
  }
  Clear();
  return taken;
}

void BandwidthReadvertisement::Clear() {
  deferred_ = 0;
  listed_.clear();
  listed_all_ = true;
}

}  // namespace bagd::rib
