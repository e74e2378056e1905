#include "bgpd/control/event_types.h"

#include <algorithm>
#include <iterator>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace bagd::control {
namespace {

constexpr struct {
  const char* name;
  uint32_t bit;
} kTypeNames[] = {
    {"neighbor", kEventNeighbor},
    {"weights", kEventWeights},
    {"fib", kEventFib},
    {"config", kEventConfig},
    {"bfd", kEventBfd},
};

}  // namespace

absl::StatusOr<uint32_t> ParseEventTypes(const std::vector<std::string>& names) {
  if (names.empty()) return static_cast<uint32_t>(kEventAll);
  uint32_t mask = 0;
  for (const std::string& n : names) {
    const auto* it = std::find_if(std::begin(kTypeNames), std::end(kTypeNames),
                                  [&](const auto& t) { return n == t.name; });
    if (it == std::end(kTypeNames)) {
      std::vector<std::string> known;
      for (const auto& t : kTypeNames) known.push_back(t.name);
      return absl::InvalidArgumentError(
          absl::StrCat("unknown event type \"", n, "\" (the types are ", absl::StrJoin(known, ", "), ")"));
    }
    mask |= it->bit;
  }
  return mask;
}

std::vector<std::string> EventTypeNames(uint32_t mask) {
  std::vector<std::string> out;
  for (const auto& t : kTypeNames) {
    if (mask & t.bit) out.push_back(t.name);
  }
  return out;
}

uint32_t EventTypeOf(const v1::Event& event) {
  switch (event.kind_case()) {
    case v1::Event::kNeighbor: return kEventNeighbor;
    case v1::Event::kWeights: return kEventWeights;
    case v1::Event::kFib: return kEventFib;
    case v1::Event::kConfig: return kEventConfig;
    case v1::Event::kBfd: return kEventBfd;
    default: return 0;
  }
}

}  // namespace bagd::control
