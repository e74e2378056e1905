"""Maximum prefixes per neighbor and family (config max_prefixes) against a raw peer on
loopback (no root needed): the warning at the threshold, Cease / Maximum Number of Prefixes
Reached (6/1) with AFI/SAFI/limit as data (RFC 4486 §4) one UPDATE past the limit, the
neighbor kept down for restart_interval and then taking a session again; warning_only; a
limit without restart interval that waits for `bagctl neighbor ADDR enable`; an IPv6 limit;
what bagctl and the metrics show."""
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from netlab import BAGD, BAGCTL, run, free_port, wait_until, started  # noqa: E402
from rawbgp import KEEPALIVE, RawPeer, open_message, update  # noqa: E402

RESTART = 2  # seconds: restart_interval of 127.0.0.2


def attrs_v4(asn, next_hop="127.0.0.9"):
    return (b"\x40\x01\x01\x00"  # ORIGIN IGP
            + b"\x40\x02\x06\x02\x01" + struct.pack("!I", asn)  # AS_PATH (4-octet)
            + b"\x40\x03\x04" + socket.inet_aton(next_hop))  # NEXT_HOP


def nlri_v4(first, count):
    """`count` /24s 10.first.0.0/24, 10.first.1.0/24, ..."""
    return b"".join(bytes([24, 10, first + i // 256, i % 256]) for i in range(count))


def mp_reach_v6(count):
    nh = socket.inet_pton(socket.AF_INET6, "2001:db8:ffff::9")
    nlri = b"".join(bytes([48]) + socket.inet_pton(socket.AF_INET6, f"2001:db8:{i + 1:x}::")[:6] for i in range(count))
    value = struct.pack("!HB", 2, 1) + bytes([len(nh)]) + nh + b"\x00" + nlri
    return b"\x90\x0e" + struct.pack("!H", len(value)) + value  # optional, extended length


class PrefixLimit(unittest.TestCase):
    @classmethod
    def write_config(cls, limit6):
        """The config; `limit6`: the fields of 127.0.0.6's IPv4 limit (changed by SIGHUP)."""
        with open(cls.conf, "w") as f:
            f.write(f'router {{ asn: 65000 router_id: "10.255.0.1" listen {{ address: "127.0.0.1" port: {cls.port} }} ebgp_requires_policy: false }}\n'
                    'fib { backend: BACKEND_NONE }\n'
                    'neighbors { address: "127.0.0.2" remote_as: 65002 passive: true\n'
                    f'  max_prefixes {{ family: IPV4_UNICAST limit: 10 restart_interval: {RESTART} }} }}\n'
                    'neighbors { address: "127.0.0.3" remote_as: 65003 passive: true\n'
                    '  max_prefixes { family: IPV4_UNICAST limit: 10 warning_only: true } }\n'
                    'neighbors { address: "127.0.0.4" remote_as: 65004 passive: true\n'
                    '  max_prefixes { family: IPV4_UNICAST limit: 10 } }\n'
                    'neighbors { address: "127.0.0.5" remote_as: 65005 passive: true\n'
                    '  address_families: [IPV4_UNICAST, IPV6_UNICAST]\n'
                    '  max_prefixes { family: IPV6_UNICAST limit: 2 warning_threshold_percent: 50 } }\n'
                    'neighbors { address: "127.0.0.6" remote_as: 65006 passive: true\n'
                    f'  max_prefixes {{ family: IPV4_UNICAST {limit6} }} }}\n')

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="bagd-prefix-limit-")
        cls.port = free_port()
        cls.metrics_port = free_port()
        cls.conf = os.path.join(cls.dir, "bagd.textproto")
        cls.write_config("limit: 5 warning_only: true")
        cls.sock = os.path.join(cls.dir, "bagd.sock")
        cls.log_path = os.path.join(cls.dir, "bagd.log")
        cls.log = open(cls.log_path, "w")
        cls.bagd = started(subprocess.Popen([BAGD, "--config", cls.conf, "--socket", cls.sock,
                                     "--metrics-listen", f"127.0.0.1:{cls.metrics_port}"],
                                    stdout=cls.log, stderr=subprocess.STDOUT))
        wait_until(lambda: os.path.exists(cls.sock), 10, "bagd socket")

    @classmethod
    def tearDownClass(cls):
        cls.bagd.terminate()
        cls.bagd.wait(10)
        cls.log.close()

    def tearDown(self):
        self.assertIsNone(self.bagd.poll(), "bagd exited")

    # --- helpers ---------------------------------------------------------------------------

    def neighbor(self, address):
        out = run([BAGCTL, "--socket", self.sock, "show", "neighbors", "--json"]).stdout
        for n in json.loads(out)["neighbors"]:
            if n["address"] == address:
                return n
        self.fail(f"no neighbor {address}")

    def limit_of(self, address, family="ipv4-unicast"):
        for l in self.neighbor(address).get("prefix_limits", []):
            if l["family"] == family:
                return l
        self.fail(f"no {family} limit shown for {address}")

    def metrics(self):
        return urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=5).read().decode()

    def connect(self, address, asn, families=((1, 1),)):
        """An established session from `address`, or None when bagd refuses the connection."""
        p = RawPeer(address, ("127.0.0.1", self.port), timeout=5)
        try:
            p.send(open_message(asn, "10.9.9.9", families=families))
            if p.until(1) is None:
                p.close()
                return None
            p.send(KEEPALIVE)
            if p.until(4) is None:
                p.close()
                return None
            self.drain(p)
            return p
        except (ConnectionResetError, BrokenPipeError, socket.timeout):
            p.close()
            return None

    @staticmethod
    def drain(p, quiet=0.3):
        """Reads what bagd sends (End-of-RIB, ...) until it is quiet, so that a close by this
        peer does not race a write of bagd's (issue 11 defect 1, fixed separately)."""
        p.sock.settimeout(quiet)
        try:
            while p.recv() is not None:
                pass
        except socket.timeout:
            pass
        finally:
            p.sock.settimeout(5)

    def announce(self, peer, asn, first, count):
        peer.send(update(attrs=attrs_v4(asn), nlri=nlri_v4(first, count)))

    def received(self, address):
        return int(self.neighbor(address).get("prefixes_received", "0"))

    # --- cases -----------------------------------------------------------------------------

    def test_cease_then_restart_after_the_interval(self):
        a = "127.0.0.2"
        p = self.connect(a, 65002)
        self.assertIsNotNone(p, "no session")
        try:
            self.assertEqual(self.limit_of(a)["limit"], 10)
            self.assertEqual(self.limit_of(a)["restart_interval_s"], RESTART)
            # 8 of 10: the warning (threshold 75 % = 7), the session stays.
            self.announce(p, 65002, 1, 8)
            wait_until(lambda: self.received(a) == 8, 5, "8 prefixes held")
            self.assertEqual(self.limit_of(a)["state"], "warning")
            self.assertEqual(self.neighbor(a)["state"], "Established")
            self.assertIn('bagd_neighbor_prefix_limit_events_total{event="warning",family="ipv4-unicast",'
                          'neighbor="127.0.0.2"} 1', self.metrics())
            # Re-announcing the same prefixes does not count them twice.
            self.announce(p, 65002, 1, 8)
            # 3 more: 11 > 10, Cease / Maximum Number of Prefixes Reached, AFI 1 SAFI 1 limit 10.
            self.announce(p, 65002, 2, 3)
            got = p.notification()
            ceased_at = time.monotonic()
            self.assertIsNotNone(got, "no NOTIFICATION: the limit was not enforced")
            self.assertEqual(got, (6, 1, b"\x00\x01\x01\x00\x00\x00\x0a"))
            self.assertIsNone(p.recv(), "session not closed after the Cease")
        finally:
            p.close()
        n = self.neighbor(a)
        self.assertEqual(n["state"], "Idle")
        self.assertTrue(n["prefix_limit_down"])
        self.assertGreater(int(n["prefix_limit_restart_unix_ms"]), 0)
        self.assertEqual(n.get("prefixes_received", "0"), "0", "the neighbor's routes were not dropped")
        self.assertEqual(n["last_notification_sent"]["code"], 6)
        self.assertEqual(n["last_notification_sent"]["subcode"], 1)
        self.assertIn("maximum prefixes exceeded", n["last_error"])
        table = run([BAGCTL, "--socket", self.sock, "show", "neighbors"]).stdout
        self.assertRegex(table, r"127\.0\.0\.2 .*Idle \(PfxCt\)")
        detail = run([BAGCTL, "--socket", self.sock, "show", "neighbors", a]).stdout
        self.assertIn("Maximum prefixes ipv4-unicast: 10, warning at 7 (75 %), restart after 2 s", detail)
        self.assertIn("Down: maximum prefixes exceeded; restarts at", detail)
        body = self.metrics()
        self.assertIn('bagd_neighbor_prefix_limit{family="ipv4-unicast",neighbor="127.0.0.2"} 10', body)
        self.assertIn('bagd_neighbor_prefix_limit_events_total{event="exceeded",family="ipv4-unicast",'
                      'neighbor="127.0.0.2"} 1', body)
        self.assertIn('bagd_notifications_sent_total{code="6",neighbor="127.0.0.2",subcode="1"} 1', body)
        # During the interval every connection is refused; after it one is taken.
        refused = 0
        while True:
            q = self.connect(a, 65002)
            if q is not None:
                break
            refused += 1
            self.assertLess(time.monotonic() - ceased_at, RESTART + 5, "not restarted after restart_interval")
            time.sleep(0.2)
        elapsed = time.monotonic() - ceased_at
        try:
            self.assertGreater(refused, 0)
            self.assertGreaterEqual(elapsed, RESTART - 0.3, f"restarted after {elapsed:.2f}s, before the interval")
            n = self.neighbor(a)
            self.assertEqual(n["state"], "Established")
            self.assertFalse(n["prefix_limit_down"])
            self.assertEqual(self.limit_of(a)["state"], "ok")
            # The new session is counted from nothing: 10 is allowed.
            self.announce(q, 65002, 1, 10)
            wait_until(lambda: self.received(a) == 10, 5, "10 prefixes held")
            q.send(KEEPALIVE)
            self.assertEqual(self.neighbor(a)["state"], "Established")
        finally:
            q.close()

    def test_reload_applies_new_limits(self):
        a = "127.0.0.6"
        p = self.connect(a, 65006)
        self.assertIsNotNone(p, "no session")
        try:
            self.announce(p, 65006, 1, 8)  # 8 > 5, warning_only
            wait_until(lambda: self.limit_of(a)["state"] == "exceeded", 5, "limit 5 exceeded")
            # SIGHUP with a higher limit: applied in place, the session stays.
            self.write_config("limit: 20")
            self.bagd.send_signal(signal.SIGHUP)
            wait_until(lambda: self.limit_of(a)["limit"] == 20, 5, "limit 20 after SIGHUP")
            self.assertEqual(self.limit_of(a)["state"], "ok")  # 8 < 15
            self.assertEqual(self.neighbor(a)["state"], "Established")
            # A limit lowered below what the neighbor holds applies at once.
            self.write_config("limit: 6")
            self.bagd.send_signal(signal.SIGHUP)
            self.assertEqual(p.notification(), (6, 1, b"\x00\x01\x01\x00\x00\x00\x06"))
            self.assertTrue(self.neighbor(a)["prefix_limit_down"])
        finally:
            p.close()
            self.write_config("limit: 5 warning_only: true")

    def test_warning_only_keeps_the_session(self):
        a = "127.0.0.3"
        p = self.connect(a, 65003)
        self.assertIsNotNone(p, "no session")
        try:
            self.announce(p, 65003, 1, 15)
            wait_until(lambda: self.received(a) == 15, 5, "15 prefixes held")
            p.send(KEEPALIVE)
            p.sock.settimeout(1)
            try:
                m = p.recv()
                while m is not None and m[0] != 3:
                    m = p.recv()
                self.fail(f"unexpected {m}")
            except socket.timeout:
                pass  # nothing but KEEPALIVEs/UPDATEs, no NOTIFICATION
            n = self.neighbor(a)
            self.assertEqual(n["state"], "Established")
            self.assertFalse(n["prefix_limit_down"])
            self.assertEqual(self.limit_of(a)["state"], "exceeded")
            self.assertTrue(self.limit_of(a)["warning_only"])
            self.assertEqual(self.limit_of(a)["count"], "15")
            body = self.metrics()
            self.assertIn('bagd_neighbor_prefix_limit_events_total{event="exceeded",family="ipv4-unicast",'
                          'neighbor="127.0.0.3"} 1', body)
            self.assertIn('bagd_neighbor_prefix_limit_state{family="ipv4-unicast",neighbor="127.0.0.3"} 2', body)
            with open(self.log_path) as f:
                self.assertIn("more than the maximum 10; warning_only: the session stays up", f.read())
        finally:
            p.close()

    def test_no_restart_interval_waits_for_enable(self):
        a = "127.0.0.4"
        p = self.connect(a, 65004)
        self.assertIsNotNone(p, "no session")
        try:
            self.announce(p, 65004, 1, 11)  # one UPDATE straight past the limit
            self.assertEqual(p.notification(), (6, 1, b"\x00\x01\x01\x00\x00\x00\x0a"))
        finally:
            p.close()
        n = self.neighbor(a)
        self.assertTrue(n["prefix_limit_down"])
        self.assertEqual(n.get("prefix_limit_restart_unix_ms", "0"), "0")
        detail = run([BAGCTL, "--socket", self.sock, "show", "neighbors", a]).stdout
        self.assertIn("stays down until `bagctl neighbor 127.0.0.4 enable`", detail)
        time.sleep(RESTART + 1)
        self.assertIsNone(self.connect(a, 65004), "restarted without an operator")
        run([BAGCTL, "--socket", self.sock, "neighbor", a, "enable"])
        q = wait_until(lambda: self.connect(a, 65004), 5, "session after enable")
        q.close()

    def test_ipv6_limit_names_afi_2(self):
        a = "127.0.0.5"
        p = self.connect(a, 65005, families=((1, 1), (2, 1)))
        self.assertIsNotNone(p, "no session")
        try:
            # IPv4 prefixes do not count against the IPv6 limit.
            self.announce(p, 65005, 1, 5)
            origin_path = b"\x40\x01\x01\x00" + b"\x40\x02\x06\x02\x01" + struct.pack("!I", 65005)
            p.send(update(attrs=origin_path + mp_reach_v6(2)))
            wait_until(lambda: self.limit_of(a, "ipv6-unicast")["count"] == "2", 5, "2 IPv6 prefixes held")
            self.assertEqual(self.limit_of(a, "ipv6-unicast")["state"], "warning")  # 50 % of 2 = 1
            self.assertEqual(self.received(a), 7)
            p.send(update(attrs=origin_path + mp_reach_v6(3)))
            self.assertEqual(p.notification(), (6, 1, b"\x00\x02\x01\x00\x00\x00\x02"))
        finally:
            p.close()


if __name__ == "__main__":
    unittest.main(verbosity=2)
