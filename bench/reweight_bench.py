#!/usr/bin/env python3
"""Reweight benchmark (issue 15 goal 4): a peer re-announces its K prefixes with a lower link
bandwidth (a LAG behind it lost members), through a real BGP session into bagd with the real
kernel FIB. Run as root from the repository root after building the Release bench tree
(build-bench: bagd, bagctl, update_blaster).

Per measurement: a namespace lab of its own (unique names, deleted on every exit path: daemon
namespace + blaster namespace, one veth per peer), bagd (kernel FIB in its namespace,
nexthop_compat_mode=0, 4-way eBGP multipath, exporting nothing) pinned to CPU 1, and --peers
update_blasters on CPU 0, peer i sending the same K /24s with next hop 10.0.i.2 and link
bandwidth --lb[i] (default 100G and 40G), so every prefix shares one weighted group. Once the
kernel has all K routes on that group: a quiet wait, then peer 1 re-announces all K with
--new-lb (default 50G). bench/nl_listener.py in the daemon namespace timestamps the kernel's
nexthop and route notifications (CLOCK_MONOTONIC at receipt). Measured:

  a     the re-announcement's first byte written (update_blaster's event)
  b     the first kernel nexthop group with the new weights: a - b is the goal's number
        ("time to the kernel group carrying the new weight", <= 20 ms for K = 500k and 1M)
  c     the last route change onto the final group (b if the routes never moved): every route
        points at a group with its final weights
  moved routes (route notifications after a), nexthop notifications after a, bagd CPU
  seconds from a until bagd goes idle, the load average before a.

usage: sudo python3 bench/reweight_bench.py [--sizes 100000,500000,1000000] [--runs 1]
           [--bagd build-bench/bgpd/bagd] [--also LABEL=PATH ...] [--peers 2] [--json OUT]
Several binaries (--bagd and each --also) are measured alternately for every size and run.
"""
import argparse
import json
import os
import signal
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "interop"))
from netlab import Lab, run, wait_until  # noqa: E402

sys.path.insert(0, HERE)
from ingest_compare import cpu_seconds, wait_idle  # noqa: E402

DAEMON_AS = 65000


def events(lab, log):
    out = []
    for line in lab.log(log).splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            pass
    return out


def last_state(lab):
    st = [e for e in events(lab, "nl.log") if e.get("kind") == "state"]
    return st[-1] if st else None


def ratio_of(group, gw_of, gws):
    """weight(gws[0]) / weight(gws[1]) of a kernel group, None if it lacks one of them."""
    w = {gw_of.get(mid): wt for mid, wt in group}
    if gws[0] not in w or gws[1] not in w:
        return None
    return w[gws[0]] / w[gws[1]]


def measure(label, bagd, args, k):
    pin0 = ["taskset", "-c", "0"] if args.pin else []
    pin1 = ["taskset", "-c", "1"] if args.pin else []
    with Lab(f"rw{label[:3]}") as lab:
        dns, bns = lab.netns("d"), lab.netns("b")
        run(["ip", "netns", "exec", dns, "sysctl", "-qw", "net.ipv4.nexthop_compat_mode=0"])
        links = [lab.link(dns, bns) for _ in range(args.peers)]
        listener = lab.spawn("nl", dns, pin0 + [sys.executable, "-u", os.path.join(HERE, "nl_listener.py")], "nl.log")
        wait_until(lambda: any(e.get("kind") == "ready" for e in events(lab, "nl.log")) or listener.poll() is not None,
                   10, "the netlink listener")
        listen = "".join(f' listen {{ address: "{a4}" }}' for a4, *_r in links)
        conf = [f'router {{ asn: {DAEMON_AS} router_id: "10.255.0.1"{listen} hold_time: 180 '
                f'log_level: LOG_LEVEL_WARNING ebgp_requires_policy: false }}']
        for i, (_a4, b4, *_r) in enumerate(links):
            conf.append(f'neighbors {{ address: "{b4}" remote_as: {DAEMON_AS + 1 + i} passive: true '
                        f'default_export: DEFAULT_ACTION_REJECT }}')
        conf.append("multipath { maximum_paths_ebgp: 4 as_path_relax: true }")
        conf.append("fib { backend: BACKEND_NETLINK }")
        conf.extend(args.conf)
        path = os.path.join(lab.dir, "bagd.textproto")
        with open(path, "w") as f:
            f.write("\n".join(conf) + "\n")
        sock = os.path.join(lab.dir, "bagd.sock")
        d = lab.spawn("bagd", dns, pin1 + [bagd, "--config", path, "--socket", sock, "--log-level", "warning"],
                      "bagd.log")
        wait_until(lambda: os.path.exists(sock) or d.poll() is not None, 10, "bagd control socket")
        if d.poll() is not None:
            raise RuntimeError("bagd exited: " + lab.log("bagd.log"))
        blasters = []
        for i, (a4, b4, *_r) in enumerate(links):
            cmd = pin0 + [args.blaster, "--local", b4, "--peer", a4, "--asn", str(DAEMON_AS + 1 + i),
                          "--router-id", f"10.255.1.{i + 1}", "--prefixes", str(k), "--per-message", "packed",
                          "--next-hop", b4, "--link-bandwidth", str(args.lb[i]), "--wait-signal"]
            if i == 0:
                cmd += ["--reannounce-link-bandwidth", str(args.new_lb)]
                if args.partial:
                    cmd += ["--reannounce-prefixes", str(args.partial)]
            blasters.append(lab.spawn(f"blaster{i}", bns, cmd, f"blaster{i}.log"))

        def established():
            for i, b in enumerate(blasters):
                if b.poll() is not None:
                    raise RuntimeError(f"blaster {i} exited: {lab.log(f'blaster{i}.log')}")
            return all(any(e.get("event") == "established" for e in events(lab, f"blaster{i}.log"))
                       for i in range(len(blasters)))

        wait_until(established, 60, "every session Established", interval=0.2)
        for b in blasters:
            b.send_signal(signal.SIGUSR1)
        gws = [b4 for _a4, b4, *_r in links]
        old_ratio = args.lb[0] / args.lb[1]
        new_ratio = args.new_lb / args.lb[1]

        def group_state():
            """(gw_of, {group id: members}) from the listener's nexthop events so far."""
            gw_of, groups = {}, {}
            for e in events(lab, "nl.log"):
                if e.get("kind") != "nh":
                    continue
                if e["op"] == "del":
                    groups.pop(e.get("id"), None)
                elif "gw" in e:
                    gw_of[e["id"]] = e["gw"]
                elif "group" in e:
                    groups[e["id"]] = e["group"]
            return gw_of, groups

        def converged(ratio, partial=0):
            """All k routes on one group with that ratio; with `partial`, that many on it and
            the others on a group with the old ratio (the early reweight's check done)."""
            if d.poll() is not None:
                raise RuntimeError("bagd exited: " + lab.log("bagd.log")[-2000:])
            if listener.poll() is not None:
                raise RuntimeError("listener exited: " + lab.log("nl.log")[-500:])
            st = last_state(lab)
            if not st or st["routes"] != k or len(st["by_nh"]) != (2 if partial else 1):
                return False
            gw_of, groups = group_state()
            want = {ratio: partial or k} if not partial else {ratio: partial, old_ratio: k - partial}
            for nh, n in st["by_nh"].items():
                r = ratio_of(groups.get(int(nh), []), gw_of, gws)
                match = [x for x in want if r is not None and abs(r - x) / x < 0.02 and want[x] == n]
                if not match:
                    return False
            return time.monotonic() - st["last_route_t"] > 1.0

        wait_until(lambda: converged(old_ratio), args.timeout, f"{k} routes on one group {old_ratio:.2f}:1",
                   interval=0.5)
        time.sleep(args.settle)
        mark = len(events(lab, "nl.log"))
        load = os.getloadavg()
        cpu0 = cpu_seconds(d.pid)
        blasters[0].send_signal(signal.SIGUSR2)
        a_sent = time.monotonic()
        wait_until(lambda: converged(new_ratio, args.partial), args.timeout,
                   f"{args.partial or k} routes on a group {new_ratio:.2f}:1", interval=0.5)
        # Until bagd is idle, at most 60 s, and not before --min-wait: the check of the group's
        # other prefixes starts 2 s (damping.early_reweight_check) after the last batch.
        time.sleep(max(0.0, args.min_wait - (time.monotonic() - a_sent)))
        wait_idle(d.pid)
        cpu = cpu_seconds(d.pid) - cpu0
        ev0 = events(lab, "blaster0.log")
        a = next(e["t"] for e in ev0 if e.get("event") == "reannounce_first_byte")
        a_last = next(e["t"] for e in ev0 if e.get("event") == "reannounce_last_byte")
        after = events(lab, "nl.log")[mark:]
        gw_of, _g = group_state()
        nh_after = [e for e in after if e.get("kind") == "nh"]
        b = next((e["t"] for e in nh_after if e["op"] == "new" and "group" in e
                  and (lambda r: r is not None and abs(r - new_ratio) / new_ratio < 0.02)(
                      ratio_of(e["group"], gw_of, gws))), None)
        st = last_state(lab)
        st_before = next((e for e in reversed(events(lab, "nl.log")[:mark]) if e.get("kind") == "state"), None)
        moved = st["route_msgs"] - (st_before["route_msgs"] if st_before else 0)
        c = st["last_route_t"] if moved > 0 else b
        lab.stop(listener, signal.SIGTERM, timeout=5)
        res = dict(label=label, k=k, a_to_b_ms=(b - a) * 1e3 if b else None,
                   a_to_c_ms=(max(c, b) - a) * 1e3 if b else None, reannounce_write_ms=(a_last - a) * 1e3,
                   route_msgs=moved, nh_msgs=len(nh_after), bagd_cpu_s=cpu, load1=load[0],
                   warnings=[line for line in lab.log("bagd.log").splitlines() if "W" in line[:2]][:5])
        for bl in blasters:
            lab.stop(bl, signal.SIGTERM, timeout=5)
        lab.stop(d, signal.SIGTERM, timeout=20)
        print(json.dumps(res), flush=True)
        return res


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="100000,500000,1000000")
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--bagd", default=os.path.join(ROOT, "build-bench", "bgpd", "bagd"))
    ap.add_argument("--also", action="append", default=[], help="LABEL=PATH: another bagd, measured alternately")
    ap.add_argument("--label", default="bagd")
    ap.add_argument("--blaster", default=os.path.join(ROOT, "build-bench", "bench", "update_blaster"))
    ap.add_argument("--peers", type=int, default=2)
    ap.add_argument("--lb", default="100,40", help="Gbit/s per peer")
    ap.add_argument("--new-lb", type=int, default=50, help="peer 1's re-announced Gbit/s")
    ap.add_argument("--partial", type=int, default=0,
                    help="peer 1 re-announces only its first N prefixes (the others must end on their old weights)")
    ap.add_argument("--conf", action="append", default=[], help="an extra top-level config line for bagd")
    ap.add_argument("--settle", type=float, default=2.0)
    ap.add_argument("--min-wait", type=float, default=5.0, help="seconds after the trigger before bagd may count as idle")
    ap.add_argument("--timeout", type=float, default=300)
    ap.add_argument("--no-pin", dest="pin", action="store_false")
    ap.add_argument("--json")
    args = ap.parse_args()
    args.lb = [int(x) for x in args.lb.split(",")]
    if len(args.lb) < args.peers:
        args.lb += [args.lb[-1]] * (args.peers - len(args.lb))
    if os.geteuid() != 0:
        sys.exit("reweight_bench: needs root (network namespaces, the kernel FIB)")
    binaries = [(args.label, args.bagd)] + [tuple(x.split("=", 1)) for x in args.also]
    results = []
    for k in [int(x) for x in args.sizes.split(",")]:
        for r in range(args.runs):
            order = binaries if r % 2 == 0 else list(reversed(binaries))
            for label, path in order:
                results.append(measure(label, path, args, k))
    print("\n| binary | K | first changed UPDATE -> kernel group with the new weight (ms) | -> every route on "
          "its final group (ms) | routes moved | nexthop msgs | re-announcement written in (ms) | bagd CPU s | load |")
    print("|---|---|---|---|---|---|---|---|---|")
    for label, _p in binaries:
        for k in sorted({x["k"] for x in results}):
            rows = [x for x in results if x["label"] == label and x["k"] == k]
            med = lambda key: statistics.median(x[key] for x in rows if x[key] is not None)  # noqa: E731
            print(f"| {label} | {k} | {med('a_to_b_ms'):.1f} | {med('a_to_c_ms'):.1f} | {med('route_msgs'):.0f} | "
                  f"{med('nh_msgs'):.0f} | {med('reannounce_write_ms'):.1f} | {med('bagd_cpu_s'):.2f} | "
                  f"{med('load1'):.1f} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
