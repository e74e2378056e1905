#include "conf/config_loader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <system_error>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "conf/config_validator.h"
#include "conf/field_locator.h"
#include "conf/neighbor_groups.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/text_format.h"
#include "google/protobuf/util/json_util.h"

namespace bagd::conf {

namespace {

namespace v1 = bagd::config::v1;
namespace pb = google::protobuf;

// The schema's message types, for suggestions in parser errors.
std::vector<const pb::Descriptor*> SchemaMessages() {
  return {v1::Config::descriptor(),
          v1::Router::descriptor(),
          v1::Listen::descriptor(),
          v1::Timers::descriptor(),
          v1::Neighbor::descriptor(),
          v1::NeighborLinkBandwidth::descriptor(),
          v1::Multipath::descriptor(),
          v1::LinkBandwidth::descriptor(),
          v1::FamilyLinkBandwidth::descriptor(),
          v1::Damping::descriptor(),
          v1::Fib::descriptor(),
          v1::Network::descriptor()};
}

// The message type whose block contains byte `offset` of the text-format `text` (Config at
// the top level), found by following the field names of the enclosing `name { ... }` and
// `name: [{...}]` blocks; null when a name on the way is not in the schema. Several
// messages have a field of the same name with different enums (`mode` in link_bandwidth
// and in a neighbor's link_bandwidth), so an unknown enum value needs its block.
const pb::Descriptor* EnclosingMessage(std::string_view text, std::size_t offset) {
  struct Level {
    const pb::Descriptor* message;
    bool list = false;                               // inside `name: [ ... ]`
    const pb::FieldDescriptor* list_field = nullptr;  // that name's field
  };
  std::vector<Level> stack{{v1::Config::descriptor()}};
  std::string name;  // the last identifier: the field a following '{' or '[' belongs to
  auto field_named = [&](const Level& level) -> const pb::FieldDescriptor* {
    if (level.list) return level.list_field;
    return level.message == nullptr ? nullptr : level.message->FindFieldByName(name);
  };
  offset = std::min(offset, text.size());
  for (std::size_t i = 0; i < offset;) {
    const char c = text[i];
    if (c == '#') {
      while (i < offset && text[i] != '\n') ++i;
    } else if (c == '"' || c == '\'') {
      for (++i; i < offset && text[i] != c && text[i] != '\n'; ++i) {
        if (text[i] == '\\') ++i;
      }
      ++i;
    } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      const std::size_t start = i;
      while (i < offset && (std::isalnum(static_cast<unsigned char>(text[i])) || text[i] == '_')) {
        ++i;
      }
      name.assign(text.substr(start, i - start));
    } else {
      if (c == '{' || c == '<') {
        const pb::FieldDescriptor* field = field_named(stack.back());
        stack.push_back({field == nullptr ? nullptr : field->message_type()});
      } else if (c == '[') {
        stack.push_back({stack.back().message, true, field_named(stack.back())});
      } else if ((c == '}' || c == '>' || c == ']') && stack.size() > 1) {
        stack.pop_back();
      }
      ++i;
    }
  }
  return stack.back().message;
}

std::size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// The text between `open` and the next `close` after it, or "" when absent.
std::string Between(const std::string& s, std::string_view open, std::string_view close) {
  const std::size_t start = s.find(open);
  if (start == std::string::npos) return "";
  const std::size_t from = start + open.size();
  const std::size_t end = s.find(close, from);
  return end == std::string::npos ? "" : s.substr(from, end - from);
}

// "unknown field "x" in Neighbor: did you mean "y"?", or the list of fields when nothing
// is close.
std::string UnknownFieldMessage(const pb::Descriptor* d, const std::string& unknown) {
  std::string best;
  std::size_t best_distance = std::string::npos;
  std::vector<std::string> names;
  for (int i = 0; i < d->field_count(); ++i) {
    const std::string& name = d->field(i)->name();
    names.push_back(name);
    // Also compare with the JSON name: "routerId" in a text file means router_id.
    const std::size_t distance =
        std::min(EditDistance(unknown, name), EditDistance(unknown, d->field(i)->json_name()));
    if (distance < best_distance) {
      best_distance = distance;
      best = name;
    }
  }
  const std::string head = absl::StrCat("unknown field \"", unknown, "\" in ", d->name());
  // A field of the top level inside a block: most likely the block above was not closed.
  if (d != bagd::config::v1::Config::descriptor() &&
      bagd::config::v1::Config::descriptor()->FindFieldByName(unknown) != nullptr) {
    return absl::StrCat("\"", unknown, "\" is a top-level field, not one of ", d->name(),
                        ": is a closing \"}\" missing before this line?");
  }
  if (best_distance <= std::max<std::size_t>(2, unknown.size() / 3)) {
    return absl::StrCat(head, ": did you mean \"", best, "\"?");
  }
  return absl::StrCat(head, ": its fields are ", absl::StrJoin(names, ", "));
}

// The protobuf text parser's messages, made actionable: unknown fields get the closest
// field name (or the list of fields), unknown enum values the list of values. `enclosing`
// is the message the error is in, when known.
std::string ExplainParserError(const std::string& message, const pb::Descriptor* enclosing) {
  const std::string type = Between(message, "Message type \"", "\"");
  const std::string unknown = Between(message, "has no field named \"", "\"");
  if (!type.empty() && !unknown.empty()) {
    const pb::Descriptor* d = pb::DescriptorPool::generated_pool()->FindMessageTypeByName(type);
    return d == nullptr ? message : UnknownFieldMessage(d, unknown);
  }
  const std::string value = Between(message, "Unknown enumeration value of \"", "\"");
  const std::string field_name = Between(message, "for field \"", "\"");
  if (!value.empty() && !field_name.empty()) {
    std::vector<const pb::Descriptor*> candidates = SchemaMessages();
    if (enclosing != nullptr) candidates.insert(candidates.begin(), enclosing);
    for (const pb::Descriptor* d : candidates) {
      const pb::FieldDescriptor* field = d->FindFieldByName(field_name);
      if (field == nullptr || field->enum_type() == nullptr) continue;
      std::vector<std::string> values;
      for (int i = 1; i < field->enum_type()->value_count(); ++i) {  // 0 is *_UNSPECIFIED
        values.push_back(field->enum_type()->value(i)->name());
      }
      return absl::StrCat("unknown value ", value, " for ", field_name, ": use ",
                          absl::StrJoin(values, ", "));
    }
    return message;
  }
  if (const std::string twice = Between(message, "Non-repeated field \"", "\""); !twice.empty()) {
    return absl::StrCat("field \"", twice,
                        "\" is given more than once: keep one (only repeated "
                        "fields such as neighbors and listen may appear several times)");
  }
  if (message.rfind("Expected string", 0) == 0) {
    return absl::StrCat(message,
                        " (string values are written in double quotes, e.g. "
                        "router_id: \"192.0.2.1\")");
  }
  return message;
}

// The protobuf text parser reports some errors (unknown field, unknown enum value, field
// given twice) just after the offending name; for those, return the display column
// (0-based, tabs to multiples of 8) where `token` starts on that line, else `column`.
int TokenStartColumn(std::string_view text, int line, int column, std::string_view token) {
  if (token.empty() || line < 0) return column;
  std::size_t start = 0;
  for (int i = 0; i < line; ++i) {
    start = text.find('\n', start);
    if (start == std::string_view::npos) return column;
    ++start;
  }
  const std::string_view line_text = text.substr(start, text.find('\n', start) - start);
  auto display_column = [&](std::size_t bytes) {
    return LocationOfOffset(line_text, bytes).column - 1;
  };
  std::size_t end = 0;  // the byte offset of `column`
  while (end < line_text.size() && display_column(end) < column) ++end;
  const std::size_t found = line_text.substr(0, end).rfind(token);
  return found == std::string_view::npos ? column : display_column(found);
}

// The name an error is about, for TokenStartColumn.
std::string OffendingToken(const std::string& message) {
  for (auto [open, close] :
       {std::pair{"has no field named \"", "\""}, std::pair{"Non-repeated field \"", "\""},
        std::pair{"Unknown enumeration value of \"", "\""}}) {
    if (std::string token = Between(message, open, close); !token.empty()) return token;
  }
  return "";
}

class CollectParserErrors final : public pb::io::ErrorCollector {
 public:
  CollectParserErrors(std::string_view text, std::string_view file) : text_(text), file_(file) {}

  // The tokenizer and parser count from 0.
  void AddError(int line, pb::io::ColumnNumber column, const std::string& message) override {
    column = TokenStartColumn(text_, line, column, OffendingToken(message));
    const pb::Descriptor* enclosing =
        line < 0 ? nullptr : EnclosingMessage(text_, LineIndex(text_).Offset(line, column));
    errors_.push_back(ConfigError{std::string(file_), line < 0 ? 0 : line + 1,
                                  line < 0 ? 0 : column + 1,
                                  Printable(ExplainParserError(message, enclosing))});
  }
  void AddWarning(int, pb::io::ColumnNumber, const std::string&) override {}

  // The parser stops at its first error, which is reported last. Tokenizer errors reported
  // before it but located after it come from reading ahead (e.g. "192.0.2.1" unquoted gives
  // "Expected string" and then a number error further on): only the first one matters.
  std::vector<ConfigError> Errors() && {
    if (errors_.empty()) return {};
    const std::pair<int, int> last(errors_.back().line, errors_.back().column);
    std::vector<ConfigError> kept;
    for (ConfigError& e : errors_) {
      if (std::pair(e.line, e.column) <= last) kept.push_back(std::move(e));
    }
    std::stable_sort(kept.begin(), kept.end(), [](const ConfigError& a, const ConfigError& b) {
      return std::tie(a.line, a.column) < std::tie(b.line, b.column);
    });
    return kept;
  }

 private:
  std::string_view text_;
  std::string_view file_;
  std::vector<ConfigError> errors_;
};

// Relative password_file paths are relative to the config file, not to the daemon's
// working directory; the resolved path is what the config carries from here on.
void ResolvePasswordFiles(v1::Config& config, std::string_view file_name) {
  const std::filesystem::path directory = std::filesystem::path(file_name).parent_path();
  if (directory.empty()) return;
  for (v1::Neighbor& neighbor : *config.mutable_neighbors()) {
    const std::filesystem::path file(neighbor.password_file());
    if (!neighbor.password_file().empty() && file.is_relative()) {
      neighbor.set_password_file((directory / file).string());
    }
  }
}

// The message type a JSON error path ("neighbors[0].timers") leads to, or null.
const pb::Descriptor* MessageAtPath(const std::string& path) {
  const pb::Descriptor* d = v1::Config::descriptor();
  for (std::string_view rest = path; !rest.empty() && d != nullptr;) {
    const std::size_t dot = rest.find('.');
    std::string_view segment = rest.substr(0, dot);
    rest = dot == std::string_view::npos ? std::string_view() : rest.substr(dot + 1);
    segment = segment.substr(0, segment.find('['));
    const pb::FieldDescriptor* field = d->FindFieldByName(std::string(segment));
    if (field == nullptr) field = d->FindFieldByCamelcaseName(std::string(segment));
    d = field == nullptr ? nullptr : field->message_type();
  }
  return d;
}

// "invalid value X for type TYPE_UINT32" -> "invalid value X: expected a whole number
// 0..4294967295"; an enum type -> its values.
std::string ExplainJsonValueError(const std::string& message) {
  const std::size_t for_type = message.find(" for type ");
  if (message.rfind("invalid value ", 0) != 0 || for_type == std::string::npos) return message;
  const std::string value = message.substr(0, for_type);
  const std::string type = message.substr(for_type + 10);
  if (type == "TYPE_UINT32") return absl::StrCat(value, ": expected a whole number 0..4294967295");
  if (type == "TYPE_BOOL") return absl::StrCat(value, ": expected true or false");
  if (type == "TYPE_STRING") return absl::StrCat(value, ": expected a string in double quotes");
  const std::string prefix = "type.googleapis.com/";
  if (type.rfind(prefix, 0) == 0) {
    const pb::EnumDescriptor* e =
        pb::DescriptorPool::generated_pool()->FindEnumTypeByName(type.substr(prefix.size()));
    if (e != nullptr) {
      std::vector<std::string> values;
      for (int i = 1; i < e->value_count(); ++i) values.push_back(e->value(i)->name());
      return absl::StrCat(value, ": use ", absl::StrJoin(values, ", "));
    }
  }
  return message;
}

// protobuf's JSON parser reports either a field path ("(neighbors[0]) foo: Cannot find
// field.", "(router.asn): invalid value ...") or a syntax error followed by the 20 octets
// either side of it and a caret line. Both become a line:column and a one-line message.
ConfigError ExplainJsonError(std::string_view text, std::string_view file_name,
                             const std::string& raw) {
  ConfigError error{std::string(file_name), 1, 1, ""};
  const JsonFieldLocator locator(text);
  if (!raw.empty() && raw.front() == '(') {
    const std::size_t close = raw.find(')');
    const std::string path = raw.substr(1, close == std::string::npos ? 0 : close - 1);
    std::string rest = close == std::string::npos ? raw : raw.substr(close + 1);
    while (!rest.empty() && (rest.front() == ':' || rest.front() == ' ')) rest.erase(0, 1);
    std::optional<SourceLocation> at = locator.FindPath(path);
    const std::size_t colon = rest.find(": Cannot find field");
    if (colon != std::string::npos) {
      const std::string key = rest.substr(0, colon);
      if (auto key_at = locator.FindPath(path.empty() ? key : absl::StrCat(path, ".", key))) {
        at = key_at;
      }
      const pb::Descriptor* d = MessageAtPath(path);
      error.message =
          d != nullptr ? UnknownFieldMessage(d, key) : absl::StrCat("unknown field \"", key, "\"");
    } else {
      error.message = path.empty() ? rest : absl::StrCat(path, ": ", ExplainJsonValueError(rest));
    }
    if (at) {
      error.line = at->line;
      error.column = at->column;
    }
    return error;
  }
  const std::size_t first_newline = raw.find('\n');
  error.message = raw.substr(0, first_newline);
  const std::size_t last_newline = raw.rfind('\n');
  if (first_newline != std::string::npos && last_newline > first_newline) {
    const std::string segment = raw.substr(first_newline + 1, last_newline - first_newline - 1);
    const std::string caret_line = raw.substr(last_newline + 1);
    const std::size_t caret = caret_line.find('^');
    const std::size_t found = segment.empty() ? std::string_view::npos : text.find(segment);
    if (caret != std::string::npos && found != std::string_view::npos) {
      const SourceLocation at = LocationOfOffset(text, found + caret);
      error.line = at.line;
      error.column = at.column;
    } else if (segment.empty()) {
      // Unexpected end of input: point just after the last non-space character.
      const std::size_t last = text.find_last_not_of(" \t\r\n");
      const SourceLocation at =
          LocationOfOffset(text, last == std::string_view::npos ? 0 : last + 1);
      error.line = at.line;
      error.column = at.column;
    }
  }
  return error;
}

bool ParseText(std::string_view text, std::string_view file_name, LoadedConfig& result,
               pb::TextFormat::ParseInfoTree& tree) {
  CollectParserErrors collector(text, file_name);
  pb::TextFormat::Parser parser;
  parser.RecordErrorsTo(&collector);
  parser.WriteLocationsTo(&tree);
  const bool parsed = parser.ParseFromString(std::string(text), &result.config);
  result.errors = std::move(collector).Errors();
  if (!parsed && result.errors.empty()) {
    result.errors.push_back(ConfigError{std::string(file_name), 1, 1, "cannot parse the file"});
  }
  return parsed && result.errors.empty();
}

bool ParseJson(std::string_view text, std::string_view file_name, LoadedConfig& result) {
  pb::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  const auto status = pb::util::JsonStringToMessage(pb::StringPiece(text.data(), text.size()),
                                                    &result.config, options);
  if (status.ok()) return true;
  const std::string message(status.message().data(), status.message().size());
  ConfigError error = ExplainJsonError(text, file_name, message);
  error.message = Printable(absl::StrCat("JSON: ", error.message));
  result.errors.push_back(std::move(error));
  return false;
}

std::string ErrnoText(int error) {
  return std::error_code(error, std::generic_category()).message();
}

}  // namespace

LoadedConfig ParseConfig(std::string_view text, std::string_view file_name) {
  LoadedConfig result;
  if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);  // UTF-8 byte order mark
  const std::size_t first = text.find_first_not_of(" \t\r\n");
  const bool json = first != std::string_view::npos && text[first] == '{';
  if (first != std::string_view::npos && text[first] == '[') {
    const SourceLocation at = LocationOfOffset(text, first);
    result.errors.push_back(ConfigError{std::string(file_name), at.line, at.column,
                                        "JSON: the configuration must be an object { ... }, "
                                        "not an array"});
    return result;
  }

  pb::TextFormat::ParseInfoTree tree;
  std::unique_ptr<FieldLocator> locator;
  if (json) {
    if (!ParseJson(text, file_name, result)) return result;
    locator = std::make_unique<JsonFieldLocator>(text);
  } else {
    if (!ParseText(text, file_name, result, tree)) return result;
    locator = std::make_unique<TextFieldLocator>(tree, text);
  }
  // Neighbor groups first: each neighbor is checked as it will run, its errors located where
  // the neighbor or its group wrote the field.
  ExpandedNeighbors expanded = ExpandNeighborGroups(result.config, file_name, locator.get());
  if (!expanded.errors.empty()) {
    result.errors = std::move(expanded.errors);
    return result;
  }
  result.config = std::move(expanded.config);
  ResolvePasswordFiles(result.config, file_name);
  const ExpandedFieldLocator expanded_locator(locator.get(), expanded.origins);
  result.errors = ValidateConfig(result.config, file_name, &expanded_locator, &expanded.origins);
  expanded.config = std::move(result.config);
  DropTemplates(expanded);
  result.config = std::move(expanded.config);
  if (result.ok()) ApplyDefaults(result.config);
  return result;
}

namespace {

// What a non-regular file is, for the message that refuses it.
const char* FileTypeText(mode_t mode) {
  if (S_ISFIFO(mode)) return "a FIFO (named pipe, e.g. /dev/stdin from a pipe or <(...))";
  if (S_ISCHR(mode)) return "a character device (e.g. a terminal)";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

}  // namespace

LoadedConfig LoadConfigFile(const std::string& path, ConfigSource source) {
  // Far beyond any real configuration; protects against pointing --config at a device.
  constexpr std::size_t kMaxConfigSize = 16 << 20;
  auto fail = [&](std::string message) {
    LoadedConfig result;
    result.errors.push_back(ConfigError{path, 0, 0, std::move(message)});
    return result;
  };
  // O_NONBLOCK: open() of a FIFO without a writer returns at once instead of waiting for
  // one; the type is then checked on the descriptor itself (no window between a stat() and
  // the open() in which the path could be swapped for a FIFO).
  const int flags = O_RDONLY | O_CLOEXEC | O_NOCTTY | (source == ConfigSource::kRegularFile ? O_NONBLOCK : 0);
  const int fd = ::open(path.c_str(), flags);
  if (fd < 0) return fail(absl::StrCat("cannot read configuration: ", ErrnoText(errno)));
  if (source == ConfigSource::kRegularFile) {
    struct stat st;
    if (::fstat(fd, &st) != 0) {
      const int error = errno;
      ::close(fd);
      return fail(absl::StrCat("cannot read configuration: ", ErrnoText(error)));
    }
    if (!S_ISREG(st.st_mode)) {
      ::close(fd);
      return fail(absl::StrCat("cannot read configuration: it is ", FileTypeText(st.st_mode),
                               ", not a regular file; bagd reads its configuration again on every SIGHUP, "
                               "so it must be a file (`bagd --check` reads any source once)"));
    }
    // Back to blocking reads (a regular file never blocks for long; this keeps the loop simple).
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  }
  std::string text;
  char buffer[64 * 1024];
  while (true) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int error = errno;
      ::close(fd);
      return fail(absl::StrCat("cannot read configuration: ", ErrnoText(error)));
    }
    if (n == 0) break;
    text.append(buffer, static_cast<std::size_t>(n));
    if (text.size() > kMaxConfigSize) {
      ::close(fd);
      return fail("cannot read configuration: larger than 16 MiB");
    }
  }
  ::close(fd);
  return ParseConfig(text, path);
}

std::vector<std::string> Rfc8212Warnings(const bagd::config::v1::Config& config) {
  namespace v1 = bagd::config::v1;
  std::vector<std::string> out;
  for (const v1::Neighbor& n : config.neighbors()) {
    if (n.remote_as() == config.router().asn()) continue;  // iBGP
    for (int af : n.address_families()) {
      const char* family = af == v1::IPV6_UNICAST ? "ipv6-unicast" : "ipv4-unicast";
      bool import = !n.import_policies().empty(), export_ = !n.export_policies().empty();
      for (const v1::FamilyPolicies& f : n.family_policies()) {
        if (f.family() != af) continue;
        import |= !f.import_policies().empty();
        export_ |= !f.export_policies().empty();
      }
      if (!import && n.default_import() == v1::DEFAULT_ACTION_REJECT) {
        out.push_back(absl::StrCat("neighbor ", n.address(), " ", family,
                                   ": no import policy: nothing it sends is accepted (RFC 8212; attach "
                                   "import_policies, or set default_import: DEFAULT_ACTION_ACCEPT)"));
      }
      if (!export_ && n.default_export() == v1::DEFAULT_ACTION_REJECT) {
        out.push_back(absl::StrCat("neighbor ", n.address(), " ", family,
                                   ": no export policy: nothing is advertised to it (RFC 8212; attach "
                                   "export_policies, or set default_export: DEFAULT_ACTION_ACCEPT)"));
      }
    }
  }
  return out;
}

std::vector<std::string> SecretFileWarnings(const bagd::config::v1::Config& config, const std::string& path) {
  namespace v1 = bagd::config::v1;
  // Only regular files: a pipe (`--config /dev/stdin`) has no mode that means anything here.
  auto world_readable = [](const std::string& file, mode_t* mode) {
    struct stat st;
    if (stat(file.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
    *mode = st.st_mode & 07777;
    return (st.st_mode & S_IROTH) != 0;
  };
  auto octal = [](mode_t mode) {
    char text[8];
    snprintf(text, sizeof(text), "%04o", static_cast<unsigned>(mode));
    return std::string(text);
  };
  std::vector<std::string> out;
  std::vector<std::string> inline_keys;
  std::vector<std::string> key_files;  // in the order of the neighbors, each once
  for (const v1::Neighbor& n : config.neighbors()) {
    if (!n.password().empty()) inline_keys.push_back(n.address());
    if (!n.password_file().empty() &&
        std::find(key_files.begin(), key_files.end(), n.password_file()) == key_files.end()) {
      key_files.push_back(n.password_file());
    }
  }
  mode_t mode = 0;
  if (!inline_keys.empty() && world_readable(path, &mode)) {
    out.push_back(absl::StrCat(
        "the file holds the TCP-MD5 password of ", inline_keys.size() == 1 ? "neighbor " : "neighbors ",
        absl::StrJoin(inline_keys, ", "), " and every local user may read it (mode ", octal(mode),
        "): chmod o-r ", path, " (the Debian package installs it 0640 root:bagd), or move the keys to password_file"));
  }
  for (const std::string& file : key_files) {
    if (world_readable(file, &mode)) {
      out.push_back(absl::StrCat("password_file ", file, " holds a TCP-MD5 password and every local user may read it (mode ",
                                 octal(mode), "): chmod o-r ", file));
    }
  }
  return out;
}

int CheckConfig(const std::string& path, std::ostream& out) {
  // A one-shot read: `generate-config | bagd --check --config /dev/stdin` is fine.
  const LoadedConfig loaded = LoadConfigFile(path, ConfigSource::kAnyReadable);
  if (!loaded.ok()) {
    for (const ConfigError& error : loaded.errors) out << error.ToString() << '\n';
    return 1;
  }
  const int n = loaded.config.neighbors_size();
  out << path << ": configuration OK (" << n << (n == 1 ? " neighbor)" : " neighbors)") << '\n';
  for (const std::string& w : Rfc8212Warnings(loaded.config)) out << path << ": warning: " << w << '\n';
  for (const std::string& w : SecretFileWarnings(loaded.config, path)) out << path << ": warning: " << w << '\n';
  return 0;
}

}  // namespace bagd::conf
