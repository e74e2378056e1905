#include "tests/session/session_harness.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/ip/tcp.hpp>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "absl/strings/str_cat.h"
#include "conf/config_loader.h"

namespace bagd::session::testing {

namespace {

void Put16(wire::Bytes& b, uint16_t v) {
  b.push_back(static_cast<uint8_t>(v >> 8));
  b.push_back(static_cast<uint8_t>(v));
}
void Put32(wire::Bytes& b, uint32_t v) {
  Put16(b, static_cast<uint16_t>(v >> 16));
  Put16(b, static_cast<uint16_t>(v));
}

sockaddr_in Loopback(const std::string& address, uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  if (inet_pton(AF_INET, address.c_str(), &a.sin_addr) != 1) throw std::runtime_error("not an IPv4 address: " + address);
  return a;
}

// A listening socket on 127.0.0.1, port chosen by the kernel.
int Listen(uint16_t* port) {
  const int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a = Loopback("127.0.0.1", 0);
  socklen_t len = sizeof a;
  if (bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || listen(s, 16) != 0 ||
      getsockname(s, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    close(s);
    throw std::runtime_error(absl::StrCat("harness listener: ", std::strerror(errno)));
  }
  *port = ntohs(a.sin_port);
  return s;
}

void Reset(int fd) {
  const linger l{1, 0};
  setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
  close(fd);
}

}  // namespace

wire::Bytes Message(uint8_t type, std::span<const uint8_t> body) {
  wire::Bytes m(16, 0xff);
  Put16(m, static_cast<uint16_t>(19 + body.size()));
  m.push_back(type);
  m.insert(m.end(), body.begin(), body.end());
  return m;
}

wire::Bytes Open(uint32_t asn, uint32_t router_id, uint16_t hold_time, std::vector<std::pair<uint16_t, uint8_t>> families,
                 std::span<const uint8_t> extra_caps) {
  wire::Bytes caps;
  for (auto [afi, safi] : families) {
    caps.insert(caps.end(), {1, 4});
    Put16(caps, afi);
    caps.insert(caps.end(), {0, safi});
  }
  caps.insert(caps.end(), {65, 4});
  Put32(caps, asn);
  caps.insert(caps.end(), extra_caps.begin(), extra_caps.end());
  wire::Bytes body{4};
  Put16(body, static_cast<uint16_t>(asn <= 0xffff ? asn : 23456));
  Put16(body, hold_time);
  Put32(body, router_id);
  body.push_back(static_cast<uint8_t>(caps.size() + 2));
  body.push_back(2);
  body.push_back(static_cast<uint8_t>(caps.size()));
  body.insert(body.end(), caps.begin(), caps.end());
  return Message(1, body);
}

wire::Bytes Keepalive() { return Message(4, {}); }

wire::Bytes Update(uint32_t asn, uint32_t next_hop, std::vector<std::pair<uint8_t, uint8_t>> prefixes,
                   std::span<const uint8_t> extra_attrs, std::span<const uint8_t> withdrawn) {
  wire::Bytes attrs{0x40, 1, 1, 0, 0x40, 2, 6, 2, 1};
  Put32(attrs, asn);
  attrs.insert(attrs.end(), {0x40, 3, 4});
  Put32(attrs, next_hop);
  attrs.insert(attrs.end(), extra_attrs.begin(), extra_attrs.end());
  if (prefixes.empty()) attrs.clear();  // a pure withdrawal carries no attributes
  wire::Bytes body;
  Put16(body, static_cast<uint16_t>(withdrawn.size()));
  body.insert(body.end(), withdrawn.begin(), withdrawn.end());
  Put16(body, static_cast<uint16_t>(attrs.size()));
  body.insert(body.end(), attrs.begin(), attrs.end());
  for (auto [a, b] : prefixes) body.insert(body.end(), {24, 10, a, b});
  return Message(2, body);
}

std::string SessionHarness::WithListen(std::string_view config) const {
  std::string text(config);
  const size_t router = text.find("router {");
  if (router == std::string::npos) throw std::runtime_error("config without router { }");
  text.insert(router + 8, absl::StrCat(" listen { address: \"127.0.0.1\" port: ", port_, " } "));
  return text;
}

absl::Status SessionHarness::Reload(std::string_view config) {
  conf::LoadedConfig loaded = conf::ParseConfig(WithListen(config), "harness.textproto");
  if (!loaded.ok()) return absl::InvalidArgumentError(loaded.errors.front().message);
  absl::Status st = speaker_->Reload(loaded.config);
  Run();
  return st;
}

SessionHarness::SessionHarness(std::string_view config, rib::FibSink* fib, fsm::RestartState restart,
                               SessionMetrics* metrics, control::EventSink* events) {
  // The speaker listens on a free loopback port; a probed port can be taken by another
  // process before the speaker binds it, so a few tries.
  for (int attempt = 0;; ++attempt) {
    const int probe = Listen(&port_);
    close(probe);
    conf::LoadedConfig loaded = conf::ParseConfig(WithListen(config), "harness.textproto");
    if (!loaded.ok()) throw std::runtime_error(absl::StrCat("harness config: ", loaded.errors.front().message));
    daemon::SpeakerOptions options;
    options.clock = &clock_;
    options.fib = fib;
    options.restart = restart;
    options.session_metrics = metrics;
    options.events = events;
    speaker_ = std::make_unique<Speaker>(io_, options);
    const absl::Status st = speaker_->Configure(loaded.config);
    if (st.ok()) break;
    speaker_.reset();
    if (attempt == 9 || !absl::IsUnavailable(st)) throw std::runtime_error(st.ToString());
  }
  speaker_->Start();
  Run();
}

SessionHarness::~SessionHarness() {
  for (auto& [fd, end] : ends_) Reset(fd);
  Run();
  speaker_.reset();
  Run();  // completions of what the speaker closed
}

int SessionHarness::Connect(const std::string& neighbor) {
  if (speaker_->FindPeer(neighbor) == nullptr) throw std::runtime_error(absl::StrCat("no neighbor ", neighbor));
  const int ours = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in from = Loopback(neighbor, 0);
  sockaddr_in to = Loopback("127.0.0.1", port_);
  // On loopback the handshake completes inside connect() (the listen backlog); the
  // speaker's accept runs in Run(), as it would in the daemon.
  if (bind(ours, reinterpret_cast<sockaddr*>(&from), sizeof from) != 0 ||
      connect(ours, reinterpret_cast<sockaddr*>(&to), sizeof to) != 0) {
    close(ours);
    throw std::runtime_error(absl::StrCat("connect from ", neighbor, ": ", std::strerror(errno)));
  }
  fcntl(ours, F_SETFL, fcntl(ours, F_GETFL) | O_NONBLOCK);
  // No Nagle: a small message written while the previous one is not yet acknowledged would
  // wait for bagd's (delayed) ACK, up to 40 ms, and Run() would see nothing to read.
  const int one = 1;
  setsockopt(ours, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  ends_[ours] = End{};
  Run();
  return ours;
}

void SessionHarness::Write(int fd, std::span<const uint8_t> bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = send(fd, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
    if (n > 0) {
      done += static_cast<size_t>(n);
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      Pump(fd);  // our receive side may be what blocks bagd from reading
      Run();
    } else {
      return;  // bagd closed it
    }
  }
  Run();
}

void SessionHarness::Pump(int fd) {
  End& e = ends_[fd];
  uint8_t buf[65536];
  while (true) {
    const ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n > 0) {
      e.in.insert(e.in.end(), buf, buf + n);
    } else {
      if (n == 0) e.eof = true;
      return;
    }
  }
}

std::vector<std::pair<uint8_t, wire::Bytes>> SessionHarness::Read(int fd) {
  Run();
  Pump(fd);
  End& e = ends_[fd];
  std::vector<std::pair<uint8_t, wire::Bytes>> out;
  size_t pos = 0;
  while (e.in.size() - pos >= 19) {
    const size_t len = (size_t{e.in[pos + 16]} << 8) | e.in[pos + 17];
    if (len < 19 || e.in.size() - pos < len) break;
    out.emplace_back(e.in[pos + 18], wire::Bytes(e.in.begin() + pos + 19, e.in.begin() + pos + len));
    pos += len;
  }
  e.in.erase(e.in.begin(), e.in.begin() + pos);
  return out;
}

bool SessionHarness::PeerClosed(int fd) {
  Run();
  Pump(fd);
  return ends_[fd].eof;
}

void SessionHarness::Close(int fd, bool reset) {
  if (!ends_.erase(fd)) return;
  if (reset) {
    Reset(fd);
  } else {
    close(fd);
  }
  Run();
}

void SessionHarness::Run() {
  // poll() returns once nothing is ready; handlers may post more, so go on until a pass
  // runs nothing.
  for (int i = 0; i < 100000; ++i) {
    io_.restart();
    if (io_.poll() == 0) return;
  }
}

void SessionHarness::Advance(int64_t ms) {
  Run();
  // Step from expiry to expiry so the daemon runs between timers as it would.
  const int64_t until = clock_.SteadyMs() + ms;
  while (auto due = clock_.NextDueMs()) {
    if (*due > until) break;
    clock_.Advance(*due - clock_.SteadyMs());
    Run();
  }
  clock_.Advance(until - clock_.SteadyMs());
  Run();
}

}  // namespace bagd::session::testing
