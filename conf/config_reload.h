// Loading the configuration again (SIGHUP) away from the event thread.
//
// The event thread runs every session's timers: while it waits, no KEEPALIVE goes out, and
// a neighbor with a short hold time drops the session (RFC 4271 §4.4, §6.5). Reading the
// file can wait (a slow or hung file system), and parsing and validating a large
// configuration takes time too. So a worker thread reads, parses and validates, and hands
// the result to the event thread through `post`; only applying it happens there.
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "conf/config_loader.h"

namespace bagd::conf {

class ConfigReloader {
 public:
  // Runs a closure on the event thread (e.g. boost::asio::post to the io_context).
  using Post = std::function<void(std::function<void()>)>;
  // Receives each load's result on the event thread: errors (the file is not a regular
  // file, cannot be read, or is not a valid configuration) or the complete configuration.
  using Apply = std::function<void(LoadedConfig)>;

  // Loads `path` as LoadConfigFile(path) does (a regular file only: ConfigSource::kRegularFile).
  ConfigReloader(std::string path, Post post, Apply apply);
  // Waits for a load in progress (a regular file is read in bounded time) and stops the
  // worker. A result posted but not yet run is dropped with the event loop's queue.
  ~ConfigReloader();
  ConfigReloader(const ConfigReloader&) = delete;
  ConfigReloader& operator=(const ConfigReloader&) = delete;

  // Asks for one more load and returns at once. Requests made while a load runs are
  // coalesced into one load after it (the newest file contents win), so a burst of SIGHUPs
  // does not queue a burst of reloads.
  void Request();

  // Loads started so far (for tests and logs).
  uint64_t loads_started() const;

 private:
  void Run();

  const std::string path_;
  const Post post_;
  const Apply apply_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool pending_ = false;  // guarded by mu_
  bool stop_ = false;     // guarded by mu_
  uint64_t loads_ = 0;    // guarded by mu_
  std::thread worker_;    // last: started once everything above exists
};

}  // namespace bagd::conf
