// TestPolicy, ListPolicies and the ListRoutes neighbor views through a real ControlServer
// with the fake backend: what the server checks and makes canonical before the backend
// sees a request, and what it makes of the backend's answers.
#include <grpcpp/grpcpp.h>

#include <catch2/catch.hpp>
#include <chrono>

#include "bgpd/control/control_requests.h"
#include "tests/control/fake_backend.h"
#include "tests/control/serving.h"

using namespace bagd::control;
using bagd::control::testing::FakeBackend;
using bagd::control::testing::NeighborsOnlyBackend;
using bagd::control::testing::Serving;
using Call = FakeBackend::Call;

namespace {

grpc::Status RawTestPolicy(std::unique_ptr<v1::Control::Stub> stub, const v1::TestPolicyRequest& request,
                           v1::TestPolicyResponse* response) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  return stub->TestPolicy(&context, request, response);
}

}  // namespace

TEST_CASE("explain server: TestPolicy reaches the backend canonical", "[control][server][policy]") {
  Serving<FakeBackend> s;
  auto client = s.Client();
  v1::TestPolicyRequest request;
  request.set_policy("from-spines");
  request.set_prefix("192.0.2.77/24");
  request.set_neighbor("2001:DB8:0::2");
  request.mutable_attributes()->add_communities("65000:1");
  auto response = client->TestPolicy(request);
  REQUIRE(response.ok());
  CHECK(response->prefix() == "192.0.2.0/24");
  CHECK(response->verdict() == "accept");
  CHECK(s.backend.calls().back() == Call{"TestPolicy", "192.0.2.0/24", "2001:db8::2"});
  CHECK(s.backend.policy_requests().back().attributes().communities(0) == "65000:1");

  SECTION("the server refuses what the client would (a raw stub skips the client's checks)") {
    const auto refused = [&](v1::TestPolicyRequest r) {
      v1::TestPolicyResponse ignored;
      const grpc::Status st = RawTestPolicy(s.RawStub(), r, &ignored);
      CHECK(st.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
      return st.error_message();
    };
    v1::TestPolicyRequest r = request;
    r.clear_policy();
    CHECK(refused(r) == "a policy name is required");
    r = request;
    r.set_prefix("192.0.2.1");
    CHECK(refused(r) == "'192.0.2.1' is not a prefix: give it with a length, e.g. 192.0.2.0/24");
    r = request;
    r.set_source(v1::TestPolicyRequest::SOURCE_LOCAL);
    CHECK(refused(r) == "a local route comes from no neighbor (neighbor '2001:DB8:0::2' given)");
    r = request;
    r.set_source(static_cast<v1::TestPolicyRequest::Source>(9));
    CHECK(refused(r) == "route source 9 is unknown to this bagd (SOURCE_EBGP, SOURCE_IBGP or SOURCE_LOCAL)");
    r = request;
    r.set_neighbor("spine-1");
    CHECK(refused(r) == "'spine-1' is not a neighbor address: expected an IPv4 or IPv6 address such as 192.0.2.1 or 2001:db8::1");
    CHECK(s.backend.policy_requests().size() == 1);  // none of them reached it
  }
}

TEST_CASE("explain server: ListPolicies", "[control][server][policy]") {
  Serving<FakeBackend> s;
  v1::ListPoliciesResponse policies;
  auto* p = policies.add_policies();
  p->set_name("sane");
  auto* st = p->add_statements();
  st->set_name("bogons");
  st->set_hits(12);
  policies.add_policies()->set_name("to-spines");
  s.backend.SetPolicies(policies);
  auto client = s.Client();
  auto all = client->ListPolicies("");
  REQUIRE(all.ok());
  REQUIRE(all->policies_size() == 2);
  CHECK(all->policies(0).statements(0).hits() == 12);
  auto one = client->ListPolicies("to-spines");
  REQUIRE(one.ok());
  CHECK(one->policies_size() == 1);
  // A backend that answers nothing for a name: the server says NOT_FOUND.
  auto none = client->ListPolicies("nope");
  CHECK(none.status().code() == absl::StatusCode::kNotFound);
  CHECK(none.status().message() == "no policy \"nope\" is defined");
  CHECK(s.backend.calls().back() == Call{"ListPolicies", "nope", ""});
}

TEST_CASE("explain server: a backend without policies answers UNIMPLEMENTED", "[control][server][policy]") {
  Serving<NeighborsOnlyBackend> s;
  auto client = s.Client();
  v1::TestPolicyRequest request;
  request.set_policy("p");
  request.set_prefix("10.0.0.0/8");
  auto tested = client->TestPolicy(request);
  CHECK(tested.status().code() == absl::StatusCode::kUnimplemented);
  CHECK(tested.status().message() == ControlBackend::kNoPoliciesMessage);
  CHECK(client->ListPolicies("").status().code() == absl::StatusCode::kUnimplemented);
}

TEST_CASE("explain server: ListRoutes neighbor views", "[control][server][routes]") {
  Serving<FakeBackend> s;
  auto client = s.Client();
  v1::ListRoutesRequest request;
  request.set_view(v1::ListRoutesRequest::VIEW_RECEIVED);
  request.set_neighbor("2001:DB8::3");
  REQUIRE(client->ListRoutes(request).ok());
  CHECK(s.backend.routes_requests().back().neighbor() == "2001:db8::3");
  CHECK(s.backend.routes_requests().back().view() == v1::ListRoutesRequest::VIEW_RECEIVED);

  SECTION("NOT_FOUND for a prefix names the view") {
    request.set_prefix("203.0.113.0/24");
    auto got = client->ListRoutes(request);
    CHECK(got.status().code() == absl::StatusCode::kNotFound);
    CHECK(got.status().message() ==
          "no route for 203.0.113.0/24 among the routes received from 2001:db8::3 (before import policy)");
    request.set_view(v1::ListRoutesRequest::VIEW_ADVERTISED);
    request.set_prefix("203.0.113.9");
    got = client->ListRoutes(request);
    CHECK(got.status().message() == "no route covers 203.0.113.9 among the routes advertised to 2001:db8::3");
  }
  SECTION("the backend's FAILED_PRECONDITION reaches the client as is") {
    s.backend.FailRibCalls(absl::FailedPreconditionError("keep them first"));
    auto got = client->ListRoutes(request);
    CHECK(got.status().code() == absl::StatusCode::kFailedPrecondition);
    CHECK(got.status().message() == "keep them first");
  }
}

TEST_CASE("explain requests: CanonicalListRoutesRequest views", "[control][requests]") {
  v1::ListRoutesRequest r;
  r.set_neighbor("192.0.2.2");
  auto got = CanonicalListRoutesRequest(r);
  CHECK(got.status().message() ==
        "a neighbor ('192.0.2.2') needs a view of its routes: VIEW_RECEIVED, VIEW_ACCEPTED or VIEW_ADVERTISED "
        "(bagctl: --received, --accepted or --advertised)");
  r.clear_neighbor();
  r.set_view(v1::ListRoutesRequest::VIEW_ACCEPTED);
  got = CanonicalListRoutesRequest(r);
  CHECK(got.status().message() == "accepted routes are a neighbor's: give its address (bagctl: --neighbor ADDRESS)");
  r.set_view(static_cast<v1::ListRoutesRequest::View>(7));
  got = CanonicalListRoutesRequest(r);
  CHECK(got.status().message() ==
        "route view 7 is unknown to this bagd (VIEW_RIB, VIEW_RECEIVED, VIEW_ACCEPTED or VIEW_ADVERTISED)");
  r.set_view(v1::ListRoutesRequest::VIEW_ADVERTISED);
  r.set_neighbor("2001:DB8::0:2");
  r.set_prefix("2001:DB8::/32");
  got = CanonicalListRoutesRequest(r);
  REQUIRE(got.ok());
  CHECK(got->neighbor() == "2001:db8::2");
  CHECK(got->prefix() == "2001:db8::/32");
  CHECK(RouteViewName(v1::ListRoutesRequest::VIEW_RIB) == std::string("routing table"));
}
