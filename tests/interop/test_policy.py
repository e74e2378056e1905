"""Routing policy end to end with real peers in network namespaces (docs/policy.md).

bagd (AS 65000) has three eBGP neighbors, each on its own veth link:
- FRR (AS 65001) announces A and B, and P with link bandwidth 1 Gbit/s; it also receives
  what bagd exports;
- GoBGP (AS 65002) announces P with link bandwidth 3 Gbit/s, later tagged with the drain
  community 65000:666;
- a second FRR (AS 65004) announces C, and bagd has no policy for it.

Cases: (a) the import policy rejects B: it is not in bagd's RIB and FRR's prefixes_rejected
counts it; (b) the drain community becomes link bandwidth 0: GoBGP's next hop leaves P's
nexthop group in the kernel while the route stays; (c) the export policy prepends bagd's AS
twice toward FRR and filters one of bagd's own prefixes; (d) a SIGHUP with new policies (no
reject of B, one prepend) applies them without a reset: bagd sends FRR a ROUTE-REFRESH and B
appears, FRR sees the shorter path, and no session went down; (e) RFC 8212: the neighbor
without policy gives bagd nothing and is sent nothing, and policy_notes says so."""
import json
import os
import signal
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from netlab import Lab, frr_conf, gobgp_lb_toml, run, wait_until  # noqa: E402

LOCAL_AS = 65000
A, B, C = "10.70.1.0/24", "10.70.2.0/24", "10.90.0.0/24"
P = "10.60.0.0/24"  # from FRR and GoBGP: a multipath set of two
OWN, OWN_FILTERED = "10.80.0.0/24", "10.81.0.0/24"  # bagd's networks; the second is not exported
DRAIN = "65000:666"


def bagd_config(f4, g4, e4, reject_b=True, prepend=2):
    reject = ('  statements { name: "reject-b" conditions { prefix_set { set: "b" } }\n'
              '               actions { disposition: DISPOSITION_REJECT } }\n') if reject_b else ""
    return f"""
router {{ asn: {LOCAL_AS} router_id: "10.255.0.1" }}
neighbors {{ address: "{f4}" remote_as: 65001 timers {{ connect_retry: 1 }}
             import_policies: ["from-peers"] export_policies: ["to-peers"] }}
neighbors {{ address: "{g4}" remote_as: 65002 timers {{ connect_retry: 1 }}
             import_policies: ["from-peers"] export_policies: ["to-peers"] }}
neighbors {{ address: "{e4}" remote_as: 65004 timers {{ connect_retry: 1 }} }}  # no policy: RFC 8212
networks {{ prefix: "{OWN}" }}
networks {{ prefix: "{OWN_FILTERED}" }}
multipath {{ maximum_paths_ebgp: 4 as_path_relax: true }}
defined_sets {{
  prefix_sets {{ name: "b" prefixes {{ prefix: "{B}" }} }}
  prefix_sets {{ name: "not-exported" prefixes {{ prefix: "{OWN_FILTERED}" }} }}
  community_sets {{ name: "drain" communities: "{DRAIN}" }}
}}
policies {{
  name: "from-peers"
{reject}  statements {{ name: "drain" conditions {{ community_set {{ set: "drain" }} }}
               actions {{ link_bandwidth {{ op: OP_DRAIN }} disposition: DISPOSITION_ACCEPT }} }}
  statements {{ name: "accept" actions {{ disposition: DISPOSITION_ACCEPT }} }}
}}
policies {{
  name: "to-peers"
  statements {{ name: "filter" conditions {{ prefix_set {{ set: "not-exported" }} }}
               actions {{ disposition: DISPOSITION_REJECT }} }}
  statements {{ name: "prepend" actions {{ as_path_prepend {{ repeat: {prepend} }} disposition: DISPOSITION_ACCEPT }} }}
}}
"""


def frr_source(bagd_addr):
    return frr_conf(bagd_addr, LOCAL_AS, 65001, "10.255.0.2", hostname="frr-src",
                    before="bgp route-map delay-timer 1\nroute-map LB permit 10\n set extcommunity bandwidth 1000\n",
                    address_family=[f"network {P} route-map LB"], networks=(A, B))


def frr_no_policy(bagd_addr):
    return frr_conf(bagd_addr, LOCAL_AS, 65004, "10.255.0.5", hostname="frr-np", networks=(C,))


class Policy(unittest.TestCase):
    def test_import_export_drain_reload_and_rfc8212(self):
        lab = Lab("pol")
        self.addCleanup(lab.close)
        b, f, g, e = lab.netns("b"), lab.netns("f"), lab.netns("g"), lab.netns("e")
        bf4, f4, *_ = lab.link(b, f)
        bg4, g4, *_ = lab.link(b, g)
        be4, e4, *_ = lab.link(b, e)
        bagd = lab.start_bagd(b, bagd_config(f4, g4, e4))
        frr = lab.start_frr(f, frr_source(bf4), f4, name="frr-src")
        frr_np = lab.start_frr(e, frr_no_policy(be4), e4, name="frr-np")
        gobgp = lab.start_gobgp(g, gobgp_lb_toml(65002, "10.255.0.3", g4, bg4, 375000000, LOCAL_AS))
        for addr in (f4, g4, e4):
            bagd.wait_state(addr, "Established")
        gobgp.cli("global", "rib", "add", P, "origin", "igp", "-a", "ipv4")

        def rib():
            out = json.loads(bagd.ctl("show", "routes", "--json").stdout)
            return {r["prefix"]: r for r in out.get("routes", [])}

        def members():
            """bagd's group for P: {next hop: weight}."""
            out = bagd.ctl("show", "nexthop-groups", P, "--json", check=False)
            if out.returncode != 0:
                return None
            groups = json.loads(out.stdout).get("groups", [])
            return {m["next_hop"]: m.get("weight", 0) for m in groups[0]["members"]} if groups else None

        def kernel(prefix):
            """The kernel's next hops of `prefix` in bagd's namespace: {gateway: weight}."""
            routes = json.loads(run(["ip", "-n", b, "-j", "route", "show", prefix]).stdout or "[]")
            if not routes or "nhid" not in routes[0]:
                return None
            objs = {o["id"]: o for o in json.loads(run(["ip", "-n", b, "-j", "nexthop", "show"]).stdout or "[]")}
            top = objs.get(routes[0]["nhid"], {})
            if "group" not in top:
                return {top.get("gateway"): 1}
            return {objs[m["id"]].get("gateway"): m.get("weight", 1) for m in top["group"]}

        def frr_path(prefix):
            paths = frr.json(f"show bgp ipv4 unicast {prefix} json").get("paths", [])
            via_bagd = [p for p in paths if p.get("aspath", {}).get("string", "").startswith(str(LOCAL_AS))]
            return via_bagd[0]["aspath"]["string"] if via_bagd else None

        # (a) The import policy rejects B: A and P are in, B is not, and the rejection is counted.
        wait_until(lambda: {A, P} <= set(rib()), 30, "A and P in bagd's RIB")
        wait_until(lambda: int(bagd.neighbor(f4).get("prefixes_rejected", 0)) >= 1, 10, "B counted as rejected")
        self.assertNotIn(B, rib())
        self.assertEqual(int(bagd.neighbor(f4).get("prefixes_rejected", 0)), 1, bagd.neighbor(f4))
        self.assertEqual(int(bagd.neighbor(g4).get("prefixes_rejected", 0)), 0)
        self.assertEqual(bagd.neighbor(f4).get("policy_notes", []), [])
        self.assertEqual(bagd.neighbor(g4).get("policy_notes", []), [])

        # (b) Weighted 1:3 by link bandwidth, in bagd and in the kernel ...
        wait_until(lambda: members() == {f4: 1, g4: 3}, 30, "bagd's weights 1:3")
        wait_until(lambda: kernel(P) == {f4: 1, g4: 3}, 10, "the kernel's weights 1:3")
        # ... until GoBGP tags its path with the drain community: link bandwidth 0, weight 0.
        gobgp.cli("global", "rib", "add", P, "origin", "igp", "community", DRAIN, "-a", "ipv4")
        wait_until(lambda: (members() or {}).get(g4, 0) == 0 and (members() or {}).get(f4, 0) > 0, 20,
                   "GoBGP's member drained to weight 0")
        wait_until(lambda: kernel(P) == {f4: 1}, 10, "GoBGP's next hop out of the kernel's group")
        self.assertIn(P, rib(), "a drained path keeps the route")
        out = json.loads(bagd.ctl("show", "nexthop-groups", P, "--json").stdout)["groups"][0]
        g_member = [m for m in out["members"] if m["next_hop"] == g4]
        self.assertTrue(g_member, f"the drained path stays in the multipath set: {out}")
        self.assertEqual(float(g_member[0].get("bandwidth_bps", 0)), 0.0, g_member)

        # (c) Export: bagd's own prefix reaches FRR with two prepends (three times 65000 in all);
        # the filtered one does not.
        self.assertEqual(wait_until(lambda: frr_path(OWN), 30, f"FRR receives {OWN}"), "65000 65000 65000")
        frr_routes = frr.json("show bgp ipv4 unicast json").get("routes", {})
        self.assertNotIn(OWN_FILTERED, frr_routes)
        self.assertIn(OWN_FILTERED, rib(), "bagd originates it; only the export policy holds it back")

        # (e) RFC 8212: no policy for the third neighbor, so nothing from it and nothing to it.
        n = bagd.neighbor(e4)
        notes = n.get("policy_notes", [])
        self.assertTrue(any("RFC 8212" in s and "import" in s for s in notes), notes)
        self.assertTrue(any("RFC 8212" in s and "export" in s for s in notes), notes)
        wait_until(lambda: int(bagd.neighbor(e4).get("prefixes_rejected", 0)) >= 1, 10, "C counted as rejected")
        self.assertNotIn(C, rib())
        self.assertEqual(int(n.get("prefixes_received", 0)), 0, n)
        np_routes = frr_np.json("show bgp ipv4 unicast json").get("routes", {})
        self.assertEqual(set(np_routes), {C}, "bagd sends nothing to a neighbor without export policy")
        self.assertIn("RFC 8212", bagd.log())

        # (d) New policies by SIGHUP: B accepted, one prepend; no session is reset.
        transitions = {a: bagd.neighbor(a)["established_transitions"] for a in (f4, g4, e4)}
        refresh_sent = int(bagd.neighbor(f4).get("route_refresh", {}).get("requests_sent", 0))
        frr_refresh_in = frr.neighbor(bf4)["messageStats"]["routeRefreshRecv"]
        reloads = bagd.log().count("config reloaded")
        with open(os.path.join(lab.dir, "bagd.textproto"), "w") as out:
            out.write(bagd_config(f4, g4, e4, reject_b=False, prepend=1))
        bagd.proc.send_signal(signal.SIGHUP)
        wait_until(lambda: bagd.log().count("config reloaded") > reloads, 10, "reload logged")
        wait_until(lambda: B in rib(), 20, "B in bagd's RIB after the reload (ROUTE-REFRESH)")
        self.assertGreater(int(bagd.neighbor(f4).get("route_refresh", {}).get("requests_sent", 0)), refresh_sent)
        self.assertGreater(frr.neighbor(bf4)["messageStats"]["routeRefreshRecv"], frr_refresh_in,
                           "FRR received bagd's ROUTE-REFRESH")
        wait_until(lambda: frr_path(OWN) == "65000 65000", 20, "FRR sees one prepend")
        self.assertNotIn(OWN_FILTERED, frr.json("show bgp ipv4 unicast json").get("routes", {}))
        self.assertEqual(kernel(P), {f4: 1}, "still drained after the reload")
        self.assertEqual({a: bagd.neighbor(a)["established_transitions"] for a in (f4, g4, e4)}, transitions)
        for a in (f4, g4, e4):
            self.assertEqual(bagd.neighbor(a)["state"], "Established")
        self.assertNotIn(C, rib(), "RFC 8212 still holds for the neighbor without policy")
        self.assertIsNone(bagd.proc.poll())


if __name__ == "__main__":
    if os.geteuid() != 0:
        print("interop tests need root (network namespaces); skipped")
        sys.exit(77)
    unittest.main(verbosity=2)
