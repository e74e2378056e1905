// ListRoutes is server streaming (control.proto): pages of at most page_size routes, each
// page asked of the backend after the last prefix sent, so a table that changes between
// pages is still listed in order without repeats; bagctl prints the pages as they arrive,
// and its text and JSON are what they were for a single answer.
#include <google/protobuf/util/json_util.h>
#include <google/protobuf/util/message_differencer.h>
#include <grpcpp/grpcpp.h>

#include <catch2/catch.hpp>
#include <algorithm>
#include <chrono>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "absl/strings/str_cat.h"
#include "bgpd/control/control.grpc.pb.h"
#include "bgpd/control/control_client.h"
#include "net/ip_prefix.h"
#include "tests/control/fake_backend.h"
#include "tests/control/serving.h"
#include "tools/bagctl/control_commands.h"
#include "tools/bagctl/neighbor_render.h"
#include "tools/bagctl/route_render.h"

using namespace bagd::control;
using bagd::control::testing::FakeBackend;
using bagd::control::testing::Serving;
using google::protobuf::util::MessageDifferencer;

namespace {

// Table order (control.proto): IPv4 before IPv6, then address, then length.
bool TableOrder(const std::string& a, const std::string& b) {
  const auto pa = *bagd::net::Prefix::Parse(a), pb = *bagd::net::Prefix::Parse(b);
  if (pa.afi() != pb.afi()) return pa.afi() < pb.afi();
  return pa < pb;
}

v1::Route MakeRoute(const std::string& prefix, int paths = 1) {
  v1::Route r;
  r.set_prefix(prefix);
  for (int i = 0; i < paths; ++i) {
    v1::RoutePath* p = r.add_paths();
    p->set_peer(absl::StrCat("192.0.2.", i + 2));
    p->set_peer_as(65002 + i);
    p->set_best(i == 0);
    p->set_next_hop(p->peer());
    p->set_origin("igp");
    p->set_as_path(absl::StrCat(65002 + i, " 65010"));
    p->set_local_pref(100);
  }
  return r;
}

// `prefixes` in table order as a table.
v1::ListRoutesResponse Table(std::vector<std::string> prefixes, int paths = 1) {
  std::sort(prefixes.begin(), prefixes.end(), TableOrder);
  v1::ListRoutesResponse t;
  for (const std::string& p : prefixes) *t.add_routes() = MakeRoute(p, paths);
  return t;
}

// n IPv4 /24s 10.i/256.i%256.0/24 (all the same width in a text table).
std::vector<std::string> V4Prefixes(int n) {
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) out.push_back(absl::StrCat("10.", 100 + i / 256, ".", i % 256, ".0/24"));
  return out;
}

struct Stream {
  grpc::Status status;
  std::vector<v1::ListRoutesResponse> pages;
  std::vector<std::string> prefixes() const {
    std::vector<std::string> out;
    for (const auto& page : pages)
      for (const auto& r : page.routes()) out.push_back(r.prefix());
    return out;
  }
};

Stream RawStream(Serving<FakeBackend>& s, const v1::ListRoutesRequest& request) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(20));
  auto stub = s.RawStub();
  auto reader = stub->ListRoutes(&context, request);
  Stream out;
  v1::ListRoutesResponse page;
  while (reader->Read(&page)) out.pages.push_back(page);
  out.status = reader->Finish();
  return out;
}

v1::ListRoutesRequest PageSize(uint32_t n, uint32_t limit = 0) {
  v1::ListRoutesRequest r;
  r.set_page_size(n);
  r.set_limit(limit);
  return r;
}

std::vector<size_t> Sizes(const Stream& s) {
  std::vector<size_t> out;
  for (const auto& p : s.pages) out.push_back(static_cast<size_t>(p.routes_size()));
  return out;
}

}  // namespace

TEST_CASE("ListRoutes stream: pages of at most page_size routes, in order", "[control][server][routes][stream]") {
  Serving<FakeBackend> s;
  const auto prefixes = V4Prefixes(2500);
  s.backend.SetRoutes(Table(prefixes));

  SECTION("page_size 1000: three pages, every route once, the cursor is the last prefix sent") {
    Stream got = RawStream(s, PageSize(1000));
    REQUIRE(got.status.ok());
    CHECK(Sizes(got) == std::vector<size_t>{1000, 1000, 500});
    std::vector<std::string> want = prefixes;
    std::sort(want.begin(), want.end(), TableOrder);
    CHECK(got.prefixes() == want);
    for (const auto& page : got.pages) CHECK_FALSE(page.truncated());
    const auto requests = s.backend.routes_requests();
    REQUIRE(requests.size() == 3);
    CHECK(requests[0].after().empty());
    CHECK(requests[1].after() == want[999]);
    CHECK(requests[2].after() == want[1999]);
    for (size_t n : s.backend.page_sizes_asked()) CHECK(n <= 1000);
  }
  SECTION("page_size 0 is 1000; more than 5000 is 5000") {
    CHECK(Sizes(RawStream(s, PageSize(0))) == std::vector<size_t>{1000, 1000, 500});
    CHECK(s.backend.routes_requests().back().page_size() == 1000);
    CHECK(Sizes(RawStream(s, PageSize(1000000))) == std::vector<size_t>{2500});
    CHECK(s.backend.page_sizes_asked().back() == 5000);
  }
  SECTION("a limit across pages: the last page is cut and says truncated") {
    Stream got = RawStream(s, PageSize(1000, 2300));
    REQUIRE(got.status.ok());
    CHECK(Sizes(got) == std::vector<size_t>{1000, 1000, 300});
    CHECK(s.backend.page_sizes_asked() == std::vector<size_t>{1000, 1000, 300});
    CHECK_FALSE(got.pages[0].truncated());
    CHECK(got.pages.back().truncated());
    // A limit on a page boundary with nothing after it is not truncated.
    got = RawStream(s, PageSize(500, 2500));
    CHECK(Sizes(got).size() == 5);
    CHECK_FALSE(got.pages.back().truncated());
  }
  SECTION("an empty table is one empty page") {
    s.backend.SetRoutes({});
    Stream got = RawStream(s, PageSize(1000));
    REQUIRE(got.status.ok());
    CHECK(Sizes(got) == std::vector<size_t>{0});
  }
  SECTION("after: resume where a broken stream stopped") {
    std::vector<std::string> want = prefixes;
    std::sort(want.begin(), want.end(), TableOrder);
    v1::ListRoutesRequest r = PageSize(1000);
    r.set_after(want[2399]);
    Stream got = RawStream(s, r);
    REQUIRE(got.status.ok());
    CHECK(got.prefixes() == std::vector<std::string>(want.begin() + 2400, want.end()));
    r.set_after("10.100.0.7/24");  // host bits are cleared: 10.100.0.0/24
    CHECK(RawStream(s, r).prefixes().front() == want[1]);
    r.set_after("10.100.0.0");
    CHECK(RawStream(s, r).status.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
    r.set_after("10.100.0.0/24");
    r.set_prefix("10.100.0.0/24");
    CHECK(RawStream(s, r).status.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  }
}

TEST_CASE("ListRoutes stream: routes added and removed between pages", "[control][server][routes][stream]") {
  Serving<FakeBackend> s;
  std::vector<std::string> prefixes = V4Prefixes(2500);
  std::sort(prefixes.begin(), prefixes.end(), TableOrder);
  s.backend.SetRoutes(Table(prefixes));
  // Page 0 sends prefixes[0..999]. Before page 1 is built: one route behind the cursor and
  // one ahead of it are withdrawn, one is added behind and one ahead, and IPv6 appears.
  const std::string removed_behind = prefixes[10], removed_ahead = prefixes[1500];
  const std::string added_behind = "10.100.5.128/25", added_ahead = "10.108.0.128/25";
  REQUIRE(TableOrder(added_behind, prefixes[999]));
  REQUIRE(TableOrder(prefixes[2000], added_ahead));
  s.backend.BeforeEachPage([&](int page, v1::ListRoutesResponse& routes) {
    if (page != 1) return;
    std::vector<std::string> now;
    for (const auto& r : routes.routes()) {
      if (r.prefix() != removed_behind && r.prefix() != removed_ahead) now.push_back(r.prefix());
    }
    now.push_back(added_behind);
    now.push_back(added_ahead);
    now.push_back("2001:db8::/32");
    routes = Table(now);
  });
  Stream got = RawStream(s, PageSize(1000));
  REQUIRE(got.status.ok());
  const std::vector<std::string> seen = got.prefixes();
  // In order, no prefix twice.
  CHECK(std::is_sorted(seen.begin(), seen.end(), TableOrder));
  CHECK(std::set<std::string>(seen.begin(), seen.end()).size() == seen.size());
  auto shown = [&](const std::string& p) { return std::find(seen.begin(), seen.end(), p) != seen.end(); };
  CHECK(shown(removed_behind));  // sent before it went
  CHECK_FALSE(shown(removed_ahead));
  CHECK_FALSE(shown(added_behind));  // behind the cursor when it came
  CHECK(shown(added_ahead));
  CHECK(shown("2001:db8::/32"));
  CHECK(seen.size() == 2500 - 1 + 1 + 1);
  CHECK(seen.back() == "2001:db8::/32");
}

TEST_CASE("ListRoutes stream: a client that stops early cancels the rest", "[control][client][routes][stream]") {
  Serving<FakeBackend> s;
  // 20k routes of four paths with long AS paths (about 1 KiB each, 20 MiB in all): far more
  // than gRPC buffers, so the server must stop building pages once the client is gone.
  auto table = Table(V4Prefixes(20000), 4);
  for (auto& r : *table.mutable_routes())
    for (auto& p : *r.mutable_paths()) p.set_as_path(std::string(200, '1'));
  s.backend.SetRoutes(table);
  auto client = s.Client();
  int pages = 0;
  absl::Status st = client->ListRoutes({}, [&](v1::ListRoutesResponse&) {
    ++pages;
    return absl::CancelledError("enough");
  });
  CHECK(st.code() == absl::StatusCode::kCancelled);
  CHECK(st.message() == "enough");
  CHECK(pages == 1);
  // The server may be a page or two ahead; it must not have built all twenty.
  for (int i = 0; i < 100 && s.backend.page_sizes_asked().size() < 3; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));  // let a page in progress end
  }
  CHECK(s.backend.page_sizes_asked().size() < 20);
}

namespace {

struct Run {
  int code;
  std::string out, err;
};

Run Bagctl(std::vector<std::string> args) {
  std::ostringstream out, err;
  const int code = bagd::bagctl::RunControlCommand(args, nullptr, out, err);
  return {code, out.str(), err.str()};
}

}  // namespace

TEST_CASE("bagctl show routes over several pages: the same text and JSON as one answer",
          "[control][bagctl][routes][stream]") {
  Serving<FakeBackend> s;
  const auto table = Table(V4Prefixes(2500));  // bagctl asks for the default 1000 per page
  s.backend.SetRoutes(table);
  const std::string socket = s.dir.SocketPath();

  SECTION("text: the header once, every line, the counts") {
    Run r = Bagctl({"--socket", socket, "show", "routes"});
    REQUIRE(r.code == 0);
    CHECK(s.backend.page_sizes_asked().size() == 3);
    CHECK(r.out == bagd::bagctl::RenderRouteTable(table));
    CHECK_THAT(r.out, Catch::EndsWith("\nDisplayed 2500 prefixes and 2500 paths\n"));
  }
  SECTION("text with --limit across pages") {
    Run r = Bagctl({"--socket", socket, "show", "routes", "--limit", "1500"});
    REQUIRE(r.code == 0);
    CHECK_THAT(r.out, Catch::EndsWith("\nDisplayed the first 1500 prefixes and 1500 paths; more routes were left out (--limit)\n"));
  }
  SECTION("JSON: one valid document, as RenderProtoJson of the whole answer") {
    Run r = Bagctl({"--socket", socket, "show", "routes", "--json"});
    REQUIRE(r.code == 0);
    auto whole = bagd::bagctl::RenderProtoJson(table);
    REQUIRE(whole.ok());
    CHECK(r.out == *whole + (whole->back() == '\n' ? "" : "\n"));
    v1::ListRoutesResponse parsed;
    REQUIRE(google::protobuf::util::JsonStringToMessage(r.out, &parsed).ok());
    CHECK(MessageDifferencer::Equals(parsed, table));
  }
  SECTION("JSON with --limit: truncated in the document") {
    Run r = Bagctl({"--socket", socket, "show", "routes", "--json", "--limit", "1001"});
    REQUIRE(r.code == 0);
    v1::ListRoutesResponse parsed;
    REQUIRE(google::protobuf::util::JsonStringToMessage(r.out, &parsed).ok());
    CHECK(parsed.routes_size() == 1001);
    CHECK(parsed.truncated());
  }
  SECTION("JSON of an empty table") {
    s.backend.SetRoutes({});
    Run r = Bagctl({"--socket", socket, "show", "routes", "--json"});
    REQUIRE(r.code == 0);
    auto whole = bagd::bagctl::RenderProtoJson(v1::ListRoutesResponse());
    REQUIRE(whole.ok());
    CHECK(r.out == *whole + (whole->back() == '\n' ? "" : "\n"));
  }
  SECTION("an error after some pages: exit 1 with the reason") {
    s.backend.BeforeEachPage([](int page, v1::ListRoutesResponse&) {
      if (page == 1) throw std::runtime_error("table on fire");
    });
    Run r = Bagctl({"--socket", socket, "show", "routes"});
    CHECK(r.code == 1);
    CHECK(r.err == "bagctl: ListRoutes failed inside bagd: table on fire\n");
  }
}

TEST_CASE("bagctl route table writer: columns widen for a later page", "[control][render][routes][stream]") {
  std::ostringstream out;
  bagd::bagctl::RouteTableWriter writer(out);
  writer.Add(Table({"10.0.0.0/24"}));
  writer.Add(Table({"2001:db8:1234:5678:9abc::/80"}));
  writer.Finish(false);
  const std::string text = out.str();
  CHECK_THAT(text, Catch::Contains("*> 10.0.0.0/24        192.0.2.2"));
  CHECK_THAT(text, Catch::Contains("*> 2001:db8:1234:5678:9abc::/80 192.0.2.2"));
  CHECK_THAT(text, Catch::EndsWith("\nDisplayed 2 prefixes and 2 paths\n"));
}
