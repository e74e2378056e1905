"""Graceful restart (RFC 4724) with FRR 8.4 in network namespaces (root; skipped otherwise).

Helper: two FRRs with `bgp graceful-restart` (and preserve-fw-state, so their new OPEN has F)
send two prefixes with link bandwidth 1 and 3 Gbit/s; bagd installs one weighted nexthop group.
FRR 1's bgpd is killed (SIGKILL: no NOTIFICATION) and started again: during the gap the kernel
in bagd's namespace does not change (`ip monitor` sees nothing, same group, same weights) and
bagd shows the stale paths; FRR 1 comes back without one of the prefixes, and after its
End-of-RIB that prefix has FRR 2's path alone while the other keeps both.

Restarting speaker: FRR 2 originates a prefix, bagd installs it and advertises it to FRR 1
(a helper). bagd is killed with -9 and started again: FRR 1 keeps the route all along
(marked stale while bagd is away, never withdrawn) and the session comes back, with the
route fresh again."""
import json
import os
import signal
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from netlab import Lab, frr_conf, kernel_of, run, wait_until  # noqa: E402

LOCAL_AS = 65000
PREFIXES = ("10.70.0.0/24", "10.71.0.0/24")


def frr(asn, rid, bagd_addr, mbps=None, prefixes=PREFIXES, notification=False):
    lb = f"route-map LB permit 10\n set extcommunity bandwidth {mbps}\n" if mbps else ""
    rm = " route-map LB" if mbps else ""
    # RFC 8538 (the N bit): FRR 8.4's `bgp graceful-restart notification`.
    gr = ["bgp graceful-restart", "bgp graceful-restart preserve-fw-state"]
    return frr_conf(bagd_addr, LOCAL_AS, asn, rid, hostname=f"frr-{asn}", before=lb,
                    router=gr + (["bgp graceful-restart notification"] if notification else []),
                    networks=[p + rm for p in prefixes])


def monitor(ns):
    m = subprocess.Popen(["ip", "-n", ns, "monitor", "nexthop", "route"], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True)
    time.sleep(0.3)
    return m


def changes(m):
    m.terminate()
    return [line for line in m.communicate(timeout=5)[0].splitlines() if line.strip() and "proto kernel" not in line]


def restart_frr(lab, frr_obj, ns, config, listen, name):
    lab.stop(frr_obj.proc, signal.SIGKILL)
    for f in ("bgpd.vty", "bgpd.pid"):
        try:
            os.remove(os.path.join(frr_obj.dir, f))
        except FileNotFoundError:
            pass
    return lab.start_frr(ns, config, listen, name=name)


class GracefulRestart(unittest.TestCase):
    def test_helper_keeps_the_kernel_while_frr_restarts(self):
        lab = Lab("grh")
        self.addCleanup(lab.close)
        b, f1, f2 = lab.netns("b"), lab.netns("f1"), lab.netns("f2")
        b1, p1, *_ = lab.link(b, f1)
        b2, p2, *_ = lab.link(b, f2)
        config = f"""
router {{ asn: {LOCAL_AS} router_id: "10.255.0.1" ebgp_requires_policy: false }}
neighbors {{ address: "{p1}" remote_as: 65001 timers {{ connect_retry: 1 }} }}
neighbors {{ address: "{p2}" remote_as: 65002 timers {{ connect_retry: 1 }} }}
multipath {{ maximum_paths_ebgp: 4 as_path_relax: true }}
"""
        bagd = lab.start_bagd(b, config)
        frr1 = lab.start_frr(f1, frr(65001, "10.255.0.2", b1, 1000), p1, name="frr1")
        lab.start_frr(f2, frr(65002, "10.255.0.3", b2, 3000), p2, name="frr2")

        def weights(prefix):
            out = bagd.ctl("show", "nexthop-groups", prefix, "--json", check=False)
            if out.returncode != 0:
                return None
            g = json.loads(out.stdout)["groups"][0]
            if not g.get("fib_object"):
                return None
            return {m["next_hop"]: m.get("weight", 0) for m in g["members"]}

        def installed():
            ours = [r for r in kernel_of(b)[1] if r.get("dst") in PREFIXES]
            return all(weights(p) == {p1: 1, p2: 3} for p in PREFIXES) and len(ours) == 2

        wait_until(installed, 40, "the weighted group and both routes in the kernel")
        gr = bagd.neighbor(p1)["graceful_restart"]
        self.assertEqual(gr.get("retained"), ["ipv4-unicast"], gr)
        self.assertEqual(gr.get("peer_forwarding_preserved"), ["ipv4-unicast"], gr)
        before = kernel_of(b)
        m = monitor(b)
        self.addCleanup(m.kill)

        # FRR 1 dies without a word, and comes back with one prefix fewer.
        lab.stop(frr1.proc, signal.SIGKILL)
        gr = wait_until(lambda: (lambda g: g.get("phase") == "restarting" and g)(
            bagd.neighbor(p1).get("graceful_restart", {})), 10, "bagd sees FRR 1 restarting")
        self.assertEqual(gr["stale_paths"], "2", gr)
        time.sleep(3)  # the gap
        self.assertEqual(kernel_of(b), before, "the kernel changed while FRR 1 was away")
        self.assertEqual(changes(m), [], "ip monitor saw the kernel change while FRR 1 was away")
        self.assertTrue(installed(), "bagd's groups changed while FRR 1 was away")
        m = monitor(b)
        self.addCleanup(m.kill)
        frr1 = restart_frr(lab, frr1, f1, frr(65001, "10.255.0.2", b1, 1000, prefixes=PREFIXES[:1]), p1, "frr1")
        bagd.wait_state(p1, "Established")

        # After its End-of-RIB, what it no longer has is gone; the rest kept its weights.
        wait_until(lambda: set(weights(PREFIXES[1]) or ()) == {p2}, 60, f"{PREFIXES[1]} with FRR 2's path alone")
        gr = wait_until(lambda: (lambda g: not g.get("phase") and g)(bagd.neighbor(p1).get("graceful_restart", {})), 10,
                        "no stale paths left")
        self.assertEqual(gr.get("stale_paths_removed"), "1", gr)
        self.assertEqual(weights(PREFIXES[0]), {p1: 1, p2: 3})
        seen = changes(m)
        self.assertFalse([line for line in seen if PREFIXES[0] in line], f"{PREFIXES[0]} was touched: {seen}")
        self.assertIn("End-of-RIB", bagd.log())

    def test_frr_keeps_bagds_routes_while_bagd_restarts(self):
        self.bagd_restarts(Lab("grs"), signal.SIGKILL, notification=False)

    def test_frr_keeps_bagds_routes_across_a_planned_stop(self):
        """RFC 8538: SIGTERM (`systemctl restart`) sends Cease / Administrative Shutdown; FRR,
        which negotiated the N bit, keeps bagd's routes as stale instead of withdrawing them."""
        self.bagd_restarts(Lab("grn"), signal.SIGTERM, notification=True)

    def bagd_restarts(self, lab, stop_signal, notification):
        self.addCleanup(lab.close)
        b, f1, f2 = lab.netns("b"), lab.netns("f1"), lab.netns("f2")
        b1, p1, *_ = lab.link(b, f1)
        b2, p2, *_ = lab.link(b, f2)
        config = f"""
router {{ asn: {LOCAL_AS} router_id: "10.255.0.1" ebgp_requires_policy: false }}
neighbors {{ address: "{p1}" remote_as: 65001 timers {{ connect_retry: 1 }} }}
neighbors {{ address: "{p2}" remote_as: 65002 timers {{ connect_retry: 1 }} }}
"""
        bagd = lab.start_bagd(b, config)
        helper = lab.start_frr(f1, frr(65001, "10.255.0.2", b1, prefixes=(), notification=notification), p1,
                               name="frr1")
        lab.start_frr(f2, frr(65002, "10.255.0.3", b2, 2000, prefixes=PREFIXES), p2, name="frr2")

        def at_helper(prefix):
            r = helper.json(f"show bgp ipv4 unicast {prefix} json")
            return r.get("paths") or None

        for p in PREFIXES:
            wait_until(lambda p=p: at_helper(p), 40, f"{p} from bagd at FRR 1")
        wait_until(lambda: all(r.get("dst") in PREFIXES for r in kernel_of(b)[1]) and len(kernel_of(b)[1]) == 2, 20,
                   "bagd's routes in its kernel")
        gr = bagd.neighbor(p1)["graceful_restart"]
        self.assertTrue(gr.get("peer_offered"), gr)
        self.assertEqual(gr.get("families"), ["ipv4-unicast"], gr)

        if notification:
            self.assertTrue(gr.get("peer_notification"), gr)  # (FRR 8.4 sets N by default, too)
        lab.stop(bagd.proc, stop_signal)
        if notification:
            # bagd said Cease / Administrative Shutdown (6/2), not Hard Reset.
            last = helper.neighbor(b1).get("lastNotificationReason", "") + helper.vtysh(f"show bgp neighbors {b1}")
            self.assertIn("Administrative Shutdown", last)
        # FRR 1 notices (bagd's Cease, or the kernel closed bagd's socket) and keeps the routes, stale.
        wait_until(lambda: helper.neighbor(b1).get("bgpState") != "Established", 20, "FRR 1 sees bagd gone")
        stale = wait_until(lambda: (lambda ps: ps if ps and all(x.get("stale") for x in ps) else None)(
            at_helper(PREFIXES[0])), 10, "the route marked stale at FRR 1")
        self.assertTrue(stale)
        time.sleep(2)
        for p in PREFIXES:
            self.assertTrue(at_helper(p), f"{p} withdrawn at FRR 1 while bagd was away")
        if os.path.exists(bagd.sock):  # a SIGTERM'd bagd removes its socket itself
            os.remove(bagd.sock)
        missing = []

        def back():
            for p in PREFIXES:
                if not at_helper(p):
                    missing.append(p)
            return helper.neighbor(b1).get("bgpState") == "Established"

        bagd = lab.start_bagd(b, config, name="bagd2")
        wait_until(back, 40, "the session back at FRR 1")
        bagd.wait_state(p1, "Established")
        # bagd's table and End-of-RIB went out once its own tables were in; FRR 1 has fresh routes.
        wait_until(lambda: all(at_helper(p) and not any(x.get("stale") for x in at_helper(p)) for p in PREFIXES), 60,
                   "the routes fresh at FRR 1")
        for p in PREFIXES:
            back()
        self.assertEqual(missing, [], "FRR 1 lost bagd's routes during the restart")
        self.assertIn("R set in OPENs", bagd.log())
        self.assertIn("deferred initial advertisement sent", bagd.log())


if __name__ == "__main__":
    if os.geteuid() != 0:
        print("skipped: needs root (network namespaces)")
        sys.exit(77)
    unittest.main()
