#include "conf/field_locator.h"

#include <algorithm>
#include <cstdlib>
#include <cctype>

#include "absl/strings/str_cat.h"

namespace bagd::conf {

namespace pb = google::protobuf;

const pb::FieldDescriptor* SchemaField(const pb::Descriptor* message, const char* name) {
  const pb::FieldDescriptor* field = message->FindFieldByName(name);
  if (field == nullptr) std::abort();
  return field;
}

FieldPath Child(FieldPath path, const pb::FieldDescriptor* field, int index) {
  path.emplace_back(field, index);
  return path;
}


SourceLocation FieldLocator::Locate(const FieldPath& path) const {
  for (std::size_t n = path.size(); n > 0; --n) {
    const FieldPath prefix(path.begin(), path.begin() + static_cast<std::ptrdiff_t>(n));
    if (auto location = Find(prefix)) return *location;
  }
  return {};
}

SourceLocation LocationOfOffset(std::string_view text, std::size_t offset) {
  constexpr int kTabWidth = 8;  // as google::protobuf::io::Tokenizer
  SourceLocation location{1, 0};
  for (std::size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++location.line;
      location.column = 0;
    } else if (text[i] == '\t') {
      location.column += kTabWidth - location.column % kTabWidth;
    } else {
      ++location.column;
    }
  }
  ++location.column;
  return location;
}

LineIndex::LineIndex(std::string_view text) : text_(text) {
  line_starts_.push_back(0);
  for (std::size_t i = 0; i < text_.size(); ++i) {
    if (text_[i] == '\n') line_starts_.push_back(i + 1);
  }
}

SourceLocation LineIndex::At(std::size_t offset) const {
  offset = std::min(offset, text_.size());
  const auto next_line = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
  const std::size_t line_start = *(next_line - 1);
  SourceLocation location = LocationOfOffset(text_.substr(line_start), offset - line_start);
  location.line = static_cast<int>(next_line - line_starts_.begin());
  return location;
}

std::size_t LineIndex::Offset(int line0, int column0) const {
  if (line0 < 0) return 0;
  if (static_cast<std::size_t>(line0) >= line_starts_.size()) return text_.size();
  std::size_t offset = line_starts_[static_cast<std::size_t>(line0)];
  int column = 0;  // display column of `offset`, counted as LocationOfOffset does
  while (offset < text_.size() && text_[offset] != '\n' && column < column0) {
    column += text_[offset] == '\t' ? 8 - column % 8 : 1;
    ++offset;
  }
  return offset;
}

namespace {

// Just enough of the text format's lexical rules to walk over a list: whitespace,
// # comments, quoted strings, nested {} / <> / [] and bare tokens.
class TextScanner {
 public:
  TextScanner(std::string_view text, std::size_t pos) : text_(text), pos_(pos) {}

  std::size_t pos() const { return pos_; }
  char Peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  void Advance() {
    if (pos_ < text_.size()) ++pos_;
  }

  void SkipSpaceAndComments() {
    while (pos_ < text_.size()) {
      const char c = text_[pos_];
      if (c == '#') {
        while (pos_ < text_.size() && text_[pos_] != '\n') ++pos_;
      } else if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v') {
        ++pos_;
      } else {
        return;
      }
    }
  }

  void SkipIdentifier() {
    while (pos_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) ||
                                   text_[pos_] == '_' || text_[pos_] == '.')) {
      ++pos_;
    }
  }

  // One value: a message in {} or <>, a list, a string (adjacent strings concatenate) or
  // a bare token (number, identifier, -1).
  void SkipValue(int depth = 0) {
    const char c = Peek();
    if (c == '{' || c == '<' || c == '[') {
      const char close = c == '{' ? '}' : c == '<' ? '>' : ']';
      Advance();
      while (pos_ < text_.size()) {
        SkipSpaceAndComments();
        if (Peek() == close) {
          Advance();
          return;
        }
        if (depth > 64) {
          pos_ = text_.size();
          return;
        }
        const std::size_t before = pos_;
        SkipValue(depth + 1);
        if (pos_ == before) Advance();  // ':' ',' ';' and the like
      }
      return;
    }
    if (c == '"' || c == '\'') {
      while (Peek() == '"' || Peek() == '\'') {
        const char quote = Peek();
        Advance();
        while (pos_ < text_.size() && text_[pos_] != quote && text_[pos_] != '\n') {
          if (text_[pos_] == '\\') Advance();
          Advance();
        }
        Advance();
        SkipSpaceAndComments();
      }
      return;
    }
    while (pos_ < text_.size()) {
      const char t = text_[pos_];
      if (t == ',' || t == ']' || t == '}' || t == '>' || t == '#' || t == ';' || t == ':' ||
          t == '{' || t == '<' || std::isspace(static_cast<unsigned char>(t))) {
        return;
      }
      ++pos_;
    }
  }

 private:
  std::string_view text_;
  std::size_t pos_;
};

}  // namespace

std::vector<SourceLocation> TextFieldLocator::Elements(const pb::TextFormat::ParseInfoTree& tree,
                                                       const pb::FieldDescriptor* field) const {
  std::vector<SourceLocation> elements;
  for (int occurrence = 0;; ++occurrence) {
    const pb::TextFormat::ParseLocationRange range = tree.GetLocationRange(field, occurrence);
    if (range.start.line < 0) break;
    const SourceLocation name{range.start.line + 1, range.start.column + 1};
    TextScanner scan(text_, lines_.Offset(range.start.line, range.start.column));
    scan.SkipIdentifier();
    scan.SkipSpaceAndComments();
    if (scan.Peek() == ':') {
      scan.Advance();
      scan.SkipSpaceAndComments();
    }
    if (scan.Peek() != '[') {
      elements.push_back(name);  // `field: value` or `field { ... }`: one element
      continue;
    }
    scan.Advance();
    while (true) {
      scan.SkipSpaceAndComments();
      if (scan.Peek() == ']' || scan.Peek() == '\0') break;
      elements.push_back(lines_.At(scan.pos()));
      const std::size_t before = scan.pos();
      scan.SkipValue();
      scan.SkipSpaceAndComments();
      if (scan.Peek() == ',') scan.Advance();
      if (scan.pos() == before) break;  // not a list we understand; never loop forever
    }
  }
  return elements;
}

std::optional<SourceLocation> TextFieldLocator::Find(const FieldPath& path) const {
  if (path.empty()) return std::nullopt;
  const pb::TextFormat::ParseInfoTree* tree = &tree_;
  for (std::size_t i = 0; i + 1 < path.size(); ++i) {
    // One nested tree per message value, in element order, for both syntaxes.
    tree = tree->GetTreeForNested(path[i].first, path[i].second);
    if (tree == nullptr) return std::nullopt;
  }
  const auto [field, index] = path.back();
  if (field->is_repeated()) {
    if (index < 0) return std::nullopt;
    const std::vector<SourceLocation> elements = Elements(*tree, field);
    if (static_cast<std::size_t>(index) >= elements.size()) return std::nullopt;
    return elements[static_cast<std::size_t>(index)];
  }
  const pb::TextFormat::ParseLocation location = tree->GetLocation(field, -1);
  if (location.line < 0) return std::nullopt;
  // ParseInfoTree is 0-based.
  return SourceLocation{location.line + 1, location.column + 1};
}

namespace {

std::string PathKey(const FieldPath& path) {
  std::string key;
  for (const auto& [field, index] : path) {
    if (!key.empty()) key += '.';
    key += field->name();
    if (index >= 0) absl::StrAppend(&key, "[", index, "]");
  }
  return key;
}

// "holdTime" -> "hold_time"; "hold_time" unchanged.
std::string SnakeCase(std::string_view key) {
  std::string out;
  for (char c : key) {
    if (std::isupper(static_cast<unsigned char>(c))) {
      out += '_';
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else {
      out += c;
    }
  }
  return out;
}

// A recursive-descent walk over JSON text recording where each key and array element
// starts. It never reads out of bounds and gives up (returning false) on anything it does
// not understand.
class JsonIndexer {
 public:
  JsonIndexer(std::string_view text, std::map<std::string, SourceLocation>& out)
      : text_(text), lines_(text), out_(out) {}

  void Run() {
    SkipSpace();
    Value("", 0);
  }

 private:
  static constexpr int kMaxDepth = 64;

  bool AtEnd() const { return pos_ >= text_.size(); }
  char Peek() const { return AtEnd() ? '\0' : text_[pos_]; }

  void SkipSpace() {
    while (!AtEnd() && (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' ||
                        text_[pos_] == '\r')) {
      ++pos_;
    }
  }

  void Record(const std::string& path, std::size_t offset) {
    if (!path.empty()) out_.emplace(path, lines_.At(offset));
  }

  bool String(std::string* value) {
    if (Peek() != '"') return false;
    ++pos_;
    while (!AtEnd()) {
      const char c = text_[pos_++];
      if (c == '"') return true;
      if (c == '\\') {
        if (AtEnd()) return false;
        const char escaped = text_[pos_++];
        // Keys of our schema are plain ASCII; a \u escape is kept verbatim.
        if (value != nullptr) value->push_back(escaped == 'u' ? '?' : escaped);
        continue;
      }
      if (value != nullptr) value->push_back(c);
    }
    return false;
  }

  bool Value(const std::string& path, int depth) {
    if (depth > kMaxDepth) return false;
    switch (Peek()) {
      case '{':
        return Object(path, depth);
      case '[':
        return Array(path, depth);
      case '"':
        return String(nullptr);
      default: {
        // Number, true, false, null: up to the next delimiter.
        const std::size_t start = pos_;
        while (!AtEnd() && text_[pos_] != ',' && text_[pos_] != '}' && text_[pos_] != ']' &&
               text_[pos_] != ' ' && text_[pos_] != '\n' && text_[pos_] != '\t' &&
               text_[pos_] != '\r') {
          ++pos_;
        }
        return pos_ > start;
      }
    }
  }

  bool Object(const std::string& path, int depth) {
    ++pos_;  // '{'
    SkipSpace();
    if (Peek() == '}') {
      ++pos_;
      return true;
    }
    while (true) {
      SkipSpace();
      const std::size_t key_offset = pos_;
      std::string key;
      if (!String(&key)) return false;
      const std::string child = path.empty() ? SnakeCase(key) : path + "." + SnakeCase(key);
      Record(child, key_offset);
      SkipSpace();
      if (Peek() != ':') return false;
      ++pos_;
      SkipSpace();
      if (!Value(child, depth + 1)) return false;
      SkipSpace();
      if (Peek() == ',') {
        ++pos_;
        continue;
      }
      if (Peek() == '}') {
        ++pos_;
        return true;
      }
      return false;
    }
  }

  bool Array(const std::string& path, int depth) {
    ++pos_;  // '['
    SkipSpace();
    if (Peek() == ']') {
      ++pos_;
      return true;
    }
    for (int index = 0;; ++index) {
      SkipSpace();
      const std::string element = absl::StrCat(path, "[", index, "]");
      Record(element, pos_);
      if (!Value(element, depth + 1)) return false;
      SkipSpace();
      if (Peek() == ',') {
        ++pos_;
        continue;
      }
      if (Peek() == ']') {
        ++pos_;
        return true;
      }
      return false;
    }
  }

  std::string_view text_;
  LineIndex lines_;
  std::map<std::string, SourceLocation>& out_;
  std::size_t pos_ = 0;
};

}  // namespace

JsonFieldLocator::JsonFieldLocator(std::string_view json) { JsonIndexer(json, locations_).Run(); }

std::optional<SourceLocation> JsonFieldLocator::Find(const FieldPath& path) const {
  return FindPath(PathKey(path));
}

std::optional<SourceLocation> JsonFieldLocator::FindPath(std::string_view dotted_path) const {
  auto it = locations_.find(SnakeCase(dotted_path));
  if (it == locations_.end()) return std::nullopt;
  return it->second;
}

}  // namespace bagd::conf
