// control.group: the socket is the group's with mode 0660, and a connection from a member
// (not root, not bagd's user: SO_PEERCRED) may only read. The tests run as root, so the
// member is a child process: this test binary again (one hidden test case), which drops to
// another uid and gid with setgroups/setgid/setuid before it touches gRPC.
#include <grp.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <set>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "bgpd/control/control.grpc.pb.h"
#include "bgpd/control/control_client.h"
#include "bgpd/control/control_server.h"
#include "tests/control/fake_backend.h"
#include "tests/control/serving.h"
#include "tools/bagctl/control_commands.h"

using namespace bagd::control;
using bagd::control::testing::FakeBackend;

namespace {

constexpr gid_t kGroup = 4242;   // no need to exist in /etc/group: chown takes the number
constexpr uid_t kMember = 65534;  // nobody

// The RPCs a read-only connection may call. Every other method of the service must answer
// PERMISSION_DENIED to it: a new RPC has to be put on one side or the other.
const std::set<std::string> kReads = {"ListNeighbors", "ListRoutes", "GetRibSummary", "ListNextHopGroups",
                                      "TestPolicy",    "ListPolicies", "WatchEvents",      "ListBfdSessions",
                                      "ListBmpStations"};

// Runs the hidden child test case as uid kMember with groups {gid}; its exit status.
int RunChild(const std::string& socket, gid_t gid, const char* expect) {
  ::setenv("BAGD_READ_ONLY_SOCKET", socket.c_str(), 1);
  ::setenv("BAGD_READ_ONLY_GID", absl::StrCat(gid).c_str(), 1);
  ::setenv("BAGD_READ_ONLY_EXPECT", expect, 1);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::execl("/proc/self/exe", "bagd_control_tests", "control.group: the member's side", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::unsetenv("BAGD_READ_ONLY_SOCKET");
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// A server whose socket belongs to kGroup, in a directory others may enter.
struct GroupServer {
  static ControlServerOptions Options(EventHub* hub) {
    ControlServerOptions o;
    o.group = kGroup;
    o.events = hub;
    return o;
  }
  GroupServer() : s(Options(&hub)), socket(s.dir.SocketPath()) {
    REQUIRE(::chmod(s.dir.path().c_str(), 0755) == 0);  // mkdtemp's 0700 would stop anyone else
  }
  EventHub hub;
  testing::Serving<FakeBackend> s;
  std::string socket;
};

}  // namespace

TEST_CASE("control.group: members of the group may read, not write", "[control][group]") {
  if (::geteuid() != 0) {
    WARN("not root: cannot run a child as another user; skipped");
    return;
  }
  GroupServer g;
  auto& s = g.s;
  const std::string& socket = g.socket;
  struct stat st;
  REQUIRE(::stat(socket.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0660);
  CHECK(st.st_gid == kGroup);

  CHECK(RunChild(socket, kGroup, "read-only") == 0);
  // Nothing the member asked for changed anything.
  for (const auto& call : s.backend.calls()) {
    CHECK(call.rpc != "ShutdownNeighbor");
    CHECK(call.rpc != "EnableNeighbor");
    CHECK(call.rpc != "ClearNeighbor");
  }
  CHECK(s.server->connections().read_only >= 1);

  // Root still may do everything on the same socket.
  auto client = s.Client();
  CHECK(client->EnableNeighbor("192.0.2.4").ok());
  CHECK(s.server->connections().full >= 1);
}

TEST_CASE("control.group: not a member, no group, or the group removed by a reload: no connection",
          "[control][group]") {
  if (::geteuid() != 0) {
    WARN("not root: cannot run a child as another user; skipped");
    return;
  }
  GroupServer g;
  auto& s = g.s;
  const std::string& socket = g.socket;
  CHECK(RunChild(socket, kGroup + 1, "denied") == 0);  // another group: the file mode stops it

  // A reload without control.group: back to 0600, members are out too.
  REQUIRE(s.server->SetGroup(std::nullopt).ok());
  struct stat st;
  REQUIRE(::stat(socket.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  CHECK(RunChild(socket, kGroup, "denied") == 0);

  // And with it again.
  REQUIRE(s.server->SetGroup(kGroup).ok());
  REQUIRE(::stat(socket.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0660);
  CHECK(RunChild(socket, kGroup, "read-only") == 0);

  // Root keeps full access throughout.
  auto client = s.Client();
  CHECK(client->ShutdownNeighbor("192.0.2.2", "").ok());
}

// The member's side, run only by the tests above (hidden: `[.]`), as another user.
TEST_CASE("control.group: the member's side", "[.][group-child]") {
  const char* socket = std::getenv("BAGD_READ_ONLY_SOCKET");
  const char* gid_text = std::getenv("BAGD_READ_ONLY_GID");
  const char* expect = std::getenv("BAGD_READ_ONLY_EXPECT");
  REQUIRE(socket != nullptr);
  REQUIRE(gid_text != nullptr);
  REQUIRE(expect != nullptr);
  uint32_t gid = 0;
  REQUIRE(absl::SimpleAtoi(gid_text, &gid));
  const gid_t groups[] = {static_cast<gid_t>(gid)};
  REQUIRE(::setgroups(1, groups) == 0);
  REQUIRE(::setgid(gid) == 0);
  REQUIRE(::setuid(kMember) == 0);
  REQUIRE(::geteuid() == kMember);

  if (std::string(expect) == "denied") {
    auto client = ControlClient::Connect(socket);
    REQUIRE(absl::IsPermissionDenied(client.status()));
    std::ostringstream out, err;
    CHECK(bagd::bagctl::RunControlCommand({"show", "neighbors"}, socket, out, err) == 1);
    CHECK(absl::StrContains(err.str(), "Permission denied"));
    return;
  }

  auto client = ControlClient::Connect(socket);
  REQUIRE(client.ok());
  auto neighbors = (*client)->ListNeighbors("");
  CHECK(neighbors.ok());
  CHECK(neighbors->neighbors_size() == 3);
  CHECK((*client)->GetRibSummary().ok());
  int seen = 0;
  absl::Status watched = (*client)->WatchEvents({}, [&](v1::Event& e) {
    ++seen;
    return e.has_subscribed() ? absl::CancelledError("subscribed") : absl::OkStatus();
  });
  CHECK(watched.message() == "subscribed");
  CHECK(seen == 1);

  absl::Status shut = (*client)->ShutdownNeighbor("192.0.2.2", "maintenance");
  REQUIRE(absl::IsPermissionDenied(shut));
  CHECK(shut.message() ==
        "ShutdownNeighbor changes the running bagd, and this connection is read-only: members of the control group "
        "(config control.group) may only read; run it as root");
  CHECK(absl::IsPermissionDenied((*client)->ReloadConfig().status()));
  CHECK(absl::IsPermissionDenied((*client)->DeleteNetwork("192.0.2.0/24")));

  // bagctl says so, with no hint about the socket's mode.
  std::ostringstream out, err;
  CHECK(bagd::bagctl::RunControlCommand({"neighbor", "192.0.2.2", "clear"}, socket, out, err) == 1);
  CHECK(err.str() ==
        "bagctl: ClearNeighbor changes the running bagd, and this connection is read-only: members of the control "
        "group (config control.group) may only read; run it as root\n");

  // Every method of the service that is not a read refuses, before it looks at the request.
  const auto* service = google::protobuf::DescriptorPool::generated_pool()->FindServiceByName("bagd.control.v1.Control");
  REQUIRE(service != nullptr);
  auto channel = grpc::CreateChannel(absl::StrCat("unix:", socket), grpc::InsecureChannelCredentials());
  grpc::GenericStub stub(channel);
  int writes = 0;
  for (int i = 0; i < service->method_count(); ++i) {
    const auto* method = service->method(i);
    if (kReads.count(method->name()) > 0) continue;
    INFO("method " << method->name());
    REQUIRE(!method->server_streaming());  // a streaming write would need its own call here
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    grpc::CompletionQueue cq;
    grpc::Slice empty{std::string()};
    grpc::ByteBuffer request(&empty, 1), response;
    auto call = stub.PrepareUnaryCall(&context, absl::StrCat("/bagd.control.v1.Control/", method->name()), request, &cq);
    REQUIRE(call != nullptr);
    call->StartCall();
    grpc::Status status;
    call->Finish(&response, &status, reinterpret_cast<void*>(1));
    void* tag = nullptr;
    bool ok = false;
    REQUIRE(cq.Next(&tag, &ok));
    CHECK(status.error_code() == grpc::StatusCode::PERMISSION_DENIED);
    CHECK(absl::StrContains(status.error_message(), "read-only"));
    ++writes;
    cq.Shutdown();
    while (cq.Next(&tag, &ok)) {
    }
  }
  CHECK(writes == 7);  // DumpMrt (issue 44) writes a file as root
}
