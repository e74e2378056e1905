"""Memory across session flaps (issue 11 defect 7: ~120 B per flap reported on 7c1ca38).
A neighbor flaps 1000 times with one route and 60 times with 10,000 routes carrying link
bandwidth, while another neighbor stays up and reads everything bagd sends it. bagd's RSS
must level off: the second half of each run may add at most a few hundred KiB (allocator
noise), where a per-flap leak of 120 B would add 60 KiB per 500 flaps, and one of 8 B per
route 2.4 MiB over 30 big flaps. Loopback, no root."""
import os
import socket
import struct
import sys
import threading
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from netlab import BAGD, LoopbackBagd, wait_until  # noqa: E402
from rawbgp import KEEPALIVE, RawPeer, update  # noqa: E402

ATTRS = b"\x40\x01\x01\x00" + b"\x40\x02\x06\x02\x01" + struct.pack("!I", 65002) + b"\x40\x03\x04\x7f\x00\x00\x02"
LB = b"\xc0\x10\x08\x00\x04\xfe\x02" + struct.pack("!f", 1.25e9)  # 10 Gbit/s


def table(n):
    out, b = [], b""
    for k in range(n):
        b += bytes([24, 10, (k >> 8) & 255, k & 255])
        if len(b) > 3900:
            out.append(update(attrs=ATTRS + LB, nlri=b))
            b = b""
    if b:
        out.append(update(attrs=ATTRS + LB, nlri=b))
    return out


def sanitized(binary):
    """An ASan build keeps freed memory in quarantine: its RSS says nothing about leaks (its
    LeakSanitizer checks those at exit instead)."""
    with open(binary, "rb") as f:
        return b"__asan_init" in f.read()


@unittest.skipIf(sanitized(BAGD), "ASan build: RSS includes the quarantine; LeakSanitizer covers leaks")
class FlapMemory(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.daemon = LoopbackBagd('neighbors { address: "127.0.0.2" remote_as: 65002 passive: true }\n'
                                  'neighbors { address: "127.0.0.3" remote_as: 65003 passive: true }\n', name="flapmem")
        cls.port, cls.bagd = cls.daemon.port, cls.daemon.proc
        # The neighbor that stays: reads all bagd sends (a peer that does not read makes
        # bagd queue for it, up to the 64 MiB write limit: that is not a leak).
        cls.stable = RawPeer("127.0.0.3", ("127.0.0.1", cls.port))
        cls.stable.establish(65003)

        def drain():
            try:
                while cls.stable.sock.recv(1 << 20):
                    pass
            except OSError:
                pass
        cls.stable.sock.settimeout(None)
        threading.Thread(target=drain, daemon=True).start()

    @classmethod
    def tearDownClass(cls):
        cls.stable.close()
        cls.daemon.stop()

    def rss_kib(self):
        with open(f"/proc/{self.bagd.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS"):
                    return int(line.split()[1])

    def received(self):
        n = self.daemon.neighbor("127.0.0.2")
        return n["state"], int(n.get("prefixes_received", "0"))

    def flap(self, updates, count):
        p = RawPeer("127.0.0.2", ("127.0.0.1", self.port))
        p.establish(65002)
        for u in updates:
            p.send(u)
        p.send(KEEPALIVE)
        # Polled every 10 ms (not netlab's 100): each flap waits twice, and 1325 flaps at the
        # default interval spent most of this test's time asleep.
        wait_until(lambda: self.received() == ("Established", count), 20, f"{count} routes in", interval=0.01)
        p.close()
        wait_until(lambda: self.received()[0] != "Established", 20, "session down", interval=0.01)

    def run_flaps(self, updates, count, flaps):
        for _ in range(flaps // 4):  # warm-up: pools, caches and arenas reach their size
            self.flap(updates, count)
        marks = []
        for half in range(2):
            for _ in range(flaps // 2):
                self.flap(updates, count)
            marks.append(self.rss_kib())
        self.assertIsNone(self.bagd.poll())
        return marks

    def test_many_small_flaps(self):
        one = [update(attrs=ATTRS + LB, nlri=b"\x18\x0a\x01\x01")]
        a, b = self.run_flaps(one, 1, 1000)
        print(f"RSS after 750 flaps {a} KiB, after 1250 {b} KiB")
        self.assertLess(b - a, 384, f"RSS grew {b - a} KiB over 500 flaps")

    def test_flaps_of_a_full_table(self):
        big = table(10000)
        a, b = self.run_flaps(big, 10000, 60)
        print(f"RSS after 45 big flaps {a} KiB, after 75 {b} KiB")
        self.assertLess(b - a, 768, f"RSS grew {b - a} KiB over 30 flaps of 10k routes")


if __name__ == "__main__":
    unittest.main(verbosity=2)
