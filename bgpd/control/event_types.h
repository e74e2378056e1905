// The event types of WatchEvents (control.proto), shared by the server and bagctl.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "bgpd/control/control.pb.h"

namespace bagd::control {

// Event types a subscriber may ask for (WatchEventsRequest.types), as a bit mask.
enum EventType : uint32_t {
  kEventNeighbor = 1u << 0,
  kEventWeights = 1u << 1,
  kEventFib = 1u << 2,
  kEventConfig = 1u << 3,
  kEventBfd = 1u << 4,
  kEventAll = kEventNeighbor | kEventWeights | kEventFib | kEventConfig | kEventBfd,
};
// The type names ("neighbor", ...) → a mask; InvalidArgument names an unknown one. Empty:
// every type.
absl::StatusOr<uint32_t> ParseEventTypes(const std::vector<std::string>& names);
std::vector<std::string> EventTypeNames(uint32_t mask);
// The type bit of an event's kind; 0 for the stream's own (subscribed, dropped, stopping).
uint32_t EventTypeOf(const v1::Event& event);

}  // namespace bagd::control
