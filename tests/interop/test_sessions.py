"""Sessions between bagd and real FRR 8.4 / GoBGP 3.10 peers in network namespaces.

Run as root: python3 -m unittest -v test_sessions (ctest does). Each test builds its own lab
(two namespaces and a veth pair) and removes it, also on failure."""
import json
import os
import signal
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from netlab import Lab, wait_until  # noqa: E402

LOCAL_AS = 4200000001  # 4-octet: AS_TRANS on the wire unless the 4-octet capability is used


def bagd_config(neighbor, remote_as, extra="", timers="connect_retry: 1"):
    return f"""
router {{ asn: {LOCAL_AS} router_id: "10.255.0.1" ebgp_requires_policy: false }}
neighbors {{ address: "{neighbor}" remote_as: {remote_as} description: "peer under test"
  timers {{ {timers} }} {extra} }}
"""


def frr_config(bagd_addr, family="ipv4", extra="", prefixes=("192.0.2.0/24",)):
    nets = "\n".join(f"  network {p}" for p in prefixes)
    return f"""hostname frr-peer
router bgp 65001
 bgp router-id 10.255.0.2
 no bgp ebgp-requires-policy
 no bgp network import-check
 no bgp default ipv4-unicast
 neighbor {bagd_addr} remote-as {LOCAL_AS}
 neighbor {bagd_addr} timers connect 1
{extra}
 address-family {family} unicast
  neighbor {bagd_addr} activate
{nets}
 exit-address-family
"""


def gobgp_toml(bagd_addr, local_addr, family="ipv4-unicast", extra=""):
    return f"""
[global.config]
  as = 65002
  router-id = "10.255.0.3"
  local-address-list = ["{local_addr}"]
[[neighbors]]
  [neighbors.config]
    neighbor-address = "{bagd_addr}"
    peer-as = {LOCAL_AS}
    {extra}
  [neighbors.timers.config]
    connect-retry = 1
  [[neighbors.afi-safis]]
    [neighbors.afi-safis.config]
      afi-safi-name = "{family}"
"""


class TwoNamespaces(unittest.TestCase):
    def lab(self, name):
        """bagd's namespace, the peer's, and the link between them; removed after the test."""
        lab = Lab(name)
        self.addCleanup(lab.close)
        a, b = lab.netns("b"), lab.netns("p")
        return lab, a, b, lab.link(a, b)


class FrrSessions(TwoNamespaces):
    def test_bagd_active_ipv4_four_octet_as(self):
        lab, a, b, (a4, b4, *_rest) = self.lab("act4")
        frr = lab.start_frr(b, frr_config(a4, extra=f" neighbor {a4} passive"), b4)
        t0 = time.monotonic()
        bagd = lab.start_bagd(a, bagd_config(b4, 65001))
        n = bagd.wait_state(b4, "Established")
        setup = time.monotonic() - t0
        print(f"\n  session setup bagd(active) -> FRR: {setup:.3f}s", file=sys.stderr)
        self.assertTrue(n["negotiated"]["four_octet_as"])
        self.assertEqual(n["peer_router_id"], "10.255.0.2")
        self.assertIn("ipv4-unicast", n["negotiated"]["families"])
        f = frr.neighbor(a4)
        self.assertEqual(f["bgpState"], "Established")
        self.assertEqual(f["remoteAs"], LOCAL_AS)  # FRR sees our real 4-octet AS
        # FRR's network statement arrives and is counted.
        wait_until(lambda: bagd.neighbor(b4)["prefixes_received"] == "1", 10, "1 prefix from FRR")

    def test_bagd_passive_ipv6_transport(self):
        lab, a, b, (a4, b4, a6, b6, *_r) = self.lab("pas6")
        bagd = lab.start_bagd(a, bagd_config(b6, 65001, extra="passive: true address_families: IPV6_UNICAST"))
        frr = lab.start_frr(b, frr_config(a6, family="ipv6", prefixes=("2001:db8:1::/48",)), b6)
        n = bagd.wait_state(b6, "Established")
        self.assertTrue(n["passive"])
        self.assertEqual(n["negotiated"]["families"], ["ipv6-unicast"])
        self.assertEqual(frr.neighbor(a6)["bgpState"], "Established")
        wait_until(lambda: bagd.neighbor(b6)["prefixes_received"] == "1", 10, "1 IPv6 prefix from FRR")

    def test_md5_wrong_key_never_establishes_right_key_does(self):
        lab, a, b, (a4, b4, *_r) = self.lab("md5")
        frr = lab.start_frr(b, frr_config(a4, extra=f" neighbor {a4} password right-key"), b4)
        bagd = lab.start_bagd(a, bagd_config(b4, 65001, extra='password: "wrong-key"'))
        time.sleep(6)  # several connect attempts both ways
        self.assertNotEqual(bagd.neighbor(b4)["state"], "Established")
        self.assertNotEqual(frr.neighbor(a4).get("bgpState"), "Established")
        lab.stop(bagd.proc)
        bagd2 = lab.start_bagd(a, bagd_config(b4, 65001, extra='password: "right-key"'), name="bagd2")
        bagd2.wait_state(b4, "Established", timeout=30)

    def test_frozen_peer_hold_timer_expired_then_recovers(self):
        lab, a, b, (a4, b4, *_r) = self.lab("hold")
        frr = lab.start_frr(b, frr_config(a4, extra=f" neighbor {a4} timers 2 6"), b4)
        bagd = lab.start_bagd(a, bagd_config(b4, 65001, timers="hold_time: 6 connect_retry: 1"))
        n = bagd.wait_state(b4, "Established")
        self.assertEqual(n["negotiated"]["hold_time"], 6)
        os.kill(frr.proc.pid, signal.SIGSTOP)
        frozen = time.monotonic()
        try:
            def expired():
                sent = bagd.neighbor(b4).get("last_notification_sent", {})
                return sent.get("code") == 4 and sent
            wait_until(expired, 9, "Hold Timer Expired sent")
            elapsed = time.monotonic() - frozen
            self.assertLessEqual(elapsed, 6 + 1.5)  # within the hold time (plus polling)
        finally:
            os.kill(frr.proc.pid, signal.SIGCONT)
        n = bagd.wait_state(b4, "Established", timeout=40)
        self.assertGreaterEqual(int(n["established_transitions"]), 2)

    def test_admin_shutdown_message_reaches_frr(self):
        lab, a, b, (a4, b4, *_r) = self.lab("shut")
        frr = lab.start_frr(b, frr_config(a4), b4)
        bagd = lab.start_bagd(a, bagd_config(b4, 65001))
        bagd.wait_state(b4, "Established")
        bagd.ctl("neighbor", b4, "shutdown", "maintenance")
        n = bagd.wait_state(b4, "Idle")
        self.assertTrue(n["admin_down"])
        self.assertEqual(n["last_notification_sent"]["shutdown_message"], "maintenance")

        def frr_saw_it():
            f = frr.neighbor(a4)
            text = str(f)
            return "maintenance" in text and f
        f = wait_until(frr_saw_it, 10, "FRR shows the shutdown message")
        self.assertIn("Administrative Shutdown", str(f))
        # It stays down until enabled, then comes back.
        time.sleep(2)
        self.assertEqual(bagd.neighbor(b4)["state"], "Idle")
        bagd.ctl("neighbor", b4, "enable")
        bagd.wait_state(b4, "Established", timeout=30)

    def test_sigterm_sends_cease_to_every_peer(self):
        lab, a, b, (a4, b4, *_r) = self.lab("term")
        frr = lab.start_frr(b, frr_config(a4), b4)
        bagd = lab.start_bagd(a, bagd_config(b4, 65001))
        bagd.wait_state(b4, "Established")
        lab.stop(bagd.proc, signal.SIGTERM)
        self.assertEqual(bagd.proc.returncode, 0)

        def cease():
            f = frr.neighbor(a4)
            return "Cease" in str(f.get("lastNotificationReason", "")) + str(f) and f
        wait_until(cease, 10, "FRR got a Cease")


class GobgpSessions(TwoNamespaces):
    def test_gobgp_ipv4_both_directions_and_four_octet(self):
        lab, a, b, (a4, b4, *_r) = self.lab("gob4")
        gobgp = lab.start_gobgp(b, gobgp_toml(a4, b4))
        bagd = lab.start_bagd(a, bagd_config(b4, 65002))
        n = bagd.wait_state(b4, "Established")
        self.assertTrue(n["negotiated"]["four_octet_as"])
        wait_until(lambda: gobgp.neighbor_state(a4) in ("established", "BGP_FSM_ESTABLISHED", 6), 10,
                   "GoBGP established")
        gobgp.cli("global", "rib", "add", "198.51.100.0/24", "-a", "ipv4")
        wait_until(lambda: bagd.neighbor(b4)["prefixes_received"] == "1", 10, "1 prefix from GoBGP")

    def test_gobgp_ipv6_transport_bagd_passive(self):
        lab, a, b, (a4, b4, a6, b6, *_r) = self.lab("gob6")
        bagd = lab.start_bagd(a, bagd_config(b6, 65002, extra="passive: true address_families: IPV6_UNICAST"))
        gobgp_toml_v6 = gobgp_toml(a6, b6, family="ipv6-unicast")
        lab.start_gobgp(b, gobgp_toml_v6)
        n = bagd.wait_state(b6, "Established")
        self.assertEqual(n["negotiated"]["families"], ["ipv6-unicast"])

    def test_gobgp_md5(self):
        lab, a, b, (a4, b4, *_r) = self.lab("gobmd5")
        lab.start_gobgp(b, gobgp_toml(a4, b4, extra='auth-password = "s3cret"'))
        bagd = lab.start_bagd(a, bagd_config(b4, 65002, extra='password: "s3cret"'))
        bagd.wait_state(b4, "Established")


class Readvertisement(unittest.TestCase):
    """FRR and GoBGP each advertise to bagd; bagd re-advertises to the other with its own AS
    prepended and itself as next hop; a withdraw at the source withdraws everywhere."""

    def test_frr_and_gobgp_through_bagd(self):
        lab = Lab("readv")
        self.addCleanup(lab.close)
        b, f, g = lab.netns("b"), lab.netns("f"), lab.netns("g")
        bf4, f4, *_ = lab.link(b, f)
        bg4, g4, *_ = lab.link(b, g)
        bagd = lab.start_bagd(b, f"""
router {{ asn: {LOCAL_AS} router_id: "10.255.0.1" ebgp_requires_policy: false }}
neighbors {{ address: "{f4}" remote_as: 65001 timers {{ connect_retry: 1 }} }}
neighbors {{ address: "{g4}" remote_as: 65002 timers {{ connect_retry: 1 }} }}
networks {{ prefix: "10.100.0.0/24" }}
multipath {{ maximum_paths_ebgp: 4 as_path_relax: true }}
""")
        frr = lab.start_frr(f, frr_config(bf4, prefixes=("192.0.2.0/24", "192.0.3.0/24", "10.50.0.0/24")), f4)
        gobgp = lab.start_gobgp(g, gobgp_toml(bg4, g4))
        bagd.wait_state(f4, "Established")
        bagd.wait_state(g4, "Established")
        gobgp.cli("global", "rib", "add", "198.51.100.0/24", "-a", "ipv4")
        gobgp.cli("global", "rib", "add", "10.50.0.0/24", "origin", "igp", "-a", "ipv4")  # FRR's network is IGP too

        def gobgp_route(prefix):
            import json as _json
            rib = _json.loads(gobgp.cli("global", "rib", "-a", "ipv4", "-j") or "{}")
            return rib.get(prefix)

        def frr_route(prefix):
            routes = frr.json("show bgp ipv4 unicast json").get("routes", {})
            return routes.get(prefix)

        # FRR's prefix reaches GoBGP through bagd: AS path bagd FRR, next hop bagd.
        paths = wait_until(lambda: gobgp_route("192.0.2.0/24"), 20, "192.0.2.0/24 at GoBGP")
        attrs = {a["type"]: a for a in paths[0]["attrs"]}
        self.assertEqual(attrs[2]["as_paths"][0]["asns"], [LOCAL_AS, 65001])
        self.assertEqual(attrs[3]["nexthop"], bg4)
        # GoBGP's prefix reaches FRR: AS path bagd GoBGP, next hop bagd.
        route = wait_until(lambda: frr_route("198.51.100.0/24"), 20, "198.51.100.0/24 at FRR")
        self.assertEqual(route[0]["path"], f"{LOCAL_AS} 65002")
        self.assertEqual(route[0]["nexthops"][0]["ip"], bf4)
        # The same prefix from both: equal AS path length from different ASes, so with
        # multipath-relax both are in the set; FRR (router id 10.255.0.2) is best by router id.
        def both_paths():
            r = json.loads(bagd.ctl("show", "routes", "10.50.0.0/24", "--json").stdout)["routes"][0]
            return len(r["paths"]) == 2 and r
        route50 = wait_until(both_paths, 20, "two paths for 10.50.0.0/24")
        best, other = route50["paths"]
        self.assertEqual((best["peer"], best["best"], best["multipath"]), (f4, True, True))
        self.assertEqual((other["peer"], other["best"], other["multipath"]), (g4, False, True))
        self.assertEqual(other["decision_step"], "router-id")
        self.assertEqual(best["as_path"], "65001")
        summary = json.loads(bagd.ctl("show", "rib-summary", "--json").stdout)
        v4 = next(f for f in summary["families"] if f["family"] == "ipv4-unicast")
        self.assertEqual(v4["multipath_prefixes"], "1")
        # bagd's own network: AS path just bagd, next hop bagd, to both peers.
        own_net = wait_until(lambda: frr_route("10.100.0.0/24"), 20, "10.100.0.0/24 at FRR")
        self.assertEqual(own_net[0]["path"], f"{LOCAL_AS}")
        self.assertEqual(own_net[0]["nexthops"][0]["ip"], bf4)
        self.assertIsNotNone(gobgp_route("10.100.0.0/24"))
        # Nothing is sent back to where it came from: FRR has only its own path.
        own = frr_route("192.0.2.0/24")
        self.assertEqual(len(own), 1)
        self.assertNotIn(bf4, str(own[0].get("nexthops")))
        self.assertEqual(bagd.neighbor(f4)["prefixes_sent"], "2")  # GoBGP's + bagd's own
        self.assertEqual(bagd.neighbor(g4)["prefixes_sent"], "4")  # FRR's three (10.50 best via FRR) + bagd's own
        # A withdraw at the source withdraws everywhere.
        frr.vtysh("configure terminal", "router bgp 65001", "address-family ipv4 unicast", "no network 192.0.2.0/24")
        wait_until(lambda: gobgp_route("192.0.2.0/24") is None, 20, "192.0.2.0/24 withdrawn at GoBGP")
        self.assertIsNotNone(gobgp_route("192.0.3.0/24"))
        lab.stop(gobgp.proc)
        wait_until(lambda: frr_route("198.51.100.0/24") is None, 20, "198.51.100.0/24 withdrawn at FRR")


if __name__ == "__main__":
    if os.geteuid() != 0:
        print("interop tests need root (network namespaces); skipped")
        sys.exit(77)
    unittest.main(verbosity=2)
