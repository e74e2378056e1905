// The pure parts of the control API: request checks, UTF-8, status mapping, NOTIFICATIONs.
#include <catch2/catch.hpp>
#include <string>
#include <utility>
#include <vector>

#include "bgpd/control/control_requests.h"
#include "bgpd/control/grpc_status.h"
#include "bgpd/control/notification_proto.h"
#include "bgpd/control/utf8.h"

using namespace bagd;
using namespace bagd::control;

TEST_CASE("control requests: neighbor addresses", "[control][requests]") {
  CHECK(*CanonicalNeighborAddress("192.0.2.1") == "192.0.2.1");
  CHECK(*CanonicalNeighborAddress("2001:DB8:0:0:0:0:0:1") == "2001:db8::1");
  CHECK(*CanonicalNeighborAddress("::ffff:192.0.2.1") == "::ffff:192.0.2.1");
  for (const char* bad : {"", "192.0.2", "192.0.2.256", "spine-1", "192.0.2.1/32", "fe80::1%eth0", " 192.0.2.1"}) {
    INFO(bad);
    auto a = CanonicalNeighborAddress(bad);
    CHECK(a.status().code() == absl::StatusCode::kInvalidArgument);
  }
  CHECK(CanonicalNeighborAddress(std::string(100, 'x')).status().message() ==
        "'" + std::string(64, 'x') +
            "...' is not a neighbor address: expected an IPv4 or IPv6 address such as 192.0.2.1 or 2001:db8::1");
}

TEST_CASE("control requests: route prefixes and ListRoutes requests", "[control][requests][routes]") {
  CHECK(*CanonicalRoutePrefix("192.0.2.0/24") == "192.0.2.0/24");
  CHECK(*CanonicalRoutePrefix("192.0.2.77/24") == "192.0.2.0/24");  // host bits cleared
  CHECK(*CanonicalRoutePrefix("0.0.0.0/0") == "0.0.0.0/0");
  CHECK(*CanonicalRoutePrefix("10.1.2.3/32") == "10.1.2.3/32");
  CHECK(*CanonicalRoutePrefix("10.1.2.3") == "10.1.2.3");  // an address stays an address
  CHECK(*CanonicalRoutePrefix("2001:DB8:0:0::/32") == "2001:db8::/32");
  CHECK(*CanonicalRoutePrefix("2001:db8::1/128") == "2001:db8::1/128");
  CHECK(*CanonicalRoutePrefix("::/0") == "::/0");
  CHECK(*CanonicalRoutePrefix("2001:DB8::1") == "2001:db8::1");
  CHECK(*CanonicalRoutePrefix("192.0.2.0/024") == "192.0.2.0/24");
  for (const char* bad : {"", "/24", "192.0.2/24", "192.0.2.0/33", "192.0.2.0/-1", "192.0.2.0/ 24", "192.0.2.0/24 ",
                          "192.0.2.0/2a", "192.0.2.0/0024", "2001:db8::/129", "spine-1", "192.0.2.0/24/8"}) {
    INFO(bad);
    CHECK(CanonicalRoutePrefix(bad).status().code() == absl::StatusCode::kInvalidArgument);
  }

  v1::ListRoutesRequest request;
  auto all = CanonicalListRoutesRequest(request);
  REQUIRE(all.ok());
  CHECK(all->prefix().empty());
  CHECK(all->family().empty());
  request.set_family("ipv6-unicast");
  request.set_limit(10);
  auto v6 = CanonicalListRoutesRequest(request);
  REQUIRE(v6.ok());
  CHECK(v6->family() == "ipv6-unicast");
  CHECK(v6->limit() == 10);
  request.set_prefix("2001:DB8::/32");
  request.set_family("");
  auto one = CanonicalListRoutesRequest(request);
  REQUIRE(one.ok());
  CHECK(one->prefix() == "2001:db8::/32");
  CHECK(one->family() == "ipv6-unicast");  // filled in from the prefix
  request.set_family("ipv4-unicast");
  CHECK(CanonicalListRoutesRequest(request).status().message() ==
        "2001:db8::/32 is an IPv6 prefix, but the family asked for is ipv4-unicast");
  request.set_prefix("");
  request.set_family("IPv4-Unicast");
  CHECK(CanonicalListRoutesRequest(request).status().code() == absl::StatusCode::kInvalidArgument);
}

TEST_CASE("control requests: ListNextHopGroups requests", "[control][requests][nexthop-groups]") {
  v1::ListNextHopGroupsRequest request;
  auto all = CanonicalListNextHopGroupsRequest(request);
  REQUIRE(all.ok());
  CHECK(all->id() == 0);
  CHECK(all->prefix().empty());
  request.set_id(7);
  auto by_id = CanonicalListNextHopGroupsRequest(request);
  REQUIRE(by_id.ok());
  CHECK(by_id->id() == 7);
  request.set_prefix("192.0.2.0/24");  // both: which one was meant?
  auto both = CanonicalListNextHopGroupsRequest(request);
  CHECK(both.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(both.status().message() == "give a next-hop group id or a prefix, not both (id 7, prefix '192.0.2.0/24')");
  request.set_id(0);
  for (const auto& [given, canonical] : std::vector<std::pair<std::string, std::string>>{
           {"192.0.2.77/24", "192.0.2.0/24"},  // host bits cleared, as in ListRoutes
           {"2001:DB8:0::/32", "2001:db8::/32"},
           {"192.0.2.7", "192.0.2.7"},  // an address stays an address: longest match
           {"2001:DB8::1", "2001:db8::1"},
       }) {
    INFO(given);
    request.set_prefix(given);
    auto r = CanonicalListNextHopGroupsRequest(request);
    REQUIRE(r.ok());
    CHECK(r->prefix() == canonical);
    CHECK(r->id() == 0);
  }
  for (const char* bad : {"spine-1", "192.0.2.0/33", "2001:db8::/129", "192.0.2.0/"}) {
    INFO(bad);
    request.set_prefix(bad);
    auto r = CanonicalListNextHopGroupsRequest(request);
    CHECK(r.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK(r.status().message() == CanonicalRoutePrefix(bad).status().message());  // ListRoutes' words
  }
}

TEST_CASE("control requests: ClearNeighbor modes", "[control][requests][clear]") {
  using Mode = v1::ClearNeighborRequest;
  for (auto mode : {Mode::MODE_HARD, Mode::MODE_SOFT_IN, Mode::MODE_SOFT_OUT, Mode::MODE_SOFT}) {
    CHECK(CheckClearMode(mode).ok());
  }
  const absl::Status unspecified = CheckClearMode(Mode::MODE_UNSPECIFIED);
  CHECK(unspecified.code() == absl::StatusCode::kInvalidArgument);
  CHECK(unspecified.message() ==
        "ClearNeighbor needs a mode: MODE_HARD (reset the session), MODE_SOFT_IN, MODE_SOFT_OUT or MODE_SOFT");
  const absl::Status unknown = CheckClearMode(static_cast<Mode::Mode>(9));
  CHECK(unknown.code() == absl::StatusCode::kInvalidArgument);
  CHECK(unknown.message() ==
        "ClearNeighbor mode 9 is unknown to this bagd (MODE_HARD, MODE_SOFT_IN, MODE_SOFT_OUT or MODE_SOFT)");
}

TEST_CASE("control requests: RFC 9003 shutdown messages", "[control][requests]") {
  CHECK(CheckShutdownMessage("").ok());
  CHECK(CheckShutdownMessage(std::string(255, 'a')).ok());
  // 255 octets of three-octet characters (85 x U+2713) is the limit, 86 of them is not.
  std::string checks;
  for (int i = 0; i < 85; ++i) checks += "\xe2\x9c\x93";
  CHECK(CheckShutdownMessage(checks).ok());
  CHECK(CheckShutdownMessage(checks + "\xe2\x9c\x93").code() == absl::StatusCode::kInvalidArgument);
  CHECK(CheckShutdownMessage(std::string(256, 'a')).message() ==
        "the shutdown message is 256 octets of UTF-8; RFC 9003 allows at most 255");
  CHECK(CheckShutdownMessage("\xff").message() == "the shutdown message is not valid UTF-8 (RFC 9003 requires UTF-8)");
}

TEST_CASE("control requests: UTF-8 well-formedness (RFC 3629)", "[control][utf8]") {
  for (const char* good : {"", "ascii", "\xc3\xbc", "\xe2\x9c\x93", "\xf0\x9f\x98\x80", "\xef\xbf\xbd",
                           "\xed\x9f\xbf", "\xf4\x8f\xbf\xbf"}) {
    INFO(good);
    CHECK(IsValidUtf8(good));
    CHECK(ToValidUtf8(good) == good);
  }
  for (const char* bad : {"\x80", "\xbf", "\xc0\xaf", "\xc1\xbf", "\xc3", "\xe2\x9c", "\xe0\x80\xaf",
                          "\xed\xa0\x80" /* surrogate */, "\xf4\x90\x80\x80" /* > U+10FFFF */, "\xf5\x80\x80\x80",
                          "\xff", "ok\xc3("}) {
    INFO(bad);
    CHECK_FALSE(IsValidUtf8(bad));
    CHECK(IsValidUtf8(ToValidUtf8(bad)));
  }
  CHECK(ToValidUtf8("a\xffz") == "a\xef\xbf\xbdz");
  CHECK(ToValidUtf8("\xe2\x9c") == "\xef\xbf\xbd\xef\xbf\xbd");
  CHECK(IsValidUtf8(std::string("nul\0inside", 10)));
}

TEST_CASE("control requests: scrubbing a whole message", "[control][utf8]") {
  v1::ListNeighborsResponse response;
  auto* n = response.add_neighbors();
  n->set_address("192.0.2.2");
  n->set_description("bad\xff");
  n->mutable_negotiated()->add_families("ipv4-unicast");
  n->mutable_negotiated()->add_families("x\xc0");
  n->mutable_last_notification_sent()->set_data("\xff\xfe");  // bytes: left alone
  CHECK(ScrubInvalidUtf8(response) == 2);
  CHECK(n->description() == "bad\xef\xbf\xbd");
  CHECK(n->negotiated().families(0) == "ipv4-unicast");
  CHECK(n->negotiated().families(1) == "x\xef\xbf\xbd");
  CHECK(n->last_notification_sent().data() == "\xff\xfe");
  CHECK_FALSE(n->has_last_notification_received());  // absent messages stay absent
  CHECK(ScrubInvalidUtf8(response) == 0);
}

TEST_CASE("control requests: absl and gRPC status codes map one to one", "[control][status]") {
  for (int c = 0; c <= 16; ++c) {
    const absl::Status s(static_cast<absl::StatusCode>(c), c == 0 ? "" : "why");
    const grpc::Status g = ToGrpcStatus(s);
    CHECK(static_cast<int>(g.error_code()) == c);
    CHECK(FromGrpcStatus(g) == s);
  }
  CHECK(ToGrpcStatus(absl::NotFoundError("no neighbor 192.0.2.9 is configured")).error_code() ==
        grpc::StatusCode::NOT_FOUND);
  CHECK(ToGrpcStatus(absl::InvalidArgumentError("x")).error_message() == "x");
}

TEST_CASE("control requests: NOTIFICATIONs for the API", "[control][notification]") {
  const auto shutdown = wire::NotificationMessage::Shutdown(wire::cease::kAdministrativeShutdown, "maintenance");
  const v1::Notification n = NotificationToProto(shutdown, 1714564800000);
  CHECK(n.code() == 6);
  CHECK(n.subcode() == 2);
  CHECK(n.code_name() == "Cease");
  CHECK(n.subcode_name() == "Administrative Shutdown");
  CHECK(n.data() == std::string("\x0bmaintenance", 12));
  CHECK(n.shutdown_message() == "maintenance");
  CHECK(n.time_unix_ms() == 1714564800000);

  wire::NotificationMessage hold{4, 0, {}};
  const v1::Notification h = NotificationToProto(hold, 0);
  CHECK(h.code_name() == "Hold Timer Expired");
  CHECK(h.subcode_name() == "Unspecific");
  CHECK(h.shutdown_message().empty());

  wire::NotificationMessage garbage{6, 2, {2, 0xff, 0xfe}};  // a peer's broken RFC 9003 text
  CHECK(NotificationToProto(garbage, 0).shutdown_message() == "\xef\xbf\xbd\xef\xbf\xbd");
}
