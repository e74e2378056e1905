// ListRoutes and GetRibSummary end to end: a real ControlServer on a temporary Unix socket,
// the fake backend (or one without a routing table) behind it, ControlClient in front.
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
using bagd::control::testing::NeighborsOnlyBackend;
using bagd::control::testing::SampleRibSummary;
using bagd::control::testing::SampleRoutes;
using bagd::control::testing::TempDir;
using google::protobuf::util::MessageDifferencer;
using Call = FakeBackend::Call;

namespace {

using bagd::control::testing::Serving;

// A bare ListRoutes call (server streaming: every page's routes in `response`), for
// requests ControlClient would refuse to send.
template <typename Backend>
grpc::Status RawListRoutes(Serving<Backend>& s, const v1::ListRoutesRequest& request, v1::ListRoutesResponse* response) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  auto stub = s.RawStub();
  auto reader = stub->ListRoutes(&context, request);
  v1::ListRoutesResponse page;
  while (reader->Read(&page)) response->MergeFrom(page);
  return reader->Finish();
}

v1::ListRoutesRequest Request(std::string prefix, std::string family = "", uint32_t limit = 0) {
  v1::ListRoutesRequest r;
  r.set_prefix(std::move(prefix));
  r.set_family(std::move(family));
  r.set_limit(limit);
  return r;
}

std::vector<std::string> Prefixes(const v1::ListRoutesResponse& response) {
  std::vector<std::string> out;
  for (const auto& r : response.routes()) out.push_back(r.prefix());
  return out;
}

}  // namespace

TEST_CASE("control server: ListRoutes round trip", "[control][server][routes]") {
  Serving<FakeBackend> s;
  auto client = s.Client();

  auto all = client->ListRoutes({});
  REQUIRE(all.ok());
  CHECK(MessageDifferencer::Equals(*all, SampleRoutes()));  // every field survives the trip
  CHECK_FALSE(all->truncated());
  CHECK(s.backend.calls().back() == Call{"ListRoutes", "", ""});

  SECTION("a family") {
    auto v6 = client->ListRoutes(Request("", "ipv6-unicast"));
    REQUIRE(v6.ok());
    CHECK(Prefixes(*v6) == std::vector<std::string>{"2001:db8::/32"});
    CHECK(s.backend.calls().back() == Call{"ListRoutes", "", "ipv6-unicast"});
  }
  SECTION("a limit") {
    auto two = client->ListRoutes(Request("", "", 2));
    REQUIRE(two.ok());
    CHECK(Prefixes(*two) == std::vector<std::string>{"192.0.2.0/24", "198.51.100.0/24"});
    CHECK(two->truncated());
    CHECK(s.backend.routes_requests().back().limit() == 2);
    auto three = client->ListRoutes(Request("", "", 3));
    REQUIRE(three.ok());
    CHECK_FALSE(three->truncated());
  }
  SECTION("the server enforces the limit when the backend does not") {
    s.backend.IgnoreLimit();
    auto one = client->ListRoutes(Request("", "", 1));
    REQUIRE(one.ok());
    CHECK(Prefixes(*one) == std::vector<std::string>{"192.0.2.0/24"});
    CHECK(one->truncated());
  }
}

TEST_CASE("control server: ListRoutes for one prefix, canonical before the backend sees it",
          "[control][server][routes]") {
  Serving<FakeBackend> s;
  auto client = s.Client();

  SECTION("exact prefix, host bits cleared, family filled in") {
    auto r = client->ListRoutes(Request("192.0.2.77/24"));
    REQUIRE(r.ok());
    CHECK(Prefixes(*r) == std::vector<std::string>{"192.0.2.0/24"});
    CHECK(r->routes(0).paths_size() == 3);
    CHECK(s.backend.calls().back() == Call{"ListRoutes", "192.0.2.0/24", "ipv4-unicast"});
  }
  SECTION("IPv6 text in any form") {
    auto r = client->ListRoutes(Request("2001:DB8:0::/32"));
    REQUIRE(r.ok());
    CHECK(Prefixes(*r) == std::vector<std::string>{"2001:db8::/32"});
    CHECK(s.backend.calls().back() == Call{"ListRoutes", "2001:db8::/32", "ipv6-unicast"});
  }
  SECTION("an address: the most specific route covering it") {
    auto r = client->ListRoutes(Request("2001:DB8::1:2"));
    REQUIRE(r.ok());
    CHECK(Prefixes(*r) == std::vector<std::string>{"2001:db8::/32"});
    CHECK(s.backend.calls().back() == Call{"ListRoutes", "2001:db8::1:2", "ipv6-unicast"});
  }
  SECTION("no such route is NOT_FOUND") {
    auto r = client->ListRoutes(Request("203.0.113.0/24"));
    CHECK(r.status().code() == absl::StatusCode::kNotFound);
    CHECK(r.status().message() == "no route for 203.0.113.0/24 in the routing table");
    r = client->ListRoutes(Request("203.0.113.9"));
    CHECK(r.status().code() == absl::StatusCode::kNotFound);
    CHECK(r.status().message() == "no route covers 203.0.113.9 in the routing table");
  }
}

TEST_CASE("control server: a bad prefix or family is INVALID_ARGUMENT and never reaches the backend",
          "[control][server][routes]") {
  Serving<FakeBackend> s;
  struct Bad {
    const char* prefix;
    const char* family;
    const char* message;
  };
  for (const Bad& bad : {
           Bad{"spine-1", "",
               "'spine-1' is not a prefix or address: expected an IPv4 or IPv6 prefix or address such as "
               "192.0.2.0/24, 2001:db8::/32 or 192.0.2.1"},
           Bad{"192.0.2.0/33", "", "'192.0.2.0/33' is not a prefix: the length must be 0 to 32 for IPv4"},
           Bad{"2001:db8::/129", "", "'2001:db8::/129' is not a prefix: the length must be 0 to 128 for IPv6"},
           Bad{"192.0.2.0/", "", "'192.0.2.0/' is not a prefix: the length must be 0 to 32 for IPv4"},
           Bad{"192.0.2.0/+8", "", "'192.0.2.0/+8' is not a prefix: the length must be 0 to 32 for IPv4"},
           Bad{"", "ipv4", "'ipv4' is not an address family: expected ipv4-unicast or ipv6-unicast (or none for both)"},
           Bad{"", "l2vpn-evpn",
               "'l2vpn-evpn' is not an address family: expected ipv4-unicast or ipv6-unicast (or none for both)"},
           Bad{"192.0.2.0/24", "ipv6-unicast",
               "192.0.2.0/24 is an IPv4 prefix, but the family asked for is ipv6-unicast"},
       }) {
    INFO(bad.prefix << " / " << bad.family);
    const size_t calls_before = s.backend.calls().size();
    v1::ListRoutesResponse response;
    const grpc::Status status = RawListRoutes(s, Request(bad.prefix, bad.family), &response);
    CHECK(status.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
    CHECK(status.error_message() == bad.message);
    CHECK(s.backend.calls().size() == calls_before);
    // The client refuses the same, with the same words, before sending.
    auto client = s.Client();
    auto local = client->ListRoutes(Request(bad.prefix, bad.family));
    CHECK(local.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK(local.status().message() == bad.message);
    CHECK(s.backend.calls().size() == calls_before);
  }
}

TEST_CASE("control server: GetRibSummary round trip", "[control][server][routes]") {
  Serving<FakeBackend> s;
  auto client = s.Client();
  auto summary = client->GetRibSummary();
  REQUIRE(summary.ok());
  CHECK(MessageDifferencer::Equals(*summary, SampleRibSummary()));
  CHECK(s.backend.calls().back() == Call{"GetRibSummary", "", ""});
}

TEST_CASE("control server: what the backend says about routes", "[control][server][routes]") {
  Serving<FakeBackend> s;
  auto client = s.Client();

  SECTION("its errors pass through with their code and message") {
    s.backend.FailRibCalls(absl::UnavailableError("the RIB is still loading"));
    auto routes = client->ListRoutes({});
    CHECK(routes.status().code() == absl::StatusCode::kUnavailable);
    CHECK_THAT(std::string(routes.status().message()), Catch::Contains("the RIB is still loading"));
    auto summary = client->GetRibSummary();
    CHECK(summary.status().code() == absl::StatusCode::kUnavailable);
  }
  SECTION("an exception becomes INTERNAL") {
    s.backend.ThrowOnNextCall();
    auto routes = client->ListRoutes({});
    CHECK(routes.status().code() == absl::StatusCode::kInternal);
    CHECK(routes.status().message() == "ListRoutes failed inside bagd: backend exploded");
    s.backend.ThrowOnNextCall();
    auto summary = client->GetRibSummary();
    CHECK(summary.status().code() == absl::StatusCode::kInternal);
    CHECK(summary.status().message() == "GetRibSummary failed inside bagd: backend exploded");
    CHECK(client->ListRoutes({}).ok());
  }
  SECTION("ill-formed UTF-8 is replaced before it is sent") {
    auto routes = SampleRoutes();
    routes.mutable_routes(0)->mutable_paths(0)->set_communities(0, "bad \xff");
    s.backend.SetRoutes(routes);
    auto got = client->ListRoutes({});
    REQUIRE(got.ok());
    CHECK(got->routes(0).paths(0).communities(0) == "bad \xef\xbf\xbd");
  }
}

TEST_CASE("control server: a backend without a routing table answers UNIMPLEMENTED", "[control][server][routes]") {
  Serving<NeighborsOnlyBackend> s;
  auto client = s.Client();
  auto routes = client->ListRoutes({});
  CHECK(routes.status().code() == absl::StatusCode::kUnimplemented);
  CHECK(routes.status().message() == "the routing table is not available in this bagd");
  auto summary = client->GetRibSummary();
  CHECK(summary.status().code() == absl::StatusCode::kUnimplemented);
  CHECK(summary.status().message() == ControlBackend::kNoRibMessage);
  CHECK(client->ListNeighbors("").ok());  // the rest of the API works as before
}

TEST_CASE("control client: a bagd older than the client says so", "[control][client][routes]") {
  // The generated base class answers every method UNIMPLEMENTED without a message, as
  // gRPC does for a method the server does not know (a bagd from before ListRoutes).
  TempDir dir;
  const std::string path = dir.path() + "/old.sock";
  v1::Control::Service unimplemented;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix:" + path, grpc::InsecureServerCredentials());
  builder.RegisterService(&unimplemented);
  auto server = builder.BuildAndStart();
  REQUIRE(server != nullptr);
  auto client = ControlClient::Connect(path);
  REQUIRE(client.ok());
  auto routes = (*client)->ListRoutes({});
  CHECK(routes.status().code() == absl::StatusCode::kUnimplemented);
  CHECK(routes.status().message() ==
        "bagd at " + path + " does not support this request (it is older than this bagctl)");
  server->Shutdown();
}
