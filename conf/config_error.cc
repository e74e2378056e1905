#include "conf/config_error.h"

#include "absl/strings/str_cat.h"

namespace bagd::conf {

std::string ConfigError::ToString() const {
  if (line <= 0) return absl::StrCat(file, ": ", message);
  return absl::StrCat(file, ":", line, ":", column, ": ", message);
}

std::string Printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (u < 0x20 || u == 0x7f) {
      absl::StrAppend(&out, "\\x", absl::Hex(u, absl::kZeroPad2));
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace bagd::conf
