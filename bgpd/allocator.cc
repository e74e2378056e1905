#include "bgpd/allocator.h"

#ifdef BAGD_HAVE_JEMALLOC
#include <jemalloc/jemalloc.h>
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
