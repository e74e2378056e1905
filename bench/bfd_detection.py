#!/usr/bin/env python3
"""BFD detection bench (issue 43, docs/bfd.md "Measured"): the time from a path cut to the kernel
next-hop group without that member, against FRR 8.4's bfdd, at 50 ms x 3, 100 ms x 3 and
300 ms x 3. Goal: at most the detection time + 50 ms. A latency bench (root: network namespaces);
it measures no CPU.

The lab (tests/interop/netlab.py): bagd in one namespace, two FRRs (zebra, bfdd, bgpd) in two
others, one veth each. Both FRRs originate the same prefix, so bagd installs a kernel next-hop
group of two members. A run:
  1. waits for both BFD sessions Up, both BGP sessions Established and the group {f1, f2};
  2. cuts f1's path: a tc blackhole qdisc on FRR 1's end of the veth drops everything it sends
     (the carrier stays up on both ends, as when a far transponder dies);
  3. measures, from the moment before `tc` ran:
       - bfd:    bagd's log line of the BGP session taken down for BFD (its own time stamp);
       - kernel: the first `ip monitor nexthop` line in bagd's namespace showing the group
                 without f1's next hop (time stamped as this script reads it);
  4. restores the path and waits for the group to have both members again.
Prints a table of medians (and min/max) of N runs per setting.

  python3 bench/bfd_detection.py [--runs 5] [--settings 50,100,300] [--build build]
"""
import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "interop"))

PREFIX = "10.90.0.0/24"
LOCAL_AS = 65000


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs", type=int, default=5, help="runs per setting (default 5)")
    p.add_argument("--settings", default="50,100,300", help="intervals in ms, each with multiplier 3")
    p.add_argument("--build", default=os.path.join(ROOT, "build"), help="the build directory (bagd, bagctl)")
    return p.parse_args()


class NexthopMonitor:
    """`ip monitor nexthop` in a namespace; each line with the time this script read it."""

    def __init__(self, ns):
        self.proc = subprocess.Popen(["ip", "-n", ns, "monitor", "nexthop"], stdout=subprocess.PIPE, text=True,
                                     bufsize=1)
        self.lines = []
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        for line in self.proc.stdout:
            now = time.time()
            with self.lock:
                self.lines.append((now, line.strip()))

    def since(self, t):
        with self.lock:
            return [(at, line) for at, line in self.lines if at >= t]

    def close(self):
        self.proc.terminate()
        self.proc.wait(5)


def group_members(line):
    """'id 12 group 10/11 proto ...' -> [10, 11] (weights dropped); None if not a group line."""
    words = line.split()
    if "group" not in words or words[0] == "Deleted":
        return None
    spec = words[words.index("group") + 1]
    return [int(m.split(",")[0]) for m in spec.split("/")]


def log_time(line):
    stamp = datetime.datetime.strptime(line.split()[0], "%Y-%m-%dT%H:%M:%S.%fZ")
    return stamp.replace(tzinfo=datetime.timezone.utc).timestamp()


def main():
    args = parse_args()
    if os.geteuid() != 0:
        print("needs root (network namespaces)")
        return 77
    os.environ["BAGD_BUILD"] = os.path.abspath(args.build)
    from netlab import Lab, frr_conf, run, wait_until  # noqa: E402  (reads BAGD_BUILD)
    from test_bfd import FrrBfd  # noqa: E402

    settings = [int(x) for x in args.settings.split(",")]
    results = {}
    for ms in settings:
        with Lab("bfdbn") as lab:
            b = lab.netns("b")
            f1, f2 = lab.netns("f1"), lab.netns("f2")
            b1, p1, _, _, _, f1_if = lab.link(b, f1)
            b2, p2, _, _, _, _ = lab.link(b, f2)
            config = f"""
router {{ asn: {LOCAL_AS} router_id: "10.255.0.1" ebgp_requires_policy: false }}
bfd_profiles {{ name: "bench" min_tx: {ms} min_rx: {ms} multiplier: 3 }}
neighbors {{ address: "{p1}" remote_as: 65001 timers {{ connect_retry: 1 }} bfd {{ profile: "bench" }} }}
neighbors {{ address: "{p2}" remote_as: 65002 timers {{ connect_retry: 1 }} bfd {{ profile: "bench" }} }}
multipath {{ maximum_paths_ebgp: 4 as_path_relax: true }}
damping {{ increase_hold_down: 1 }}
"""
            bagd = lab.start_bagd(b, config)
            FrrBfd(lab, f1, "bfd1", b1, ms, ms, shutdown=False)
            FrrBfd(lab, f2, "bfd2", b2, ms, ms, shutdown=False)
            lab.start_frr(f1, frr_conf(b1, LOCAL_AS, 65001, "10.255.0.2", hostname="f1", networks=[PREFIX]), p1,
                          name="frr1")
            lab.start_frr(f2, frr_conf(b2, LOCAL_AS, 65002, "10.255.0.3", hostname="f2", networks=[PREFIX]), p2,
                          name="frr2")
            monitor = NexthopMonitor(b)

            def bfd_up():
                out = bagd.ctl("show", "bfd", "--json").stdout
                s = json.loads(out).get("sessions", [])
                return len(s) == 2 and all(x.get("state") == "Up" and x.get("tx_interval_us") == ms * 1000 for x in s)

            def nexthop_ids():
                """{gateway: id} and the route's group members, from the kernel."""
                nh = json.loads(run(["ip", "-n", b, "-j", "nexthop", "show"]).stdout or "[]")
                routes = json.loads(run(["ip", "-n", b, "-j", "route", "show", PREFIX]).stdout or "[]")
                ids = {o.get("gateway"): o["id"] for o in nh if "gateway" in o}
                groups = {o["id"]: [m["id"] for m in o["group"]] for o in nh if "group" in o}
                members = groups.get(routes[0].get("nhid")) if routes else None
                return ids, members

            def both_in_group():
                ids, members = nexthop_ids()
                return members is not None and p1 in ids and p2 in ids and sorted(members) == sorted(
                    [ids[p1], ids[p2]])

            bfd_times, kernel_times = [], []
            try:
                for i in range(args.runs):
                    wait_until(lambda: bfd_up() and all(bagd.neighbor(a).get("state") == "Established"
                                                        for a in (p1, p2)), 60, "BFD Up, BGP Established")
                    wait_until(both_in_group, 30, "the kernel group with both members")
                    time.sleep(1.0)
                    ids, _ = nexthop_ids()
                    f1_id = ids[p1]
                    cut = time.time()
                    run(["ip", "netns", "exec", f1, "tc", "qdisc", "replace", "dev", f1_if, "root", "blackhole"])

                    def kernel_without_f1():
                        for at, line in monitor.since(cut):
                            m = group_members(line)
                            if m is not None and f1_id not in m:
                                return at
                        return None

                    def bfd_down():
                        for line in bagd.log().splitlines():
                            if "Established -> Idle: BFD down" in line:
                                try:
                                    at = log_time(line)
                                except ValueError:
                                    continue
                                if at > cut - 0.5:
                                    return at
                        return None
                    k = wait_until(kernel_without_f1, 10, "the group without f1 (ip monitor nexthop)", interval=0.01)
                    d = wait_until(bfd_down, 5, "bagd's log line")
                    kernel_times.append((k - cut) * 1000)
                    bfd_times.append((d - cut) * 1000)
                    print(f"  {ms} ms x 3, run {i + 1}: BGP down for BFD after {bfd_times[-1]:.0f} ms, "
                          f"kernel group without the member after {kernel_times[-1]:.0f} ms", file=sys.stderr)
                    run(["ip", "netns", "exec", f1, "tc", "qdisc", "del", "dev", f1_if, "root"])
            finally:
                monitor.close()
            results[ms] = (bfd_times, kernel_times)

    print()
    print(f"BFD detection to the kernel next-hop group, bagd vs FRR 8.4 bfdd, {args.runs} runs each "
          f"(medians; min..max)")
    print(f"{'setting':<12} {'detect time':>11} {'to BGP down (log)':>24} {'to kernel group':>24} "
          f"{'goal (det.+50)':>15} {'met':>4}")
    for ms, (bfd_times, kernel_times) in results.items():
        det = 3 * ms
        med_b, med_k = statistics.median(bfd_times), statistics.median(kernel_times)

        def fmt(xs, med):
            return f"{med:.0f} ({min(xs):.0f}..{max(xs):.0f})"
        print(f"{f'{ms} ms x 3':<12} {f'{det} ms':>11} {fmt(bfd_times, med_b):>24} {fmt(kernel_times, med_k):>24} "
              f"{f'{det + 50} ms':>15} {'yes' if med_k <= det + 50 else 'no':>4}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
