// The event loop's part for tests and benchmarks that run a daemon::Pipeline without one: the
// pipeline's posted tasks (its deferred hand-off after Ingest) queued, and run when the test
// says the loop would have got to them (after each replayed event, at the end of a burst).
#pragma once

#include <functional>
#include <utility>
#include <vector>

#include "bgpd/daemon/pipeline.h"

namespace bagd::test {

class PostedTasks {
 public:
  // The Pipeline's Post; the queue must outlive the pipeline's use of it.
  daemon::Pipeline::Post post() {
    return [this](std::function<void()> task) { tasks_.push_back(std::move(task)); };
  }
  // Runs what is queued, and what those tasks queue, until nothing is left.
  void RunAll() {
    for (std::vector<std::function<void()>> now; !tasks_.empty();) {
      now.swap(tasks_);
      for (auto& t : now) t();
      now.clear();
    }
  }

 private:
  std::vector<std::function<void()>> tasks_;
};

}  // namespace bagd::test
