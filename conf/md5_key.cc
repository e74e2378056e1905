#include "conf/md5_key.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "conf/config_defaults.h"
#include "conf/config_error.h"

namespace bagd::conf {

namespace {

std::string ErrnoText(int error) {
  return std::error_code(error, std::generic_category()).message();
}

absl::Status FileError(const std::string& path, std::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("password_file \"", Printable(path), "\" ",
                                                 absl::string_view(what.data(), what.size())));
}

}  // namespace

absl::StatusOr<std::string> ReadMd5KeyFile(const std::string& path) {
  // Anything longer cannot hold a valid key; a huge file is not read whole.
  constexpr std::size_t kReadLimit = 4096;
  // O_NONBLOCK: a FIFO must not hang the daemon (or `--check`) waiting for a writer.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) return FileError(path, absl::StrCat("cannot be read: ", ErrnoText(errno)));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int error = errno;
    ::close(fd);
    return FileError(path, absl::StrCat("cannot be read: ", ErrnoText(error)));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return FileError(
        path, S_ISDIR(st.st_mode) ? "cannot be read: Is a directory" : "is not a regular file");
  }
  std::string contents;
  char buffer[1024];
  while (contents.size() <= kReadLimit) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int error = errno;
      ::close(fd);
      return FileError(path, absl::StrCat("cannot be read: ", ErrnoText(error)));
    }
    if (n == 0) break;
    contents.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(fd);

  while (!contents.empty() && (contents.back() == '\n' || contents.back() == '\r')) {
    contents.pop_back();
  }
  if (contents.empty())
    return FileError(path, "is empty: it must hold the TCP MD5 key on one line");
  if (contents.find('\n') != std::string::npos) {
    return FileError(path, "has several lines: it must hold only the TCP MD5 key, on one line");
  }
  if (contents.size() > kMaxMd5KeyLength) {
    return FileError(
        path,
        absl::StrCat("holds a key of ",
                     contents.size() > kReadLimit ? "over 4096" : absl::StrCat(contents.size()),
                     " octets; TCP MD5 keys are at most ", kMaxMd5KeyLength,
                     " octets (Linux TCP_MD5SIG_MAXKEYLEN)"));
  }
  return contents;
}

absl::StatusOr<std::string> NeighborMd5Key(const bagd::config::v1::Neighbor& neighbor) {
  if (!neighbor.password().empty()) return neighbor.password();
  if (!neighbor.password_file().empty()) return ReadMd5KeyFile(neighbor.password_file());
  return std::string();
}

}  // namespace bagd::conf
