#include "conf/config_validator.h"
#include "mrt/path_template.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "conf/bfd_settings.h"
#include "conf/config_defaults.h"
#include "conf/control_group.h"
#include "conf/ip_address_text.h"
#include "conf/md5_key.h"
#include "conf/policy_text.h"
#include "conf/rate_text.h"
#include "net/host_port.h"
#include "net/ip_prefix.h"

namespace bagd::conf {

namespace {

namespace v1 = bagd::config::v1;
namespace pb = google::protobuf;

constexpr uint32_t kAsTrans = 23456;  // RFC 6793 §9

// The names below are this file's contract with bagd.proto (SchemaField aborts on a wrong one).
constexpr auto Field = SchemaField;

absl::string_view View(std::string_view s) { return absl::string_view(s.data(), s.size()); }


// "A, B or C": the values of an enum without its 0 (*_UNSPECIFIED), for messages.
std::string EnumChoices(const pb::EnumDescriptor* e) {
  std::vector<std::string> names;
  for (int i = 0; i < e->value_count(); ++i) {
    if (e->value(i)->number() != 0) names.push_back(e->value(i)->name());
  }
  if (names.size() < 2) return absl::StrJoin(names, "");
  const std::string last = names.back();
  names.pop_back();
  return absl::StrCat(absl::StrJoin(names, ", "), " or ", last);
}

// The name of an enum value, or its number when the enum has no such value.
std::string EnumName(const pb::EnumDescriptor* e, int value) {
  const pb::EnumValueDescriptor* v = e->FindValueByNumber(value);
  return v != nullptr ? v->name() : absl::StrCat(value);
}

class Validator {
 public:
  Validator(const v1::Config& config, std::string_view file_name, const FieldLocator* locator,
            const std::vector<NeighborOrigin>* origins)
      : config_(config), file_name_(file_name), locator_(locator), origins_(origins) {}

  std::vector<ConfigError> Run() {
    CheckRouter();
    CheckNeighbors();
    CheckLinkBandwidth();
    CheckDamping();
    CheckFib();
    CheckNetworks();
    CheckCapacitySources();
    CheckDefinedSets();
    CheckPolicies();
    CheckPolicyAttachment();
    CheckControl();
    CheckBfd();
    CheckMrt();
    CheckBmp();
    std::stable_sort(errors_.begin(), errors_.end(),
                     [](const ConfigError& a, const ConfigError& b) {
                       return std::tie(a.line, a.column) < std::tie(b.line, b.column);
                     });
    return std::move(errors_);
  }

 private:
  // --- where and how to report -----------------------------------------------------------

  void Error(const FieldPath& path, std::string message) {
    const SourceLocation at = locator_ != nullptr ? locator_->Locate(path) : SourceLocation{};
    // Messages quote what the user wrote (addresses, paths): keep them on one line.
    errors_.push_back(ConfigError{std::string(file_name_), at.line, at.column, Printable(message)});
  }

  // How messages name neighbor `i`: with its group when it has one (neighbor_groups.h).
  std::string NeighborName(int i) const {
    if (origins_ != nullptr && static_cast<size_t>(i) < origins_->size()) return (*origins_)[static_cast<size_t>(i)].name;
    const std::string& a = config_.neighbors(i).address();
    return a.empty() ? absl::StrCat("neighbor #", i + 1) : absl::StrCat("neighbor ", a);
  }
  bool IsTemplate(int i) const {
    return origins_ != nullptr && static_cast<size_t>(i) < origins_->size() && (*origins_)[static_cast<size_t>(i)].neighbor < 0;
  }

  // Written in the file (as opposed to absent, which proto3 cannot tell from 0/"" itself).
  bool Written(const FieldPath& path) const {
    return locator_ != nullptr && locator_->Find(path).has_value();
  }

  std::optional<SourceLocation> Where(const FieldPath& path) const {
    return locator_ != nullptr ? locator_->Find(path) : std::nullopt;
  }

  // Of two conflicting fields, the one written later: that is the one that made the
  // config wrong. `b` when unknown.
  FieldPath Later(const FieldPath& a, const FieldPath& b) const {
    const auto la = Where(a), lb = Where(b);
    if (la && lb && std::tie(la->line, la->column) > std::tie(lb->line, lb->column)) return a;
    return b;
  }

  // " at line N" when the field was written, for "already configured" messages.
  std::string AtLine(const FieldPath& path) const {
    const auto at = Where(path);
    return at ? absl::StrCat(" at line ", at->line) : std::string();
  }

  // --- shared checks ---------------------------------------------------------------------

  // `what` is "asn" or "remote_as"; `owner` is "your" or "the neighbor's".
  void CheckAs(const FieldPath& path, uint32_t as, std::string_view prefix, const char* what,
               const char* owner, const char* missing_hint) {
    if (as == 0) {
      if (Written(path)) {
        Error(path, absl::StrCat(View(prefix), what, " 0 is reserved (RFC 7607): use ", owner,
                                 " AS number, 1..4294967295"));
      } else {
        Error(path, absl::StrCat(View(prefix), what, " is required (", missing_hint, ")"));
      }
    } else if (as == kAsTrans) {
      Error(path, absl::StrCat(View(prefix), what,
                               " 23456 is AS_TRANS (RFC 6793), a placeholder on 2-octet sessions: "
                               "use ",
                               owner, " real AS number"));
    }
  }

  void CheckHoldTime(const FieldPath& path, uint32_t hold, std::string_view prefix) {
    if (hold == 1 || hold == 2) {
      Error(path,
            absl::StrCat(View(prefix), "hold_time ", hold,
                         " is not allowed: use 0 (no keepalives) or 3..65535 (RFC 4271 §4.2)"));
    } else if (hold > kMaxHoldTime) {
      Error(path,
            absl::StrCat(View(prefix), "hold_time ", hold,
                         " is out of range: use 0 (no keepalives) or 3..65535 (RFC 4271 §4.2)"));
    }
  }

  static bool ValidHoldTime(uint32_t hold) {
    return hold == 0 || (hold >= 3 && hold <= kMaxHoldTime);
  }

  void CheckKeepalive(const FieldPath& path, uint32_t keepalive, uint32_t hold,
                      std::string_view prefix, std::string_view hold_origin) {
    if (!ValidHoldTime(hold)) return;  // reported at the hold time
    if (hold == 0) {
      if (keepalive != 0) {
        Error(path,
              absl::StrCat(View(prefix), "keepalive ", keepalive, " with hold_time 0",
                           View(hold_origin),
                           ": no KEEPALIVEs are sent when the hold time is 0 (RFC 4271 §4.4); "
                           "remove keepalive or set it to 0"));
      }
      return;
    }
    if (keepalive == 0) {
      Error(path, absl::StrCat(View(prefix), "keepalive 0 with hold_time ", hold, View(hold_origin),
                               " would let the neighbor's hold timer expire: use 1..", hold / 3,
                               " (at most a third of the hold time, RFC 4271 §10)"));
    } else if (keepalive > hold / 3) {
      Error(path, absl::StrCat(View(prefix), "keepalive ", keepalive,
                               " is more than a third of hold_time ", hold, View(hold_origin),
                               ": use 1..", hold / 3, " (RFC 4271 §10)"));
    }
  }

  void CheckConnectRetry(const FieldPath& path, uint32_t seconds, std::string_view prefix) {
    if (seconds > 65535) {
      Error(path,
            absl::StrCat(View(prefix), "connect_retry ", seconds,
                         " is out of range: use 1..65535 seconds (0 or absent means the default)"));
    }
  }

  void CheckPort(const FieldPath& path, uint32_t port, std::string_view prefix) {
    if (port > kMaxPort) {
      Error(path, absl::StrCat(View(prefix), "port ", port,
                               " is out of range: use 1..65535 (0 or absent means 179)"));
    }
  }

  // A rate field ("100G", conf/rate_text.h): its bits per second, or nullopt when it is empty
  // (nothing reported: the callers know whether it is required) or does not parse (reported
  // as `<prefix><name> "<text>": <why>`).
  std::optional<double> CheckRate(const FieldPath& path, const std::string& text,
                                  std::string_view prefix, std::string_view name) {
    if (text.empty()) return std::nullopt;
    const absl::StatusOr<double> rate = ParseRate(text);
    if (!rate.ok()) {
      Error(path, absl::StrCat(View(prefix), View(name), " ", rate.status().message()));
      return std::nullopt;
    }
    return *rate;
  }

  // A number that is not a value of the field's enum (text and JSON accept numbers for
  // proto3 enums). `what` completes "is not ...", e.g. "a mode".
  bool CheckEnum(const FieldPath& path, int value, std::string_view prefix, std::string_view what) {
    const pb::FieldDescriptor* field = path.back().first;
    if (field->enum_type()->FindValueByNumber(value) != nullptr) return true;
    Error(path, absl::StrCat(View(prefix), field->name(), " ", value, " is not ", View(what),
                             ": use ", EnumChoices(field->enum_type())));
    return false;
  }

  // --- router ------------------------------------------------------------------------------

  void CheckRouter() {
    const pb::Descriptor* d = v1::Router::descriptor();
    const FieldPath router = {{Field(v1::Config::descriptor(), "router"), -1}};
    const v1::Router& r = config_.router();
    if (!config_.has_router()) {
      Error(router,
            "router { asn: ... router_id: \"...\" } is required: the local AS number and "
            "BGP identifier");
      return;
    }
    CheckAs(Child(router, Field(d, "asn")), r.asn(), "router: ", "asn", "your",
            "your AS number, 1..4294967295");

    const FieldPath id_path = Child(router, Field(d, "router_id"));
    if (r.router_id().empty()) {
      Error(id_path,
            "router: router_id is required (a dotted quad unique in your AS, e.g. the "
            "loopback address \"192.0.2.1\")");
    } else {
      const auto id = ParseIpAddressText(r.router_id());
      if (!id || id->v6) {
        Error(id_path,
              absl::StrCat("router_id \"", r.router_id(),
                           "\" is not a dotted quad: write an IPv4-style identifier such as "
                           "\"192.0.2.1\" (RFC 6286)"));
      } else if (id->bytes[0] == 0 && id->bytes[1] == 0 && id->bytes[2] == 0 && id->bytes[3] == 0) {
        Error(id_path,
              "router_id 0.0.0.0 is not allowed (RFC 6286): use a non-zero identifier "
              "unique in your AS");
      }
    }

    std::map<std::pair<IpAddressText, uint32_t>, int> seen_listen;
    for (int i = 0; i < r.listen_size(); ++i) {
      const v1::Listen& listen = r.listen(i);
      const FieldPath listen_path = Child(router, Field(d, "listen"), i);
      const FieldPath address_path = Child(listen_path, Field(v1::Listen::descriptor(), "address"));
      CheckPort(Child(listen_path, Field(v1::Listen::descriptor(), "port")), listen.port(),
                "listen: ");
      if (listen.address().empty()) {
        Error(address_path,
              "listen: address is required: use \"0.0.0.0\" or \"::\" for every "
              "address of the router");
        continue;
      }
      const auto address = ParseIpAddressText(listen.address());
      if (!address) {
        Error(address_path, absl::StrCat("listen address \"", listen.address(), "\" ",
                                         SyntaxProblem(listen.address())));
        continue;
      }
      if (const std::string problem = EndpointProblem(*address, /*allow_unspecified=*/true);
          !problem.empty()) {
        Error(address_path, absl::StrCat("listen address ", listen.address(), " ", problem));
        continue;
      }
      const uint32_t port = listen.port() == 0 ? kBgpPort : listen.port();
      const auto [it, inserted] = seen_listen.emplace(std::pair(*address, port), i);
      if (!inserted) {
        Error(address_path,
              absl::StrCat("listen ", listen.address(), " port ", port, " is already configured",
                           AtLine(Child(Child(router, Field(d, "listen"), it->second),
                                        Field(v1::Listen::descriptor(), "address")))));
      }
    }

    const FieldPath hold_path = Child(router, Field(d, "hold_time"));
    const EffectiveTimers timers = RouterTimers(r);
    if (r.has_hold_time()) CheckHoldTime(hold_path, r.hold_time(), "router: ");
    if (r.has_keepalive()) {
      CheckKeepalive(Child(router, Field(d, "keepalive")), r.keepalive(), timers.hold_time,
                     "router: ", "");
    }
    CheckConnectRetry(Child(router, Field(d, "connect_retry")), r.connect_retry(), "router: ");
    if (!v1::LogLevel_IsValid(r.log_level())) {
      Error(Child(router, Field(d, "log_level")),
            absl::StrCat("router: log_level ", r.log_level(),
                         " is not a level: use LOG_LEVEL_ERROR, LOG_LEVEL_WARNING, LOG_LEVEL_INFO, "
                         "LOG_LEVEL_DEBUG or LOG_LEVEL_TRACE"));
    }
    CheckGracefulRestart(Child(router, Field(d, "graceful_restart")), r.graceful_restart(), "router: ", nullptr);
  }

  // GracefulRestart (router or neighbor). `families`: the neighbor's address families after
  // their default (null at router level, where a family no neighbor has is ignored).
  void CheckGracefulRestart(const FieldPath& at, const v1::GracefulRestart& g, const std::string& prefix,
                            const std::vector<int>* families) {
    const pb::Descriptor* d = v1::GracefulRestart::descriptor();
    auto path = [&](const char* name) { return Child(at, Field(d, name)); };
    if (g.has_restart_time() && (g.restart_time() == 0 || g.restart_time() > kMaxGracefulRestartTime)) {
      Error(path("restart_time"),
            absl::StrCat(prefix, "graceful_restart.restart_time ", g.restart_time(),
                         " is out of range: use 1..", kMaxGracefulRestartTime,
                         " seconds (a 12-bit field, RFC 4724 §3); enabled: false turns graceful restart off"));
    }
    if (g.has_stale_routes_time() && (g.stale_routes_time() == 0 || g.stale_routes_time() > kMaxStaleRoutesTime)) {
      Error(path("stale_routes_time"), absl::StrCat(prefix, "graceful_restart.stale_routes_time ", g.stale_routes_time(),
                                                    " is out of range: use 1..", kMaxStaleRoutesTime, " seconds"));
    }
    const pb::FieldDescriptor* field = Field(d, "families");
    std::map<int, int> seen;
    for (int i = 0; i < g.families_size(); ++i) {
      const int family = g.families(i);
      const FieldPath fp = Child(at, field, i);
      if (family == v1::ADDRESS_FAMILY_UNSPECIFIED || !v1::AddressFamily_IsValid(family)) {
        Error(fp, absl::StrCat(prefix, "graceful_restart family ",
                               family == 0 ? std::string("ADDRESS_FAMILY_UNSPECIFIED") : absl::StrCat(family),
                               " is not a family bagd supports: use IPV4_UNICAST or IPV6_UNICAST"));
      } else if (!seen.emplace(family, i).second) {
        Error(fp, absl::StrCat(prefix, "graceful_restart family ",
                               v1::AddressFamily_Name(static_cast<v1::AddressFamily>(family)), " is listed twice"));
      } else if (families != nullptr && !families->empty() &&
                 std::find(families->begin(), families->end(), family) == families->end()) {
        const std::string name = v1::AddressFamily_Name(static_cast<v1::AddressFamily>(family));
        Error(fp, absl::StrCat(prefix, "graceful_restart family ", name, ": the neighbor does not negotiate ", name,
                               ": add it to address_families or remove it here"));
      }
    }
  }

  // --- neighbors ---------------------------------------------------------------------------

  void CheckNeighbors() {
    const pb::Descriptor* d = v1::Neighbor::descriptor();
    const pb::FieldDescriptor* neighbors_field = Field(v1::Config::descriptor(), "neighbors");
    std::map<IpAddressText, int> seen;
    for (int i = 0; i < config_.neighbors_size(); ++i) {
      const v1::Neighbor& n = config_.neighbors(i);
      const FieldPath base = {{neighbors_field, i}};
      auto path = [&](const char* name) { return Child(base, Field(d, name)); };
      const std::string prefix = absl::StrCat(NeighborName(i), ": ");

      // Address: required, a unicast literal, unique.
      std::optional<IpAddressText> address;
      if (n.address().empty()) {
        Error(path("address"), absl::StrCat(prefix,
                                            "address is required (the neighbor's IPv4 or "
                                            "IPv6 address)"));
      } else if (address = ParseIpAddressText(n.address()); !address) {
        Error(path("address"),
              absl::StrCat("neighbor address \"", n.address(), "\" ", SyntaxProblem(n.address())));
      } else if (const std::string problem = EndpointProblem(*address, false); !problem.empty()) {
        Error(path("address"), absl::StrCat("neighbor address ", n.address(), " ", problem));
        address.reset();
      } else if (IsTemplate(i)) {
        // A group's template: its address stands for the connections of its listen ranges.
      } else if (const auto [it, inserted] = seen.emplace(*address, i); !inserted) {
        Error(path("address"),
              absl::StrCat("neighbor ", n.address(), " is already configured",
                           AtLine(Child({{neighbors_field, it->second}}, Field(d, "address"))),
                           ": each neighbor address may appear only once"));
      }

      const bool ibgp = n.remote_as() != 0 && n.remote_as() == config_.router().asn();
      CheckAs(path("remote_as"), n.remote_as(), prefix, "remote_as", "the neighbor's",
              "the neighbor's AS number; equal to router asn for iBGP");
      CheckPort(path("port"), n.port(), prefix);

      if (!n.local_address().empty()) {
        const auto local = ParseIpAddressText(n.local_address());
        if (!local) {
          Error(path("local_address"), absl::StrCat(prefix, "local_address \"", n.local_address(),
                                                    "\" ", SyntaxProblem(n.local_address())));
        } else if (const std::string problem = EndpointProblem(*local, false); !problem.empty()) {
          Error(path("local_address"),
                absl::StrCat(prefix, "local_address ", n.local_address(), " ", problem));
        } else if (address && local->v6 != address->v6) {
          Error(path("local_address"),
                absl::StrCat(prefix, "local_address ", n.local_address(), " is ",
                             local->v6 ? "IPv6" : "IPv4", " but the neighbor address is ",
                             address->v6 ? "IPv6" : "IPv4", ": use an ",
                             address->v6 ? "IPv6" : "IPv4", " address of this router"));
        }
      }

      CheckNeighborTimers(base, n, prefix);
      CheckMd5(path("password"), path("password_file"), n, prefix);

      if (n.advertisement_interval() > 600) {
        Error(path("advertisement_interval"),
              absl::StrCat(prefix, "advertisement_interval ", n.advertisement_interval(),
                           " is out of range: use 0..600 seconds"));
      }

      // TTL: GTSM (RFC 5082) or eBGP multihop, not both.
      if (n.ttl_security() > 254) {
        Error(path("ttl_security"),
              absl::StrCat(prefix, "ttl_security ", n.ttl_security(),
                           " is out of range: use 1..254 hops (RFC 5082), 1 for a directly "
                           "connected neighbor"));
      }
      if (n.ebgp_multihop() > 255) {
        Error(path("ebgp_multihop"), absl::StrCat(prefix, "ebgp_multihop ", n.ebgp_multihop(),
                                                  " is out of range: use a TTL of 1..255"));
      }
      if (n.ttl_security() != 0 && n.ebgp_multihop() != 0) {
        Error(Later(path("ttl_security"), path("ebgp_multihop")),
              absl::StrCat(prefix,
                           "ttl_security and ebgp_multihop cannot both be set: GTSM (RFC 5082) "
                           "always sends with TTL 255; for a neighbor N hops away use "
                           "ttl_security: N alone"));
      } else if (n.ebgp_multihop() != 0 && ibgp) {
        Error(path("ebgp_multihop"),
              absl::StrCat(prefix,
                           "ebgp_multihop applies to eBGP only: this neighbor is iBGP "
                           "(remote_as ",
                           n.remote_as(), " equals router asn), which is sent with TTL 255"));
      }

      CheckFamilies(base, n, prefix);
      CheckNeighborLinkBandwidth(base, n, prefix);
      CheckMaxPrefixes(base, n, address, prefix);
      {
        std::vector<int> families(n.address_families().begin(), n.address_families().end());
        if (families.empty() && address) families.push_back(address->v6 ? v1::IPV6_UNICAST : v1::IPV4_UNICAST);
        CheckGracefulRestart(path("graceful_restart"), n.graceful_restart(), prefix, &families);
      }

      if (n.shutdown_message().size() > kMaxShutdownMessageLength) {
        Error(path("shutdown_message"),
              absl::StrCat(prefix, "shutdown_message is ", n.shutdown_message().size(),
                           " octets; RFC 9003 allows at most ", kMaxShutdownMessageLength));
      }
    }
  }

  void CheckNeighborTimers(const FieldPath& base, const v1::Neighbor& n,
                           const std::string& prefix) {
    const pb::Descriptor* d = v1::Timers::descriptor();
    const FieldPath timers = Child(base, Field(v1::Neighbor::descriptor(), "timers"));
    const EffectiveTimers effective = NeighborTimers(config_.router(), n);
    if (n.timers().has_hold_time()) {
      CheckHoldTime(Child(timers, Field(d, "hold_time")), n.timers().hold_time(), prefix);
    }
    if (n.timers().has_keepalive()) {
      // A neighbor that sets only keepalive is checked against the router's hold time, which
      // must then be valid itself (else that is the error reported).
      const bool router_hold_ok =
          !config_.router().has_hold_time() || ValidHoldTime(config_.router().hold_time());
      if (!effective.hold_time_inherited || router_hold_ok) {
        CheckKeepalive(Child(timers, Field(d, "keepalive")), n.timers().keepalive(),
                       effective.hold_time, prefix,
                       effective.hold_time_inherited ? " (inherited from router)" : "");
      }
    }
    CheckConnectRetry(Child(timers, Field(d, "connect_retry")), n.timers().connect_retry(), prefix);
  }

  void CheckMd5(const FieldPath& password_path, const FieldPath& file_path, const v1::Neighbor& n,
                const std::string& prefix) {
    if (!n.password().empty() && !n.password_file().empty()) {
      Error(Later(password_path, file_path),
            absl::StrCat(prefix,
                         "password and password_file are both set: keep one (they are two "
                         "ways to give the same TCP MD5 key, RFC 2385)"));
      return;
    }
    if (n.password().size() > kMaxMd5KeyLength) {
      Error(password_path, absl::StrCat(prefix, "password is ", n.password().size(),
                                        " octets; TCP MD5 keys are at most ", kMaxMd5KeyLength,
                                        " octets (Linux TCP_MD5SIG_MAXKEYLEN)"));
    }
    if (!n.password_file().empty()) {
      if (const auto key = ReadMd5KeyFile(n.password_file()); !key.ok()) {
        Error(file_path, absl::StrCat(prefix, key.status().message()));
      }
    }
  }

  void CheckFamilies(const FieldPath& base, const v1::Neighbor& n, const std::string& prefix) {
    const pb::FieldDescriptor* field = Field(v1::Neighbor::descriptor(), "address_families");
    std::map<int, int> seen;
    for (int i = 0; i < n.address_families_size(); ++i) {
      const int family = n.address_families(i);
      const FieldPath path = Child(base, field, i);
      if (family == v1::ADDRESS_FAMILY_UNSPECIFIED || !v1::AddressFamily_IsValid(family)) {
        Error(path,
              absl::StrCat(
                  prefix, "address family ",
                  family == 0 ? std::string("ADDRESS_FAMILY_UNSPECIFIED") : absl::StrCat(family),
                  " is not a family bagd supports: use IPV4_UNICAST or IPV6_UNICAST"));
      } else if (!seen.emplace(family, i).second) {
        Error(path, absl::StrCat(prefix, "address family ",
                                 v1::AddressFamily_Name(static_cast<v1::AddressFamily>(family)),
                                 " is listed twice"));
      }
    }
  }

  // Import limits per family (MaxPrefixes). `address`: the neighbor's, when it parsed (its
  // family is the default address family).
  void CheckMaxPrefixes(const FieldPath& base, const v1::Neighbor& n,
                        const std::optional<IpAddressText>& address, const std::string& prefix) {
    const pb::Descriptor* d = v1::MaxPrefixes::descriptor();
    const pb::FieldDescriptor* field = Field(v1::Neighbor::descriptor(), "max_prefixes");
    // The families the neighbor negotiates (after the default): a limit on another one
    // would never apply.
    std::vector<int> families(n.address_families().begin(), n.address_families().end());
    if (families.empty() && address) families.push_back(address->v6 ? v1::IPV6_UNICAST : v1::IPV4_UNICAST);
    std::map<int, int> seen;  // family -> index
    for (int i = 0; i < n.max_prefixes_size(); ++i) {
      const v1::MaxPrefixes& m = n.max_prefixes(i);
      const FieldPath at = Child(base, field, i);
      auto path = [&](const char* name) { return Child(at, Field(d, name)); };
      const bool family_ok =
          m.family() != v1::ADDRESS_FAMILY_UNSPECIFIED && v1::AddressFamily_IsValid(m.family());
      const std::string family_name = family_ok ? v1::AddressFamily_Name(m.family()) : "";
      const std::string mprefix = family_ok
                                      ? absl::StrCat(prefix, "max_prefixes ", family_name, ": ")
                                      : absl::StrCat(prefix, "max_prefixes #", i + 1, ": ");
      if (m.family() == v1::ADDRESS_FAMILY_UNSPECIFIED) {
        Error(Written(path("family")) ? path("family") : at,
              absl::StrCat(mprefix, "family is required: IPV4_UNICAST or IPV6_UNICAST"));
      } else if (!family_ok) {
        Error(path("family"),
              absl::StrCat(mprefix, "family ", m.family(),
                           " is not a family bagd supports: use IPV4_UNICAST or IPV6_UNICAST"));
      } else if (const auto [it, inserted] = seen.emplace(m.family(), i); !inserted) {
        Error(path("family"), absl::StrCat(prefix, "max_prefixes for ", family_name,
                                           " is already configured",
                                           AtLine(Child(Child(base, field, it->second), Field(d, "family"))),
                                           ": each family has at most one limit"));
      } else if (!families.empty() &&
                 std::find(families.begin(), families.end(), m.family()) == families.end()) {
        std::vector<std::string> names;
        for (int f : families) names.push_back(EnumName(v1::AddressFamily_descriptor(), f));
        Error(path("family"),
              absl::StrCat(mprefix, "the neighbor does not negotiate ", family_name,
                           " (its address families: ", absl::StrJoin(names, ", "),
                           "), so this limit would never apply: add ", family_name,
                           " to address_families or remove the limit"));
      }
      if (m.limit() == 0) {
        Error(Written(path("limit")) ? path("limit") : at,
              absl::StrCat(mprefix,
                           Written(path("limit")) ? "limit 0 would refuse every route: "
                                                  : "limit is required: ",
                           "the most paths the neighbor may hold in the family, 1..4294967295 "
                           "(leave max_prefixes out for no limit)"));
      }
      if (m.has_warning_threshold_percent() &&
          (m.warning_threshold_percent() == 0 || m.warning_threshold_percent() > 100)) {
        Error(path("warning_threshold_percent"),
              absl::StrCat(mprefix, "warning_threshold_percent ", m.warning_threshold_percent(),
                           " is out of range: use 1..100 (default 75)"));
      }
      if (m.restart_interval() > 65535) {
        Error(path("restart_interval"),
              absl::StrCat(mprefix, "restart_interval ", m.restart_interval(),
                           " is out of range: use 1..65535 seconds, or 0 to stay down until "
                           "the neighbor is enabled"));
      }
      if (m.warning_only() && m.restart_interval() != 0) {
        Error(Later(path("warning_only"), path("restart_interval")),
              absl::StrCat(mprefix,
                           "warning_only and restart_interval cannot both be set: with "
                           "warning_only the session is never taken down, so there is nothing "
                           "to restart; keep one"));
      }
    }
  }

  // Which link bandwidth the neighbor is sent (NeighborLinkBandwidth).
  void CheckNeighborLinkBandwidth(const FieldPath& base, const v1::Neighbor& n,
                                  const std::string& neighbor_prefix) {
    using Nlb = v1::NeighborLinkBandwidth;
    const pb::Descriptor* d = Nlb::descriptor();
    const FieldPath lb = Child(base, Field(v1::Neighbor::descriptor(), "link_bandwidth"));
    auto path = [&](const char* name) { return Child(lb, Field(d, name)); };
    const Nlb& x = n.link_bandwidth();
    const std::string prefix = absl::StrCat(neighbor_prefix, "link_bandwidth ");

    const bool mode_ok = CheckEnum(path("mode"), x.mode(), prefix, "an export mode");
    CheckEnum(path("encoding"), x.encoding(), prefix, "an encoding");
    const Nlb::Export mode = x.mode() == Nlb::EXPORT_UNSPECIFIED ? Nlb::EXPORT_AUTO : x.mode();
    const std::string mode_text =
        x.mode() == Nlb::EXPORT_UNSPECIFIED
            ? std::string("the default mode EXPORT_AUTO")
            : absl::StrCat("mode ", EnumName(Nlb::Export_descriptor(), x.mode()));

    // `rate` belongs to EXPORT_FIXED, `reference` to EXPORT_NUM_MULTIPATHS: required there,
    // an error elsewhere (a value that silently does nothing is a config that lies).
    struct Use {
      const char* field;
      const std::string& text;
      Nlb::Export mode;
      const char* mode_name;
      const char* meaning;
    };
    for (const Use& use :
         {Use{"rate", x.rate(), Nlb::EXPORT_FIXED, "EXPORT_FIXED", "the rate to send"},
          Use{"reference", x.reference(), Nlb::EXPORT_NUM_MULTIPATHS, "EXPORT_NUM_MULTIPATHS",
              "the rate per path of the multipath set"}}) {
      const std::string& text = use.text;
      if (mode_ok && mode != use.mode && !text.empty()) {
        Error(path(use.field),
              absl::StrCat(prefix, use.field, " \"", text, "\" is unused with ", mode_text,
                           ": only ", use.mode_name, " uses ", use.field, " (", use.meaning,
                           "); remove it or set mode: ", use.mode_name));
        continue;
      }
      CheckRate(path(use.field), text, prefix, use.field);
      if (mode_ok && mode == use.mode && text.empty()) {
        Error(path("mode"), absl::StrCat(prefix, "mode ", use.mode_name, " needs ", use.field,
                                         ", ", use.meaning, ", e.g. ", use.field,
                                         ": \"100G\""));
      }
    }

    if (x.has_readvertise_threshold_percent() && x.readvertise_threshold_percent() > 100) {
      Error(path("readvertise_threshold_percent"),
            absl::StrCat(prefix, "readvertise_threshold_percent ",
                         x.readvertise_threshold_percent(), " is out of range: use 0..100"));
    }
    if (x.has_readvertise_interval() && x.readvertise_interval() > kMaxReadvertiseInterval) {
      Error(path("readvertise_interval"),
            absl::StrCat(prefix, "readvertise_interval ", x.readvertise_interval(),
                         " is out of range: use 0..3600 seconds"));
    }
  }

  // --- link_bandwidth, damping, fib ----------------------------------------------------------

  void CheckLinkBandwidth() {
    using Lb = v1::LinkBandwidth;
    const Lb& lb = config_.link_bandwidth();
    const pb::Descriptor* d = Lb::descriptor();
    const FieldPath base = {{Field(v1::Config::descriptor(), "link_bandwidth"), -1}};
    auto path = [&](const char* name) { return Child(base, Field(d, name)); };
    const std::string prefix = "link_bandwidth: ";

    CheckEnum(path("mode"), lb.mode(), prefix, "a mode");
    CheckEnum(path("missing"), lb.missing(), prefix, "a way to treat missing link bandwidth");
    const std::optional<double> global_default =
        CheckRate(path("default_bandwidth"), lb.default_bandwidth(), prefix, "default_bandwidth");
    const bool global_default_ok = lb.default_bandwidth().empty() || global_default.has_value();
    if (lb.missing() == Lb::MISSING_DEFAULT_WEIGHT) {
      if (lb.default_bandwidth().empty()) {
        Error(path("missing"),
              absl::StrCat(prefix,
                           "missing MISSING_DEFAULT_WEIGHT needs default_bandwidth, the rate a "
                           "path without link bandwidth counts as, e.g. default_bandwidth: "
                           "\"10G\""));
      } else if (global_default && *global_default == 0) {
        Error(path("default_bandwidth"),
              absl::StrCat(prefix, ZeroDefaultBandwidth(lb.default_bandwidth())));
      }
    }

    const pb::Descriptor* fd = v1::FamilyLinkBandwidth::descriptor();
    const pb::FieldDescriptor* families = Field(d, "families");
    std::map<int, int> seen;  // family -> index
    for (int i = 0; i < lb.families_size(); ++i) {
      const v1::FamilyLinkBandwidth& f = lb.families(i);
      const FieldPath at = Child(base, families, i);
      auto fpath = [&](const char* name) { return Child(at, Field(fd, name)); };
      const bool family_ok =
          f.family() != v1::ADDRESS_FAMILY_UNSPECIFIED && v1::AddressFamily_IsValid(f.family());
      const std::string fprefix =
          family_ok ? absl::StrCat(prefix, "family ", v1::AddressFamily_Name(f.family()), ": ")
                    : absl::StrCat(prefix, "families #", i + 1, ": ");
      if (f.family() == v1::ADDRESS_FAMILY_UNSPECIFIED) {
        Error(fpath("family"),
              absl::StrCat(fprefix, "family is required: IPV4_UNICAST or IPV6_UNICAST"));
      } else if (!family_ok) {
        Error(fpath("family"),
              absl::StrCat(fprefix, "family ", f.family(),
                           " is not a family bagd supports: use IPV4_UNICAST or IPV6_UNICAST"));
      } else if (const auto [it, inserted] = seen.emplace(f.family(), i); !inserted) {
        Error(fpath("family"),
              absl::StrCat(prefix, "family ", v1::AddressFamily_Name(f.family()),
                           " is already configured",
                           AtLine(Child(Child(base, families, it->second), Field(fd, "family"))),
                           ": each family may appear only once"));
      }
      CheckEnum(fpath("mode"), f.mode(), fprefix, "a mode");
      CheckEnum(fpath("missing"), f.missing(), fprefix, "a way to treat missing link bandwidth");
      const std::optional<double> own_default = CheckRate(
          fpath("default_bandwidth"), f.default_bandwidth(), fprefix, "default_bandwidth");

      // MISSING_DEFAULT_WEIGHT, set here or inherited, needs a default above 0, set here or
      // inherited. What the family inherits from link_bandwidth is reported there.
      const Lb::Missing missing =
          f.missing() != Lb::MISSING_UNSPECIFIED ? f.missing() : lb.missing();
      if (missing != Lb::MISSING_DEFAULT_WEIGHT) continue;
      if (!f.default_bandwidth().empty()) {
        if (own_default && *own_default == 0) {
          Error(fpath("default_bandwidth"),
                absl::StrCat(fprefix, ZeroDefaultBandwidth(f.default_bandwidth())));
        }
      } else if (lb.missing() != Lb::MISSING_DEFAULT_WEIGHT && global_default_ok) {
        if (lb.default_bandwidth().empty()) {
          Error(fpath("missing"),
                absl::StrCat(fprefix,
                             "missing MISSING_DEFAULT_WEIGHT needs default_bandwidth (here, or "
                             "in link_bandwidth for every family), the rate a path without "
                             "link bandwidth counts as, e.g. default_bandwidth: \"10G\""));
        } else if (global_default && *global_default == 0) {
          Error(fpath("missing"),
                absl::StrCat(fprefix,
                             "missing MISSING_DEFAULT_WEIGHT with the default_bandwidth \"",
                             lb.default_bandwidth(),
                             "\" of link_bandwidth gives paths without link bandwidth no traffic: "
                             "set a default_bandwidth above 0 here, or use MISSING_SKIP to leave "
                             "those paths out"));
        }
      }
    }
  }

  static std::string ZeroDefaultBandwidth(const std::string& text) {
    return absl::StrCat("default_bandwidth \"", text,
                        "\" with MISSING_DEFAULT_WEIGHT gives paths without link bandwidth no "
                        "traffic: use a rate above 0, or missing: MISSING_SKIP to leave those "
                        "paths out");
  }

  // Hold-down damping: ranges as bagd.proto gives them; only fields that are present (absent
  // ones get defaults, conf/config_defaults.h).
  void CheckDamping() {
    const v1::Damping& dm = config_.damping();
    const FieldPath base = {{Field(v1::Config::descriptor(), "damping"), -1}};
    auto path = [&](const char* name) {
      return Child(base, Field(v1::Damping::descriptor(), name));
    };
    auto range = [&](const char* name, bool present, uint32_t value, uint32_t low, uint32_t high,
                     const char* unit) {
      if (present && (value < low || value > high)) {
        Error(path(name), absl::StrCat("damping: ", name, " ", value, " is out of range: use ",
                                       low, "..", high, unit));
        return false;
      }
      return true;
    };
    range("decrease_delay", dm.has_decrease_delay(), dm.decrease_delay(), 0, kMaxDampingDelay,
          " seconds");
    const bool increase_ok = range("increase_hold_down", dm.has_increase_hold_down(),
                                   dm.increase_hold_down(), 0, kMaxDampingDelay, " seconds");
    range("min_change_percent", dm.has_min_change_percent(), dm.min_change_percent(), 0, 100, "");
    range("half_life", dm.has_half_life(), dm.half_life(), 1, kMaxDampingHoldDown, " seconds");
    range("early_reweight_check", dm.has_early_reweight_check(), dm.early_reweight_check(), 0, kMaxDampingDelay,
          " seconds");
    range("new_path_settle", dm.has_new_path_settle(), dm.new_path_settle(), 0, kMaxDampingDelay, " seconds");
    if (dm.has_max_hold_down()) {
      const uint32_t increase =
          dm.has_increase_hold_down() ? dm.increase_hold_down() : kDefaultIncreaseHoldDown;
      if (dm.max_hold_down() > kMaxDampingHoldDown) {
        Error(path("max_hold_down"),
              absl::StrCat("damping: max_hold_down ", dm.max_hold_down(),
                           " is out of range: use ", increase_ok ? increase : 0, "..",
                           kMaxDampingHoldDown, " seconds"));
      } else if (increase_ok && dm.max_hold_down() < increase) {
        Error(Later(path("increase_hold_down"), path("max_hold_down")),
              absl::StrCat("damping: max_hold_down ", dm.max_hold_down(),
                           " is less than increase_hold_down ", increase,
                           dm.has_increase_hold_down() ? "" : " (the default)",
                           ": the hold-down only grows from increase_hold_down up to "
                           "max_hold_down; use a max_hold_down of ",
                           increase, "..", kMaxDampingHoldDown, " seconds"));
      }
    }
  }

  void CheckFib() {
    const v1::Fib& fib = config_.fib();
    const FieldPath base = {{Field(v1::Config::descriptor(), "fib"), -1}};
    auto path = [&](const char* name) { return Child(base, Field(v1::Fib::descriptor(), name)); };
    CheckEnum(path("backend"), fib.backend(), "fib: ", "a backend");
    if (fib.max_weight() > kMaxFibWeight) {
      Error(path("max_weight"),
            absl::StrCat("fib: max_weight ", fib.max_weight(), " is out of range: use 1..",
                         kMaxFibWeight, ", or 0 for the largest weight the backend supports"));
    }
    // A budget below a group's member count is handled when the group is built (each member
    // keeps weight 1 and the budget is exceeded), since it depends on the routes.
    if (fib.group_budget() == 1 || fib.group_budget() > kMaxFibGroupBudget) {
      Error(path("group_budget"),
            absl::StrCat("fib: group_budget ", fib.group_budget(), " is out of range: use 2..",
                         kMaxFibGroupBudget,
                         " (the weight sum a group may use, e.g. the hardware's ECMP table size: "
                         "64, 128, 256 or 512), or 0 for no limit"));
    }
    if (fib.max_groups() == 1 || fib.max_groups() > kMaxFibMaxGroups) {
      Error(path("max_groups"),
            absl::StrCat("fib: max_groups ", fib.max_groups(), " is out of range: use 2..", kMaxFibMaxGroups,
                         " (the next-hop groups the FIB holds, e.g. the switch's MAX_NEXTHOP_GROUP_COUNT), "
                         "or 0 for the backend's own limit"));
    }
    if (fib.has_group_reserve()) {
      if (fib.max_groups() == 0) {
        if (fib.group_reserve() == 0 || fib.group_reserve() >= kMaxFibMaxGroups) {
          Error(path("group_reserve"), absl::StrCat("fib: group_reserve ", fib.group_reserve(),
                                                    " is out of range: use 1.. (less than max_groups)"));
        }
      } else if (fib.max_groups() > 1 && (fib.group_reserve() == 0 || fib.group_reserve() >= fib.max_groups())) {
        Error(Later(path("max_groups"), path("group_reserve")),
              absl::StrCat("fib: group_reserve ", fib.group_reserve(), " is out of range: use 1..",
                           fib.max_groups() - 1,
                           " (less than max_groups ", fib.max_groups(),
                           ": the groups kept free so that a moving group is made before the old one is broken)"));
      }
    } else if (fib.max_groups() > 1 && fib.max_groups() <= kDefaultFibGroupReserve) {
      Error(path("max_groups"),
            absl::StrCat("fib: max_groups ", fib.max_groups(), " leaves no group beyond the default group_reserve ",
                         kDefaultFibGroupReserve, ": use more than ", kDefaultFibGroupReserve,
                         ", or set a smaller group_reserve"));
    }
    CheckEnum(path("group_merge"), fib.group_merge(), "fib: ", "a group merge scope");
    CheckEnum(path("group_merge_weight"), fib.group_merge_weight(), "fib: ", "a group merge weight");
    if (fib.kernel_protocol() != 0 && (fib.kernel_protocol() < 5 || fib.kernel_protocol() > 255)) {
      Error(path("kernel_protocol"),
            absl::StrCat("fib: kernel_protocol ", fib.kernel_protocol(),
                         " is out of range: use 5..255 (0..4 are the kernel's own), or 0 for 186 (bgp)"));
    }
    CheckEnum(path("group_type"), fib.group_type(), "fib: ", "a group type");
    if (fib.resilient_buckets() > 65535) {
      Error(path("resilient_buckets"),
            absl::StrCat("fib: resilient_buckets ", fib.resilient_buckets(), " is out of range: use 1..65535"));
    }
    for (const char* timer : {"resilient_idle_timer", "resilient_unbalanced_timer"}) {
      const uint32_t v = std::string(timer) == "resilient_idle_timer" ? fib.resilient_idle_timer()
                                                                     : fib.resilient_unbalanced_timer();
      if (v > 3600) Error(path(timer), absl::StrCat("fib: ", timer, " ", v, " is out of range: use 0..3600 seconds"));
    }
    if (fib.group_swaps_per_revisit() > 64) {
      Error(path("group_swaps_per_revisit"),
            absl::StrCat("fib: group_swaps_per_revisit ", fib.group_swaps_per_revisit(),
                         " is out of range: use 0..64 (0: no swaps)"));
    }
    if (fib.audit_interval() > 86400) {
      Error(path("audit_interval"), absl::StrCat("fib: audit_interval ", fib.audit_interval(),
                                                 " is out of range: use 0..86400 seconds (0: no periodic audit)"));
    }
    if (fib.restart_hold_time() > 3600) {
      Error(path("restart_hold_time"), absl::StrCat("fib: restart_hold_time ", fib.restart_hold_time(),
                                                    " is out of range: use 0..3600 seconds"));
    } else if (fib.has_restart_neighbor_wait() &&
               fib.restart_neighbor_wait() > (fib.has_restart_hold_time() ? fib.restart_hold_time() : kDefaultRestartHoldTime)) {
      Error(path("restart_neighbor_wait"),
            absl::StrCat("fib: restart_neighbor_wait ", fib.restart_neighbor_wait(), " is longer than restart_hold_time ",
                         fib.has_restart_hold_time() ? fib.restart_hold_time() : kDefaultRestartHoldTime,
                         ": a neighbor cannot hold the wait longer than the wait itself"));
    }
    CheckAppldb(fib, path);
  }

  // BACKEND_SONIC_APPLDB's fields (checked whatever the backend: a typo is a typo).
  template <typename PathFn>
  void CheckAppldb(const v1::Fib& fib, const PathFn& path) {
    if (!fib.appldb_address().empty()) {
      const std::string& a = fib.appldb_address();
      const absl::StatusOr<net::HostPort> hp = net::ParseHostPort(a);
      if (!hp.ok() || !(hp->host == "localhost" || ParseIpAddressText(hp->host).has_value())) {
        Error(path("appldb_address"),
              absl::StrCat("fib: appldb_address '", a,
                           "' is not ADDRESS:PORT: write e.g. \"127.0.0.1:6379\" or \"[::1]:6379\" (an IP address or "
                           "localhost, and a port 1..65535), or leave it empty for appldb_socket"));
      }
    }
    if (fib.has_confirm_timeout() && (fib.confirm_timeout() == 0 || fib.confirm_timeout() > 3600)) {
      Error(path("confirm_timeout"), absl::StrCat("fib: confirm_timeout ", fib.confirm_timeout(),
                                                  " is out of range: use 1..3600 seconds"));
    }
    if (fib.has_appldb_pop_batch() && (fib.appldb_pop_batch() == 0 || fib.appldb_pop_batch() > 65536)) {
      Error(path("appldb_pop_batch"),
            absl::StrCat("fib: appldb_pop_batch ", fib.appldb_pop_batch(),
                         " is out of range: use 1..65536, the keys orchagent pops per message (its -b option; 128 "
                         "if unsure)"));
    }
    CheckEnum(path("confirm"), fib.confirm(), "fib: ", "a confirmation mode");
    CheckEnum(path("appldb_route_path"), fib.appldb_route_path(), "fib: ", "a route path");
    if (const std::string& z = fib.appldb_zmq_endpoint();
        !z.empty() && !((z.starts_with("tcp://") && z.find(':', 6) != std::string::npos) ||
                        (z.starts_with("ipc://") && z.size() > 6))) {
      Error(path("appldb_zmq_endpoint"),
            absl::StrCat("fib: appldb_zmq_endpoint '", z,
                         "' is not a ZMQ endpoint orchagent binds: use tcp://HOST:PORT (SONiC: tcp://127.0.0.1:8100) "
                         "or ipc://PATH, or leave it empty for the default"));
    }
    const std::string& proto = fib.appldb_protocol();
    if (!proto.empty()) {
      const bool chars_ok = proto.size() <= 32 && std::all_of(proto.begin(), proto.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_';
      });
      if (!chars_ok) {
        Error(path("appldb_protocol"), absl::StrCat("fib: appldb_protocol '", proto,
                                                    "' must be 1..32 characters of A-Z, a-z, 0-9, '-' and '_'"));
      } else if (proto == "bgp") {
        Error(path("appldb_protocol"),
              "fib: appldb_protocol 'bgp' is what fpmsyncd writes for FRR's routes: bagd would take them for its "
              "own and delete the ones it does not want; use another name (default \"bagd\")");
      }
    }
  }

  void CheckCapacitySources() {
    std::vector<std::string> names;
    for (int i = 0; i < config_.capacity_sources_size(); ++i) {
      const v1::CapacitySource& c = config_.capacity_sources(i);
      const FieldPath source = {{Field(v1::Config::descriptor(), "capacity_sources"), i}};
      auto path = [&](const char* f) { return Child(source, Field(v1::CapacitySource::descriptor(), f)); };
      const std::string prefix = c.name().empty() ? absl::StrCat("capacity source #", i + 1, ": ")
                                                  : absl::StrCat("capacity source ", c.name(), ": ");
      if (c.name().empty()) {
        Error(source, absl::StrCat(prefix, "name is required"));
      } else if (std::find(names.begin(), names.end(), c.name()) != names.end()) {
        Error(path("name"), absl::StrCat(prefix, "the name is already used"));
      }
      names.push_back(c.name());
      if (c.bond().empty() == c.members().empty()) {
        Error(c.bond().empty() ? source : path("bond"), absl::StrCat(prefix, "give either bond or members"));
      }
      CheckRate(path("member_speed"), c.member_speed(), prefix, "member_speed");
    }
    for (int i = 0; i < config_.neighbors_size(); ++i) {
      const v1::Neighbor& n = config_.neighbors(i);
      const FieldPath base = {{Field(v1::Config::descriptor(), "neighbors"), i}};
      if (!n.local_capacity_source().empty() &&
          std::find(names.begin(), names.end(), n.local_capacity_source()) == names.end()) {
        Error(Child(base, Field(v1::Neighbor::descriptor(), "local_capacity_source")),
              absl::StrCat(NeighborName(i), ": local_capacity_source: no capacity source named '",
                           n.local_capacity_source(), "' (define it under capacity_sources)"));
      }
      // CAP is the default (ApplyDefaults writes it everywhere); IGNORE without a source
      // would say something that does nothing.
      if (n.local_capacity_source().empty() && n.local_capacity() == v1::LOCAL_CAPACITY_IGNORE) {
        Error(Child(base, Field(v1::Neighbor::descriptor(), "local_capacity")),
              absl::StrCat(NeighborName(i), ": local_capacity needs local_capacity_source (the capacity "
                           "source this neighbor is reached over)"));
      }
    }
    for (int i = 0; i < config_.networks_size(); ++i) {
      const v1::Network& n = config_.networks(i);
      if (n.capacity_source().empty()) continue;
      const FieldPath at = {{Field(v1::Config::descriptor(), "networks"), i},
                            {Field(v1::Network::descriptor(), "capacity_source"), -1}};
      if (std::find(names.begin(), names.end(), n.capacity_source()) == names.end()) {
        Error(at, absl::StrCat("network ", n.prefix(), ": no capacity source named '", n.capacity_source(), "'"));
      }
      if (!n.link_bandwidth().empty()) {
        Error(at, absl::StrCat("network ", n.prefix(), ": link_bandwidth and capacity_source: give one"));
      }
    }
  }

  // mrt { ... } (docs/mrt.md): intervals of at least a minute, a valid template for each
  // kind that is on, two different templates.
  void CheckMrt() {
    if (!config_.has_mrt()) return;
    const v1::Mrt& m = config_.mrt();
    const FieldPath mrt = {{Field(v1::Config::descriptor(), "mrt"), -1}};
    auto at = [&](const char* field) { return Child(mrt, Field(v1::Mrt::descriptor(), field)); };
    struct Kind {
      const char* interval_field;
      uint32_t interval;
      const char* path_field;
      const std::string& path;
    };
    const Kind kinds[] = {{"table_interval", m.table_interval(), "table_path", m.table_path()},
                          {"updates_interval", m.updates_interval(), "updates_path", m.updates_path()}};
    for (const Kind& k : kinds) {
      if (k.interval != 0 && k.interval < 60) {
        Error(at(k.interval_field), absl::StrCat("mrt.", k.interval_field, " ", k.interval,
                                                 " s is too short: at least 60 (or 0 for none)"));
      }
      if (k.interval == 0 && k.path.empty()) continue;
      if (k.path.empty()) {
        Error(at(k.interval_field), absl::StrCat("mrt.", k.interval_field, " is set but mrt.", k.path_field,
                                                 " is not: say where the files go, e.g. \"/var/lib/bagd/mrt/",
                                                 k.path_field[0] == 't' ? "rib" : "updates", ".%Y%m%d.%H%M\""));
        continue;
      }
      if (absl::Status st = mrt::CheckPathTemplate(k.path); !st.ok()) {
        Error(at(k.path_field), absl::StrCat("mrt.", k.path_field, ": ", st.message()));
      }
    }
    if (!m.table_path().empty() && m.table_path() == m.updates_path()) {
      Error(at("updates_path"), "mrt.updates_path is the same template as mrt.table_path: the updates files would "
                                "replace the table dumps and `keep` would delete both; use two names");
    }
  }

  // control.group must name a group this host knows: the socket is given to it at start.
  void CheckControl() {
    const std::string& group = config_.control().group();
    if (group.empty()) return;
    const FieldPath at = {{Field(v1::Config::descriptor(), "control"), -1},
                          {Field(v1::Control::descriptor(), "group"), -1}};
    if (!LookupGroup(group).ok()) {
      Error(at, absl::StrCat("control.group: no group \"", group,
                             "\" on this host (see /etc/group; create it with `groupadd ", group, "`)"));
    }
  }

  // bmp.station: addresses, ports, views built so far, ranges (docs/bmp.md).
  void CheckBmp() {
    std::vector<std::pair<std::string, uint32_t>> seen;
    for (int i = 0; i < config_.bmp().station_size(); ++i) {
      const v1::BmpStation& st = config_.bmp().station(i);
      const FieldPath base = {{Field(v1::Config::descriptor(), "bmp"), -1},
                              {Field(v1::Bmp::descriptor(), "station"), i}};
      auto path = [&](const char* f) { return Child(base, Field(v1::BmpStation::descriptor(), f)); };
      const std::string prefix = absl::StrCat("bmp station ", st.address().empty() ? absl::StrCat("#", i + 1) : st.address(), ": ");
      auto address = net::IpAddress::Parse(st.address());
      if (st.address().empty()) {
        Error(base, absl::StrCat(prefix, "address is required"));
      } else if (!address.ok()) {
        Error(path("address"), absl::StrCat(prefix, "address \"", st.address(), "\" is not an IPv4 or IPv6 address"));
      }
      if (st.port() > kMaxPort) {
        Error(path("port"), absl::StrCat(prefix, "port ", st.port(), " is out of range: use 1..65535 (0 or absent means 1790)"));
      }
      if (address.ok()) {
        const std::pair<std::string, uint32_t> key{address->ToString(), st.port() ? st.port() : 1790};
        if (std::find(seen.begin(), seen.end(), key) != seen.end()) {
          Error(path("address"), absl::StrCat(prefix, "this station (address and port) is already configured"));
        }
        seen.push_back(key);
      }
      for (int v = 0; v < st.views_size(); ++v) {
        const auto view = st.views(v);
        if (std::find(st.views().begin(), st.views().begin() + v, view) != st.views().begin() + v) {
          Error(Child(base, Field(v1::BmpStation::descriptor(), "views"), v),
                absl::StrCat(prefix, "views: ", v1::BmpView_Name(view), " is listed twice"));
        } else if (view == v1::BMP_VIEW_UNSPECIFIED) {
          Error(Child(base, Field(v1::BmpStation::descriptor(), "views"), v),
                absl::StrCat(prefix, "views: BMP_VIEW_UNSPECIFIED is not a view"));
        }
      }
      if (st.statistics_interval() > 86400) {
        Error(path("statistics_interval"), absl::StrCat(prefix, "statistics_interval ", st.statistics_interval(),
                                                        " is out of range: use 0 (none) or 1..86400 seconds"));
      }
      if (st.max_buffer_mib() > 4096) {
        Error(path("max_buffer_mib"), absl::StrCat(prefix, "max_buffer_mib ", st.max_buffer_mib(),
                                                   " is out of range: use 1..4096 (0 or absent means 64)"));
      }
    }
  }

  void CheckNetworks() {
    std::vector<std::pair<std::string, int>> seen;  // canonical prefix, index
    for (int i = 0; i < config_.networks_size(); ++i) {
      const std::string& text = config_.networks(i).prefix();
      const FieldPath network = {{Field(v1::Config::descriptor(), "networks"), i}};
      const FieldPath at = Child(network, Field(v1::Network::descriptor(), "prefix"));
      CheckRate(Child(network, Field(v1::Network::descriptor(), "link_bandwidth")),
                config_.networks(i).link_bandwidth(),
                text.empty() ? absl::StrCat("network #", i + 1, ": ")
                             : absl::StrCat("network ", text, ": "),
                "link_bandwidth");
      const std::optional<PrefixText> prefix = ParsePrefixText(text);
      if (!prefix) {
        Error(at, absl::StrCat("network \"", text, "\" is not a prefix such as 10.100.0.0/24 or 2001:db8::/48"));
        continue;
      }
      if (prefix->HasHostBits()) {
        Error(at, absl::StrCat("network ", text, " has host bits set: write the prefix itself"));
        continue;
      }
      const IpAddressText* addr = &prefix->address;
      const int len = prefix->length;
      std::string canonical(reinterpret_cast<const char*>(addr->bytes.data()), 16);
      canonical += static_cast<char>(len);
      canonical += addr->v6 ? '6' : '4';
      for (const auto& [c, j] : seen) {
        if (c == canonical) {
          Error(at, absl::StrCat("network ", text, " is listed twice (also entry ", j + 1, ")"));
        }
      }
      seen.emplace_back(canonical, i);
    }
  }


  // --- routing policy (docs/policy.md) ----------------------------------------------------

  // The sets of one kind: name → index, with duplicates and empty names reported.
  template <typename Set>
  std::map<std::string, int> CheckSetNames(const FieldPath& sets_path,
                                           const pb::RepeatedPtrField<Set>& sets, const char* kind,
                                           const char* entries) {
    std::map<std::string, int> names;
    for (int i = 0; i < sets.size(); ++i) {
      FieldPath at = sets_path;
      at.back().second = i;
      const FieldPath name_path = Child(at, Field(Set::descriptor(), "name"));
      const std::string& name = sets[i].name();
      if (name.empty()) {
        Error(at, absl::StrCat(kind, " #", i + 1, ": name is required"));
        continue;
      }
      if (const auto [it, inserted] = names.emplace(name, i); !inserted) {
        FieldPath first = sets_path;
        first.back().second = it->second;
        Error(name_path, absl::StrCat(kind, " \"", name, "\" is already defined",
                                      AtLine(Child(first, Field(Set::descriptor(), "name")))));
      }
      const pb::FieldDescriptor* list = Field(Set::descriptor(), entries);
      if (sets[i].GetReflection()->FieldSize(sets[i], list) == 0) {
        Error(at, absl::StrCat(kind, " \"", name, "\": ", entries, " is empty: give at least one"));
      }
    }
    return names;
  }

  // Calls check(set, entry index, path of the entry) for each entry of each set of one kind.
  template <typename Set, typename Check>
  void ForEachEntry(const pb::RepeatedPtrField<Set>& sets, const char* sets_field, const char* entries_field,
                    Check check) {
    const FieldPath base = {{Field(v1::Config::descriptor(), "defined_sets"), -1}};
    const pb::FieldDescriptor* entries = Field(Set::descriptor(), entries_field);
    for (int i = 0; i < sets.size(); ++i) {
      const FieldPath set = Child(base, Field(v1::DefinedSets::descriptor(), sets_field), i);
      for (int j = 0; j < sets[i].GetReflection()->FieldSize(sets[i], entries); ++j) {
        check(sets[i], j, Child(set, entries, j));
      }
    }
  }

  void CheckDefinedSets() {
    const pb::Descriptor* d = v1::DefinedSets::descriptor();
    const FieldPath base = {{Field(v1::Config::descriptor(), "defined_sets"), -1}};
    const v1::DefinedSets& sets = config_.defined_sets();
    auto list = [&](const char* name) { return Child(base, Field(d, name), 0); };

    prefix_sets_ = CheckSetNames(list("prefix_sets"), sets.prefix_sets(), "prefix set", "prefixes");
    ForEachEntry(sets.prefix_sets(), "prefix_sets", "prefixes", [&](const v1::PrefixSet& set, int j, const FieldPath& at) {
      CheckPrefixSetEntry(at, set.name(), set.prefixes(j));
    });

    community_sets_ = CheckSetNames(list("community_sets"), sets.community_sets(), "community set", "communities");
    ForEachEntry(sets.community_sets(), "community_sets", "communities",
                 [&](const v1::CommunitySet& set, int j, const FieldPath& at) {
                   if (const auto c = ParseCommunityText(set.communities(j)); !c.ok()) {
                     Error(at, absl::StrCat("community set \"", set.name(), "\": ", c.status().message()));
                   }
                 });

    as_path_sets_ = CheckSetNames(list("as_path_sets"), sets.as_path_sets(), "AS-path set", "regexes");
    ForEachEntry(sets.as_path_sets(), "as_path_sets", "regexes", [&](const v1::AsPathSet& set, int j, const FieldPath& at) {
      if (const absl::Status re = CheckAsPathRegex(set.regexes(j)); !re.ok()) {
        Error(at, absl::StrCat("AS-path set \"", set.name(), "\": regex \"", set.regexes(j), "\" does not compile: ",
                               re.message(), " (RE2 syntax; `_` is a delimiter as in FRR)"));
      }
    });

    neighbor_sets_ = CheckSetNames(list("neighbor_sets"), sets.neighbor_sets(), "neighbor set", "addresses");
    ForEachEntry(sets.neighbor_sets(), "neighbor_sets", "addresses",
                 [&](const v1::NeighborSet& set, int j, const FieldPath& at) {
                   if (!ParseIpAddressText(set.addresses(j))) {
                     Error(at, absl::StrCat("neighbor set \"", set.name(), "\": \"", set.addresses(j), "\" ",
                                            SyntaxProblem(set.addresses(j))));
                   }
                 });

    next_hop_sets_ = CheckSetNames(list("next_hop_sets"), sets.next_hop_sets(), "next-hop set", "next_hops");
    ForEachEntry(sets.next_hop_sets(), "next_hop_sets", "next_hops",
                 [&](const v1::NextHopSet& set, int j, const FieldPath& at) {
                   const std::string& text = set.next_hops(j);
                   const std::optional<PrefixText> prefix = ParsePrefixText(text);
                   const bool ok = text.find('/') == std::string::npos ? ParseIpAddressText(text).has_value()
                                                                       : prefix && !prefix->HasHostBits();
                   if (!ok) {
                     Error(at, absl::StrCat("next-hop set \"", set.name(), "\": \"", text,
                                            "\" is not an address or a prefix without host bits, such as "
                                            "\"192.0.2.1\" or \"10.0.0.0/8\""));
                   }
                 });
  }

  void CheckPrefixSetEntry(const FieldPath& entry, const std::string& set,
                           const v1::PrefixSetEntry& e) {
    const pb::Descriptor* d = v1::PrefixSetEntry::descriptor();
    const std::string what = absl::StrCat("prefix set \"", set, "\": ");
    const std::optional<PrefixText> prefix = ParsePrefixText(e.prefix());
    if (!prefix) {
      Error(Child(entry, Field(d, "prefix")),
            absl::StrCat(what, "\"", e.prefix(), "\" is not a prefix such as 10.0.0.0/8 or 2001:db8::/32"));
      return;
    }
    if (prefix->HasHostBits()) {
      Error(Child(entry, Field(d, "prefix")),
            absl::StrCat(what, e.prefix(), " has host bits set: write the prefix itself"));
      return;
    }
    // FRR's rule: len <= ge <= le <= max (0 = not given).
    const uint32_t len = prefix->length, max = prefix->max_length();
    const uint32_t ge = e.ge() != 0 ? e.ge() : len;
    const uint32_t le = e.le() != 0 ? e.le() : (e.ge() != 0 ? max : len);
    const std::string rule = absl::StrCat(" (", e.prefix(), " ge/le must satisfy ", len, " <= ge <= le <= ", max, ")");
    if (e.ge() != 0 && (e.ge() < len || e.ge() > max)) {
      Error(Child(entry, Field(d, "ge")), absl::StrCat(what, "ge ", e.ge(), " is out of range", rule));
    } else if (e.le() != 0 && (e.le() < len || e.le() > max)) {
      Error(Child(entry, Field(d, "le")), absl::StrCat(what, "le ", e.le(), " is out of range", rule));
    } else if (ge > le) {
      Error(Child(entry, Field(d, "le")), absl::StrCat(what, "le ", le, " is less than ge ", ge, rule));
    }
  }

  void CheckSetMatch(const FieldPath& at, const v1::SetMatch& m, const std::map<std::string, int>& names,
                     const std::string& what, const char* kind) {
    if (m.set().empty()) {
      Error(at, absl::StrCat(what, kind, " set: `set` (the name) is required"));
    } else if (!names.contains(m.set())) {
      Error(Child(at, Field(v1::SetMatch::descriptor(), "set")),
            absl::StrCat(what, kind, " set \"", m.set(), "\" is not defined in defined_sets"));
    }
    CheckEnum(Child(at, Field(v1::SetMatch::descriptor(), "match")), m.match(), what, "a match type");
  }

  void CheckPolicies() {
    const pb::FieldDescriptor* policies = Field(v1::Config::descriptor(), "policies");
    const FieldPath list = {{policies, 0}};
    policy_names_ = CheckSetNames(list, config_.policies(), "policy", "statements");
    for (int i = 0; i < config_.policies_size(); ++i) {
      const v1::Policy& policy = config_.policies(i);
      for (int j = 0; j < policy.statements_size(); ++j) {
        const FieldPath at = Child({{policies, i}}, Field(v1::Policy::descriptor(), "statements"), j);
        const v1::Statement& st = policy.statements(j);
        const std::string what = absl::StrCat("policy \"", policy.name(), "\" statement ",
                                              st.name().empty() ? absl::StrCat("#", j + 1) : st.name(), ": ");
        CheckConditions(Child(at, Field(v1::Statement::descriptor(), "conditions")), st.conditions(), what);
        CheckActions(Child(at, Field(v1::Statement::descriptor(), "actions")), st.actions(), what);
      }
    }
  }

  void CheckConditions(const FieldPath& at, const v1::Conditions& c, const std::string& what) {
    const pb::Descriptor* d = v1::Conditions::descriptor();
    if (c.has_prefix_set()) CheckSetMatch(Child(at, Field(d, "prefix_set")), c.prefix_set(), prefix_sets_, what, "prefix");
    if (c.has_community_set()) {
      CheckSetMatch(Child(at, Field(d, "community_set")), c.community_set(), community_sets_, what, "community");
    }
    if (c.has_as_path_set()) CheckSetMatch(Child(at, Field(d, "as_path_set")), c.as_path_set(), as_path_sets_, what, "AS-path");
    if (c.has_neighbor_set()) {
      CheckSetMatch(Child(at, Field(d, "neighbor_set")), c.neighbor_set(), neighbor_sets_, what, "neighbor");
    }
    if (c.has_next_hop_set()) {
      CheckSetMatch(Child(at, Field(d, "next_hop_set")), c.next_hop_set(), next_hop_sets_, what, "next-hop");
    }
    for (int i = 0; i < c.origins_size(); ++i) {
      const FieldPath o = Child(at, Field(d, "origins"), i);
      if (c.origins(i) == v1::ORIGIN_UNSPECIFIED) {
        Error(o, absl::StrCat(what, "origins: ORIGIN_UNSPECIFIED is not an origin: use ORIGIN_IGP, ORIGIN_EGP or ORIGIN_INCOMPLETE"));
      } else {
        CheckEnum(o, c.origins(i), what, "an origin");
      }
    }
    for (int i = 0; i < c.sources_size(); ++i) {
      const FieldPath o = Child(at, Field(d, "sources"), i);
      if (c.sources(i) == v1::ROUTE_SOURCE_UNSPECIFIED) {
        Error(o, absl::StrCat(what, "sources: ROUTE_SOURCE_UNSPECIFIED is not a source: use ", EnumChoices(v1::RouteSource_descriptor())));
      } else {
        CheckEnum(o, c.sources(i), what, "a route source");
      }
    }
    if (c.has_as_path_length() && c.as_path_length().has_min() && c.as_path_length().has_max() &&
        c.as_path_length().min() > c.as_path_length().max()) {
      Error(Child(Child(at, Field(d, "as_path_length")), Field(v1::LengthRange::descriptor(), "max")),
            absl::StrCat(what, "as_path_length max ", c.as_path_length().max(), " is less than min ",
                         c.as_path_length().min()));
    }
    if (c.has_link_bandwidth()) {
      const v1::LinkBandwidthCondition& lb = c.link_bandwidth();
      const FieldPath lb_path = Child(at, Field(d, "link_bandwidth"));
      const pb::Descriptor* ld = v1::LinkBandwidthCondition::descriptor();
      CheckEnum(Child(lb_path, Field(ld, "presence")), lb.presence(), what, "a presence");
      const auto min = CheckRate(Child(lb_path, Field(ld, "min")), lb.min(), absl::StrCat(what, "link_bandwidth "), "min");
      const auto max = CheckRate(Child(lb_path, Field(ld, "max")), lb.max(), absl::StrCat(what, "link_bandwidth "), "max");
      if (lb.presence() == v1::LinkBandwidthCondition::PRESENCE_ABSENT && (!lb.min().empty() || !lb.max().empty())) {
        Error(Child(lb_path, Field(ld, "presence")),
              absl::StrCat(what, "link_bandwidth: PRESENCE_ABSENT with min/max can never match: give one"));
      } else if (min && max && *min > *max) {
        Error(Child(lb_path, Field(ld, "max")), absl::StrCat(what, "link_bandwidth max ", lb.max(), " is less than min ", lb.min()));
      }
    }
  }

  void CheckActions(const FieldPath& at, const v1::Actions& a, const std::string& what) {
    const pb::Descriptor* d = v1::Actions::descriptor();
    CheckEnum(Child(at, Field(d, "disposition")), a.disposition(), what, "a disposition");
    for (int i = 0; i < a.communities_size(); ++i) {
      const v1::CommunityAction& ca = a.communities(i);
      const FieldPath ca_path = Child(at, Field(d, "communities"), i);
      const pb::Descriptor* cd = v1::CommunityAction::descriptor();
      if (ca.op() == v1::CommunityAction::OP_UNSPECIFIED) {
        Error(ca_path, absl::StrCat(what, "communities: op is required: OP_ADD, OP_REMOVE or OP_REPLACE"));
      } else {
        CheckEnum(Child(ca_path, Field(cd, "op")), ca.op(), what, "an op");
      }
      for (int j = 0; j < ca.communities_size(); ++j) {
        const FieldPath c_path = Child(ca_path, Field(cd, "communities"), j);
        const auto c = ParseCommunityText(ca.communities(j));
        if (!c.ok()) {
          Error(c_path, absl::StrCat(what, c.status().message()));
        } else if (c->kind == CommunityText::Kind::kLinkBandwidth) {
          Error(c_path, absl::StrCat(what, "\"", ca.communities(j),
                                     "\": set link bandwidth with actions.link_bandwidth, not as a community"));
        }
      }
    }
    if (a.has_as_path_prepend()) {
      const uint32_t repeat = a.as_path_prepend().repeat();
      if (repeat > 10) {
        Error(Child(Child(at, Field(d, "as_path_prepend")), Field(v1::AsPathPrepend::descriptor(), "repeat")),
              absl::StrCat(what, "as_path_prepend repeat ", repeat, " is out of range: use 1..10"));
      }
      if (a.as_path_prepend().asn() == kAsTrans) {
        Error(Child(Child(at, Field(d, "as_path_prepend")), Field(v1::AsPathPrepend::descriptor(), "asn")),
              absl::StrCat(what, "as_path_prepend asn 23456 is AS_TRANS (RFC 6793): use a real AS number"));
      }
    }
    if (a.has_next_hop()) {
      const v1::NextHopAction& nh = a.next_hop();
      const FieldPath nh_path = Child(at, Field(d, "next_hop"));
      const FieldPath address = Child(nh_path, Field(v1::NextHopAction::descriptor(), "address"));
      if (nh.self() == !nh.address().empty()) {
        Error(nh_path, absl::StrCat(what, "next_hop: give one of self: true or address"));
      } else if (!nh.address().empty()) {
        const auto parsed = ParseIpAddressText(nh.address());
        if (!parsed) {
          Error(address, absl::StrCat(what, "next_hop address \"", nh.address(), "\" ", SyntaxProblem(nh.address())));
        } else if (const std::string problem = EndpointProblem(*parsed, false); !problem.empty()) {
          Error(address, absl::StrCat(what, "next_hop address ", nh.address(), " ", problem));
        }
      }
    }
    if (a.has_link_bandwidth()) {
      using Lb = v1::LinkBandwidthAction;
      const Lb& lb = a.link_bandwidth();
      const FieldPath lb_path = Child(at, Field(d, "link_bandwidth"));
      const FieldPath rate_path = Child(lb_path, Field(Lb::descriptor(), "rate"));
      if (!CheckEnum(Child(lb_path, Field(Lb::descriptor(), "op")), lb.op(), what, "an op")) return;
      const bool needs_rate = lb.op() == Lb::OP_SET || lb.op() == Lb::OP_CAP || lb.op() == Lb::OP_NUM_MULTIPATHS;
      if (needs_rate && lb.rate().empty()) {
        Error(lb_path, absl::StrCat(what, "link_bandwidth ", Lb::Op_Name(lb.op()), " needs a rate, e.g. rate: \"10G\""));
      } else if (!needs_rate && !lb.rate().empty()) {
        Error(rate_path, absl::StrCat(what, "link_bandwidth rate is only used with OP_SET, OP_CAP and OP_NUM_MULTIPATHS"));
      } else {
        CheckRate(rate_path, lb.rate(), absl::StrCat(what, "link_bandwidth "), "rate");
      }
      if (lb.op() == Lb::OP_UNSPECIFIED) {
        Error(lb_path, absl::StrCat(what, "link_bandwidth: op is required: ", EnumChoices(Lb::Op_descriptor())));
      }
    }
  }

  // Neighbor.import_policies / export_policies: names only (not applied yet, issue 13).
  void CheckPolicyAttachment() {
    const pb::Descriptor* d = v1::Neighbor::descriptor();
    const pb::FieldDescriptor* neighbors = Field(v1::Config::descriptor(), "neighbors");
    for (int i = 0; i < config_.neighbors_size(); ++i) {
      const v1::Neighbor& n = config_.neighbors(i);
      const std::string what = absl::StrCat(NeighborName(i), ": ");
      for (const char* list : {"import_policies", "export_policies"}) {
        const pb::FieldDescriptor* field = Field(d, list);
        for (int j = 0; j < n.GetReflection()->FieldSize(n, field); ++j) {
          const std::string name = n.GetReflection()->GetRepeatedString(n, field, j);
          if (!policy_names_.contains(name)) {
            Error(Child({{neighbors, i}}, field, j),
                  absl::StrCat(what, list, ": policy \"", name, "\" is not defined in policies"));
          }
        }
      }
      CheckEnum(Child({{neighbors, i}}, Field(d, "default_import")), n.default_import(), what, "a default action");
      CheckEnum(Child({{neighbors, i}}, Field(d, "default_export")), n.default_export(), what, "a default action");
    }
  }

  // --- BFD (docs/bfd.md) ----------------------------------------------------------------------

  // The fields Bfd and BfdProfile share: ranges.
  template <typename M>
  void CheckBfdFields(const FieldPath& base, const M& m, const std::string& what) {
    const pb::Descriptor* d = M::descriptor();
    if (m.has_min_tx() && (m.min_tx() < kBfdMinIntervalMs || m.min_tx() > kBfdMaxIntervalMs)) {
      Error(Child(base, Field(d, "min_tx")),
            absl::StrCat(what, "bfd min_tx ", m.min_tx(), " is out of range: use ", kBfdMinIntervalMs, "..",
                         kBfdMaxIntervalMs, " milliseconds"));
    }
    if (m.has_min_rx() && (m.min_rx() < kBfdMinIntervalMs || m.min_rx() > kBfdMaxIntervalMs)) {
      Error(Child(base, Field(d, "min_rx")),
            absl::StrCat(what, "bfd min_rx ", m.min_rx(), " is out of range: use ", kBfdMinIntervalMs, "..",
                         kBfdMaxIntervalMs, " milliseconds"));
    }
    if (m.has_multiplier() && (m.multiplier() < 1 || m.multiplier() > 255)) {
      Error(Child(base, Field(d, "multiplier")),
            absl::StrCat(what, "bfd multiplier ", m.multiplier(),
                         " is out of range: use 1..255 (RFC 5880 Detect Mult; 3 is usual)"));
    }
  }

  void CheckBfd() {
    const pb::FieldDescriptor* profiles = Field(v1::Config::descriptor(), "bfd_profiles");
    std::map<std::string, int> names;
    for (int i = 0; i < config_.bfd_profiles_size(); ++i) {
      const v1::BfdProfile& p = config_.bfd_profiles(i);
      const FieldPath base = {{profiles, i}};
      const FieldPath name = Child(base, Field(v1::BfdProfile::descriptor(), "name"));
      if (p.name().empty()) {
        Error(name, absl::StrCat("bfd_profiles #", i + 1, ": name is required"));
      } else if (const auto [it, inserted] = names.emplace(p.name(), i); !inserted) {
        Error(name, absl::StrCat("bfd profile \"", p.name(), "\" is already defined",
                                 AtLine(Child({{profiles, it->second}}, Field(v1::BfdProfile::descriptor(), "name"))),
                                 ": each name may appear only once"));
      }
      CheckBfdFields(base, p, absl::StrCat("bfd profile \"", p.name(), "\": "));
    }
    const pb::FieldDescriptor* neighbors = Field(v1::Config::descriptor(), "neighbors");
    for (int i = 0; i < config_.neighbors_size(); ++i) {
      const v1::Neighbor& n = config_.neighbors(i);
      if (!n.has_bfd()) continue;
      const FieldPath base = Child({{neighbors, i}}, Field(v1::Neighbor::descriptor(), "bfd"));
      const std::string what = absl::StrCat("neighbor ", n.address(), ": ");
      if (!n.bfd().profile().empty() && !names.contains(n.bfd().profile())) {
        Error(Child(base, Field(v1::Bfd::descriptor(), "profile")),
              absl::StrCat(what, "bfd profile \"", n.bfd().profile(), "\" is not defined in bfd_profiles"));
      }
      CheckBfdFields(base, n.bfd(), what);
    }
    CheckMicroBfd(names);
  }

  // capacity_sources { micro_bfd { ... } } (RFC 7130, docs/bfd.md "Micro-BFD").
  void CheckMicroBfd(const std::map<std::string, int>& profiles) {
    const pb::FieldDescriptor* sources = Field(v1::Config::descriptor(), "capacity_sources");
    const pb::Descriptor* d = v1::MicroBfd::descriptor();
    for (int i = 0; i < config_.capacity_sources_size(); ++i) {
      const v1::CapacitySource& c = config_.capacity_sources(i);
      if (!c.has_micro_bfd()) continue;
      const v1::MicroBfd& m = c.micro_bfd();
      const FieldPath base = Child({{sources, i}}, Field(v1::CapacitySource::descriptor(), "micro_bfd"));
      const std::string what = absl::StrCat("capacity source ", c.name(), ": micro_bfd: ");
      if (!c.bond().empty()) {
        Error(base, absl::StrCat(what, "needs the members listed (`members`), not `bond`: bagd cannot send on "
                                       "one member of a Linux bond (docs/bfd.md \"Micro-BFD\")"));
      }
      if (!m.profile().empty() && !profiles.contains(m.profile())) {
        Error(Child(base, Field(d, "profile")),
              absl::StrCat(what, "bfd profile \"", m.profile(), "\" is not defined in bfd_profiles"));
      }
      CheckBfdFields(base, m, what);
      std::optional<IpAddressText> local, neighbor;
      auto address = [&](const char* field, const std::string& text, const char* meaning,
                         std::optional<IpAddressText>& out) {
        const FieldPath at = Child(base, Field(d, field));
        if (text.empty()) {
          Error(base, absl::StrCat(what, field, " is required (", meaning, ")"));
          return;
        }
        out = ParseIpAddressText(text);
        if (!out) {
          Error(at, absl::StrCat(what, field, " \"", text, "\" ", SyntaxProblem(text)));
        } else if (const std::string problem = EndpointProblem(*out, false); !problem.empty()) {
          Error(at, absl::StrCat(what, field, " ", text, " ", problem));
          out.reset();
        }
      };
      address("local_address", m.local_address(), "our address on the LAG", local);
      address("neighbor_address", m.neighbor_address(), "the far end's address on the LAG", neighbor);
      if (local && neighbor && local->v6 != neighbor->v6) {
        Error(Child(base, Field(d, "local_address")),
              absl::StrCat(what, "local_address ", m.local_address(), " is ", local->v6 ? "IPv6" : "IPv4",
                           " but neighbor_address ", m.neighbor_address(), " is ", neighbor->v6 ? "IPv6" : "IPv4",
                           ": give both in one family"));
      } else if (local && neighbor && *local == *neighbor) {
        Error(Child(base, Field(d, "neighbor_address")),
              absl::StrCat(what, "neighbor_address is our local_address: give the far end's address"));
      }
    }
  }

  std::map<std::string, int> prefix_sets_, community_sets_, as_path_sets_, neighbor_sets_, next_hop_sets_;
  std::map<std::string, int> policy_names_;

  const v1::Config& config_;
  std::string_view file_name_;
  const FieldLocator* locator_;
  const std::vector<NeighborOrigin>* origins_;
  std::vector<ConfigError> errors_;
};

}  // namespace

std::vector<ConfigError> ValidateConfig(const v1::Config& config, std::string_view file_name,
                                        const FieldLocator* locator, const std::vector<NeighborOrigin>* origins) {
  return Validator(config, file_name, locator, origins).Run();
}

}  // namespace bagd::conf
