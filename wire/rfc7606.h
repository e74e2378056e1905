// RFC 7606 revised error handling in one table (design.md rule 2).
//
// Every path attribute bagd knows maps to the flags it must carry and the action taken
// when it is malformed. The decoder records an AttributeError per problem; the UPDATE
// carries the most severe action. The session layer acts on it, not the parser.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace bagd::wire {

// Ordered by severity: a message's action is the maximum of its errors' actions.
enum class ErrorAction : uint8_t {
  kNone = 0,
  kAttributeDiscard = 1,  // drop the attribute, keep the routes (RFC 7606 §2)
  kTreatAsWithdraw = 2,   // the UPDATE's routes are withdrawn (RFC 7606 §2)
  kAfiSafiDisable = 3,    // stop the family on this session (RFC 4760 §7, RFC 7606 §2)
  kSessionReset = 4,      // send the NOTIFICATION and reset (RFC 4271 §6)
};
const char* ErrorActionName(ErrorAction a);  // "none", "attribute-discard", ...

enum class AttrType : uint8_t {
  kOrigin = 1,
  kAsPath = 2,
  kNextHop = 3,
  kMed = 4,
  kLocalPref = 5,
  kAtomicAggregate = 6,
  kAggregator = 7,
  kCommunities = 8,
  kOriginatorId = 9,
  kClusterList = 10,
  kMpReachNlri = 14,
  kMpUnreachNlri = 15,
  kExtendedCommunities = 16,
  kAs4Path = 17,
  kAs4Aggregator = 18,
  kIpv6ExtendedCommunities = 25,
  kLargeCommunities = 32,
};

namespace attr_flag {
inline constexpr uint8_t kOptional = 0x80;
inline constexpr uint8_t kTransitive = 0x40;
inline constexpr uint8_t kPartial = 0x20;
inline constexpr uint8_t kExtendedLength = 0x10;
}  // namespace attr_flag

enum class AttrCategory : uint8_t { kWellKnown, kOptionalTransitive, kOptionalNonTransitive };

struct AttributeRule {
  uint8_t type;
  const char* name;
  AttrCategory category;
  ErrorAction on_malformed;   // bad flags, bad length, bad content
  uint8_t subcode;            // RFC 4271 UPDATE Message Error subcode for the malformation
  bool discard_from_ebgp;     // RFC 7606 §7.5, §7.9, §7.10: ignored when received over eBGP
  const char* rfc;        // where the handling is specified
};

// nullptr for attribute types bagd does not know (kept raw if optional).
const AttributeRule* FindAttributeRule(uint8_t type);
std::span<const AttributeRule> AttributeRules();
std::string AttributeName(uint8_t type);  // "AS_PATH", or "attribute-99"
// Flags bits (Optional, Transitive) expected for a category.
uint8_t ExpectedFlags(AttrCategory c);

// One problem found while decoding an UPDATE.
struct AttributeError {
  uint8_t type = 0;  // attribute type code, 0 when the problem is not tied to an attribute
  ErrorAction action = ErrorAction::kNone;
  uint8_t subcode = 0;  // RFC 4271 UPDATE Message Error subcode (code 3)
  std::string reason;
  friend bool operator==(const AttributeError&, const AttributeError&) = default;
};

}  // namespace bagd::wire
