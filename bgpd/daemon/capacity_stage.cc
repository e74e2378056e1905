#include "bgpd/daemon/capacity_stage.h"

#include "absl/strings/str_cat.h"
#include "bgpd/session/log.h"
#include "conf/rate_text.h"
#include "wire/link_bandwidth.h"

namespace bagd::daemon {


absl::StatusOr<std::vector<fib::CapacitySourceSpec>> CapacitySources(const config::v1::Config& config) {
  std::vector<fib::CapacitySourceSpec> out;
  for (const auto& c : config.capacity_sources()) {
    fib::CapacitySourceSpec s;
    s.name = c.name();
    s.bond = c.bond();
    s.members.assign(c.members().begin(), c.members().end());
    if (!c.member_speed().empty()) {
      auto r = conf::ParseRate(c.member_speed());
      if (!r.ok()) return absl::InvalidArgumentError(absl::StrCat("capacity source ", c.name(), ": ", r.status().message()));
      s.member_speed_bps = *r;
    }
    out.push_back(std::move(s));
  }
  return out;
}

CapacityStage::CapacityStage(boost::asio::io_context& io, CapacityInput& input, std::vector<fib::CapacitySourceSpec> sources)
    : io_(io), input_(input), tracker_(std::move(sources)), timer_(io) {}

CapacityStage::~CapacityStage() {
  if (events_) events_->release();  // the watcher closes its own socket
}

absl::Status CapacityStage::Start() {
  auto w = fib::LinkWatcher::Open();
  if (!w.ok()) return w.status();
  watcher_ = std::move(*w);
  auto cb = [this](const fib::LinkState& l, bool deleted) { OnLink(l, deleted); };
  if (auto st = watcher_->Dump(cb); !st.ok()) return st;
  for (const auto& s : tracker_.sources()) {
    const double bps = tracker_.Capacity(s.name);
    hold_[s.name] = rib::MemberHoldDown(bps);
    Publish(s.name);
    input_.ObserveLocalCapacity(s.name, bps);  // damped there, on the pipeline's clock
  }
  started_ = true;
  events_ = std::make_unique<boost::asio::posix::stream_descriptor>(io_, watcher_->fd());
  WaitLinks();
  return absl::OkStatus();
}

void CapacityStage::WaitLinks() {
  events_->async_wait(boost::asio::posix::stream_descriptor::wait_read, [this](const boost::system::error_code& ec) {
    if (ec) return;
    watcher_->Read([this](const fib::LinkState& l, bool deleted) { OnLink(l, deleted); });
    WaitLinks();
  });
}

void CapacityStage::OnLink(const fib::LinkState& state, bool deleted) {
  fib::LinkState link = state;
  // ethtool only for (possible) members: listed ones, and any enslaved link (its bond may
  // come later in the dump).
  if (!deleted && (link.master != 0 || tracker_.IsMember(link))) link.speed_bps = watcher_->Speed(link.name);
  const auto changed = deleted ? tracker_.Remove(link.ifindex) : tracker_.Update(link);
  if (!started_) return;
  for (const std::string& s : changed) Observe(s);
}

void CapacityStage::SetMicroBfd(const std::string& source, const std::vector<std::string>& members,
                                bool require_up) {
  const auto changed = tracker_.SetMicroBfd(source, members, require_up);
  if (!started_) return;
  for (const std::string& s : changed) Observe(s);
}

void CapacityStage::SetMemberLiveness(const std::string& source, const std::string& member,
                                      fib::BfdLiveness liveness) {
  const auto changed = tracker_.SetLiveness(source, member, liveness);
  if (!started_) return;
  for (const std::string& s : changed) Observe(s);
}

bool CapacityStage::MemberCounted(const std::string& source, const std::string& member) const {
  for (const auto& m : tracker_.Members(source)) {
    if (m.name == member) return m.up;
  }
  return false;
}

void CapacityStage::Observe(const std::string& source) {
  const double bps = tracker_.Capacity(source);
  size_t up = 0;
  const auto members = tracker_.Members(source);
  std::string bfd_down;  // members whose carrier is up but whose micro-BFD says no
  for (const auto& m : members) {
    up += m.up;
    if (m.link_up && !m.up) absl::StrAppend(&bfd_down, bfd_down.empty() ? "" : ", ", m.name);
  }
  const rib::DampingConfig& damping = input_.damping();
  rib::MemberHoldDown& h = hold_[source];
  const rib::HoldDownOutcome o = h.Observe(bps, absl::Now(), damping);
  log::Info("capacity %s: %d of %d members up, %s%s%s", source, up, members.size(), wire::FormatBitsPerSecond(bps),
            bfd_down.empty() ? std::string() : absl::StrCat(" (micro-BFD down: ", bfd_down, ")"),
            o == rib::HoldDownOutcome::kHeld        ? absl::StrCat(" (held until the hold-down ends)")
            : o == rib::HoldDownOutcome::kSuppressed ? std::string(" (below min_change_percent: not advertised)")
                                                     : std::string());
  if (o == rib::HoldDownOutcome::kApplied || o == rib::HoldDownOutcome::kCancelled) Publish(source);
  Arm();
  // As a weight input of the neighbors reached over it (their own hold-down, same rules).
  input_.ObserveLocalCapacity(source, bps);
}

void CapacityStage::Arm() {
  std::optional<absl::Time> due;
  for (const auto& [name, h] : hold_) {
    if (h.state() != rib::HoldDownState::kStable && (!due || h.due() < *due)) due = h.due();
  }
  if (!due) {
    timer_.cancel();
    return;
  }
  timer_.expires_after(absl::ToChronoMilliseconds(std::max(*due - absl::Now(), absl::ZeroDuration())) +
                       std::chrono::milliseconds(1));
  timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec) return;
    const absl::Time now = absl::Now();
    for (auto& [name, h] : hold_) {
      if (h.Expire(now)) Publish(name);
    }
    Arm();
  });
}

void CapacityStage::Publish(const std::string& source) {
  const double bps = hold_[source].applied();
  input_.SetOriginatedBandwidth(source, bps);
}

}  // namespace bagd::daemon
