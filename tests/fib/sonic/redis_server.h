// A private redis-server for one test: unix socket in a fresh temp dir, no persistence, no
// TCP. Stopped (and the dir removed) by the destructor; Kill() and Start() again model a
// crash and a restart on the same socket. Skips when redis-server is not installed.
#pragma once

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "fib_sync/sonic/redis_connection.h"

namespace bagd::fib::sonic::test {

class RedisServer {
 public:
  RedisServer() {
    char tmpl[] = "/tmp/bagd-redis-XXXXXX";
    dir_ = mkdtemp(tmpl) ? tmpl : "";
    socket_ = dir_ + "/redis.sock";
  }
  ~RedisServer() {
    Stop();
    std::error_code ec;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
  }
  static bool Available() { return access("/usr/bin/redis-server", X_OK) == 0; }

  // Starts the server and waits (up to 5 s) until it accepts connections.
  // `extra`: more redis-server options, e.g. {"--client-output-buffer-limit", "pubsub 0 0 0"}.
  bool Start(const std::vector<std::string>& extra = {}) {
    if (pid_ > 0 || dir_.empty()) return false;
    const std::string log = dir_ + "/redis.log";
    std::vector<std::string> args = {"redis-server", "--port", "0", "--unixsocket", socket_, "--unixsocketperm", "700",
                                      "--save", "", "--appendonly", "no", "--dir", dir_, "--logfile", log,
                                      "--databases", "16"};
    args.insert(args.end(), extra.begin(), extra.end());
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_ = fork();
    if (pid_ == 0) {
      execv("/usr/bin/redis-server", argv.data());
      _exit(127);
    }
    // Waiting for another process to come up (not for a timer of ours): poll its socket.
    for (int i = 0; i < 500; ++i) {
      if (RedisConnection::Connect(address(), std::chrono::milliseconds(100)).ok()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }
  void Kill() { Signal(SIGKILL); }
  void Stop() { Signal(SIGTERM); }
  RedisAddress address() const { return RedisAddress{socket_, "", 0}; }
  const std::string& socket() const { return socket_; }
  pid_t pid() const { return pid_; }  // -1 when not running

 private:
  void Signal(int sig) {
    if (pid_ <= 0) return;
    kill(pid_, sig);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
    unlink(socket_.c_str());
  }
  std::string dir_, socket_;
  pid_t pid_ = -1;
};

}  // namespace bagd::fib::sonic::test
