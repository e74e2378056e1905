#include "conf/control_group.h"

#include <grp.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"

namespace bagd::conf {

absl::StatusOr<gid_t> LookupGroup(const std::string& name) {
  long hint = ::sysconf(_SC_GETGR_R_SIZE_MAX);
  std::vector<char> buffer(hint > 0 ? static_cast<size_t>(hint) : 4096);
  for (;;) {
    group entry{};
    group* found = nullptr;
    const int err = ::getgrnam_r(name.c_str(), &entry, buffer.data(), buffer.size(), &found);
    if (err == ERANGE && buffer.size() < (1u << 20)) {
      buffer.resize(buffer.size() * 2);  // a group with very many members
      continue;
    }
    if (err != 0) return absl::UnavailableError(absl::StrCat("cannot look up group \"", name, "\": ", std::strerror(err)));
    if (found == nullptr) return absl::NotFoundError(absl::StrCat("no group \"", name, "\" on this host"));
    return found->gr_gid;
  }
}

}  // namespace bagd::conf
