// fake_orchagent: the test consumer of APPL_DB as a program (interop test, demo, benchmark).
//
//   fake_orchagent --socket PATH [--respond] [--quiet-after N] [--count-routes N] [--zmq ENDPOINT]
//
// Consumes NEXTHOP_GROUP_TABLE and ROUTE_TABLE as orchagent would (tests/fib/sonic/
// fake_orchagent.h) until SIGTERM/SIGINT; with --respond publishes a success response per
// programmed route. Prints one status line per second of activity ("groups 2 routes 1000
// violations 0"); violations are printed as they happen. With --count-routes N it exits 0 as
// soon as the ASIC table holds N routes and prints the time it took from the first key.
// With --zmq ENDPOINT it also binds SONiC's ZMQ route path there (tests/fib/sonic/
// fake_zmq_orchagent.h): ROUTE_TABLE from ZMQ, NEXTHOP_GROUP_TABLE from Redis; while it holds
// at most 16 routes it prints "zmq-route KEY GROUP" for each after every message that
// changed something, and "zmq-routes N" otherwise.
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include "tests/fib/sonic/fake_orchagent.h"
#include "tests/fib/sonic/fake_zmq_orchagent.h"

namespace {
volatile sig_atomic_t stop = 0;
void OnSignal(int) { stop = 1; }
}  // namespace

int main(int argc, char** argv) {
  std::string socket;
  bool respond = false;
  long count_routes = -1;
  std::string zmq_endpoint;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--socket" && i + 1 < argc) {
      socket = argv[++i];
    } else if (a == "--respond") {
      respond = true;
    } else if (a == "--zmq" && i + 1 < argc) {
      zmq_endpoint = argv[++i];
    } else if (a == "--count-routes" && i + 1 < argc) {
      count_routes = std::stol(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: fake_orchagent --socket PATH [--respond] [--count-routes N] [--zmq ENDPOINT]\n");
      return 2;
    }
  }
  if (socket.empty()) {
    std::fprintf(stderr, "fake_orchagent: --socket is required\n");
    return 2;
  }
  signal(SIGTERM, OnSignal);
  signal(SIGINT, OnSignal);
  auto o = bagd::fib::sonic::test::FakeOrchagent::Connect({socket, "", 0});
  if (!o.ok()) {
    std::fprintf(stderr, "fake_orchagent: %s\n", std::string(o.status().message()).c_str());
    return 1;
  }
  auto& orch = **o;
  if (respond) orch.set_respond([](const std::string&) { return true; });
  std::unique_ptr<bagd::fib::sonic::test::FakeZmqOrchagent> zmq;
  if (!zmq_endpoint.empty()) {
    auto z = bagd::fib::sonic::test::FakeZmqOrchagent::Bind(zmq_endpoint, &orch);
    if (!z.ok()) {
      std::fprintf(stderr, "fake_orchagent: %s\n", std::string(z.status().message()).c_str());
      return 1;
    }
    zmq = std::move(*z);
    std::printf("zmq bound %s\n", zmq->endpoint().c_str());
    std::fflush(stdout);
  }
  size_t reported_zmq_violations = 0;
  using Clock = std::chrono::steady_clock;
  Clock::time_point first{}, last_print = Clock::now();
  size_t reported_violations = 0, last_keys = 0;
  while (!stop) {
    size_t n = orch.WaitAndDrain(zmq ? 10 : 100);
    if (zmq) {
      const size_t z = zmq->Receive(90);
      n += z;
      for (; reported_zmq_violations < zmq->violations().size(); ++reported_zmq_violations) {
        std::printf("violation: %s\n", zmq->violations()[reported_zmq_violations].c_str());
      }
      if (z > 0) {
        if (zmq->routes().size() <= 16) {
          for (const auto& [key, group] : zmq->routes()) std::printf("zmq-route %s %s\n", key.c_str(), group.c_str());
        }
        std::printf("zmq-routes %zu messages %zu\n", zmq->routes().size(), zmq->stats().messages);
        std::fflush(stdout);
      }
    }
    if (!orch.connected()) {
      std::printf("connection to redis lost\n");
      return 1;
    }
    if (n > 0 && first == Clock::time_point{}) first = Clock::now();
    for (; reported_violations < orch.violations().size(); ++reported_violations) {
      std::printf("violation: %s\n", orch.violations()[reported_violations].c_str());
    }
    const auto now = Clock::now();
    if (now - last_print >= std::chrono::seconds(1) && orch.stats().keys() != last_keys) {
      last_keys = orch.stats().keys();
      last_print = now;
      std::printf("groups %zu routes %zu keys %zu violations %zu\n", orch.groups().size(), orch.routes().size(),
                  orch.stats().keys(), orch.violations().size());
      std::fflush(stdout);
    }
    const size_t held = zmq ? zmq->routes().size() : orch.routes().size();
    if (count_routes >= 0 && static_cast<long>(held) >= count_routes) {
      std::printf("routes %zu in %.3f s\n", held,
                  std::chrono::duration<double>(Clock::now() - first).count());
      return 0;
    }
  }
  std::printf("groups %zu routes %zu keys %zu violations %zu\n", orch.groups().size(), orch.routes().size(),
              orch.stats().keys(), orch.violations().size());
  return 0;
}
