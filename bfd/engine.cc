#include "bfd/engine.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/udp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <future>
#include <list>
#include <queue>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace bagd::bfd {

namespace asio = boost::asio;
using udp = asio::ip::udp;

EngineMetrics::EngineMetrics(prometheus::Registry& registry)
    : in_(prometheus::BuildCounter()
              .Name("bagd_bfd_packets_received_total")
              .Help("BFD control packets received and used, per session")
              .Register(registry)),
      out_(prometheus::BuildCounter()
               .Name("bagd_bfd_packets_sent_total")
               .Help("BFD control packets sent, per session")
               .Register(registry)),
      dropped_(prometheus::BuildCounter()
                   .Name("bagd_bfd_packets_dropped_total")
                   .Help("BFD packets received and dropped, by reason")
                   .Register(registry)),
      changes_(prometheus::BuildCounter()
                   .Name("bagd_bfd_state_changes_total")
                   .Help("BFD session state changes, by the state entered")
                   .Register(registry)),
      state_(prometheus::BuildGauge()
                 .Name("bagd_bfd_session_state")
                 .Help("BFD session state: 0 AdminDown, 1 Down, 2 Init, 3 Up")
                 .Register(registry)) {}

EngineMetrics::Labels EngineMetrics::Of(const SessionSpec& s) {
  Labels l{{"peer", s.name}};
  if (!s.interface.empty()) {
    l.emplace("interface", s.interface);
    l.emplace("capacity_source", s.capacity_source);
  }
  return l;
}

void EngineMetrics::Forget(const SessionSpec& s) {
  // The state gauge of a removed session would otherwise stay at its last value.
  state_.Remove(&state_.Add(Of(s)));
}

const char* TransportName(Transport t) {
  switch (t) {
    case Transport::kSingleHop:
      return "single-hop";
    case Transport::kMultihop:
      return "multihop";
    case Transport::kMicro:
      return "micro-bfd";
  }
  return "?";
}

namespace {

int64_t NowUs() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int64_t WallMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string Key(const net::IpAddress& peer, Transport t, const std::string& interface) {
  return absl::StrCat(peer.ToString(), "/", TransportName(t), t == Transport::kMicro ? "/" : "",
                      t == Transport::kMicro ? interface : "");
}

std::string Key(const SessionSpec& s) { return Key(s.peer, s.transport(), s.interface); }

socklen_t ToSockaddr(const net::IpAddress& a, uint16_t port, sockaddr_storage& ss) {
  std::memset(&ss, 0, sizeof ss);
  if (a.is_v4()) {
    auto* sin = reinterpret_cast<sockaddr_in*>(&ss);
    sin->sin_family = AF_INET;
    sin->sin_port = htons(port);
    std::memcpy(&sin->sin_addr, a.bytes(), 4);
    return sizeof(sockaddr_in);
  }
  auto* sin6 = reinterpret_cast<sockaddr_in6*>(&ss);
  sin6->sin6_family = AF_INET6;
  sin6->sin6_port = htons(port);
  std::memcpy(&sin6->sin6_addr, a.bytes(), 16);
  return sizeof(sockaddr_in6);
}

std::optional<net::IpAddress> FromSockaddr(const sockaddr_storage& ss) {
  if (ss.ss_family == AF_INET) {
    const auto* sin = reinterpret_cast<const sockaddr_in*>(&ss);
    return net::IpAddress::V4Bytes(reinterpret_cast<const uint8_t*>(&sin->sin_addr));
  }
  if (ss.ss_family == AF_INET6) {
    const auto* sin6 = reinterpret_cast<const sockaddr_in6*>(&ss);
    const auto* b = reinterpret_cast<const uint8_t*>(&sin6->sin6_addr);
    if (IN6_IS_ADDR_V4MAPPED(&sin6->sin6_addr)) return net::IpAddress::V4Bytes(b + 12);
    return net::IpAddress::V6Bytes(b);
  }
  return std::nullopt;
}

std::string Errno(const char* what) { return absl::StrCat(what, ": ", std::strerror(errno)); }

}  // namespace

struct Engine::Impl {
  struct Entry {
    SessionSpec spec;
    Session fsm;
    int fd = -1;  // the session's own sending socket
    uint16_t source_port = 0;
    uint32_t ifindex = 0;  // micro-BFD: the member's, when the socket was bound to it
    // Its place in the timer queue: the deadline queued last and that item's stamp (an
    // item whose stamp is not the entry's is stale).
    int64_t queued_at = kNever;
    uint64_t stamp = 0;
    SessionStatus status;  // the counters and times; the rest is filled by Snapshot
    ~Entry() {
      if (fd >= 0) ::close(fd);
    }
  };
  struct Listener {
    std::unique_ptr<udp::socket> socket;
    Transport transport = Transport::kSingleHop;
    bool v6 = false;
  };

  explicit Impl(EngineOptions o)
      : options(std::move(o)), work(asio::make_work_guard(io)), timer(io), rng(options.seed != 0 ? options.seed
                                                                                                 : std::random_device{}()) {}

  EngineOptions options;
  asio::io_context io;
  asio::executor_work_guard<asio::io_context::executor_type> work;
  asio::steady_timer timer;
  int64_t armed_at_us = kNever;
  bool scanning = false;  // OnTimer's loop: it arms once, at its end
  // Every session's next deadline (min of transmit and detection) in a min-heap, so that a
  // timer tick touches the sessions that are due, not all of them. Items are never removed
  // in place: a rescheduled or removed session leaves a stale item behind (its stamp no
  // longer matches, or its discriminator names no session), skipped when it comes up.
  struct Due {
    int64_t at;
    uint32_t discr;
    uint64_t stamp;
    bool operator>(const Due& o) const { return at > o.at; }
  };
  std::priority_queue<Due, std::vector<Due>, std::greater<Due>> due;
  std::vector<Due> deferred;  // queued while OnTimer runs: due next tick at the earliest
  uint64_t stamps = 0;
  std::mt19937 rng;
  std::list<Listener> listeners;  // stable: each read loop holds its own
  bool micro_listening[2] = {false, false};  // IPv4, IPv6
  absl::flat_hash_map<std::string, std::unique_ptr<Entry>> sessions;
  absl::flat_hash_map<uint32_t, Entry*> by_discr;

  // --- sockets ------------------------------------------------------------------------------

  absl::Status Listen(bool v6, Transport transport) {
    const uint16_t port = transport == Transport::kMultihop ? options.multihop_listen_port
                          : transport == Transport::kMicro  ? options.micro_listen_port
                                                            : options.single_hop_listen_port;
    const int fd = ::socket(v6 ? AF_INET6 : AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      if (v6 && errno == EAFNOSUPPORT) return absl::OkStatus();  // a host without IPv6
      return absl::InternalError(Errno("BFD: socket"));
    }
    const int one = 1;
    // Every session's packets arrive on this one socket (2560 a second for 256 sessions at
    // 100 ms): room for a second of them, so that a late wake-up of this thread loses none.
    const int rcvbuf = 4 << 20;
    if (::setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof rcvbuf) != 0) {
      ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
    }
    if (v6) {
      ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
      ::setsockopt(fd, IPPROTO_IPV6, IPV6_RECVHOPLIMIT, &one, sizeof one);
      ::setsockopt(fd, IPPROTO_IPV6, IPV6_RECVPKTINFO, &one, sizeof one);
    } else {
      ::setsockopt(fd, IPPROTO_IP, IP_RECVTTL, &one, sizeof one);
      ::setsockopt(fd, IPPROTO_IP, IP_PKTINFO, &one, sizeof one);
    }
    sockaddr_storage ss;
    const socklen_t len = ToSockaddr(v6 ? net::IpAddress::V6Bytes(in6addr_any.s6_addr) : net::IpAddress::V4(0), port, ss);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&ss), len) != 0) {
      const std::string e = Errno("bind");
      ::close(fd);
      if (v6 && errno == EADDRNOTAVAIL) return absl::OkStatus();
      return absl::UnavailableError(absl::StrFormat("BFD: cannot listen on UDP port %d (%s): %s", port,
                                                    v6 ? "IPv6" : "IPv4", e));
    }
    Listener l;
    l.socket = std::make_unique<udp::socket>(io);
    boost::system::error_code ec;
    l.socket->assign(v6 ? udp::v6() : udp::v4(), fd, ec);
    if (ec) {
      ::close(fd);
      return absl::InternalError(absl::StrCat("BFD: ", ec.message()));
    }
    l.transport = transport;
    l.v6 = v6;
    listeners.push_back(std::move(l));
    return absl::OkStatus();
  }

  // The micro-BFD port, with the first micro-BFD session (on the engine's thread).
  absl::Status ListenMicro() {
    for (bool v6 : {false, true}) {
      if (micro_listening[v6]) continue;
      if (auto st = Listen(v6, Transport::kMicro); !st.ok()) return st;
      micro_listening[v6] = true;  // or the host has no IPv6
      if (!listeners.empty() && listeners.back().transport == Transport::kMicro && listeners.back().v6 == v6) {
        ReadLoop(listeners.back());
      }
    }
    return absl::OkStatus();
  }

  // RFC 5881 §4: a source port in 49152..65535, the same for the session's life; TTL / hop
  // limit 255 (§5; for multihop RFC 5883 leaves it to us, 255 is what FRR sends too).
  absl::Status OpenSender(Entry& e) {
    if (e.fd >= 0) ::close(e.fd);
    e.fd = -1;
    const bool v6 = e.spec.peer.is_v6();
    const int fd = ::socket(v6 ? AF_INET6 : AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return absl::InternalError(Errno("socket"));
    const int ttl = 255;
    // DSCP CS6 (network control), as routing protocols are sent.
    const int tos = 0xc0;
    if (v6) {
      ::setsockopt(fd, IPPROTO_IPV6, IPV6_UNICAST_HOPS, &ttl, sizeof ttl);
      ::setsockopt(fd, IPPROTO_IPV6, IPV6_TCLASS, &tos, sizeof tos);
    } else {
      ::setsockopt(fd, IPPROTO_IP, IP_TTL, &ttl, sizeof ttl);
      ::setsockopt(fd, IPPROTO_IP, IP_TOS, &tos, sizeof tos);
    }
    if (!e.spec.interface.empty()) {
      // RFC 7130 §2: the member's session goes out on that member and no other.
      if (::setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, e.spec.interface.data(),
                       static_cast<socklen_t>(e.spec.interface.size())) != 0) {
        const std::string err = Errno(absl::StrCat("bind to interface ", e.spec.interface).c_str());
        ::close(fd);
        return absl::UnavailableError(err);
      }
      e.ifindex = ::if_nametoindex(e.spec.interface.c_str());
    }
    const net::IpAddress any = v6 ? net::IpAddress::V6Bytes(in6addr_any.s6_addr) : net::IpAddress::V4(0);
    const net::IpAddress local = e.spec.local.value_or(any);
    const int first = std::uniform_int_distribution<int>(49152, 65535)(rng);
    for (int i = 0; i < 16384; ++i) {
      const uint16_t port = static_cast<uint16_t>(49152 + (first - 49152 + i) % 16384);
      sockaddr_storage ss;
      const socklen_t len = ToSockaddr(local, port, ss);
      if (::bind(fd, reinterpret_cast<sockaddr*>(&ss), len) == 0) {
        e.fd = fd;
        e.source_port = port;
        return absl::OkStatus();
      }
      if (errno != EADDRINUSE) break;
    }
    const std::string err = Errno(absl::StrCat("bind to ", local.ToString()).c_str());
    ::close(fd);
    return absl::UnavailableError(err);
  }

  void Send(Entry& e, const ControlPacket& p) {
    // A member interface that did not exist yet (or was re-created): try again; while the
    // session is not Up this is at most once a second (RFC 5880 §6.8.3).
    if (e.fd < 0 && !e.spec.interface.empty()) {
      if (auto st = OpenSender(e); !st.ok()) e.status.last_error = std::string(st.message());
    }
    if (e.fd < 0) {
      ++e.status.send_errors;
      return;
    }
    const auto bytes = Encode(p);
    sockaddr_storage ss;
    const Transport t = e.spec.transport();
    const uint16_t port = t == Transport::kMultihop ? options.multihop_peer_port
                          : t == Transport::kMicro  ? options.micro_peer_port
                                                    : options.single_hop_peer_port;
    const socklen_t len = ToSockaddr(e.spec.peer, port, ss);
    if (::sendto(e.fd, bytes.data(), bytes.size(), 0, reinterpret_cast<sockaddr*>(&ss), len) < 0) {
      // The path may be gone (no route): the detection timer tells the session, not this.
      const int err = errno;
      ++e.status.send_errors;
      e.status.last_error = Errno("send");
      if (!e.spec.interface.empty() && (err == ENODEV || err == ENXIO)) {
        ::close(e.fd);  // the member is gone: bind again to its next incarnation
        e.fd = -1;
        e.ifindex = 0;
      }
      return;
    }
    ++e.status.packets_out;
    if (options.metrics) options.metrics->PacketsOut(e.spec).Increment();
  }

  void ReadLoop(Listener& l) {
    l.socket->async_wait(udp::socket::wait_read, [this, &l](const boost::system::error_code& ec) {
      if (ec) return;  // closed: the engine is going
      Drain(l);
      ReadLoop(l);
    });
  }

  void Drain(Listener& l) {
    const int fd = l.socket->native_handle();
    for (int n = 0; n < 256; ++n) {  // then let the timers run
      uint8_t buf[512];
      alignas(cmsghdr) uint8_t control[256];
      sockaddr_storage from{};
      iovec iov{buf, sizeof buf};
      msghdr msg{};
      msg.msg_name = &from;
      msg.msg_namelen = sizeof from;
      msg.msg_iov = &iov;
      msg.msg_iovlen = 1;
      msg.msg_control = control;
      msg.msg_controllen = sizeof control;
      const ssize_t got = ::recvmsg(fd, &msg, MSG_DONTWAIT);
      if (got < 0) return;  // EAGAIN: drained
      int ttl = -1;
      uint32_t ifindex = 0;  // the interface it arrived on
      for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
        if ((c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TTL) ||
            (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_HOPLIMIT)) {
          std::memcpy(&ttl, CMSG_DATA(c), sizeof ttl);
        } else if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_PKTINFO) {
          in_pktinfo info;
          std::memcpy(&info, CMSG_DATA(c), sizeof info);
          ifindex = static_cast<uint32_t>(info.ipi_ifindex);
        } else if (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_PKTINFO) {
          in6_pktinfo info;
          std::memcpy(&info, CMSG_DATA(c), sizeof info);
          ifindex = info.ipi6_ifindex;
        }
      }
      const auto source = FromSockaddr(from);
      if (!source) continue;
      Receive(std::span<const uint8_t>(buf, static_cast<size_t>(got)), *source, ttl, l.transport, ifindex);
    }
  }

  void Drop(DropReason r) {
    if (options.metrics) options.metrics->Dropped(r).Increment();
  }

  // A micro-BFD session of `source` on the member `ifindex` (a packet without our
  // discriminator: rare, only while the session comes up).
  Entry* MicroSession(const net::IpAddress& source, uint32_t ifindex) {
    for (auto& [key, e] : sessions) {
      if (e->spec.transport() == Transport::kMicro && e->spec.peer == source && e->ifindex != 0 &&
          e->ifindex == ifindex) {
        return e.get();
      }
    }
    return nullptr;
  }

  void Receive(std::span<const uint8_t> bytes, const net::IpAddress& source, int ttl, Transport transport,
               uint32_t ifindex) {
    DropReason reason;
    auto packet = Decode(bytes, &reason);
    if (!packet.ok()) return Drop(reason);
    // RFC 5881 §5: single hop packets must arrive with TTL / hop limit 255 (GTSM); micro-BFD
    // follows RFC 5881 (RFC 7130 §2).
    if (transport != Transport::kMultihop && ttl != 255) return Drop(DropReason::kBadTtl);
    Entry* e = nullptr;
    if (packet->your_discriminator != 0) {
      auto it = by_discr.find(packet->your_discriminator);
      if (it == by_discr.end()) return Drop(DropReason::kUnknownDiscriminator);
      e = it->second;
      // The discriminator is ours, but from another address, transport or member: not this
      // session.
      if (e->spec.transport() != transport || !(e->spec.peer == source)) {
        return Drop(DropReason::kUnknownDiscriminator);
      }
      if (transport == Transport::kMicro && e->ifindex != ifindex) return Drop(DropReason::kUnknownDiscriminator);
    } else if (transport == Transport::kMicro) {
      e = MicroSession(source, ifindex);
      if (e == nullptr) return Drop(DropReason::kNoSession);
    } else {
      auto it = sessions.find(Key(source, transport, ""));
      if (it == sessions.end()) return Drop(DropReason::kNoSession);
      e = it->second.get();
    }
    if (e->fsm.state == State::kAdminDown) Drop(DropReason::kAdminDown);  // counted, still seen (§6.8.6)
    ++e->status.packets_in;
    if (options.metrics) options.metrics->PacketsIn(e->spec).Increment();
    Run(*e, Event::Receive(*packet, NowUs(), Jitter(*e)));
  }

  // --- stepping -----------------------------------------------------------------------------

  double Jitter(const Entry& e) {
    const auto [lo, hi] = JitterRange(e.fsm.config.detect_mult);
    return std::uniform_real_distribution<double>(lo, hi)(rng);
  }

  void Run(Entry& e, const Event& event) {
    const Output out = StepInPlace(e.fsm, event);
    for (const auto& p : out.send) Send(e, p);
    if (out.transition) Note(e, *out.transition);
    Schedule(e);
  }

  // Queues the session's next deadline (if it moved) and re-arms the timer if it is sooner.
  void Schedule(Entry& e) {
    const int64_t next = std::min(e.fsm.next_tx_us, e.fsm.detect_at_us);
    if (next == e.queued_at) return;
    e.queued_at = next;
    e.stamp = ++stamps;
    if (next == kNever) return;
    const Due d{next, e.fsm.local_discr, e.stamp};
    if (scanning) {
      deferred.push_back(d);
      return;
    }
    due.push(d);
    if (next < armed_at_us) Arm(next);
  }

  Entry* Live(const Due& d) {
    auto it = by_discr.find(d.discr);
    return it != by_discr.end() && it->second->stamp == d.stamp ? it->second : nullptr;
  }

  void Note(Entry& e, const Transition& t) {
    const int64_t now = WallMs();
    e.status.last_change_unix_ms = now;
    if (t.to == State::kUp) e.status.up_since_unix_ms = now;
    if (t.from == State::kUp) {
      e.status.up_since_unix_ms = 0;
      ++e.status.flaps;
    }
    if (options.metrics) {
      options.metrics->StateChanges(e.spec, t.to).Increment();
      options.metrics->SessionState(e.spec).Set(static_cast<double>(t.to));
    }
    if (options.on_change) {
      StateChange c;
      c.name = e.spec.name;
      c.peer = e.spec.peer;
      c.multihop = e.spec.multihop;
      c.interface = e.spec.interface;
      c.capacity_source = e.spec.capacity_source;
      c.transition = t;
      c.unix_ms = now;
      c.local_discr = e.fsm.local_discr;
      c.remote_discr = e.fsm.remote_discr;
      options.on_change(c);
    }
  }

  void Arm(int64_t at_us) {
    armed_at_us = at_us;
    if (at_us == kNever) {
      timer.cancel();
      return;
    }
    const int64_t delay = std::max<int64_t>(0, at_us - NowUs());
    timer.expires_after(std::chrono::microseconds(delay));
    timer.async_wait([this](const boost::system::error_code& ec) {
      if (ec) return;  // re-armed or stopped
      OnTimer();
    });
  }

  void OnTimer() {
    armed_at_us = kNever;
    const int64_t now = NowUs();
    scanning = true;
    while (!due.empty() && due.top().at <= now) {
      const Due d = due.top();
      due.pop();
      Entry* e = Live(d);
      if (e == nullptr) continue;  // rescheduled or removed since
      e->queued_at = kNever;       // popped: the next Schedule queues it again
      if (e->fsm.detect_at_us <= now) Run(*e, Event::Of(EventType::kDetectTimer, now, Jitter(*e)));
      if (e->fsm.next_tx_us <= now) Run(*e, Event::Of(EventType::kTransmitTimer, now, Jitter(*e)));
      Schedule(*e);
    }
    scanning = false;
    for (const Due& d : deferred) due.push(d);
    deferred.clear();
    while (!due.empty() && Live(due.top()) == nullptr) due.pop();
    Arm(due.empty() ? kNever : due.top().at);
  }

  // --- configuration ------------------------------------------------------------------------

  uint32_t NewDiscriminator() {
    // RFC 5880 §6.8.1: nonzero, unique, SHOULD be random.
    for (;;) {
      const uint32_t d = std::uniform_int_distribution<uint32_t>(1, 0xffffffffu)(rng);
      if (!by_discr.contains(d)) return d;
    }
  }

  void Remove(const std::string& key) {
    auto it = sessions.find(key);
    if (it == sessions.end()) return;
    Entry& e = *it->second;
    // Tell the peer it is administrative (RFC 5882 §3.2), so its clients stay up.
    const Output out = StepInPlace(e.fsm, Event::Of(EventType::kAdminDown, NowUs()));
    for (const auto& p : out.send) Send(e, p);
    by_discr.erase(e.fsm.local_discr);
    if (options.metrics) options.metrics->Forget(e.spec);
    sessions.erase(it);
  }

  void Apply(std::vector<SessionSpec> wanted) {
    absl::flat_hash_map<std::string, SessionSpec> want;
    for (auto& s : wanted) {
      if (s.name.empty()) s.name = s.peer.ToString();
      if (!s.interface.empty()) s.multihop = false;
      want.emplace(Key(s), std::move(s));
    }
    std::vector<std::string> gone;
    for (const auto& [key, e] : sessions) {
      if (!want.contains(key)) gone.push_back(key);
    }
    for (const auto& key : gone) Remove(key);
    const int64_t now = NowUs();
    for (auto& [key, spec] : want) {
      auto it = sessions.find(key);
      if (it == sessions.end()) {
        std::string listen_error;
        if (spec.transport() == Transport::kMicro) {
          if (auto st = ListenMicro(); !st.ok()) listen_error = std::string(st.message());
        }
        auto e = std::make_unique<Entry>();
        e->spec = spec;
        e->fsm = NewSession(spec.config, NewDiscriminator(), now);
        if (auto st = OpenSender(*e); !st.ok()) e->status.last_error = std::string(st.message());
        if (!listen_error.empty()) e->status.last_error = listen_error;
        by_discr[e->fsm.local_discr] = e.get();
        if (options.metrics) options.metrics->SessionState(spec).Set(static_cast<double>(e->fsm.state));
        Entry& ref = *e;
        sessions.emplace(key, std::move(e));
        if (spec.admin_down) Run(ref, Event::Of(EventType::kAdminDown, now, Jitter(ref)));
        Schedule(ref);
        continue;
      }
      Entry& e = *it->second;
      const bool new_local = e.spec.local != spec.local;
      const bool admin_changed = e.spec.admin_down != spec.admin_down;
      e.spec = spec;
      if (new_local) {
        if (auto st = OpenSender(e); !st.ok()) e.status.last_error = std::string(st.message());
      }
      if (!(e.fsm.config == spec.config)) Run(e, Event::Configure(spec.config, now, Jitter(e)));
      if (admin_changed) {
        Run(e, Event::Of(spec.admin_down ? EventType::kAdminDown : EventType::kAdminUp, now, Jitter(e)));
      }
    }
  }

  std::vector<SessionStatus> Snapshot() const {
    std::vector<SessionStatus> out;
    for (const auto& [key, e] : sessions) {
      SessionStatus s = e->status;
      s.spec = e->spec;
      s.state = e->fsm.state;
      s.remote_state = e->fsm.remote_state;
      s.local_discr = e->fsm.local_discr;
      s.remote_discr = e->fsm.remote_discr;
      s.local_diag = e->fsm.local_diag;
      s.remote_diag = e->fsm.remote_diag;
      s.tx_interval_us = e->fsm.TxIntervalUs();
      s.detection_time_us = e->fsm.DetectionTimeUs();
      s.remote_min_rx_us = e->fsm.remote_min_rx_us;
      s.remote_desired_min_tx_us = e->fsm.remote_desired_min_tx_us;
      s.remote_detect_mult = e->fsm.remote_detect_mult;
      s.poll_active = e->fsm.poll_active;
      s.source_port = e->source_port;
      out.push_back(std::move(s));
    }
    std::sort(out.begin(), out.end(), [](const SessionStatus& a, const SessionStatus& b) {
      return std::tie(a.spec.capacity_source, a.spec.peer, a.spec.multihop, a.spec.interface) <
             std::tie(b.spec.capacity_source, b.spec.peer, b.spec.multihop, b.spec.interface);
    });
    return out;
  }

  void AdminDownAll() {
    const int64_t now = NowUs();
    for (auto& [key, e] : sessions) {
      const Output out = StepInPlace(e->fsm, Event::Of(EventType::kAdminDown, now));
      for (const auto& p : out.send) Send(*e, p);
    }
  }
};

Engine::Engine(EngineOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}

Engine::~Engine() {
  if (thread_.joinable()) {
    auto done = std::make_shared<std::promise<void>>();
    auto f = done->get_future();
    asio::post(impl_->io, [impl = impl_.get(), done] {
      impl->AdminDownAll();
      done->set_value();
    });
    f.wait_for(std::chrono::seconds(1));
    impl_->work.reset();
    impl_->io.stop();
    thread_.join();
  }
}

absl::Status Engine::Start() {
  for (bool v6 : {false, true}) {
    for (Transport t : {Transport::kSingleHop, Transport::kMultihop}) {
      if (auto st = impl_->Listen(v6, t); !st.ok()) {
        impl_->listeners.clear();
        return st;
      }
    }
  }
  for (auto& l : impl_->listeners) impl_->ReadLoop(l);
  thread_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "bagd-bfd");
    impl_->io.run();
  });
  return absl::OkStatus();
}

void Engine::Apply(std::vector<SessionSpec> wanted) {
  asio::post(impl_->io, [impl = impl_.get(), wanted = std::move(wanted)]() mutable { impl->Apply(std::move(wanted)); });
}

std::vector<SessionStatus> Engine::Snapshot() {
  if (!thread_.joinable()) return impl_->Snapshot();
  auto promise = std::make_shared<std::promise<std::vector<SessionStatus>>>();
  auto f = promise->get_future();
  asio::post(impl_->io, [impl = impl_.get(), promise] { promise->set_value(impl->Snapshot()); });
  if (f.wait_for(std::chrono::seconds(1)) != std::future_status::ready) return {};
  return f.get();
}

}  // namespace bagd::bfd
