// ControlServer and ControlClient end to end: a real server on a temporary Unix socket,
// the fake backend behind it, the client code bagctl uses in front of it.
#include <grpcpp/grpcpp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <atomic>
#include <chrono>
#include <cstring>
#include <fstream>
#include <thread>

#include "bgpd/control/control.grpc.pb.h"
#include "bgpd/control/control_client.h"
#include "bgpd/control/control_server.h"
#include "tests/control/fake_backend.h"
#include "tests/control/serving.h"

using namespace bagd::control;
using bagd::control::testing::FakeBackend;
using bagd::control::testing::TempDir;
using Call = FakeBackend::Call;

namespace {

using Running = bagd::control::testing::Serving<FakeBackend>;

mode_t ModeOf(const std::string& path) {
  struct stat st;
  REQUIRE(::lstat(path.c_str(), &st) == 0);
  return st.st_mode;
}

bool Exists(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

// A Unix socket bound at `path`: listening (never accepting) or not.
int BindUnixSocket(const std::string& path, bool listen) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.data(), path.size());
  REQUIRE(::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0);
  if (listen) REQUIRE(::listen(fd, 8) == 0);
  return fd;
}

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

TEST_CASE("control server: ListNeighbors, all and filtered", "[control][server]") {
  Running r;
  auto client = r.Client();

  auto all = client->ListNeighbors("");
  REQUIRE(all.ok());
  REQUIRE(all->neighbors_size() == 3);
  CHECK(all->neighbors(0).address() == "192.0.2.2");
  CHECK(all->neighbors(0).negotiated().families_size() == 2);
  CHECK(all->neighbors(0).last_notification_received().shutdown_message() == "maintenance");
  CHECK(all->neighbors(1).address() == "2001:db8::3");
  CHECK(all->neighbors(2).admin_down_message() == "RMA ticket 4711");

  auto one = client->ListNeighbors("192.0.2.2");
  REQUIRE(one.ok());
  REQUIRE(one->neighbors_size() == 1);
  CHECK(one->neighbors(0).prefixes_received() == 1200);

  SECTION("the backend sees canonical addresses") {
    auto v6 = client->ListNeighbors("2001:DB8:0:0::3");
    REQUIRE(v6.ok());
    REQUIRE(v6->neighbors_size() == 1);
    CHECK(r.backend.calls().back() == Call{"ListNeighbors", "2001:db8::3", ""});
  }
  SECTION("an unknown neighbor is NOT_FOUND") {
    auto none = client->ListNeighbors("192.0.2.99");
    CHECK(none.status().code() == absl::StatusCode::kNotFound);
    CHECK(none.status().message() == "no neighbor 192.0.2.99 is configured");
  }
  SECTION("an unparsable address is INVALID_ARGUMENT and never reaches the backend") {
    const size_t calls_before = r.backend.calls().size();
    auto bad = client->ListNeighbors("spine-1");
    CHECK(bad.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK(bad.status().message() ==
          "'spine-1' is not a neighbor address: expected an IPv4 or IPv6 address such as 192.0.2.1 or 2001:db8::1");
    CHECK(r.backend.calls().size() == calls_before);
  }
}

TEST_CASE("control server: shutdown and enable", "[control][server]") {
  Running r;
  auto client = r.Client();

  REQUIRE(client->ShutdownNeighbor("192.0.2.2", "maintenance window 22:00-23:00 UTC, ticket 1234").ok());
  CHECK(r.backend.calls().back() ==
        Call{"ShutdownNeighbor", "192.0.2.2", "maintenance window 22:00-23:00 UTC, ticket 1234"});
  auto after = client->ListNeighbors("192.0.2.2");
  REQUIRE(after.ok());
  CHECK(after->neighbors(0).admin_down());
  CHECK(after->neighbors(0).admin_down_message() == "maintenance window 22:00-23:00 UTC, ticket 1234");

  REQUIRE(client->EnableNeighbor("192.0.2.2").ok());
  CHECK(r.backend.calls().back() == Call{"EnableNeighbor", "192.0.2.2", ""});
  after = client->ListNeighbors("192.0.2.2");
  REQUIRE(after.ok());
  CHECK_FALSE(after->neighbors(0).admin_down());

  SECTION("no message, and a message of exactly 255 octets, are fine") {
    CHECK(client->ShutdownNeighbor("2001:db8::3", "").ok());
    CHECK(client->ShutdownNeighbor("2001:db8::3", std::string(255, 'x')).ok());
    CHECK(r.backend.calls().back().message.size() == 255);
  }
  SECTION("multi-octet UTF-8 passes through unchanged") {
    const std::string msg = "Wartung \xc3\xbc\x62\x65r Nacht \xe2\x9c\x93";
    CHECK(client->ShutdownNeighbor("192.0.2.4", msg).ok());
    CHECK(r.backend.calls().back().message == msg);
  }
  SECTION("an unknown neighbor is NOT_FOUND with the backend's message") {
    auto s = client->ShutdownNeighbor("192.0.2.99", "x");
    CHECK(s.code() == absl::StatusCode::kNotFound);
    CHECK(s.message() == "no neighbor 192.0.2.99 is configured");
    s = client->EnableNeighbor("192.0.2.99");
    CHECK(s.code() == absl::StatusCode::kNotFound);
  }
  SECTION("an unparsable address is INVALID_ARGUMENT") {
    CHECK(client->EnableNeighbor("").code() == absl::StatusCode::kInvalidArgument);
    CHECK(client->EnableNeighbor("").message() == "a neighbor address is required");
    CHECK(client->ShutdownNeighbor("10.0.0.256", "").code() == absl::StatusCode::kInvalidArgument);
  }
}

TEST_CASE("control server: ClearNeighbor", "[control][server][clear]") {
  using Mode = v1::ClearNeighborRequest;
  Running r;
  auto client = r.Client();

  auto soft = client->ClearNeighbor("192.0.2.2", Mode::MODE_SOFT);
  REQUIRE(soft.ok());
  CHECK(r.backend.calls().back() == Call{"ClearNeighbor", "192.0.2.2", "MODE_SOFT"});
  CHECK(std::vector<std::string>(soft->refresh_requested().begin(), soft->refresh_requested().end()) ==
        std::vector<std::string>{"ipv4-unicast", "ipv6-unicast"});
  CHECK(soft->resent_size() == 2);
  CHECK(soft->prefixes_resent() == 6);
  REQUIRE(client->ClearNeighbor("192.0.2.2", Mode::MODE_HARD).ok());
  CHECK(r.backend.calls().back() == Call{"ClearNeighbor", "192.0.2.2", "MODE_HARD"});

  SECTION("the backend sees canonical addresses") {
    REQUIRE(client->ClearNeighbor("::FFFF:192.0.2.2", Mode::MODE_SOFT_OUT).status().code() ==
            absl::StatusCode::kNotFound);
    CHECK(r.backend.calls().back() == Call{"ClearNeighbor", "::ffff:192.0.2.2", "MODE_SOFT_OUT"});
  }
  SECTION("the backend's refusals come back with their code and message") {
    auto down = client->ClearNeighbor("2001:db8::3", Mode::MODE_SOFT_OUT);
    CHECK(down.status().code() == absl::StatusCode::kFailedPrecondition);
    CHECK(down.status().message() == "neighbor 2001:db8::3 is not Established (Active)");
    CHECK(client->ClearNeighbor("192.0.2.99", Mode::MODE_HARD).status().code() == absl::StatusCode::kNotFound);
  }
  SECTION("a missing or unknown mode is INVALID_ARGUMENT and never reaches the backend") {
    const size_t calls_before = r.backend.calls().size();
    auto stub = r.RawStub();
    for (int mode : {0, 9}) {
      INFO(mode);
      v1::ClearNeighborRequest request;
      request.set_address("192.0.2.2");
      request.set_mode(static_cast<Mode::Mode>(mode));
      v1::ClearNeighborResponse response;
      grpc::ClientContext context;
      context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
      const grpc::Status s = stub->ClearNeighbor(&context, request, &response);
      CHECK(s.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
      CHECK_THAT(s.error_message(), Catch::StartsWith("ClearNeighbor"));
    }
    // The client refuses the same before sending.
    CHECK(client->ClearNeighbor("192.0.2.2", Mode::MODE_UNSPECIFIED).status().code() ==
          absl::StatusCode::kInvalidArgument);
    CHECK(client->ClearNeighbor("spine-1", Mode::MODE_HARD).status().code() == absl::StatusCode::kInvalidArgument);
    CHECK(r.backend.calls().size() == calls_before);
  }
}

TEST_CASE("control server: the RFC 9003 message limits are enforced by the server", "[control][server]") {
  Running r;
  auto stub = r.RawStub();
  const size_t calls_before = r.backend.calls().size();

  v1::ShutdownNeighborRequest request;
  request.set_address("192.0.2.2");
  request.set_message(std::string(256, 'x'));
  v1::ShutdownNeighborResponse response;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  const grpc::Status s = stub->ShutdownNeighbor(&context, request, &response);
  CHECK(s.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  CHECK(s.error_message() == "the shutdown message is 256 octets of UTF-8; RFC 9003 allows at most 255");
  CHECK(r.backend.calls().size() == calls_before);

  SECTION("the client refuses the same before sending") {
    auto client = r.Client();
    auto local = client->ShutdownNeighbor("192.0.2.2", std::string(256, 'x'));
    CHECK(local.code() == absl::StatusCode::kInvalidArgument);
    CHECK(local.message() == s.error_message());
    local = client->ShutdownNeighbor("192.0.2.2", "bad \xc3\x28 utf-8");
    CHECK(local.code() == absl::StatusCode::kInvalidArgument);
    CHECK(local.message() == "the shutdown message is not valid UTF-8 (RFC 9003 requires UTF-8)");
    CHECK(r.backend.calls().size() == calls_before);
  }
}

TEST_CASE("control server: what the backend says is made valid UTF-8 before it is sent", "[control][server]") {
  Running r;
  auto n = bagd::control::testing::SampleEstablished();
  n.set_description("bad \xff byte");
  n.mutable_last_notification_received()->set_shutdown_message("\xc0\xaf");
  r.backend.SetNeighbors({n});
  auto client = r.Client();
  auto all = client->ListNeighbors("");
  REQUIRE(all.ok());  // without the scrub the client could not parse the answer
  CHECK(all->neighbors(0).description() == "bad \xef\xbf\xbd byte");
  CHECK(all->neighbors(0).last_notification_received().shutdown_message() == "\xef\xbf\xbd\xef\xbf\xbd");
}

TEST_CASE("control server: an exception in the backend becomes INTERNAL", "[control][server]") {
  Running r;
  auto client = r.Client();
  r.backend.ThrowOnNextCall();
  auto all = client->ListNeighbors("");
  CHECK(all.status().code() == absl::StatusCode::kInternal);
  CHECK(all.status().message() == "ListNeighbors failed inside bagd: backend exploded");
  CHECK(client->ListNeighbors("").ok());  // and the server goes on
}

TEST_CASE("control server: the socket file", "[control][server][socket]") {
  TempDir dir;
  FakeBackend backend;
  const std::string path = dir.SocketPath();

  SECTION("parent directory created 0755, socket 0600, removed by Stop") {
    auto server = ControlServer::Start(path, &backend);
    REQUIRE(server.ok());
    CHECK((*server)->socket_path() == path);
    const mode_t dir_mode = ModeOf(dir.path() + "/run");
    CHECK(S_ISDIR(dir_mode));
    CHECK((dir_mode & 07777) == 0755);
    const mode_t sock_mode = ModeOf(path);
    CHECK(S_ISSOCK(sock_mode));
    CHECK((sock_mode & 07777) == 0600);
    (*server)->Stop();
    CHECK_FALSE(Exists(path));
    (*server)->Stop();  // idempotent
    CHECK_FALSE(Exists(path));
  }
  SECTION("the destructor stops the server and removes the socket") {
    {
      auto server = ControlServer::Start(path, &backend);
      REQUIRE(server.ok());
      CHECK(Exists(path));
    }
    CHECK_FALSE(Exists(path));
  }
  SECTION("a stale socket (nobody listening) is replaced") {
    REQUIRE(::mkdir((dir.path() + "/run").c_str(), 0700) == 0);
    const int fd = BindUnixSocket(path, /*listen=*/false);
    ::close(fd);  // the file stays behind, as after a crash
    REQUIRE(Exists(path));
    auto server = ControlServer::Start(path, &backend);
    REQUIRE(server.ok());
    CHECK((ModeOf(dir.path() + "/run") & 07777) == 0700);  // an existing directory is left alone
    auto client = ControlClient::Connect(path);
    REQUIRE(client.ok());
    CHECK((*client)->ListNeighbors("").ok());
  }
  SECTION("a socket another server listens on is not taken over") {
    auto first = ControlServer::Start(path, &backend);
    REQUIRE(first.ok());
    auto second = ControlServer::Start(path, &backend);
    CHECK(second.status().code() == absl::StatusCode::kFailedPrecondition);
    CHECK(second.status().message() ==
          "another process is listening on the control socket " + path + " (is another bagd running?)");
    auto client = ControlClient::Connect(path);
    REQUIRE(client.ok());
    CHECK((*client)->ListNeighbors("").ok());  // the first one still answers
  }
  SECTION("a path that is not a socket is not removed") {
    REQUIRE(::mkdir((dir.path() + "/run").c_str(), 0755) == 0);
    std::ofstream(path) << "precious\n";
    auto server = ControlServer::Start(path, &backend);
    CHECK(server.status().code() == absl::StatusCode::kFailedPrecondition);
    CHECK(server.status().message() == "cannot use " + path + " as the control socket: it exists and is not a socket");
    CHECK(S_ISREG(ModeOf(path)));
  }
  SECTION("a file where the directory should be") {
    std::ofstream(dir.path() + "/run") << "not a directory\n";
    auto server = ControlServer::Start(path, &backend);
    CHECK(server.status().code() == absl::StatusCode::kFailedPrecondition);
    CHECK(server.status().message() ==
          "cannot create the control socket " + path + ": " + dir.path() + "/run is not a directory");
  }
  SECTION("a path too long for a Unix socket") {
    const std::string long_path = dir.path() + "/" + std::string(120, 'a');
    auto server = ControlServer::Start(long_path, &backend);
    CHECK(server.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK_THAT(std::string(server.status().message()),
               Catch::Contains("a Unix socket path has at most 107"));
  }
}

TEST_CASE("control client: an unreachable daemon fails fast with the reason", "[control][client]") {
  TempDir dir;
  const auto start = std::chrono::steady_clock::now();

  SECTION("no socket file") {
    const std::string path = dir.path() + "/bagd.sock";
    auto client = ControlClient::Connect(path);
    CHECK(client.status().code() == absl::StatusCode::kUnavailable);
    CHECK(client.status().message() == "cannot reach bagd at " + path + ": No such file or directory");
  }
  SECTION("a stale socket file") {
    const std::string path = dir.path() + "/bagd.sock";
    ::close(BindUnixSocket(path, /*listen=*/false));
    auto client = ControlClient::Connect(path);
    CHECK(client.status().code() == absl::StatusCode::kUnavailable);
    CHECK(client.status().message() == "cannot reach bagd at " + path + ": Connection refused");
  }
  SECTION("not a socket") {
    auto client = ControlClient::Connect(dir.path());
    CHECK(client.status().code() == absl::StatusCode::kUnavailable);
    CHECK(client.status().message() == "cannot reach bagd at " + dir.path() + ": not a socket");
  }
  CHECK(SecondsSince(start) < 1.0);
}

TEST_CASE("control client: a listener that never answers cannot make the client hang", "[control][client]") {
  TempDir dir;
  const std::string path = dir.path() + "/silent.sock";
  const int fd = BindUnixSocket(path, /*listen=*/true);  // accepts into the backlog, never speaks
  ControlClientOptions options;
  options.connect_timeout = std::chrono::milliseconds(300);
  options.call_timeout = std::chrono::milliseconds(300);
  const auto start = std::chrono::steady_clock::now();
  absl::Status status;
  auto client = ControlClient::Connect(path, options);
  if (client.ok()) {
    status = (*client)->ListNeighbors("").status();
  } else {
    status = client.status();
  }
  CHECK_FALSE(status.ok());
  CHECK((status.code() == absl::StatusCode::kUnavailable || status.code() == absl::StatusCode::kDeadlineExceeded));
  CHECK(SecondsSince(start) < 2.0);
  ::close(fd);
}

TEST_CASE("control server: concurrent clients", "[control][server]") {
  Running r;
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      auto client = ControlClient::Connect(r.dir.SocketPath());
      if (!client.ok()) return;
      for (int i = 0; i < 20; ++i) {
        if ((*client)->ListNeighbors("").ok() && (*client)->EnableNeighbor("192.0.2.4").ok()) ++ok;
      }
    });
  }
  for (auto& t : threads) t.join();
  CHECK(ok == 80);
}
