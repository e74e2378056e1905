// `bagctl show bfd [PEER]`: the BFD sessions as a table, and one session in detail.
#pragma once

#include <cstdint>
#include <string>

#include "bgpd/control/control.pb.h"

namespace bagd::bagctl {

std::string RenderBfdTable(const control::v1::ListBfdSessionsResponse& response, int64_t now_unix_ms);
std::string RenderBfdDetail(const control::v1::BfdSession& session, int64_t now_unix_ms);

}  // namespace bagd::bagctl
