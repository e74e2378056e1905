// The RIB as the control API shows it (bagctl show routes / show rib-summary).
#pragma once

#include "absl/status/statusor.h"
#include "bgpd/control/control.pb.h"
#include "rib/rib.h"

namespace bagd::session {

// `request` was checked by the control server (canonical prefix or address, family).
absl::StatusOr<control::v1::ListRoutesResponse> ListRoutes(const rib::Rib& rib,
                                                           const control::v1::ListRoutesRequest& request);
control::v1::RibSummary RibSummary(const rib::Rib& rib, const rib::AttributeStore& store);

}  // namespace bagd::session
