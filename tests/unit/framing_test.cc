#include <catch2/catch.hpp>

#include "wire/message.h"
#include "tests/unit/test_support.h"

using namespace bagd::wire;
using namespace bagd::net;
using bagd::test::Hex;

TEST_CASE("NextFrame splits a stream without reading past a message", "[wire][framing]") {
  const CodecContext ctx;
  const Bytes ka = *EncodeMessage(KeepaliveMessage{}, ctx);
  const Bytes n = *EncodeMessage(NotificationMessage{6, 2, {}}, ctx);
  Bytes stream = ka;
  stream.insert(stream.end(), n.begin(), n.end());

  SECTION("byte by byte: need-more until exactly the message is there") {
    for (size_t i = 0; i < ka.size(); ++i) {
      const Frame f = NextFrame(ByteSpan(stream).first(i), ctx);
      REQUIRE(f.kind == Frame::kNeedMore);
      CHECK(f.size == 19);
    }
    const Frame f = NextFrame(ByteSpan(stream).first(19), ctx);
    CHECK(f.kind == Frame::kMessage);
    CHECK(f.size == 19);
  }
  SECTION("two messages back to back") {
    Frame f = NextFrame(stream, ctx);
    REQUIRE(f.kind == Frame::kMessage);
    CHECK(f.size == 19);
    f = NextFrame(ByteSpan(stream).subspan(19), ctx);
    REQUIRE(f.kind == Frame::kMessage);
    CHECK(f.size == n.size());
  }
  SECTION("partial second message asks for its full length") {
    const Frame f = NextFrame(ByteSpan(stream).subspan(19, 20), ctx);
    CHECK(f.kind == Frame::kNeedMore);
    CHECK(f.size == n.size());
  }
}

TEST_CASE("Header errors: marker, length, type", "[wire][framing]") {
  const CodecContext ctx;
  SECTION("a bad marker is caught before the header is complete → 1/1") {
    const Bytes b = Hex("ffff00");
    const Frame f = NextFrame(b, ctx);
    REQUIRE(f.kind == Frame::kError);
    CHECK(f.error.notification == NotificationMessage{1, 1, {}});
  }
  SECTION("length below 19 → 1/2 with the length") {
    const Frame f = NextFrame(Hex("ffffffffffffffffffffffffffffffff 0012 04"), ctx);
    REQUIRE(f.kind == Frame::kError);
    CHECK(f.error.notification == NotificationMessage{1, 2, {0x00, 0x12}});
  }
  SECTION("length above 4096 → 1/2") {
    const Frame f = NextFrame(Hex("ffffffffffffffffffffffffffffffff 1001 02"), ctx);
    REQUIRE(f.kind == Frame::kError);
    CHECK(f.error.notification == NotificationMessage{1, 2, {0x10, 0x01}});
  }
  SECTION("up to 65535 for UPDATE after RFC 8654, never for OPEN/KEEPALIVE") {
    CodecContext ext;
    ext.extended_message = true;
    CHECK(NextFrame(Hex("ffffffffffffffffffffffffffffffff ffff 02"), ext).kind == Frame::kNeedMore);
    CHECK(NextFrame(Hex("ffffffffffffffffffffffffffffffff 1001 01"), ext).kind == Frame::kError);
  }
  SECTION("unknown type → 1/3 with the type") {
    const Frame f = NextFrame(Hex("ffffffffffffffffffffffffffffffff 0013 06"), ctx);
    REQUIRE(f.kind == Frame::kError);
    CHECK(f.error.notification == NotificationMessage{1, 3, {0x06}});
  }
  SECTION("per-type minimum lengths → 1/2") {
    for (const char* h : {"0014 04", "001c 01", "0016 02", "0014 03", "0016 05"}) {
      const Frame f = NextFrame(Hex(std::string("ffffffffffffffffffffffffffffffff ") + h), ctx);
      INFO(h);
      REQUIRE(f.kind == Frame::kError);
      CHECK(f.error.notification.code == 1);
      CHECK(f.error.notification.subcode == 2);
    }
  }
  SECTION("DecodeMessage checks the length against what it was given") {
    Bytes ka = *EncodeMessage(KeepaliveMessage{}, ctx);
    ka.push_back(0);
    auto d = DecodeMessage(ka, ctx);
    REQUIRE_FALSE(d.ok());
    CHECK(d.error().notification.subcode == 2);
  }
}
