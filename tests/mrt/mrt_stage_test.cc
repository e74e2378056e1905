// The daemon's MRT stage on a ManualClock: table dumps in slices, the updates log through
// the tap, rotation, a full queue, a failed file, and a stage destroyed mid-dump.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <thread>

#include "absl/strings/match.h"
#include "bgpd/daemon/mrt_stage.h"
#include "bgpd/session/clock.h"
#include "tests/mrt/mrt_reader.h"
#include "tests/rib/rib_test_support.h"

namespace bagd::daemon {
namespace {

namespace fs = std::filesystem;
using rib::test::AttrsBuilder;
using rib::test::N;

struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("bagd_mrt_stage." + std::to_string(::getpid()) + "." +
                                        std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()));
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
};

// The io thread's queue: the writer thread posts into it, the test runs it.
struct IoQueue {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::function<void()>> tasks;
  void Post(std::function<void()> f) {
    {
      std::lock_guard<std::mutex> lock(mu);
      tasks.push_back(std::move(f));
    }
    cv.notify_all();
  }
  // Runs what is posted; waits up to `wait` for something when empty. True if it ran any.
  bool RunFor(std::chrono::milliseconds wait) {
    std::vector<std::function<void()>> now;
    {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait_for(lock, wait, [&] { return !tasks.empty(); });
      now.swap(tasks);
    }
    for (auto& t : now) t();
    return !now.empty();
  }
};

struct Harness {
  session::ManualClock clock{1600000000000};
  IoQueue io;
  rib::AttributeStore store;
  rib::Rib rib{65000, rib::DecisionConfig{}};
  int64_t micros = 1600000000000000;
  std::unique_ptr<MrtStage> stage;

  explicit Harness(size_t queue_bytes = 32u << 20) {
    const auto a = rib.AddPeer(rib::test::Peer("10.0.0.2", 0x0a000002, 65001));
    std::vector<net::Nlri> nlri;
    for (int i = 0; i < 3000; ++i) {
      const std::string p = "10." + std::to_string(i / 256) + "." + std::to_string(i % 256) + ".0/24";
      nlri.push_back(N(p.c_str()));
    }
    rib.Announce(a, nlri, AttrsBuilder().In(store));
    MrtStage::Options o;
    o.clock = &clock;
    o.post = [this](std::function<void()> f) { io.Post(std::move(f)); };
    o.rib = [this]() -> const rib::Rib& { return rib; };
    o.dump_options = [] {
      mrt::RibDumpOptions d;
      d.view_name = "test";
      return d;
    };
    o.registry = std::make_shared<prometheus::Registry>();
    o.unix_micros = [this] { return micros; };
    o.queue_bytes = queue_bytes;
    o.slice_budget = std::chrono::microseconds(0);  // one step of paths per slice
    stage = std::make_unique<MrtStage>(std::move(o));
  }
  // Drives timers and the posted completions until `done` or 10 s of real time.
  template <typename Pred>
  bool RunUntil(Pred done) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!done()) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      clock.Advance(5);
      io.RunFor(std::chrono::milliseconds(1));
    }
    return true;
  }
};

TEST_CASE("mrt stage: a table dump runs in slices and answers with the counts", "[mrt][stage]") {
  TempDir dir;
  Harness h;
  const std::string path = (dir.path / "rib.mrt").string();
  std::optional<MrtDumpResult> result;
  h.stage->DumpTable(path, [&](const MrtDumpResult& r) { result = r; });
  CHECK(h.stage->dumps_running() == 1);
  CHECK_FALSE(result);  // nothing happens before the io thread gets to it
  REQUIRE(h.RunUntil([&] { return result.has_value(); }));
  REQUIRE(result->status.ok());
  CHECK(result->counts.prefixes == 3000);
  CHECK(result->counts.paths == 3000);
  CHECK(result->peers == 1);
  CHECK(h.stage->dumps_running() == 0);
  const auto bytes = mrt::test::ReadFile(path);
  CHECK(result->bytes == bytes.size());
  auto records = mrt::test::SplitRecords(bytes);
  REQUIRE(records);
  CHECK(records->size() == 3001);
  CHECK((*records)[0].timestamp == 1600000000);
  CHECK_FALSE(fs::exists(path + ".tmp"));
}

TEST_CASE("mrt stage: a relative path is refused at once", "[mrt][stage]") {
  Harness h;
  std::optional<MrtDumpResult> result;
  h.stage->DumpTable("rib.mrt", [&](const MrtDumpResult& r) { result = r; });
  REQUIRE(result);
  CHECK(result->status.code() == absl::StatusCode::kInvalidArgument);
  CHECK(h.stage->dumps_running() == 0);
}

TEST_CASE("mrt stage: a dump into a directory that does not exist fails with the reason", "[mrt][stage]") {
  TempDir dir;
  Harness h;
  std::optional<MrtDumpResult> result;
  h.stage->DumpTable((dir.path / "no" / "rib.mrt").string(), [&](const MrtDumpResult& r) { result = r; });
  REQUIRE(h.RunUntil([&] { return result.has_value(); }));
  CHECK_FALSE(result->status.ok());
  CHECK(absl::StrContains(result->status.message(), "cannot create"));
}

TEST_CASE("mrt stage: the stage destroyed in the middle of a dump drops it safely", "[mrt][stage]") {
  TempDir dir;
  Harness h;
  bool called = false;
  h.stage->DumpTable((dir.path / "rib.mrt").string(), [&](const MrtDumpResult&) { called = true; });
  // The file is open (or being opened) on the writer thread, the first slice is due.
  h.stage.reset();
  // What the writer posted meanwhile finds the stage gone.
  while (h.io.RunFor(std::chrono::milliseconds(20))) {
  }
  h.clock.Advance(100);
  CHECK_FALSE(called);
  CHECK_FALSE(fs::exists(dir.path / "rib.mrt"));
}

session::MrtReceivedMessage Keepalive(const wire::Bytes& bytes) {
  session::MrtReceivedMessage m;
  m.peer_address = *net::IpAddress::Parse("10.0.0.2");
  m.local_address = *net::IpAddress::Parse("10.0.0.1");
  m.peer_as = 65001;
  m.local_as = 65000;
  m.message = bytes;
  return m;
}

TEST_CASE("mrt stage: the updates log writes what the tap gets as BGP4MP_ET and rotates", "[mrt][stage]") {
  TempDir dir;
  Harness h;
  const wire::Bytes keepalive = mrt::test::Hex("ffffffffffffffffffffffffffffffff 0013 04");
  CHECK_FALSE(h.stage->mrt_enabled());
  config::v1::Mrt c;
  c.set_updates_interval(60);
  c.set_updates_path((dir.path / "updates.%Y%m%d.%H%M%S").string());
  h.stage->Configure(c);
  CHECK(h.stage->mrt_enabled());
  h.stage->OnMrtMessage(Keepalive(keepalive));
  h.micros += 1500;
  h.stage->OnMrtMessage(Keepalive(keepalive));
  // 20 s past the minute: the file rotates at 12:27:00.
  h.micros = 1600000020000000;
  h.clock.Advance(40000);
  h.stage->OnMrtMessage(Keepalive(keepalive));
  h.stage->Stop();
  CHECK_FALSE(h.stage->mrt_enabled());
  const fs::path first = dir.path / "updates.20200913.122640";
  const fs::path second = dir.path / "updates.20200913.122700";
  REQUIRE(h.RunUntil([&] { return fs::exists(first) && fs::exists(second); }));
  auto records = mrt::test::SplitRecords(mrt::test::ReadFile(first.string()));
  REQUIRE(records);
  REQUIRE(records->size() == 2);
  CHECK((*records)[0].type == 17);
  CHECK((*records)[0].subtype == 4);
  CHECK((*records)[1].body[3] == 0xdc);  // 1500 microseconds = 0x5dc
  auto later = mrt::test::SplitRecords(mrt::test::ReadFile(second.string()));
  REQUIRE(later);
  CHECK(later->size() == 1);
  CHECK(h.stage->messages_logged() == 3);
  CHECK(h.stage->messages_dropped() == 0);
}

TEST_CASE("mrt stage: a full writer queue drops messages from the updates log and counts them", "[mrt][stage]") {
  TempDir dir;
  Harness h(/*queue_bytes=*/16);
  const wire::Bytes keepalive = mrt::test::Hex("ffffffffffffffffffffffffffffffff 0013 04");
  config::v1::Mrt c;
  c.set_updates_interval(60);
  c.set_updates_path((dir.path / "u.%s").string());
  h.stage->Configure(c);
  for (int i = 0; i < 5; ++i) h.stage->OnMrtMessage(Keepalive(keepalive));
  h.clock.Advance(1000);  // the flush: 5 records of 55 octets do not fit in 16
  CHECK(h.stage->messages_dropped() == 5);
  CHECK(h.stage->messages_logged() == 0);
  h.stage->Stop();
}

TEST_CASE("mrt stage: periodic table dumps on the interval, old ones deleted by keep", "[mrt][stage]") {
  TempDir dir;
  Harness h;
  config::v1::Mrt c;
  c.set_table_interval(60);
  c.set_table_path((dir.path / "rib.%H%M").string());
  c.set_keep(2);
  h.stage->Configure(c);
  auto count = [&] {
    size_t n = 0;
    for (const auto& e : fs::directory_iterator(dir.path)) n += e.path().extension() != ".tmp";
    return n;
  };
  for (int minute = 1; minute <= 3; ++minute) {
    h.micros = 1600000000000000 + int64_t{minute} * 60000000 - 40000000;  // 12:27:00, 12:28:00, ...
    h.clock.Advance(60000);
    REQUIRE(h.RunUntil([&] { return h.stage->dumps_running() == 0; }));
  }
  // The writer applies `keep` after each rename: wait for the last one.
  REQUIRE(h.RunUntil([&] { return count() == 2; }));
  CHECK(fs::exists(dir.path / "rib.1229"));
}

}  // namespace
}  // namespace bagd::daemon
