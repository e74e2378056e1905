#include "net/host_port.h"

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace bagd::net {

absl::StatusOr<HostPort> ParseHostPort(std::string_view a) {
  std::string_view host, port;
  if (!a.empty() && a.front() == '[') {
    const size_t close = a.find(']');
    if (close != std::string_view::npos && close + 1 < a.size() && a[close + 1] == ':') {
      host = a.substr(1, close - 1);
      port = a.substr(close + 2);
    }
  } else if (const size_t colon = a.rfind(':'); colon != std::string_view::npos && a.find(':') == colon) {
    host = a.substr(0, colon);
    port = a.substr(colon + 1);
  }
  uint32_t p = 0;
  if (host.empty() || !absl::SimpleAtoi(absl::string_view(port.data(), port.size()), &p) || p == 0 || p > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("'", absl::string_view(a.data(), a.size()), "' is not ADDRESS:PORT"));
  }
  return HostPort{std::string(host), static_cast<uint16_t>(p)};
}

}  // namespace bagd::net
