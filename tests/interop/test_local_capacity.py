"""Local capacity as a weight input (issue 17, docs/capacity.md "Local capacity"): two FRR peers
advertise one prefix with 4 Gbit/s of link bandwidth each; bagd reaches the first one over its
own "LAG" lag1, four veth members of 1 Gbit/s (member_speed) in its namespace
(local_capacity_source). One member losing carrier lowers that next hop's weight in the kernel
nexthop group (decoded from `ip -j nexthop show`) within 1 s: 3G:4G; the cumulative link
bandwidth a third FRR receives drops to 7G; bagctl says "local link lag1 3Gbps < advertised
4Gbps". Its return raises the weight only after the 3 s hold-down. A reload to
LOCAL_CAPACITY_IGNORE re-weighs at once without resetting a session."""
import json
import os
import signal
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from netlab import Lab, frr_conf, frr_receiver_conf, run, wait_until  # noqa: E402

LOCAL_AS = 65000
PREFIX = "10.80.0.0/24"


def frr_source(asn, rid, bagd_addr, mbps):
    """An FRR that originates PREFIX with `mbps` of link bandwidth."""
    before = f"bgp route-map delay-timer 1\nroute-map LB permit 10\n set extcommunity bandwidth {mbps}\n"
    return frr_conf(bagd_addr, LOCAL_AS, asn, rid, hostname=f"frr-{asn}", before=before,
                    networks=[f"{PREFIX} route-map LB"])


def bagd_config(p1, p2, r4, mode="LOCAL_CAPACITY_CAP"):
    return f"""
router {{ asn: {LOCAL_AS} router_id: "10.255.0.1" ebgp_requires_policy: false }}
capacity_sources {{ name: "lag1" members: ["m0", "m1", "m2", "m3"] member_speed: "1G" }}
neighbors {{ address: "{p1}" remote_as: 65001 timers {{ connect_retry: 1 }}
             local_capacity_source: "lag1" local_capacity: {mode} }}
neighbors {{ address: "{p2}" remote_as: 65002 timers {{ connect_retry: 1 }} }}
neighbors {{ address: "{r4}" remote_as: 65003 timers {{ connect_retry: 1 }}
             link_bandwidth {{ readvertise_interval: 0 }} }}
multipath {{ maximum_paths_ebgp: 4 as_path_relax: true }}
damping {{ increase_hold_down: 3 }}
"""


class LocalCapacity(unittest.TestCase):
    def test_lag_member_down_and_up_in_the_kernel(self):
        lab = Lab("lcap")
        self.addCleanup(lab.close)
        b, f1, f2, r = lab.netns("b"), lab.netns("f1"), lab.netns("f2"), lab.netns("r")
        b1, p1, *_ = lab.link(b, f1)
        b2, p2, *_ = lab.link(b, f2)
        br4, r4, *_ = lab.link(b, r)
        # The LAG toward f1: veth pairs inside bagd's namespace; downing the far end takes the
        # carrier away from the member, as a failed optic would.
        for i in range(4):
            run(["ip", "-n", b, "link", "add", f"m{i}", "type", "veth", "peer", "name", f"m{i}p"])
            run(["ip", "-n", b, "link", "set", f"m{i}", "up"])
            run(["ip", "-n", b, "link", "set", f"m{i}p", "up"])
        bagd = lab.start_bagd(b, bagd_config(p1, p2, r4), extra=("--metrics-listen", "127.0.0.1:9179"))

        def metric(name):
            script = ("import urllib.request; print(urllib.request.urlopen("
                      "'http://127.0.0.1:9179/metrics', timeout=2).read().decode())")
            body = run(["ip", "netns", "exec", b, sys.executable, "-c", script]).stdout
            line = next((x for x in body.splitlines() if x.startswith(name + " ")), None)
            return float(line.split()[-1]) if line else None
        lab.start_frr(f1, frr_source(65001, "10.255.0.2", b1, 4000), p1, name="frr1")
        lab.start_frr(f2, frr_source(65002, "10.255.0.3", b2, 4000), p2, name="frr2")
        rx = lab.start_frr(r, frr_receiver_conf(br4, LOCAL_AS), r4, name="frr-rx")
        for addr in (p1, p2, r4):
            bagd.wait_state(addr, "Established")

        def kernel_weights():
            nh = json.loads(run(["ip", "-n", b, "-j", "nexthop", "show"]).stdout or "[]")
            routes = json.loads(run(["ip", "-n", b, "-j", "route", "show", PREFIX]).stdout or "[]")
            gateway = {o["id"]: o.get("gateway") for o in nh if "gateway" in o}
            groups = {o["id"]: o for o in nh if "group" in o}
            if not routes or routes[0].get("nhid") not in groups:
                return None
            return {gateway.get(m["id"]): m.get("weight", 1) for m in groups[routes[0]["nhid"]]["group"]}

        def member(addr):
            out = bagd.ctl("show", "nexthop-groups", PREFIX, "--json", check=False)
            if out.returncode != 0:
                return None
            g = json.loads(out.stdout)["groups"][0]
            return next((m for m in g["members"] if m["next_hop"] == addr), None)

        def rx_lb():
            paths = rx.json(f"show bgp ipv4 unicast {PREFIX} json").get("paths", [])
            text = paths[0].get("extendedCommunity", {}).get("string") if paths else None
            return text.split(" ")[0] if text else None

        def wait_value(fn, want, timeout, what):
            seen = []
            try:
                wait_until(lambda: seen.append(fn()) or seen[-1] == want, timeout, what)
            except AssertionError:
                self.fail(f"timed out waiting for {what}: want {want!r}, last seen {seen[-1:]!r}")

        # 4G over the full LAG (4 x 1G) and 4G: 1:1; the receiver gets 8G (1e9 bytes/s).
        wait_value(kernel_weights, {p1: 1, p2: 1}, 60, "kernel weights 1:1")
        m = member(p1)
        self.assertEqual(m["local_capacity_source"], "lag1")
        self.assertFalse(m.get("local_capped", False))
        self.assertIn("<= local link lag1", m["applied_from"])
        wait_value(rx_lb, "LB:65000:1000000000", 30, "cumulative 8G at the receiver")
        transitions = {a: bagd.neighbor(a)["established_transitions"] for a in (p1, p2, r4)}

        # One LAG member loses carrier: 3G < 4G advertised, in the kernel within 1 s.
        t0 = time.monotonic()
        run(["ip", "-n", b, "link", "set", "m0p", "down"])
        wait_until(lambda: kernel_weights() == {p1: 3, p2: 4}, 5, "kernel weights 3:4")
        took = time.monotonic() - t0
        self.assertLess(took, 1.0, f"the kernel group followed after {took:.2f}s")
        print(f"member down -> kernel weights 3:4 in {took * 1000:.0f} ms", file=sys.stderr)
        m = member(p1)
        self.assertTrue(m["local_capped"])
        self.assertEqual(m["applied_from"], "local link lag1 3Gbps < advertised 4Gbps")
        self.assertAlmostEqual(m["applied_bandwidth_bps"], 3e9, delta=1e3)
        self.assertAlmostEqual(m["bandwidth_bps"], 4e9, delta=1e3)  # what f1 advertises, unchanged
        text = bagd.ctl("show", "nexthop-groups", PREFIX).stdout
        self.assertIn("APPLIED FROM", text)
        self.assertIn("local link lag1 3Gbps < advertised 4Gbps", text)
        # Upstream learns the bottleneck: 3G + 4G = 7G (875000000 bytes/s).
        wait_value(rx_lb, "LB:65000:875000000", 10, "cumulative 7G at the receiver")
        self.assertIn("local capacity lag1: 3Gbps", bagd.log())
        wait_value(lambda: metric('bagd_local_capacity_bps{source="lag1"}'), 3e9, 5, "the source's metric")
        self.assertEqual(metric("bagd_local_capacity_capped_members"), 1)

        # It comes back: held for the 3 s hold-down, then raised.
        time.sleep(0.5)
        t1 = time.monotonic()
        run(["ip", "-n", b, "link", "set", "m0p", "up"])
        wait_until(lambda: "local capacity lag1: 4Gbps: held until the hold-down ends" in bagd.log(), 5, "the recovery held")
        self.assertEqual(kernel_weights(), {p1: 3, p2: 4})
        wait_until(lambda: kernel_weights() == {p1: 1, p2: 1}, 15, "kernel weights 1:1 after the hold-down")
        raised = time.monotonic() - t1
        self.assertGreater(raised, 2.5)
        print(f"member up -> kernel weights 1:1 after {raised:.2f} s (hold-down 3 s)", file=sys.stderr)
        wait_value(rx_lb, "LB:65000:1000000000", 10, "cumulative 8G again")

        # Reload to LOCAL_CAPACITY_IGNORE with the member down: advertised only, at once; no reset.
        run(["ip", "-n", b, "link", "set", "m0p", "down"])
        run(["ip", "-n", b, "link", "set", "m1p", "down"])
        wait_until(lambda: kernel_weights() == {p1: 1, p2: 2}, 5, "kernel weights 2G:4G")
        with open(os.path.join(lab.dir, "bagd.textproto"), "w") as out:
            out.write(bagd_config(p1, p2, r4, mode="LOCAL_CAPACITY_IGNORE"))
        bagd.proc.send_signal(signal.SIGHUP)
        wait_until(lambda: kernel_weights() == {p1: 1, p2: 1}, 10, "kernel weights 1:1 after the reload")
        self.assertEqual({a: bagd.neighbor(a)["established_transitions"] for a in (p1, p2, r4)}, transitions)
        m = member(p1)
        self.assertFalse(m.get("local_capped", False))
        self.assertEqual(m.get("local_capacity_source", ""), "")  # not over a LAG any more
        self.assertEqual(m.get("applied_from", ""), "")


if __name__ == "__main__":
    if os.geteuid() != 0:
        print("skipped: needs root (network namespaces)")
        sys.exit(77)
    unittest.main()
