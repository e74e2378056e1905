// Golden bytes for the BMP encoders, written by hand from RFC 7854 §4 (figures of the common
// header, per-peer header, Initiation, Termination, Peer Up/Down, Route Monitoring and
// Statistics Report), RFC 8671 §4 (O flag) and RFC 9069 §4-5 (Loc-RIB peer type 3, the
// VRF/Table Name TLV, Peer Down reason 6), not from the encoder's own output.
#include <catch2/catch.hpp>

#include <cctype>
#include <string>

#include "bmp/message.h"

namespace bagd::bmp {
namespace {

// "03 00 00 00 0c" -> bytes; spaces and line breaks ignored.
Bytes Hex(std::string_view s) {
  Bytes out;
  int hi = -1;
  for (char c : s) {
    if (std::isspace(static_cast<unsigned char>(c))) continue;
    const int v = std::isdigit(static_cast<unsigned char>(c)) ? c - '0' : std::tolower(c) - 'a' + 10;
    if (hi < 0) {
      hi = v;
    } else {
      out.push_back(static_cast<uint8_t>(hi << 4 | v));
      hi = -1;
    }
  }
  REQUIRE(hi < 0);
  return out;
}

Bytes Concat(std::initializer_list<Bytes> parts) {
  Bytes out;
  for (const Bytes& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

const std::string kMarker = "ffffffffffffffffffffffffffffffff";

// 192.0.2.1, AS 65001, BGP ID 192.0.2.1, 2023-11-14T22:13:20.5Z.
PerPeerHeader Peer4(uint8_t flags = 0) {
  PerPeerHeader h;
  h.type = PeerType::kGlobal;
  h.flags = flags;
  h.address = *net::IpAddress::Parse("192.0.2.1");
  h.as = 65001;
  h.bgp_id = 0xc0000201;
  h.seconds = 1700000000;
  h.microseconds = 500000;
  return h;
}

// The per-peer header of Peer4 after its type and flags octets.
const std::string kPeer4Rest =
    "0000000000000000"                  // peer distinguisher
    "000000000000000000000000c0000201"  // peer address: IPv4 in the last 4 octets
    "0000fde9"                          // peer AS 65001
    "c0000201"                          // BGP ID
    "6553f100"                          // 1700000000 s
    "0007a120";                         // 500000 us

}  // namespace

TEST_CASE("BMP Initiation carries sysDescr and sysName TLVs (RFC 7854 4.3)", "[bmp]") {
  const Bytes got = EncodeInitiation("r1", "bagd 0.1.0");
  const Bytes want = Hex(
      "03 0000001a 04"                           // version 3, length 26, type 4
      "0001 000a 62616764 20 302e312e30"         // sysDescr "bagd 0.1.0"
      "0002 0002 7231");                         // sysName "r1"
  CHECK(got == want);
}

TEST_CASE("BMP Termination with reason and optional string (RFC 7854 4.5)", "[bmp]") {
  CHECK(EncodeTermination(TerminationReason::kAdminClose) == Hex("03 0000000c 05 0001 0002 0000"));
  CHECK(EncodeTermination(TerminationReason::kPermanentAdminClose, "bye") ==
        Hex("03 00000013 05 0000 0003 627965 0001 0002 0004"));
}

TEST_CASE("BMP Route Monitoring frames a per-peer header and an UPDATE (RFC 7854 4.2 and 4.6)", "[bmp]") {
  // An IPv4 End-of-RIB UPDATE: marker, length 23, type 2, no withdrawn, no attributes.
  const Bytes update = Hex(kMarker + "0017 02 0000 0000");
  const Bytes want = Hex("03 00000047 00"  // 6 + 42 + 23 = 71
                         "00 40" +        // global instance peer, L (post-policy)
                         kPeer4Rest) ;
  CHECK(EncodeRouteMonitoring(Peer4(peer_flag::kPostPolicy), update) == Concat({want, update}));

  SECTION("pre-policy, 2-octet AS_PATH: A without L") {
    const Bytes got = EncodeRouteMonitoring(Peer4(peer_flag::kTwoOctetAs), update);
    REQUIRE(got.size() == 71);
    CHECK(got[6] == 0x00);
    CHECK(got[7] == 0x20);
  }
  SECTION("Adj-RIB-Out post-policy sets O and L (RFC 8671 4)") {
    const Bytes got = EncodeRouteMonitoring(Peer4(peer_flag::kAdjRibOut | peer_flag::kPostPolicy), update);
    CHECK(got[7] == 0x50);
  }
  SECTION("an IPv6 peer address fills all 16 octets and sets V") {
    PerPeerHeader h = Peer4();
    h.address = *net::IpAddress::Parse("2001:db8::1");
    const Bytes got = EncodeRouteMonitoring(h, update);
    const Bytes head(got.begin(), got.begin() + 6 + 26);
    CHECK(head == Hex("03 00000047 00 00 80 0000000000000000 20010db8000000000000000000000001"));
  }
}

TEST_CASE("BMP Loc-RIB instance peer header (RFC 9069 4.1 and 4.2)", "[bmp]") {
  PerPeerHeader h;
  h.type = PeerType::kLocRib;
  h.as = 65000;
  h.bgp_id = 0x0a000001;  // 10.0.0.1
  h.seconds = 1;
  const Bytes update = Hex(kMarker + "0017 02 0000 0000");
  const Bytes want = Hex(
      "03 00000047 00"
      "03 00"                              // peer type 3, no flags (not filtered)
      "0000000000000000"                   // distinguisher 0: the global instance
      "00000000000000000000000000000000"   // no peer address
      "0000fde8 0a000001 00000001 00000000");
  CHECK(EncodeRouteMonitoring(h, update) == Concat({want, update}));
  SECTION("F flag marks a filtered table") {
    h.flags = peer_flag::kFiltered;
    CHECK(EncodeRouteMonitoring(h, update)[7] == 0x80);
  }
}

TEST_CASE("BMP Peer Up with both OPENs and a table name TLV (RFC 7854 4.10, RFC 9069 5.1)", "[bmp]") {
  // OPEN: version 4, AS 65001, hold 90, BGP ID 192.0.2.1, no parameters (29 octets).
  const Bytes open = Hex(kMarker + "001d 01 04 fde9 005a c0000201 00");
  const Bytes got =
      EncodePeerUp(Peer4(), *net::IpAddress::Parse("192.0.2.2"), 179, 40000, open, open, {});
  const Bytes head = Hex("03 0000007e 03 00 00" + kPeer4Rest +  // 6+42+16+4+29+29 = 126
                         "000000000000000000000000c0000202"     // local address
                         "00b3 9c40");                           // local port 179, remote 40000
  CHECK(got == Concat({head, open, open}));

  const InfoTlv name{info_type::kTableName, "global"};
  const Bytes with_tlv = EncodePeerUp(Peer4(), std::nullopt, 0, 0, open, open, std::span(&name, 1));
  REQUIRE(with_tlv.size() == 126 + 4 + 6);
  CHECK(Bytes(with_tlv.begin() + 1, with_tlv.begin() + 5) == Hex("00000088"));
  CHECK(Bytes(with_tlv.end() - 10, with_tlv.end()) == Hex("0003 0006 676c6f62616c"));
  CHECK(Bytes(with_tlv.begin() + 48, with_tlv.begin() + 68) == Bytes(20, 0));  // no local address, ports 0
}

TEST_CASE("BMP Peer Down reasons and their data (RFC 7854 4.9, RFC 9069 5.3)", "[bmp]") {
  // Cease (6) / Administrative Shutdown (2): a 21-octet NOTIFICATION.
  const Bytes notification = Hex(kMarker + "0015 03 06 02");
  CHECK(EncodePeerDown(Peer4(), PeerDownReason::kRemoteNotification, notification) ==
        Concat({Hex("03 00000046 02 00 00" + kPeer4Rest + "03"), notification}));
  CHECK(EncodePeerDown(Peer4(), PeerDownReason::kLocalNotification, notification)[48] == 0x01);
  // Reason 2 with FSM event 18 (TcpConnectionFails).
  CHECK(EncodePeerDownFsmEvent(Peer4(), 18) == Hex("03 00000033 02 00 00" + kPeer4Rest + "02 0012"));
  CHECK(EncodePeerDown(Peer4(), PeerDownReason::kRemoteNoData) == Hex("03 00000031 02 00 00" + kPeer4Rest + "04"));
  CHECK(EncodePeerDown(Peer4(), PeerDownReason::kDeconfigured) == Hex("03 00000031 02 00 00" + kPeer4Rest + "05"));
  const InfoTlv why{info_type::kString, "stop"};
  CHECK(EncodePeerDownTlv(Peer4(), std::span(&why, 1)) ==
        Hex("03 00000039 02 00 00" + kPeer4Rest + "06 0000 0004 73746f70"));
}

TEST_CASE("BMP Statistics Report counters and gauges (RFC 7854 4.8)", "[bmp]") {
  const Stat stats[] = {
      Stat::Counter(stat_type::kRejectedPrefixes, 3),
      Stat::Counter(stat_type::kDuplicateWithdraws, 2),
      Stat::Gauge(stat_type::kAdjRibInRoutes, 10),
      Stat::AfiGauge(stat_type::kAdjRibInRoutesPerAfi, 2, 1, 0x0102030405),
  };
  const Bytes want = Hex("03 0000005f 01 00 00" + kPeer4Rest +  // 6+42+4+8+8+12+15 = 95
                         "00000004"                              // 4 statistics
                         "0000 0004 00000003"                    // type 0, 32-bit counter
                         "0002 0004 00000002"                    // type 2
                         "0007 0008 000000000000000a"            // type 7, 64-bit gauge
                         "0009 000b 0002 01 0000000102030405");  // type 9: AFI 2, SAFI 1, gauge
  CHECK(EncodeStatisticsReport(Peer4(), stats) == want);
}

TEST_CASE("BMP Adj-RIB-Out: O in Route Monitoring, Peer Up, Peer Down and Statistics (RFC 8671 4 and 6)", "[bmp]") {
  const Bytes update = Hex(kMarker + "0017 02 0000 0000");
  SECTION("pre-policy: O without L") {
    CHECK(EncodeRouteMonitoring(Peer4(peer_flag::kAdjRibOut), update) ==
          Concat({Hex("03 00000047 00 00 10" + kPeer4Rest), update}));
  }
  SECTION("post-policy: O and L; a 2-octet-AS session adds A") {
    CHECK(EncodeRouteMonitoring(Peer4(peer_flag::kAdjRibOut | peer_flag::kPostPolicy), update) ==
          Concat({Hex("03 00000047 00 00 50" + kPeer4Rest), update}));
    CHECK(EncodeRouteMonitoring(Peer4(peer_flag::kAdjRibOut | peer_flag::kPostPolicy | peer_flag::kTwoOctetAs),
                                update)[7] == 0x70);
  }
  SECTION("Peer Up and Peer Down of a station that gets Adj-RIB-Out only") {
    const Bytes open = Hex(kMarker + "001d 01 04 fde9 005a c0000201 00");
    CHECK(EncodePeerUp(Peer4(peer_flag::kAdjRibOut), *net::IpAddress::Parse("192.0.2.2"), 179, 40000, open, open) ==
          Concat({Hex("03 0000007e 03 00 10" + kPeer4Rest + "000000000000000000000000c0000202 00b3 9c40"), open, open}));
    CHECK(EncodePeerDown(Peer4(peer_flag::kAdjRibOut), PeerDownReason::kRemoteNoData) ==
          Hex("03 00000031 02 00 10" + kPeer4Rest + "04"));
  }
  SECTION("statistics type 15: routes in the post-policy Adj-RIB-Out, a 64-bit gauge") {
    const Stat stats[] = {Stat::Gauge(stat_type::kAdjRibOutPostRoutes, 3)};
    CHECK(EncodeStatisticsReport(Peer4(peer_flag::kAdjRibOut), stats) ==
          Hex("03 00000040 01 00 10" + kPeer4Rest +  // 6+42+4+12 = 64
              "00000001 000f 0008 0000000000000003"));
  }
}

TEST_CASE("BMP applied bandwidth on a Loc-RIB member: a non-transitive link-bandwidth community", "[bmp]") {
  // 1 Gbit/s = 125000000 octets/s = IEEE float 0x4cee6b28; type 0x40 (non-transitive),
  // sub-type 0x04, AS 65000 (0xfde8).
  CHECK(AppliedBandwidthCommunity(65000, 1e9).raw == 0x4004fde84cee6b28ULL);
  // A 4-octet AS goes as AS_TRANS (23456 = 0x5ba0); 0 (a drained member) is 0.0f.
  CHECK(AppliedBandwidthCommunity(4200000000u, 0).raw == 0x40045ba000000000ULL);
}

TEST_CASE("BMP PeekFrame reads the common header only when the message is whole", "[bmp]") {
  const Bytes m = EncodeTermination(TerminationReason::kAdminClose);
  CHECK_FALSE(PeekFrame(ByteSpan(m).first(5)).has_value());
  CHECK_FALSE(PeekFrame(ByteSpan(m).first(11)).has_value());
  const auto f = PeekFrame(m);
  REQUIRE(f.has_value());
  CHECK(f->version == 3);
  CHECK(f->type == MessageType::kTermination);
  CHECK(f->length == 12);
}

}  // namespace bagd::bmp
