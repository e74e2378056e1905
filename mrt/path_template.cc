#include "mrt/path_template.h"

#include <ctime>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace bagd::mrt {
namespace {

// strftime conversions that name a time (or the literal '%'). No %c, %x, %X (locale text
// with spaces and '/'), %n / %t (whitespace) or %Z (a zone name).
constexpr std::string_view kFields = "YyCGgmdejHIMSsuwaAbBhpUVWFTDRz%";

std::string S(std::string_view v) { return std::string(v); }

std::string_view FileName(std::string_view t) {
  const size_t slash = t.rfind('/');
  return slash == std::string_view::npos ? t : t.substr(slash + 1);
}

}  // namespace

absl::Status CheckPathTemplate(std::string_view t) {
  if (t.empty() || t[0] != '/') {
    return absl::InvalidArgumentError(absl::StrCat("\"", S(t), "\" is not an absolute path"));
  }
  const std::string_view name = FileName(t);
  const std::string_view dir = t.substr(0, t.size() - name.size());
  if (dir.find('%') != std::string_view::npos) {
    return absl::InvalidArgumentError(absl::StrCat(
        "\"", S(t), "\": time fields (%) may only be in the file name, not in the directory \"", S(dir), "\""));
  }
  if (name.empty()) return absl::InvalidArgumentError(absl::StrCat("\"", S(t), "\" names a directory, not a file"));
  bool time_field = false;
  for (size_t i = 0; i < name.size(); ++i) {
    if (name[i] != '%') continue;
    if (i + 1 == name.size()) {
      return absl::InvalidArgumentError(absl::StrCat("\"", S(t), "\" ends with a lone '%' (write %% for a '%')"));
    }
    const char c = name[++i];
    if (kFields.find(c) == std::string_view::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("\"", S(t), "\": %", std::string(1, c), " is not a time field (use %Y %m %d %H %M %S, ...)"));
    }
    if (c == 'F' || c == 'T' || c == 'D' || c == 'R') {
      if (c == 'D') {
        return absl::InvalidArgumentError(absl::StrCat("\"", S(t), "\": %D contains '/'; use %Y%m%d"));
      }
    }
    if (c != '%') time_field = true;
  }
  if (!time_field) {
    return absl::InvalidArgumentError(absl::StrCat(
        "\"", S(t), "\" has no time field: every file would replace the last; add one, e.g. .%Y%m%d.%H%M"));
  }
  return absl::OkStatus();
}

std::string ExpandPathTemplate(std::string_view t, int64_t unix_seconds) {
  const std::time_t when = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  gmtime_r(&when, &tm);
  std::string out;
  const std::string pattern(t);
  // strftime returns 0 both for an empty result and for a too small buffer: grow until it fits.
  for (size_t size = t.size() + 64; size <= 64 * 1024; size *= 2) {
    out.resize(size);
    const size_t n = std::strftime(out.data(), out.size(), pattern.c_str(), &tm);
    if (n > 0) {
      out.resize(n);
      return out;
    }
  }
  return pattern;
}

std::string PathTemplateGlob(std::string_view t) {
  const std::string_view name = FileName(t);
  std::string glob;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    if (c == '%' && i + 1 < name.size()) {
      glob += name[++i] == '%' ? "%" : "*";
    } else if (c == '*' || c == '?' || c == '[' || c == '\\') {
      glob += '\\';
      glob += c;
    } else {
      glob += c;
    }
  }
  return glob;
}

std::string PathTemplateDirectory(std::string_view t) {
  const std::string_view name = FileName(t);
  std::string dir(t.substr(0, t.size() - name.size()));
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  return dir;
}

}  // namespace bagd::mrt
