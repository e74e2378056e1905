// A problem found in a configuration file, located at the offending text.
#pragma once

#include <string>
#include <string_view>

namespace bagd::conf {

struct ConfigError {
  std::string file;
  int line = 0;    // 1-based; 0 when the problem has no place in the file (e.g. it cannot be read)
  int column = 0;  // 1-based; a tab advances to the next multiple of 8 (as GCC counts)
  std::string message;

  // "file:line:col: message", or "file: message" when line is 0.
  std::string ToString() const;
};

// `text` with control characters written as \n, \t, \r or \xHH, so that a message quoting
// what the user wrote stays on one line (one error per line is what editors and scripts
// parse). Other octets, UTF-8 included, are kept.
std::string Printable(std::string_view text);

}  // namespace bagd::conf
