#include "bgpd/allocator.h"

#ifdef BAGD_HAVE_JEMALLOC
#include <jemalloc/jemalloc.h>

// jemalloc's settings, read at its first allocation (the MALLOC_CONF environment variable,
// read after this, still overrides them).
//
// muzzy_decay_ms:-1: freed pages that jemalloc gives back (after dirty_decay_ms, 10 s, or
// sooner when a burst of frees outruns its decay curve) are only marked free for the kernel
// (MADV_FREE) and stay so, instead of being unmapped (MADV_DONTNEED) at once, its default
// (muzzy_decay_ms 0). The kernel takes such pages when it needs memory; until then bagd
// writes into them again without a page fault. The work that frees and allocates much at
// once (a group budget's placement of a full table, a session loss, a table coming in) paid
// for those faults: group_budget_bench 512 took 105 ms a placement with jemalloc's default,
// 68 with glibc malloc and 48 with this (docs/benchmarks.md). What it costs: the process's
// RSS counts those pages until the kernel takes them (LazyFree in /proc/PID/smaps), so RSS
// stays near its peak after a table goes (docs/operations.md).
extern "C" {
const char* malloc_conf = "muzzy_decay_ms:-1";
}
#endif

namespace bagd {

std::string AllocatorName() {
#ifdef BAGD_HAVE_JEMALLOC
  const char* version = nullptr;
  size_t size = sizeof(version);
  if (mallctl("version", &version, &size, nullptr, 0) == 0 && version != nullptr) {
    return std::string("jemalloc ") + version;
  }
  return "jemalloc";
#else
  return "glibc malloc";
#endif
}

}  // namespace bagd
