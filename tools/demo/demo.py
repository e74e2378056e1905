#!/usr/bin/env python3
"""`make demo`: bagd turning link bandwidth into weighted ECMP in the Linux kernel.

bagd (AS 65000) has three eBGP peers in their own network namespaces, each on its own veth
link: two FRR 8.4 and one GoBGP 3.10. All three advertise the same two prefixes
(10.100.0.0/24 and 10.101.0.0/24) with a link-bandwidth community (RFC 10005): 1 Gbit/s,
1 Gbit/s and 2 Gbit/s. The demo shows, asserting each claim as it goes:

0. bagd's policies (RFC 8212: an eBGP peer without them would give and get nothing): import
   everything but bogons and over-long prefixes, drain a path tagged graceful-shutdown;
   export only bagd's own prefix (frr1 shows it, and nothing learned from the other peers);
1. the sessions, bagd's weighted next-hop group (1:1:2, one group shared by both prefixes)
   and the kernel's view of it: a nexthop group object and two `proto bgp` routes using it;
2. "a LAG loses half its members": FRR #1 drops to 500 Mbit/s, and the weights follow at
   once (1:2:4): the same kernel group replaced in place, the routes untouched;
3. "the LAG is repaired": back to 1 Gbit/s. The increase is held down (the STATE column says
   until when) while the kernel keeps 1:2:4, then applied (1:1:2). The demo configures
   `increase_hold_down: 10` to stay short; the default is 30 s;
4. an administrative shutdown of FRR #1 (an RFC 9003 message, as FRR sees it): its next hop
   leaves the group at once, and comes back when the session is enabled again;
5. a Prometheus excerpt, then tears everything down (namespaces, daemons, kernel objects)
   and checks that nothing is left.

Needs root (network namespaces) and the binaries in build/. Exits non-zero, saying which
claim did not hold, if bagd does not do what the demo says it does. Takes about 20 seconds.
"""
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "interop"))
from netlab import Lab, gobgp_lb_toml, run, wait_until  # noqa: E402

PREFIXES = ("10.100.0.0/24", "10.101.0.0/24")
# Bandwidths are chosen so the weights stay small: iproute2 6.1 prints weights above 256
# wrongly, and FRR 8.4 / GoBGP 3.10 display link bandwidths above ~34 Gbit/s wrongly.
HOLD_DOWN = 10  # seconds; bagd's default is 30
OWN_PREFIX = "10.200.0.0/24"
# bagd applies RFC 8212: an eBGP neighbor without import policy gives it nothing, one without
# export policy is sent nothing. The demo's peers get the policies of a BAG router
# (docs/policy.md): accept what they send but bogons and over-long prefixes, drain a path
# tagged graceful-shutdown (link bandwidth 0: weight 0, the path stays), and send them only
# our own prefix, nothing learned from another peer.
POLICY = """defined_sets {
  prefix_sets { name: "bogons" prefixes { prefix: "0.0.0.0/8" le: 32 } prefixes { prefix: "127.0.0.0/8" le: 32 }
                prefixes { prefix: "169.254.0.0/16" le: 32 } prefixes { prefix: "224.0.0.0/3" le: 32 } }
  prefix_sets { name: "too-long" prefixes { prefix: "0.0.0.0/0" ge: 25 } }
  community_sets { name: "drain" communities: "graceful-shutdown" }
}
policies {
  name: "from-peers"
  statements { name: "bogons" conditions { prefix_set { set: "bogons" } } actions { disposition: DISPOSITION_REJECT } }
  statements { name: "too-long" conditions { prefix_set { set: "too-long" } } actions { disposition: DISPOSITION_REJECT } }
  statements { name: "drain" conditions { community_set { set: "drain" } }
               actions { link_bandwidth { op: OP_DRAIN } disposition: DISPOSITION_ACCEPT } }
  statements { name: "accept" actions { disposition: DISPOSITION_ACCEPT } }
}
policies {
  name: "to-peers"
  statements { name: "ours" conditions { sources: ROUTE_SOURCE_LOCAL } actions { disposition: DISPOSITION_ACCEPT } }
}
"""
T0 = time.monotonic()


def banner(text):
    print(f"\n\033[1m== [{time.monotonic() - T0:5.1f}s] {text}\033[0m", flush=True)


def show(title, text):
    print(f"$ {title}")
    print("  " + text.rstrip().replace("\n", "\n  "), flush=True)


class DemoFailed(Exception):
    pass


def expect(fn, timeout, what):
    """wait_until, but a timeout is the demo's claim not holding."""
    try:
        return wait_until(fn, timeout, what, interval=0.05)
    except AssertionError as e:
        raise DemoFailed(str(e)) from None


def frr_conf(asn, rid, bagd_addr, mbps):
    nets = "\n".join(f"  network {p} route-map LB" for p in PREFIXES)
    return f"""hostname frr-{asn}
bgp route-map delay-timer 1
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


def gobgp_conf(asn, local, bagd_addr, bytes_per_second):
    return gobgp_lb_toml(asn, "10.255.0.4", local, bagd_addr, bytes_per_second)


class KernelWatch:
    """`ip -n NS monitor nexthop route` in the background, to see what bagd changed."""

    def __init__(self, ns):
        self.cmd = ["ip", "-n", ns, "monitor", "nexthop", "route"]
        self.lines = []

    def __enter__(self):
        self.proc = subprocess.Popen(self.cmd, stdout=subprocess.PIPE, text=True)
        time.sleep(0.2)  # subscribed before anything changes
        return self

    def __exit__(self, *exc):
        self.proc.terminate()
        out, _ = self.proc.communicate(timeout=5)
        self.lines = out.splitlines()

    def messages(self):
        """(nexthop messages, route messages): the first line of each."""
        heads = [line for line in self.lines if not line.startswith(("\t", " "))]
        nh = [h for h in heads if h.startswith(("id ", "Deleted id "))]
        return nh, [h for h in heads if h not in nh]


class Demo:
    def __init__(self, lab):
        self.lab = lab

    # -- bagd's view ------------------------------------------------------------------
    def groups(self):
        out = self.bagd.ctl("show", "nexthop-groups", "--json", check=False)
        return json.loads(out.stdout).get("groups", []) if out.returncode == 0 else []

    def group(self):
        """bagd's one group, when both prefixes use it."""
        gs = self.groups()
        if len(gs) != 1 or gs[0]["prefixes"] != str(len(PREFIXES)):
            return None
        return gs[0]

    def counters(self):
        out = json.loads(self.bagd.ctl("show", "nexthop-groups", "--json").stdout)["counters"]
        return {k: int(v) for k, v in out.items()}

    def bagd_weights(self):
        g = self.group()
        return {m["next_hop"]: m["weight"] for m in g["members"] if m["weight"]} if g else None

    # -- the kernel's view ------------------------------------------------------------
    def ip(self, *args):
        return run(["ip", "-n", self.ns, *args]).stdout

    def kernel(self):
        """({group id: {gateway: weight}}, {prefix: nhid}) as `ip -j` reports them."""
        objs = json.loads(self.ip("-j", "nexthop", "show") or "[]")
        gw = {o["id"]: o.get("gateway") for o in objs if "gateway" in o}
        groups = {o["id"]: {gw.get(m["id"]): m.get("weight", 1) for m in o["group"]} for o in objs if "group" in o}
        routes = {r["dst"]: r.get("nhid") for r in json.loads(self.ip("-j", "route", "show", "proto", "bgp") or "[]")}
        return groups, routes

    def kernel_group(self):
        """(nhid, {gateway: weight}) of the kernel group both prefixes' routes use, or None."""
        groups, routes = self.kernel()
        nhids = {routes.get(p) for p in PREFIXES}
        if len(nhids) != 1 or None in nhids or next(iter(nhids)) not in groups:
            return None
        nhid = nhids.pop()
        return nhid, groups[nhid]

    def want(self, weights, timeout, what):
        """Wait until bagd and the kernel both have these weights in the one group shared by
        both prefixes; (bagd's group id, the kernel's nexthop id)."""
        try:
            expect(lambda: self.bagd_weights() == weights, timeout, f"bagd's weights {what}")
            gid = self.group()["id"]
            nhid, _ = expect(lambda: (lambda k: k if k and k[1] == weights else None)(self.kernel_group()), 5,
                             f"the kernel's weights {what} (group {gid})")
        except DemoFailed as e:
            raise DemoFailed(f"{e}; wanted {weights}, bagd has {self.bagd_weights()} "
                             f"(groups: {len(self.groups())}), the kernel has {self.kernel_group()}") from None
        return gid, nhid

    def show_group(self):
        show("bagctl show nexthop-groups", self.bagd.ctl("show", "nexthop-groups").stdout)

    def show_kernel(self, routes=True):
        show(f"ip -n {self.ns} nexthop show", self.ip("nexthop", "show"))
        if routes:
            show(f"ip -n {self.ns} route show proto bgp", self.ip("route", "show", "proto", "bgp"))

    def ratio(self, weights):
        return ":".join(str(weights.get(p4, 0)) for _, _, _, _, p4 in self.peers)

    def weights(self, *values):
        return {p4: v for (_, _, _, _, p4), v in zip(self.peers, values) if v}

    def set_frr1(self, mbps):
        self.frrs[0].vtysh("configure terminal", "route-map LB permit 10", f"set extcommunity bandwidth {mbps}")
        return time.monotonic()

    # -- the story --------------------------------------------------------------------
    def run(self):
        lab = self.lab
        banner("topology: bagd (AS 65000) with three eBGP peers, each on its own veth link")
        self.ns = b = lab.netns("bagd")
        self.peers = []
        for role, asn, bw in (("frr1", 65001, "1 Gbit/s"), ("frr2", 65002, "1 Gbit/s"), ("gobgp", 65003, "2 Gbit/s")):
            ns = lab.netns(role)
            a4, p4, *_ = lab.link(b, ns)
            self.peers.append((role, asn, ns, a4, p4))
            print(f"  {role:5}  AS {asn}  bagd {a4} <-> {p4}  advertises {', '.join(PREFIXES)} with LB {bw}")
        neighbors = "\n".join(
            f'neighbors {{ address: "{p4}" remote_as: {asn} description: "{role}" timers {{ connect_retry: 1 }}\n'
            '            import_policies: ["from-peers"] export_policies: ["to-peers"] }'
            for role, asn, ns, a4, p4 in self.peers)
        config = (f'router {{ asn: 65000 router_id: "10.255.0.1" }}\n{neighbors}\n'
                  f'networks {{ prefix: "{OWN_PREFIX}" }}   # ours: the one prefix bagd announces\n'
                  + POLICY +
                  "multipath { maximum_paths_ebgp: 8 as_path_relax: true }\n"
                  f"damping {{ increase_hold_down: {HOLD_DOWN} }}   # default 30 s; short for the demo\n"
                  "# fib { backend: BACKEND_NETLINK } is the default: install into this namespace's kernel\n")
        print(f"\nbagd config (bagd --metrics-listen 127.0.0.1:9179, in namespace {b}):\n  "
              + config.strip().replace("\n", "\n  "))
        self.bagd = lab.start_bagd(b, config, extra=("--metrics-listen", "127.0.0.1:9179"))
        self.frrs = [lab.start_frr(ns, frr_conf(asn, f"10.255.0.{i + 2}", a4, 1000), p4, name=role)
                     for i, (role, asn, ns, a4, p4) in enumerate(self.peers[:2])]
        role, asn, ns, a4, p4 = self.peers[2]
        gob = lab.start_gobgp(ns, gobgp_conf(asn, p4, a4, 250_000_000))  # 2 Gbit/s in bytes/s
        self.frr1 = self.peers[0][4]

        banner("the sessions come up; every peer sends both prefixes")
        for *_x, p4 in self.peers:
            self.bagd.wait_state(p4, "Established", timeout=30)
        for p in PREFIXES:
            gob.cli("global", "rib", "add", p, "origin", "igp", "-a", "ipv4")
        expect(lambda: all(self.bagd.neighbor(p4).get("prefixes_received") == str(len(PREFIXES))
                           for *_x, p4 in self.peers), 15, "both prefixes from every peer")
        show("bagctl show neighbors", self.bagd.ctl("show", "neighbors").stdout)

        def frr1_routes():
            routes = self.frrs[0].json("show bgp ipv4 unicast json").get("routes", {})
            return routes if OWN_PREFIX in routes else None
        routes = expect(frr1_routes, 15, f"frr1 receives bagd's own {OWN_PREFIX}")
        leaked = [p for p in PREFIXES for path in routes.get(p, []) if str(path.get("path", "")).startswith("65000")]
        if leaked:
            raise DemoFailed(f"the export policy sends only bagd's own prefix; frr1 got {leaked} through bagd")
        print(f"\nThe export policy \"to-peers\": frr1 gets bagd's own {OWN_PREFIX} (AS path "
              f"{routes[OWN_PREFIX][0].get('path')}) and none of the routes bagd learned from frr2 and gobgp.")

        banner("weights proportional to link bandwidth: 1 : 1 : 2, one group for both prefixes")
        gid, nhid = self.want(self.weights(1, 1, 2), 15, "1:1:2")
        self.show_group()
        print(f"\nIn the kernel, bagd's group {gid} is nexthop group {nhid} (0x{nhid:08X}), used by both "
              "routes (proto 186 = bgp):")
        self.show_kernel()
        show(f"bagctl show routes {PREFIXES[0]}", self.bagd.ctl("show", "routes", PREFIXES[0]).stdout)

        banner(f"a LAG loses half its members: frr1 ({self.frr1}) now advertises 500 Mbit/s")
        print("  frr1(config)# route-map LB permit 10\n  frr1(config-route-map)# set extcommunity bandwidth 500")
        before = self.counters()
        with KernelWatch(self.ns) as watch:
            t = self.set_frr1(500)
            ids = self.want(self.weights(1, 2, 4), 10, "1:2:4 (a decrease applies at once)")
            took = time.monotonic() - t
            time.sleep(0.5)  # let anything else bagd would do reach the kernel
        print(f"\n{took:.1f}s after the change (FRR re-applies its route-map within 1 s), bagd and the "
              "kernel have 1:2:4: a decrease applies at once.")
        if ids != (gid, nhid):
            raise DemoFailed(f"the group changed ids {(gid, nhid)} -> {ids}; a reweight should replace it in place")
        self.show_group()
        self.show_kernel()
        show(f"ip -n {self.ns} monitor nexthop route   # while it happened", "\n".join(watch.lines))
        nh, rt = watch.messages()
        ops = self.counters()
        # The kernel itself re-announces every route using a replaced group (one message per
        # route); a route bagd replaced as well would show up twice.
        if len(nh) != 1 or not nh[0].startswith(f"id {nhid} group") or len(rt) > len(set(rt)) \
                or ops["route_updates"] != before["route_updates"]:
            raise DemoFailed(f"a reweight should be one group replace and no route operation; the kernel "
                             f"saw {nh + rt}, bagd counted {before} -> {ops}")
        print(f"Same group {nhid}, new weights: one nexthop group replace, no route touched (the route "
              "lines are the kernel announcing the routes that use the group; bagd's FIB counters: "
              f"groups {before['group_updates']} -> {ops['group_updates']}, "
              f"routes {before['route_updates']} -> {ops['route_updates']}).")

        banner(f"the LAG is repaired: frr1 advertises 1 Gbit/s again; the increase is held for {HOLD_DOWN}s")
        t = self.set_frr1(1000)

        def pending():
            g = self.group()
            m = next((m for m in (g or {}).get("members", []) if m["next_hop"] == self.frr1), None)
            return m if m and m["damping_state"] == "pending-increase" else None
        expect(pending, 10, "frr1's increase pending")
        held_at = time.monotonic() - t
        self.show_group()
        k = self.kernel_group()
        if k != (nhid, self.weights(1, 2, 4)):
            raise DemoFailed(f"the kernel should keep 1:2:4 in group {nhid} while the increase is held; has {k}")
        g = self.group()
        now, then = ({mm["next_hop"]: mm[k] for mm in g["members"]} for k in ("weight", "target_weight"))
        print(f"\n{held_at:.1f}s after the change bagd sees frr1 ADVERTISE 1G again but still weighs it by "
              f"500M (APPLIED) until the hold-down ends; then the group goes {self.ratio(now)} -> "
              f"{self.ratio(then)} (WEIGHT a->b; weights are kept reduced by their common divisor, so the "
              "others move). The kernel keeps 1:2:4:")
        self.show_kernel(routes=False)
        ids = self.want(self.weights(1, 1, 2), HOLD_DOWN + 10, "1:1:2 after the hold-down")
        print(f"\n{time.monotonic() - t:.1f}s after the change the hold-down is over: 1:1:2 again, same group:")
        if ids != (gid, nhid):
            raise DemoFailed(f"the group changed ids {(gid, nhid)} -> {ids}")
        self.show_kernel(routes=False)

        banner(f'bagctl neighbor {self.frr1} shutdown "maintenance: optics swap"')
        print(self.bagd.ctl("neighbor", self.frr1, "shutdown", "maintenance: optics swap").stdout.rstrip())
        t = time.monotonic()
        ids = self.want(self.weights(0, 1, 2), 10, "1:2 without frr1")
        if ids[1] != nhid:
            raise DemoFailed(f"the kernel group changed id ({nhid} -> {ids[1]})")
        print(f"{time.monotonic() - t:.1f}s later frr1's next hop has left group {nhid} (a dead next hop "
              "leaves at once, whatever the hold-down):")
        self.show_kernel(routes=False)
        a4 = self.peers[0][3]
        n = expect(lambda: (lambda n: n if "optics" in str(n) else None)(self.frrs[0].neighbor(a4)), 10,
                   "FRR sees the shutdown message")
        print("FRR's view (show bgp neighbors json):")
        for key in ("bgpState", "lastNotificationReason", "lastShutdownDescription"):
            if key in n:
                print(f"  {key}: {n[key]}")

        banner(f"bagctl neighbor {self.frr1} enable")
        print(self.bagd.ctl("neighbor", self.frr1, "enable").stdout.rstrip())
        t = time.monotonic()
        ids = self.want(self.weights(1, 1, 2), 30, "1:1:2 with frr1 back")
        if ids[1] != nhid:
            raise DemoFailed(f"the kernel group changed id ({nhid} -> {ids[1]})")
        print(f"{time.monotonic() - t:.1f}s later the session is up again and frr1 is back in group {nhid}, "
              "used at once (a new member does not wait for the hold-down):")
        self.show_kernel(routes=False)

        banner("Prometheus (http://127.0.0.1:9179/metrics in bagd's namespace), an excerpt")
        body = run(["ip", "netns", "exec", b, "python3", "-c",
                    "import urllib.request;print(urllib.request.urlopen('http://127.0.0.1:9179/metrics').read().decode())"]).stdout
        for line in body.splitlines():
            if line.startswith(("bagd_nexthop_groups", "bagd_weight_changes_total", "bagd_fib_operations_total")):
                print("  " + line)


def leftovers(lab):
    """What the demo would leave behind: its namespaces, its processes."""
    names = set(run(["ip", "netns", "list"]).stdout.split())
    left = [f"namespace {ns}" for ns in lab.namespaces if ns in names]
    left += [f"process {name} ({p.pid})" for name, p in lab.procs if p.poll() is None]
    left += [f"process {pid}" for pid in run(["pgrep", "-f", lab.dir], check=False).stdout.split()]
    return left


def main():
    if os.geteuid() != 0:
        sys.exit("make demo needs root (it creates network namespaces)")
    failed = None
    lab = Lab("demo")
    with lab:
        try:
            Demo(lab).run()
        except (DemoFailed, AssertionError, subprocess.CalledProcessError) as e:
            failed = e
            print(f"\n--- bagd's log (last 30 lines) ---\n" + "\n".join(lab.log("bagd.log").splitlines()[-30:]))
        banner("tearing down: daemons, namespaces (and the kernel objects in them)")
    left = leftovers(lab)
    if left:
        print("left behind: " + ", ".join(left))
    else:
        print(f"nothing left behind: none of the demo's namespaces ({lab.tag}*) or processes remain")
    print(f"done in {time.monotonic() - T0:.1f}s")
    if failed or left:
        detail = getattr(failed, "stderr", None) or ""
        sys.exit(f"DEMO FAILED: {failed or 'it left things behind'} {detail}".rstrip())


if __name__ == "__main__":
    main()
