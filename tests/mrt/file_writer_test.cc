#include <catch2/catch.hpp>

#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <future>
#include <mutex>
#include <thread>

#include "absl/strings/match.h"
#include "mrt/file_writer.h"
#include "mrt/path_template.h"
#include "tests/mrt/mrt_reader.h"

namespace bagd::mrt {
namespace {

namespace fs = std::filesystem;

struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("bagd_mrt_test." + std::to_string(::getpid()) + "." +
                                        std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()));
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
};

// Collects the writer's results (from its thread).
struct Results {
  std::mutex mu;
  std::vector<FileResult> all;
  std::promise<void> first;
  bool got = false;
  void Add(const FileResult& r) {
    std::lock_guard<std::mutex> lock(mu);
    all.push_back(r);
    if (!got) {
      got = true;
      first.set_value();
    }
  }
};

TEST_CASE("file writer: a file is written under NAME.tmp and renamed when closed", "[mrt][writer]") {
  TempDir dir;
  Results results;
  auto done = results.first.get_future();
  const std::string path = (dir.path / "rib.mrt").string();
  {
    MrtFileWriter writer(1 << 20, [&](const FileResult& r) { results.Add(r); });
    const auto id = writer.Open(path);
    wire::Bytes a = {1, 2, 3}, b = {4, 5};
    REQUIRE(writer.Write(id, a));
    CHECK(a.empty());
    REQUIRE(writer.Write(id, b));
    writer.Close(id, true);
    REQUIRE(done.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  }
  REQUIRE(results.all.size() == 1);
  CHECK(results.all[0].status.ok());
  CHECK(results.all[0].bytes == 5);
  CHECK(results.all[0].path == path);
  CHECK(test::ReadFile(path) == test::Octets{1, 2, 3, 4, 5});
  CHECK_FALSE(fs::exists(path + ".tmp"));
}

TEST_CASE("file writer: a file that cannot be created is an error, and nothing is left", "[mrt][writer]") {
  TempDir dir;
  Results results;
  auto done = results.first.get_future();
  const std::string path = (dir.path / "missing" / "rib.mrt").string();
  MrtFileWriter writer(1 << 20, [&](const FileResult& r) { results.Add(r); });
  const auto id = writer.Open(path);
  wire::Bytes a = {1};
  writer.Write(id, a);
  writer.Close(id, true);
  REQUIRE(done.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  CHECK_FALSE(results.all[0].status.ok());
  CHECK(absl::StrContains(results.all[0].status.message(), "cannot create"));
  CHECK_FALSE(fs::exists(path));
}

TEST_CASE("file writer: a write that fails (a file size limit, as a full disk) removes the file", "[mrt][writer]") {
  TempDir dir;
  Results results;
  auto done = results.first.get_future();
  const std::string path = (dir.path / "big.mrt").string();
  // EFBIG past RLIMIT_FSIZE (SIGXFSZ ignored) stands in for ENOSPC: the same write(2) failure.
  struct rlimit old {};
  ::getrlimit(RLIMIT_FSIZE, &old);
  auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
  struct rlimit small = old;
  small.rlim_cur = 4096;
  REQUIRE(::setrlimit(RLIMIT_FSIZE, &small) == 0);
  {
    MrtFileWriter writer(1 << 20, [&](const FileResult& r) { results.Add(r); });
    const auto id = writer.Open(path);
    for (int i = 0; i < 4; ++i) {
      wire::Bytes chunk(3000, 0x42);
      REQUIRE(writer.Write(id, chunk));
    }
    writer.Close(id, true);
    REQUIRE(done.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
  }
  ::setrlimit(RLIMIT_FSIZE, &old);
  std::signal(SIGXFSZ, old_handler);
  REQUIRE(results.all.size() == 1);
  CHECK_FALSE(results.all[0].status.ok());
  CHECK(absl::StrContains(results.all[0].status.message(), "cannot write"));
  CHECK_FALSE(fs::exists(path));
  CHECK_FALSE(fs::exists(path + ".tmp"));
}

TEST_CASE("file writer: the queue is bounded: a chunk that does not fit is refused and kept", "[mrt][writer]") {
  MrtFileWriter writer(100, nullptr);
  const auto id = writer.Open("/nonexistent-dir-for-bagd-test/x");
  wire::Bytes big(101, 1);
  CHECK_FALSE(writer.Write(id, big));
  CHECK(big.size() == 101);
  writer.Close(id, false);
}

TEST_CASE("file writer: an abandoned file is removed, and so are files still open at destruction", "[mrt][writer]") {
  TempDir dir;
  std::vector<FileResult> results;
  std::mutex mu;
  {
    MrtFileWriter writer(1 << 20, [&](const FileResult& r) {
      std::lock_guard<std::mutex> lock(mu);
      results.push_back(r);
    });
    const auto a = writer.Open((dir.path / "a").string());
    writer.Open((dir.path / "b").string());
    wire::Bytes x = {1};
    writer.Write(a, x);
    writer.Close(a, false);
  }
  CHECK(results.size() == 2);
  CHECK(fs::is_empty(dir.path));
}

TEST_CASE("file writer: keep deletes all but the newest files matching the template", "[mrt][writer]") {
  TempDir dir;
  const std::string tmpl = (dir.path / "rib.%Y%m%d.%H%M").string();
  auto now = fs::file_time_type::clock::now();
  for (int i = 0; i < 5; ++i) {
    const fs::path p = dir.path / ("rib.2026120" + std::to_string(i) + ".0000");
    test::Octets none;
    { std::ofstream(p.string()) << "x"; }
    fs::last_write_time(p, now - std::chrono::hours(10 - i));
  }
  { std::ofstream((dir.path / "other.mrt").string()) << "x"; }
  CHECK(RemoveOldFiles(PathTemplateDirectory(tmpl), PathTemplateGlob(tmpl), 2) == 3);
  CHECK(fs::exists(dir.path / "rib.20261203.0000"));
  CHECK(fs::exists(dir.path / "rib.20261204.0000"));
  CHECK_FALSE(fs::exists(dir.path / "rib.20261202.0000"));
  CHECK(fs::exists(dir.path / "other.mrt"));
  CHECK(RemoveOldFiles(PathTemplateDirectory(tmpl), PathTemplateGlob(tmpl), 0) == 0);
}

TEST_CASE("path templates: checked, expanded in UTC, turned into a glob", "[mrt][template]") {
  CHECK(CheckPathTemplate("/var/lib/bagd/rib.%Y%m%d.%H%M").ok());
  CHECK(CheckPathTemplate("/var/lib/bagd/updates.%s.mrt").ok());
  CHECK(absl::StrContains(CheckPathTemplate("rib.%Y").message(), "not an absolute path"));
  CHECK(absl::StrContains(CheckPathTemplate("/var/%Y/rib.%H").message(), "only be in the file name"));
  CHECK(absl::StrContains(CheckPathTemplate("/var/lib/bagd/rib.mrt").message(), "no time field"));
  CHECK(absl::StrContains(CheckPathTemplate("/var/lib/bagd/rib.%%").message(), "no time field"));
  CHECK(absl::StrContains(CheckPathTemplate("/var/lib/bagd/rib.%Q").message(), "%Q is not a time field"));
  CHECK(absl::StrContains(CheckPathTemplate("/var/lib/bagd/rib.%").message(), "lone"));
  CHECK(absl::StrContains(CheckPathTemplate("/var/lib/bagd/").message(), "directory"));
  CHECK(ExpandPathTemplate("/d/rib.%Y%m%d.%H%M%S", 1600000000) == "/d/rib.20200913.122640");
  CHECK(ExpandPathTemplate("/d/u.%s.100%%", 1600000000) == "/d/u.1600000000.100%");
  CHECK(PathTemplateGlob("/d/rib.%Y%m%d.%H%M") == "rib.***.**");
  CHECK(PathTemplateGlob("/d/r[1].%s%%") == "r\\[1].*%");
  CHECK(PathTemplateDirectory("/var/lib/bagd/rib.%Y") == "/var/lib/bagd");
  CHECK(PathTemplateDirectory("/rib.%Y") == "/");
}

}  // namespace
}  // namespace bagd::mrt
