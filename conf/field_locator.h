// Where a field of the parsed Config was written in the source text, so that every
// semantic error points at the offending line and column.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "google/protobuf/descriptor.h"
#include "google/protobuf/text_format.h"

namespace bagd::conf {

// A field reached from the root Config: (field, index) steps, index -1 for a singular field
// and the element index for a repeated one. {neighbors,1},{timers,-1},{hold_time,-1} is
// the hold_time of the second neighbor.
using FieldPath = std::vector<std::pair<const google::protobuf::FieldDescriptor*, int>>;

// `message`'s field `name`; aborts when there is none (a caller's names are its contract with
// bagd.proto, so a rename there fails every test at once).
const google::protobuf::FieldDescriptor* SchemaField(const google::protobuf::Descriptor* message, const char* name);
// `path` one step further: `field` (index -1 for a singular field, else the element).
FieldPath Child(FieldPath path, const google::protobuf::FieldDescriptor* field, int index = -1);

// 1-based line and column; line 0 when unknown.
struct SourceLocation {
  int line = 0;
  int column = 0;
  friend bool operator==(const SourceLocation&, const SourceLocation&) = default;
};

class FieldLocator {
 public:
  virtual ~FieldLocator() = default;
  // Where the field itself was written; nullopt when the file does not mention it.
  virtual std::optional<SourceLocation> Find(const FieldPath& path) const = 0;
  // The field, or else its nearest enclosing field that was written; {0,0} if none.
  SourceLocation Locate(const FieldPath& path) const;
};

// Byte offsets <-> 1-based line:column in one text, columns counted like the protobuf
// tokenizer (a tab advances to the next multiple of 8).
class LineIndex {
 public:
  explicit LineIndex(std::string_view text);
  SourceLocation At(std::size_t offset) const;
  // The byte offset of a 0-based (line, display column) as the protobuf parser reports
  // them; clamped to the end of that line / of the text.
  std::size_t Offset(int line0, int column0) const;

 private:
  std::string_view text_;
  std::vector<std::size_t> line_starts_;
};

// Text format: the parser's ParseInfoTree (TextFormat::Parser::WriteLocationsTo), plus the
// text itself. The tree records one location per occurrence of a field name, so for the
// list syntax (`address_families: [IPV4_UNICAST, IPV6_UNICAST]`, `neighbors [{...}, {...}]`)
// the elements are found by scanning the list in the text.
class TextFieldLocator final : public FieldLocator {
 public:
  TextFieldLocator(const google::protobuf::TextFormat::ParseInfoTree& tree, std::string_view text)
      : tree_(tree), text_(text), lines_(text) {}
  std::optional<SourceLocation> Find(const FieldPath& path) const override;

 private:
  // Where each element of a repeated field starts, in element order.
  std::vector<SourceLocation> Elements(const google::protobuf::TextFormat::ParseInfoTree& tree,
                                       const google::protobuf::FieldDescriptor* field) const;

  const google::protobuf::TextFormat::ParseInfoTree& tree_;
  std::string_view text_;
  LineIndex lines_;
};

// JSON: an index of every key and array element of the document by its path
// ("neighbors[1].timers.hold_time"; lowerCamelCase keys are stored in snake_case, the way
// protobuf's JSON mapping names them). Built by a lenient scanner run on JSON that the
// protobuf parser has already accepted; on anything unexpected it stops indexing.
class JsonFieldLocator final : public FieldLocator {
 public:
  explicit JsonFieldLocator(std::string_view json);
  std::optional<SourceLocation> Find(const FieldPath& path) const override;
  // The same by dotted path, as protobuf's JSON errors name fields
  // ("neighbors[0].timers.hold_time"; camelCase segments are accepted too).
  std::optional<SourceLocation> FindPath(std::string_view dotted_path) const;

 private:
  std::map<std::string, SourceLocation> locations_;
};

// 1-based line:column of a byte offset in `text`, counting columns like the protobuf
// tokenizer (a tab advances to the next multiple of 8).
SourceLocation LocationOfOffset(std::string_view text, std::size_t offset);

}  // namespace bagd::conf
