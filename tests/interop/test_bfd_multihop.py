"""BFD multihop (RFC 5883, issue 43) against FRR 8.4's bfdd in network namespaces (root; skipped
otherwise): bagd's neighbor with `bfd { multihop: true }` and FRR's `peer ADDR multihop
local-address ADDR` (UDP 4784, no TTL check) over one veth (multihop does not need more hops).

1. The session comes Up on both sides (FRR says multihop, bagd shows `multihop`), BGP is
   Established over it.
2. FRR changes its intervals at run time: bagd follows by a Poll Sequence, no flap.
3. FRR's egress cut (tc blackhole qdisc, carrier up): bagd's session goes Down within the
   detection time + a margin and takes BGP down (Cease / BFD Down).
4. Restored: BFD Up and BGP Established again."""
import json
import os
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from netlab import Lab, frr_conf, run, wait_until  # noqa: E402
from test_bfd import FrrBfd  # noqa: E402

LOCAL_AS = 65000
FRR_AS = 65001


class BfdMultihop(unittest.TestCase):
    def test_multihop_with_frr(self):
        with Lab("bfdmh") as lab:
            b, f = lab.netns("b"), lab.netns("f")
            b4, f4, _, _, _, f_if = lab.link(b, f)
            config = f"""
router {{ asn: {LOCAL_AS} router_id: "10.255.0.1" ebgp_requires_policy: false }}
fib {{ backend: BACKEND_NONE }}
neighbors {{ address: "{f4}" remote_as: {FRR_AS} local_address: "{b4}" timers {{ connect_retry: 1 }}
             bfd {{ multihop: true min_tx: 100 min_rx: 100 multiplier: 3 }} }}
"""
            bagd = lab.start_bagd(b, config)
            # FrrBfd writes `peer {peer}`: the multihop form rides in the peer string.
            frr_peer = f"{b4} multihop local-address {f4}"
            frr_bfd = FrrBfd(lab, f, "frrbfd", frr_peer, 100, 100, shutdown=False)
            lab.start_frr(f, frr_conf(b4, LOCAL_AS, FRR_AS, "10.255.0.2", networks=["10.1.0.0/24"]), f4)

            def bfd():
                sessions = json.loads(bagd.ctl("show", "bfd", "--json").stdout).get("sessions", [])
                return sessions[0] if sessions else {}

            # 1. Up on both sides, as multihop.
            wait_until(lambda: bfd().get("state") == "Up", 20, "multihop BFD Up")
            bagd.wait_state(f4, "Established", 30)
            wait_until(lambda: bfd().get("tx_interval_us") == 100000 and not bfd().get("poll_active", False), 5,
                       "the 100 ms interval in force")
            s = bfd()
            self.assertTrue(s["multihop"])
            self.assertEqual(s["detection_time_us"], "300000")
            self.assertIn("multihop", bagd.ctl("show", "bfd").stdout)
            peers = frr_bfd.peers()
            self.assertEqual(len(peers), 1, peers)
            self.assertTrue(peers[0]["multihop"], peers)
            self.assertEqual(peers[0]["status"], "up")
            self.assertEqual(peers[0]["remote-id"], s["local_discriminator"])
            self.assertEqual(peers[0]["id"], s["remote_discriminator"])

            # 2. FRR's new intervals followed, no flap.
            frr_bfd.configure(frr_peer, "transmit-interval 200", "receive-interval 250")
            wait_until(lambda: bfd().get("remote_min_rx_us") == 250000 and bfd().get("tx_interval_us") == 250000, 5,
                       "bagd sending every 250 ms")
            wait_until(lambda: bfd().get("detection_time_us") == "600000", 5, "detection time 600 ms")
            self.assertEqual(int(bfd().get("flaps", "0")), 0)
            frr_bfd.configure(frr_peer, "transmit-interval 100", "receive-interval 100")
            wait_until(lambda: bfd().get("detection_time_us") == "300000" and bfd().get("tx_interval_us") == 100000,
                       5, "back to 100 ms")
            time.sleep(0.5)

            # 3. FRR's egress cut, carrier up: BFD Down, BGP down with it.
            cut = time.monotonic()
            run(["ip", "netns", "exec", f, "tc", "qdisc", "replace", "dev", f_if, "root", "blackhole"])
            wait_until(lambda: bfd().get("state") != "Up", 3, "multihop BFD Down after the cut")
            took = time.monotonic() - cut
            print(f"multihop 100 ms x 3: cut to bagd's session Down as polled with bagctl: {took * 1000:.0f} ms")
            self.assertLess(took, 0.300 + 0.400, "detection well beyond 300 ms (polled)")
            self.assertEqual(bfd()["local_diagnostic"], "control detection time expired")
            wait_until(lambda: bagd.neighbor(f4).get("state") != "Established", 3, "BGP down")
            self.assertIn("BFD down", bagd.neighbor(f4).get("last_error", ""))

            # 4. Restored.
            run(["ip", "netns", "exec", f, "tc", "qdisc", "del", "dev", f_if, "root"])
            wait_until(lambda: bfd().get("state") == "Up", 10, "multihop BFD Up after the restore")
            bagd.wait_state(f4, "Established", 30)
            self.assertEqual(frr_bfd.peers()[0]["status"], "up")


if __name__ == "__main__":
    if os.geteuid() != 0:
        print("skipped: needs root (network namespaces)")
        sys.exit(77)
    for tool in ("/usr/lib/frr/bfdd", "/usr/lib/frr/zebra", "/usr/lib/frr/bgpd"):
        if not os.path.exists(tool):
            print(f"skipped: {tool} is missing (Debian package frr)")
            sys.exit(77)
    unittest.main()
