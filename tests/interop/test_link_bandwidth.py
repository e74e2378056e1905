"""Link bandwidth end to end with real peers in network namespaces: FRR (route-map `set
extcommunity bandwidth`) and GoBGP (policy `lb:AS:bytes`) advertise one prefix with different
bandwidths; bagd weighs the multipath set (`bagctl show nexthop-groups --json`), advertises
the cumulative bandwidth to a second FRR, which shows it as `LB:`; a lower bandwidth is
followed at once, a higher one after the hold-down; a SIGHUP reload of the damping timers
keeps every session up, and a broken config is rejected with the old one kept."""
import json
import os
import signal
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from netlab import Lab, frr_receiver_conf, gobgp_lb_toml, wait_until  # noqa: E402

LOCAL_AS = 65000
PREFIX = "10.60.0.0/24"


def frr_source(bagd_addr, mbps):
    return f"""hostname frr-lb
bgp route-map delay-timer 1
route-map LB permit 10
 set extcommunity bandwidth {mbps}
router bgp 65001
 bgp router-id 10.255.0.2
 no bgp ebgp-requires-policy
 no bgp network import-check
 no bgp default ipv4-unicast
 neighbor {bagd_addr} remote-as {LOCAL_AS}
 neighbor {bagd_addr} timers connect 1
 address-family ipv4 unicast
  neighbor {bagd_addr} activate
  network {PREFIX} route-map LB
 exit-address-family
"""


def frr_receiver(bagd_addr):
    return frr_receiver_conf(bagd_addr, LOCAL_AS)


def gobgp_toml(bagd_addr, local_addr, bytes_per_second):
    return gobgp_lb_toml(65002, "10.255.0.3", local_addr, bagd_addr, bytes_per_second, LOCAL_AS)


def bagd_config(f4, g4, r4, hold_down):
    return f"""
router {{ asn: {LOCAL_AS} router_id: "10.255.0.1" ebgp_requires_policy: false }}
neighbors {{ address: "{f4}" remote_as: 65001 timers {{ connect_retry: 1 }} }}
neighbors {{ address: "{g4}" remote_as: 65002 timers {{ connect_retry: 1 }} }}
neighbors {{ address: "{r4}" remote_as: 65003 timers {{ connect_retry: 1 }}
             link_bandwidth {{ mode: EXPORT_CUMULATIVE readvertise_interval: 0 }} }}
multipath {{ maximum_paths_ebgp: 4 as_path_relax: true }}
damping {{ increase_hold_down: {hold_down} }}
fib {{ backend: BACKEND_NONE }}
"""


class LinkBandwidth(unittest.TestCase):
    def wait_value(self, fn, want, timeout, what):
        seen = []
        try:
            wait_until(lambda: seen.append(fn()) or seen[-1] == want, timeout, what)
        except AssertionError:
            self.fail(f"timed out waiting for {what}: want {want!r}, last seen {seen[-1:]!r}")

    def test_weights_cumulative_hold_down_and_reload(self):
        lab = Lab("lbw")
        self.addCleanup(lab.close)
        b, f, g, r = lab.netns("b"), lab.netns("f"), lab.netns("g"), lab.netns("r")
        bf4, f4, *_ = lab.link(b, f)
        bg4, g4, *_ = lab.link(b, g)
        br4, r4, *_ = lab.link(b, r)
        config = bagd_config(f4, g4, r4, hold_down=30)
        bagd = lab.start_bagd(b, config)
        frr = lab.start_frr(f, frr_source(bf4, 1000), f4, name="frr-src")  # 1 Gbit/s
        rx = lab.start_frr(r, frr_receiver(br4), r4, name="frr-rx")
        gobgp = lab.start_gobgp(g, gobgp_toml(bg4, g4, 375000000))  # 3 Gbit/s in bytes/s
        for addr in (f4, g4, r4):
            bagd.wait_state(addr, "Established")
        gobgp.cli("global", "rib", "add", PREFIX, "origin", "igp", "-a", "ipv4")

        def group():
            out = bagd.ctl("show", "nexthop-groups", PREFIX, "--json", check=False)
            if out.returncode != 0:
                return None
            groups = json.loads(out.stdout).get("groups", [])
            return groups[0] if groups else None

        def weights():
            g = group()
            return {m["next_hop"]: m.get("weight", 0) for m in g["members"]} if g else {}

        # 1 Gbit/s via FRR, 3 Gbit/s via GoBGP: 1:3.
        wait_until(lambda: weights() == {f4: 1, g4: 3}, 30, "weights 1:3")
        members = {m["next_hop"]: m for m in group()["members"]}
        self.assertAlmostEqual(members[f4]["bandwidth_bps"], 1e9, delta=1e3)
        self.assertAlmostEqual(members[g4]["bandwidth_bps"], 3e9, delta=1e3)
        self.assertEqual(members[g4]["bandwidth_source"], "community")
        route = json.loads(bagd.ctl("show", "routes", PREFIX, "--json").stdout)["routes"][0]
        self.assertEqual(route["nexthop_group"], group()["id"])
        self.assertIn(f"Next-hop group {group()['id']}", bagd.ctl("show", "routes", PREFIX).stdout)

        def rx_lb():
            routes = rx.json(f"show bgp ipv4 unicast {PREFIX} json").get("paths", [])
            if not routes:
                return None
            # "LB:65000:500000000": the bytes/s value; FRR 8.4's rate in
            # parentheses is rounded oddly (437500000 shows as 3.000 Gbps).
            text = routes[0].get("extendedCommunity", {}).get("string")
            return text.split(" ")[0] if text else None

        # The receiver sees the cumulative 4 Gbit/s (500000000 bytes/s) under bagd's AS.
        self.wait_value(rx_lb, "LB:65000:500000000", 30, "cumulative LB at the receiver")

        uptime_before = {a: bagd.neighbor(a)["established_transitions"] for a in (f4, g4, r4)}
        group_id = group()["id"]

        # FRR's link drops to 500 Mbit/s: followed at once (0.5:3 = 1:6), same group.
        frr.vtysh("configure terminal", "route-map LB permit 10", "set extcommunity bandwidth 500")
        t0 = time.monotonic()
        wait_until(lambda: weights() == {f4: 1, g4: 6}, 20, "weights 1:6")
        self.assertLess(time.monotonic() - t0, 15)
        self.assertEqual(group()["id"], group_id)
        self.wait_value(rx_lb, "LB:65000:437500000", 20, "cumulative 3.5 Gbit/s")

        # Reload with a shorter hold-down; the sessions stay up.
        config_path = os.path.join(lab.dir, "bagd.textproto")
        with open(config_path, "w") as out:
            out.write(bagd_config(f4, g4, r4, hold_down=3))
        bagd.proc.send_signal(signal.SIGHUP)
        wait_until(lambda: "reloaded" in bagd.log(), 10, "reload logged")
        s = json.loads(bagd.ctl("show", "nexthop-groups", "--json").stdout)["settings"]
        self.assertEqual(s["increase_hold_down_s"], 3)

        # Back to 1 Gbit/s: an increase, held for 3 s, then applied.
        frr.vtysh("configure terminal", "route-map LB permit 10", "set extcommunity bandwidth 1000")
        pending = wait_until(lambda: next((m for m in (group() or {}).get("members", [])
                                           if m["next_hop"] == f4 and m["damping_state"] == "pending-increase"), None),
                             20, "a pending increase")
        self.assertEqual(weights(), {f4: 1, g4: 6})
        self.assertGreater(int(pending["pending_until_unix_ms"]), int(time.time() * 1000) - 1000)
        wait_until(lambda: weights() == {f4: 1, g4: 3}, 20, "weights 1:3 after the hold-down")

        # A broken config is rejected whole; the old one keeps running.
        with open(config_path, "w") as out:
            out.write(bagd_config(f4, g4, r4, hold_down=3).replace("increase_hold_down: 3", "increase_hold_down: 99999"))
        bagd.proc.send_signal(signal.SIGHUP)
        wait_until(lambda: "keeping the running configuration" in bagd.log(), 10, "rejected reload logged")
        s = json.loads(bagd.ctl("show", "nexthop-groups", "--json").stdout)["settings"]
        self.assertEqual(s["increase_hold_down_s"], 3)
        self.assertIsNone(bagd.proc.poll())
        self.assertEqual({a: bagd.neighbor(a)["established_transitions"] for a in (f4, g4, r4)}, uptime_before)
        for a in (f4, g4, r4):
            self.assertEqual(bagd.neighbor(a)["state"], "Established")


if __name__ == "__main__":
    if os.geteuid() != 0:
        print("interop tests need root (network namespaces); skipped")
        sys.exit(77)
    unittest.main(verbosity=2)
