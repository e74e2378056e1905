// RFC 5880 §4.1 control packets: (bytes, value) pairs both ways, and each reception check of
// §6.8.6 that the codec makes, with the reason it reports.
#include <catch2/catch.hpp>

#include "bfd/packet.h"

namespace bagd::bfd {
namespace {

// FRR bfdd's packet in state Down to a new peer: diag 0, Down, mult 3, my 0x00000001,
// your 0, 300 ms / 300 ms / echo 50 ms (FRR's defaults).
const std::vector<uint8_t> kFrrDown = {0x20, 0x40, 0x03, 0x18, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00,
                                       0x00, 0x04, 0x93, 0xe0, 0x00, 0x04, 0x93, 0xe0, 0x00, 0x00, 0xc3, 0x50};

TEST_CASE("bfd packet: decodes a Down packet field by field", "[bfd][packet]") {
  auto p = Decode(kFrrDown);
  REQUIRE(p.ok());
  CHECK(p->state == State::kDown);
  CHECK(p->diag == Diag::kNone);
  CHECK(p->detect_mult == 3);
  CHECK(p->my_discriminator == 1);
  CHECK(p->your_discriminator == 0);
  CHECK(p->desired_min_tx_us == 300000);
  CHECK(p->required_min_rx_us == 300000);
  CHECK(p->required_min_echo_rx_us == 50000);
  CHECK_FALSE(p->poll);
  CHECK_FALSE(p->final);
  CHECK(Encode(*p) == kFrrDown);
}

TEST_CASE("bfd packet: every flag and field round-trips", "[bfd][packet]") {
  ControlPacket p;
  p.diag = Diag::kControlDetectionTimeExpired;
  p.state = State::kUp;
  p.poll = true;
  p.control_plane_independent = true;
  p.demand = true;
  p.detect_mult = 255;
  p.my_discriminator = 0xdeadbeef;
  p.your_discriminator = 0x01020304;
  p.desired_min_tx_us = 50000;
  p.required_min_rx_us = 0xffffffff;
  const auto bytes = Encode(p);
  REQUIRE(bytes.size() == 24);
  CHECK(bytes[0] == 0x21);
  CHECK(bytes[1] == (0xc0 | 0x20 | 0x08 | 0x02));
  CHECK(bytes[3] == 24);
  auto back = Decode(bytes);
  REQUIRE(back.ok());
  CHECK(*back == p);
  p.poll = false;
  p.final = true;
  auto f = Decode(Encode(p));
  REQUIRE(f.ok());
  CHECK(f->final);
  CHECK_FALSE(f->poll);
}

TEST_CASE("bfd packet: extra octets after Length are ignored", "[bfd][packet]") {
  auto bytes = kFrrDown;
  bytes.push_back(0xff);
  bytes.push_back(0xff);
  CHECK(Decode(bytes).ok());
}

struct BadCase {
  const char* what;
  std::function<void(std::vector<uint8_t>&)> mutate;
  DropReason reason;
};

TEST_CASE("bfd packet: reception checks drop with their reason", "[bfd][packet]") {
  const std::vector<BadCase> cases = {
      {"empty", [](auto& b) { b.clear(); }, DropReason::kShort},
      {"23 octets", [](auto& b) { b.resize(23); }, DropReason::kShort},
      {"version 0", [](auto& b) { b[0] = 0x00; }, DropReason::kBadVersion},
      {"version 2", [](auto& b) { b[0] = 0x40; }, DropReason::kBadVersion},
      {"version 7", [](auto& b) { b[0] = 0xe0; }, DropReason::kBadVersion},
      {"length 23", [](auto& b) { b[3] = 23; }, DropReason::kBadLength},
      {"length 0", [](auto& b) { b[3] = 0; }, DropReason::kBadLength},
      {"length past the payload", [](auto& b) { b[3] = 48; }, DropReason::kShort},
      {"multiplier 0", [](auto& b) { b[2] = 0; }, DropReason::kZeroMultiplier},
      {"multipoint", [](auto& b) { b[1] |= 0x01; }, DropReason::kMultipoint},
      {"my discriminator 0", [](auto& b) { b[7] = 0; }, DropReason::kZeroMyDiscriminator},
      {"your discriminator 0 in Up", [](auto& b) { b[1] = 0xc0; }, DropReason::kYourDiscriminatorZero},
      {"your discriminator 0 in Init", [](auto& b) { b[1] = 0x80; }, DropReason::kYourDiscriminatorZero},
      {"authentication, length 24", [](auto& b) { b[1] |= 0x04; }, DropReason::kBadLength},
      {"authentication, length 26",
       [](auto& b) {
         b[1] |= 0x04;
         b[3] = 26;
         b.push_back(1);
         b.push_back(2);
       },
       DropReason::kAuthNotSupported},
  };
  for (const auto& c : cases) {
    INFO(c.what);
    auto bytes = kFrrDown;
    c.mutate(bytes);
    DropReason reason = DropReason::kNone;
    auto p = Decode(bytes, &reason);
    CHECK_FALSE(p.ok());
    CHECK(reason == c.reason);
    CHECK(std::string(ReasonLabel(reason)) != "?");
  }
}

TEST_CASE("bfd packet: your discriminator 0 is fine in Down and AdminDown", "[bfd][packet]") {
  auto bytes = kFrrDown;
  bytes[1] = 0x00;  // AdminDown
  CHECK(Decode(bytes).ok());
}

TEST_CASE("bfd packet: names of states and diagnostics", "[bfd][packet]") {
  CHECK(std::string(StateName(State::kAdminDown)) == "AdminDown");
  CHECK(std::string(StateName(State::kUp)) == "Up");
  CHECK(std::string(DiagName(Diag::kControlDetectionTimeExpired)) == "control detection time expired");
  CHECK(std::string(DiagName(Diag::kNeighborSignaledSessionDown)) == "neighbor signaled session down");
  CHECK(std::string(DiagName(static_cast<Diag>(31))) == "unassigned");
}

}  // namespace
}  // namespace bagd::bfd
