#!/usr/bin/env python3
"""`bagctl show routes` on a large table (issue 11, defect 4): what the dump costs bagctl
(peak RSS, time) and how long it holds up bagd's event thread.

bagd runs on loopback (127.0.0.1, BACKEND_NONE, one passive neighbor 127.0.0.2) and takes
N /24s from bench/update_blaster, with link bandwidth as BAG peers send (--link-bandwidth,
default 100 Gbit/s; 0: none). Then `bagctl show routes [--json]` runs to /dev/null while
a probe calls `bagctl show neighbors --json` back to back: each answer needs bagd's event
thread, so the slowest probe bounds the longest stall of that thread during the dump (the
probe's own cost, a bagctl process start, is the idle median, shown next to it).

usage: python3 bench/control_dump.py [--prefixes 1000000] [--build build] [--json] [--blaster PATH]
                                    [--link-bandwidth GBPS]
  (run from the repository root after building bagd, bagctl and update_blaster; no root needed)
"""
import argparse
import json
import os
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "interop"))
from netlab import free_port, wait_until  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--prefixes", type=int, default=1_000_000)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"), help="holds bgpd/bagd and tools/bagctl")
    ap.add_argument("--blaster", default=os.path.join(ROOT, "build", "bench", "update_blaster"))
    ap.add_argument("--json", action="store_true", help="show routes --json (default: the text table)")
    ap.add_argument("--link-bandwidth", type=float, default=100.0,
                    help="Gbit/s the peer's routes carry, as BAG peers send (0: none)")
    args = ap.parse_args()
    bagd_bin = os.path.join(args.build, "bgpd", "bagd")
    bagctl = os.path.join(args.build, "tools", "bagctl")

    d = tempfile.mkdtemp(prefix="bagd-dump-")
    port = free_port()
    conf = os.path.join(d, "bagd.textproto")
    with open(conf, "w") as f:
        f.write(f'router {{ asn: 65000 router_id: "10.255.0.1" listen {{ address: "127.0.0.1" port: {port} }} '
                f'ebgp_requires_policy: false }}\n'
                'fib { backend: BACKEND_NONE }\n'
                'neighbors { address: "127.0.0.2" remote_as: 65001 passive: true }\n')
    sock = os.path.join(d, "bagd.sock")
    procs = []
    try:
        log = open(os.path.join(d, "bagd.log"), "w")
        bagd = subprocess.Popen([bagd_bin, "--config", conf, "--socket", sock, "--log-level", "warning"],
                                stdout=log, stderr=subprocess.STDOUT)
        procs.append(bagd)
        wait_until(lambda: os.path.exists(sock), 10, "bagd socket")
        blaster = subprocess.Popen([args.blaster, "--local", "127.0.0.2", "--peer", f"127.0.0.1:{port}",
                                    "--asn", "65001", "--router-id", "10.255.0.2", "--prefixes", str(args.prefixes),
                                    "--per-message", "packed"]
                                   + (["--link-bandwidth", f"{args.link_bandwidth:g}"] if args.link_bandwidth else []),
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs.append(blaster)

        def received():
            out = subprocess.run([bagctl, "--socket", sock, "show", "neighbors", "--json"], capture_output=True,
                                 text=True).stdout
            n = json.loads(out)["neighbors"][0]
            return int(n.get("prefixes_received", 0)) >= args.prefixes

        wait_until(received, 600, f"{args.prefixes} prefixes in bagd", interval=0.5)
        time.sleep(1)

        def probe_once():
            t0 = time.monotonic()
            subprocess.run([bagctl, "--socket", sock, "show", "neighbors", "--json"], capture_output=True)
            return time.monotonic() - t0

        idle = [probe_once() for _ in range(20)]
        stop = threading.Event()
        during = []

        def probe():
            while not stop.is_set():
                during.append(probe_once())

        t = threading.Thread(target=probe)
        cmd = [bagctl, "--socket", sock, "show", "routes"] + (["--json"] if args.json else [])
        t0 = time.monotonic()
        t.start()
        with open(os.devnull, "w") as null:
            dump = subprocess.Popen(cmd, stdout=null, stderr=subprocess.PIPE)
            _, status, usage = os.wait4(dump.pid, 0)
        elapsed = time.monotonic() - t0
        stop.set()
        t.join()
        err = dump.stderr.read().decode()
        result = {
            "prefixes": args.prefixes,
            "format": "json" if args.json else "text",
            "bagctl_exit": os.waitstatus_to_exitcode(status),
            "bagctl_error": err.strip(),
            "dump_seconds": round(elapsed, 2),
            "bagctl_peak_rss_mib": round(usage.ru_maxrss / 1024, 1),
            "probes_during_dump": len(during),
            "probe_idle_median_ms": round(statistics.median(idle) * 1000, 1),
            "probe_max_during_dump_ms": round(max(during) * 1000, 1) if during else None,
            "probe_median_during_dump_ms": round(statistics.median(during) * 1000, 1) if during else None,
            "bagd_peak_rss_mib": round(int(open(f"/proc/{bagd.pid}/status").read().split("VmHWM:")[1].split()[0]) / 1024, 1),
        }
        print(json.dumps(result))
    finally:
        for p in reversed(procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
        subprocess.run(["rm", "-rf", d])


if __name__ == "__main__":
    main()
