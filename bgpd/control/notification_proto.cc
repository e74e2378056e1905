#include "bgpd/control/notification_proto.h"

#include <string>

#include "bgpd/control/utf8.h"

namespace bagd::control {

v1::Notification NotificationToProto(const wire::NotificationMessage& notification, int64_t time_unix_ms) {
  v1::Notification out;
  out.set_code(notification.code);
  out.set_subcode(notification.subcode);
  out.set_code_name(wire::ErrorCodeName(notification.code));
  out.set_subcode_name(wire::ErrorSubcodeName(notification.code, notification.subcode));
  out.set_data(std::string(notification.data.begin(), notification.data.end()));
  // A peer may send any bytes here; the API carries UTF-8 only (proto3 `string`).
  if (auto message = notification.ShutdownCommunication()) out.set_shutdown_message(ToValidUtf8(*message));
  out.set_time_unix_ms(time_unix_ms);
  return out;
}

}  // namespace bagd::control
