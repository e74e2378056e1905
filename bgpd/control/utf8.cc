#include "bgpd/control/utf8.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>
#include <google/protobuf/reflection.h>

namespace bagd::control {
namespace {

// Length of the well-formed sequence starting at text[i], or 0 if there is none
// (RFC 3629 §4, the table of well-formed byte sequences).
size_t SequenceLength(std::string_view text, size_t i) {
  const auto byte = [&](size_t k) -> unsigned { return static_cast<unsigned char>(text[k]); };
  const unsigned b0 = byte(i);
  if (b0 < 0x80) return 1;
  size_t len;
  unsigned lo = 0x80, hi = 0xbf;  // allowed range of the second byte
  if (b0 >= 0xc2 && b0 <= 0xdf) {
    len = 2;
  } else if (b0 >= 0xe0 && b0 <= 0xef) {
    len = 3;
    if (b0 == 0xe0) lo = 0xa0;  // overlong
    if (b0 == 0xed) hi = 0x9f;  // surrogates
  } else if (b0 >= 0xf0 && b0 <= 0xf4) {
    len = 4;
    if (b0 == 0xf0) lo = 0x90;  // overlong
    if (b0 == 0xf4) hi = 0x8f;  // above U+10FFFF
  } else {
    return 0;
  }
  if (text.size() - i < len) return 0;
  if (byte(i + 1) < lo || byte(i + 1) > hi) return 0;
  for (size_t k = 2; k < len; ++k) {
    if ((byte(i + k) & 0xc0) != 0x80) return 0;
  }
  return len;
}

}  // namespace

bool IsValidUtf8(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    const size_t len = SequenceLength(text, i);
    if (len == 0) return false;
    i += len;
  }
  return true;
}

std::string ToValidUtf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const size_t len = SequenceLength(text, i);
    if (len == 0) {
      out += "\xef\xbf\xbd";  // U+FFFD REPLACEMENT CHARACTER, one per bad byte
      ++i;
    } else {
      out.append(text.substr(i, len));
      i += len;
    }
  }
  return out;
}

size_t ScrubInvalidUtf8(google::protobuf::Message& message) {
  using google::protobuf::FieldDescriptor;
  const google::protobuf::Descriptor* desc = message.GetDescriptor();
  const google::protobuf::Reflection* refl = message.GetReflection();
  size_t changed = 0;
  for (int f = 0; f < desc->field_count(); ++f) {
    const FieldDescriptor* field = desc->field(f);
    if (field->type() == FieldDescriptor::TYPE_STRING) {
      if (field->is_repeated()) {
        for (int k = 0; k < refl->FieldSize(message, field); ++k) {
          const std::string value = refl->GetRepeatedString(message, field, k);
          if (!IsValidUtf8(value)) {
            refl->SetRepeatedString(&message, field, k, ToValidUtf8(value));
            ++changed;
          }
        }
      } else {
        const std::string value = refl->GetString(message, field);
        if (!IsValidUtf8(value)) {
          refl->SetString(&message, field, ToValidUtf8(value));
          ++changed;
        }
      }
    } else if (field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      if (field->is_repeated()) {
        for (int k = 0; k < refl->FieldSize(message, field); ++k) {
          changed += ScrubInvalidUtf8(*refl->MutableRepeatedMessage(&message, field, k));
        }
      } else if (refl->HasField(message, field)) {
        changed += ScrubInvalidUtf8(*refl->MutableMessage(&message, field));
      }
    }
  }
  return changed;
}

}  // namespace bagd::control
