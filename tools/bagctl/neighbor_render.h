// Text and JSON views of the control API's NeighborStatus for `bagctl show neighbors`.
// Pure functions: the current time is an argument, so the output is fixed for a test.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "bgpd/control/control.pb.h"

namespace bagd::bagctl {

using control::v1::ListNeighborsResponse;
using control::v1::NeighborStatus;

// "0:05:07", "26:00:00": hours keep counting past a day. Negative counts as 0.
std::string FormatHms(int64_t seconds);
// "2024-05-01 12:00:00 UTC".
std::string FormatUnixMs(int64_t unix_ms);
// Text chosen by peers or config with control characters shown as \xNN, so it cannot
// move the cursor or recolor the operator's terminal.
std::string Printable(std::string_view text);

// The Up/Down column, as FRR's `show bgp summary`: time in Established; "never" if the
// session never was; otherwise how long it has been in its current state.
std::string UpDownColumn(const NeighborStatus& neighbor, int64_t now_unix_ms);
// The State/PfxRcd column: prefixes received when Established, else the state name
// ("Idle (Admin)" when administratively down).
std::string StateColumn(const NeighborStatus& neighbor);

// The summary table (one line per neighbor, then the count), like FRR's `show bgp summary`.
std::string RenderNeighborTable(const std::vector<NeighborStatus>& neighbors, int64_t now_unix_ms);
// Everything known about one neighbor, like FRR's `show bgp neighbors ADDRESS`.
std::string RenderNeighborDetail(const NeighborStatus& neighbor, int64_t now_unix_ms);
// Protobuf JSON of any control API message: field names exactly as in control.proto, every
// scalar printed even when zero (64-bit integers are JSON strings, bytes are base64).
// What every `--json` of bagctl prints; `one_line`: no whitespace at all (one object per
// line, `bagctl monitor --json`).
absl::StatusOr<std::string> RenderProtoJson(const google::protobuf::Message& message, bool one_line = false);
// RenderProtoJson of the response.
absl::StatusOr<std::string> RenderNeighborsJson(const ListNeighborsResponse& response);

}  // namespace bagd::bagctl
