// conf/md5_key.h: the TCP MD5 key of a neighbor.
#include "conf/md5_key.h"

#include <catch2/catch.hpp>

#include "tests/conf/conf_test_support.h"

using namespace bagd::conf;
using namespace bagd::conf::testing;
using Catch::Matchers::Contains;
namespace v1 = bagd::config::v1;

TEST_CASE("NeighborMd5Key: inline, from a file, or none", "[conf][md5]") {
  TempDir dir;
  v1::Neighbor n;
  CHECK(NeighborMd5Key(n).value().empty());

  n.set_password("inline-key");
  CHECK(NeighborMd5Key(n).value() == "inline-key");

  n.clear_password();
  n.set_password_file(dir.Write("unix.key", "from-file\n"));
  CHECK(NeighborMd5Key(n).value() == "from-file");
  n.set_password_file(dir.Write("dos.key", "from-file\r\n"));
  CHECK(NeighborMd5Key(n).value() == "from-file");
  n.set_password_file(dir.Write("no-newline.key", "from-file"));
  CHECK(NeighborMd5Key(n).value() == "from-file");
  const std::string max(80, 'k');
  n.set_password_file(dir.Write("max.key", max + "\n"));
  CHECK(NeighborMd5Key(n).value() == max);
}

TEST_CASE("ReadMd5KeyFile errors never show the key", "[conf][md5]") {
  TempDir dir;
  const std::string secret(81, 's');
  const auto too_long = ReadMd5KeyFile(dir.Write("long.key", secret));
  REQUIRE_FALSE(too_long.ok());
  CHECK_THAT(std::string(too_long.status().message()), Contains("81 octets"));
  CHECK(std::string(too_long.status().message()).find(secret) == std::string::npos);

  const auto two_lines = ReadMd5KeyFile(dir.Write("two.key", "top\nsecret\n"));
  REQUIRE_FALSE(two_lines.ok());
  CHECK(std::string(two_lines.status().message()).find("secret") == std::string::npos);

  const auto huge = ReadMd5KeyFile(dir.Write("huge.key", std::string(100000, 'x')));
  REQUIRE_FALSE(huge.ok());
  CHECK_THAT(std::string(huge.status().message()), Contains("over 4096 octets"));
}
