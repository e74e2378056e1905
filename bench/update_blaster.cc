// update_blaster: a BGP speaker that does nothing but send a pre-encoded stream of IPv4
// UPDATEs as fast as the peer reads it, for the ingest benchmark (bench/ingest_compare.py).
//
//   update_blaster --local ADDR --peer ADDR[:PORT] --asn N --router-id A --prefixes N
//                  [--offset K] [--per-message 1|packed] [--next-hop ADDR] [--link-bandwidth GBPS] [--base A.B.C.D]
//                  [--hold S] [--wait-signal] [--listen] [--no-eor] [--expect-received N]
//                  [--reannounce-link-bandwidth GBPS [--reannounce-prefixes N]]
//
// Before connecting, every UPDATE is encoded into one contiguous buffer with bagd's codec:
// N IPv4 /24s starting at base + offset*256 (default base 20.0.0.0), ORIGIN IGP, AS_PATH
// [asn], NEXT_HOP (default: the local address). "packed" puts as many /24s as fit into each
// 4096-octet UPDATE (extended messages are not offered), "1" sends one prefix per UPDATE.
// The stream ends with an IPv4 End-of-RIB unless --no-eor.
//
// Session: connect from --local to --peer (or, with --listen, accept the peer's connection
// on --local:PORT), OPEN with 4-octet AS and MP IPv4 unicast, hold time 180 s. Once
// Established the stream is written (non-blocking writes of up to 1 MiB under poll(), 8 MiB
// socket buffers); with --wait-signal only after SIGUSR1. Afterwards the session stays up with
// KEEPALIVEs until SIGTERM/SIGINT (then Cease/Administrative Shutdown). Everything the peer
// sends is read and decoded cheaply: the IPv4 prefixes it currently announces are counted, so
// the tool is also a sink (e.g. --listen --prefixes 0).
//
// --reannounce-link-bandwidth GBPS pre-encodes a second stream: the same prefixes again with
// that link bandwidth (no End-of-RIB), written on SIGUSR2 once the first is out: a LAG behind
// this peer lost members (bench/reweight_bench.py). SIGUSR2 again re-sends the first stream's
// bandwidth, and so on, alternating. --reannounce-prefixes N: only the first N prefixes.
//
// Events go to stdout, one JSON object per line, flushed; "t" is CLOCK_MONOTONIC seconds
// (the same clock as Python's time.monotonic()):
//   {"event":"encoded",...} {"event":"established",...} {"event":"first_byte","t":...}
//   {"event":"last_byte","t":...,"bytes":...} {"event":"received_all","t":...} {"event":"exit",...}
//   {"event":"reannounce_first_byte","t":...,"round":N} {"event":"reannounce_last_byte","t":...,"round":N}
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "bgpd/fsm/negotiation.h"
#include "wire/message.h"
#include "wire/link_bandwidth.h"
#include "wire/update_packer.h"

namespace {

using bagd::wire::Bytes;

volatile sig_atomic_t g_go = 0;
volatile sig_atomic_t g_stop = 0;
volatile sig_atomic_t g_reannounce = 0;  // SIGUSR2s received

void OnSigusr1(int) { g_go = 1; }
void OnSigusr2(int) { g_reannounce = g_reannounce + 1; }
void OnStop(int) { g_stop = 1; }

double Mono() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}
double Real() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

[[noreturn]] void Die(const std::string& why) {
  std::printf("{\"event\":\"error\",\"t\":%.6f,\"message\":\"%s\"}\n", Mono(), why.c_str());
  std::fflush(stdout);
  std::fprintf(stderr, "update_blaster: %s\n", why.c_str());
  std::exit(1);
}

void Usage() {
  std::fprintf(stderr,
               "usage: update_blaster --local ADDR --peer ADDR[:PORT] --asn N --router-id A --prefixes N\n"
               "       [--offset K] [--per-message 1|packed] [--next-hop ADDR] [--link-bandwidth GBPS] [--base A.B.C.D] [--hold S]\n"
               "       [--wait-signal] [--listen] [--no-eor] [--expect-received N] [--reannounce-link-bandwidth GBPS]\n");
  std::exit(2);
}

struct Options {
  std::string local;
  std::string peer;
  uint16_t port = 179;
  uint32_t asn = 0;
  std::string router_id;
  uint64_t prefixes = 0;
  uint64_t offset = 0;
  bool packed = true;
  std::string next_hop;
  double link_bandwidth_bps = 0;  // > 0: every route carries this link bandwidth (RFC 10005)
  double reannounce_bps = 0;      // > 0: a second stream with this link bandwidth, on SIGUSR2
  uint64_t reannounce_prefixes = 0;  // > 0: the second stream has only the first N prefixes
  std::string base = "20.0.0.0";
  uint16_t hold = 180;
  bool wait_signal = false;
  bool listen = false;
  bool eor = true;
  uint64_t expect_received = 0;
};

uint64_t ParseUint(std::string_view flag, const char* v) {
  char* end = nullptr;
  errno = 0;
  unsigned long long x = std::strtoull(v, &end, 10);
  if (errno != 0 || end == v || *end != '\0') Die(std::string("bad number for ") + std::string(flag) + ": " + v);
  return x;
}

Options ParseArgs(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) Usage();
      return argv[++i];
    };
    if (a == "--local") {
      o.local = value();
    } else if (a == "--peer") {
      std::string p = value();
      // ADDR, ADDR:PORT (IPv4) or [ADDR]:PORT (IPv6).
      if (!p.empty() && p[0] == '[') {
        auto close = p.find(']');
        if (close == std::string::npos) Die("bad --peer " + p);
        if (close + 1 < p.size() && p[close + 1] == ':')
          o.port = static_cast<uint16_t>(ParseUint("--peer port", p.c_str() + close + 2));
        o.peer = p.substr(1, close - 1);
      } else if (std::count(p.begin(), p.end(), ':') == 1) {
        auto colon = p.find(':');
        o.port = static_cast<uint16_t>(ParseUint("--peer port", p.c_str() + colon + 1));
        o.peer = p.substr(0, colon);
      } else {
        o.peer = p;
      }
    } else if (a == "--asn") {
      o.asn = static_cast<uint32_t>(ParseUint(a, value()));
    } else if (a == "--router-id") {
      o.router_id = value();
    } else if (a == "--prefixes") {
      o.prefixes = ParseUint(a, value());
    } else if (a == "--offset") {
      o.offset = ParseUint(a, value());
    } else if (a == "--per-message") {
      std::string_view v = value();
      if (v == "packed") {
        o.packed = true;
      } else if (v == "1") {
        o.packed = false;
      } else {
        Die("--per-message takes 1 or packed");
      }
    } else if (a == "--next-hop") {
      o.next_hop = value();
    } else if (a == "--link-bandwidth") {
      // Gbit/s, as BAG peers advertise their capacity ("100" for 100G).
      o.link_bandwidth_bps = static_cast<double>(ParseUint("--link-bandwidth", value())) * 1e9;
    } else if (a == "--reannounce-link-bandwidth") {
      o.reannounce_bps = static_cast<double>(ParseUint("--reannounce-link-bandwidth", value())) * 1e9;
      if (o.reannounce_bps <= 0) Die("--reannounce-link-bandwidth must be > 0");
    } else if (a == "--reannounce-prefixes") {
      o.reannounce_prefixes = ParseUint(a, value());
    } else if (a == "--base") {
      o.base = value();
    } else if (a == "--hold") {
      o.hold = static_cast<uint16_t>(ParseUint(a, value()));
    } else if (a == "--wait-signal") {
      o.wait_signal = true;
    } else if (a == "--listen") {
      o.listen = true;
    } else if (a == "--no-eor") {
      o.eor = false;
    } else if (a == "--expect-received") {
      o.expect_received = ParseUint(a, value());
    } else {
      Usage();
    }
  }
  if (o.local.empty() || o.peer.empty() || o.asn == 0 || o.router_id.empty()) Usage();
  if (o.next_hop.empty()) o.next_hop = o.local;
  return o;
}

uint32_t ParseV4(const std::string& s, const char* what) {
  in_addr a{};
  if (inet_pton(AF_INET, s.c_str(), &a) != 1) Die(std::string("bad IPv4 address for ") + what + ": " + s);
  return ntohl(a.s_addr);
}

// --- the pre-encoded stream -------------------------------------------------------------

Bytes EndOfRib() {
  Bytes m(16, 0xff);
  m.insert(m.end(), {0, 23, 2, 0, 0, 0, 0});
  return m;
}

struct Stream {
  Bytes bytes;
  uint64_t messages = 0;
};

Stream Encode(const Options& o, double link_bandwidth_bps, bool eor) {
  using namespace bagd::wire;
  using namespace bagd::net;
  Stream s;
  const uint64_t base = ParseV4(o.base, "--base");
  if (o.prefixes > 0) {
    const uint64_t last = base + ((o.offset + o.prefixes - 1) << 8);
    if (last > 0xffffff00ULL) Die("prefixes run past 255.255.255.0");
    PathAttributes attrs;
    attrs.origin = Origin::kIgp;
    attrs.as_path = AsPath{{AsPathSegment{AsSegmentType::kSequence, {o.asn}}}};
    attrs.next_hop = IpAddress::V4(ParseV4(o.next_hop, "--next-hop"));
    if (link_bandwidth_bps > 0) {  // transitive, the sender's 2-octet AS (RFC 10005 §3)
      attrs.extended_communities.push_back(
          LinkBandwidth::FromBitsPerSecond(o.asn & 0xffff, link_bandwidth_bps, true).ToExtendedCommunity());
    }
    CodecContext ctx;  // 4-octet AS, 4096-octet messages, no ADD-PATH
    auto nlri_at = [&](uint64_t i) {
      const uint32_t v = static_cast<uint32_t>(base + ((o.offset + i) << 8));
      const uint8_t b[4] = {static_cast<uint8_t>(v >> 24), static_cast<uint8_t>(v >> 16),
                            static_cast<uint8_t>(v >> 8), static_cast<uint8_t>(v)};
      return Nlri{Prefix::Make(Afi::kIpv4, b, 24), 0};
    };
    if (o.packed) {
      std::vector<Nlri> nlri;
      nlri.reserve(o.prefixes);
      for (uint64_t i = 0; i < o.prefixes; ++i) nlri.push_back(nlri_at(i));
      auto msgs = PackAnnouncements(attrs, Family::kIpv4Unicast, nlri, ctx);
      if (!msgs.ok()) Die("PackAnnouncements: " + std::string(msgs.status().message()));
      size_t total = 0;
      for (const auto& m : *msgs) total += m.size();
      s.bytes.reserve(total + 23);
      for (const auto& m : *msgs) s.bytes.insert(s.bytes.end(), m.begin(), m.end());
      s.messages = msgs->size();
    } else {
      // One message encoded by the codec, then copied with the 3 prefix octets patched.
      const Nlri first = nlri_at(0);
      auto msgs = PackAnnouncements(attrs, Family::kIpv4Unicast, std::span<const Nlri>(&first, 1), ctx);
      if (!msgs.ok() || msgs->size() != 1) Die("PackAnnouncements failed for one prefix");
      const Bytes& tmpl = msgs->front();
      const size_t n = tmpl.size();
      if (n < 4 || tmpl[n - 4] != 24) Die("unexpected template layout");
      s.bytes.resize(n * o.prefixes);
      uint8_t* p = s.bytes.data();
      for (uint64_t i = 0; i < o.prefixes; ++i, p += n) {
        std::memcpy(p, tmpl.data(), n);
        const uint32_t v = static_cast<uint32_t>(base + ((o.offset + i) << 8));
        p[n - 3] = static_cast<uint8_t>(v >> 24);
        p[n - 2] = static_cast<uint8_t>(v >> 16);
        p[n - 1] = static_cast<uint8_t>(v >> 8);
      }
      s.messages = o.prefixes;
    }
  }
  if (eor) {
    Bytes eor = EndOfRib();
    s.bytes.insert(s.bytes.end(), eor.begin(), eor.end());
    ++s.messages;
  }
  return s;
}

// --- socket helpers ---------------------------------------------------------------------

struct SockAddr {
  sockaddr_storage ss{};
  socklen_t len = 0;
  int family = AF_INET;
};

SockAddr MakeAddr(const std::string& addr, uint16_t port) {
  SockAddr a;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&a.ss);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&a.ss);
  if (inet_pton(AF_INET, addr.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(port);
    a.len = sizeof(sockaddr_in);
    a.family = AF_INET;
  } else if (inet_pton(AF_INET6, addr.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(port);
    a.len = sizeof(sockaddr_in6);
    a.family = AF_INET6;
  } else {
    Die("bad address " + addr);
  }
  return a;
}

void SetBuffers(int fd) {
  int big = 8 << 20;
  setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
  setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
}

int Connect(const Options& o) {
  const SockAddr local = MakeAddr(o.local, 0), peer = MakeAddr(o.peer, o.port);
  for (int attempt = 0;; ++attempt) {
    int fd = socket(peer.family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) Die(std::string("socket: ") + std::strerror(errno));
    SetBuffers(fd);
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, reinterpret_cast<const sockaddr*>(&local.ss), local.len) != 0)
      Die("bind " + o.local + ": " + std::strerror(errno));
    if (connect(fd, reinterpret_cast<const sockaddr*>(&peer.ss), peer.len) == 0) return fd;
    const int err = errno;
    close(fd);
    // The daemon may still be starting: retry for up to ~30 s.
    if (g_stop || attempt >= 300 || (err != ECONNREFUSED && err != ETIMEDOUT && err != EHOSTUNREACH &&
                                     err != ENETUNREACH && err != ECONNRESET)) {
      Die("connect " + o.peer + ": " + std::strerror(err));
    }
    usleep(100 * 1000);
  }
}

int Accept(const Options& o) {
  const SockAddr local = MakeAddr(o.local, o.port), peer = MakeAddr(o.peer, 0);
  int lfd = socket(local.family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (lfd < 0) Die(std::string("socket: ") + std::strerror(errno));
  int one = 1;
  setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  SetBuffers(lfd);  // inherited by the accepted socket
  if (bind(lfd, reinterpret_cast<const sockaddr*>(&local.ss), local.len) != 0)
    Die("bind " + o.local + ": " + std::strerror(errno));
  if (listen(lfd, 4) != 0) Die(std::string("listen: ") + std::strerror(errno));
  for (;;) {
    sockaddr_storage from{};
    socklen_t flen = sizeof from;
    int fd = accept4(lfd, reinterpret_cast<sockaddr*>(&from), &flen, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR && !g_stop) continue;
      Die(std::string("accept: ") + std::strerror(errno));
    }
    char text[INET6_ADDRSTRLEN] = {};
    if (from.ss_family == AF_INET) {
      inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(&from)->sin_addr, text, sizeof text);
    } else {
      inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(&from)->sin6_addr, text, sizeof text);
    }
    // Only the configured peer; compare canonical text forms.
    const SockAddr want = peer;
    char wtext[INET6_ADDRSTRLEN] = {};
    if (want.family == AF_INET) {
      inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&want.ss)->sin_addr, wtext, sizeof wtext);
    } else {
      inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&want.ss)->sin6_addr, wtext, sizeof wtext);
    }
    if (std::strcmp(text, wtext) != 0) {
      close(fd);
      continue;
    }
    close(lfd);
    return fd;
  }
}

void WriteAllBlocking(int fd, const Bytes& b) {
  size_t off = 0;
  while (off < b.size()) {
    ssize_t n = write(fd, b.data() + off, b.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      Die(std::string("write: ") + std::strerror(errno));
    }
    off += static_cast<size_t>(n);
  }
}

// --- the session ------------------------------------------------------------------------

class Session {
 public:
  Session(const Options& o, int fd) : o_(o), fd_(fd) {}

  // Reads whole messages from the buffer; returns false when the peer closed.
  bool Fill(bool blocking) {
    if (rbuf_.size() - rlen_ < (1 << 20)) rbuf_.resize(rlen_ + (2 << 20));
    for (;;) {
      ssize_t n = read(fd_, rbuf_.data() + rlen_, rbuf_.size() - rlen_);
      if (n > 0) {
        rlen_ += static_cast<size_t>(n);
        return true;
      }
      if (n == 0) return false;
      if (errno == EINTR) {
        if (g_stop) return true;
        continue;
      }
      if (!blocking && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
      Die(std::string("read: ") + std::strerror(errno));
    }
  }

  // The next whole message in the buffer (header included), if any.
  std::optional<bagd::wire::ByteSpan> Next() {
    const size_t avail = rlen_ - rpos_;
    if (avail < 19) return std::nullopt;
    const uint8_t* p = rbuf_.data() + rpos_;
    const size_t len = (size_t{p[16]} << 8) | p[17];
    if (len < 19 || len > 65535) Die("bad message length from peer");
    if (avail < len) return std::nullopt;
    rpos_ += len;
    return bagd::wire::ByteSpan(p, len);
  }

  void Compact() {
    if (rpos_ == 0) return;
    std::memmove(rbuf_.data(), rbuf_.data() + rpos_, rlen_ - rpos_);
    rlen_ -= rpos_;
    rpos_ = 0;
  }

  // Handshake (blocking): OPEN both ways, KEEPALIVE both ways.
  bagd::fsm::Negotiated Handshake() {
    bagd::fsm::LocalSettings local;
    local.local_as = o_.asn;
    local.router_id = ParseV4(o_.router_id, "--router-id");
    local.remote_as = 0;  // accept whatever AS the daemon has
    local.hold_time = o_.hold;
    local.families = {true, false};
    local.extended_message = false;  // 4096-octet UPDATEs, as packed
    local.route_refresh = true;
    bagd::wire::CodecContext ctx;
    auto open = bagd::wire::EncodeMessage(bagd::fsm::BuildOpen(local), ctx);
    if (!open.ok()) Die("cannot encode OPEN");
    WriteAllBlocking(fd_, *open);
    std::optional<bagd::fsm::Negotiated> neg;
    bool keepalive_seen = false;
    while (!neg || !keepalive_seen) {
      if (g_stop) Die("stopped during the handshake");
      if (!Fill(true)) Die("peer closed the connection during the handshake");
      while (auto m = Next()) {
        const uint8_t type = (*m)[18];
        if (type == 1) {
          auto d = bagd::wire::DecodeMessage(*m, ctx);
          if (!d.ok()) Die("bad OPEN from peer: " + d.error().reason);
          auto r = bagd::fsm::Negotiate(local, std::get<bagd::wire::OpenMessage>(d.value()));
          if (auto* n = std::get_if<bagd::wire::NotificationMessage>(&r)) {
            Die("OPEN refused: " + bagd::wire::DescribeNotification(n->code, n->subcode));
          }
          neg = std::get<bagd::fsm::Negotiated>(r);
          if (!neg->four_octet_as) Die("peer did not offer 4-octet AS");
          if (!neg->families[0]) Die("peer did not agree to IPv4 unicast");
          Bytes ka(16, 0xff);
          ka.insert(ka.end(), {0, 19, 4});
          WriteAllBlocking(fd_, ka);
        } else if (type == 4) {
          if (neg) keepalive_seen = true;
        } else if (type == 3) {
          HandleNotification(*m);
        } else if (type == 2) {
          HandleUpdate(*m);
        }
      }
      Compact();
    }
    return *neg;
  }

  void HandleNotification(bagd::wire::ByteSpan m) {
    const uint8_t code = m.size() > 19 ? m[19] : 0, sub = m.size() > 20 ? m[20] : 0;
    Die("NOTIFICATION from peer: " + bagd::wire::DescribeNotification(code, sub));
  }

  // Counts the IPv4 prefixes the peer currently announces (NLRI and Withdrawn fields only).
  void HandleUpdate(bagd::wire::ByteSpan m) {
    ++updates_received_;
    size_t pos = 19;
    auto rd16 = [&](size_t at) { return static_cast<size_t>((m[at] << 8) | m[at + 1]); };
    if (m.size() < 23) return;
    const size_t wlen = rd16(pos);
    pos += 2;
    if (pos + wlen + 2 > m.size()) return;
    Walk(m.subspan(pos, wlen), false);
    pos += wlen;
    const size_t alen = rd16(pos);
    pos += 2;
    if (pos + alen > m.size()) return;
    pos += alen;
    Walk(m.subspan(pos), true);
  }

  void Walk(bagd::wire::ByteSpan field, bool announce) {
    size_t i = 0;
    while (i < field.size()) {
      const uint8_t len = field[i];
      const size_t nb = (len + 7) / 8;
      if (len > 32 || i + 1 + nb > field.size()) return;
      uint32_t v = 0;
      for (size_t k = 0; k < nb; ++k) v |= uint32_t{field[i + 1 + k]} << (24 - 8 * k);
      const uint64_t key = (uint64_t{v} << 8) | len;
      if (announce) {
        received_.insert(key);
      } else {
        received_.erase(key);
      }
      i += 1 + nb;
    }
  }

  // `again`: the re-announcement stream (--reannounce-link-bandwidth), or null.
  int Run(const Stream& initial, const Stream* again) {
    const Stream* cur = &initial;
    int round = 0;  // re-announcements started
    const bagd::fsm::Negotiated neg = Handshake();
    std::printf("{\"event\":\"established\",\"t\":%.6f,\"peer_as\":%u,\"hold\":%u,\"keepalive\":%u}\n", Mono(),
                neg.peer_as, neg.hold_time, neg.keepalive);
    std::fflush(stdout);
    fcntl(fd_, F_SETFL, fcntl(fd_, F_GETFL) | O_NONBLOCK);
    size_t woff = 0;
    Bytes pending;  // keepalives / notification, written only between stream runs
    size_t poff = 0;
    double first = 0, last = 0;
    bool stream_done = cur->bytes.empty();
    if (stream_done) {
      std::printf("{\"event\":\"last_byte\",\"t\":%.6f,\"bytes\":0,\"messages\":0}\n", Mono());
      std::fflush(stdout);
    }
    const double keepalive = neg.keepalive > 0 ? neg.keepalive : 0;
    double next_keepalive = keepalive > 0 ? Mono() + keepalive : 1e300;
    bool expect_reported = false;
    bool stopping = false;
    for (;;) {
      if (g_stop && !stopping) {
        if (last_rx_ > 0) max_rx_gap_ = std::max(max_rx_gap_, Mono() - last_rx_);
        stopping = true;
        auto n = bagd::wire::EncodeMessage(
            bagd::wire::NotificationMessage::Shutdown(2, "update_blaster stopping"), bagd::wire::CodecContext{});
        if (n.ok()) {
          // Drop whatever of the stream is unsent, but finish a partly written message first.
          pending.clear();
          poff = 0;
          if (stream_done || woff == 0) pending = *n;
        }
        if (!stream_done && woff > 0) break;  // mid-message: just close
      }
      if (again != nullptr && stream_done && !stopping && g_reannounce > round && poff == pending.size()) {
        // The next re-announcement: the new bandwidth, then the first one again, alternating.
        ++round;
        cur = round % 2 == 1 ? again : &initial;
        woff = 0;
        stream_done = false;
      }
      const bool go = !o_.wait_signal || g_go;
      const bool want_stream = go && !stream_done && !stopping;
      const bool want_pending = poff < pending.size();
      if (stopping && !want_pending) break;
      pollfd pfd{fd_, POLLIN, 0};
      if (want_stream || want_pending) pfd.events |= POLLOUT;
      const double now = Mono();
      int timeout_ms = 200;
      if (next_keepalive - now < 0.2) timeout_ms = std::max(0, static_cast<int>((next_keepalive - now) * 1000));
      int r = poll(&pfd, 1, timeout_ms);
      if (r < 0 && errno != EINTR) Die(std::string("poll: ") + std::strerror(errno));
      if (r > 0 && (pfd.revents & (POLLIN | POLLHUP | POLLERR))) {
        if (!Fill(false)) {
          if (stopping) break;
          Die("peer closed the connection");
        }
        const double rx = Mono();
        while (auto m = Next()) {
          // The peer's hold timer restarts with every message (RFC 4271 §6.5): the longest
          // silence is what a keepalive late because the daemon was busy looks like.
          if (last_rx_ > 0 && !stopping) max_rx_gap_ = std::max(max_rx_gap_, rx - last_rx_);
          last_rx_ = rx;
          const uint8_t type = (*m)[18];
          if (type == 2) {
            HandleUpdate(*m);
          } else if (type == 3) {
            HandleNotification(*m);
          }
        }
        Compact();
        if (o_.expect_received > 0 && !expect_reported && received_.size() >= o_.expect_received) {
          expect_reported = true;
          std::printf("{\"event\":\"received_all\",\"t\":%.6f,\"prefixes\":%zu}\n", Mono(), received_.size());
          std::fflush(stdout);
        }
      }
      if (r > 0 && (pfd.revents & POLLOUT)) {
        if (want_pending) {
          ssize_t n = write(fd_, pending.data() + poff, pending.size() - poff);
          if (n > 0) poff += static_cast<size_t>(n);
          if (poff == pending.size()) {
            pending.clear();
            poff = 0;
          }
        } else if (want_stream) {
          const size_t chunk = std::min<size_t>(cur->bytes.size() - woff, 1 << 20);
          const double t = Mono();
          ssize_t n = write(fd_, cur->bytes.data() + woff, chunk);
          if (n > 0) {
            if (woff == 0) {
              first = t;
              if (round == 0) {
                std::printf("{\"event\":\"first_byte\",\"t\":%.6f,\"realtime\":%.6f}\n", first, Real());
              } else {
                std::printf("{\"event\":\"reannounce_first_byte\",\"t\":%.6f,\"realtime\":%.6f,\"round\":%d}\n",
                            first, Real(), round);
              }
              std::fflush(stdout);
            }
            woff += static_cast<size_t>(n);
            if (woff == cur->bytes.size()) {
              stream_done = true;
              last = Mono();
              std::printf(
                  "{\"event\":\"%s\",\"t\":%.6f,\"bytes\":%zu,\"messages\":%llu,\"seconds\":%.6f,"
                  "\"mbytes_per_s\":%.1f,\"round\":%d}\n",
                  round == 0 ? "last_byte" : "reannounce_last_byte", last, cur->bytes.size(), static_cast<unsigned long long>(cur->messages), last - first,
                  cur->bytes.size() / std::max(1e-9, last - first) / 1e6, round);
              std::fflush(stdout);
              next_keepalive = keepalive > 0 ? last + keepalive : 1e300;
            }
          } else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
            Die(std::string("write: ") + std::strerror(errno));
          }
        }
      }
      // KEEPALIVEs only at message boundaries: while the stream is being written the
      // UPDATEs themselves restart the peer's hold timer.
      if (Mono() >= next_keepalive) {
        if ((stream_done || woff == 0) && !stopping) {
          pending.insert(pending.end(), 16, 0xff);
          pending.insert(pending.end(), {0, 19, 4});
        }
        next_keepalive = Mono() + keepalive;
      }
    }
    std::printf("{\"event\":\"exit\",\"t\":%.6f,\"updates_received\":%llu,\"prefixes_received\":%zu,"
                "\"max_rx_gap_s\":%.3f,\"keepalive_s\":%.0f}\n", Mono(),
                static_cast<unsigned long long>(updates_received_), received_.size(), max_rx_gap_, keepalive);
    std::fflush(stdout);
    close(fd_);
    return 0;
  }

 private:
  const Options& o_;
  int fd_;
  Bytes rbuf_;
  size_t rlen_ = 0, rpos_ = 0;
  uint64_t updates_received_ = 0;
  double last_rx_ = 0;      // when the last message from the peer was read
  double max_rx_gap_ = 0;   // the longest time between two of them (after Established)
  absl::flat_hash_set<uint64_t> received_;
};

}  // namespace

int main(int argc, char** argv) {
  const Options o = ParseArgs(argc, argv);
  struct sigaction sa{};
  sa.sa_handler = OnSigusr1;
  sigaction(SIGUSR1, &sa, nullptr);
  sa.sa_handler = OnSigusr2;
  sigaction(SIGUSR2, &sa, nullptr);
  sa.sa_handler = OnStop;
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);

  const double t0 = Mono();
  const Stream stream = Encode(o, o.link_bandwidth_bps, o.eor);
  std::optional<Stream> again;
  if (o.reannounce_bps > 0) {
    Options part = o;
    if (o.reannounce_prefixes > 0) part.prefixes = std::min(o.prefixes, o.reannounce_prefixes);
    again = Encode(part, o.reannounce_bps, /*eor=*/false);
  }
  std::printf("{\"event\":\"encoded\",\"t\":%.6f,\"prefixes\":%llu,\"messages\":%llu,\"bytes\":%zu,\"seconds\":%.3f}\n",
              Mono(), static_cast<unsigned long long>(o.prefixes), static_cast<unsigned long long>(stream.messages),
              stream.bytes.size(), Mono() - t0);
  std::fflush(stdout);
  const int fd = o.listen ? Accept(o) : Connect(o);
  Session s(o, fd);
  return s.Run(stream, again ? &*again : nullptr);
}
