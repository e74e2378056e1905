#include "wire/rfc7606.h"

#include <array>

#include "absl/strings/str_cat.h"
#include "wire/notification.h"

namespace bagd::wire {
namespace {

using A = ErrorAction;
using C = AttrCategory;
namespace ue = update_error;

// The table. Order is by type code.
constexpr std::array<AttributeRule, 17> kRules = {{
    {1, "ORIGIN", C::kWellKnown, A::kTreatAsWithdraw, ue::kInvalidOrigin, false, "RFC 7606 §7.1"},
    {2, "AS_PATH", C::kWellKnown, A::kTreatAsWithdraw, ue::kMalformedAsPath, false, "RFC 7606 §7.2"},
    {3, "NEXT_HOP", C::kWellKnown, A::kTreatAsWithdraw, ue::kInvalidNextHop, false, "RFC 7606 §7.3"},
    {4, "MULTI_EXIT_DISC", C::kOptionalNonTransitive, A::kTreatAsWithdraw, ue::kAttributeLengthError, false,
     "RFC 7606 §7.4"},
    {5, "LOCAL_PREF", C::kWellKnown, A::kTreatAsWithdraw, ue::kAttributeLengthError, true, "RFC 7606 §7.5"},
    {6, "ATOMIC_AGGREGATE", C::kWellKnown, A::kAttributeDiscard, ue::kAttributeLengthError, false,
     "RFC 7606 §7.6"},
    {7, "AGGREGATOR", C::kOptionalTransitive, A::kAttributeDiscard, ue::kAttributeLengthError, false,
     "RFC 7606 §7.7"},
    {8, "COMMUNITIES", C::kOptionalTransitive, A::kTreatAsWithdraw, ue::kOptionalAttributeError, false,
     "RFC 7606 §7.8"},
    {9, "ORIGINATOR_ID", C::kOptionalNonTransitive, A::kTreatAsWithdraw, ue::kAttributeLengthError, true,
     "RFC 7606 §7.9"},
    {10, "CLUSTER_LIST", C::kOptionalNonTransitive, A::kTreatAsWithdraw, ue::kAttributeLengthError, true,
     "RFC 7606 §7.10"},
    {14, "MP_REACH_NLRI", C::kOptionalNonTransitive, A::kAfiSafiDisable, ue::kOptionalAttributeError, false,
     "RFC 7606 §7.11, RFC 4760 §7"},
    {15, "MP_UNREACH_NLRI", C::kOptionalNonTransitive, A::kAfiSafiDisable, ue::kOptionalAttributeError, false,
     "RFC 7606 §7.11, RFC 4760 §7"},
    {16, "EXTENDED_COMMUNITIES", C::kOptionalTransitive, A::kTreatAsWithdraw, ue::kOptionalAttributeError, false,
     "RFC 7606 §7.14"},
    {17, "AS4_PATH", C::kOptionalTransitive, A::kAttributeDiscard, ue::kOptionalAttributeError, false,
     "RFC 6793 §6"},
    {18, "AS4_AGGREGATOR", C::kOptionalTransitive, A::kAttributeDiscard, ue::kOptionalAttributeError, false,
     "RFC 6793 §6"},
    {25, "IPV6_EXTENDED_COMMUNITIES", C::kOptionalTransitive, A::kTreatAsWithdraw, ue::kOptionalAttributeError,
     false, "RFC 7606 §7.15 (RFC 5701)"},
    {32, "LARGE_COMMUNITY", C::kOptionalTransitive, A::kTreatAsWithdraw, ue::kOptionalAttributeError, false,
     "RFC 8092 §6"},
}};

}  // namespace

const char* ErrorActionName(ErrorAction a) {
  switch (a) {
    case A::kNone: return "none";
    case A::kAttributeDiscard: return "attribute-discard";
    case A::kTreatAsWithdraw: return "treat-as-withdraw";
    case A::kAfiSafiDisable: return "afi-safi-disable";
    case A::kSessionReset: return "session-reset";
  }
  return "unknown";
}

const AttributeRule* FindAttributeRule(uint8_t type) {
  for (const auto& r : kRules) {
    if (r.type == type) return &r;
  }
  return nullptr;
}

std::span<const AttributeRule> AttributeRules() { return kRules; }

std::string AttributeName(uint8_t type) {
  if (const auto* r = FindAttributeRule(type)) return std::string(r->name);
  return absl::StrCat("attribute-", type);
}

uint8_t ExpectedFlags(AttrCategory c) {
  switch (c) {
    case C::kWellKnown: return attr_flag::kTransitive;
    case C::kOptionalTransitive: return attr_flag::kOptional | attr_flag::kTransitive;
    case C::kOptionalNonTransitive: return attr_flag::kOptional;
  }
  return 0;
}

}  // namespace bagd::wire
