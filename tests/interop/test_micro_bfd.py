"""Micro-BFD (RFC 7130, issue 43, docs/bfd.md "Micro-BFD") between two bagd instances in network
namespaces (root; skipped otherwise). A "LAG" lag1 of three veth members m0..m2 joins the two
namespaces; each side has its LAG-level address on every member (10.77.0.1 and 10.77.0.2, as a
LAG's IP interface has) and runs a micro-BFD session per member (UDP 6784, bound to the member).
Both originate a prefix whose link bandwidth is lag1's live capacity (3 x 1G); BGP runs over a
separate link, so that the cut below does not stall it.

1. Every member's session comes Up on both sides; `bagctl show bfd` lists them with their
   member and LAG (table and JSON); the far end sees 3G (375000000 bytes/s).
2. The path cut on one member (B's egress on m1 dropped by a tc blackhole qdisc; the carrier
   stays up): A's session on m1 goes Down within the detection time (300 ms) + a margin; A's
   lag1 capacity drops to 2G at once (log, bagd_local_capacity_bps) and B receives the
   prefix with 2G; B's own session on m1 goes Down too (A said so), its capacity follows.
3. The path restored: the sessions come Up and the capacity returns only after the 3 s
   hold-down.
4. Reload: micro_bfd removed from A (its sessions leave `bagctl show bfd`, a cut member no
   longer lowers A's capacity: its carrier is up), then added again (the sessions come back
   and a cut lowers it again).
The measured detection times are printed."""
import datetime
import json
import os
import signal
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from netlab import Lab, run, wait_until  # noqa: E402

PREFIX_A = "10.200.0.0/24"
PREFIX_B = "10.201.0.0/24"
MEMBERS = ["m0", "m1", "m2"]


def config(asn, rid, peer, peer_as, local_lag, peer_lag, prefix, micro=True):
    micro_bfd = (f'micro_bfd {{ local_address: "{local_lag}" neighbor_address: "{peer_lag}" profile: "fast" }}'
                 if micro else "")
    members = ", ".join(f'"{m}"' for m in MEMBERS)
    return f"""
router {{ asn: {asn} router_id: "{rid}" ebgp_requires_policy: false }}
fib {{ backend: BACKEND_NONE }}
bfd_profiles {{ name: "fast" min_tx: 100 min_rx: 100 multiplier: 3 }}
capacity_sources {{ name: "lag1" members: [{members}] member_speed: "1G"
  {micro_bfd} }}
networks {{ prefix: "{prefix}" capacity_source: "lag1" }}
neighbors {{ address: "{peer}" remote_as: {peer_as} timers {{ connect_retry: 1 }}
             local_capacity_source: "lag1" link_bandwidth {{ readvertise_interval: 0 }} }}
damping {{ increase_hold_down: 3 }}
"""


def log_time(line):
    stamp = datetime.datetime.strptime(line.split()[0], "%Y-%m-%dT%H:%M:%S.%fZ")
    return stamp.replace(tzinfo=datetime.timezone.utc).timestamp()


def first_line_after(log, text, since):
    """The time stamp of the first log line containing `text` logged after `since` (epoch s)."""
    for line in log.splitlines():
        if text in line:
            try:
                at = log_time(line)
            except (ValueError, IndexError):
                continue
            if at > since:
                return at
    return None


class MicroBfd(unittest.TestCase):
    def test_micro_bfd_between_two_bagd(self):
        with Lab("ubfd") as lab:
            a, b = lab.netns("a"), lab.netns("b")
            a4, b4, *_ = lab.link(a, b)  # BGP's own link
            for i, m in enumerate(MEMBERS):
                ta, tb = f"{lab.tag}x{i}"[:15], f"{lab.tag}y{i}"[:15]
                run(["ip", "link", "add", ta, "type", "veth", "peer", "name", tb])
                run(["ip", "link", "set", ta, "netns", a, "name", m])
                run(["ip", "link", "set", tb, "netns", b, "name", m])
                for ns, addr in ((a, "10.77.0.1"), (b, "10.77.0.2")):
                    run(["ip", "-n", ns, "addr", "add", f"{addr}/32", "dev", m])
                    run(["ip", "-n", ns, "link", "set", m, "up"])
            # The far end's LAG address over every member (a LAG's traffic is spread on all).
            for ns, far in ((a, "10.77.0.2"), (b, "10.77.0.1")):
                run(["ip", "-n", ns, "route", "add", f"{far}/32"] + sum((["nexthop", "dev", m] for m in MEMBERS), []))

            conf_a = config(65000, "10.255.0.1", b4, 65001, "10.77.0.1", "10.77.0.2", PREFIX_A)
            conf_b = config(65001, "10.255.0.2", a4, 65000, "10.77.0.2", "10.77.0.1", PREFIX_B)
            bagd_a = lab.start_bagd(a, conf_a, name="bagd-a", extra=("--metrics-listen", "127.0.0.1:9179"))
            bagd_b = lab.start_bagd(b, conf_b, name="bagd-b")
            bagd_a.wait_state(b4, "Established")
            bagd_b.wait_state(a4, "Established")

            def sessions(bagd):
                out = bagd.ctl("show", "bfd", "--json").stdout
                return {s.get("interface", ""): s for s in json.loads(out).get("sessions", [])}

            def all_up(bagd):
                s = sessions(bagd)
                return all(s.get(m, {}).get("state") == "Up" for m in MEMBERS)

            def received_lb(bagd, prefix):
                """The link bandwidth (bits/s) of `prefix` as the peer's bagd received it."""
                out = bagd.ctl("show", "nexthop-groups", prefix, "--json", check=False)
                if out.returncode != 0:
                    return None
                groups = json.loads(out.stdout).get("groups", [])
                if not groups or not groups[0].get("members"):
                    return None
                return groups[0]["members"][0].get("bandwidth_bps")

            def metric(name):
                script = ("import urllib.request; print(urllib.request.urlopen("
                          "'http://127.0.0.1:9179/metrics', timeout=2).read().decode())")
                body = run(["ip", "netns", "exec", a, sys.executable, "-c", script]).stdout
                lines = [x for x in body.splitlines() if x.startswith(name)]
                return lines

            def wait_value(fn, want, timeout, what):
                seen = []
                try:
                    wait_until(lambda: seen.append(fn()) or seen[-1] == want, timeout, what)
                except AssertionError:
                    self.fail(f"timed out waiting for {what}: want {want!r}, last seen {seen[-1:]!r}")

            # 1. Every member Up on both sides; B sees A's 3G.
            wait_until(lambda: all_up(bagd_a) and all_up(bagd_b), 20, "micro-BFD Up on every member")
            wait_until(lambda: all(s.get("tx_interval_us") == 100000 for s in sessions(bagd_a).values()), 5,
                       "the 100 ms interval in force")
            s = sessions(bagd_a)
            self.assertEqual(sorted(s), MEMBERS)
            for m in MEMBERS:
                self.assertEqual(s[m]["capacity_source"], "lag1")
                self.assertEqual(s[m]["peer"], "10.77.0.2")
                self.assertEqual(s[m]["local_address"], "10.77.0.1")
                self.assertEqual(s[m]["detection_time_us"], "300000")
                self.assertTrue(s[m]["member_allowed"])
                self.assertEqual(s[m]["member_liveness"], "up")
            # Three sessions with the same addresses, three discriminators, each matched with B's
            # session on the same member.
            sb = sessions(bagd_b)
            for m in MEMBERS:
                self.assertEqual(s[m]["remote_discriminator"], sb[m]["local_discriminator"])
            self.assertEqual(len({s[m]["local_discriminator"] for m in MEMBERS}), 3)
            table = bagd_a.ctl("show", "bfd").stdout
            self.assertIn("micro-bfd", table)
            self.assertIn("Member", table)
            detail = bagd_a.ctl("show", "bfd", "10.77.0.2").stdout
            self.assertIn("micro-BFD on m1", detail)
            self.assertIn("member m1 of capacity source lag1: BFD says up, so it counts", detail)
            wait_value(lambda: received_lb(bagd_b, PREFIX_A), 3e9, 20, "B receives A's 3G")
            wait_value(lambda: received_lb(bagd_a, PREFIX_B), 3e9, 20, "A receives B's 3G")
            self.assertTrue(any('interface="m1"' in x for x in metric("bagd_bfd_session_state")),
                            metric("bagd_bfd_session_state"))

            # 2. The path cut on m1 (B's egress), carrier up; then 3. restored.
            detections, capacity_drops, lb_seen, raised = [], [], [], []
            for attempt in range(2):
                wait_until(lambda: all_up(bagd_a) and all_up(bagd_b), 20, "every member Up before the cut")
                time.sleep(0.5)
                cut = time.monotonic()
                run(["ip", "netns", "exec", b, "tc", "qdisc", "replace", "dev", "m1", "root", "blackhole"])
                cut_wall = time.time()
                wait_value(lambda: received_lb(bagd_b, PREFIX_A), 2e9, 5, "B receives A's 2G after the cut")
                lb_seen.append(time.monotonic() - cut)
                down_at = wait_until(
                    lambda: first_line_after(bagd_a.log(), "micro-bfd lag1 member m1 (10.77.0.2): Up -> Down",
                                             cut_wall - 1), 5, "A's log line")
                dropped_at = wait_until(
                    lambda: first_line_after(bagd_a.log(), "capacity lag1: 2 of 3 members up", cut_wall - 1), 5,
                    "A's capacity line")
                detections.append(down_at - cut_wall)
                capacity_drops.append(dropped_at - cut_wall)
                self.assertIn("(micro-BFD down: m1)", bagd_a.log())
                s = sessions(bagd_a)
                self.assertEqual(s["m1"]["local_diagnostic"], "control detection time expired")
                self.assertFalse(s["m1"]["member_allowed"])
                self.assertEqual(s["m0"]["state"], "Up")
                self.assertEqual(s["m2"]["state"], "Up")
                self.assertIn(['10.77.0.2', 'micro-bfd', 'lag1', 'm1'], [
                    line.split()[:4] for line in bagd_a.ctl("show", "bfd").stdout.splitlines()])
                wait_until(lambda: any(x.endswith(" 2000000000") for x in
                                       metric('bagd_local_capacity_bps{source="lag1"}')), 5,
                           "A's local capacity metric at 2G")
                # B's session on m1 heard A's Down: B's lag1 drops too (A receives 2G).
                wait_value(lambda: received_lb(bagd_a, PREFIX_B), 2e9, 5, "A receives B's 2G")
                self.assertIsNotNone(first_line_after(
                    bagd_b.log(), "micro-bfd lag1 member m1 (10.77.0.1): Up -> Down: neighbor signaled session down",
                    cut_wall - 1), "B's log line")
                # BGP does not care (it is not on the LAG and not this BFD's client).
                self.assertEqual(bagd_a.neighbor(b4).get("state"), "Established")
                # Restore: Up again, and the capacity only after the 3 s hold-down.
                restored_wall = time.time()
                run(["ip", "netns", "exec", b, "tc", "qdisc", "del", "dev", "m1", "root"])
                wait_until(lambda: sessions(bagd_a)["m1"].get("state") == "Up", 10, "m1 Up after the restore")
                up_wall = first_line_after(bagd_a.log(), "micro-bfd lag1 member m1 (10.77.0.2): Init -> Up",
                                           restored_wall - 0.5) or first_line_after(
                    bagd_a.log(), "micro-bfd lag1 member m1 (10.77.0.2): Down -> Up", restored_wall - 0.5)
                self.assertIsNotNone(up_wall, "A's Up log line")
                self.assertEqual(received_lb(bagd_b, PREFIX_A), 2e9)  # held
                wait_value(lambda: received_lb(bagd_b, PREFIX_A), 3e9, 15, "B receives 3G after the hold-down")
                raised.append(time.time() - up_wall)
                self.assertGreater(raised[-1], 2.5, "raised before the 3 s hold-down")
            print(f"micro-BFD 100 ms x 3 (detection 300 ms), cut to A's session Down in its log: "
                  f"{', '.join(f'{d * 1000:.0f} ms' for d in detections)}; to A's capacity 2G: "
                  f"{', '.join(f'{d * 1000:.0f} ms' for d in capacity_drops)}; to B's received 2G, polled with "
                  f"bagctl: {', '.join(f'{d * 1000:.0f} ms' for d in lb_seen)}; back up after "
                  f"{', '.join(f'{d:.1f} s' for d in raised)} (hold-down 3 s)")
            for d, c in zip(detections, capacity_drops):
                # B's last packet on m1 left up to 100 ms before the cut: 200..300 ms, plus the
                # engine's and the event thread's turn on a shared machine.
                self.assertGreater(d, 0.150, "down before the detection time could have passed")
                self.assertLess(d, 0.300 + 0.200, "detection well beyond 300 ms")
                self.assertLess(c - d, 0.100, "the capacity followed the session late")

            # 4. Reload: micro_bfd removed from A, then added again.
            wait_until(lambda: all_up(bagd_a) and all_up(bagd_b), 20, "every member Up before the reload")
            with open(os.path.join(lab.dir, "bagd-a.textproto"), "w") as out:
                out.write(config(65000, "10.255.0.1", b4, 65001, "10.77.0.1", "10.77.0.2", PREFIX_A, micro=False))
            bagd_a.proc.send_signal(signal.SIGHUP)
            wait_until(lambda: sessions(bagd_a) == {}, 10, "A's micro-BFD sessions gone after the reload")
            self.assertNotIn("needs a restart", bagd_a.log())
            # B's sessions saw A's AdminDown: not a failure, B's capacity stays 3G.
            wait_until(lambda: all(s.get("remote_state") == "AdminDown" for s in sessions(bagd_b).values()), 5,
                       "B sees A's AdminDown on every member")
            self.assertTrue(all(s["member_allowed"] for s in sessions(bagd_b).values()))
            # A cut member no longer lowers A's capacity (its carrier is up).
            run(["ip", "netns", "exec", b, "tc", "qdisc", "replace", "dev", "m1", "root", "blackhole"])
            time.sleep(1.5)
            self.assertEqual(received_lb(bagd_b, PREFIX_A), 3e9)
            run(["ip", "netns", "exec", b, "tc", "qdisc", "del", "dev", "m1", "root"])
            with open(os.path.join(lab.dir, "bagd-a.textproto"), "w") as out:
                out.write(conf_a)
            bagd_a.proc.send_signal(signal.SIGHUP)
            wait_until(lambda: all_up(bagd_a) and all_up(bagd_b), 20, "micro-BFD Up again after the reload")
            run(["ip", "netns", "exec", b, "tc", "qdisc", "replace", "dev", "m2", "root", "blackhole"])
            wait_value(lambda: received_lb(bagd_b, PREFIX_A), 2e9, 5, "B receives A's 2G after a cut on m2")
            self.assertFalse(sessions(bagd_a)["m2"]["member_allowed"])
            self.assertEqual(bagd_a.neighbor(b4).get("state"), "Established")


if __name__ == "__main__":
    if os.geteuid() != 0:
        print("skipped: needs root (network namespaces)")
        sys.exit(77)
    unittest.main()
