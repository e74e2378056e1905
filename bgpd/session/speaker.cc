#include "bgpd/session/speaker.h"

#include <boost/asio/ip/v6_only.hpp>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "bgpd/session/log.h"
#include "bgpd/session/socket_options.h"

namespace bagd::session {

using boost::asio::ip::tcp;

struct Speaker::Listener {
  explicit Listener(boost::asio::io_context& io) : acceptor(io) {}
  tcp::acceptor acceptor;
  tcp::endpoint endpoint;
};

namespace {

absl::StatusOr<uint32_t> RouterId(const std::string& text) {
  auto a = wire::IpAddress::Parse(text);
  if (!a.ok() || !a->is_v4()) return absl::InvalidArgumentError(absl::StrCat("router_id '", text, "' is not an IPv4 address"));
  return a->v4();
}

std::string Canonical(const boost::asio::ip::address& a) {
  if (a.is_v6() && a.to_v6().is_v4_mapped()) {
    return boost::asio::ip::make_address_v4(boost::asio::ip::v4_mapped, a.to_v6()).to_string();
  }
  return a.to_string();
}

}  // namespace

absl::StatusOr<std::vector<PeerConfig>> PeerConfigs(const config::v1::Config& config) {
  std::vector<PeerConfig> out;
  const auto& router = config.router();
  auto rid = RouterId(router.router_id());
  if (!rid.ok()) return rid.status();
  for (const auto& n : config.neighbors()) {
    PeerConfig p;
    auto addr = wire::IpAddress::Parse(n.address());
    if (!addr.ok()) return addr.status();
    p.address = *addr;
    p.port = static_cast<uint16_t>(n.port() ? n.port() : 179);
    if (!n.local_address().empty()) {
      auto la = wire::IpAddress::Parse(n.local_address());
      if (!la.ok()) return la.status();
      p.local_address = *la;
    }
    p.description = n.description();
    p.password = n.password();
    if (!n.password_file().empty()) {
      std::ifstream in(n.password_file());
      if (!in) return absl::NotFoundError(absl::StrCat("cannot read password_file ", n.password_file()));
      std::getline(in, p.password);
    }
    p.ttl_security = static_cast<int>(n.ttl_security());
    p.ebgp_multihop = static_cast<int>(n.ebgp_multihop());
    p.shutdown = n.shutdown();
    p.shutdown_message = n.shutdown_message();
    auto& f = p.fsm;
    f.passive = n.passive();
    f.local.local_as = router.asn();
    f.local.remote_as = n.remote_as();
    f.local.router_id = *rid;
    const auto& t = n.timers();
    f.local.hold_time = static_cast<uint16_t>(
        t.has_hold_time() ? t.hold_time() : (router.has_hold_time() ? router.hold_time() : 90));
    f.local.keepalive = static_cast<uint16_t>(
        t.has_keepalive() ? t.keepalive() : (router.has_keepalive() ? router.keepalive() : 0));
    const uint32_t retry = t.connect_retry() ? t.connect_retry() : router.connect_retry();
    if (retry) f.connect_retry_s = retry;
    f.local.families = {false, false};
    for (int af : n.address_families()) {
      if (af == config::v1::IPV4_UNICAST) f.local.families[0] = true;
      if (af == config::v1::IPV6_UNICAST) f.local.families[1] = true;
    }
    if (n.address_families().empty()) f.local.families[0] = true;
    char host[256] = {};
    if (gethostname(host, sizeof host - 1) == 0) f.local.hostname = host;
    out.push_back(std::move(p));
  }
  return out;
}

Speaker::Speaker(boost::asio::io_context& io, SessionMetrics* metrics) : io_(io), metrics_(metrics) {}
Speaker::~Speaker() = default;

absl::Status Speaker::Configure(const config::v1::Config& config) {
  auto peers = PeerConfigs(config);
  if (!peers.ok()) return peers.status();
  std::vector<std::pair<std::string, uint16_t>> listen;
  for (const auto& l : config.router().listen()) {
    listen.emplace_back(l.address(), static_cast<uint16_t>(l.port() ? l.port() : 179));
  }
  if (listen.empty()) listen = {{"0.0.0.0", 179}, {"::", 179}};
  for (const auto& [address, port] : listen) {
    boost::system::error_code ec;
    const auto a = boost::asio::ip::make_address(address, ec);
    if (ec) return absl::InvalidArgumentError(absl::StrCat("listen address '", address, "': ", ec.message()));
    auto l = std::make_unique<Listener>(io_);
    l->endpoint = tcp::endpoint(a, port);
    l->acceptor.open(l->endpoint.protocol(), ec);
    if (!ec) l->acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
    if (!ec && a.is_v6()) l->acceptor.set_option(boost::asio::ip::v6_only(true), ec);
    if (!ec) l->acceptor.bind(l->endpoint, ec);
    if (!ec) l->acceptor.listen(128, ec);
    if (ec) {
      return absl::UnavailableError(absl::StrCat("cannot listen on [", address, "]:", port, ": ", ec.message()));
    }
    listeners_.push_back(std::move(l));
  }
  for (auto& pc : *peers) {
    // TCP-MD5 keys go on every listener of the peer's family (RFC 2385: the kernel checks SYNs).
    if (!pc.password.empty()) {
      for (auto& l : listeners_) {
        if (l->endpoint.address().is_v6() != pc.address.is_v6()) continue;
        if (auto st = SetTcpMd5(l->acceptor.native_handle(), pc.address, pc.password); !st.ok()) {
          return absl::InternalError(absl::StrCat("neighbor ", pc.Name(), ": TCP-MD5 on the listener: ", st.ToString()));
        }
      }
    }
    auto peer = std::make_unique<Peer>(io_, std::move(pc), metrics_);
    by_address_[peer->config().Name()] = peer.get();
    peers_.push_back(std::move(peer));
  }
  return absl::OkStatus();
}

void Speaker::Start() {
  for (auto& l : listeners_) {
    log::Info("listening on %s", absl::StrCat("[", l->endpoint.address().to_string(), "]:", l->endpoint.port()));
    Accept(*l);
  }
  for (auto& p : peers_) p->Start();
}

void Speaker::Accept(Listener& l) {
  l.acceptor.async_accept([this, &l](const boost::system::error_code& ec, tcp::socket socket) {
    if (ec == boost::asio::error::operation_aborted) return;
    if (!ec) {
      boost::system::error_code e2;
      const auto remote = socket.remote_endpoint(e2);
      Peer* p = e2 ? nullptr : FindPeer(Canonical(remote.address()));
      if (p == nullptr) {
        // Not a configured neighbor: close without a word (no NOTIFICATION to strangers).
        log::Debug("connection from unknown address %s closed", e2 ? "?" : remote.address().to_string());
        socket.close(e2);
      } else {
        p->Accept(std::move(socket));
      }
    } else {
      log::Warning("accept on %s failed: %s", l.endpoint.address().to_string(), ec.message());
    }
    Accept(l);
  });
}

Peer* Speaker::FindPeer(const std::string& address) const {
  auto it = by_address_.find(address);
  return it == by_address_.end() ? nullptr : it->second;
}

void Speaker::Shutdown(const std::string& message, std::chrono::milliseconds grace, std::function<void()> done) {
  for (auto& l : listeners_) {
    boost::system::error_code ec;
    l->acceptor.close(ec);
  }
  const auto cease = wire::NotificationMessage::Shutdown(wire::cease::kAdministrativeShutdown, message);
  for (auto& p : peers_) p->Stop(cease, absl::StrCat("bagd shutting down: ", message));
  // The NOTIFICATIONs are queued on their connections, which flush and close by themselves;
  // give them a moment before the io_context stops.
  shutdown_timer_ = std::make_unique<boost::asio::steady_timer>(io_, grace);
  shutdown_timer_->async_wait([done = std::move(done)](const boost::system::error_code&) { done(); });
}

std::vector<control::v1::NeighborStatus> Speaker::ListNeighbors(const std::string& filter) const {
  std::vector<control::v1::NeighborStatus> out;
  std::string canonical = filter;
  if (auto a = wire::IpAddress::Parse(filter); a.ok()) canonical = a->ToString();
  for (const auto& p : peers_) {
    if (!filter.empty() && p->config().Name() != canonical) continue;
    out.push_back(p->Status());
  }
  return out;
}

absl::Status Speaker::ShutdownNeighbor(const std::string& address, const std::string& message) {
  auto a = wire::IpAddress::Parse(address);
  if (!a.ok()) return a.status();
  Peer* p = FindPeer(a->ToString());
  if (p == nullptr) return absl::NotFoundError(absl::StrCat("no neighbor ", address, " is configured"));
  if (message.size() > 255) return absl::InvalidArgumentError("shutdown message longer than 255 octets (RFC 9003)");
  p->Shutdown(message);
  return absl::OkStatus();
}

absl::Status Speaker::EnableNeighbor(const std::string& address) {
  auto a = wire::IpAddress::Parse(address);
  if (!a.ok()) return a.status();
  Peer* p = FindPeer(a->ToString());
  if (p == nullptr) return absl::NotFoundError(absl::StrCat("no neighbor ", address, " is configured"));
  p->Enable();
  return absl::OkStatus();
}

}  // namespace bagd::session
