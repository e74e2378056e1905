// `bagctl monitor` (control.proto WatchEvents): one line of text per event, or one JSON
// object per line with --json. Pure functions, so every line is a golden string in the tests.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "bgpd/control/control.pb.h"

namespace bagd::bagctl {

// "2024-05-01T12:00:00.250Z neighbor 192.0.2.2: Active -> Established (established)", no
// newline. Text from peers is Printable.
std::string RenderEventLine(const control::v1::Event& event);
// The event as protobuf JSON on one line (field names as in control.proto), no newline.
absl::StatusOr<std::string> RenderEventJson(const control::v1::Event& event);

}  // namespace bagd::bagctl
