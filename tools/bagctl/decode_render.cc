#include "net/overloaded.h"
#include "tools/bagctl/decode_render.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace bagd::bagctl {
namespace {

using nlohmann::json;
using namespace bagd::wire;
using namespace bagd::net;


std::string Hex(ByteSpan b) {
  std::string s;
  s.reserve(b.size() * 2);
  for (uint8_t x : b) absl::StrAppendFormat(&s, "%02x", x);
  return s;
}

std::string Ipv4(uint32_t v) { return IpAddress::V4(v).ToString(); }
std::string CommunityString(uint32_t c) { return absl::StrFormat("%d:%d", c >> 16, c & 0xffff); }
std::string LargeString(const LargeCommunity& c) {
  return absl::StrFormat("%d:%d:%d", c.global_admin, c.local1, c.local2);
}

const char* SegmentTypeName(AsSegmentType t) {
  switch (t) {
    case AsSegmentType::kSet: return "set";
    case AsSegmentType::kSequence: return "sequence";
    case AsSegmentType::kConfedSequence: return "confed-sequence";
    case AsSegmentType::kConfedSet: return "confed-set";
  }
  return "?";
}

json NlriJson(const std::vector<Nlri>& list, bool add_path) {
  json a = json::array();
  for (const auto& n : list) {
    json o = {{"prefix", n.prefix.ToString()}};
    if (add_path) o["path_id"] = n.path_id;
    a.push_back(std::move(o));
  }
  return a;
}

std::string NlriText(const std::vector<Nlri>& list, bool add_path) {
  std::vector<std::string> parts;
  for (const auto& n : list) {
    parts.push_back(add_path ? absl::StrCat(n.prefix.ToString(), " path-id ", n.path_id) : n.prefix.ToString());
  }
  return absl::StrJoin(parts, " ");
}

json LinkBandwidthJson(const LinkBandwidth& lb) {
  json o = {{"asn", lb.asn()},
            {"transitive", lb.transitive()},
            {"valid", lb.valid()},
            {"string", lb.ToString()}};
  if (lb.valid()) {
    o["bytes_per_second"] = static_cast<double>(lb.bytes_per_second());
    o["bits_per_second"] = lb.bits_per_second();
  }
  return o;
}

std::string ExtCommunityText(const ExtendedCommunity& ec) {
  if (auto lb = LinkBandwidth::FromExtendedCommunity(ec)) return lb->ToString();
  const uint8_t t = ec.type() & 0x3f;
  if ((t == 0x00 || t == 0x02) && (ec.subtype() == 0x02 || ec.subtype() == 0x03)) {
    const char* kind = ec.subtype() == 0x02 ? "RT" : "SoO";
    if (t == 0x00) return absl::StrFormat("%s:%d:%d", kind, (ec.raw >> 32) & 0xffff, ec.raw & 0xffffffff);
    return absl::StrFormat("%s:%d:%d", kind, (ec.raw >> 16) & 0xffffffff, ec.raw & 0xffff);
  }
  return absl::StrFormat("0x%016x", ec.raw);
}

json ExtendedLbJson(const ExtendedLinkBandwidth& x) {
  return {{"asn", x.asn},
          {"transitive", x.transitive},
          {"bytes_per_second", x.bytes_per_second},
          {"bits_per_second", static_cast<double>(x.bytes_per_second) * 8.0}};
}

json AttributesJson(const PathAttributes& a, const CodecContext& ctx) {
  json o = json::object();
  if (a.origin) o["origin"] = OriginName(*a.origin);
  if (a.as_path) {
    json segs = json::array();
    for (const auto& s : a.as_path->segments) segs.push_back({{"type", SegmentTypeName(s.type)}, {"asns", s.asns}});
    o["as_path"] = {{"string", a.as_path->ToString()}, {"length", a.as_path->Length()}, {"segments", segs}};
  }
  if (a.next_hop) o["next_hop"] = a.next_hop->ToString();
  if (a.med) o["med"] = *a.med;
  if (a.local_pref) o["local_pref"] = *a.local_pref;
  if (a.atomic_aggregate) o["atomic_aggregate"] = true;
  if (a.aggregator) o["aggregator"] = {{"asn", a.aggregator->asn}, {"address", a.aggregator->address.ToString()}};
  if (!a.communities.empty()) {
    json c = json::array();
    for (uint32_t x : a.communities) c.push_back(CommunityString(x));
    o["communities"] = c;
  }
  if (a.originator_id) o["originator_id"] = Ipv4(*a.originator_id);
  if (!a.cluster_list.empty()) {
    json c = json::array();
    for (uint32_t x : a.cluster_list) c.push_back(Ipv4(x));
    o["cluster_list"] = c;
  }
  if (a.mp_reach) {
    json mp = {{"family", FamilyName(a.mp_reach->family)}, {"next_hop", a.mp_reach->next_hop.ToString()}};
    if (a.mp_reach->link_local) mp["link_local_next_hop"] = a.mp_reach->link_local->ToString();
    mp["nlri"] = NlriJson(a.mp_reach->nlri, ctx.AddPath(a.mp_reach->family));
    o["mp_reach"] = mp;
  }
  if (a.mp_unreach) {
    o["mp_unreach"] = {{"family", FamilyName(a.mp_unreach->family)},
                       {"withdrawn", NlriJson(a.mp_unreach->withdrawn, ctx.AddPath(a.mp_unreach->family))}};
  }
  if (!a.extended_communities.empty()) {
    json c = json::array();
    for (const auto& ec : a.extended_communities) {
      json e = {{"hex", absl::StrFormat("%016x", ec.raw)},
                {"type", ec.type()},
                {"subtype", ec.subtype()},
                {"string", ExtCommunityText(ec)}};
      if (auto lb = LinkBandwidth::FromExtendedCommunity(ec)) e["link_bandwidth"] = LinkBandwidthJson(*lb);
      c.push_back(std::move(e));
    }
    o["extended_communities"] = c;
    const LinkBandwidthSelection sel = a.SelectedLinkBandwidth();
    if (sel.seen > 0) {
      json s = {{"seen", sel.seen}, {"invalid", sel.invalid}};
      s["selected"] = sel.chosen ? LinkBandwidthJson(*sel.chosen) : json(nullptr);
      o["link_bandwidth"] = s;
    }
  }
  if (!a.ipv6_extended_communities.empty()) {
    json c = json::array();
    for (const auto& ec : a.ipv6_extended_communities) {
      json e = {{"hex", Hex(ec.bytes)}, {"type", ec.type()}, {"subtype", ec.subtype()}};
      if (auto x = DecodeExtendedLinkBandwidth(ec)) e["extended_link_bandwidth"] = ExtendedLbJson(*x);
      c.push_back(std::move(e));
    }
    o["ipv6_extended_communities"] = c;
  }
  if (!a.large_communities.empty()) {
    json c = json::array();
    for (const auto& lc : a.large_communities) c.push_back(LargeString(lc));
    o["large_communities"] = c;
  }
  if (!a.unknown.empty()) {
    json c = json::array();
    for (const auto& u : a.unknown) {
      c.push_back({{"type", u.type},
                   {"name", AttributeName(u.type)},
                   {"flags", absl::StrFormat("0x%02x", u.flags)},
                   {"value", Hex(u.value)}});
    }
    o["unknown"] = c;
  }
  return o;
}

json CapabilityJson(const Capability& cap) {
  json o = {{"code", CapabilityCodeOf(cap)}, {"name", CapabilityName(CapabilityCodeOf(cap))}};
  std::visit(Overloaded{
                 [&](const MultiprotocolCap& c) {
                   auto f = FamilyFromAfiSafi(c.afi, c.safi);
                   o["afi"] = c.afi;
                   o["safi"] = c.safi;
                   if (f) o["family"] = FamilyName(*f);
                 },
                 [](const RouteRefreshCap&) {},
                 [&](const ExtendedNextHopCap& c) {
                   json e = json::array();
                   for (const auto& x : c.entries)
                     e.push_back({{"nlri_afi", x.nlri_afi}, {"nlri_safi", x.nlri_safi}, {"nexthop_afi", x.nexthop_afi}});
                   o["entries"] = e;
                 },
                 [](const ExtendedMessageCap&) {},
                 [&](const RoleCap& c) { o["role"] = c.role; },
                 [&](const GracefulRestartCap& c) {
                   o["restart_state"] = c.restart_state;
                   o["notification"] = c.notification;
                   o["restart_time"] = c.restart_time;
                   json e = json::array();
                   for (const auto& x : c.families)
                     e.push_back({{"afi", x.afi}, {"safi", x.safi}, {"forwarding_preserved", x.forwarding_preserved}});
                   o["families"] = e;
                 },
                 [&](const FourOctetAsCap& c) { o["asn"] = c.asn; },
                 [&](const AddPathCap& c) {
                   json e = json::array();
                   for (const auto& x : c.families) {
                     const char* dir = x.direction == 1 ? "receive" : x.direction == 2 ? "send"
                                                                 : x.direction == 3 ? "both"
                                                                                    : "invalid";
                     e.push_back({{"afi", x.afi}, {"safi", x.safi}, {"direction", dir}});
                   }
                   o["families"] = e;
                 },
                 [](const EnhancedRouteRefreshCap&) {},
                 [&](const FqdnCap& c) {
                   o["hostname"] = c.hostname;
                   o["domain"] = c.domain;
                 },
                 [&](const UnknownCap& c) { o["value"] = Hex(c.value); },
             },
             cap);
  return o;
}

json NotificationJson(const NotificationMessage& n) {
  json o = {{"code", n.code},
            {"subcode", n.subcode},
            {"code_name", ErrorCodeName(n.code)},
            {"subcode_name", ErrorSubcodeName(n.code, n.subcode)},
            {"data", Hex(n.data)}};
  if (auto msg = n.ShutdownCommunication()) o["shutdown_message"] = *msg;
  return o;
}

json ErrorsJson(const std::vector<AttributeError>& errors) {
  json a = json::array();
  for (const auto& e : errors) {
    json o = {{"attribute", e.type ? AttributeName(e.type) : std::string("")},
              {"attribute_type", e.type},
              {"action", ErrorActionName(e.action)},
              {"reason", e.reason}};
    if (e.subcode) {
      o["code"] = 3;
      o["subcode"] = e.subcode;
      o["subcode_name"] = ErrorSubcodeName(3, e.subcode);
    }
    a.push_back(std::move(o));
  }
  return a;
}

const char* RoleName(uint8_t r) {
  switch (r) {
    case 0: return "provider";
    case 1: return "rs";
    case 2: return "rs-client";
    case 3: return "customer";
    case 4: return "peer";
  }
  return "unknown";
}

std::string CapabilityText(const Capability& cap) {
  const std::string name = CapabilityName(CapabilityCodeOf(cap));
  return std::visit(
      Overloaded{
          [&](const MultiprotocolCap& c) {
            auto f = FamilyFromAfiSafi(c.afi, c.safi);
            return absl::StrCat(name, " ", f ? std::string(FamilyName(*f)) : absl::StrFormat("afi %d safi %d", c.afi, c.safi));
          },
          [&](const FourOctetAsCap& c) { return absl::StrCat(name, " ", c.asn); },
          [&](const RoleCap& c) { return absl::StrCat(name, " ", RoleName(c.role)); },
          [&](const GracefulRestartCap& c) {
            return absl::StrFormat("%s restart-time %ds%s (%d families)", name, c.restart_time,
                                   c.restart_state ? " restarting" : "", c.families.size());
          },
          [&](const AddPathCap& c) {
            std::vector<std::string> f;
            for (const auto& x : c.families) f.push_back(absl::StrFormat("afi %d/safi %d dir %d", x.afi, x.safi, x.direction));
            return absl::StrCat(name, " ", absl::StrJoin(f, ", "));
          },
          [&](const FqdnCap& c) { return absl::StrCat(name, " ", c.hostname, c.domain.empty() ? "" : ".", c.domain); },
          [&](const UnknownCap& c) { return c.value.empty() ? name : absl::StrCat(name, " 0x", Hex(c.value)); },
          [&](const auto&) { return name; },
      },
      cap);
}

void AttributesText(const PathAttributes& a, const CodecContext& ctx, std::string& out) {
  if (a.origin) absl::StrAppend(&out, "  ORIGIN ", OriginName(*a.origin), "\n");
  if (a.as_path) absl::StrAppend(&out, "  AS_PATH ", a.as_path->ToString(), "\n");
  if (a.next_hop) absl::StrAppend(&out, "  NEXT_HOP ", a.next_hop->ToString(), "\n");
  if (a.med) absl::StrAppend(&out, "  MED ", *a.med, "\n");
  if (a.local_pref) absl::StrAppend(&out, "  LOCAL_PREF ", *a.local_pref, "\n");
  if (a.atomic_aggregate) absl::StrAppend(&out, "  ATOMIC_AGGREGATE\n");
  if (a.aggregator)
    absl::StrAppend(&out, "  AGGREGATOR ", a.aggregator->asn, " ", a.aggregator->address.ToString(), "\n");
  if (!a.communities.empty()) {
    std::vector<std::string> c;
    for (uint32_t x : a.communities) c.push_back(CommunityString(x));
    absl::StrAppend(&out, "  COMMUNITIES ", absl::StrJoin(c, " "), "\n");
  }
  if (a.originator_id) absl::StrAppend(&out, "  ORIGINATOR_ID ", Ipv4(*a.originator_id), "\n");
  if (!a.cluster_list.empty()) {
    std::vector<std::string> c;
    for (uint32_t x : a.cluster_list) c.push_back(Ipv4(x));
    absl::StrAppend(&out, "  CLUSTER_LIST ", absl::StrJoin(c, " "), "\n");
  }
  if (!a.extended_communities.empty()) {
    std::vector<std::string> c;
    for (const auto& ec : a.extended_communities) c.push_back(ExtCommunityText(ec));
    absl::StrAppend(&out, "  EXTENDED_COMMUNITIES ", absl::StrJoin(c, ", "), "\n");
    const auto sel = a.SelectedLinkBandwidth();
    if (sel.seen > 1 || sel.invalid > 0) {
      absl::StrAppend(&out, "  link bandwidth used: ",
                      sel.chosen ? sel.chosen->ToString() : "none (invalid value present)", "\n");
    }
  }
  for (const auto& ec : a.ipv6_extended_communities) {
    if (auto x = DecodeExtendedLinkBandwidth(ec)) {
      absl::StrAppend(&out, "  IPV6_EXTENDED_COMMUNITY extended-LB:", x->asn, ":", x->bytes_per_second, "B/s (",
                      FormatBitsPerSecond(static_cast<double>(x->bytes_per_second) * 8), ")\n");
    } else {
      absl::StrAppend(&out, "  IPV6_EXTENDED_COMMUNITY 0x", Hex(ec.bytes), "\n");
    }
  }
  if (!a.large_communities.empty()) {
    std::vector<std::string> c;
    for (const auto& lc : a.large_communities) c.push_back(LargeString(lc));
    absl::StrAppend(&out, "  LARGE_COMMUNITY ", absl::StrJoin(c, " "), "\n");
  }
  for (const auto& u : a.unknown) {
    absl::StrAppendFormat(&out, "  %s flags 0x%02x value 0x%s\n", AttributeName(u.type), u.flags, Hex(u.value));
  }
  if (a.mp_reach) {
    absl::StrAppend(&out, "  MP_REACH_NLRI ", FamilyName(a.mp_reach->family), " next-hop ",
                    a.mp_reach->next_hop.ToString());
    if (a.mp_reach->link_local) absl::StrAppend(&out, " link-local ", a.mp_reach->link_local->ToString());
    absl::StrAppend(&out, "\n    ", NlriText(a.mp_reach->nlri, ctx.AddPath(a.mp_reach->family)), "\n");
  }
  if (a.mp_unreach) {
    absl::StrAppend(&out, "  MP_UNREACH_NLRI ", FamilyName(a.mp_unreach->family), "\n    ",
                    NlriText(a.mp_unreach->withdrawn, ctx.AddPath(a.mp_unreach->family)), "\n");
  }
}

}  // namespace

bool DecodedMessage::malformed() const {
  if (error) return true;
  if (const auto* u = message ? std::get_if<UpdateMessage>(&*message) : nullptr) {
    return u->action != ErrorAction::kNone;
  }
  return false;
}

nlohmann::json MessageToJson(const DecodedMessage& d, const CodecContext& ctx) {
  json o = {{"offset", d.raw.offset}, {"length", d.raw.bytes.size()}, {"marker_in_input", d.raw.had_marker}};
  if (d.raw.bytes.size() >= 19) o["type"] = MessageTypeName(d.raw.bytes[18]);
  json verdict = {{"action", "none"}, {"errors", json::array()}, {"notification", nullptr}};
  if (d.error) {
    verdict["action"] = ErrorActionName(ErrorAction::kSessionReset);
    verdict["notification"] = NotificationJson(d.error->notification);
    verdict["reason"] = d.error->reason;
  }
  if (d.message) {
    std::visit(Overloaded{
                   [&](const OpenMessage& m) {
                     json caps = json::array();
                     for (const auto& c : m.capabilities) caps.push_back(CapabilityJson(c));
                     o["open"] = {{"version", m.version},
                                  {"my_as", m.my_as},
                                  {"asn", m.AsNumber()},
                                  {"hold_time", m.hold_time},
                                  {"bgp_id", Ipv4(m.bgp_id)},
                                  {"extended_optional_parameters", m.extended_optional_parameters},
                                  {"capabilities", caps}};
                   },
                   [&](const UpdateMessage& m) {
                     const bool ap4 = ctx.AddPath(Family::kIpv4Unicast);
                     json u = {{"withdrawn", NlriJson(m.withdrawn, ap4)},
                               {"attributes", AttributesJson(m.attrs, ctx)},
                               {"nlri", NlriJson(m.nlri, ap4)}};
                     if (auto eor = m.EndOfRib()) u["end_of_rib"] = FamilyName(*eor);
                     o["update"] = u;
                     verdict["action"] = ErrorActionName(m.action);
                     verdict["errors"] = ErrorsJson(m.errors);
                     if (m.disabled_family) verdict["disabled_family"] = FamilyName(*m.disabled_family);
                   },
                   [&](const NotificationMessage& m) { o["notification"] = NotificationJson(m); },
                   [&](const KeepaliveMessage&) { o["keepalive"] = json::object(); },
                   [&](const RouteRefreshMessage& m) {
                     const char* st = m.subtype == 0 ? "request" : m.subtype == 1 ? "borr" : m.subtype == 2 ? "eorr" : "reserved";
                     o["route_refresh"] = {{"afi", m.afi}, {"safi", m.safi}, {"subtype", st}, {"orf", Hex(m.orf)}};
                   },
               },
               *d.message);
  }
  o["verdict"] = verdict;
  return o;
}

std::string MessageToText(const DecodedMessage& d, const CodecContext& ctx, size_t index) {
  std::string out;
  const std::string type = d.raw.bytes.size() >= 19 ? std::string(MessageTypeName(d.raw.bytes[18])) : "?";
  absl::StrAppendFormat(&out, "#%d %s, %d octets, offset %d%s\n", index, type, d.raw.bytes.size(), d.raw.offset,
                        d.raw.had_marker ? "" : " (marker added)");
  if (d.message) {
    std::visit(Overloaded{
                   [&](const OpenMessage& m) {
                     absl::StrAppendFormat(&out, "  version %d, AS %d, hold time %ds, BGP id %s\n", m.version,
                                           m.AsNumber(), m.hold_time, Ipv4(m.bgp_id));
                     for (const auto& c : m.capabilities) absl::StrAppend(&out, "  capability ", CapabilityText(c), "\n");
                   },
                   [&](const UpdateMessage& m) {
                     const bool ap4 = ctx.AddPath(Family::kIpv4Unicast);
                     if (auto eor = m.EndOfRib()) absl::StrAppend(&out, "  End-of-RIB ", FamilyName(*eor), "\n");
                     if (!m.withdrawn.empty()) absl::StrAppend(&out, "  withdrawn ", NlriText(m.withdrawn, ap4), "\n");
                     AttributesText(m.attrs, ctx, out);
                     if (!m.nlri.empty()) absl::StrAppend(&out, "  NLRI ", NlriText(m.nlri, ap4), "\n");
                     if (m.action != ErrorAction::kNone) {
                       absl::StrAppend(&out, "  verdict: ", ErrorActionName(m.action), "\n");
                       for (const auto& e : m.errors) {
                         absl::StrAppend(&out, "    ", ErrorActionName(e.action), ": ", e.reason);
                         if (e.subcode) absl::StrAppend(&out, " [", DescribeNotification(3, e.subcode), "]");
                         absl::StrAppend(&out, "\n");
                       }
                     }
                   },
                   [&](const NotificationMessage& m) {
                     absl::StrAppend(&out, "  ", DescribeNotification(m.code, m.subcode), "\n");
                     if (auto msg = m.ShutdownCommunication()) absl::StrAppend(&out, "  message: \"", *msg, "\"\n");
                     else if (!m.data.empty()) absl::StrAppend(&out, "  data 0x", Hex(m.data), "\n");
                   },
                   [](const KeepaliveMessage&) {},
                   [&](const RouteRefreshMessage& m) {
                     absl::StrAppendFormat(&out, "  afi %d safi %d subtype %d\n", m.afi, m.safi, m.subtype);
                   },
               },
               *d.message);
  }
  if (d.error) {
    absl::StrAppend(&out, "  verdict: session-reset: ", d.error->reason, "\n  NOTIFICATION to send: ",
                    DescribeNotification(d.error->notification.code, d.error->notification.subcode));
    if (!d.error->notification.data.empty()) absl::StrAppend(&out, " data 0x", Hex(d.error->notification.data));
    absl::StrAppend(&out, "\n");
  }
  return out;
}

}  // namespace bagd::bagctl
