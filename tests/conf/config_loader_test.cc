// conf/config_loader.h: text format parsing, locations, file handling, CheckConfig.
#include "conf/config_loader.h"

#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <sstream>

#include "conf/config_validator.h"
#include "tests/conf/conf_test_support.h"

using namespace bagd::conf;
using namespace bagd::conf::testing;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
namespace v1 = bagd::config::v1;

TEST_CASE("ConfigError::ToString: file:line:col: message, or file: message", "[conf]") {
  CHECK(ConfigError{"bagd.textproto", 12, 3, "boom"}.ToString() == "bagd.textproto:12:3: boom");
  CHECK(ConfigError{"bagd.textproto", 0, 0, "cannot read"}.ToString() ==
        "bagd.textproto: cannot read");
}

TEST_CASE("a config that cannot be read is one error with line 0", "[conf][file]") {
  SECTION("missing file") {
    const LoadedConfig loaded = LoadConfigFile("/nonexistent/bagd.textproto");
    REQUIRE(loaded.errors.size() == 1);
    CHECK(loaded.errors[0].line == 0);
    CHECK(loaded.errors[0].ToString() ==
          "/nonexistent/bagd.textproto: cannot read configuration: No such file or directory");
    std::ostringstream out;
    CHECK(CheckConfig("/nonexistent/bagd.textproto", out) == 1);
    CHECK(out.str() ==
          "/nonexistent/bagd.textproto: cannot read configuration: No such file or directory\n");
  }
  SECTION("a directory") {
    TempDir dir;
    const LoadedConfig loaded = LoadConfigFile(dir.path());
    REQUIRE(loaded.errors.size() == 1);
    CHECK(loaded.errors[0].line == 0);
    CHECK_THAT(loaded.errors[0].message, Contains("it is a directory, not a regular file"));
    // `--check` reads any source; a directory still cannot be read.
    CHECK_THAT(LoadConfigFile(dir.path(), ConfigSource::kAnyReadable).errors.at(0).message,
               Contains("Is a directory"));
  }
}

TEST_CASE("text format: the parser's errors carry 1-based line:col", "[conf][text]") {
  SECTION("unknown field far from every name lists the fields") {
    const LoadedConfig loaded = ParseConfig("router {\n  frobnicate: 1\n}\n", "t.textproto");
    REQUIRE(loaded.errors.size() == 1);
    CHECK(loaded.errors[0].ToString() ==
          "t.textproto:2:3: unknown field \"frobnicate\" in Router: its fields are asn, "
          "router_id, listen, hold_time, keepalive, connect_retry, log_level, ebgp_requires_policy, graceful_restart");
  }
  SECTION("a JSON-style name in a text file suggests the text name") {
    const LoadedConfig loaded = ParseConfig("router { routerId: \"1.2.3.4\" }", "t");
    REQUIRE(loaded.errors.size() == 1);
    CHECK(loaded.errors[0].ToString() ==
          "t:1:10: unknown field \"routerId\" in Router: did you mean \"router_id\"?");
  }
  SECTION("unbalanced braces: reported at the end of the input") {
    const LoadedConfig loaded =
        ParseConfig(WithRouter("neighbors {\n  address: \"192.0.2.9\"\n"), "t");
    REQUIRE(loaded.errors.size() == 1);
    CHECK(loaded.errors[0].line == 4);
    CHECK_THAT(loaded.errors[0].message, Contains("Expected identifier"));
  }
  SECTION("out of range integer") {
    const LoadedConfig loaded = ParseConfig("router { asn: 4294967296 }", "t");
    REQUIRE(loaded.errors.size() == 1);
    CHECK(loaded.errors[0].line == 1);
    CHECK(loaded.errors[0].column == 15);
    CHECK_THAT(loaded.errors[0].message, Contains("Integer out of range"));
  }
}

TEST_CASE("semantic errors point at the offending field", "[conf][text]") {
  SECTION("a missing field points at its enclosing block") {
    const LoadedConfig loaded =
        ParseConfig(WithRouter("\n\nneighbors {\n  address: \"192.0.2.9\"\n}\n"), "t");
    REQUIRE(loaded.errors.size() == 1);
    CHECK(Located(loaded.errors)[0] ==
          "4:1: neighbor 192.0.2.9: remote_as is required (the neighbor's AS number; equal to "
          "router asn for iBGP)");
  }
  SECTION("asn: 0 written is 'reserved'; not written is 'required'") {
    const LoadedConfig written = ParseConfig("router { asn: 0 router_id: \"1.2.3.4\" }", "t");
    REQUIRE(written.errors.size() == 1);
    CHECK(Located(written.errors)[0] ==
          "1:10: router: asn 0 is reserved (RFC 7607): use your AS number, 1..4294967295");
    const LoadedConfig absent = ParseConfig("router { router_id: \"1.2.3.4\" }", "t");
    REQUIRE(absent.errors.size() == 1);
    CHECK(Located(absent.errors)[0] ==
          "1:1: router: asn is required (your AS number, 1..4294967295)");
  }
  SECTION("list syntax: each element is located, messages and scalars alike") {
    const LoadedConfig loaded =
        ParseConfig(WithRouter("neighbors [{ address: \"192.0.2.2\" remote_as: 65002 },\n"
                               "           { address: \"192.0.2.3\" },\n"
                               "           { address: \"192.0.2.2\" remote_as: 65002\n"
                               "             address_families: [IPV6_UNICAST, # a comment, then\n"
                               "                                IPV6_UNICAST] }]\n"),
                    "t");
    CHECK(Located(loaded.errors) ==
          std::vector<std::string>{
              "3:12: neighbor 192.0.2.3: remote_as is required (the neighbor's AS number; "
              "equal to router asn for iBGP)",
              "4:14: neighbor 192.0.2.2 is already configured at line 2: each neighbor address "
              "may appear only once",
              "6:33: neighbor 192.0.2.2: address family IPV6_UNICAST is listed twice"});
  }
  SECTION("errors come out in file order whatever order the checks run in") {
    const LoadedConfig loaded = ParseConfig(
        "neighbors { address: \"192.0.2.2\" remote_as: 0 }\n"
        "router { asn: 65001 router_id: \"192.0.2.1\" hold_time: 1 }\n",
        "t");
    REQUIRE(loaded.errors.size() == 2);
    CHECK(loaded.errors[0].line == 1);
    CHECK(loaded.errors[1].line == 2);
  }
  SECTION("a UTF-8 byte order mark is skipped") {
    CHECK(ParseConfig("\xEF\xBB\xBF" + WithRouter(""), "t").ok());
  }
}

TEST_CASE("valid combinations are accepted", "[conf][text]") {
  const LoadedConfig loaded = ParseConfig(WithRouter(R"(
    neighbors { address: "192.0.2.2" remote_as: 65001 ttl_security: 3 }      # iBGP with GTSM
    neighbors { address: "192.0.2.3" remote_as: 65003 ebgp_multihop: 255 }  # eBGP multihop
    neighbors { address: "2001:db8::3" remote_as: 65003 local_address: "2001:db8::1"
                timers { hold_time: 3 } address_families: [IPV4_UNICAST, IPV6_UNICAST] }
    neighbors { address: "192.0.2.4" remote_as: 4294967295 timers { hold_time: 0 } }
    neighbors { address: "127.0.0.2" remote_as: 65005 port: 1179 passive: true }
  )"),
                                          "t");
  for (const ConfigError& e : loaded.errors) UNSCOPED_INFO(e.ToString());
  REQUIRE(loaded.ok());
  CHECK(loaded.config.neighbors(2).timers().keepalive() == 1);
  CHECK(loaded.config.neighbors(3).timers().keepalive() == 0);
}

TEST_CASE("password_file paths are relative to the config file", "[conf][md5]") {
  TempDir dir;
  mkdir((dir.path() + "/keys").c_str(), 0700);
  dir.Write("keys/spine1.key", "s3cret\n");
  const std::string config =
      dir.Write("bagd.textproto", WithRouter("neighbors { address: \"192.0.2.2\" remote_as: 65002 "
                                             "password_file: \"keys/spine1.key\" }\n"));
  const LoadedConfig loaded = LoadConfigFile(config);
  for (const ConfigError& e : loaded.errors) UNSCOPED_INFO(e.ToString());
  REQUIRE(loaded.ok());
  CHECK(loaded.config.neighbors(0).password_file() == dir.path() + "/keys/spine1.key");

  SECTION("absolute paths are kept") {
    const std::string absolute = dir.path() + "/keys/spine1.key";
    const LoadedConfig abs = ParseConfig(
        WithRouter("neighbors { address: \"192.0.2.2\" remote_as: 65002 password_file: \"" +
                   absolute + "\" }"),
        "/elsewhere/bagd.textproto");
    REQUIRE(abs.ok());
    CHECK(abs.config.neighbors(0).password_file() == absolute);
  }
  SECTION("a file name without a directory leaves the path as written") {
    const LoadedConfig bare =
        ParseConfig(WithRouter("neighbors { address: \"192.0.2.2\" remote_as: 65002 password_file: "
                               "\"no-such.key\" }"),
                    "bagd.textproto");
    REQUIRE(bare.errors.size() == 1);
    CHECK_THAT(bare.errors[0].message, Contains("password_file \"no-such.key\" cannot be read"));
  }
  SECTION("a FIFO is refused, not waited on") {
    const std::string fifo = dir.path() + "/fifo.key";
    REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
    const LoadedConfig loaded_fifo = ParseConfig(
        WithRouter("neighbors { address: \"192.0.2.2\" remote_as: 65002 password_file: \"" + fifo +
                   "\" }"),
        "t");
    REQUIRE(loaded_fifo.errors.size() == 1);
    CHECK_THAT(loaded_fifo.errors[0].message, Contains("is not a regular file"));
  }
  SECTION("a file the daemon's user cannot read") {
    if (geteuid() == 0) {
      WARN("running as root: permission checks do not apply, skipped");
    } else {
      const std::string locked = dir.Write("locked.key", "s3cret\n");
      REQUIRE(chmod(locked.c_str(), 0) == 0);
      const LoadedConfig loaded_locked = ParseConfig(
          WithRouter("neighbors { address: \"192.0.2.2\" remote_as: 65002 password_file: \"" +
                     locked + "\" }"),
          "t");
      REQUIRE(loaded_locked.errors.size() == 1);
      CHECK_THAT(loaded_locked.errors[0].message, Contains("Permission denied"));
    }
  }
}

TEST_CASE("ValidateConfig without a locator: every error at line 0", "[conf]") {
  v1::Config config;
  config.mutable_router()->set_asn(65001);
  config.mutable_router()->set_router_id("192.0.2.1");
  v1::Neighbor& n = *config.add_neighbors();
  n.set_address("192.0.2.2");
  n.mutable_timers()->set_hold_time(2);
  const std::vector<ConfigError> errors = ValidateConfig(config, "api", nullptr);
  REQUIRE(errors.size() == 2);
  for (const ConfigError& e : errors) CHECK(e.line == 0);
  CHECK(errors[0].ToString() ==
        "api: neighbor 192.0.2.2: remote_as is required (the neighbor's AS number; equal to "
        "router asn for iBGP)");
  CHECK_THAT(errors[1].message, StartsWith("neighbor 192.0.2.2: hold_time 2 is not allowed"));
}

TEST_CASE("CheckConfig: the OK line counts neighbors", "[conf][check]") {
  TempDir dir;
  const std::string file = dir.Write(
      "b.textproto", WithRouter("neighbors { address: \"192.0.2.2\" remote_as: 65002 }\n"
                                "neighbors { address: \"192.0.2.3\" remote_as: 65003 }\n"));
  std::ostringstream out;
  CHECK(CheckConfig(file, out) == 0);
  // RFC 8212: two eBGP neighbors without policies, each warned about in and out.
  CHECK(out.str() ==
        file + ": configuration OK (2 neighbors)\n" + file +
        ": warning: neighbor 192.0.2.2 ipv4-unicast: no import policy: nothing it sends is accepted (RFC 8212; attach "
        "import_policies, or set default_import: DEFAULT_ACTION_ACCEPT)\n" +
        file +
        ": warning: neighbor 192.0.2.2 ipv4-unicast: no export policy: nothing is advertised to it (RFC 8212; attach "
        "export_policies, or set default_export: DEFAULT_ACTION_ACCEPT)\n" +
        file +
        ": warning: neighbor 192.0.2.3 ipv4-unicast: no import policy: nothing it sends is accepted (RFC 8212; attach "
        "import_policies, or set default_import: DEFAULT_ACTION_ACCEPT)\n" +
        file +
        ": warning: neighbor 192.0.2.3 ipv4-unicast: no export policy: nothing is advertised to it (RFC 8212; attach "
        "export_policies, or set default_export: DEFAULT_ACTION_ACCEPT)\n");

  const std::string none = dir.Write("n.textproto", WithRouter(""));
  std::ostringstream out_none;
  CHECK(CheckConfig(none, out_none) == 0);
  CHECK(out_none.str() == none + ": configuration OK (0 neighbors)\n");
}

TEST_CASE("CheckConfig warns when TCP-MD5 keys are readable by every local user", "[conf][check][md5]") {
  TempDir dir;
  // iBGP neighbors (AS 65001 = the router's): no RFC 8212 warnings in the way.
  const std::string file =
      dir.Write("b.textproto", WithRouter("neighbors { address: \"192.0.2.2\" remote_as: 65001 password: \"s3cret\" }\n"
                                          "neighbors { address: \"192.0.2.3\" remote_as: 65001 password: \"other\" }\n"));
  auto check = [](const std::string& path) {
    std::ostringstream out;
    CHECK(CheckConfig(path, out) == 0);  // a warning, never an error: the file still loads
    return out.str();
  };
  const std::string ok_line = file + ": configuration OK (2 neighbors)\n";

  SECTION("a world-readable file with password lines") {
    REQUIRE(chmod(file.c_str(), 0644) == 0);
    CHECK(check(file) == ok_line + file +
                             ": warning: the file holds the TCP-MD5 password of neighbors 192.0.2.2, 192.0.2.3 and every "
                             "local user may read it (mode 0644): chmod o-r " +
                             file + " (the Debian package installs it 0640 root:bagd), or move the keys to password_file\n");
  }
  SECTION("0640 (the package's mode) and 0600: no warning") {
    REQUIRE(chmod(file.c_str(), 0640) == 0);
    CHECK(check(file) == ok_line);
    REQUIRE(chmod(file.c_str(), 0600) == 0);
    CHECK(check(file) == ok_line);
  }
  SECTION("a world-readable file without passwords: nothing to warn about") {
    const std::string plain = dir.Write("p.textproto", WithRouter("neighbors { address: \"192.0.2.2\" remote_as: 65001 }\n"));
    REQUIRE(chmod(plain.c_str(), 0644) == 0);
    CHECK(check(plain) == plain + ": configuration OK (1 neighbor)\n");
  }
  SECTION("a world-readable password_file, named once however many neighbors use it") {
    const std::string key = dir.Write("md5.key", "s3cret\n");
    const std::string uses_file = dir.Write(
        "f.textproto", WithRouter("neighbors { address: \"192.0.2.2\" remote_as: 65001 password_file: \"md5.key\" }\n"
                                  "neighbors { address: \"192.0.2.3\" remote_as: 65001 password_file: \"md5.key\" }\n"));
    REQUIRE(chmod(uses_file.c_str(), 0644) == 0);  // holds no key itself: fine
    REQUIRE(chmod(key.c_str(), 0604) == 0);
    CHECK(check(uses_file) == uses_file + ": configuration OK (2 neighbors)\n" + uses_file + ": warning: password_file " +
                                  key + " holds a TCP-MD5 password and every local user may read it (mode 0604): chmod o-r " +
                                  key + "\n");
    REQUIRE(chmod(key.c_str(), 0600) == 0);
    CHECK(check(uses_file) == uses_file + ": configuration OK (2 neighbors)\n");
  }
}
