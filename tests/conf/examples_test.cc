// conf/examples/: every example loads cleanly, and the JSON example is the text one.
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <sstream>

#include "conf/config_loader.h"
#include "conf/rate_text.h"
#include "google/protobuf/util/message_differencer.h"
#include "tests/conf/conf_test_support.h"

using namespace bagd::conf;
using namespace bagd::conf::testing;
namespace v1 = bagd::config::v1;

TEST_CASE("every example config loads with no errors", "[conf][examples]") {
  std::vector<std::string> examples = FilesIn(SourcePath("conf/examples"), ".textproto");
  const std::vector<std::string> json = FilesIn(SourcePath("conf/examples"), ".json");
  examples.insert(examples.end(), json.begin(), json.end());
  REQUIRE(examples.size() >= 3);
  for (const std::string& file : examples) {
    INFO(file);
    const LoadedConfig loaded = LoadConfigFile(file);
    for (const ConfigError& e : loaded.errors) UNSCOPED_INFO(e.ToString());
    CHECK(loaded.ok());
    CHECK(loaded.config.neighbors_size() > 0);
  }
}

TEST_CASE("minimal example: one eBGP neighbor with every default", "[conf][examples]") {
  const LoadedConfig loaded = LoadConfigFile(SourcePath("conf/examples/minimal.textproto"));
  REQUIRE(loaded.ok());
  const v1::Config& c = loaded.config;
  CHECK(c.router().asn() == 65001);
  CHECK(c.router().router_id() == "192.0.2.1");
  REQUIRE(c.router().listen_size() == 2);
  CHECK(c.router().listen(0).address() == "0.0.0.0");
  CHECK(c.router().listen(1).address() == "::");
  CHECK(c.router().hold_time() == 90);
  REQUIRE(c.neighbors_size() == 1);
  const v1::Neighbor& n = c.neighbors(0);
  CHECK(n.remote_as() == 65002);
  CHECK(n.remote_as() != c.router().asn());  // eBGP
  CHECK(n.port() == 179);
  CHECK(n.timers().hold_time() == 90);
  CHECK(n.timers().keepalive() == 30);
  CHECK(n.timers().connect_retry() == kDefaultConnectRetry);
  REQUIRE(n.address_families_size() == 1);
  CHECK(n.address_families(0) == v1::IPV4_UNICAST);
}

TEST_CASE("bag-router example: IPv4 and IPv6 eBGP, MD5, GTSM, both families", "[conf][examples]") {
  const LoadedConfig loaded = LoadConfigFile(SourcePath("conf/examples/bag-router.textproto"));
  REQUIRE(loaded.ok());
  const v1::Config& c = loaded.config;
  int v4 = 0, v6 = 0, md5 = 0, gtsm = 0, both_families = 0;
  for (const v1::Neighbor& n : c.neighbors()) {
    (n.address().find(':') == std::string::npos ? v4 : v6)++;
    if (!n.password().empty() || !n.password_file().empty()) ++md5;
    if (n.ttl_security() != 0) ++gtsm;
    if (n.address_families_size() == 2) ++both_families;
    CHECK(n.remote_as() != c.router().asn());
    CHECK_FALSE(n.description().empty());
  }
  CHECK(v4 >= 3);
  CHECK(v6 >= 3);
  CHECK(md5 >= 2);
  CHECK(gtsm >= 2);
  CHECK(both_families >= 1);
  // Router timers are inherited by neighbors without their own.
  CHECK(c.neighbors(0).timers().hold_time() == 9);
  CHECK(c.neighbors(0).timers().keepalive() == 3);
}

TEST_CASE("bag-router example: link bandwidth export, origination and damping",
          "[conf][examples][link_bandwidth]") {
  const LoadedConfig loaded = LoadConfigFile(SourcePath("conf/examples/bag-router.textproto"));
  REQUIRE(loaded.ok());
  const v1::Config& c = loaded.config;
  int cumulative_non_transitive = 0;
  for (const v1::Neighbor& n : c.neighbors()) {
    if (n.link_bandwidth().mode() == v1::NeighborLinkBandwidth::EXPORT_CUMULATIVE &&
        n.link_bandwidth().encoding() == v1::NeighborLinkBandwidth::ENCODING_NON_TRANSITIVE) {
      ++cumulative_non_transitive;
    }
  }
  CHECK(cumulative_non_transitive == 1);
  int with_bandwidth = 0;
  for (const v1::Network& network : c.networks()) {
    if (network.link_bandwidth().empty()) continue;
    ++with_bandwidth;
    const absl::StatusOr<double> bps = ParseRate(network.link_bandwidth());
    REQUIRE(bps.ok());
    CHECK(*bps == 400e9);
  }
  CHECK(with_bandwidth == 1);
  CHECK(c.damping().increase_hold_down() <= c.damping().max_hold_down());
  CHECK(c.fib().group_budget() == 0);  // commented out in the example
}

TEST_CASE("bag-router.json and bag-router.textproto give equal protos", "[conf][examples][json]") {
  const LoadedConfig text = LoadConfigFile(SourcePath("conf/examples/bag-router.textproto"));
  const LoadedConfig json = LoadConfigFile(SourcePath("conf/examples/bag-router.json"));
  REQUIRE(text.ok());
  REQUIRE(json.ok());
  google::protobuf::util::MessageDifferencer differ;
  std::string differences;
  differ.ReportDifferencesToString(&differences);
  INFO(differences);
  CHECK(differ.Compare(text.config, json.config));
}

TEST_CASE("CheckConfig on the examples: OK line and exit code 0", "[conf][examples][check]") {
  const std::string file = SourcePath("conf/examples/bag-router.textproto");
  std::ostringstream out;
  CHECK(CheckConfig(file, out) == 0);
  // bag-router has `password` lines: --check warns about them while the checkout leaves the
  // file readable by everyone (umask 022), and about nothing else.
  std::string expected = file + ": configuration OK (8 neighbors)\n";
  const std::vector<std::string> keys = SecretFileWarnings(LoadConfigFile(file).config, file);
  struct stat st;
  REQUIRE(stat(file.c_str(), &st) == 0);
  CHECK(keys.size() == ((st.st_mode & S_IROTH) != 0 ? 1u : 0u));
  for (const std::string& w : keys) expected += file + ": warning: " + w + "\n";
  CHECK(out.str() == expected);

  const std::string minimal = SourcePath("conf/examples/minimal.textproto");
  std::ostringstream one;
  CHECK(CheckConfig(minimal, one) == 0);
  CHECK(one.str() == minimal + ": configuration OK (1 neighbor)\n");

  // What the Debian package installs as /etc/bagd/bagd.conf: no neighbors.
  const std::string shipped = SourcePath("conf/debian/bagd.conf");
  std::ostringstream none;
  CHECK(CheckConfig(shipped, none) == 0);
  CHECK(none.str() == shipped + ": configuration OK (0 neighbors)\n");
}
