// bagd: the BGP daemon.
//
//   bagd --config FILE [--check] [--dry-run] [--socket PATH] [--metrics-listen [ADDR:]PORT] [--log-level LEVEL]
//   bagd --version | --help
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include <prometheus/exposer.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "bgpd/control/control_server.h"
#include "bgpd/control/event_hub.h"
#include "bgpd/daemon/bfd_stage.h"
#include "bgpd/daemon/capacity_stage.h"
#include "bgpd/daemon/control_adapter.h"
#include "bgpd/daemon/fib_metrics.h"
#include "bgpd/daemon/fib_stage.h"
#include "bgpd/daemon/routing_metrics.h"
#include "bgpd/daemon/service_notify.h"
#include "bgpd/session/clock.h"
#include "bgpd/session/log.h"
#include "bgpd/version.h"
#include "bgpd/session/metrics.h"
#include "bgpd/session/process_metrics.h"
#include "bgpd/daemon/speaker.h"
#include "conf/config_defaults.h"
#include "conf/config_loader.h"
#include "conf/config_reload.h"
#include "conf/control_group.h"
#include "conf/metrics_listen.h"
#include "fib_sync/netlink_backend.h"
#include "fib_sync/recording_backend.h"
#include "fib_sync/sonic/appldb_backend.h"
#include "fib_sync/sonic/kernel_interfaces.h"
#include "bgpd/daemon/appldb_driver.h"
#include "bgpd/daemon/mrt_stage.h"

#ifdef BAGD_HAVE_CIVETWEB
#include <civetweb.h>
#endif

namespace {

// Whether the metrics HTTP server can listen on IPv6 (civetweb's feature 8; Debian 12 builds
// it without). Unknown: assume yes and let the bind fail.
bool MetricsServerHasIpv6() {
#ifdef BAGD_HAVE_CIVETWEB
  return mg_check_feature(8) != 0;
#else
  return true;
#endif
}

constexpr const char* kUsage = R"(usage: bagd --config FILE [options]

  --config FILE            configuration (Protobuf text format, or JSON); see docs/config.md
  --check                  validate the configuration, print file:line:col errors, exit
  --dry-run                run everything but install nothing: FIB operations are logged
  --socket PATH            control API socket (default /run/bagd/bagd.sock)
  --metrics-listen A:P     serve Prometheus metrics on http://A:P/metrics (default: off);
                           a bare port binds 127.0.0.1 only, e.g. 0.0.0.0:9180 or [::]:9180
                           serves every address
  --log-level LEVEL        error, warning, info (default), debug
  --log-format FORMAT      text (time, level, message), journal (<priority>message, for
                           journald), json (one object per line with fields), auto (default:
                           journal when stderr is systemd's journal stream, else text)
  --version                the version and the git commit it was built from
  --help                   this text

Under systemd (Type=notify) bagd reports READY=1 once its listeners and control socket are
up, RELOADING=1 around a SIGHUP, and sends WATCHDOG=1 when WatchdogSec is set (bagd(8)).
)";

struct Options {
  enum class Exit { kNo, kHelp, kVersion };
  Exit exit = Exit::kNo;  // print something and exit 0
  std::string config;
  bool check = false;
  bool dry_run = false;
  std::string socket = "/run/bagd/bagd.sock";
  std::string metrics_listen;
  std::string log_level;
  std::string log_format = "auto";
};

std::optional<Options> ParseArgs(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](std::string& out) {
      if (i + 1 >= argc) return false;
      out = argv[++i];
      return true;
    };
    if (a == "--config" && value(o.config)) continue;
    if (a == "--check") {
      o.check = true;
      continue;
    }
    if (a == "--dry-run") {
      o.dry_run = true;
      continue;
    }
    if (a == "--socket" && value(o.socket)) continue;
    if (a == "--metrics-listen" && value(o.metrics_listen)) continue;
    if (a == "--log-level" && value(o.log_level)) continue;
    if (a == "--log-format" && value(o.log_format)) {
      if (!bagd::log::ParseFormat(o.log_format, nullptr)) {
        std::cerr << "bagd: --log-format: '" << o.log_format << "' is not text, journal, json or auto\n";
        return std::nullopt;
      }
      continue;
    }
    if (a == "--help" || a == "-h") {
      o.exit = Options::Exit::kHelp;
      return o;
    }
    if (a == "--version") {
      o.exit = Options::Exit::kVersion;
      return o;
    }
    std::cerr << "bagd: bad argument '" << a << "'\n" << kUsage;
    return std::nullopt;
  }
  if (o.config.empty()) {
    std::cerr << "bagd: --config is required\n" << kUsage;
    return std::nullopt;
  }
  return o;
}

bagd::log::Level LevelFrom(const std::string& s, int config_level) {
  if (s == "error") return bagd::log::Level::kError;
  if (s == "warning") return bagd::log::Level::kWarning;
  if (s == "debug") return bagd::log::Level::kDebug;
  if (s == "trace") return bagd::log::Level::kTrace;
  if (s.empty() && config_level >= 1 && config_level <= 5) return static_cast<bagd::log::Level>(config_level);
  return bagd::log::Level::kInfo;
}

// The FIB backend the config asks for; nullptr: install nothing.
absl::StatusOr<std::unique_ptr<bagd::fib::FibBackend>> MakeFibBackend(const bagd::config::v1::Config& config,
                                                                     bool dry_run) {
  namespace v1 = bagd::config::v1;
  if (dry_run) {
    // Every operation is accepted and logged, nothing is installed.
    class LoggingBackend : public bagd::fib::RecordingBackend {
     public:
      std::vector<absl::Status> Apply(std::span<const bagd::fib::FibOp> ops) override {
        for (const auto& op : ops) bagd::log::Info("dry-run fib: %s", bagd::fib::Describe(op));
        return RecordingBackend::Apply(ops);
      }
    };
    return std::unique_ptr<bagd::fib::FibBackend>(std::make_unique<LoggingBackend>());
  }
  switch (config.fib().backend()) {
    case v1::Fib::BACKEND_NONE:
      return std::unique_ptr<bagd::fib::FibBackend>();
    case v1::Fib::BACKEND_NETLINK: {
      bagd::fib::NetlinkOptions o;
      const auto& f = config.fib();
      o.table = f.kernel_table();
      o.protocol = static_cast<uint8_t>(f.kernel_protocol() ? f.kernel_protocol() : bagd::conf::kDefaultKernelProtocol);
      o.resilient = f.group_type() == v1::Fib::GROUP_TYPE_RESILIENT;
      o.buckets = static_cast<uint16_t>(f.resilient_buckets() ? f.resilient_buckets() : bagd::conf::kDefaultResilientBuckets);
      o.idle_timer_s = f.has_resilient_idle_timer() ? f.resilient_idle_timer() : bagd::conf::kDefaultResilientIdleTimer;
      o.unbalanced_timer_s = f.resilient_unbalanced_timer();
      auto b = bagd::fib::NetlinkBackend::Open(o);
      if (!b.ok()) return absl::UnavailableError(absl::StrCat("fib: kernel backend: ", b.status().message()));
      bagd::log::Info("fib: kernel backend, table %d, protocol %d, %s groups, %d-bit weights", o.table, o.protocol,
                      o.resilient ? "resilient" : "hash-threshold",
                      (*b)->weight_width() == bagd::fib::netlink::WeightWidth::k16Bit ? 16 : 8);
      return std::unique_ptr<bagd::fib::FibBackend>(std::move(*b));
    }
    case v1::Fib::BACKEND_SONIC_APPLDB: {
      const auto& f = config.fib();
      bagd::fib::sonic::AppldbOptions o;
      if (!f.appldb_address().empty()) {
        auto a = bagd::fib::sonic::ParseRedisTcpAddress(f.appldb_address());
        if (!a.ok()) return absl::InvalidArgumentError(absl::StrCat("fib.appldb_address: ", a.status().message()));
        o.address = *a;
      } else {
        o.address.unix_socket = f.appldb_socket();  // defaulted to /var/run/redis/redis.sock
      }
      o.protocol = f.appldb_protocol().empty() ? std::string(bagd::conf::kDefaultAppldbProtocol) : f.appldb_protocol();
      o.confirm = f.confirm() == v1::Fib::CONFIRM_RESPONSE_CHANNEL;
      o.confirm_timeout = std::chrono::seconds(f.has_confirm_timeout() ? f.confirm_timeout()
                                                                        : bagd::conf::kDefaultAppldbConfirmTimeout);
      o.pop_batch = f.has_appldb_pop_batch() ? f.appldb_pop_batch() : bagd::conf::kDefaultAppldbPopBatch;
      o.route_path = f.appldb_route_path() == v1::Fib::ROUTE_PATH_ZMQ     ? bagd::fib::sonic::AppldbOptions::RoutePath::kZmq
                     : f.appldb_route_path() == v1::Fib::ROUTE_PATH_REDIS ? bagd::fib::sonic::AppldbOptions::RoutePath::kRedis
                                                                          : bagd::fib::sonic::AppldbOptions::RoutePath::kAuto;
      if (!f.appldb_zmq_endpoint().empty()) o.zmq_endpoint = f.appldb_zmq_endpoint();
      // ifname per next hop: the kernel's connected interfaces (SONiC's netdevs carry the port names).
      auto interfaces = bagd::fib::sonic::KernelInterfaces::Open();
      if (!interfaces.ok()) return absl::UnavailableError(absl::StrCat("fib: APPL_DB backend: ", interfaces.status().message()));
      std::shared_ptr<bagd::fib::sonic::KernelInterfaces> kernel = std::move(*interfaces);
      auto b = bagd::fib::sonic::AppldbBackend::Open(
          o, [kernel](const bagd::net::IpAddress& gw) { return kernel->Towards(gw); }, nullptr);
      if (!b.ok()) return absl::Status(b.status().code(), absl::StrCat("fib: APPL_DB backend: ", b.status().message()));
      for (const std::string& p : (*b)->TakeProblems()) bagd::log::Warning("fib appldb: %s", p);
      bagd::log::Info("fib: SONiC APPL_DB backend on redis %s, routes over %s (%s), marked protocol %s, "
                      "confirmation %s, MAX_NEXTHOP_GROUP_COUNT %s",
                      o.address.ToString(), (*b)->route_path(), (*b)->route_path_reason(), o.protocol,
                      o.confirm ? absl::StrCat("by the response channel within ", o.confirm_timeout.count() / 1000, " s")
                                : std::string("off"),
                      (*b)->max_groups() ? absl::StrCat((*b)->max_groups()) : std::string("not published"));
      return std::unique_ptr<bagd::fib::FibBackend>(std::move(*b));
    }
    default:
      return absl::UnimplementedError(absl::StrCat("fib backend ", v1::Fib::Backend_Name(config.fib().backend()),
                                                   " is not available in this build; use BACKEND_NONE or --dry-run"));
  }
}

// A reload's result for WatchEvents (ConfigEvent).
bagd::control::v1::Event ConfigEvent(const char* source, const std::string& path, bool applied,
                                     const std::vector<std::string>& errors,
                                     const std::vector<std::string>& needs_restart) {
  bagd::control::v1::Event out;
  auto& c = *out.mutable_config();
  c.set_source(source);
  c.set_path(path);
  c.set_applied(applied);
  for (const auto& e : errors) c.add_errors(e);
  for (const auto& n : needs_restart) c.add_needs_restart(n);
  return out;
}

// control.group (conf/bagd.proto Control) as the control server takes it; nullopt: none.
absl::StatusOr<std::optional<gid_t>> ControlGroup(const bagd::config::v1::Config& config) {
  if (config.control().group().empty()) return std::optional<gid_t>();
  auto gid = bagd::conf::LookupGroup(config.control().group());
  if (!gid.ok()) return absl::Status(gid.status().code(), absl::StrCat("control.group: ", gid.status().message()));
  return std::optional<gid_t>(*gid);
}

// What a table dump needs beyond the RIB: our router id, and per RIB peer index the time
// its session came up (the paths' Originated Time) and whether it sends ADD-PATH path ids.
bagd::mrt::RibDumpOptions MrtDumpOptions(const bagd::daemon::Speaker& speaker) {
  bagd::mrt::RibDumpOptions o;
  o.view_name = "bagd";
  if (auto id = bagd::net::IpAddress::Parse(speaker.config().router().router_id()); id.ok() && id->is_v4()) {
    o.collector_bgp_id = id->v4();
  }
  const bagd::rib::Rib& rib = speaker.rib();
  o.peers.resize(rib.peer_count());
  for (size_t i = 0; i < rib.peer_count(); ++i) {
    const auto* peer = speaker.PeerForRibIndex(static_cast<bagd::rib::PeerIndex>(i));
    if (peer == nullptr) continue;
    if (peer->established_since_ms() > 0) {
      o.peers[i].originated_time = static_cast<uint32_t>(peer->established_since_ms() / 1000);
    }
    if (peer->negotiated()) o.peers[i].add_path = peer->negotiated()->add_path_receive;
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  auto opts = ParseArgs(argc, argv);
  if (!opts) return 2;
  if (opts->exit == Options::Exit::kHelp) {
    std::cout << kUsage;
    return 0;
  }
  if (opts->exit == Options::Exit::kVersion) {
    std::cout << bagd::VersionLine("bagd") << "\n";
    return 0;
  }
  if (opts->check) return bagd::conf::CheckConfig(opts->config, std::cout);
  bagd::log::SetFormat(*bagd::log::ParseFormat(opts->log_format, std::getenv("JOURNAL_STREAM")));

  boost::asio::io_context io;
  // The signal handlers first, before any work that can take long (reading the FIB of a
  // previous run: seconds for 500k routes). Until now SIGHUP's default action, termination,
  // was in force. A signal that arrives before the event loop runs is queued by the
  // signal_set and handled once bagd has started: a reload is then applied, a SIGTERM or
  // SIGINT shuts the started daemon down in the usual way.
  boost::asio::signal_set signals(io, SIGTERM, SIGINT, SIGHUP);

  // A regular file only (conf/config_loader.h: ConfigSource): it is read again on SIGHUP.
  auto loaded = bagd::conf::LoadConfigFile(opts->config);
  if (!loaded.ok()) {
    for (const auto& e : loaded.errors) std::cerr << e.ToString() << "\n";
    return 1;
  }
  bagd::log::SetLevel(LevelFrom(opts->log_level, loaded.config.router().log_level()));
  bagd::log::Info("%s", bagd::VersionLine("bagd"));
  // systemd's notify protocol ($NOTIFY_SOCKET), when bagd runs as a Type=notify service.
  bagd::session::AsioClock service_clock(io);
  auto notifier = bagd::daemon::ServiceNotifier::FromEnvironment();
  if (!notifier.ok()) {
    bagd::log::Error("systemd: %s", notifier.status().message());
    return 1;
  }

  auto registry = std::make_shared<prometheus::Registry>();
  // One registry, the series of each part by its own class: the sessions', the routing
  // path's (RIB, routing core, weights stage), the FIB sync's (present without a FIB too, at 0).
  bagd::session::SessionMetrics session_metrics(registry);
  session_metrics.SetBuildInfo(bagd::kVersion, bagd::kGitDescribe);
  bagd::daemon::RoutingMetrics routing_metrics(registry);
  bagd::daemon::FibMetrics fib_metrics(registry);
  auto process_metrics = std::make_shared<bagd::session::ProcessCollector>();
  std::unique_ptr<prometheus::Exposer> exposer;
  if (!opts->metrics_listen.empty()) {
    // civetweb binds every address for a bare port: bagd binds what is written, and a bare
    // port on loopback only (conf/metrics_listen.h).
    const auto listen = bagd::conf::ParseMetricsListen(opts->metrics_listen);
    if (!listen.ok()) {
      bagd::log::Error("%s", listen.status().message());
      return 1;
    }
    if (listen->v6 && !MetricsServerHasIpv6()) {
      bagd::log::Error("--metrics-listen %s: the HTTP server this bagd is built with (civetweb) has no IPv6 support; "
                       "use an IPv4 address, e.g. 127.0.0.1:%d",
                       opts->metrics_listen, listen->port);
      return 1;
    }
    try {
      exposer = std::make_unique<prometheus::Exposer>(listen->HostPort());
      exposer->RegisterCollectable(registry);
      exposer->RegisterCollectable(process_metrics);
      if (listen->port_only) {
        bagd::log::Info("metrics on http://%s/metrics (loopback only: --metrics-listen %s is a bare port; write "
                        "0.0.0.0:%d or [::]:%d to serve other hosts)",
                        listen->HostPort(), opts->metrics_listen, listen->port, listen->port);
      } else {
        bagd::log::Info("metrics on http://%s/metrics", listen->HostPort());
      }
    } catch (const std::exception& e) {
      bagd::log::Error("cannot serve metrics on %s: %s", listen->HostPort(), e.what());
      return 1;
    }
  }

  // WatchEvents: the stages publish here, the control API's streams subscribe. Closed once
  // the event loop has ended, so the streams end before the control server stops.
  bagd::control::EventHub events;

  // The FIB backend first: its capabilities (8- or 16-bit weights) bound the weights, and
  // the speaker's weights stage is built with it as its sink.
  std::unique_ptr<bagd::daemon::FibStage> fib;
  std::unique_ptr<bagd::daemon::AppldbDriver> appldb;  // destroyed before `fib`, which owns its backend
  bagd::daemon::SpeakerOptions speaker_options;
  speaker_options.session_metrics = &session_metrics;
  speaker_options.routing_metrics = &routing_metrics;
  speaker_options.events = &events;
  {
    auto backend = MakeFibBackend(loaded.config, opts->dry_run);
    if (!backend.ok()) {
      bagd::log::Error("%s", backend.status().message());
      return 1;
    }
    if (*backend) {
      speaker_options.fib_max_weight = (*backend)->Capabilities().max_weight;
      speaker_options.fib_max_groups = (*backend)->Capabilities().max_groups;
      auto* kernel = dynamic_cast<bagd::fib::NetlinkBackend*>(backend->get());
      auto* appldb_backend = dynamic_cast<bagd::fib::sonic::AppldbBackend*>(backend->get());
      bagd::daemon::FibStageOptions fib_options;
      fib_options.startup_hold = std::chrono::seconds(loaded.config.fib().restart_hold_time());
      fib_options.audit_interval = std::chrono::seconds(loaded.config.fib().audit_interval());
      fib_options.metrics = &fib_metrics;
      fib_options.events = &events;
      fib = std::make_unique<bagd::daemon::FibStage>(io, std::move(*backend), fib_options);
      if (kernel) fib->WatchEvents(kernel->event_fd(), [kernel] { kernel->ReadEvents(); });
      if (auto st = fib->Start(); !st.ok()) {
        bagd::log::Error("fib: %s", st.ToString());
        return 1;
      }
      speaker_options.fib = fib.get();
      if (appldb_backend) {
        appldb = std::make_unique<bagd::daemon::AppldbDriver>(io, *appldb_backend, registry);
        appldb->Start();
      }
      // Graceful restart (RFC 4724 §4.1): bagd restarted with its routes still in the kernel.
      speaker_options.restart.restarting = fib->found_previous_run();
      for (int f = 0; f < bagd::net::kFamilyCount; ++f) {
        speaker_options.restart.forwarding_preserved[f] = fib->previous_routes()[f] > 0;
      }
    }
  }
  bagd::daemon::Speaker speaker(io, speaker_options);
  if (auto st = speaker.Configure(loaded.config); !st.ok()) {
    bagd::log::Error("%s", st.ToString());
    return 1;
  }
  // Live capacity: the starting values are read before the speaker originates anything.
  std::unique_ptr<bagd::daemon::CapacityStage> capacity;
  if (loaded.config.capacity_sources_size() > 0) {
    auto sources = bagd::daemon::CapacitySources(loaded.config);
    if (!sources.ok()) {
      bagd::log::Error("%s", sources.status().message());
      return 1;
    }
    capacity = std::make_unique<bagd::daemon::CapacityStage>(io, speaker, std::move(*sources));
    if (auto st = capacity->Start(); !st.ok()) {
      bagd::log::Error("capacity: %s", st.ToString());
      return 1;
    }
  }
  // BFD (docs/bfd.md): the neighbors' sessions on the engine's own thread; their changes act
  // on the Peers on this thread. Before Start, so that hold_bgp_until_up neighbors wait.
  bagd::daemon::BfdStage bfd(io, speaker, registry.get(), &events);
  bfd.SetCapacity(capacity.get());  // micro-BFD (RFC 7130) on the capacity sources' members
  if (auto st = bfd.Apply(loaded.config); !st.ok()) {
    bagd::log::Error("%s", st.message());
    return 1;
  }
  // MRT (docs/mrt.md): `bagctl dump mrt`, the periodic table dumps and the updates log.
  bagd::session::AsioClock mrt_clock(io);
  bagd::daemon::MrtStage::Options mrt_options;
  mrt_options.clock = &mrt_clock;
  mrt_options.post = [&io](std::function<void()> f) { boost::asio::post(io, std::move(f)); };
  mrt_options.rib = [&speaker]() -> const bagd::rib::Rib& { return speaker.rib(); };
  mrt_options.dump_options = [&speaker] { return MrtDumpOptions(speaker); };
  mrt_options.registry = registry;
  auto mrt = std::make_unique<bagd::daemon::MrtStage>(std::move(mrt_options));
  speaker.SetMrtTap(mrt.get());
  mrt->Configure(loaded.config.mrt());
  bagd::daemon::ControlAdapter::Options adapter_options;
  adapter_options.dump_mrt = [&mrt](const std::string& path,
                                    std::function<void(const bagd::daemon::MrtDumpResult&)> done) {
    mrt->DumpTable(path, std::move(done));
  };
  adapter_options.neighbor_ribs = &speaker;
  adapter_options.bfd = &bfd;
  adapter_options.config_path = opts->config;
  std::unique_ptr<bagd::control::ControlServer> control;
  // control.group as the running configuration has it now (after a reload that applied).
  // fib.audit_interval as the running configuration has it now.
  auto apply_fib_settings = [&] {
    if (fib) fib->SetAuditInterval(std::chrono::seconds(speaker.config().fib().audit_interval()));
  };
  auto apply_control_group = [&]() -> std::vector<std::string> {
    auto group = ControlGroup(speaker.config());
    absl::Status st = group.ok() ? control->SetGroup(*group) : group.status();
    if (st.ok()) {
      return {};
    }
    bagd::log::Error("control API: %s; the socket keeps its previous group and mode", st.message());
    return {std::string(st.message())};
  };
  adapter_options.on_reloaded = [&](const bagd::control::v1::ReloadConfigResponse& r) {
    std::vector<std::string> errors(r.errors().begin(), r.errors().end());
    if (r.applied()) {
      apply_fib_settings();
      if (auto st = bfd.Apply(speaker.config()); !st.ok()) errors.push_back(std::string(st.message()));
      mrt->Configure(speaker.config().mrt());
      for (auto& e : apply_control_group()) errors.push_back(std::move(e));
    }
    events.Publish(ConfigEvent("control API", r.path(), r.applied(), errors,
                               {r.needs_restart().begin(), r.needs_restart().end()}));
    (*notifier)->Ready(r.applied() ? absl::StrCat("reloaded (control API); ", speaker.neighbor_count(), " neighbors")
                                   : "the last reload was rejected (see the log); running the previous configuration");
  };
  if (appldb) adapter_options.annotate_group = [&appldb](bagd::control::v1::NextHopGroup& g) { appldb->Annotate(g); };
  bagd::daemon::ControlAdapter adapter(io, speaker, std::move(adapter_options));
  {
    auto group = ControlGroup(loaded.config);
    if (!group.ok()) {
      bagd::log::Error("%s", group.status().message());
      return 1;
    }
    bagd::control::ControlServerOptions control_options;
    control_options.events = &events;
    control_options.group = *group;
    auto started_control = bagd::control::ControlServer::Start(opts->socket, &adapter, control_options);
    if (!started_control.ok()) {
      bagd::log::Error("control API: %s", started_control.status().ToString());
      return 1;
    }
    control = *std::move(started_control);
    if (*group) {
      bagd::log::Info("control API: members of group %s may use %s read-only", loaded.config.control().group(),
                      opts->socket);
    }
  }
  bagd::log::Info("bagd started: AS %d, router id %s, %d neighbors, control socket %s",
                  loaded.config.router().asn(), loaded.config.router().router_id(), speaker.neighbor_count(),
                  opts->socket);
  speaker.Start();
  // Listeners accept and the control socket serves: the service is up.
  (*notifier)->Ready(absl::StrCat("AS ", loaded.config.router().asn(), ", ", speaker.neighbor_count(), " neighbors"));
  (*notifier)->StartWatchdog(service_clock);

  // SIGHUP: a worker thread reads, parses and validates the file (conf/config_reload.h); the
  // event thread, which keeps every session's timers, only applies the result. A config with
  // errors, or a path that is not a regular file any more, is rejected whole, and the
  // running configuration stays.
  bool started = false;   // the event loop has run past start-up
  bool stopping = false;  // SIGTERM/SIGINT: no reload is applied any more
  bagd::conf::ConfigReloader reloader(
      opts->config, [&io](std::function<void()> f) { boost::asio::post(io, std::move(f)); },
      [&](bagd::conf::LoadedConfig reloaded) {
        if (stopping) return;
        std::vector<std::string> restart;
        if (!reloaded.ok()) {
          bagd::log::Error("SIGHUP: %s has %d %s; keeping the running configuration", opts->config,
                           reloaded.errors.size(), reloaded.errors.size() == 1 ? "error" : "errors");
          std::vector<std::string> errors;
          for (const auto& e : reloaded.errors) {
            bagd::log::Error("SIGHUP: %s", e.ToString());
            errors.push_back(e.ToString());
          }
          events.Publish(ConfigEvent("SIGHUP", opts->config, false, errors, {}));
          (*notifier)->Ready("the last reload was rejected (see the log); running the previous configuration");
        } else if (auto st = speaker.Reload(reloaded.config, &restart); !st.ok()) {
          bagd::log::Error("SIGHUP: %s; keeping the running configuration", st.message());
          events.Publish(ConfigEvent("SIGHUP", opts->config, false, {std::string(st.message())}, {}));
          (*notifier)->Ready("the last reload was rejected (see the log); running the previous configuration");
        } else {
          bagd::log::Info("SIGHUP: %s reloaded", opts->config);
          apply_fib_settings();
          if (auto st = bfd.Apply(speaker.config()); !st.ok()) bagd::log::Error("SIGHUP: %s", st.message());
          mrt->Configure(speaker.config().mrt());
          events.Publish(ConfigEvent("SIGHUP", opts->config, true, apply_control_group(), restart));
          (*notifier)->Ready(absl::StrCat("reloaded; ", speaker.neighbor_count(), " neighbors"));
        }
      });

  std::function<void(const boost::system::error_code&, int)> on_signal;
  on_signal = [&](const boost::system::error_code& ec, int sig) {
    if (ec) return;
    if (sig == SIGHUP) {
      if (stopping) {
        bagd::log::Info("SIGHUP: ignored, bagd is shutting down");
      } else {
        bagd::log::Info("SIGHUP: reading %s%s", opts->config,
                        started ? "" : " (the signal arrived during start-up)");
        (*notifier)->Reloading();
        reloader.Request();
      }
      signals.async_wait(on_signal);
      return;
    }
    if (stopping) return;
    stopping = true;
    (*notifier)->Stopping();
    bagd::log::Info("%s: sending Cease to every neighbor and exiting", sig == SIGTERM ? "SIGTERM" : "SIGINT");
    mrt->Stop();  // the updates file is closed and renamed with what it has
    speaker.Shutdown("bagd is shutting down", std::chrono::milliseconds(1000), [&] {
      if (fib && loaded.config.fib().has_retain_on_exit() && !loaded.config.fib().retain_on_exit()) {
        bagd::log::Info("fib: retain_on_exit is false: removing bagd's routes and groups");
        fib->RemoveAll();
      }
      io.stop();
    });
  };
  // A signal that arrived during start-up is waiting in the signal_set's pipe: poll() lets
  // the reactor read it and runs its handler (and whatever else is ready) while `started`
  // is still false, so the log can say so. (There is always work: the signal wait.)
  signals.async_wait(on_signal);
  io.poll();
  started = true;
  io.run();
  // Before the control server stops: a DumpMrt call still waiting gets its answer (the
  // stage drops its callback), and the writer thread finishes what was queued.
  speaker.SetMrtTap(nullptr);
  mrt.reset();
  events.Close("bagd is shutting down");
  control->Stop();
  bagd::log::Info("bagd stopped");
  return 0;
}
