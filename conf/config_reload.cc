#include "conf/config_reload.h"

#include <memory>
#include <utility>

namespace bagd::conf {

ConfigReloader::ConfigReloader(std::string path, Post post, Apply apply)
    : path_(std::move(path)), post_(std::move(post)), apply_(std::move(apply)), worker_([this] { Run(); }) {}

ConfigReloader::~ConfigReloader() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_one();
  worker_.join();
}

void ConfigReloader::Request() {
  {
    std::lock_guard lock(mu_);
    pending_ = true;
  }
  cv_.notify_one();
}

uint64_t ConfigReloader::loads_started() const {
  std::lock_guard lock(mu_);
  return loads_;
}

void ConfigReloader::Run() {
  while (true) {
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [this] { return pending_ || stop_; });
      if (stop_) return;
      pending_ = false;
      ++loads_;
    }
    auto loaded = std::make_shared<LoadedConfig>(LoadConfigFile(path_, ConfigSource::kRegularFile));
    // The closure owns the result and a copy of `apply_`: it may run after this object is
    // gone only if the event loop outlives it, and then touches nothing of it.
    post_([apply = apply_, loaded] { apply(std::move(*loaded)); });
  }
}

}  // namespace bagd::conf
