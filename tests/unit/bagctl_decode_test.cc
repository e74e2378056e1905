#include <catch2/catch.hpp>
#include <sstream>

#include "nlohmann/json.hpp"
#include "tests/unit/test_support.h"
#include "tools/bagctl/decode_command.h"

using namespace bagd;
using nlohmann::json;

namespace {

// UPDATE: ORIGIN igp, AS_PATH 65001, NEXT_HOP 10.0.0.1, LB 10G transitive AS 65001, NLRI 10.1.1.0/24 10.1.2.0/24.
constexpr const char* kLbUpdate =
    "ffffffffffffffffffffffffffffffff 003e 02 0000 001f 40010100 400206020100 00fde9 400304 0a000001"
    " c01008 0004fde94e9502f9 18 0a0101 18 0a0102";

struct Run {
  int code;
  std::string out, err;
};

Run Decode(std::vector<std::string> args, const std::string& stdin_text = "") {
  std::istringstream in(stdin_text);
  std::ostringstream out, err;
  const int code = bagctl::RunDecode(args, in, out, err);
  return {code, out.str(), err.str()};
}

}  // namespace

TEST_CASE("bagctl decode: hex in many shapes", "[bagctl][decode]") {
  SECTION("spaces, colons, 0x and comments are fine") {
    auto b = bagctl::ParseHex("# captured by tshark\n0xff:ff ff,ff\nFF");
    REQUIRE(b.ok());
    CHECK(b->size() == 5);
  }
  SECTION("bad characters are reported with their line") {
    auto b = bagctl::ParseHex("ffff\nfz");
    REQUIRE_FALSE(b.ok());
    CHECK(std::string(b.status().message()).find("line 2") != std::string::npos);
  }
  SECTION("odd digit count") { CHECK_FALSE(bagctl::ParseHex("fff").ok()); }
  SECTION("messages without the marker, several back to back") {
    // KEEPALIVE without marker, then the LB UPDATE with it, then KEEPALIVE without.
    const Run r = Decode({"0013 04", kLbUpdate, "001304"});
    CHECK(r.code == bagctl::kExitOk);
    CHECK(r.out.find("#1 KEEPALIVE") != std::string::npos);
    CHECK(r.out.find("(marker added)") != std::string::npos);
    CHECK(r.out.find("#2 UPDATE") != std::string::npos);
    CHECK(r.out.find("#3 KEEPALIVE") != std::string::npos);
  }
  SECTION("stdin when no argument is given") {
    const Run r = Decode({"--json"}, std::string(kLbUpdate) + "\n");
    CHECK(r.code == bagctl::kExitOk);
    CHECK(json::parse(r.out)["messages"].size() == 1);
  }
}

TEST_CASE("bagctl decode --json: stable fields, link bandwidth visible", "[bagctl][decode]") {
  const Run r = Decode({"--json", kLbUpdate});
  REQUIRE(r.code == bagctl::kExitOk);
  const json doc = json::parse(r.out);
  CHECK(doc["malformed"] == false);
  const json& m = doc["messages"][0];
  CHECK(m["type"] == "UPDATE");
  CHECK(m["verdict"]["action"] == "none");
  const json& a = m["update"]["attributes"];
  CHECK(a["origin"] == "igp");
  CHECK(a["as_path"]["string"] == "65001");
  CHECK(a["next_hop"] == "10.0.0.1");
  const json& lb = a["extended_communities"][0]["link_bandwidth"];
  CHECK(lb["asn"] == 65001);
  CHECK(lb["transitive"] == true);
  CHECK(lb["bits_per_second"].get<double>() == Approx(10e9));
  CHECK(a["link_bandwidth"]["selected"]["bytes_per_second"].get<double>() == Approx(1.25e9));
  CHECK(m["update"]["nlri"][0]["prefix"] == "10.1.1.0/24");
  CHECK(m["update"]["nlri"].size() == 2);
}

TEST_CASE("bagctl decode: a malformed message prints its verdict and fails", "[bagctl][decode]") {
  SECTION("session reset shows the NOTIFICATION") {
    const Run r = Decode({"--json", "ffffffffffffffffffffffffffffffff 0013 09"});
    CHECK(r.code == bagctl::kExitMalformed);
    const json v = json::parse(r.out)["messages"][0]["verdict"];
    CHECK(v["action"] == "session-reset");
    CHECK(v["notification"]["code"] == 1);
    CHECK(v["notification"]["subcode"] == 3);
    CHECK(v["notification"]["data"] == "09");
  }
  SECTION("treat-as-withdraw shows the RFC 7606 errors") {
    std::string bad = kLbUpdate;
    bad.replace(bad.find("40010100"), 8, "40010107");  // ORIGIN 7
    const Run r = Decode({bad});
    CHECK(r.code == bagctl::kExitMalformed);
    CHECK(r.out.find("verdict: treat-as-withdraw") != std::string::npos);
    CHECK(r.out.find("Invalid ORIGIN Attribute (3/6)") != std::string::npos);
  }
  SECTION("truncated input is reported") {
    const Run r = Decode({"ffffffffffffffffffffffffffffffff 0030 02 0000"});
    CHECK(r.code == bagctl::kExitMalformed);
    CHECK(r.out.find("only") != std::string::npos);
  }
  SECTION("usage errors exit 2") {
    CHECK(Decode({"--bogus", kLbUpdate}).code == bagctl::kExitUsage);
    CHECK(Decode({"zz"}).code == bagctl::kExitUsage);
    CHECK(Decode({}, "").code == bagctl::kExitUsage);
    CHECK(Decode({"--add-path=ipx", kLbUpdate}).code == bagctl::kExitUsage);
  }
}

TEST_CASE("bagctl decode: context flags change the decode", "[bagctl][decode]") {
  // Same bytes: AS_PATH of two 2-octet ASNs, or one 4-octet ASN.
  const std::string hex =
      "ffffffffffffffffffffffffffffffff 002f 02 0000 0014 40010100 400206 0202 fde9 fdea 400304 0a000001 180a0101";
  const Run two = Decode({"--two-octet-as", "--json", hex});
  REQUIRE(two.code == bagctl::kExitOk);
  CHECK(json::parse(two.out)["messages"][0]["update"]["attributes"]["as_path"]["string"] == "65001 65002");
  const Run four = Decode({"--json", hex});
  CHECK(four.code == bagctl::kExitMalformed);  // a segment of two 4-octet ASNs overruns
  const Run ebgp = Decode({"--ebgp", "--two-octet-as",
                           "ffffffffffffffffffffffffffffffff 0036 02 0000 001b 40010100 400206 0202 fde9 fdea 400304 "
                           "0a000001 400504 00000064 180a0101"});
  CHECK(ebgp.out.find("LOCAL_PREF received from an eBGP peer") != std::string::npos);
}

TEST_CASE("bagctl decode: every captured vector decodes through the CLI path", "[bagctl][decode]") {
  for (const auto& v : test::LoadWireVectors()) {
    std::string hex;
    for (const auto& m : v.messages) hex += test::ToHex(m) + "\n";
    std::string trailing;
    auto d = bagctl::DecodeHexInput(hex, v.ctx, &trailing);
    REQUIRE(d.ok());
    CHECK(trailing.empty());
    CHECK(d->size() == v.messages.size());
    for (const auto& m : *d) {
      CHECK_FALSE(m.malformed());
      CHECK_FALSE(bagctl::MessageToJson(m, v.ctx).dump().empty());
    }
  }
}

TEST_CASE("bagctl decode --json survives bytes that are not UTF-8", "[bagctl][decode]") {
  // OPEN with an FQDN capability whose hostname is "a\xff" (found by the fuzzer).
  const Run r = Decode({"--json", "ffffffffffffffffffffffffffffffff 0025 01 04 fde9 00b4 01010101 08 02 06 49 04 02 61 ff 00"});
  REQUIRE(r.code == bagctl::kExitOk);
  const json doc = json::parse(r.out);
  CHECK(doc["messages"][0]["open"]["capabilities"][0]["name"] == "fqdn");
  CHECK(doc["messages"][0]["open"]["capabilities"][0]["hostname"] == "a\xef\xbf\xbd");  // U+FFFD
}
