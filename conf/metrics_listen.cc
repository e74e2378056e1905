#include "conf/metrics_listen.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "conf/ip_address_text.h"

namespace bagd::conf {

namespace {

absl::StatusOr<uint16_t> Port(const std::string& option, const std::string& text) {
  uint32_t port = 0;
  const bool digits = !text.empty() && std::all_of(text.begin(), text.end(), [](char c) { return absl::ascii_isdigit(c); });
  if (!digits || !absl::SimpleAtoi(text, &port) || port == 0 || port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("--metrics-listen ", option, ": port \"", text, "\" is not a port number 1..65535"));
  }
  return static_cast<uint16_t>(port);
}

absl::Status Usage(const std::string& option, const std::string& why) {
  return absl::InvalidArgumentError(
      absl::StrCat("--metrics-listen ", option, ": ", why,
                   "; write ADDR:PORT, e.g. 127.0.0.1:9180, 0.0.0.0:9180 (every IPv4 address), "
                   "[::1]:9180 or [::]:9180, or a bare port for 127.0.0.1"));
}

}  // namespace

std::string MetricsListen::HostPort() const {
  return v6 ? absl::StrCat("[", address, "]:", port) : absl::StrCat(address, ":", port);
}

absl::StatusOr<MetricsListen> ParseMetricsListen(const std::string& text) {
  MetricsListen out;
  if (text.find(':') == std::string::npos) {
    // A bare port: loopback, never every address by accident.
    auto port = Port(text, text);
    if (!port.ok()) return port.status();
    out.address = kMetricsDefaultAddress;
    out.port = *port;
    out.port_only = true;
    return out;
  }
  std::string host, port_text;
  if (text.front() == '[') {
    const size_t close = text.find(']');
    if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      return Usage(text, "an IPv6 address in brackets must be followed by :PORT");
    }
    host = text.substr(1, close - 1);
    port_text = text.substr(close + 2);
  } else {
    const size_t colon = text.rfind(':');
    if (text.find(':') != colon) {
      return Usage(text, "an IPv6 address must be written in brackets");
    }
    host = text.substr(0, colon);
    port_text = text.substr(colon + 1);
  }
  if (host.empty()) return Usage(text, "the address is empty");
  const auto address = ParseIpAddressText(host);
  if (!address) return Usage(text, absl::StrCat("\"", host, "\" is not an IPv4 or IPv6 address"));
  if (address->v6 != (text.front() == '[')) {
    return Usage(text, address->v6 ? "an IPv6 address must be written in brackets"
                                   : "brackets are for IPv6 addresses only");
  }
  auto port = Port(text, port_text);
  if (!port.ok()) return port.status();
  out.address = host;
  out.port = *port;
  out.v6 = address->v6;
  return out;
}

}  // namespace bagd::conf
