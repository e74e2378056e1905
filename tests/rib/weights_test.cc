// The pure parts of the weights stage: bandwidth per member under each policy, the hold-down
// of one member, and which link bandwidth goes out to a neighbor.
#include <catch2/catch.hpp>

#include "rib/attribute_store.h"
#include "rib/weights/hold_down.h"
#include "rib/weights/link_bandwidth_export.h"
#include "rib/weights/member_bandwidth.h"

namespace bagd::rib {
namespace {

net::IpAddress A(const char* s) { return *net::IpAddress::Parse(s); }
MemberInput M(const char* nh, std::optional<double> bps) {
  MemberInput m{A(nh), std::nullopt};
  if (bps) m.link_bandwidth = wire::LinkBandwidth::FromBitsPerSecond(65001, *bps, true);
  return m;
}
std::vector<double> Bps(const ResolvedBandwidths& r) {
  std::vector<double> out;
  for (const auto& m : r.members) out.push_back(m.bps);
  return out;
}

TEST_CASE("bandwidth per member under each policy", "[weights]") {
  BandwidthPolicy p;
  SECTION("every path carries LB: its value, sorted by next hop") {
    // Values a float32 of bytes/s holds exactly (8 and 32 Gbit/s).
    const std::vector<MemberInput> in = {M("10.0.0.3", 3.2e10), M("10.0.0.1", 8e9), M("10.0.0.2", 8e9)};
    const auto r = ResolveBandwidths(in, p);
    REQUIRE(r.members.size() == 3);
    CHECK(r.members[0].next_hop == A("10.0.0.1"));
    CHECK(r.members[2].next_hop == A("10.0.0.3"));
    CHECK(Bps(r) == std::vector<double>{8e9, 8e9, 3.2e10});
    CHECK(r.members[2].source == BandwidthSource::kCommunity);
  }
  const std::vector<MemberInput> mixed = {M("10.0.0.1", 1e9), M("10.0.0.2", 2e9), M("10.0.0.3", std::nullopt)};
  SECTION("some lack LB, equal cost (default): equal at the largest advertised value") {
    const auto r = ResolveBandwidths(mixed, p);
    CHECK(Bps(r) == std::vector<double>{2e9, 2e9, 2e9});
    CHECK(r.members[0].source == BandwidthSource::kEqualCost);
  }
  SECTION("skip: members without LB carry nothing") {
    p.missing = MissingBandwidth::kSkip;
    const auto r = ResolveBandwidths(mixed, p);
    CHECK(Bps(r) == std::vector<double>{1e9, 2e9, 0});
    CHECK(r.members[2].source == BandwidthSource::kSkipped);
  }
  SECTION("skip with no LB at all: equal cost") {
    p.missing = MissingBandwidth::kSkip;
    const std::vector<MemberInput> none = {M("10.0.0.1", std::nullopt), M("10.0.0.2", std::nullopt)};
    const auto r = ResolveBandwidths(none, p);
    CHECK(Bps(r) == std::vector<double>{1, 1});
  }
  SECTION("default weight: the configured bandwidth") {
    p.missing = MissingBandwidth::kDefaultWeight;
    p.default_bps = 5e8;
    const auto r = ResolveBandwidths(mixed, p);
    CHECK(Bps(r) == std::vector<double>{1e9, 2e9, 5e8});
    CHECK(r.members[2].source == BandwidthSource::kDefault);
  }
  SECTION("ignore: equal") {
    p.use_link_bandwidth = false;
    const auto r = ResolveBandwidths(mixed, p);
    CHECK(Bps(r) == std::vector<double>{2e9, 2e9, 2e9});
  }
  SECTION("zero drains a member; all zero falls back to equal weights") {
    const std::vector<MemberInput> one = {M("10.0.0.1", 0), M("10.0.0.2", 1e9)};
    auto r = ResolveBandwidths(one, p);
    CHECK(Bps(r) == std::vector<double>{0, 1e9});
    CHECK(r.members[0].source == BandwidthSource::kDrained);
    CHECK_FALSE(r.all_drained);
    const std::vector<MemberInput> all = {M("10.0.0.1", 0), M("10.0.0.2", 0)};
    r = ResolveBandwidths(all, p);
    CHECK(r.all_drained);
    CHECK(Bps(r) == std::vector<double>{1, 1});
  }
  SECTION("two paths over one next hop are one member with the sum") {
    const std::vector<MemberInput> twice = {M("10.0.0.1", 1e9), M("10.0.0.1", 3e9), M("10.0.0.2", 4e9)};
    const auto r = ResolveBandwidths(twice, p);
    CHECK(Bps(r) == std::vector<double>{4e9, 4e9});
  }
}

TEST_CASE("hold-down of one member", "[weights][hold-down]") {
  DampingConfig c;  // defaults: decrease 0, increase 30 s, 5 %, max 600 s, half-life 300 s
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  MemberHoldDown h(100);
  SECTION("a decrease applies at once, an increase after 30 s") {
    CHECK(h.Observe(50, t0, c) == HoldDownOutcome::kApplied);
    CHECK(h.applied() == 50);
    CHECK(h.Observe(100, t0 + absl::Seconds(1), c) == HoldDownOutcome::kHeld);
    CHECK(h.state() == HoldDownState::kPendingIncrease);
    CHECK(h.due() == t0 + absl::Seconds(31));
    CHECK_FALSE(h.Expire(t0 + absl::Seconds(30)));
    CHECK(h.Expire(t0 + absl::Seconds(31)));
    CHECK(h.applied() == 100);
  }
  SECTION("every change restarts the wait of an increase; no new penalty within one wait") {
    h.Observe(50, t0, c);
    h.Observe(80, t0 + absl::Seconds(1), c);
    h.Observe(100, t0 + absl::Seconds(20), c);
    CHECK(h.due() == t0 + absl::Seconds(50));
    CHECK(h.Penalty(t0 + absl::Seconds(20), c) == Approx(std::exp2(-19.0 / 300)));
  }
  SECTION("decrease_delay: the first deadline holds") {
    c.decrease_delay = absl::Seconds(10);
    CHECK(h.Observe(50, t0, c) == HoldDownOutcome::kHeld);
    CHECK(h.Observe(40, t0 + absl::Seconds(5), c) == HoldDownOutcome::kHeld);
    CHECK(h.due() == t0 + absl::Seconds(10));
    CHECK(h.Expire(t0 + absl::Seconds(10)));
    CHECK(h.applied() == 40);
  }
  SECTION("small changes are suppressed, measured against the applied value") {
    CHECK(h.Observe(96, t0, c) == HoldDownOutcome::kSuppressed);
    CHECK(h.Observe(97, t0, c) == HoldDownOutcome::kSuppressed);
    CHECK(h.Observe(94, t0, c) == HoldDownOutcome::kApplied);
    CHECK(h.applied() == 94);
  }
  SECTION("the penalty halves every half-life and the hold-down is capped") {
    c.max_hold_down = absl::Seconds(100);
    h.Observe(50, t0, c);
    h.Observe(100, t0, c);  // p = 1
    h.Observe(50, t0, c);
    h.Observe(100, t0, c);  // p = 2
    h.Observe(50, t0, c);
    h.Observe(100, t0, c);  // p = 3 -> 120 s, capped at 100 s
    CHECK(h.Penalty(t0, c) == Approx(3.0));
    CHECK(h.due() == t0 + absl::Seconds(100));
    CHECK(h.Penalty(t0 + absl::Seconds(300), c) == Approx(1.5));
    // p = 0.75 after two half-lives: below 1, so the base hold-down again
    CHECK(h.IncreaseHoldDown(t0 + absl::Seconds(600), c) == absl::Seconds(30));
  }
  SECTION("a reload re-times what is pending from when it was seen") {
    h.Observe(50, t0, c);
    h.Observe(100, t0, c);
    DampingConfig longer = c;
    longer.increase_hold_down = absl::Seconds(90);
    h.Reconfigure(c, longer);
    CHECK(h.due() == t0 + absl::Seconds(90));
  }
}

TEST_CASE("hold-down of a new member: it settles until its first decrease", "[weights][hold-down]") {
  DampingConfig c;  // new_path_settle 10 s
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  MemberHoldDown h(100, t0);
  SECTION("increases within the window apply at once, with no penalty") {
    CHECK(h.Settling(t0 + absl::Seconds(1), c));
    CHECK(h.Observe(250, t0 + absl::Seconds(1), c) == HoldDownOutcome::kApplied);
    CHECK(h.Observe(260, t0 + absl::Seconds(2), c) == HoldDownOutcome::kApplied);  // even a small one
    CHECK(h.applied() == 260);
    CHECK(h.state() == HoldDownState::kStable);
    CHECK(h.Penalty(t0 + absl::Seconds(2), c) == 0);
  }
  SECTION("after the window an increase is held") {
    CHECK_FALSE(h.Settling(t0 + absl::Seconds(10), c));
    CHECK(h.Observe(250, t0 + absl::Seconds(10), c) == HoldDownOutcome::kHeld);
    CHECK(h.due() == t0 + absl::Seconds(40));
  }
  SECTION("the first decrease ends it: the return is a recovery") {
    CHECK(h.Observe(50, t0 + absl::Seconds(1), c) == HoldDownOutcome::kApplied);
    CHECK_FALSE(h.Settling(t0 + absl::Seconds(2), c));
    CHECK(h.Observe(100, t0 + absl::Seconds(2), c) == HoldDownOutcome::kHeld);
    CHECK(h.Penalty(t0 + absl::Seconds(2), c) == Approx(1.0));
  }
  SECTION("a change of unit keeps the settling; 0 turns it off; a member that may not settle") {
    h.Restart(300);
    CHECK(h.applied() == 300);
    CHECK(h.Settling(t0 + absl::Seconds(1), c));
    DampingConfig off = c;
    off.new_path_settle = absl::ZeroDuration();
    CHECK_FALSE(h.Settling(t0 + absl::Seconds(1), off));
    MemberHoldDown flapped(100);
    CHECK(flapped.Observe(250, t0, c) == HoldDownOutcome::kHeld);
  }
}

std::optional<wire::LinkBandwidth> Lb(double bps, bool transitive = true, uint32_t asn = 65002) {
  return wire::LinkBandwidth::FromBitsPerSecond(asn, bps, transitive);
}

TEST_CASE("link bandwidth sent to a neighbor", "[weights][export]") {
  LinkBandwidthExport e;
  const std::vector<std::optional<wire::LinkBandwidth>> all = {Lb(1e9), Lb(2e9), Lb(3e9)};
  const std::vector<std::optional<wire::LinkBandwidth>> some = {Lb(1e9), std::nullopt};
  SECTION("auto: the sum when we are the next hop and every path has one") {
    auto lb = ExportLinkBandwidth(e, all, false, 65000);
    REQUIRE(lb);
    CHECK(lb->bits_per_second() == Approx(6e9));
    CHECK(lb->asn() == 65000);
    CHECK(lb->transitive());
    CHECK_FALSE(ExportLinkBandwidth(e, some, false, 65000));
    // next hop unchanged (iBGP): the best path's value as received
    lb = ExportLinkBandwidth(e, some, true, 65000);
    REQUIRE(lb);
    CHECK(lb->asn() == 65002);
  }
  SECTION("cumulative: all or nothing; large sums stay right") {
    e.mode = LinkBandwidthExportMode::kCumulative;
    const std::vector<std::optional<wire::LinkBandwidth>> big = {Lb(8e11), Lb(8e11), Lb(8e11), Lb(8e11)};
    auto lb = ExportLinkBandwidth(e, big, false, 65000);
    REQUIRE(lb);
    CHECK(lb->bits_per_second() == Approx(3.2e12));
    CHECK_FALSE(ExportLinkBandwidth(e, some, true, 65000));
  }
  SECTION("pass, none, fixed, num-multipaths, non-transitive, AS_TRANS") {
    e.mode = LinkBandwidthExportMode::kPass;
    CHECK_FALSE(ExportLinkBandwidth(e, all, false, 65000));
    CHECK(ExportLinkBandwidth(e, all, true, 65000)->bits_per_second() == Approx(1e9));
    e.mode = LinkBandwidthExportMode::kNone;
    CHECK_FALSE(ExportLinkBandwidth(e, all, true, 65000));
    e.mode = LinkBandwidthExportMode::kFixed;
    e.fixed_bps = 4e11;
    e.transitive = false;
    auto lb = ExportLinkBandwidth(e, some, false, 4200000000u);
    REQUIRE(lb);
    CHECK(lb->bits_per_second() == Approx(4e11));
    CHECK_FALSE(lb->transitive());
    CHECK(lb->asn() == wire::kAsTrans);
    e.mode = LinkBandwidthExportMode::kNumMultipaths;
    e.reference_bps = 1e6;
    CHECK(ExportLinkBandwidth(e, all, false, 65000)->bits_per_second() == Approx(3e6));
  }
}

TEST_CASE("re-advertisement damping of bandwidth", "[weights][export]") {
  LinkBandwidthExport e;  // 5 %, 5 s
  using D = BandwidthReadvertisement;
  using V = D::Verdict;
  D d;
  AdjRibOut out;
  AdjRibOut::Entry& entry = *out.TryEmplace(*net::Prefix::Parse("10.0.0.0/24")).first;
  uint32_t& state = entry.readvertisement;  // the prefix's word in its Adj-RIB-Out entry
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  CHECK(d.Check(state, 100e9, 97e9, t0, e).verdict == V::kSuppress);
  CHECK(d.Check(state, 100e9, 50e9, t0, e).verdict == V::kSend);
  d.Sent(out, entry, t0);
  CHECK(D::Tracked(state));
  auto second = d.Check(state, 50e9, 100e9, t0 + absl::Seconds(2), e);
  CHECK(second.verdict == V::kDefer);
  CHECK(second.not_before == t0 + absl::Seconds(5));
  CHECK(d.Check(state, 50e9, 100e9, t0 + absl::Seconds(5), e).verdict == V::kSend);
  CHECK_FALSE(D::Tracked(state));  // a quiet prefix is forgotten
  CHECK(state == 0);
  CHECK(d.Check(state, 0, 1e9, t0, e).verdict == V::kSend);  // from nothing is never small
  // The word holds times before 1970 (a manual clock) and far ahead.
  d.Sent(out, entry, absl::FromUnixSeconds(-5));
  const auto early = d.Check(state, 50e9, 100e9, absl::FromUnixSeconds(-1), e);
  CHECK(early.verdict == V::kDefer);
  CHECK(early.not_before == absl::FromUnixSeconds(0));
  CHECK(d.Check(state, 50e9, 100e9, absl::FromUnixSeconds(0), e).verdict == V::kSend);
  const absl::Time late = absl::FromUnixSeconds(40'000'000'000);  // the year 3237
  d.Sent(out, entry, late);
  const auto far = d.Check(state, 50e9, 100e9, late + absl::Seconds(1), e);
  CHECK(far.verdict == V::kDefer);
  CHECK(far.not_before == late + absl::Seconds(5));
}

TEST_CASE("re-advertisement damping: deferred prefixes come back in table order, once", "[weights][export]") {
  LinkBandwidthExport e;  // 5 %, 5 s
  BandwidthReadvertisement d;
  AdjRibOut out;
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  using V = BandwidthReadvertisement::Verdict;
  auto entry = [&](const char* n) -> AdjRibOut::Entry& { return *out.TryEmplace(*net::Prefix::Parse(n)).first; };
  auto state = [&](const char* n) -> uint32_t& { return entry(n).readvertisement; };
  auto tracked = [&] {
    size_t n = 0;
    out.ForEach([&](const net::Prefix&, const AdjRibOut::Entry& x) { n += BandwidthReadvertisement::Tracked(x.readvertisement); });
    return n;
  };
  const char* names[] = {"10.0.2.0/24", "2001:db8::/32", "10.0.1.0/24", "10.0.0.0/16"};
  for (const char* n : names) d.Sent(out, entry(n), t0);
  state("10.9.0.0/24");  // an entry with no state of its own
  CHECK(tracked() == 4);
  CHECK_FALSE(d.has_deferred());
  CHECK(d.TakeDeferred(out).empty());
  for (const char* n : names) {
    const auto r = d.Check(state(n), 100e9, 50e9, t0 + absl::Seconds(1), e);
    REQUIRE(r.verdict == V::kDefer);
    CHECK(r.not_before == t0 + absl::Seconds(5));
    d.Defer(state(n), *net::Prefix::Parse(n));
    d.Defer(state(n), *net::Prefix::Parse(n));  // twice: still once
  }
  CHECK(d.has_deferred());
  // A deferred prefix whose interval ended is forgotten but stays deferred.
  CHECK(d.Check(state("10.0.1.0/24"), 100e9, 50e9, t0 + absl::Seconds(5), e).verdict ==
        V::kSend);
  CHECK(tracked() == 3);
  // A deferred prefix withdrawn meanwhile takes its mark with it.
  out.Erase(*net::Prefix::Parse("10.0.0.0/16"));
  std::vector<std::string> got;
  for (const auto& p : d.TakeDeferred(out)) got.push_back(p.ToString());
  CHECK(got == std::vector<std::string>{"10.0.1.0/24", "10.0.2.0/24", "2001:db8::/32"});
  CHECK_FALSE(d.has_deferred());
  CHECK(d.TakeDeferred(out).empty());
  CHECK(tracked() == 2);  // the marks are gone, the times stay
  CHECK(d.Check(state("10.0.2.0/24"), 100e9, 50e9, t0 + absl::Seconds(2), e).verdict ==
        V::kDefer);
  // A prefix deferred without a time of its own (after its interval) is sent the next time.
  d.Defer(state("10.0.1.0/24"), *net::Prefix::Parse("10.0.1.0/24"));
  CHECK(d.TakeDeferred(out).size() == 1);
  CHECK(d.Check(state("10.0.1.0/24"), 100e9, 50e9, t0 + absl::Seconds(6), e).verdict ==
        V::kSend);
  d.Sent(out, entry("10.0.1.0/24"), t0 + absl::Seconds(6));
  CHECK(tracked() == 3);
  d.Defer(state("10.0.2.0/24"), *net::Prefix::Parse("10.0.2.0/24"));
  out.clear();
  d.Clear();
  CHECK_FALSE(d.has_deferred());
  CHECK(d.TakeDeferred(out).empty());
}

TEST_CASE("re-advertisement damping: times and marks survive the move to a new epoch", "[weights][export]") {
  // The words hold 12.4 days of milliseconds; a time past that moves every word to an epoch
  // centred on it. A time still within an interval keeps its exact deadline, a mark stays.
  LinkBandwidthExport e;  // 5 %, 5 s
  using V = BandwidthReadvertisement::Verdict;
  BandwidthReadvertisement d;
  AdjRibOut out;
  const net::Prefix a = *net::Prefix::Parse("10.0.1.0/24"), b = *net::Prefix::Parse("10.0.2.0/24"),
                     c = *net::Prefix::Parse("2001:db8::/32");
  const absl::Time t0 = absl::FromUnixSeconds(1'800'000'000) + absl::Milliseconds(7);
  const absl::Duration half = absl::Milliseconds(BandwidthReadvertisement::kSpanMs / 2);
  d.Sent(out, *out.TryEmplace(c).first, t0);  // the first time: the epoch is centred on it
  const absl::Time t1 = t0 + half - absl::Seconds(1);  // the last second of the span
  d.Sent(out, *out.TryEmplace(a).first, t1);
  d.Defer(out.Find(c)->readvertisement, c);
  d.Sent(out, *out.TryEmplace(b).first, t1 + absl::Seconds(2));  // past it: a new epoch
  auto check = [&](const net::Prefix& p, absl::Time now) {
    return d.Check(out.Find(p)->readvertisement, 100e9, 50e9, now, e);
  };
  const auto da = check(a, t1 + absl::Seconds(3));
  CHECK(da.verdict == V::kDefer);
  CHECK(da.not_before == t1 + absl::Seconds(5));
  const auto db = check(b, t1 + absl::Seconds(3));
  CHECK(db.verdict == V::kDefer);
  CHECK(db.not_before == t1 + absl::Seconds(7));
  // c's time lay 6.2 days back: forgotten, its mark kept.
  CHECK_FALSE(BandwidthReadvertisement::Tracked(out.Find(c)->readvertisement));
  CHECK(check(c, t1 + absl::Seconds(3)).verdict == V::kSend);
  CHECK(d.TakeDeferred(out) == std::vector<net::Prefix>{c});
  CHECK(check(a, t1 + absl::Seconds(5)).verdict == V::kSend);
  // The clock stepped back by days: a new epoch again, the times far from it forgotten.
  d.Sent(out, *out.Find(a), t0 - absl::Hours(24 * 30));
  CHECK_FALSE(BandwidthReadvertisement::Tracked(out.Find(b)->readvertisement));
  CHECK(check(a, t0 - absl::Hours(24 * 30) + absl::Seconds(1)).verdict == V::kDefer);
}

TEST_CASE("Adj-RIB-Out: entries share numbered attribute sets, freed with their last entry", "[rib][adj-rib-out]") {
  AttributeStore store;
  auto attrs = [&](uint32_t med) {
    wire::PathAttributes x;
    x.med = med;
    return store.Intern(x);
  };
  AdjRibOut out;
  const AttrRef m1 = attrs(1), m2 = attrs(2);
  std::vector<net::Prefix> ps;
  for (int i = 0; i < 6; ++i) {
    const uint8_t bytes[4] = {10, 0, uint8_t(i), 0};
    ps.push_back(net::Prefix::Make(net::Afi::kIpv4, bytes, 24));
  }
  for (int i = 0; i < 6; ++i) {
    auto [e, added] = out.TryEmplace(ps[i]);
    CHECK(added);
    CHECK_FALSE(out.attrs(*e));  // none yet
    out.SetAttrs(*e, i % 2 ? m2 : m1);
  }
  CHECK(out.sets() == 2);
  CHECK(out.attrs(*out.Find(ps[3])) == m2);
  CHECK(sizeof(AdjRibOut::Entry) == 8);
  // The last user of a set goes: its number is reused by the next new set.
  out.SetAttrs(*out.Find(ps[1]), m1);
  CHECK(out.Erase(ps[3]));
  CHECK_FALSE(out.Erase(ps[3]));
  CHECK(out.sets() == 2);
  out.SetAttrs(*out.Find(ps[5]), m1);
  CHECK(out.sets() == 1);
  const AttrRef m3 = attrs(3);
  out.SetAttrs(*out.Find(ps[0]), m3);
  CHECK(out.sets() == 2);
  CHECK(out.attrs(*out.Find(ps[0])) == m3);
  CHECK(out.attrs(*out.Find(ps[1])) == m1);
  out.SetAttrs(*out.Find(ps[2]), AttrRef());  // none
  CHECK_FALSE(out.attrs(*out.Find(ps[2])));
  size_t with = 0;
  out.ForEach([&](const net::Prefix&, const AdjRibOut::Entry& e) { with += static_cast<bool>(out.attrs(e)); });
  CHECK(with == 4);
  // Everything the table held goes with it: the store frees the sets no one else holds.
  out.SetAttrs(*out.Find(ps[4]), attrs(4));  // held by the table alone
  const size_t before = store.size();
  out.clear();
  CHECK(out.empty());
  CHECK(out.sets() == 0);
  CHECK(store.size() == before - 1);  // m1, m2 and m3 are still held here
}

TEST_CASE("re-advertisement damping: many deferred prefixes, found by their marks", "[weights][export]") {
  // A prefix deferred, withdrawn and announced again is listed twice and taken once; past
  // the list's length the marks are found by walking the table, with the same result.
  const size_t n = GENERATE(size_t{10}, BandwidthReadvertisement::kListedMax + 10);
  BandwidthReadvertisement d;
  AdjRibOut out;
  std::vector<net::Prefix> prefixes;
  for (size_t i = 0; i < n; ++i) {
    const uint8_t b[4] = {10, uint8_t(i >> 8), uint8_t(i), 0};
    prefixes.push_back(net::Prefix::Make(net::Afi::kIpv4, b, 24));
  }
  std::vector<net::Prefix> reversed(prefixes.rbegin(), prefixes.rend());
  for (const auto& p : reversed) d.Defer(out.TryEmplace(p).first->readvertisement, p);
  out.Erase(prefixes[3]);
  d.Defer(out.TryEmplace(prefixes[3]).first->readvertisement, prefixes[3]);
  out.Erase(prefixes[5]);  // gone with its mark
  std::vector<net::Prefix> want = prefixes;
  want.erase(want.begin() + 5);
  CHECK(d.TakeDeferred(out) == want);
  CHECK(d.TakeDeferred(out).empty());
  out.ForEach([&](const net::Prefix&, const AdjRibOut::Entry& e) { CHECK(e.readvertisement == 0); });
}

}  // namespace
}  // namespace bagd::rib
