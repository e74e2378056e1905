// Loading and checking bagd's configuration file (schema: conf/bagd.proto; for users:
// docs/config.md).
//
//   text format (conf/examples/*.textproto)  -> TextFormat::Parser, unknown fields are errors
//   JSON (first non-space character is '{')  -> protobuf's JSON mapping
//   then: semantic checks (conf/config_validator.h), each error at its field's line:column;
//   then, when there is no error: ApplyDefaults (conf/config_defaults.h).
#pragma once

#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "conf/bagd.pb.h"
#include "conf/config_defaults.h"
#include "conf/config_error.h"

namespace bagd::conf {

struct LoadedConfig {
  // Complete (defaults applied) when ok(); otherwise whatever was parsed, not for use.
  bagd::config::v1::Config config;
  // Sorted by line and column. A syntax error stops parsing, so it is the only error; a
  // file that parses gets every semantic error, not just the first.
  std::vector<ConfigError> errors;
  bool ok() const { return errors.empty(); }
};

// Parses `text` (JSON when its first non-space character is '{', else text format),
// validates and applies defaults. `file_name` names the source in errors, and its
// directory is where relative password_file paths are resolved from.
LoadedConfig ParseConfig(std::string_view text, std::string_view file_name);

// What LoadConfigFile accepts as the configuration's source.
enum class ConfigSource {
  // Only a regular file (after following symlinks). The daemon reads its configuration at
  // start and again on every SIGHUP: a FIFO, a terminal or /dev/stdin can be read once at
  // most, and open() of a FIFO nobody writes to waits forever. Anything else is refused
  // with the reason, without waiting ("is a FIFO (named pipe), not a regular file").
  kRegularFile,
  // Anything that can be read once (`bagd --check --config /dev/stdin`, `<(...)`).
  kAnyReadable,
};

// Reads `path` and ParseConfig()s it. A file that cannot be read gives one error with
// line 0 ("path: cannot read configuration: No such file or directory").
LoadedConfig LoadConfigFile(const std::string& path, ConfigSource source = ConfigSource::kRegularFile);

// RFC 8212: each eBGP neighbor and family left with no routes in or out (no policy attached,
// default REJECT), as `bagd --check` prints them. `config` has its defaults applied.
std::vector<std::string> Rfc8212Warnings(const bagd::config::v1::Config& config);

// TCP-MD5 keys that any local user can read: `path` (the configuration file) when a
// neighbor's `password` is in it and its mode has the others' read bit, and each
// `password_file` with that bit. Only regular files are looked at (not `--check` of a pipe).
std::vector<std::string> SecretFileWarnings(const bagd::config::v1::Config& config, const std::string& path);

// `bagd --config FILE --check` (any readable source: kAnyReadable): prints every error as "file:line:col: message", one per
// line, and returns 1; or prints "FILE: configuration OK (N neighbors)" and returns 0, after it
// "FILE: warning: ..." lines: Rfc8212Warnings, then SecretFileWarnings (never an error: a
// world-readable file still loads).
int CheckConfig(const std::string& path, std::ostream& out);

}  // namespace bagd::conf
