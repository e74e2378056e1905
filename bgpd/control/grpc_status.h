// absl::Status <-> grpc::Status, used by both ends of the control API.
// The two code sets are the same 17 canonical codes (google.rpc.Code); the mapping is
// spelled out so a change on either side fails to compile instead of silently shifting.
#pragma once

#include <grpcpp/support/status.h>

#include "absl/status/status.h"

namespace bagd::control {

grpc::Status ToGrpcStatus(const absl::Status& status);
absl::Status FromGrpcStatus(const grpc::Status& status);

}  // namespace bagd::control
