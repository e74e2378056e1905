"""bagd against a raw peer that sends garbage: each case gets the right NOTIFICATION
(exact code/subcode/data), its session resets, and other sessions are untouched.
Runs on loopback (no root needed for the BGP part)."""
import os
import socket
import struct
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from netlab import BAGD, BAGCTL, run, free_port, wait_until, started  # noqa: E402
from rawbgp import KEEPALIVE, RawPeer, message, open_message, update  # noqa: E402
import json  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402

PEERS = 12  # 127.0.0.2 .. 127.0.0.13, AS 65001.. (one per case)



class Garbage(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="bagd-garbage-")
        cls.port = free_port()
        cls.metrics_port = free_port()
        neighbors = "\n".join(
            f'neighbors {{ address: "127.0.0.{i + 2}" remote_as: {65001 + i} passive: true }}' for i in range(PEERS))
        conf = os.path.join(cls.dir, "bagd.textproto")
        with open(conf, "w") as f:
            f.write(f'router {{ asn: 65000 router_id: "10.255.0.1" listen {{ address: "127.0.0.1" port: {cls.port} }} ebgp_requires_policy: false }}\n'
                    'fib { backend: BACKEND_NONE }\n'  # root namespace: install nothing
                    f"{neighbors}\n")
        cls.sock = os.path.join(cls.dir, "bagd.sock")
        cls.log = open(os.path.join(cls.dir, "bagd.log"), "w")
        cls.bagd = started(subprocess.Popen([BAGD, "--config", conf, "--socket", cls.sock,
                                     "--metrics-listen", f"127.0.0.1:{cls.metrics_port}"],
                                    stdout=cls.log, stderr=subprocess.STDOUT))
        wait_until(lambda: os.path.exists(cls.sock), 10, "bagd socket")

    @classmethod
    def tearDownClass(cls):
        cls.bagd.terminate()
        cls.bagd.wait(10)
        cls.log.close()

    def peer(self, i):
        return RawPeer(f"127.0.0.{i + 2}", ("127.0.0.1", self.port))

    def state(self, i):
        out = run([BAGCTL, "--socket", self.sock, "show", "neighbors", "--json"]).stdout
        for n in json.loads(out)["neighbors"]:
            if n["address"] == f"127.0.0.{i + 2}":
                return n
        return {}

    def expect(self, i, data, code, subcode, notif_data=None, establish=True):
        p = self.peer(i)
        try:
            if establish:
                p.establish(65001 + i)
            p.send(data)
            got = p.notification()
            self.assertIsNotNone(got, "connection closed without a NOTIFICATION")
            self.assertEqual((got[0], got[1]), (code, subcode), f"got {got}")
            if notif_data is not None:
                self.assertEqual(got[2], notif_data)
            self.assertIsNone(p.recv(), "session not closed after the NOTIFICATION")
        finally:
            p.close()

    def test_bad_marker(self):
        self.expect(0, message(4, marker=b"\xff" * 15 + b"\x00"), 1, 1)

    def test_bad_length(self):
        self.expect(1, message(2, b"\x00" * 8, length=5000), 1, 2, struct.pack("!H", 5000))

    def test_unknown_type(self):
        self.expect(2, message(9), 1, 3, b"\x09")

    def test_truncated_open(self):
        # An OPEN whose length says 25: shorter than any OPEN can be.
        self.expect(3, message(1, b"\x04" + b"\x00" * 5, length=25), 1, 2, struct.pack("!H", 25), establish=False)

    def test_open_in_established(self):
        self.expect(4, open_message(65005, "10.9.9.9"), 5, 3)

    def test_bad_peer_as(self):
        self.expect(5, open_message(64999, "10.9.9.9"), 2, 2, establish=False)

    def test_hold_time_two(self):
        self.expect(6, open_message(65007, "10.9.9.9", hold=2), 2, 6, establish=False)

    def test_unsupported_version(self):
        self.expect(7, open_message(65008, "10.9.9.9", version=3), 2, 1, b"\x00\x04", establish=False)

    def test_duplicate_mp_reach_resets(self):
        mp = b"\x80\x0e\x15\x00\x02\x01\x10" + b"\x20\x01\x0d\xb8" + b"\x00" * 11 + b"\x01" + b"\x00"
        attrs = b"\x40\x01\x01\x00" + b"\x40\x02\x00" + mp + mp
        self.expect(8, update(attrs=attrs), 3, 1)

    def test_treat_as_withdraw_keeps_the_session(self):
        i = 9
        p = self.peer(i)
        try:
            p.establish(65001 + i)
            good = b"\x40\x01\x01\x00" + b"\x40\x02\x06\x02\x01" + struct.pack("!I", 65010) + b"\x40\x03\x04\x0a\x00\x00\x01"
            p.send(update(attrs=good, nlri=b"\x18\x0a\x01\x01"))
            wait_until(lambda: self.state(i).get("prefixes_received") == "1", 5, "prefix counted")
            bad_origin = b"\x40\x01\x01\x07" + good[4:]
            p.send(update(attrs=bad_origin, nlri=b"\x18\x0a\x01\x01"))  # treat-as-withdraw
            wait_until(lambda: self.state(i).get("prefixes_received", "0") == "0", 5, "prefix withdrawn")
            p.send(KEEPALIVE)
            self.assertEqual(self.state(i)["state"], "Established")
        finally:
            p.close()

    def test_other_sessions_untouched(self):
        good, bad = self.peer(10), self.peer(11)
        try:
            good.establish(65011)
            bad.establish(65012)
            bad.send(message(4, marker=b"\x00" * 16))
            self.assertEqual(bad.notification()[:2], (1, 1))
            good.send(KEEPALIVE)
            self.assertEqual(self.state(10)["state"], "Established")
            self.assertEqual(int(self.state(10)["established_transitions"]), 1)
        finally:
            good.close()
            bad.close()

    def test_zz_prometheus_metrics(self):
        # Runs last (alphabetical): the earlier cases left their marks in the counters.
        import urllib.request
        body = urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=5).read().decode()
        self.assertIn('bagd_neighbor_state{neighbor="127.0.0.13"}', body)
        self.assertRegex(body, r'bagd_notifications_sent_total\{code="1",neighbor="127.0.0.2",subcode="1"\} [1-9]')
        self.assertRegex(body, r'bagd_messages_received_total\{neighbor="127.0.0.11",type="open"\} [1-9]')
        self.assertRegex(body, r'bagd_neighbor_transitions_total\{neighbor="127.0.0.11",to="Established"\} [1-9]')
        self.assertRegex(body, r'bagd_bytes_sent_total\{neighbor="127.0.0.11"\} [1-9]')
        # The RIB: the treat-as-withdraw case announced one prefix and then withdrew it.
        self.assertRegex(body, r'bagd_decision_runs_total [1-9]')
        self.assertIn('bagd_rib_prefixes{family="ipv4-unicast"} 0', body)
        self.assertIn('bagd_rib_paths{family="ipv4-unicast"} 0', body)

    def test_unknown_address_closed_without_a_word(self):
        p = RawPeer("127.0.0.99", ("127.0.0.1", self.port))
        try:
            self.assertTrue(p.closed_without_data())
        finally:
            p.close()


if __name__ == "__main__":
    unittest.main(verbosity=2)
