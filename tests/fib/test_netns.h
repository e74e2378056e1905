// A network namespace for one test: created with a unique name, removed when the test ends
// (also when it fails). Commands run inside it with `ip -n NAME ...` / `ip netns exec`.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace bagd::test {

class TestNetns {
 public:
  explicit TestNetns(const std::string& tag) : name_("bagdt" + std::to_string(getpid()) + tag) {
    ok_ = Sh("ip netns add " + name_) == 0 && Sh("ip -n " + name_ + " link set lo up") == 0;
  }
  ~TestNetns() { Sh("ip netns del " + name_ + " 2>/dev/null"); }
  TestNetns(const TestNetns&) = delete;
  TestNetns& operator=(const TestNetns&) = delete;

  bool ok() const { return ok_; }
  const std::string& name() const { return name_; }
  // `ip -n NAME ARGS`; returns the exit status.
  int Ip(const std::string& args) const { return Sh("ip -n " + name_ + " " + args); }
  // A command inside the namespace; returns its stdout.
  std::string Exec(const std::string& command) const {
    std::string out;
    FILE* p = popen(("ip netns exec " + name_ + " " + command).c_str(), "r");
    if (!p) return out;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    pclose(p);
    return out;
  }
  static int Sh(const std::string& command) { return std::system((command + " >/dev/null 2>&1").c_str()); }

 private:
  std::string name_;
  bool ok_ = false;
};

inline bool IsRoot() { return geteuid() == 0; }

}  // namespace bagd::test
