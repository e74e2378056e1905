// conf/config_defaults.h: ApplyDefaults and the timer inheritance.
#include "conf/config_defaults.h"

#include <catch2/catch.hpp>

#include "conf/config_loader.h"
#include "google/protobuf/util/message_differencer.h"
#include "tests/conf/conf_test_support.h"

using namespace bagd::conf;
using namespace bagd::conf::testing;
namespace v1 = bagd::config::v1;

namespace {

v1::Config Parsed(const std::string& text) {
  const LoadedConfig loaded = ParseConfig(text, "t");
  for (const ConfigError& e : loaded.errors) UNSCOPED_INFO(e.ToString());
  REQUIRE(loaded.ok());
  return loaded.config;
}

}  // namespace

TEST_CASE("router defaults", "[conf][defaults]") {
  v1::Config c;
  ApplyDefaults(c);
  const v1::Router& r = c.router();
  REQUIRE(r.listen_size() == 2);
  CHECK(r.listen(0).address() == "0.0.0.0");
  CHECK(r.listen(0).port() == 179);
  CHECK(r.listen(1).address() == "::");
  CHECK(r.listen(1).port() == 179);
  CHECK(r.has_hold_time());
  CHECK(r.hold_time() == 90);
  CHECK(r.keepalive() == 30);
  CHECK(r.connect_retry() == 5);
  CHECK(r.log_level() == v1::LOG_LEVEL_INFO);
  CHECK(c.link_bandwidth().mode() == v1::LinkBandwidth::MODE_WEIGHTED);
  CHECK(c.link_bandwidth().missing() == v1::LinkBandwidth::MISSING_EQUAL_COST);
  CHECK(c.fib().backend() == v1::Fib::BACKEND_NETLINK);
  CHECK(c.fib().kernel_table() == 254);
  CHECK(c.fib().appldb_socket() == "/var/run/redis/redis.sock");
  CHECK(c.fib().appldb_protocol() == "bagd");
  CHECK(c.fib().confirm() == bagd::config::v1::Fib::CONFIRM_NONE);
  CHECK(c.fib().confirm_timeout() == 10);
  CHECK(c.fib().appldb_pop_batch() == 128);
  CHECK(c.fib().max_weight() == 0);    // the backend's limit
  CHECK(c.fib().group_budget() == 0);  // no limit
  CHECK(c.fib().audit_interval() == 30);
  CHECK(c.fib().group_swaps_per_revisit() == 2);
  CHECK_FALSE(c.has_multipath());      // 0 means "decided by the RIB"
}

TEST_CASE("damping defaults", "[conf][defaults][damping]") {
  v1::Config c;
  ApplyDefaults(c);
  const v1::Damping& d = c.damping();
  CHECK(d.has_decrease_delay());
  CHECK(d.decrease_delay() == 0);
  CHECK(d.increase_hold_down() == 30);
  CHECK(d.min_change_percent() == 5);
  CHECK(d.max_hold_down() == 600);
  CHECK(d.half_life() == 300);
  CHECK(d.new_path_settle() == 10);
  // Every field is present after defaults, even those whose value is 0.
  CHECK(d.has_increase_hold_down());
  CHECK(d.has_min_change_percent());
  CHECK(d.has_max_hold_down());
  CHECK(d.has_half_life());
  CHECK(d.has_new_path_settle());
}

TEST_CASE("damping: given values are kept, max_hold_down is at least increase_hold_down",
          "[conf][defaults][damping]") {
  auto damping = [](const std::string& text) {
    return Parsed(WithRouter(text)).damping();
  };
  SECTION("explicit zeros stay zeros") {
    const v1::Damping d = damping("damping { increase_hold_down: 0 min_change_percent: 0 new_path_settle: 0 }");
    CHECK(d.new_path_settle() == 0);
    CHECK(d.increase_hold_down() == 0);
    CHECK(d.min_change_percent() == 0);
    CHECK(d.max_hold_down() == 600);
  }
  SECTION("a long increase_hold_down raises the default max_hold_down") {
    const v1::Damping d = damping("damping { increase_hold_down: 1800 }");
    CHECK(d.increase_hold_down() == 1800);
    CHECK(d.max_hold_down() == 1800);
    CHECK(d.half_life() == 300);
  }
  SECTION("a given max_hold_down is kept") {
    const v1::Damping d = damping("damping { increase_hold_down: 60 max_hold_down: 120 }");
    CHECK(d.max_hold_down() == 120);
  }
  SECTION("every field given") {
    const v1::Damping d = damping(
        "damping { decrease_delay: 2 increase_hold_down: 10 min_change_percent: 20 "
        "max_hold_down: 40 half_life: 50 }");
    CHECK(std::vector<uint32_t>{d.decrease_delay(), d.increase_hold_down(), d.min_change_percent(),
                                d.max_hold_down(), d.half_life()} ==
          std::vector<uint32_t>{2, 10, 20, 40, 50});
  }
}

TEST_CASE("neighbor link_bandwidth defaults", "[conf][defaults][link_bandwidth]") {
  const v1::Config c = Parsed(R"(router { asn: 65001 router_id: "192.0.2.1" }
    neighbors { address: "192.0.2.2" remote_as: 65002 }
    neighbors { address: "192.0.2.3" remote_as: 65002 link_bandwidth {
                  mode: EXPORT_FIXED rate: "10G" encoding: ENCODING_NON_TRANSITIVE
                  readvertise_threshold_percent: 0 readvertise_interval: 0 } }
    neighbors { address: "192.0.2.4" remote_as: 65002 link_bandwidth {
                  readvertise_interval: 60 } })");
  using Nlb = v1::NeighborLinkBandwidth;
  const Nlb& defaulted = c.neighbors(0).link_bandwidth();
  CHECK(defaulted.mode() == Nlb::EXPORT_AUTO);
  CHECK(defaulted.encoding() == Nlb::ENCODING_TRANSITIVE);
  CHECK(defaulted.has_readvertise_threshold_percent());
  CHECK(defaulted.readvertise_threshold_percent() == 5);
  CHECK(defaulted.has_readvertise_interval());
  CHECK(defaulted.readvertise_interval() == 5);
  CHECK(defaulted.rate().empty());
  CHECK(defaulted.reference().empty());

  const Nlb& given = c.neighbors(1).link_bandwidth();
  CHECK(given.mode() == Nlb::EXPORT_FIXED);
  CHECK(given.rate() == "10G");  // rates are kept as written
  CHECK(given.encoding() == Nlb::ENCODING_NON_TRANSITIVE);
  CHECK(given.readvertise_threshold_percent() == 0);  // 0 is a value: re-send every change
  CHECK(given.readvertise_interval() == 0);

  const Nlb& partly = c.neighbors(2).link_bandwidth();
  CHECK(partly.mode() == Nlb::EXPORT_AUTO);
  CHECK(partly.readvertise_threshold_percent() == 5);
  CHECK(partly.readvertise_interval() == 60);
}

TEST_CASE("link_bandwidth families inherit what they leave unset",
          "[conf][defaults][link_bandwidth]") {
  using Lb = v1::LinkBandwidth;
  const v1::Config c = Parsed(R"(router { asn: 65001 router_id: "192.0.2.1" }
    link_bandwidth {
      missing: MISSING_DEFAULT_WEIGHT default_bandwidth: "10G"
      families { family: IPV4_UNICAST }
      families { family: IPV6_UNICAST mode: MODE_IGNORE missing: MISSING_SKIP
                 default_bandwidth: "1G" }
    })");
  const Lb& lb = c.link_bandwidth();
  CHECK(lb.mode() == Lb::MODE_WEIGHTED);
  CHECK(lb.missing() == Lb::MISSING_DEFAULT_WEIGHT);
  REQUIRE(lb.families_size() == 2);
  CHECK(lb.families(0).mode() == Lb::MODE_WEIGHTED);  // the global default, filled in
  CHECK(lb.families(0).missing() == Lb::MISSING_DEFAULT_WEIGHT);
  CHECK(lb.families(0).default_bandwidth() == "10G");
  CHECK(lb.families(1).mode() == Lb::MODE_IGNORE);
  CHECK(lb.families(1).missing() == Lb::MISSING_SKIP);
  CHECK(lb.families(1).default_bandwidth() == "1G");
}

namespace {

// Fields of `message` (recursively) that ApplyDefaults left without a value: an enum at its
// 0 (*_UNSPECIFIED) or a field with presence that is absent. Message fields are only
// descended into when set.
void Unset(const google::protobuf::Message& message, const std::string& path,
           std::vector<std::string>& out) {
  const google::protobuf::Descriptor* d = message.GetDescriptor();
  const google::protobuf::Reflection* r = message.GetReflection();
  for (int i = 0; i < d->field_count(); ++i) {
    const google::protobuf::FieldDescriptor* f = d->field(i);
    const std::string name = path + f->name();
    if (f->is_repeated()) {
      for (int j = 0; j < r->FieldSize(message, f); ++j) {
        const std::string element = name + "[" + std::to_string(j) + "]";
        if (f->type() == google::protobuf::FieldDescriptor::TYPE_MESSAGE) {
          Unset(r->GetRepeatedMessage(message, f, j), element + ".", out);
        } else if (f->type() == google::protobuf::FieldDescriptor::TYPE_ENUM &&
                   r->GetRepeatedEnumValue(message, f, j) == 0) {
          out.push_back(element);
        }
      }
    } else if (f->type() == google::protobuf::FieldDescriptor::TYPE_MESSAGE) {
      if (r->HasField(message, f)) Unset(r->GetMessage(message, f), name + ".", out);
    } else if (f->has_presence() && !r->HasField(message, f)) {
      out.push_back(name);
    } else if (f->type() == google::protobuf::FieldDescriptor::TYPE_ENUM &&
               r->GetEnumValue(message, f) == 0) {
      out.push_back(name);
    }
  }
}

}  // namespace

TEST_CASE("after defaults no enum is unspecified and no optional field is absent",
          "[conf][defaults]") {
  // A config that writes as little as possible in every message of the schema.
  const v1::Config c = Parsed(R"(
    router { asn: 65001 router_id: "192.0.2.1" listen { address: "::" } }
    neighbors { address: "192.0.2.2" remote_as: 65002 timers { } link_bandwidth { }
                max_prefixes { family: IPV4_UNICAST limit: 10 } }
    link_bandwidth { families { family: IPV6_UNICAST } }
    damping { }
    fib { }
    networks { prefix: "10.0.0.0/8" })");
  std::vector<std::string> unset;
  Unset(c, "", unset);
  CHECK(unset == std::vector<std::string>{});
}

TEST_CASE("listen: given addresses are kept, port 0 becomes 179", "[conf][defaults]") {
  const v1::Config c = Parsed(R"(router { asn: 65001 router_id: "192.0.2.1"
      listen { address: "192.0.2.1" } listen { address: "::1" port: 1179 } })");
  REQUIRE(c.router().listen_size() == 2);
  CHECK(c.router().listen(0).port() == 179);
  CHECK(c.router().listen(1).port() == 1179);
}

TEST_CASE("neighbor timers inherit from the router", "[conf][defaults]") {
  const v1::Config c = Parsed(R"(
    router { asn: 65001 router_id: "192.0.2.1" hold_time: 30 keepalive: 7 connect_retry: 11 }
    neighbors { address: "192.0.2.2" remote_as: 65002 }                                  # all inherited
    neighbors { address: "192.0.2.3" remote_as: 65002 timers { hold_time: 12 } }         # keepalive 12/3
    neighbors { address: "192.0.2.4" remote_as: 65002 timers { keepalive: 2 } }          # hold from router
    neighbors { address: "192.0.2.5" remote_as: 65002 timers { hold_time: 0 } }          # no keepalives
    neighbors { address: "192.0.2.6" remote_as: 65002 timers { connect_retry: 1 } }
  )");
  auto timers = [&](int i) {
    const v1::Timers& t = c.neighbors(i).timers();
    return std::vector<uint32_t>{t.hold_time(), t.keepalive(), t.connect_retry()};
  };
  CHECK(timers(0) == std::vector<uint32_t>{30, 7, 11});
  CHECK(timers(1) == std::vector<uint32_t>{12, 4, 11});
  CHECK(timers(2) == std::vector<uint32_t>{30, 2, 11});
  CHECK(timers(3) == std::vector<uint32_t>{0, 0, 11});
  CHECK(timers(4) == std::vector<uint32_t>{30, 7, 1});
  // Every field is present after defaults, even those whose value is 0.
  CHECK(c.neighbors(3).timers().has_hold_time());
  CHECK(c.neighbors(3).timers().has_keepalive());
}

TEST_CASE("router hold_time 0 means no keepalives by default", "[conf][defaults]") {
  const v1::Config c = Parsed(R"(router { asn: 65001 router_id: "192.0.2.1" hold_time: 0 }
                                 neighbors { address: "192.0.2.2" remote_as: 65002 })");
  CHECK(c.router().hold_time() == 0);
  CHECK(c.router().keepalive() == 0);
  CHECK(c.neighbors(0).timers().hold_time() == 0);
  CHECK(c.neighbors(0).timers().keepalive() == 0);
}

TEST_CASE("neighbor port and address families", "[conf][defaults]") {
  const v1::Config c = Parsed(R"(router { asn: 65001 router_id: "192.0.2.1" }
    neighbors { address: "192.0.2.2" remote_as: 65002 }
    neighbors { address: "2001:db8::2" remote_as: 65002 port: 1179 }
    neighbors { address: "192.0.2.3" remote_as: 65002 address_families: IPV6_UNICAST })");
  CHECK(c.neighbors(0).port() == 179);
  CHECK(c.neighbors(1).port() == 1179);
  auto families = [&](int i) {
    return std::vector<int>(c.neighbors(i).address_families().begin(),
                            c.neighbors(i).address_families().end());
  };
  CHECK(families(0) == std::vector<int>{v1::IPV4_UNICAST});  // FRR: bgp default ipv4-unicast
  CHECK(families(1) == std::vector<int>{v1::IPV6_UNICAST});  // the neighbor's own family
  CHECK(families(2) == std::vector<int>{v1::IPV6_UNICAST});  // as configured
}

TEST_CASE("ApplyDefaults is idempotent", "[conf][defaults]") {
  const LoadedConfig loaded = LoadConfigFile(SourcePath("conf/examples/bag-router.textproto"));
  REQUIRE(loaded.ok());
  v1::Config again = loaded.config;
  ApplyDefaults(again);
  CHECK(google::protobuf::util::MessageDifferencer::Equals(loaded.config, again));
}

TEST_CASE("no defaults are applied to a config with errors", "[conf][defaults]") {
  const LoadedConfig loaded = ParseConfig("router { asn: 65001 }", "t");
  REQUIRE_FALSE(loaded.ok());
  CHECK(loaded.config.router().listen_size() == 0);
  CHECK_FALSE(loaded.config.router().has_hold_time());
}

TEST_CASE("max_prefixes: the warning threshold defaults to 75 %, given values are kept",
          "[conf][defaults][max_prefixes]") {
  v1::Config c = Parsed(R"(
    router { asn: 65001 router_id: "192.0.2.1" }
    neighbors { address: "192.0.2.2" remote_as: 65002
      max_prefixes { family: IPV4_UNICAST limit: 1000 restart_interval: 30 } }
    neighbors { address: "2001:db8::2" remote_as: 65002
      max_prefixes { family: IPV6_UNICAST limit: 5 warning_threshold_percent: 90 warning_only: true } })");
  ApplyDefaults(c);
  const v1::MaxPrefixes& a = c.neighbors(0).max_prefixes(0);
  CHECK(a.family() == v1::IPV4_UNICAST);
  CHECK(a.limit() == 1000);
  CHECK(a.warning_threshold_percent() == 75);
  CHECK_FALSE(a.warning_only());
  CHECK(a.restart_interval() == 30);
  const v1::MaxPrefixes& b = c.neighbors(1).max_prefixes(0);
  CHECK(b.warning_threshold_percent() == 90);
  CHECK(b.warning_only());
  CHECK(b.restart_interval() == 0);
  CHECK(c.neighbors(0).max_prefixes_size() == 1);
}

TEST_CASE("graceful_restart: router defaults, neighbors inherit field by field, families of their own",
          "[conf][defaults][graceful_restart]") {
  v1::Config c = Parsed(R"(
    router { asn: 65001 router_id: "192.0.2.1" graceful_restart { stale_routes_time: 100 } }
    neighbors { address: "192.0.2.2" remote_as: 65002 address_families: [IPV4_UNICAST, IPV6_UNICAST] }
    neighbors { address: "192.0.2.3" remote_as: 65003 address_families: [IPV4_UNICAST, IPV6_UNICAST]
                graceful_restart { enabled: false restart_time: 30 families: [IPV6_UNICAST] } }
    neighbors { address: "2001:db8::4" remote_as: 65004 })");
  ApplyDefaults(c);
  const v1::GracefulRestart& r = c.router().graceful_restart();
  CHECK(r.enabled());
  CHECK(r.restart_time() == 120);
  CHECK(r.stale_routes_time() == 100);
  CHECK(r.families_size() == 0);
  const v1::GracefulRestart& a = c.neighbors(0).graceful_restart();
  CHECK(a.enabled());
  CHECK(a.restart_time() == 120);
  CHECK(a.stale_routes_time() == 100);
  CHECK(std::vector<int>(a.families().begin(), a.families().end()) == std::vector<int>{v1::IPV4_UNICAST, v1::IPV6_UNICAST});
  const v1::GracefulRestart& b = c.neighbors(1).graceful_restart();
  CHECK_FALSE(b.enabled());
  CHECK(b.restart_time() == 30);
  CHECK(std::vector<int>(b.families().begin(), b.families().end()) == std::vector<int>{v1::IPV6_UNICAST});
  const v1::GracefulRestart& v6 = c.neighbors(2).graceful_restart();
  CHECK(std::vector<int>(v6.families().begin(), v6.families().end()) == std::vector<int>{v1::IPV6_UNICAST});
  v1::Config again = c;
  ApplyDefaults(again);
  CHECK(google::protobuf::util::MessageDifferencer::Equals(c, again));
}
