"""Route refresh (RFC 2918) and Enhanced Route Refresh (RFC 7313) with the real daemon and raw
peers on loopback: a ROUTE-REFRESH from a peer gets bagd's whole Adj-RIB-Out again (within
BoRR/EoRR when enhanced route refresh was negotiated), what is to be ignored is ignored, a
malformed one gets NOTIFICATION 7/1; `bagctl neighbor ADDRESS clear [soft [in|out]]`; and a
peer's own BoRR/EoRR removes the paths it did not announce again."""
import os
import socket
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from netlab import LoopbackBagd, wait_until  # noqa: E402
from rawbgp import (CAP_ENHANCED_ROUTE_REFRESH, CAP_ROUTE_REFRESH, KEEPALIVE, RawPeer, nlri,  # noqa: E402
                    parse_route_refresh, parse_update, route_refresh, update)

RR = CAP_ROUTE_REFRESH
ERR = CAP_ROUTE_REFRESH + CAP_ENHANCED_ROUTE_REFRESH
SOURCE_PREFIXES = [f"10.{1 + i // 256}.{i % 256}.0/24" for i in range(300)]
OWN_PREFIXES = ["10.200.0.0/24", "10.200.1.0/24"]
BORR = (1, 1, 1)  # (AFI, subtype, SAFI)
EORR = (1, 2, 1)


def source_attrs(asn=65002, next_hop="127.0.0.2"):
    path = b"\x02\x01" + asn.to_bytes(4, "big")
    return b"\x40\x01\x01\x00" + b"\x40\x02" + bytes([len(path)]) + path + b"\x40\x03\x04" + socket.inet_aton(next_hop)


def is_eor(mtype, body):
    return mtype == 2 and body == b"\x00\x00\x00\x00"


def is_eorr(mtype, body):
    return mtype == 5 and parse_route_refresh(body) == EORR


def receive(peer, seconds, stop=None):
    """The messages (type, body) bagd sends within `seconds`, KEEPALIVEs answered and left
    out. With `stop`: until the first message for which stop(type, body) holds (included);
    not seeing one in time fails."""
    out = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        peer.sock.settimeout(max(0.01, min(0.1, end - time.monotonic())))
        try:
            m = peer.recv()
        except socket.timeout:
            continue
        if m is None:
            raise AssertionError(f"bagd closed the session; got {[t for t, _ in out]}")
        if m[0] == 4:
            peer.send(KEEPALIVE)
            continue
        out.append(m)
        if stop is not None and stop(*m):
            return out
    if stop is not None:
        raise AssertionError(f"timed out after {seconds}s; got message types {[t for t, _ in out]}")
    return out


def table(messages):
    """{prefix: attributes} that a run of UPDATEs leaves (announced, then withdrawn)."""
    t = {}
    for mtype, body in messages:
        if mtype != 2:
            continue
        withdrawn, attrs, announced = parse_update(body)
        for p in withdrawn:
            t.pop(p, None)
        for p in announced:
            t[p] = attrs
    return t


class RouteRefresh(unittest.TestCase):
    def setUp(self):
        self.bagd = LoopbackBagd(f"""
neighbors {{ address: "127.0.0.2" remote_as: 65002 passive: true }}  # the source of routes
neighbors {{ address: "127.0.0.3" remote_as: 65003 passive: true }}
neighbors {{ address: "127.0.0.4" remote_as: 65004 passive: true }}
neighbors {{ address: "127.0.0.5" remote_as: 65005 passive: true }}
neighbors {{ address: "127.0.0.6" remote_as: 65006 passive: true advertisement_interval: 30 }}
neighbors {{ address: "127.0.0.7" remote_as: 65007 passive: true }}  # never connects
networks {{ prefix: "{OWN_PREFIXES[0]}" }}
networks {{ prefix: "{OWN_PREFIXES[1]}" }}
""", name="rr")
        self.addCleanup(self.bagd.stop)

    def ctl(self, *args):
        return self.bagd.ctl(*args, check=False)

    def neighbor(self, address):
        return self.bagd.neighbor(address)

    def connect(self, octet, caps=b""):
        p = RawPeer(f"127.0.0.{octet}", ("127.0.0.1", self.bagd.port))
        p.establish(65000 + octet, router_id=f"10.9.9.{octet}", extra_caps=caps)
        self.addCleanup(p.close)
        return p

    def source(self, caps=b""):
        """127.0.0.2, announcing SOURCE_PREFIXES in one UPDATE."""
        src = self.connect(2, caps)
        src.send(update(attrs=source_attrs(), nlri=nlri(*SOURCE_PREFIXES)))
        wait_until(lambda: self.neighbor("127.0.0.2")["prefixes_received"] == str(len(SOURCE_PREFIXES)), 10,
                   "the source's prefixes in bagd")
        return src

    def receiver(self, octet, caps):
        """A peer and the table bagd dumped to it at Established (up to End-of-RIB)."""
        p = self.connect(octet, caps)
        initial = table(receive(p, 10, stop=is_eor))
        self.assertEqual(sorted(initial), sorted(SOURCE_PREFIXES + OWN_PREFIXES))
        return p, initial

    def assert_enhanced_resend(self, got, expected):
        """BoRR, then UPDATEs with exactly `expected`, then EoRR (RFC 7313 §4)."""
        self.assertEqual((got[0][0], parse_route_refresh(got[0][1])), (5, BORR), "BoRR first")
        self.assertEqual((got[-1][0], parse_route_refresh(got[-1][1])), (5, EORR), "EoRR last")
        self.assertEqual({t for t, _ in got[1:-1]}, {2}, "only UPDATEs between BoRR and EoRR")
        self.assertEqual(table(got[1:-1]), expected)

    def test_request_with_enhanced_route_refresh_resends_the_table_between_borr_and_eorr(self):
        self.source()
        rx, initial = self.receiver(3, ERR)
        self.assertTrue(self.neighbor("127.0.0.3")["negotiated"]["enhanced_route_refresh"])
        rx.send(route_refresh(1, 1))
        self.assert_enhanced_resend(receive(rx, 5, stop=is_eorr), initial)
        n = self.neighbor("127.0.0.3")
        self.assertEqual(n["state"], "Established")
        rr = n["route_refresh"]
        self.assertEqual((rr["requests_received"], rr["adj_rib_out_resends"], rr["prefixes_resent"]),
                         ("1", "1", str(len(initial))))
        self.assertEqual(n["messages_in"]["route_refresh"], "1")
        self.assertEqual(n["messages_out"]["route_refresh"], "2")  # BoRR and EoRR
        # A second request gets the same again.
        rx.send(route_refresh(1, 1))
        self.assert_enhanced_resend(receive(rx, 5, stop=is_eorr), initial)
        self.assertEqual(self.neighbor("127.0.0.3")["route_refresh"]["adj_rib_out_resends"], "2")

    def test_request_without_enhanced_route_refresh_resends_the_table_alone(self):
        self.source()
        rx, initial = self.receiver(4, RR)
        self.assertFalse(self.neighbor("127.0.0.4")["negotiated"]["enhanced_route_refresh"])
        rx.send(route_refresh(1, 1))
        got = receive(rx, 2)
        self.assertEqual({t for t, _ in got}, {2}, "UPDATEs only: no BoRR/EoRR without enhanced route refresh")
        self.assertEqual(table(got), initial)
        self.assertNotIn(b"\x00\x00\x00\x00", [b for _, b in got], "no End-of-RIB after a refresh")

    def test_an_answer_goes_out_at_once_whatever_the_advertisement_interval(self):
        src = self.source()
        rx, initial = self.receiver(6, ERR)  # advertisement_interval: 30
        src.send(update(attrs=source_attrs(), nlri=nlri("10.9.0.0/24")))
        first = receive(rx, 3, stop=lambda t, b: t == 2 and "10.9.0.0/24" in parse_update(b)[2])
        self.assertEqual(table(first), {"10.9.0.0/24": initial[SOURCE_PREFIXES[0]]})
        # This one waits for the interval (30 s) to end ...
        src.send(update(attrs=source_attrs(), nlri=nlri("10.9.1.0/24")))
        self.assertEqual(receive(rx, 0.5), [])
        # ... the answer to a refresh does not: it is the Adj-RIB-Out as sent so far.
        t0 = time.monotonic()
        rx.send(route_refresh(1, 1))
        got = receive(rx, 3, stop=is_eorr)
        self.assertLess(time.monotonic() - t0, 1.0)
        expected = dict(initial)
        expected["10.9.0.0/24"] = initial[SOURCE_PREFIXES[0]]
        self.assert_enhanced_resend(got, expected)
        self.assertNotIn("10.9.1.0/24", table(got))

    def test_ignored_and_malformed_route_refresh(self):
        rx = self.connect(3, ERR)
        receive(rx, 5, stop=is_eor)
        # RFC 2918 §4: a family not negotiated (IPv6 here); RFC 7313 §5: a reserved subtype;
        # an EoRR without a BoRR. Each is ignored: no answer, the session stays.
        rx.send(route_refresh(2, 1))
        rx.send(route_refresh(1, 1, subtype=3))
        rx.send(route_refresh(1, 1, subtype=2))
        self.assertEqual(receive(rx, 1), [])
        n = self.neighbor("127.0.0.3")
        self.assertEqual(n["state"], "Established")
        self.assertEqual(n["route_refresh"]["ignored"], "3")
        self.assertEqual(n["route_refresh"]["adj_rib_out_resends"], "0")
        log = self.bagd.log()
        self.assertIn("AFI 2 SAFI 1 was not negotiated on this session", log)
        self.assertIn("reserved Message Subtype 3", log)
        self.assertIn("EoRR for ipv4-unicast without a BoRR before it", log)
        # RFC 7313 §5: a BoRR/EoRR that is not 4 octets long: NOTIFICATION ROUTE-REFRESH
        # Message Error / Invalid Message Length (7/1), data = the whole message.
        bad = route_refresh(1, 1, subtype=2, extra=b"\x00")
        rx.send(bad)
        self.assertEqual(rx.notification(), (7, 1, bad))
        other = self.connect(4, RR)
        receive(other, 5, stop=is_eor)
        bad = route_refresh(1, 1, subtype=1, extra=b"\x00\x00\x00")
        other.send(bad)
        self.assertEqual(other.notification(), (7, 1, bad))

    def test_clear_soft_out_resends_and_soft_in_requests(self):
        self.source()
        rx, initial = self.receiver(3, ERR)
        plain, _ = self.receiver(4, RR)
        r = self.ctl("neighbor", "127.0.0.3", "clear", "soft", "out")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "neighbor 127.0.0.3: Adj-RIB-Out re-sent for ipv4-unicast "
                                   f"({len(initial)} prefixes, between BoRR and EoRR)\n")
        self.assert_enhanced_resend(receive(rx, 5, stop=is_eorr), initial)
        r = self.ctl("neighbor", "127.0.0.4", "clear", "soft", "out")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, f"neighbor 127.0.0.4: Adj-RIB-Out re-sent for ipv4-unicast ({len(initial)} prefixes)\n")
        got = receive(plain, 2)
        self.assertEqual({t for t, _ in got}, {2})
        self.assertEqual(table(got), initial)

        # soft in: a ROUTE-REFRESH request for each negotiated family.
        r = self.ctl("neighbor", "127.0.0.3", "clear", "soft", "in")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "neighbor 127.0.0.3: route refresh requested for ipv4-unicast; "
                                   "the neighbor re-sends its routes\n")
        got = receive(rx, 2)
        self.assertEqual([(t, parse_route_refresh(b)) for t, b in got], [(5, (1, 0, 1))])
        # soft: both.
        r = self.ctl("neighbor", "127.0.0.3", "clear", "soft")
        self.assertEqual(r.returncode, 0, r.stderr)
        got = receive(rx, 5, stop=is_eorr)
        self.assertEqual((got[0][0], parse_route_refresh(got[0][1])), (5, (1, 0, 1)))
        self.assert_enhanced_resend(got[1:], initial)
        rr = self.neighbor("127.0.0.3")["route_refresh"]
        self.assertEqual((rr["requests_sent"], rr["adj_rib_out_resends"]), ("2", "2"))

    def test_clear_soft_in_needs_route_refresh_and_every_clear_an_established_session(self):
        bare = self.connect(5)  # offers no route refresh
        receive(bare, 5, stop=is_eor)
        r = self.ctl("neighbor", "127.0.0.5", "clear", "soft", "in")
        self.assertEqual(r.returncode, 1)
        self.assertEqual(r.stderr, "bagctl: neighbor 127.0.0.5 did not offer route refresh (RFC 2918) in its OPEN, so "
                                   "it cannot be asked to re-send its routes; nothing was done (`bagctl neighbor "
                                   "127.0.0.5 clear` resets the session instead)\n")
        r = self.ctl("neighbor", "127.0.0.5", "clear", "soft")
        self.assertEqual(r.returncode, 1)
        self.assertEqual(receive(bare, 1), [], "nothing sent, not even the outbound half")
        # Out works without route refresh: it only needs a session.
        r = self.ctl("neighbor", "127.0.0.5", "clear", "soft", "out")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(sorted(table(receive(bare, 2))), sorted(OWN_PREFIXES))
        for args in (("clear",), ("clear", "soft", "out"), ("clear", "soft", "in")):
            r = self.ctl("neighbor", "127.0.0.7", *args)
            self.assertEqual(r.returncode, 1)
            self.assertEqual(r.stderr, "bagctl: neighbor 127.0.0.7 is not Established (Active): there is no session "
                                       f"to {'reset' if args == ('clear',) else 'refresh'}\n")
        r = self.ctl("neighbor", "127.0.0.99", "clear")
        self.assertEqual((r.returncode, r.stderr), (1, "bagctl: no neighbor 127.0.0.99 is configured\n"))

    def test_clear_resets_the_session_with_cease_administrative_reset(self):
        self.source()
        rx, _ = self.receiver(4, RR)
        r = self.ctl("neighbor", "127.0.0.4", "clear")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "neighbor 127.0.0.4: session reset (Cease / Administrative Reset sent); "
                                   "it restarts now\n")
        self.assertEqual(rx.notification(), (6, 4, b""))  # RFC 4486: Cease / Administrative Reset
        self.assertIsNone(rx.recv(), "the connection is closed after the NOTIFICATION")
        n = self.neighbor("127.0.0.4")
        self.assertFalse(n["admin_down"], "a reset is not a shutdown")
        self.assertEqual(n["last_notification_sent"]["subcode"], 4)
        # It restarts: the peer connects again and gets the table again.
        again, _ = self.receiver(4, RR)
        n = self.neighbor("127.0.0.4")
        self.assertEqual((n["state"], n["established_transitions"]), ("Established", "2"))
        # The other sessions were not touched.
        self.assertEqual(self.neighbor("127.0.0.2")["established_transitions"], "1")

    def test_a_peer_refreshing_us_loses_what_it_does_not_announce_again(self):
        src = self.source(ERR)
        rx, _ = self.receiver(3, ERR)
        # RFC 7313 §4.2: at BoRR the source's paths are stale; it announces half of them
        # again (identical: nothing changes for the receiver) ...
        src.send(route_refresh(1, 1, subtype=1))
        kept, dropped = SOURCE_PREFIXES[:150], SOURCE_PREFIXES[150:]
        src.send(update(attrs=source_attrs(), nlri=nlri(*kept)))
        wait_until(lambda: self.neighbor("127.0.0.2")["route_refresh"]["refreshing"] == ["ipv4-unicast"], 5,
                   "the source's refresh in progress")
        self.assertEqual(receive(rx, 0.5), [], "nothing moves before the EoRR")
        self.assertEqual(self.neighbor("127.0.0.2")["prefixes_received"], "300")
        # ... and at EoRR the other half is gone, here and at the receiver.
        src.send(route_refresh(1, 1, subtype=2))
        got = receive(rx, 5, stop=lambda t, b: t == 2 and dropped[-1] in parse_update(b)[0])
        withdrawn = [p for t, b in got if t == 2 for p in parse_update(b)[0]]
        self.assertEqual(sorted(withdrawn), sorted(dropped))
        self.assertEqual([p for t, b in got if t == 2 for p in parse_update(b)[2]], [], "nothing announced")
        n = self.neighbor("127.0.0.2")
        self.assertEqual(n["prefixes_received"], "150")
        rr = n["route_refresh"]
        self.assertEqual((rr["borr_received"], rr["eorr_received"], rr["stale_paths_removed"]), ("1", "1", "150"))
        self.assertEqual(rr.get("refreshing", []), [])
        self.assertIn("EoRR ipv4-unicast: refresh complete, 150 stale paths removed (of 300 marked at BoRR)",
                      self.bagd.log())
        # A refresh in which the peer withdraws something itself: withdrawn at once, not at EoRR.
        src.send(route_refresh(1, 1, subtype=1))
        src.send(update(withdrawn=nlri(*kept[:1])))
        got = receive(rx, 3, stop=lambda t, b: t == 2 and kept[0] in parse_update(b)[0])
        src.send(update(attrs=source_attrs(), nlri=nlri(*kept[1:])))
        src.send(route_refresh(1, 1, subtype=2))
        wait_until(lambda: self.neighbor("127.0.0.2")["route_refresh"]["eorr_received"] == "2", 5, "second EoRR")
        self.assertEqual(self.neighbor("127.0.0.2")["prefixes_received"], "149")
        self.assertEqual(self.neighbor("127.0.0.2")["route_refresh"]["stale_paths_removed"], "150")


if __name__ == "__main__":
    unittest.main(verbosity=2)
