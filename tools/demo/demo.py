#!/usr/bin/env python3
"""`make demo`: bagd with three real peers (two FRR 8.4, one GoBGP 3.10) in network
namespaces. Shows the sessions coming up, what bagctl and Prometheus show, an
administrative shutdown with an RFC 9003 message as FRR sees it, and tears everything down.
Needs root (network namespaces). Later issues extend it with weights and the kernel FIB."""
import os
import sys
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "interop"))
from netlab import Lab, run, wait_until  # noqa: E402


def banner(text):
    print(f"\n\033[1m== {text}\033[0m", flush=True)


def frr_conf(asn, rid, bagd_addr, mbps, prefixes):
    nets = "\n".join(f"  network {p} route-map LB" for p in prefixes)
    return f"""hostname frr-{asn}
route-map LB permit 10
 set extcommunity bandwidth {mbps}
router bgp {asn}
 bgp router-id {rid}
 no bgp ebgp-requires-policy
 no bgp network import-check
 neighbor {bagd_addr} remote-as 65000
 neighbor {bagd_addr} timers connect 1
 address-family ipv4 unicast
{nets}
 exit-address-family
"""


def main():
    if os.geteuid() != 0:
        sys.exit("make demo needs root (it creates network namespaces)")
    t0 = time.monotonic()
    with Lab("demo") as lab:
        banner("topology: bagd (AS 65000) with three eBGP peers, each on its own veth link")
        b = lab.netns("bagd")
        peers = []
        for role, asn in (("frr1", 65001), ("frr2", 65002), ("gob", 65003)):
            ns = lab.netns(role)
            a4, p4, *_ = lab.link(b, ns)
            peers.append((role, asn, ns, a4, p4))
            print(f"  {role:5} AS {asn}: bagd {a4} <-> {p4}")
        neighbors = "\n".join(
            f'neighbors {{ address: "{p4}" remote_as: {asn} description: "{role}" timers {{ connect_retry: 1 }} }}'
            for role, asn, ns, a4, p4 in peers)
        config = f'router {{ asn: 65000 router_id: "10.255.0.1" }}\n{neighbors}\n'
        print("\nbagd config:\n  " + config.strip().replace("\n", "\n  "))
        bagd = lab.start_bagd(b, config, extra=("--metrics-listen", "127.0.0.1:9179"))
        frrs = []
        for (role, asn, ns, a4, p4), mbps in zip(peers[:2], (1000, 4000)):
            frrs.append(lab.start_frr(ns, frr_conf(asn, f"10.255.0.{asn - 64999 + 1}", a4, mbps,
                                                  ["10.100.0.0/24", f"10.{asn - 64900}.0.0/16"]), p4, name=role))
        role, asn, ns, a4, p4 = peers[2]
        gob = lab.start_gobgp(ns, f"""
[global.config]
  as = {asn}
  router-id = "10.255.0.4"
  local-address-list = ["{p4}"]
[[neighbors]]
  [neighbors.config]
    neighbor-address = "{a4}"
    peer-as = 65000
  [neighbors.timers.config]
    connect-retry = 1
  [[neighbors.afi-safis]]
    [neighbors.afi-safis.config]
      afi-safi-name = "ipv4-unicast"
""")

        banner("the sessions come up")
        for role, asn, ns, a4, p4 in peers:
            bagd.wait_state(p4, "Established", timeout=30)
        gob.cli("global", "rib", "add", "10.100.0.0/24", "-a", "ipv4")
        wait_until(lambda: all(bagd.neighbor(p4)["prefixes_received"] != "0" for *_x, p4 in peers), 15,
                   "prefixes from every peer")
        print(bagd.ctl("show", "neighbors").stdout)
        banner(f"bagctl show neighbors {peers[0][4]}")
        print(bagd.ctl("show", "neighbors", peers[0][4]).stdout)

        banner("Prometheus (bagd --metrics-listen 127.0.0.1:9179)")
        body = run(["ip", "netns", "exec", b, "python3", "-c",
                    "import urllib.request;print(urllib.request.urlopen('http://127.0.0.1:9179/metrics').read().decode())"]).stdout
        for line in body.splitlines():
            if line.startswith(("bagd_neighbor_state", "bagd_prefixes_received")):
                print("  " + line)

        banner(f'bagctl neighbor {peers[0][4]} shutdown "maintenance: optics swap"')
        print(bagd.ctl("neighbor", peers[0][4], "shutdown", "maintenance: optics swap").stdout)
        def frr_view():
            n = frrs[0].neighbor(peers[0][3])
            return n if "optics" in str(n) else None
        n = wait_until(frr_view, 10, "FRR sees the shutdown")
        print("FRR's view (show bgp neighbors json):")
        for k in ("bgpState", "lastNotificationReason", "lastShutdownDescription", "lastResetDueTo"):
            if k in n:
                print(f"  {k}: {n[k]}")
        print(bagd.ctl("show", "neighbors").stdout)
        banner(f"bagctl neighbor {peers[0][4]} enable")
        print(bagd.ctl("neighbor", peers[0][4], "enable").stdout)
        bagd.wait_state(peers[0][4], "Established", timeout=30)
        print(bagd.ctl("show", "neighbors").stdout)

        banner("bagd's log")
        print("\n".join(bagd.log().splitlines()[:40]))
        banner("tearing down (namespaces and daemons)")
    print(f"done in {time.monotonic() - t0:.1f}s; nothing left behind: {run(['ip', 'netns', 'list']).stdout.strip() or 'no namespaces'}")


if __name__ == "__main__":
    main()
