// A NOTIFICATION as the control API shows it: code and subcode with their names, the raw
// data, and the RFC 9003 shutdown communication when there is one. For the daemon, which
// fills NeighborStatus.last_notification_sent / _received.
#pragma once

#include <cstdint>

#include "bgpd/control/control.pb.h"
#include "wire/notification.h"

namespace bagd::control {

v1::Notification NotificationToProto(const wire::NotificationMessage& notification, int64_t time_unix_ms);

}  // namespace bagd::control
