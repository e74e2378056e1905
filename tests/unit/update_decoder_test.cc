// UpdateDecoder (one session's UPDATEs into one kept message, the attributes decoded again
// only when their octets change) gives what DecodeMessage gives, message by message.
#include <catch2/catch.hpp>

#include "tests/unit/test_support.h"

using namespace bagd::wire;
using namespace bagd::net;
using bagd::test::Hex;
using bagd::test::RawUpdate;

namespace {

// The two decoders agree on `m`: the same error, or the same UPDATE.
void CheckSame(UpdateDecoder& decoder, const Bytes& m, const CodecContext& ctx) {
  INFO(bagd::test::ToHex(m));
  const auto kept = decoder.Decode(m, ctx);
  const auto fresh = DecodeMessage(m, ctx);
  REQUIRE(kept.ok() == fresh.ok());
  if (!kept.ok()) {
    CHECK(kept.error() == fresh.error());
    return;
  }
  CHECK(*kept.value() == std::get<UpdateMessage>(fresh.value()));
}

constexpr std::string_view kAttrs = "40 01 01 00  40 02 06 02 01 00 00 fd e9  40 03 04 c0 00 02 01";
constexpr std::string_view kMed1 = "80 04 04 00 00 00 01";
constexpr std::string_view kMed2 = "80 04 04 00 00 00 02";

Bytes Update(std::string_view nlri_hex, std::string_view extra = "") {
  return RawUpdate("", std::string(kAttrs) + " " + std::string(extra), nlri_hex);
}

}  // namespace

TEST_CASE("UpdateDecoder decodes a run of UPDATEs with the same attributes once", "[wire][update][decoder]") {
  UpdateDecoder d;
  const CodecContext ctx;
  for (const char* nlri : {"18 0a 00 01", "18 0a 00 02", "18 0a 00 03 18 0a 00 04", "18 0a 00 05"}) {
    CheckSame(d, Update(nlri, kMed1), ctx);
  }
  CHECK(d.attribute_decodes() == 1);
  CheckSame(d, Update("18 0a 00 06", kMed2), ctx);  // other octets
  CHECK(d.attribute_decodes() == 2);
  CheckSame(d, Update("18 0a 00 07", kMed1), ctx);
  CHECK(d.attribute_decodes() == 3);
  // The same octets without NLRI: NEXT_HOP is no longer mandatory, so they are decoded again.
  CheckSame(d, Update("", kMed1), ctx);
  CHECK(d.attribute_decodes() == 4);
  CheckSame(d, Update("18 0a 00 08", kMed1), ctx);
  CHECK(d.attribute_decodes() == 5);
  // Another context (a 2-octet AS session reads AS_PATH differently): decoded again.
  CodecContext two_octet;
  two_octet.four_octet_as = false;
  CheckSame(d, Update("18 0a 00 09", kMed1), two_octet);
  CHECK(d.attribute_decodes() == 6);
  CheckSame(d, Update("18 0a 00 0a", kMed1), ctx);
  CHECK(d.attribute_decodes() == 7);
  // Withdrawn routes and NLRI are the message's own each time.
  const auto w = d.Decode(RawUpdate("18 0a 00 0b", std::string(kAttrs) + " " + std::string(kMed1), ""), ctx);
  REQUIRE(w.ok());
  CHECK(w.value()->withdrawn.size() == 1);
  CHECK(w.value()->nlri.empty());
}

TEST_CASE("UpdateDecoder after malformed UPDATEs gives what DecodeMessage gives", "[wire][update][decoder]") {
  UpdateDecoder d;
  const CodecContext ctx;
  CheckSame(d, Update("18 0a 00 01", kMed1), ctx);
  // A malformed NLRI field (a /33): the attributes are not looked at, the next UPDATE with
  // the same ones still reuses them.
  CheckSame(d, Update("21 0a 00 01 01 01", kMed1), ctx);
  CheckSame(d, Update("18 0a 00 02", kMed1), ctx);
  CHECK(d.attribute_decodes() == 1);
  // RFC 7606 treat-as-withdraw (ORIGIN 5), twice: the same verdict and errors both times.
  const std::string bad_origin = "40 01 01 05  40 02 06 02 01 00 00 fd e9  40 03 04 c0 00 02 01";
  CheckSame(d, RawUpdate("", bad_origin, "18 0a 00 03"), ctx);
  const auto twice = d.Decode(RawUpdate("", bad_origin, "18 0a 00 04"), ctx);
  REQUIRE(twice.ok());
  CHECK(twice.value()->action == ErrorAction::kTreatAsWithdraw);
  CHECK_FALSE(twice.value()->errors.empty());
  CHECK(d.attribute_decodes() == 2);
  // A session-reset error in the attributes (an MP_REACH_NLRI too short for its AFI/SAFI): the kept
  // attributes are no longer what any octets decoded to, so the next UPDATE decodes its own.
  const Bytes overrun = RawUpdate("", std::string(kAttrs) + " 80 0e 02 00 01", "18 0a 00 05");
  REQUIRE_FALSE(DecodeMessage(overrun, ctx).ok());
  CheckSame(d, overrun, ctx);
  CheckSame(d, RawUpdate("", bad_origin, "18 0a 00 06"), ctx);
  CHECK(d.attribute_decodes() == 4);
  CheckSame(d, Update("18 0a 00 07", kMed1), ctx);
  // Header errors are DecodeMessage's.
  Bytes short_length = Update("18 0a 00 08", kMed1);
  short_length[17] -= 1;
  CheckSame(d, short_length, ctx);
  // Only UPDATEs.
  const auto keepalive = d.Decode(Hex("ffffffffffffffffffffffffffffffff 0013 04"), ctx);
  REQUIRE_FALSE(keepalive.ok());
  CHECK(keepalive.error().notification.code == 1);
  CHECK(keepalive.error().notification.subcode == header_error::kBadMessageType);
}

TEST_CASE("UpdateDecoder agrees with DecodeMessage on captured UPDATEs and their byte flips",
          "[wire][update][decoder][byteflip]") {
  size_t compared = 0;
  for (const auto& v : bagd::test::LoadWireVectors()) {
    INFO(v.name);
    UpdateDecoder d;  // one session's decoder, across the file
    for (const Bytes& orig : v.messages) {
      if (orig[18] != 2) continue;
      CheckSame(d, orig, v.ctx);
      for (size_t i = 19; i < orig.size(); ++i) {
        Bytes m = orig;
        m[i] ^= 0xff;
        CheckSame(d, m, v.ctx);     // after the original's attributes
        CheckSame(d, orig, v.ctx);  // after the flipped one's
        compared += 2;
      }
    }
  }
  CHECK(compared > 1000);
}
