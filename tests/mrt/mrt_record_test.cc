// Golden bytes written by hand from RFC 6396 (§2, §3, §4.3.1, §4.3.2, §4.3.4, §4.4.3) and
// RFC 8050 (§3, §4), field by field in the comments; not produced by the encoder.
#include <catch2/catch.hpp>

#include "mrt/mrt_record.h"
#include "tests/mrt/mrt_reader.h"

namespace bagd::mrt {
namespace {

using test::Hex;

net::IpAddress Ip(const char* s) { return *net::IpAddress::Parse(s); }
net::Prefix P(const char* s) { return *net::Prefix::Parse(s); }

// ORIGIN IGP, AS_PATH (4-octet) SEQUENCE [65001], NEXT_HOP 10.0.0.1: 20 octets.
const char* kIpv4Attrs =
    "40 01 01 00"
    "40 02 06 02 01 0000fde9"
    "40 03 04 0a000001";

TEST_CASE("PEER_INDEX_TABLE: collector id, view name, IPv4 and IPv6 peers with 4-octet ASes", "[mrt][golden]") {
  Bytes out;
  const IndexedPeer peers[] = {{0x0a000002, Ip("10.0.0.2"), 65001},
                               {0x0a000003, Ip("2001:db8::2"), 4200000000u}};
  AppendPeerIndexTable(out, 1600000000, 0xc0000201, "", peers);
  const Bytes expected = Hex(
      "5f5e1000 000d 0001 0000002e"           // timestamp, TABLE_DUMP_V2, PEER_INDEX_TABLE, length 46
      "c0000201 0000 0002"                     // collector 192.0.2.1, view name length 0, 2 peers
      "02 0a000002 0a000002 0000fde9"          // type AS4|IPv4, BGP id, 10.0.0.2, AS 65001
      "03 0a000003 20010db8000000000000000000000002 fa56ea00");  // AS4|IPv6, 2001:db8::2, 4200000000
  CHECK(out == expected);
}

TEST_CASE("PEER_INDEX_TABLE carries the view name", "[mrt][golden]") {
  Bytes out;
  AppendPeerIndexTable(out, 1, 2, "bagd", {});
  CHECK(out == Hex("00000001 000d 0001 0000000c 00000002 0004 62616764 0000"));
}

TEST_CASE("RIB_IPV4_UNICAST: one path with peer index, originated time and attributes", "[mrt][golden]") {
  Bytes out;
  const Bytes attrs = Hex(kIpv4Attrs);
  const RibEntry e{1, 0x5f5e0000, 99, attrs};
  AppendRibRecord(out, 1600000000, 7, P("192.0.2.0/24"), false, {&e, 1});
  const Bytes expected = Hex(std::string("5f5e1000 000d 0002 00000026"  // RIB_IPV4_UNICAST, length 38
                                         "00000007 18 c00002 0001"       // sequence 7, /24, 192.0.2, 1 entry
                                         "0001 5f5e0000 0014") +         // peer 1, originated, 20 octets
                             kIpv4Attrs);
  CHECK(out == expected);
}

TEST_CASE("RIB_IPV4_UNICAST_ADDPATH puts the path id after the originated time (RFC 8050)", "[mrt][golden]") {
  Bytes out;
  const Bytes attrs = Hex(kIpv4Attrs);
  const RibEntry e{1, 0x5f5e0000, 99, attrs};
  AppendRibRecord(out, 1600000000, 7, P("192.0.2.0/24"), true, {&e, 1});
  const Bytes expected = Hex(std::string("5f5e1000 000d 0008 0000002a"  // subtype 8, length 42
                                         "00000007 18 c00002 0001"
                                         "0001 5f5e0000 00000063 0014") +  // path id 99
                             kIpv4Attrs);
  CHECK(out == expected);
}

TEST_CASE("RIB_IPV6_UNICAST and its ADDPATH subtype, prefix octets as the length needs", "[mrt][golden]") {
  const Bytes attrs = Hex("40 01 01 00");
  const RibEntry entries[] = {{0, 5, 1, attrs}, {2, 6, 2, attrs}};
  Bytes out;
  AppendRibRecord(out, 9, 0, P("2001:db8::/32"), false, entries);
  CHECK(out == Hex("00000009 000d 0004 00000023"  // RIB_IPV6_UNICAST, length 35
                   "00000000 20 20010db8 0002"
                   "0000 00000005 0004 40010100"
                   "0002 00000006 0004 40010100"));
  out.clear();
  AppendRibRecord(out, 9, 0, P("2001:db8::/32"), true, entries);
  CHECK(out == Hex("00000009 000d 000a 0000002b"  // RIB_IPV6_UNICAST_ADDPATH (10), length 43
                   "00000000 20 20010db8 0002"
                   "0000 00000005 00000001 0004 40010100"
                   "0002 00000006 00000002 0004 40010100"));
  out.clear();
  AppendRibRecord(out, 9, 1, P("0.0.0.0/0"), false, {&entries[0], 1});
  CHECK(out == Hex("00000009 000d 0002 00000013 00000001 00 0001 0000 00000005 0004 40010100"));
}

TEST_CASE("RIB entry attributes: MP_REACH_NLRI abbreviated to next hop length and next hop", "[mrt][golden]") {
  // RFC 4760 MP_REACH_NLRI: AFI 2, SAFI 1, next hop length 32 (global + link-local),
  // reserved 0, no NLRI (the RIB's attribute store keeps none).
  const Bytes in = Hex(
      "40 01 01 00"
      "80 0e 25 0002 01 20 20010db8000000000000000000000001 fe800000000000000000000000000001 00");
  Bytes out;
  REQUIRE(AppendMrtAttributes(in, out));
  CHECK(out == Hex("40 01 01 00"
                   "80 0e 21 20 20010db8000000000000000000000001 fe800000000000000000000000000001"));
}

TEST_CASE("RIB entry attributes: an extended-length MP_REACH_NLRI with NLRI, MP_UNREACH left out", "[mrt][golden]") {
  const Bytes in = Hex(
      "90 0e 001a 0002 01 10 20010db8000000000000000000000001 00 20 20010db8"  // NLRI 2001:db8::/32
      "80 0f 03 0002 01"                                                           // MP_UNREACH
      "c0 10 08 0004fde94cee6b28");                                               // link bandwidth
  Bytes out;
  REQUIRE(AppendMrtAttributes(in, out));
  CHECK(out == Hex("80 0e 11 10 20010db8000000000000000000000001"
                   "c0 10 08 0004fde94cee6b28"));
}

TEST_CASE("RIB entry attributes: a truncated attribute is refused and nothing is appended", "[mrt]") {
  Bytes out = {0xaa};
  CHECK_FALSE(AppendMrtAttributes(Hex("40 01 01 00 40 02 06 02 01"), out));
  CHECK(out == Bytes{0xaa});
  CHECK_FALSE(AppendMrtAttributes(Hex("80 0e 03 0002 01"), out));  // MP_REACH without a next hop length
  CHECK_FALSE(AppendMrtAttributes(Hex("80 0e 04 0002 01 10"), out));  // next hop past the attribute
  CHECK(out == Bytes{0xaa});
  CHECK(AppendMrtAttributes({}, out));
  CHECK(out == Bytes{0xaa});
}

const char* kKeepalive = "ffffffffffffffffffffffffffffffff 0013 04";

TEST_CASE("BGP4MP_ET MESSAGE_AS4: microseconds counted in the length, ASes of 4 octets", "[mrt][golden]") {
  const Bytes msg = Hex(kKeepalive);
  ReceivedMessage m;
  m.unix_micros = 1600000000123456;
  m.peer_as = 65001;
  m.local_as = 4200000000u;
  m.peer_address = Ip("10.0.0.2");
  m.local_address = Ip("10.0.0.1");
  m.message = msg;
  Bytes out;
  AppendBgp4mpMessage(out, m);
  CHECK(out == Hex(std::string("5f5e1000 0011 0004 0000002b"  // BGP4MP_ET, MESSAGE_AS4, length 43
                               "0001e240"                     // 123456 microseconds
                               "0000fde9 fa56ea00 0000 0001"  // peer AS, local AS, ifindex 0, AFI 1
                               "0a000002 0a000001") +
                   kKeepalive));
  m.add_path = true;
  out.clear();
  AppendBgp4mpMessage(out, m);
  CHECK(out[7] == 9);  // BGP4MP_MESSAGE_AS4_ADDPATH
  CHECK(out.size() == 12 + 43);
}

TEST_CASE("BGP4MP_ET MESSAGE on a 2-octet-AS session: AS_TRANS for a 4-octet AS", "[mrt][golden]") {
  const Bytes msg = Hex(kKeepalive);
  ReceivedMessage m;
  m.unix_micros = 1000001;
  m.peer_as = 4200000000u;
  m.local_as = 65000;
  m.peer_address = Ip("2001:db8::2");
  m.local_address = Ip("2001:db8::1");
  m.four_octet_as = false;
  m.message = msg;
  Bytes out;
  AppendBgp4mpMessage(out, m);
  CHECK(out == Hex(std::string("00000001 0011 0001 0000003f"  // MESSAGE (1), length 63
                               "00000001"                     // 1 microsecond
                               "5ba0 fde8 0000 0002"          // AS_TRANS, 65000, ifindex, AFI 2
                               "20010db8000000000000000000000002 20010db8000000000000000000000001") +
                   kKeepalive));
  m.add_path = true;
  out.clear();
  AppendBgp4mpMessage(out, m);
  CHECK(out[7] == 8);  // BGP4MP_MESSAGE_ADDPATH
}

TEST_CASE("BGP4MP_ET STATE_CHANGE_AS4: ASes of 4 octets, old and new state (RFC 6396 4.4.4)", "[mrt][golden]") {
  StateChange c;
  c.unix_micros = 1600000000123456;
  c.peer_as = 65001;
  c.local_as = 4200000000u;
  c.peer_address = Ip("10.0.0.2");
  c.local_address = Ip("10.0.0.1");
  c.old_state = 5;  // OpenConfirm
  c.new_state = 6;  // Established
  Bytes out;
  AppendBgp4mpStateChange(out, c);
  CHECK(out == Hex("5f5e1000 0011 0005 0000001c"  // BGP4MP_ET, STATE_CHANGE_AS4, length 28
                   "0001e240"                     // 123456 microseconds
                   "0000fde9 fa56ea00 0000 0001"  // peer AS, local AS, ifindex 0, AFI 1
                   "0a000002 0a000001"            // peer, local
                   "0005 0006"));                 // OpenConfirm -> Established
  c.peer_address = Ip("2001:db8::2");  // an unknown local address: zeros of the peer's family
  c.local_address = net::IpAddress();
  out.clear();
  AppendBgp4mpStateChange(out, c);
  REQUIRE(out.size() == 16 + 12 + 32 + 4);
  CHECK(Bytes(out.begin() + 28 + 16, out.begin() + 28 + 32) == Bytes(16, 0));
}

TEST_CASE("BGP4MP_ET with an unknown local address writes zeros of the peer's family", "[mrt]") {
  const Bytes msg = Hex(kKeepalive);
  ReceivedMessage m;
  m.peer_address = Ip("2001:db8::2");
  m.local_address = Ip("10.0.0.1");  // a mismatch: not written as it is
  m.message = msg;
  Bytes out;
  AppendBgp4mpMessage(out, m);
  REQUIRE(out.size() == 16 + 12 + 32 + 19);
  CHECK(Bytes(out.begin() + 44, out.begin() + 60) == Bytes(16, 0));
}

}  // namespace
}  // namespace bagd::mrt
