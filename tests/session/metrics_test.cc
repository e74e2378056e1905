// The sessions' metrics an operator expects: build info, a configured neighbor's series
// before it sends anything, the process_* series from /proc. (The routing path's and the FIB
// sync's: tests/daemon/metrics_test.cc.)
#include <unistd.h>

#include <catch2/catch.hpp>
#include <prometheus/text_serializer.h>
#include <string>

#include "bgpd/session/metrics.h"
#include "bgpd/session/process_metrics.h"

namespace bagd::session {
namespace {

std::string Scrape(const prometheus::Collectable& c) {
  return prometheus::TextSerializer().Serialize(c.Collect());
}

TEST_CASE("metrics: the build's version and commit, from start", "[metrics]") {
  auto registry = std::make_shared<prometheus::Registry>();
  SessionMetrics m(registry);
  m.SetBuildInfo("0.1.0", "abc1234");
  CHECK(Scrape(*registry).find("bagd_build_info{git=\"abc1234\",version=\"0.1.0\"} 1") != std::string::npos);
}

TEST_CASE("metrics: a declared neighbor's series exist before it sends anything", "[metrics]") {
  auto registry = std::make_shared<prometheus::Registry>();
  SessionMetrics m(registry);
  NeighborSeries n(&m, "192.0.2.2");
  n.Declare({true, false});
  const std::string text = Scrape(*registry);
  CHECK(text.find("bagd_messages_received_total{neighbor=\"192.0.2.2\",type=\"update\"} 0") != std::string::npos);
  CHECK(text.find("bagd_messages_sent_total{neighbor=\"192.0.2.2\",type=\"keepalive\"} 0") != std::string::npos);
  CHECK(text.find("bagd_prefixes_received{family=\"ipv4-unicast\",neighbor=\"192.0.2.2\"} 0") != std::string::npos);
  CHECK(text.find("bagd_prefixes_received{family=\"ipv6-unicast\"") == std::string::npos);  // not configured
  CHECK(text.find("bagd_prefixes_sent{neighbor=\"192.0.2.2\"} 0") != std::string::npos);
  n.Received(2, 100);
  CHECK(Scrape(*registry).find("bagd_messages_received_total{neighbor=\"192.0.2.2\",type=\"update\"} 1") !=
        std::string::npos);
}

TEST_CASE("process metrics: /proc/self/stat parsed, and read from this process", "[metrics]") {
  // A comm with spaces and a parenthesis, as proc(5) allows.
  const std::string stat =
      "4242 (bagd (x) y) S 1 4242 4242 0 -1 4194560 500 0 0 0 250 50 0 0 20 0 3 0 1000 104857600 2560 "
      "18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0";
  auto s = ParseProcStat(stat, 100, 4096, 1'700'000'000);
  REQUIRE(s.has_value());
  CHECK(s->cpu_seconds == Approx(3.0));  // (250 + 50) / 100
  CHECK(s->start_time_seconds == Approx(1'700'000'010.0));
  CHECK(s->virtual_bytes == Approx(104857600.0));
  CHECK(s->resident_bytes == Approx(2560.0 * 4096));
  CHECK_FALSE(ParseProcStat("garbage", 100, 4096, 0).has_value());
  CHECK_FALSE(ParseProcStat("1 (x) S 1 2", 100, 4096, 0).has_value());

  const std::string text = Scrape(ProcessCollector());
  for (const char* name : {"process_cpu_seconds_total ", "process_resident_memory_bytes ", "process_open_fds ",
                           "process_max_fds ", "process_start_time_seconds ", "process_virtual_memory_bytes "}) {
    INFO(name);
    CHECK(text.find(name) != std::string::npos);
  }
}

}  // namespace
}  // namespace bagd::session
