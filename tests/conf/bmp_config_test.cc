// bmp.station validation: every mistake located at the field that made it (file:line:col).
#include <catch2/catch.hpp>

#include "conf/config_loader.h"
#include "tests/conf/conf_test_support.h"

namespace bagd::conf {
using testing::Located;
using testing::WithRouter;

TEST_CASE("bmp stations: a valid one loads, mistakes are located", "[conf][bmp]") {
  SECTION("valid, defaults left out") {
    const LoadedConfig loaded =
        ParseConfig(WithRouter("bmp { station { address: \"192.0.2.9\" views: [BMP_LOC_RIB] statistics_interval: 60 } }\n"), "t");
    CHECK(loaded.errors.empty());
  }
  SECTION("address, port, duplicate, a view twice, ranges") {
    const LoadedConfig loaded = ParseConfig(
        WithRouter("bmp {\n"
                   "  station { address: \"station1\" }\n"
                   "  station { address: \"192.0.2.9\" port: 70000 }\n"
                   "  station { address: \"192.0.2.9\" }\n"
                   "  station { address: \"192.0.2.9\" port: 1790 }\n"
                   "  station { address: \"2001:db8::9\" views: [BMP_LOC_RIB, BMP_ADJ_RIB_OUT_POST, BMP_LOC_RIB]\n"
                   "            statistics_interval: 90000 max_buffer_mib: 5000 }\n"
                   "  station { port: 1 }\n"
                   "}\n"),
        "t");
    const std::vector<std::string> got = Located(loaded.errors);
    REQUIRE(got.size() == 7);
    CHECK(got[0] == "3:13: bmp station station1: address \"station1\" is not an IPv4 or IPv6 address");
    CHECK(got[1] == "4:34: bmp station 192.0.2.9: port 70000 is out of range: use 1..65535 (0 or absent means 1790)");
    CHECK(got[2] == "6:13: bmp station 192.0.2.9: this station (address and port) is already configured");
    CHECK(got[3] == "7:79: bmp station 2001:db8::9: views: BMP_LOC_RIB is listed twice");
    CHECK(got[4] ==
          "8:13: bmp station 2001:db8::9: statistics_interval 90000 is out of range: use 0 (none) or 1..86400 seconds");
    CHECK(got[5] ==
          "8:40: bmp station 2001:db8::9: max_buffer_mib 5000 is out of range: use 1..4096 (0 or absent means 64)");
    CHECK(got[6].find("9:3: bmp station #6: address is required") == 0);
  }
}

}  // namespace bagd::conf
