// `bagctl show bmp`: the BMP monitoring stations (docs/bmp.md) as a table, then one block per
// station with what the table leaves out (buffer, re-syncs, the last error).
#pragma once

#include <cstdint>
#include <string>

#include "bgpd/control/control.pb.h"

namespace bagd::bagctl {

std::string RenderBmpStations(const control::v1::ListBmpStationsResponse& response, int64_t now_unix_ms);

}  // namespace bagd::bagctl
