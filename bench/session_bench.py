#!/usr/bin/env python3
"""Session figures for docs/benchmarks.md (run as root from the repository root, after a build):

  1. Session setup against FRR 8.4: bagd (active) and FRR (passive) in two namespaces; the
     time from bagd's TCP connect completing to Established, and from starting bagd to
     Established, from bagd's own log timestamps. Median of N runs.
  2. RSS of an idle bagd with 100 configured passive neighbors (nobody connects).

usage: python3 bench/session_bench.py [--runs N]"""
import argparse
import datetime
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "interop"))
from netlab import BAGD, Lab  # noqa: E402
from test_sessions import bagd_config, frr_config  # noqa: E402


def ts(line):
    return datetime.datetime.strptime(line.split()[0], "%Y-%m-%dT%H:%M:%S.%fZ")


def setup_once(i):
    with Lab(f"sb{i}") as lab:
        a, b = lab.netns("b"), lab.netns("p")
        a4, b4, *_ = lab.link(a, b)
        frr = lab.start_frr(b, frr_config(a4, extra=f" neighbor {a4} passive"), b4)
        time.sleep(0.5)
        bagd = lab.start_bagd(a, bagd_config(b4, 65001))
        bagd.wait_state(b4, "Established")
        frr.wait_established(a4)
        log = bagd.log().splitlines()
        start = ts(next(l for l in log if "bagd started" in l))
        connected = ts(next(l for l in log if "-> OpenSent" in l))
        est = ts(next(l for l in log if "-> Established" in l))
        return (est - connected).total_seconds() * 1000, (est - start).total_seconds() * 1000


def idle_rss(n=100):
    d = tempfile.mkdtemp(prefix="bagd-rss-")
    conf = os.path.join(d, "c.textproto")
    with open(conf, "w") as f:
        f.write('router { asn: 65000 router_id: "10.255.0.1" listen { address: "127.0.0.1" port: 41790 } }\n')
        for i in range(n):
            f.write(f'neighbors {{ address: "127.1.{i // 250}.{i % 250 + 1}" remote_as: {65001 + i} passive: true }}\n')
    p = subprocess.Popen([BAGD, "--config", conf, "--socket", os.path.join(d, "s.sock")],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(3)
    rss = next(l for l in open(f"/proc/{p.pid}/status") if l.startswith("VmRSS")).split()[1]
    p.terminate()
    p.wait()
    return int(rss)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    handshakes, totals = [], []
    for i in range(args.runs):
        h, t = setup_once(i)
        handshakes.append(h)
        totals.append(t)
    print(f"session setup vs FRR 8.4, {args.runs} runs: TCP connected -> Established median "
          f"{statistics.median(handshakes):.1f} ms (min {min(handshakes):.1f}, max {max(handshakes):.1f}); "
          f"bagd start -> Established median {statistics.median(totals):.1f} ms")
    print(f"idle bagd, 100 passive neighbors: VmRSS {idle_rss()} KiB")


if __name__ == "__main__":
    main()
