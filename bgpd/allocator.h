// The memory allocator bagd was linked with: jemalloc (Debian's libjemalloc2) in the normal
// builds, the C library's malloc in the sanitizer and fuzz builds (ASan brings its own) or
// with -DBAGD_JEMALLOC=OFF. The log's first line names it (docs/operations.md).
#pragma once

#include <string>

namespace bagd {

// "jemalloc 5.3.0-0-g54eaed1d8b56" or "glibc malloc".
std::string AllocatorName();

}  // namespace bagd
