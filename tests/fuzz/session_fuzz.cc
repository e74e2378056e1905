// Fuzz target: whole sessions through the session layer and the routing core, on a manual
// clock (tests/session/session_harness.h). The input is a script for two neighbors (one
// eBGP, one iBGP or eBGP): connect, OPENs with fuzzed capabilities and hold times, then
// UPDATE / ROUTE-REFRESH / NOTIFICATION / KEEPALIVE messages with fuzzed bodies, raw bytes
// (framing errors), clock jumps (hold, keepalive, MRAI, hold-down timers), and closes or
// resets at any point. After every step: a neighbor that is not Established holds no path
// in the RIB. At the end the whole speaker is destroyed with whatever is pending; ASan,
// UBSan and LeakSanitizer do the rest.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bgpd/session/log.h"
#include "tests/session/session_harness.h"

using namespace bagd::session;
using namespace bagd::session::testing;

namespace {

class Script {
 public:
  Script(const uint8_t* data, size_t size) : p_(data), end_(data + size) {}
  bool empty() const { return p_ >= end_; }
  uint8_t u8() { return empty() ? 0 : *p_++; }
  uint16_t u16() { return static_cast<uint16_t>(u8() << 8 | u8()); }
  std::vector<uint8_t> bytes(size_t n) {
    n = std::min<size_t>(n, static_cast<size_t>(end_ - p_));
    std::vector<uint8_t> b(p_, p_ + n);
    p_ += n;
    return b;
  }

 private:
  const uint8_t* p_;
  const uint8_t* end_;
};

struct Neighbor {
  std::string address;
  uint32_t asn;
  int fd = -1;
};

std::vector<uint8_t> Capabilities(uint8_t f, Script& s) {
  std::vector<uint8_t> c;
  if (f & 0x01) c.insert(c.end(), {2, 0});                 // route refresh
  if (f & 0x02) c.insert(c.end(), {70, 0});                // enhanced route refresh
  if (f & 0x04) c.insert(c.end(), {6, 0});                 // extended message
  if (f & 0x08) c.insert(c.end(), {69, 4, 0, 1, 1, static_cast<uint8_t>(1 + s.u8() % 3)});  // ADD-PATH v4
  if (f & 0x10) c.insert(c.end(), {64, 2, static_cast<uint8_t>(s.u8() & 0xc0), 120});      // graceful restart
  if (f & 0x20) {                                           // a fuzzed capability TLV
    const uint8_t code = s.u8(), len = s.u8() % 16;
    c.push_back(code);
    c.push_back(len);
    auto v = s.bytes(len);
    v.resize(len);
    c.insert(c.end(), v.begin(), v.end());
  }
  return c;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool quiet = [] {
    // BAGD_FUZZ_LOG=1 shows what an input does (the daemon's log at debug level).
    bagd::log::SetLevel(std::getenv("BAGD_FUZZ_LOG") ? bagd::log::Level::kDebug : static_cast<bagd::log::Level>(0));
    return true;
  }();
  (void)quiet;
  Script s(data, size);
  const uint8_t setup = s.u8();
  Neighbor n[2] = {{"127.0.0.2", 65002}, {"127.0.0.3", (setup & 1) ? 65000u : 65003u}};
  std::string config = absl::StrCat(
      "router { asn: 65000 router_id: \"10.255.0.1\" hold_time: ", (setup & 2) ? 3 : 9, " }\n",
      "fib { backend: BACKEND_NONE }\n",
      "multipath { maximum_paths_ebgp: ", 1 + (setup >> 4), " maximum_paths_ibgp: 4 }\n");
  for (const auto& nb : n) {
    absl::StrAppend(&config, "neighbors { address: \"", nb.address, "\" remote_as: ", nb.asn,
                    " passive: true address_families: [IPV4_UNICAST, IPV6_UNICAST]",
                    (setup & 4) ? " advertisement_interval: 2" : "",
                    (setup & 8) ? " max_prefixes { family: IPV4_UNICAST limit: 20 restart_interval: 1 }" : "", " }\n");
  }
  {
    SessionHarness h(config);
    while (!s.empty()) {
      const uint8_t op = s.u8();
      Neighbor& nb = n[op & 1];
      if (nb.fd < 0 && (op >> 1) % 12 != 8) {
        nb.fd = h.Connect(nb.address);
        continue;
      }
      switch ((op >> 1) % 12) {
        case 0: {  // OPEN
          const uint8_t caps = s.u8();
          auto extra = Capabilities(caps, s);
          std::vector<std::pair<uint16_t, uint8_t>> fam = {{1, 1}};
          if (caps & 0x40) fam.push_back({2, 1});
          const uint16_t hold = (caps & 0x80) ? s.u16() : 9;
          h.Write(nb.fd, Open(nb.asn, 0x0a090900 + (op & 1), hold, fam, extra));
          break;
        }
        case 1: h.Write(nb.fd, Keepalive()); break;
        case 2: {  // an UPDATE with a fuzzed body
          const auto body = s.bytes(s.u8() * 4);
          h.Write(nb.fd, Message(2, body));
          break;
        }
        case 3: {  // a well-formed UPDATE: fuzzed prefixes, link bandwidth, extra attributes
          std::vector<std::pair<uint8_t, uint8_t>> prefixes;
          for (int k = s.u8() % 8; k > 0; --k) prefixes.push_back({s.u8() % 4, s.u8()});
          std::vector<uint8_t> attrs;
          if (const uint8_t lb = s.u8(); lb & 1) {
            attrs = {0xc0, 16, 8, static_cast<uint8_t>(lb & 0x40), 4, 0xfe, 0x02, s.u8(), s.u8(), s.u8(), s.u8()};
          }
          if (s.u8() & 1) {
            auto extra = s.bytes(s.u8() % 32);
            attrs.insert(attrs.end(), extra.begin(), extra.end());
          }
          std::vector<uint8_t> withdrawn;
          for (int k = s.u8() % 4; k > 0; --k) withdrawn.insert(withdrawn.end(), {24, 10, static_cast<uint8_t>(s.u8() % 4), s.u8()});
          h.Write(nb.fd, Update(nb.asn, 0x7f000002 + (op & 1), prefixes, attrs, withdrawn));
          break;
        }
        case 4: h.Write(nb.fd, Message(5, s.bytes(s.u8() % 12))); break;          // ROUTE-REFRESH
        case 5: h.Write(nb.fd, Message(3, s.bytes(s.u8() % 8))); break;           // NOTIFICATION
        case 6: h.Write(nb.fd, s.bytes(s.u8())); break;                          // raw octets
        case 7: h.Write(nb.fd, Message(s.u8(), s.bytes(s.u8() % 32))); break;     // any type
        case 8: h.Advance(int64_t{s.u8()} * ((op & 0x80) ? 1000 : 10)); break;  // time passes
        case 9:
        case 10:  // our end goes: reset or FIN
          h.Close(nb.fd, ((op >> 1) % 12) == 9);
          nb.fd = -1;
          break;
        case 11: h.Read(nb.fd); break;
      }
      if (nb.fd >= 0 && h.PeerClosed(nb.fd)) {
        h.Close(nb.fd);
        nb.fd = -1;
      }
      for (const auto& x : n) {
        if (x.fd >= 0) h.Read(x.fd);  // what bagd sent is taken, so its writes never block
      }
      // A neighbor that is not Established keeps no route (no graceful restart yet).
      for (const auto& x : n) {
        const Peer* p = h.speaker().FindPeer(x.address);
        if (!p->established() && h.speaker().rib().paths_of(p->rib_index) != 0) std::abort();
      }
    }
  }  // the speaker goes with every connection, timer and completion still pending
  return 0;
}
