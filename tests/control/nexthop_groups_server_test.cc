// ListNextHopGroups end to end: a real ControlServer on a temporary Unix socket, the fake
// backend (or one without a routing table) behind it, ControlClient in front.
#include <google/protobuf/util/message_differencer.h>
#include <grpcpp/grpcpp.h>

#include <catch2/catch.hpp>
#include <chrono>

#include "bgpd/control/control.grpc.pb.h"
#include "bgpd/control/control_client.h"
#include "bgpd/control/control_server.h"
#include "tests/control/fake_backend.h"
#include "tests/control/serving.h"

using namespace bagd::control;
using bagd::control::testing::FakeBackend;
using bagd::control::testing::kNowUnixMs;
using bagd::control::testing::NeighborsOnlyBackend;
using bagd::control::testing::SampleNextHopGroups;
using bagd::control::testing::SampleRoutes;
using bagd::control::testing::Serving;
using google::protobuf::util::MessageDifferencer;
using Call = FakeBackend::Call;

namespace {

v1::ListNextHopGroupsRequest ById(uint32_t id) {
  v1::ListNextHopGroupsRequest r;
  r.set_id(id);
  return r;
}

v1::ListNextHopGroupsRequest ByPrefix(std::string prefix) {
  v1::ListNextHopGroupsRequest r;
  r.set_prefix(std::move(prefix));
  return r;
}

// A bare call, for requests ControlClient would refuse to send.
template <typename Backend>
grpc::Status RawListNextHopGroups(Serving<Backend>& s, const v1::ListNextHopGroupsRequest& request,
                                  v1::ListNextHopGroupsResponse* response) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  return s.RawStub()->ListNextHopGroups(&context, request, response);
}

std::vector<uint32_t> Ids(const v1::ListNextHopGroupsResponse& response) {
  std::vector<uint32_t> out;
  for (const auto& g : response.groups()) out.push_back(g.id());
  return out;
}

}  // namespace

TEST_CASE("control server: ListNextHopGroups round trip", "[control][server][nexthop-groups]") {
  Serving<FakeBackend> s;
  auto client = s.Client();

  auto all = client->ListNextHopGroups({});
  REQUIRE(all.ok());
  CHECK(MessageDifferencer::Equals(*all, SampleNextHopGroups()));  // every field survives the trip
  CHECK(s.backend.calls().back() == Call{"ListNextHopGroups", "", ""});
  // Spot checks that the sample is what the other tests think it is.
  REQUIRE(all->groups_size() == 2);
  const v1::NextHopGroup& g = all->groups(0);
  CHECK(g.id() == 7);
  CHECK(g.family() == "ipv4-unicast");
  CHECK(g.prefixes() == 12);
  REQUIRE(g.members_size() == 4);
  CHECK(g.members(0).next_hop() == "192.0.2.2");
  CHECK(g.members(0).bandwidth_bps() == 100e9);
  CHECK(g.members(0).link_bandwidth() == "LB:65002:1.25e+10B/s (100Gbps) transitive");
  CHECK(g.members(1).damping_state() == "pending-increase");
  CHECK(g.members(1).pending_until_unix_ms() == kNowUnixMs + 21000);
  CHECK(g.members(1).applied_bandwidth_bps() == 2.5e9);
  CHECK(g.members(1).weight() == 1);
  CHECK(g.members(1).target_weight() == 2);
  CHECK(g.members(1).penalty() == 2);
  CHECK(g.members(1).next_increase_hold_down_s() == 60);
  CHECK(g.members(2).bandwidth_source() == "drained");
  CHECK(g.members(2).weight() == 0);
  CHECK(all->settings().max_weight() == 255);
  CHECK(all->settings().group_budget() == 64);
  CHECK(all->settings().increase_hold_down_s() == 30);
  CHECK(all->counters().route_updates() == 1200);
  CHECK(all->groups(1).max_error() == Approx(0.0075757).epsilon(1e-3));

  SECTION("one group by id") {
    auto one = client->ListNextHopGroups(ById(8));
    REQUIRE(one.ok());
    CHECK(Ids(*one) == std::vector<uint32_t>{8});
    CHECK(one->settings().max_weight() == 255);  // settings and counters come with every answer
    CHECK(s.backend.calls().back() == Call{"ListNextHopGroups", "", "8"});
  }
  SECTION("the group of a route, the prefix canonical before the backend sees it") {
    auto r = client->ListNextHopGroups(ByPrefix("192.0.2.77/24"));
    REQUIRE(r.ok());
    CHECK(Ids(*r) == std::vector<uint32_t>{7});
    CHECK(s.backend.calls().back() == Call{"ListNextHopGroups", "192.0.2.0/24", ""});
    r = client->ListNextHopGroups(ByPrefix("2001:DB8:0::/32"));
    REQUIRE(r.ok());
    CHECK(Ids(*r) == std::vector<uint32_t>{8});
    CHECK(s.backend.calls().back() == Call{"ListNextHopGroups", "2001:db8::/32", ""});
  }
  SECTION("an address: the group of the most specific route covering it") {
    auto r = client->ListNextHopGroups(ByPrefix("2001:DB8::1:2"));
    REQUIRE(r.ok());
    CHECK(Ids(*r) == std::vector<uint32_t>{8});
    CHECK(s.backend.calls().back() == Call{"ListNextHopGroups", "2001:db8::1:2", ""});
  }
  SECTION("no groups at all is an empty answer, not an error") {
    v1::ListNextHopGroupsResponse none = SampleNextHopGroups();
    none.clear_groups();
    s.backend.SetNextHopGroups(none);
    auto r = client->ListNextHopGroups({});
    REQUIRE(r.ok());
    CHECK(r->groups().empty());
    CHECK(r->settings().group_budget() == 64);
  }
}

TEST_CASE("control server: ListNextHopGroups NOT_FOUND", "[control][server][nexthop-groups]") {
  Serving<FakeBackend> s;
  auto client = s.Client();

  SECTION("the backend's NOT_FOUND passes through with its message") {
    auto r = client->ListNextHopGroups(ById(99));
    CHECK(r.status().code() == absl::StatusCode::kNotFound);
    CHECK(r.status().message() == "no next-hop group 99");
    r = client->ListNextHopGroups(ByPrefix("203.0.113.0/24"));
    CHECK(r.status().code() == absl::StatusCode::kNotFound);
    CHECK(r.status().message() == "no route for 203.0.113.0/24");
    r = client->ListNextHopGroups(ByPrefix("198.51.100.7"));
    CHECK(r.status().code() == absl::StatusCode::kNotFound);
    CHECK(r.status().message() == "route 198.51.100.0/24 has no next-hop group");
  }
  SECTION("an empty answer to an id or a prefix becomes NOT_FOUND in the server") {
    auto routes = SampleRoutes();
    routes.mutable_routes(0)->set_nexthop_group(99);  // a group the fake does not have
    s.backend.SetRoutes(routes);
    auto r = client->ListNextHopGroups(ByPrefix("192.0.2.0/24"));
    CHECK(r.status().code() == absl::StatusCode::kNotFound);
    CHECK(r.status().message() == "no next-hop group for 192.0.2.0/24");
    r = client->ListNextHopGroups(ByPrefix("192.0.2.1"));
    CHECK(r.status().code() == absl::StatusCode::kNotFound);
    CHECK(r.status().message() == "no next-hop group for the route covering 192.0.2.1");
  }
}

TEST_CASE("control server: a bad ListNextHopGroups request is INVALID_ARGUMENT and never reaches the backend",
          "[control][server][nexthop-groups]") {
  Serving<FakeBackend> s;
  struct Bad {
    uint32_t id;
    const char* prefix;
    const char* message;
  };
  for (const Bad& bad : {
           Bad{7, "192.0.2.0/24", "give a next-hop group id or a prefix, not both (id 7, prefix '192.0.2.0/24')"},
           Bad{1, "spine-1", "give a next-hop group id or a prefix, not both (id 1, prefix 'spine-1')"},
           Bad{0, "spine-1",
               "'spine-1' is not a prefix or address: expected an IPv4 or IPv6 prefix or address such as "
               "192.0.2.0/24, 2001:db8::/32 or 192.0.2.1"},
           Bad{0, "192.0.2.0/33", "'192.0.2.0/33' is not a prefix: the length must be 0 to 32 for IPv4"},
       }) {
    INFO(bad.id << " / " << bad.prefix);
    v1::ListNextHopGroupsRequest request;
    request.set_id(bad.id);
    request.set_prefix(bad.prefix);
    const size_t calls_before = s.backend.calls().size();
    v1::ListNextHopGroupsResponse response;
    const grpc::Status status = RawListNextHopGroups(s, request, &response);
    CHECK(status.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
    CHECK(status.error_message() == bad.message);
    CHECK(s.backend.calls().size() == calls_before);
    // The client refuses the same, with the same words, before sending.
    auto client = s.Client();
    auto local = client->ListNextHopGroups(request);
    CHECK(local.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK(local.status().message() == bad.message);
    CHECK(s.backend.calls().size() == calls_before);
  }
}

TEST_CASE("control server: what the backend says about next-hop groups", "[control][server][nexthop-groups]") {
  Serving<FakeBackend> s;
  auto client = s.Client();

  SECTION("its errors pass through with their code and message") {
    s.backend.FailRibCalls(absl::UnavailableError("the weights are still being computed"));
    auto r = client->ListNextHopGroups({});
    CHECK(r.status().code() == absl::StatusCode::kUnavailable);
    CHECK_THAT(std::string(r.status().message()), Catch::Contains("the weights are still being computed"));
    s.backend.FailRibCalls(absl::DeadlineExceededError("bagd did not answer within 5 s"));
    r = client->ListNextHopGroups(ById(7));
    // The client words a DEADLINE_EXCEEDED itself ("bagd at ... did not answer within 5 s").
    CHECK(r.status().code() == absl::StatusCode::kDeadlineExceeded);
  }
  SECTION("an exception becomes INTERNAL") {
    s.backend.ThrowOnNextCall();
    auto r = client->ListNextHopGroups({});
    CHECK(r.status().code() == absl::StatusCode::kInternal);
    CHECK(r.status().message() == "ListNextHopGroups failed inside bagd: backend exploded");
    CHECK(client->ListNextHopGroups({}).ok());
  }
  SECTION("ill-formed UTF-8 is replaced before it is sent") {
    auto groups = SampleNextHopGroups();
    groups.mutable_groups(0)->mutable_members(0)->set_link_bandwidth("LB \xff");
    s.backend.SetNextHopGroups(groups);
    auto got = client->ListNextHopGroups({});
    REQUIRE(got.ok());
    CHECK(got->groups(0).members(0).link_bandwidth() == "LB \xef\xbf\xbd");
  }
}

TEST_CASE("control server: ListNextHopGroups without a routing table is UNIMPLEMENTED",
          "[control][server][nexthop-groups]") {
  Serving<NeighborsOnlyBackend> s;
  auto client = s.Client();
  auto r = client->ListNextHopGroups({});
  CHECK(r.status().code() == absl::StatusCode::kUnimplemented);
  CHECK(r.status().message() == ControlBackend::kNoRibMessage);
  r = client->ListNextHopGroups(ById(7));
  CHECK(r.status().code() == absl::StatusCode::kUnimplemented);
  CHECK(client->ListNeighbors("").ok());
}
