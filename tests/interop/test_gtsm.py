"""GTSM (RFC 5082, issue 11 defect 3) against the real daemon on loopback (no root needed):
loopback does not decrement the TTL, so a client socket sending with TTL 254 looks like a
peer two hops away.

- mixed listener (a neighbor without GTSM shares it): a TTL-254 peer that writes OPEN,
  KEEPALIVE and an UPDATE right after connecting never reaches Established, its route is not
  in the RIB, and the refusal is counted; the real TTL-255 neighbor is taken at once after
  it (not refused with Cease 6/7 behind a stale connection);
- every neighbor with GTSM: the listener drops the TTL-254 SYN in the kernel (connect()
  times out), TTL 255 connects;
- two inbound connections from one neighbor (the first silent): the second one, which sends
  its OPEN, is kept, whatever the router ids say (both are inbound: RFC 4271 §6.8's
  comparison of directions does not apply)."""
import json
import os
import socket
import struct
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from netlab import LoopbackBagd, wait_until  # noqa: E402
from rawbgp import KEEPALIVE, RawPeer, open_message, update  # noqa: E402


def connect(local_ip, server, ttl, timeout=5):
    s = socket.socket()
    s.setsockopt(socket.IPPROTO_IP, socket.IP_TTL, ttl)
    s.settimeout(timeout)
    s.bind((local_ip, 0))
    s.connect(server)
    return s


def raw(sock):
    p = RawPeer.__new__(RawPeer)
    p.sock, p.buf = sock, b""
    return p


class Daemon(LoopbackBagd):
    def __init__(self, neighbors):
        super().__init__("\n".join(neighbors) + "\n", name="gtsm")

    def routes(self):
        return json.loads(self.ctl("show", "routes", "--json").stdout).get("routes", [])

    def close(self):
        self.stop()


ATTRS = b"\x40\x01\x01\x00" + b"\x40\x02\x06\x02\x01" + struct.pack("!I", 65002) + b"\x40\x03\x04\x7f\x00\x00\x02"


class Gtsm(unittest.TestCase):
    def test_mixed_listener_refuses_a_far_peer_before_reading_it(self):
        d = Daemon(['neighbors { address: "127.0.0.2" remote_as: 65002 passive: true ttl_security: 1 }',
                    'neighbors { address: "127.0.0.3" remote_as: 65003 passive: true }'])
        try:
            for attempt in range(4):
                s = connect("127.0.0.2", ("127.0.0.1", d.port), ttl=254)
                # Everything at once, before bagd could set IP_MINTTL on the accepted socket.
                try:
                    s.sendall(open_message(65002, "10.9.9.9") + KEEPALIVE +
                              update(attrs=ATTRS, nlri=b"\x18\x0a\x01\x01"))
                except OSError:
                    pass
                got = b""
                try:
                    while True:
                        chunk = s.recv(4096)
                        if not chunk:
                            break
                        got += chunk
                except OSError:
                    pass
                s.close()
                self.assertEqual(got, b"", "bagd answered a peer below the GTSM minimum")
            time.sleep(0.3)
            n = d.neighbor("127.0.0.2")
            self.assertNotEqual(n["state"], "Established")
            self.assertEqual(n.get("established_transitions", "0"), "0")
            self.assertEqual(n.get("prefixes_received", "0"), "0")
            self.assertEqual(n.get("gtsm_refused"), "4")
            self.assertEqual(d.routes(), [])
            self.assertIn("its SYN arrived with TTL 254, below the GTSM minimum 255", d.log())
            # The real neighbor right after: taken at once, not refused as a collision.
            p = raw(connect("127.0.0.2", ("127.0.0.1", d.port), ttl=255))
            p.establish(65002, router_id="10.9.9.9")
            p.send(update(attrs=ATTRS, nlri=b"\x18\x0a\x01\x02"))
            wait_until(lambda: d.neighbor("127.0.0.2").get("prefixes_received") == "1", 5, "route from TTL 255")
            self.assertEqual(d.neighbor("127.0.0.2")["state"], "Established")
            p.close()
        finally:
            d.close()

    def test_listener_drops_far_syns_when_every_neighbor_uses_gtsm(self):
        d = Daemon(['neighbors { address: "127.0.0.2" remote_as: 65002 passive: true ttl_security: 1 }',
                    'neighbors { address: "127.0.0.3" remote_as: 65003 passive: true ttl_security: 2 }'])
        try:
            self.assertIn("SYNs with TTL below 254 are dropped", d.log())
            with self.assertRaises(OSError):  # the SYN never gets an answer
                connect("127.0.0.3", ("127.0.0.1", d.port), ttl=253, timeout=2).close()
            # 254 is enough for the two-hop neighbor; the one-hop one is refused after accept.
            p = raw(connect("127.0.0.3", ("127.0.0.1", d.port), ttl=254))
            p.establish(65003, router_id="10.9.9.9")
            self.assertEqual(d.neighbor("127.0.0.3")["state"], "Established")
            p.close()
            s = connect("127.0.0.2", ("127.0.0.1", d.port), ttl=254)
            s.sendall(open_message(65002, "10.9.9.9"))
            try:
                self.assertEqual(s.recv(100), b"")  # closed without a word...
            except ConnectionResetError:
                pass                                  # ...or reset, the OPEN unread
            s.close()
            self.assertEqual(d.neighbor("127.0.0.2").get("gtsm_refused"), "1")
        finally:
            d.close()

    def test_second_inbound_connection_with_open_wins(self):
        # Local id 10.255.0.1 > peer id 10.9.9.9: were the first (silent) inbound connection
        # taken for an outbound one, it would win and the live one get Cease 6/7.
        d = Daemon(['neighbors { address: "127.0.0.2" remote_as: 65002 passive: true }'])
        try:
            stale = connect("127.0.0.2", ("127.0.0.1", d.port), ttl=64)
            wait_until(lambda: d.neighbor("127.0.0.2")["state"] == "OpenSent", 5, "first connection in OpenSent")
            live = raw(connect("127.0.0.2", ("127.0.0.1", d.port), ttl=64))
            live.establish(65002, router_id="10.9.9.9")
            wait_until(lambda: d.neighbor("127.0.0.2")["state"] == "Established", 5, "second connection Established")
            # The stale one got Cease / Connection Collision Resolution and was closed.
            stale.settimeout(5)
            data = b""
            while True:
                chunk = stale.recv(4096)
                if not chunk:
                    break
                data += chunk
            self.assertIn(b"\x03\x06\x07", data)  # NOTIFICATION type 3, Cease 6, subcode 7
            stale.close()
            live.send(KEEPALIVE)
            time.sleep(0.2)
            self.assertEqual(d.neighbor("127.0.0.2")["state"], "Established")
            live.close()
        finally:
            d.close()


if __name__ == "__main__":
    unittest.main(verbosity=2)
