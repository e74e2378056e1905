"""What bagd sends to its peers, seen by raw peers on loopback: eBGP export (own AS
prepended, next hop self), packing of prefixes that share attributes, withdrawals, the
initial dump with End-of-RIB, and the advertisement interval (MRAI)."""
import os
import socket
import struct
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from netlab import BAGD, free_port, wait_until, started  # noqa: E402
from rawbgp import KEEPALIVE, RawPeer, as_path, nlri, parse_update, update  # noqa: E402



def attrs(asns, next_hop="127.0.0.2", med=None):
    path = b"\x02" + bytes([len(asns)]) + b"".join(struct.pack("!I", a) for a in asns)
    a = b"\x40\x01\x01\x00" + b"\x40\x02" + bytes([len(path)]) + path + b"\x40\x03\x04" + socket.inet_aton(next_hop)
    if med is not None:
        a += b"\x80\x04\x04" + struct.pack("!I", med)
    return a


class Receiver:
    """A raw peer that collects the UPDATEs bagd sends, with arrival times."""

    def __init__(self, peer):
        self.peer = peer
        self.updates = []  # (time, withdrawn, attrs, nlri)

    def poll(self, seconds):
        end = time.monotonic() + seconds
        self.peer.sock.settimeout(0.05)
        while time.monotonic() < end:
            try:
                m = self.peer.recv()
            except socket.timeout:
                continue
            if m is None:
                raise AssertionError("bagd closed the session")
            if m[0] == 2:
                self.updates.append((time.monotonic(), *parse_update(m[1])))
            elif m[0] == 4:
                self.peer.send(KEEPALIVE)

    def announced(self):
        return [p for _, _, _, n in self.updates for p in n]


class Advertisement(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="bagd-adv-")
        self.port = free_port()
        conf = os.path.join(self.dir, "bagd.textproto")
        with open(conf, "w") as f:
            f.write(f"""router {{ asn: 65000 router_id: "10.255.0.1" listen {{ address: "127.0.0.1" port: {self.port} }}
         ebgp_requires_policy: false }}
fib {{ backend: BACKEND_NONE }}  # root namespace: install nothing
neighbors {{ address: "127.0.0.2" remote_as: 65002 passive: true }}
neighbors {{ address: "127.0.0.3" remote_as: 65003 passive: true advertisement_interval: 2 }}
neighbors {{ address: "127.0.0.4" remote_as: 65004 passive: true }}
networks {{ prefix: "10.200.0.0/24" }}
""")
        self.log = open(os.path.join(self.dir, "bagd.log"), "w")
        self.bagd = started(subprocess.Popen([BAGD, "--config", conf, "--socket", os.path.join(self.dir, "s.sock")],
                                     stdout=self.log, stderr=subprocess.STDOUT))
        self.addCleanup(self.stop)
        wait_until(lambda: os.path.exists(os.path.join(self.dir, "s.sock")), 10, "bagd socket")

    def stop(self):
        self.bagd.terminate()
        self.bagd.wait(10)
        self.log.close()

    def connect(self, last_octet, asn):
        p = RawPeer(f"127.0.0.{last_octet}", ("127.0.0.1", self.port))
        p.establish(asn, router_id=f"10.9.9.{last_octet}")
        self.addCleanup(p.close)
        return p

    def test_export_packing_withdraw_and_mrai(self):
        src = self.connect(2, 65002)
        slow = Receiver(self.connect(3, 65003))
        fast = Receiver(self.connect(4, 65004))
        # The initial dump: bagd's own network, then End-of-RIB.
        fast.poll(0.5)
        self.assertIn("10.200.0.0/24", fast.announced())
        self.assertTrue(any(not w and not a and not n for _, w, a, n in fast.updates), "no End-of-RIB")
        own = next(u for u in fast.updates if "10.200.0.0/24" in u[3])
        self.assertEqual(as_path(own[2][2]), [65000])
        self.assertEqual(socket.inet_ntoa(own[2][3]), "127.0.0.1")
        slow.poll(0.3)
        fast.updates.clear()
        slow.updates.clear()

        # One UPDATE now, then two more quickly.
        t0 = time.monotonic()
        src.send(update(attrs=attrs([65002, 65100], med=7), nlri=nlri("10.1.1.0/24")))
        time.sleep(0.2)
        src.send(update(attrs=attrs([65002, 65100], med=7), nlri=nlri("10.1.2.0/24")))
        src.send(update(attrs=attrs([65002, 65100], med=7), nlri=nlri("10.1.3.0/24")))
        for _ in range(30):
            fast.poll(0.1)
            slow.poll(0.1)
        # The fast receiver got each at once, exported for eBGP: own AS first, next hop self, no MED.
        self.assertEqual(sorted(fast.announced()), ["10.1.1.0/24", "10.1.2.0/24", "10.1.3.0/24"])
        first = fast.updates[0]
        self.assertEqual(as_path(first[2][2]), [65000, 65002, 65100])
        self.assertEqual(socket.inet_ntoa(first[2][3]), "127.0.0.1")
        self.assertNotIn(4, first[2])  # MED is not passed to another AS
        # The slow one (advertisement_interval 2): the first at once, the other two together
        # in one packed UPDATE after the interval.
        self.assertEqual(sorted(slow.announced()), ["10.1.1.0/24", "10.1.2.0/24", "10.1.3.0/24"])
        self.assertEqual(slow.updates[0][3], ["10.1.1.0/24"])
        self.assertLess(slow.updates[0][0] - t0, 1.0)
        later = [u for u in slow.updates[1:] if u[3]]
        self.assertEqual(len(later), 1, "the two changes within the interval went out in one UPDATE")
        self.assertEqual(sorted(later[0][3]), ["10.1.2.0/24", "10.1.3.0/24"])
        self.assertGreaterEqual(later[0][0] - slow.updates[0][0], 1.5)
        # Nothing goes back to the source.
        src.sock.settimeout(0.3)
        got = []
        try:
            while True:
                m = src.recv()
                if m is None:
                    break
                if m[0] == 2:
                    got += parse_update(m[1])[2]
        except socket.timeout:
            pass
        self.assertNotIn("10.1.1.0/24", got)

        # A withdraw at the source withdraws at the receivers.
        fast.updates.clear()
        src.send(update(withdrawn=nlri("10.1.1.0/24", "10.1.2.0/24")))
        fast.poll(1.0)
        withdrawn = [p for _, w, _, _ in fast.updates for p in w]
        self.assertEqual(sorted(withdrawn), ["10.1.1.0/24", "10.1.2.0/24"])
        # The source going away withdraws the rest.
        fast.updates.clear()
        src.close()
        fast.poll(1.5)
        self.assertIn("10.1.3.0/24", [p for _, w, _, _ in fast.updates for p in w])


class IbgpExport(unittest.TestCase):
    """RFC 4271 §9.1.3 / §5.1: no iBGP-learned route to another iBGP peer; eBGP-learned routes
    go to iBGP peers with the next hop unchanged and LOCAL_PREF present."""

    def test_ibgp_rules(self):
        d = tempfile.mkdtemp(prefix="bagd-ibgp-")
        port = free_port()
        conf = os.path.join(d, "bagd.textproto")
        with open(conf, "w") as f:
            f.write(f"""router {{ asn: 65000 router_id: "10.255.0.1" listen {{ address: "127.0.0.1" port: {port} }}
         ebgp_requires_policy: false }}
fib {{ backend: BACKEND_NONE }}  # root namespace: install nothing
neighbors {{ address: "127.0.0.5" remote_as: 65000 passive: true }}
neighbors {{ address: "127.0.0.6" remote_as: 65000 passive: true }}
neighbors {{ address: "127.0.0.7" remote_as: 65007 passive: true }}
""")
        log = open(os.path.join(d, "bagd.log"), "w")
        bagd = started(subprocess.Popen([BAGD, "--config", conf, "--socket", os.path.join(d, "s.sock")],
                                stdout=log, stderr=subprocess.STDOUT))
        try:
            wait_until(lambda: os.path.exists(os.path.join(d, "s.sock")), 10, "bagd socket")
            peers = {}
            for octet, asn in ((5, 65000), (6, 65000), (7, 65007)):
                p = RawPeer(f"127.0.0.{octet}", ("127.0.0.1", port))
                p.establish(asn, router_id=f"10.9.9.{octet}")
                peers[octet] = p
            ibgp_b, ebgp = Receiver(peers[6]), Receiver(peers[7])
            ibgp_b.poll(0.3)
            ebgp.poll(0.3)
            ibgp_b.updates.clear()
            ebgp.updates.clear()
            # From iBGP peer .5 (empty AS path, LOCAL_PREF 200): to eBGP only.
            ibgp_attrs = (b"\x40\x01\x01\x00" + b"\x40\x02\x00" + b"\x40\x03\x04" + socket.inet_aton("127.0.0.5")
                          + b"\x40\x05\x04" + struct.pack("!I", 200))
            peers[5].send(update(attrs=ibgp_attrs, nlri=nlri("10.5.0.0/24")))
            # From eBGP peer .7: to both iBGP peers, next hop unchanged, LOCAL_PREF 100.
            peers[7].send(update(attrs=attrs([65007], next_hop="127.0.0.7"), nlri=nlri("10.7.0.0/24")))
            ibgp_b.poll(1.0)
            ebgp.poll(0.2)
            self.assertEqual(ebgp.announced(), ["10.5.0.0/24"])
            to_ebgp = ebgp.updates[0][2]
            self.assertEqual(as_path(to_ebgp[2]), [65000])
            self.assertNotIn(5, to_ebgp)  # LOCAL_PREF stays inside the AS
            self.assertEqual(ibgp_b.announced(), ["10.7.0.0/24"])  # not 10.5.0.0/24
            to_ibgp = ibgp_b.updates[0][2]
            self.assertEqual(socket.inet_ntoa(to_ibgp[3]), "127.0.0.7")
            self.assertEqual(struct.unpack("!I", to_ibgp[5])[0], 100)
            self.assertEqual(as_path(to_ibgp[2]), [65007])
        finally:
            for p in locals().get("peers", {}).values():
                p.close()
            bagd.terminate()
            bagd.wait(10)
            log.close()


if __name__ == "__main__":
    unittest.main(verbosity=2)
