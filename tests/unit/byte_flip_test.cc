// Flip every single byte of every captured UPDATE (x ^ 0xff) and check the verdict.
// Where the structure fixes the answer (header fields, attribute type codes, ORIGIN's
// value, field lengths that overrun) the exact NOTIFICATION or RFC 7606 action is
// asserted; everywhere else the decoder must return a well-formed verdict.
#include <catch2/catch.hpp>
#include <set>

#include "tests/unit/test_support.h"

using namespace bagd::wire;
using namespace bagd::net;

namespace {

struct AttrPos {
  size_t flags_at;
  uint8_t flags;
  uint8_t type;
  size_t value_at;
  size_t len;
};

std::vector<AttrPos> Layout(const Bytes& m, size_t& attrs_begin, size_t& attrs_len, size_t& wlen) {
  std::vector<AttrPos> out;
  wlen = (size_t{m[19]} << 8) | m[20];
  attrs_len = (size_t{m[21 + wlen]} << 8) | m[22 + wlen];
  attrs_begin = 23 + wlen;
  size_t p = attrs_begin;
  while (p < attrs_begin + attrs_len) {
    AttrPos a{p, m[p], m[p + 1], 0, 0};
    if (a.flags & attr_flag::kExtendedLength) {
      a.len = (size_t{m[p + 2]} << 8) | m[p + 3];
      a.value_at = p + 4;
    } else {
      a.len = m[p + 2];
      a.value_at = p + 3;
    }
    out.push_back(a);
    p = a.value_at + a.len;
  }
  return out;
}

const std::set<uint8_t> kUpdateSubcodes = {1, 2, 3, 4, 5, 6, 8, 9, 10, 11};

}  // namespace

TEST_CASE("Byte flips of captured UPDATEs give the expected verdicts", "[wire][byteflip]") {
  size_t flips = 0, exact = 0;
  for (const auto& v : bagd::test::LoadWireVectors()) {
    for (const Bytes& orig : v.messages) {
      if (orig[18] != 2 || orig.size() < 24) continue;
      size_t attrs_begin = 0, attrs_len = 0, wlen = 0;
      const auto layout = Layout(orig, attrs_begin, attrs_len, wlen);
      for (size_t i = 0; i < orig.size(); ++i) {
        Bytes m = orig;
        m[i] ^= 0xff;
        ++flips;
        INFO(v.name << " flip at " << i << " of " << bagd::test::ToHex(orig));
        const auto d = DecodeMessage(m, v.ctx);
        const NotificationMessage* n = d.ok() ? nullptr : &d.error().notification;
        if (i < 16) {
          REQUIRE(n);
          CHECK(*n == NotificationMessage{1, 1, {}});
          ++exact;
          continue;
        }
        if (i == 16 || i == 17) {
          REQUIRE(n);
          CHECK(n->code == 1);
          CHECK(n->subcode == 2);
          ++exact;
          continue;
        }
        if (i == 18) {
          REQUIRE(n);
          CHECK(*n == NotificationMessage{1, 3, {m[18]}});
          ++exact;
          continue;
        }
        if (i == 19 || i == 20) {
          const size_t new_wlen = (size_t{m[19]} << 8) | m[20];
          if (new_wlen + 2 > orig.size() - 21) {
            REQUIRE(n);
            CHECK(*n == NotificationMessage{3, 1, {}});
            ++exact;
            continue;
          }
        }
        if (i == 21 + wlen || i == 22 + wlen) {
          const size_t new_alen = (size_t{m[21 + wlen]} << 8) | m[22 + wlen];
          if (new_alen > orig.size() - attrs_begin) {
            REQUIRE(n);
            CHECK(*n == NotificationMessage{3, 1, {}});
            ++exact;
            continue;
          }
        }
        bool checked = false;
        for (const auto& a : layout) {
          if (i == a.flags_at + 1) {
            // Type code flipped to an unknown one (all known types are < 0xdf).
            if (!(a.flags & attr_flag::kOptional)) {
              REQUIRE(n);
              CHECK(n->code == 3);
              CHECK(n->subcode == 2);
              CHECK(n->data[1] == m[i]);
            } else {
              REQUIRE(d.ok());
              const auto& u = std::get<UpdateMessage>(d.value());
              bool kept = false;
              for (const auto& x : u.attrs.unknown) kept |= x.type == m[i];
              CHECK(kept);
            }
            checked = true;
          }
          if (a.type == 1 && i == a.value_at && a.len == 1) {
            // ORIGIN 0/1/2 → 0xff/0xfe/0xfd: undefined value, treat-as-withdraw.
            REQUIRE(d.ok());
            const auto& u = std::get<UpdateMessage>(d.value());
            CHECK(u.action == ErrorAction::kTreatAsWithdraw);
            REQUIRE_FALSE(u.errors.empty());
            CHECK(u.errors[0].subcode == update_error::kInvalidOrigin);
            checked = true;
          }
        }
        if (checked) {
          ++exact;
          continue;
        }
        // Everywhere else: a well-formed verdict.
        if (n) {
          CHECK(n->code == 3);
          CHECK(kUpdateSubcodes.count(n->subcode) == 1);
        } else {
          const auto& u = std::get<UpdateMessage>(d.value());
          ErrorAction worst = ErrorAction::kNone;
          for (const auto& e : u.errors) {
            CHECK(e.action != ErrorAction::kNone);
            CHECK(e.action != ErrorAction::kSessionReset);
            CHECK((e.subcode == 0 || kUpdateSubcodes.count(e.subcode) == 1));
            if (e.action > worst) worst = e.action;
          }
          CHECK(u.action == worst);
        }
      }
    }
  }
  CHECK(flips > 500);
  CHECK(exact > 100);
}
