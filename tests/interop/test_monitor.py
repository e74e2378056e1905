"""`bagctl monitor` (WatchEvents) with the real daemon and FRR 8.4 in network namespaces: two
FRR sources advertise one prefix with different link bandwidths (route-map `set extcommunity
bandwidth`); `bagctl monitor --json`, started before anything is up, sees both sessions come
up (cause "established"), the weighted group appear, the weights follow a lower bandwidth at
once (cause "link-bandwidth"), a source going away (its session down, the group losing the
next hop: "next-hop-down"), a SIGHUP reload, and bagd stopping, after which it exits 0. A
second monitor, `--type neighbor` in text, sees only the sessions."""
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from netlab import BAGCTL, Lab, frr_conf  # noqa: E402

LOCAL_AS = 65000
PREFIX = "10.61.0.0/24"


def frr_source(asn, router_id, bagd_addr, mbps):
    """An FRR that originates PREFIX with link bandwidth `mbps` (Mbit/s)."""
    lb = f"bgp route-map delay-timer 1\nroute-map LB permit 10\n set extcommunity bandwidth {mbps}\n"
    return frr_conf(bagd_addr, LOCAL_AS, asn, router_id, hostname=f"frr-{asn}", before=lb,
                    networks=(f"{PREFIX} route-map LB",))


def bagd_config(a4, b4):
    return f"""
router {{ asn: {LOCAL_AS} router_id: "10.255.0.1" ebgp_requires_policy: false }}
neighbors {{ address: "{a4}" remote_as: 65001 description: "source-a" timers {{ connect_retry: 1 }} }}
neighbors {{ address: "{b4}" remote_as: 65002 description: "source-b" timers {{ connect_retry: 1 }} }}
multipath {{ maximum_paths_ebgp: 4 as_path_relax: true }}
fib {{ backend: BACKEND_NONE }}
"""


class Monitor:
    """A `bagctl monitor` process whose lines a thread collects."""

    def __init__(self, sock, *args):
        self.proc = subprocess.Popen([BAGCTL, "--socket", sock, "monitor", *args], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        self.lines = queue.Queue()
        self.seen = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))

    def next_matching(self, match, timeout, what):
        """The first line (JSON: the parsed event) for which match() holds; fails after timeout."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            try:
                line = self.lines.get(timeout=max(0.05, end - time.monotonic()))
            except queue.Empty:
                break
            self.seen.append(line)
            if match(line):
                return line
        raise AssertionError(f"no {what} within {timeout}s; monitor printed:\n" + "\n".join(self.seen[-40:]))

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(5)
        self.proc.stdout.close()
        self.proc.stderr.close()


def event(kind, pred=lambda e: True):
    def match(line):
        e = json.loads(line)
        return kind in e and pred(e[kind])
    return match


class MonitorTest(unittest.TestCase):
    def test_sessions_weights_reload_and_stop(self):
        lab = Lab("mon")
        self.addCleanup(lab.close)
        b, fa, fb = lab.netns("b"), lab.netns("fa"), lab.netns("fb")
        ba4, a4, *_ = lab.link(b, fa)
        bb4, b4, *_ = lab.link(b, fb)
        # --dry-run: the weights stage's FIB updates go to a logging backend, so the weight
        # events flow without installing routes.
        bagd = lab.start_bagd(b, bagd_config(a4, b4), extra=("--dry-run",))
        mon = Monitor(bagd.sock, "--json")
        self.addCleanup(mon.stop)
        text = Monitor(bagd.sock, "--type", "neighbor")
        self.addCleanup(text.stop)
        first = json.loads(mon.next_matching(lambda line: True, 10, "first event"))
        self.assertEqual(first["subscribed"]["types"], ["neighbor", "weights", "fib", "config", "bfd"])
        text.next_matching(lambda line: line.endswith(" watching neighbor events"), 10, "text subscribed")

        src_a = lab.start_frr(fa, frr_source(65001, "10.255.0.2", ba4, 1000), a4, name="frr-a")  # 1 Gbit/s
        src_b = lab.start_frr(fb, frr_source(65002, "10.255.0.3", bb4, 3000), b4, name="frr-b")  # 3 Gbit/s

        for addr in (a4, b4):
            up = json.loads(mon.next_matching(
                event("neighbor", lambda n: n["address"] == addr and n["to"] == "Established"), 60,
                f"{addr} Established"))["neighbor"]
            self.assertEqual(up["cause"], "established")
            self.assertEqual(up["from"], "OpenConfirm")
            self.assertIn(up["description"], ("source-a", "source-b"))
        text.next_matching(lambda line: f"neighbor {a4} (source-a): OpenConfirm -> Established (established)" in line,
                           10, "the text line of a session up")

        def weights_are(want):
            def pred(w):
                return {m["next_hop"]: m["new_weight"] for m in w["members"] if m["new_weight"]} == want
            return event("weights", pred)

        # 1 Gbit/s and 3 Gbit/s: 1:3.
        w = json.loads(mon.next_matching(weights_are({a4: 1, b4: 3}), 60, "weights 1:3"))["weights"]
        self.assertEqual(w["family"], "ipv4-unicast")
        self.assertEqual(w["prefixes"], "1")
        group = w["group"]

        # FRR b drops to 1 Gbit/s: followed at once, the same group, and the cause says why.
        src_b.vtysh("configure terminal", "route-map LB permit 10", "set extcommunity bandwidth 1000")
        w = json.loads(mon.next_matching(weights_are({a4: 1, b4: 1}), 30, "weights 1:1"))["weights"]
        self.assertEqual(w["group"], group)
        self.assertEqual(w["cause"], "link-bandwidth")
        members = {m["next_hop"]: m for m in w["members"]}
        self.assertEqual(members[b4]["old_weight"], 3)
        self.assertAlmostEqual(members[b4]["old_bandwidth_bps"], 3e9, delta=1e3)
        self.assertAlmostEqual(members[b4]["bandwidth_bps"], 1e9, delta=1e3)
        self.assertIn(f"{b4} 3G -> 1G", w["detail"])

        # Source a's operator shuts the session down: bagd receives a Cease (FRR 8.4 sends
        # Administrative Shutdown inside a Hard Reset, RFC 8538, as both sides sent the N
        # bit), and the group loses the next hop.
        src_a.vtysh("configure terminal", "router bgp 65001", f"neighbor {ba4} shutdown message maintenance")
        down = json.loads(mon.next_matching(
            event("neighbor", lambda n: n["address"] == a4 and n["from"] == "Established"), 60,
            f"{a4} down"))["neighbor"]
        self.assertEqual(down["cause"], "notification-received")
        self.assertFalse(down["sent"])
        self.assertIn((down["notification"]["code"], down["notification"]["subcode"]), ((6, 2), (6, 9)))
        text.next_matching(lambda line: f"neighbor {a4} (source-a): Established -> Idle (notification-received, "
                                        "received Cease / " in line, 10, "the text line of the shutdown")
        w = json.loads(mon.next_matching(event("weights", lambda w: w["cause"] == "next-hop-down"), 30,
                                         "next-hop-down"))["weights"]
        self.assertEqual({m["next_hop"]: m["new_weight"] for m in w["members"]}, {a4: 0, b4: 1})
        self.assertIn(f"{a4} left", w["detail"])

        # A reload.
        bagd.proc.send_signal(signal.SIGHUP)
        c = json.loads(mon.next_matching(event("config"), 20, "the reload"))["config"]
        self.assertEqual(c["source"], "SIGHUP")
        self.assertTrue(c["applied"])
        self.assertTrue(c["path"].endswith("bagd.textproto"))

        # bagd stops with both monitors attached: each gets "stopping" and exits 0.
        lab.stop(bagd.proc)
        mon.next_matching(event("stopping"), 20, "stopping")
        text.next_matching(lambda line: "bagd stopping: bagd is shutting down" in line, 20, "text stopping")
        self.assertEqual(mon.proc.wait(10), 0, mon.proc.stderr.read())
        self.assertEqual(text.proc.wait(10), 0, text.proc.stderr.read())
        # The text monitor never printed anything but neighbor events (and its own lines).
        for line in text.seen:
            self.assertRegex(line, r"^\S+ (watching|neighbor|bagd stopping)")


if __name__ == "__main__":
    if os.geteuid() != 0:
        print("interop tests need root (network namespaces); skipped")
        sys.exit(77)
    unittest.main(verbosity=2)
