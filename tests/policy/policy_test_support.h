// Helpers for the policy tests: configs from text, routes from a few fields.
#pragma once

#include <catch2/catch.hpp>
#include <google/protobuf/text_format.h>

#include <string>

#include "policy/policy.h"

namespace bagd::policy::testing {

// The value, after checking (with the status as the failure message) that there is one.
template <typename T>
T Must(absl::StatusOr<T> value) {
  INFO(value.status().ToString());
  REQUIRE(value.ok());
  return std::move(*value);
}

inline config::v1::Config ParseConfig(const std::string& text) {
  config::v1::Config config;
  INFO(text);
  REQUIRE(google::protobuf::TextFormat::ParseFromString(text, &config));
  return config;
}

// A PolicySet compiled from `text` (router asn 65000 is prepended when the text has no router).
inline PolicySet CompilePolicies(const std::string& text) {
  const std::string full = text.find("router") == std::string::npos
                               ? "router { asn: 65000 router_id: \"192.0.2.1\" }\n" + text
                               : text;
  return Must(PolicySet::Compile(ParseConfig(full)));
}

inline net::Prefix P(const std::string& text) {
  const absl::StatusOr<net::Prefix> p = net::Prefix::Parse(text);
  REQUIRE(p.ok());
  return *p;
}

inline net::IpAddress A(const std::string& text) {
  const absl::StatusOr<net::IpAddress> a = net::IpAddress::Parse(text);
  REQUIRE(a.ok());
  return *a;
}

inline wire::AsPath Path(std::vector<uint32_t> asns) {
  wire::AsPath path;
  if (!asns.empty()) path.segments.push_back({wire::AsSegmentType::kSequence, std::move(asns)});
  return path;
}

// An eBGP route from 198.51.100.2: ORIGIN IGP, the given AS path, next hop the neighbor.
inline wire::PathAttributes Attrs(std::vector<uint32_t> asns = {65001}) {
  wire::PathAttributes a;
  a.origin = wire::Origin::kIgp;
  a.as_path = Path(std::move(asns));
  a.next_hop = A("198.51.100.2");
  return a;
}

inline wire::ExtendedCommunity Lb(double bits_per_second, uint32_t asn = 65001) {
  return wire::LinkBandwidth::FromBitsPerSecond(asn, bits_per_second, true).ToExtendedCommunity();
}

inline RouteContext Route(const std::string& prefix, const wire::PathAttributes& attrs,
                          RouteSource source = RouteSource::kEbgp, const std::string& neighbor = "198.51.100.2") {
  RouteContext r;
  r.prefix = P(prefix);
  r.attributes = &attrs;
  r.source = source;
  if (source != RouteSource::kLocal) r.neighbor = A(neighbor);
  return r;
}

inline uint32_t Community(uint32_t as, uint32_t value) { return as << 16 | value; }

}  // namespace bagd::policy::testing
