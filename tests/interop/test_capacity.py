"""Live capacity: a capacity source of four veth members in bagd's namespace feeds the link
bandwidth bagd originates for a prefix. Taking two members down lowers the bandwidth an FRR
peer sees; bringing them back raises it again after the hold-down. A second source takes
its speed from ethtool (a veth reports 10 Gbit/s)."""
import os
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from netlab import Lab, frr_receiver_conf, run, wait_until  # noqa: E402

LOCAL_AS = 65000


class Capacity(unittest.TestCase):
    def test_members_down_and_up(self):
        lab = Lab("cap")
        self.addCleanup(lab.close)
        b, r = lab.netns("b"), lab.netns("r")
        br4, r4, *_ = lab.link(b, r)
        # Four LAG members: veth pairs inside bagd's namespace; downing the far end takes the
        # carrier away from the member, as a failed optic would.
        for i in range(4):
            run(["ip", "-n", b, "link", "add", f"m{i}", "type", "veth", "peer", "name", f"m{i}p"])
            run(["ip", "-n", b, "link", "set", f"m{i}", "up"])
            run(["ip", "-n", b, "link", "set", f"m{i}p", "up"])
        for i in range(2):
            run(["ip", "-n", b, "link", "add", f"e{i}", "type", "veth", "peer", "name", f"e{i}p"])
            run(["ip", "-n", b, "link", "set", f"e{i}", "up"])
            run(["ip", "-n", b, "link", "set", f"e{i}p", "up"])
        bagd = lab.start_bagd(b, f"""
router {{ asn: {LOCAL_AS} router_id: "10.255.0.1" ebgp_requires_policy: false }}
neighbors {{ address: "{r4}" remote_as: 65003 timers {{ connect_retry: 1 }}
             link_bandwidth {{ readvertise_interval: 1 }} }}
capacity_sources {{ name: "lag1" members: ["m0", "m1", "m2", "m3"] member_speed: "1G" }}
capacity_sources {{ name: "veths" members: ["e0", "e1"] }}
networks {{ prefix: "10.200.0.0/24" capacity_source: "lag1" }}
networks {{ prefix: "10.201.0.0/24" capacity_source: "veths" }}
damping {{ increase_hold_down: 3 }}
fib {{ backend: BACKEND_NONE }}
""")
        rx = lab.start_frr(r, frr_receiver_conf(br4, LOCAL_AS), r4, name="frr-rx")
        bagd.wait_state(r4, "Established")

        def lb(prefix):
            paths = rx.json(f"show bgp ipv4 unicast {prefix} json").get("paths", [])
            text = paths[0].get("extendedCommunity", {}).get("string") if paths else None
            return text.split(" ")[0] if text else None

        def wait_lb(prefix, want, timeout):
            seen = []
            try:
                wait_until(lambda: seen.append(lb(prefix)) or seen[-1] == want, timeout, f"{want} for {prefix}")
            except AssertionError:
                self.fail(f"{prefix}: want {want}, FRR shows {seen[-1:]}")

        # 4 x 1 Gbit/s = 500000000 bytes/s; the ethtool source: 2 x 10 Gbit/s.
        wait_lb("10.200.0.0/24", "LB:65000:500000000", 30)
        wait_lb("10.201.0.0/24", "LB:65000:2500000000", 10)

        # Two members lose carrier: the bandwidth drops at once.
        t0 = time.monotonic()
        for i in range(2):
            run(["ip", "-n", b, "link", "set", f"m{i}p", "down"])
        wait_lb("10.200.0.0/24", "LB:65000:250000000", 10)
        self.assertLess(time.monotonic() - t0, 5)
        self.assertIn("capacity lag1: 2 of 4 members up", bagd.log())

        # They come back: held for the 3 s hold-down, then advertised.
        time.sleep(1.5)  # past the re-advertisement interval, so only the hold-down holds it
        t1 = time.monotonic()
        for i in range(2):
            run(["ip", "-n", b, "link", "set", f"m{i}p", "up"])
        wait_lb("10.200.0.0/24", "LB:65000:500000000", 15)
        self.assertGreater(time.monotonic() - t1, 2.5)
        self.assertIn("held until the hold-down ends", bagd.log())


if __name__ == "__main__":
    if os.geteuid() != 0:
        print("interop tests need root (network namespaces); skipped")
        sys.exit(77)
    unittest.main(verbosity=2)
