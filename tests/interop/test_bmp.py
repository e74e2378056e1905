"""BMP to a real collector: pmacct's pmbmpd (Debian `pmacct`) is the station, in bagd's
namespace on 127.0.0.1 (with a second, raw station, bmp_raw.py, that decodes the link-bandwidth
values pmbmpd 1.7.7 prints as "?"); FRR (route-map `set extcommunity bandwidth 1000`) and GoBGP (policy
`lb:65002:375000000`) send one prefix with link bandwidth. bagd's import policy sets GoBGP's
bandwidth to 2 Gbit/s, so the post-policy view differs from the pre-policy one. pmbmpd's JSON
log must hold: the Initiation, both peers up, the prefix pre-policy with each peer's own LB
community and post-policy with the one bagd applied, the Loc-RIB (RFC 9069) with both
multipath members, Statistics Reports, and after `bagctl neighbor ... shutdown` a peer down
with reason 1 (bagd's NOTIFICATION); a planned stop sends a Termination.

Adj-RIB-Out (RFC 8671): a third neighbor, an FRR receiver with cumulative link-bandwidth
export, gets the prefix; the raw station's post-policy Adj-RIB-Out for it (O and L) must carry
what FRR shows it received (next hop self, bagd's AS, the cumulative LB community), the
pre-policy one (O) the Loc-RIB's best path before export; pmbmpd logs the former as `is_out`.
A station with only the Adj-RIB-Out views gets its Peer Ups and Peer Downs with O. Each Loc-RIB
member carries bagd's applied bandwidth (a non-transitive LB community with bagd's AS).
tshark's BMP dissector decodes both raw streams (written as a pcap) without an error."""
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from netlab import Lab, frr_conf, frr_receiver_conf, gobgp_lb_toml, wait_until  # noqa: E402
import bmp_raw  # noqa: E402

LOCAL_AS = 65000
P = "10.60.0.0/24"
BMP_PORT = 11790
RAW_PORT = 11791
RAW_OUT_PORT = 11792
ALL_VIEWS = "[BMP_PRE_POLICY, BMP_POST_POLICY, BMP_LOC_RIB, BMP_ADJ_RIB_OUT_PRE, BMP_ADJ_RIB_OUT_POST]"


def tshark_check(test, raw, port, loc_rib):
    """The raw stream as a pcap through tshark's BMP dissector: every message decoded, none
    malformed, no expert error. Returns the number of BMP messages. `loc_rib`: the station has
    the Loc-RIB view (its instance's Peer Up carries the VRF/Table Name TLV)."""
    if shutil.which("tshark") is None:
        return None
    pcap = raw + ".pcap"
    # tshark 4.0 reads a Peer Up's Information TLVs as a BGP message (bmp_raw.to_pcap): they
    # are checked here instead: only the Loc-RIB instance's VRF/Table Name "global".
    stripped = bmp_raw.to_pcap(raw, pcap, port, strip_peer_up_tlvs=True)
    test.assertEqual(stripped, [(3, b"global")] if loc_rib else [])
    want = len(bmp_raw.parse(raw))
    out = subprocess.run(["tshark", "-r", pcap, "-o", "tcp.desegment_tcp_streams:TRUE", "-d", f"tcp.port=={port},bmp",
                          "-V"], capture_output=True, text=True, timeout=120)
    test.assertEqual(out.returncode, 0, out.stderr)
    lines = out.stdout.splitlines()
    bad = [i for i, line in enumerate(lines)
           if "Malformed" in line or "Expert Info (Error" in line or "Exception occurred" in line]
    context = "\n".join(lines[max(0, bad[0] - 80):bad[0] + 5]) if bad else ""
    test.assertEqual(len(bad), 0, f"tshark: {len(bad)} error lines in {pcap}; the first in:\n{context}")
    test.assertEqual(out.stdout.count("BGP Monitoring Protocol"), want, "tshark decoded every BMP message")
    return want


def bagd_config(f4, g4, r4):
    return f"""
router {{ asn: {LOCAL_AS} router_id: "10.255.0.1" }}
neighbors {{ address: "{f4}" remote_as: 65001 timers {{ connect_retry: 1 }}
             import_policies: ["accept"] export_policies: ["accept"] }}
neighbors {{ address: "{g4}" remote_as: 65002 timers {{ connect_retry: 1 }}
             import_policies: ["two-gig"] export_policies: ["accept"] }}
neighbors {{ address: "{r4}" remote_as: 65003 timers {{ connect_retry: 1 }}
             import_policies: ["accept"] export_policies: ["accept"]
             link_bandwidth {{ mode: EXPORT_CUMULATIVE readvertise_interval: 0 }} }}
multipath {{ maximum_paths_ebgp: 4 as_path_relax: true }}
fib {{ backend: BACKEND_NONE }}
policies {{ name: "accept" statements {{ name: "all" actions {{ disposition: DISPOSITION_ACCEPT }} }} }}
policies {{ name: "two-gig"
  statements {{ name: "lb" actions {{ link_bandwidth {{ op: OP_SET rate: "2G" }} disposition: DISPOSITION_ACCEPT }} }} }}
bmp {{
  sys_name: "bagd-bmp-test"
  station {{ address: "127.0.0.1" port: {BMP_PORT}
             views: [BMP_PRE_POLICY, BMP_POST_POLICY, BMP_LOC_RIB, BMP_ADJ_RIB_OUT_POST] statistics_interval: 1 }}
  station {{ address: "127.0.0.1" port: {RAW_PORT} views: {ALL_VIEWS} }}
  station {{ address: "127.0.0.1" port: {RAW_OUT_PORT} views: [BMP_ADJ_RIB_OUT_PRE, BMP_ADJ_RIB_OUT_POST] }}
}}
"""


def pmbmpd_conf(d):
    return f"""daemonize: false
bmp_daemon: true
bmp_daemon_ip: 127.0.0.1
bmp_daemon_port: {BMP_PORT}
bmp_daemon_msglog_file: {d}/bmp.json
bmp_daemon_msglog_output: json
logfile: {d}/pmbmpd.log
pidfile: {d}/pmbmpd.pid
"""


def read_json_lines(path):
    out = []
    if not os.path.exists(path):
        return out
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                pass  # a line being written
    return out


class Bmp(unittest.TestCase):
    def test_pmbmpd_sees_peers_views_stats_and_peer_down(self):
        if shutil.which("pmbmpd") is None:
            self.skipTest("pmbmpd (Debian pmacct) is not installed")
        lab = Lab("bmp")
        self.addCleanup(lab.close)
        b, f, g, r = lab.netns("b"), lab.netns("f"), lab.netns("g"), lab.netns("r")
        bf4, f4, *_ = lab.link(b, f)
        bg4, g4, *_ = lab.link(b, g)
        br4, r4, *_ = lab.link(b, r)
        d = os.path.join(lab.dir, "pmbmpd")
        os.makedirs(d)
        with open(os.path.join(d, "pmbmpd.conf"), "w") as out:
            out.write(pmbmpd_conf(d))
        lab.spawn("pmbmpd", b, ["pmbmpd", "-f", os.path.join(d, "pmbmpd.conf")], "pmbmpd.out")
        log = os.path.join(d, "bmp.json")
        raw = os.path.join(lab.dir, "bmp.raw")
        script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bmp_raw.py")
        lab.spawn("bmp_raw", b, [sys.executable, script, str(RAW_PORT), raw], "bmp_raw.out")
        raw_out = os.path.join(lab.dir, "bmp_out.raw")
        lab.spawn("bmp_raw_out", b, [sys.executable, script, str(RAW_OUT_PORT), raw_out], "bmp_raw_out.out")

        bagd = lab.start_bagd(b, bagd_config(f4, g4, r4))
        lab.start_frr(f, frr_conf(bf4, LOCAL_AS, 65001, "10.255.0.2", hostname="frr-src",
                                  before="bgp route-map delay-timer 1\nroute-map LB permit 10\n"
                                         " set extcommunity bandwidth 1000\n",
                                  address_family=[f"network {P} route-map LB"]), f4, name="frr")
        gobgp = lab.start_gobgp(g, gobgp_lb_toml(65002, "10.255.0.3", g4, bg4, 375000000))
        rx = lab.start_frr(r, frr_receiver_conf(br4, LOCAL_AS), r4, name="frr-rx")
        bagd.wait_state(f4, "Established")
        bagd.wait_state(g4, "Established")
        bagd.wait_state(r4, "Established")
        gobgp.cli("global", "rib", "add", P, "origin", "igp", "-a", "ipv4")

        def msgs(kind=None):
            return [m for m in read_json_lines(log) if kind is None or m.get("bmp_msg_type") == kind]

        def routes(peer, post=None, loc=False):
            out = []
            for m in msgs("route_monitor"):
                if m.get("ip_prefix") != P or m.get("log_type") == "delete":
                    continue
                if loc != bool(m.get("is_loc")):
                    continue
                # Adj-RIB-In only: what bagd sent the neighbor (is_out) is checked below. Taking
                # it here made the test depend on arrival order (a withdrawal to FRR once FRR's
                # path became the best).
                if m.get("is_out"):
                    continue
                if not loc and m.get("peer_ip") != peer:
                    continue
                if post is not None and bool(m.get("is_post")) != post:
                    continue
                out.append(m)
            return out

        try:
            wait_until(lambda: len(msgs("init")) >= 1, 20, "pmbmpd: Initiation")
            wait_until(lambda: {m.get("peer_ip") for m in msgs("peer_up")} >= {f4, g4}, 20, "pmbmpd: both peers up")
            wait_until(lambda: routes(f4, post=False) and routes(g4, post=False), 30, "pre-policy routes")
            wait_until(lambda: routes(f4, post=True) and routes(g4, post=True), 30, "post-policy routes")
            wait_until(lambda: len(routes(None, loc=True)) >= 2, 30, "Loc-RIB with both members")
            wait_until(lambda: len(msgs("stats")) >= 2, 20, "statistics reports")
        except AssertionError:
            print(open(log).read() if os.path.exists(log) else "(no pmbmpd log)")
            print(lab.log("pmbmpd/pmbmpd.log"))
            print(bagd.log())
            raise
        init = msgs("init")[0]
        self.assertIn("bagd-bmp-test", json.dumps(init))
        self.assertIn("bagd", json.dumps(init))

        # pmbmpd shows that the routes carry an extended community, but prints link bandwidth as "?".
        for m in (routes(f4, post=False)[-1], routes(g4, post=False)[-1], routes(f4, post=True)[-1],
                  routes(g4, post=True)[-1]):
            self.assertIn("ecomms", m)

        # The values, from the raw station: pre-policy what each peer sent (FRR: transitive
        # 0x00, 1000 Mbit/s = 125000000 bytes/s, AS 65001; GoBGP: non-transitive 0x40,
        # 375000000 bytes/s, AS 65002); post-policy as bagd's import policy left them
        # (GoBGP's set to 2G = 250000000 bytes/s; FRR's untouched); Loc-RIB: both members.
        def raw_routes(peer, post, loc=False):
            out = []
            for m in bmp_raw.parse(raw):
                if m["type"] != "route_monitor" or not any(p == P for p, _ in m["nlri"]):
                    continue
                if loc:
                    if m["peer_type"] == 3:
                        out.append(m)
                    continue
                if m["peer_type"] == 0 and m["peer_ip"] == peer and bool(m["flags"] & 0x40) == post \
                        and not m["flags"] & 0x10:
                    out.append(m)
            return out

        wait_until(lambda: raw_routes(g4, True) and raw_routes(f4, True) and len(raw_routes(None, None, True)) >= 2,
                   20, "raw station: post-policy and Loc-RIB routes")
        self.assertEqual(raw_routes(f4, False)[-1]["lb"], [(0x00, 65001, 125000000)])
        self.assertEqual(raw_routes(g4, False)[-1]["lb"], [(0x40, 65002, 375000000)])
        self.assertEqual(raw_routes(f4, True)[-1]["lb"], [(0x00, 65001, 125000000)])
        post_g_lb = raw_routes(g4, True)[-1]["lb"]
        self.assertEqual(len(post_g_lb), 1)
        self.assertEqual(post_g_lb[0][2], 250000000)
        loc_raw = raw_routes(None, None, True)
        self.assertEqual({m["next_hop"] for m in loc_raw}, {f4, g4})
        self.assertEqual(len({m["nlri"][0][1] for m in loc_raw}), 2)  # two path identifiers
        # bagd's applied bandwidth on each Loc-RIB member: a non-transitive LB community with
        # bagd's AS (65000) beside the member's own (docs/bmp.md); a new member is used at once
        # with its bandwidth: FRR's 1 Gbit/s, GoBGP's 2 Gbit/s after import policy.
        def loc_last():
            last = {}
            for m in raw_routes(None, None, True):
                last[m["next_hop"]] = m["lb"]
            return last
        wait_until(lambda: (0x40, 65000, 250000000) in loc_last().get(g4, []) and
                   (0x40, 65000, 125000000) in loc_last().get(f4, []), 10, "Loc-RIB: the applied bandwidth")
        self.assertEqual(sorted(loc_last()[f4]), sorted([(0x00, 65001, 125000000), (0x40, 65000, 125000000)]))
        self.assertEqual(len(loc_last()[g4]), 2)  # GoBGP's own (as import policy set it) and bagd's
        self.assertEqual([lb for lb in loc_last()[g4] if lb != (0x40, 65000, 250000000)][0][2], 250000000)

        # Adj-RIB-Out (RFC 8671) toward the receiver: post-policy (O, L) exactly what FRR
        # shows it received: next hop self, the cumulative bandwidth 1G + 2G = 3 Gbit/s
        # (375000000 bytes/s) under bagd's AS; pre-policy (O) the Loc-RIB's best path as it is.
        def out_routes(path, peer, post):
            flags = 0x50 if post else 0x10
            return [m for m in bmp_raw.parse(path) if m["type"] == "route_monitor" and m["peer_ip"] == peer
                    and m["flags"] & 0xD0 == flags and any(p == P for p, _ in m["nlri"])]

        def rx_lb():
            paths = rx.json(f"show bgp ipv4 unicast {P} json").get("paths", [])
            text = paths[0].get("extendedCommunity", {}).get("string") if paths else None
            return text.split(" ")[0] if text else None

        try:
            wait_until(lambda: rx_lb() == "LB:65000:375000000", 30, "the receiver's cumulative LB")
            wait_until(lambda: out_routes(raw, r4, True) and out_routes(raw, r4, True)[-1]["lb"][0][1:] ==
                       (65000, 375000000), 20, "raw station: the Adj-RIB-Out post-policy route as sent")
            wait_until(lambda: out_routes(raw, r4, False), 20, "raw station: the Adj-RIB-Out pre-policy route")
        except AssertionError:
            print(bagd.log())
            raise
        sent = out_routes(raw, r4, True)[-1]
        self.assertEqual(sent["next_hop"], br4)  # next hop self toward the eBGP receiver
        self.assertEqual(len(sent["lb"]), 1)
        self.assertEqual(sent["lb"][0][1:], (65000, 375000000))
        self.assertEqual(f"LB:{sent['lb'][0][1]}:{sent['lb'][0][2]}", rx_lb())
        before = out_routes(raw, r4, False)[-1]
        self.assertIn(before["next_hop"], (f4, g4))  # the best path's, before the rewrite
        self.assertNotEqual(before["lb"], sent["lb"])  # the member's own, not the cumulative
        # Not sent back to the neighbor the best path came from (pre- and post-policy): if the
        # best path moved while the routes came in, what that neighbor was sent is withdrawn.
        def out_state(path, peer, post):
            state = None
            for m in bmp_raw.parse(path):
                if m["type"] != "route_monitor" or m["peer_ip"] != peer or m["flags"] & 0xD0 != (0x50 if post else 0x10):
                    continue
                if any(p == P for p, _ in m["nlri"]):
                    state = "announced"
                elif any(p == P for p, _ in m["withdrawn"]):
                    state = "withdrawn"
            return state
        best_from = f4 if before["next_hop"] == f4 else g4
        other = g4 if best_from == f4 else f4
        wait_until(lambda: out_state(raw, best_from, False) in (None, "withdrawn"), 10, "pre-policy: not to the source")
        wait_until(lambda: out_state(raw, best_from, True) in (None, "withdrawn"), 10, "post-policy: not to the source")
        self.assertEqual(out_state(raw, other, True), "announced")
        self.assertEqual(out_state(raw, other, False), "announced")
        # The Adj-RIB-Out-only station: the same routes, Peer Ups with O (RFC 8671).
        wait_until(lambda: out_routes(raw_out, r4, True), 20, "Adj-RIB-Out-only station: the route")
        ups = [m for m in bmp_raw.parse(raw_out) if m["type"] == "peer_up"]
        self.assertEqual({m["peer_ip"] for m in ups}, {f4, g4, r4})
        self.assertTrue(all(m["flags"] & 0x10 for m in ups))
        self.assertFalse(any(m["type"] == "route_monitor" and not m["flags"] & 0x10 for m in bmp_raw.parse(raw_out)))
        # pmbmpd: the Adj-RIB-Out route toward the receiver, flagged is_out.
        wait_until(lambda: any(m.get("is_out") and m.get("peer_ip") == r4 and m.get("ip_prefix") == P
                               for m in msgs("route_monitor")), 20, "pmbmpd: is_out route")

        # Loc-RIB: both members (their next hops), from peer type 3.
        loc = routes(None, loc=True)
        self.assertEqual({m.get("bgp_nexthop") for m in loc}, {f4, g4})
        # Statistics: the Adj-RIB-In gauges of each peer (type 7) say 1 route.
        # A report sent before the route arrived says 0: wait for one sent after (a slow
        # machine, an ASan build), within a few statistics intervals.
        def g4_stats():
            return [m for m in msgs("stats") if m.get("peer_ip") == g4 and m.get("counter_type") == 7]
        wait_until(lambda: g4_stats() and int(g4_stats()[-1]["counter_value"]) == 1, 20,
                   "a type-7 statistic of 1 route for GoBGP's peer")

        # bagctl show bmp: the three stations up, with what each was sent.
        shown = json.loads(bagd.ctl("show", "bmp", "--json").stdout)["stations"]
        self.assertEqual({st["name"] for st in shown},
                         {f"127.0.0.1:{BMP_PORT}", f"127.0.0.1:{RAW_PORT}", f"127.0.0.1:{RAW_OUT_PORT}"})
        for st in shown:
            self.assertEqual(st["state"], "up", st)
            self.assertGreater(int(st["messages"]), 3, st)
            self.assertGreater(int(st["bytes"]), 0, st)
            self.assertEqual(int(st.get("drops", 0)), 0, st)
        by_name = {st["name"]: st for st in shown}
        self.assertEqual(by_name[f"127.0.0.1:{RAW_OUT_PORT}"]["views"], ["adj-rib-out-pre", "adj-rib-out-post"])
        self.assertIn("up", bagd.ctl("show", "bmp").stdout)

        # Peer down with bagd's NOTIFICATION (reason 1).
        bagd.ctl("neighbor", f4, "shutdown")
        wait_until(lambda: any(m.get("peer_ip") == f4 for m in msgs("peer_down")), 20, "peer down")
        down = [m for m in msgs("peer_down") if m.get("peer_ip") == f4][-1]
        self.assertEqual(int(down.get("reason_type")), 1)
        # The NOTIFICATION in it: Cease (6) / Administrative Shutdown (2), sent as Hard Reset (9)
        # since FRR negotiated RFC 8538's N bit.
        wait_until(lambda: any(m["type"] == "peer_down" for m in bmp_raw.parse(raw)), 10, "raw: peer down")
        raw_down = [m for m in bmp_raw.parse(raw) if m["type"] == "peer_down"][-1]
        self.assertEqual(raw_down["reason"], 1)
        self.assertEqual(raw_down["data"][18:20], bytes([3, 6]))
        self.assertIn(raw_down["data"][20], (2, 9))
        # Its member leaves the Loc-RIB (a withdrawal by path identifier).
        wait_until(lambda: any(m["type"] == "route_monitor" and m["peer_type"] == 3 and m["withdrawn"]
                               for m in bmp_raw.parse(raw)), 10, "Loc-RIB member withdrawn")
        # The Adj-RIB-Out-only station's Peer Down has O too.
        wait_until(lambda: any(m["type"] == "peer_down" and m["peer_ip"] == f4 for m in bmp_raw.parse(raw_out)),
                   10, "Adj-RIB-Out-only station: peer down")
        self.assertTrue(all(m["flags"] & 0x10 for m in bmp_raw.parse(raw_out) if m["type"] == "peer_down"))

        # A planned stop: Termination.
        lab.stop(bagd.proc)
        wait_until(lambda: len(msgs("term")) >= 1, 10, "Termination")

        # tshark's BMP dissector: every message of both raw streams, no error.
        if shutil.which("tshark") is not None:
            self.assertGreater(tshark_check(self, raw, RAW_PORT, loc_rib=True), 10)
            self.assertGreater(tshark_check(self, raw_out, RAW_OUT_PORT, loc_rib=False), 5)

    def test_station_that_comes_and_goes_leaves_sessions_alone(self):
        """A station killed right after each Initiation (10 times), then refusing (nobody
        listens), then back: the sessions stay up, the routes stay, and the last station gets
        everything again."""
        lab = Lab("bmpflap")
        self.addCleanup(lab.close)
        b, f = lab.netns("b"), lab.netns("f")
        bf4, f4, *_ = lab.link(b, f)
        config = f"""
router {{ asn: {LOCAL_AS} router_id: "10.255.0.1" ebgp_requires_policy: false }}
neighbors {{ address: "{f4}" remote_as: 65001 timers {{ connect_retry: 1 }} }}
fib {{ backend: BACKEND_NONE }}
bmp {{ station {{ address: "127.0.0.1" port: {RAW_PORT} }} }}
"""
        bagd = lab.start_bagd(b, config)
        lab.start_frr(f, frr_conf(bf4, LOCAL_AS, 65001, "10.255.0.2", hostname="frr-src",
                                  address_family=[f"network {P}"]), f4, name="frr")
        bagd.wait_state(f4, "Established")
        wait_until(lambda: P in bagd.ctl("show", "routes").stdout, 20, "the route in bagd")
        transitions = bagd.neighbor(f4)["established_transitions"]
        script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bmp_raw.py")
        for i in range(10):
            path = os.path.join(lab.dir, f"flap{i}.raw")
            p = lab.spawn(f"raw{i}", b, [sys.executable, script, str(RAW_PORT), path], f"raw{i}.out")
            wait_until(lambda: os.path.exists(path) and any(m["type"] == "init" for m in bmp_raw.parse(path)),
                       15, f"Initiation on connection {i + 1}")
            lab.stop(p, signal.SIGKILL)
        time.sleep(2)  # refused: bagd backs off and retries
        last = os.path.join(lab.dir, "last.raw")
        lab.spawn("raw-last", b, [sys.executable, script, str(RAW_PORT), last], "raw-last.out")
        wait_until(lambda: os.path.exists(last) and any(m["type"] == "route_monitor" and m["nlri"]
                                                        for m in bmp_raw.parse(last)), 20, "the tables again")
        kinds = [m["type"] for m in bmp_raw.parse(last)]
        self.assertEqual(kinds[:3], ["init", "peer_up", "peer_up"])  # Loc-RIB instance, then the neighbor
        self.assertIsNone(bagd.proc.poll())
        self.assertEqual(bagd.neighbor(f4)["state"], "Established")
        self.assertEqual(bagd.neighbor(f4)["established_transitions"], transitions)
        self.assertIn(P, bagd.ctl("show", "routes").stdout)
        self.assertIn("lost", bagd.log())


if __name__ == "__main__":
    if os.geteuid() != 0:
        print("interop tests need root (network namespaces); skipped")
        sys.exit(77)
    unittest.main(verbosity=2)
