"""Neighbor groups and dynamic neighbors with a real peer: one GoBGP in a namespace opens 33
sessions from 33 addresses of one range (10.77.0.0/24) to bagd, with link bandwidth. bagd knows none of them by address: its group "fabric" accepts the range with
listen_limit 32. The 33rd session is refused; the 32 come up as dynamic neighbors of the
group (`bagctl show neighbors` says so), their paths form one 32-way weighted group; a reload
that changes the group's description applies to every member without a reset, a reload that
lowers listen_limit to 16 removes 16 (Cease / Peer De-configured), and a session that ends
takes its dynamic neighbor with it, as does a connection that never became a session."""
import json
import os
import signal
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from netlab import Lab, gobgp_lb_toml, run, wait_until  # noqa: E402

LOCAL_AS = 65000
PEER_AS = 65002
PREFIX = "10.60.0.0/24"
SESSIONS = 33
LIMIT = 32
RATE = 3125000000  # link bandwidth, bytes/s: 25 Gbit/s


def peer_addr(k):
    return f"10.77.0.{10 + k}"


def bagd_addr(k):
    return f"10.77.1.{10 + k}"


def gobgp_toml():
    # One session per bagd address, each from its own source address in the range.
    return gobgp_lb_toml(PEER_AS, "10.255.0.3", peer_addr(0), None, RATE, LOCAL_AS,
                         sessions=[(bagd_addr(k), peer_addr(k)) for k in range(SESSIONS)])


def bagd_config(description, limit):
    return f"""
router {{ asn: {LOCAL_AS} router_id: "10.255.0.1" ebgp_requires_policy: false }}
neighbor_groups {{
  name: "fabric"
  settings {{ remote_as: {PEER_AS} description: "{description}" timers {{ hold_time: 30 }} }}
  listen_ranges: "10.77.0.0/24"
  listen_limit: {limit}
}}
multipath {{ maximum_paths_ebgp: 64 }}
fib {{ backend: BACKEND_NONE }}
"""


def reload(lab, bagd, config):
    before = bagd.log().count("config reloaded")
    with open(os.path.join(lab.dir, "bagd.textproto"), "w") as out:
        out.write(config)
    bagd.proc.send_signal(signal.SIGHUP)
    wait_until(lambda: bagd.log().count("config reloaded") > before, 10, "reload logged")


class NeighborGroups(unittest.TestCase):
    def test_dynamic_neighbors_of_one_group(self):
        lab = Lab("ngrp")
        self.addCleanup(lab.close)
        b, g = lab.netns("b"), lab.netns("g")
        _, _, _, _, b_if, g_if = lab.link(b, g)
        for k in range(SESSIONS):
            run(["ip", "-n", b, "addr", "add", f"{bagd_addr(k)}/24", "dev", b_if])
            run(["ip", "-n", g, "addr", "add", f"{peer_addr(k)}/24", "dev", g_if])
        run(["ip", "-n", b, "route", "add", "10.77.0.0/24", "dev", b_if])
        run(["ip", "-n", g, "route", "add", "10.77.1.0/24", "dev", g_if])
        run(["ip", "-n", g, "addr", "add", "10.77.0.99/24", "dev", g_if])
        bagd = lab.start_bagd(b, bagd_config("spine", LIMIT))

        # A connection from the range that never becomes a session (a scan, a peer that
        # gives up in the handshake) leaves no dynamic neighbor behind to fill the group.
        run(["ip", "netns", "exec", g, sys.executable, "-c",
             "import socket; s = socket.create_connection(('10.77.1.10', 179), 5, ('10.77.0.99', 0)); s.close()"])
        wait_until(lambda: "10.77.0.99: dynamic neighbor of group fabric" in bagd.log(), 10, "the scan accepted")
        wait_until(lambda: not bagd.neighbors(), 15, "the scan's dynamic neighbor gone")
        self.assertIn("removed: no session", bagd.log())

        gobgp = lab.start_gobgp(g, gobgp_toml())

        def dynamic_established():
            return {a: n for a, n in bagd.neighbors().items() if n.get("state") == "Established"}

        up = wait_until(lambda: len(dynamic_established()) >= LIMIT and dynamic_established(), 40,
                        f"{LIMIT} dynamic neighbors Established")
        self.assertEqual(len(bagd.neighbors()), LIMIT, "listen_limit holds: no 33rd neighbor")
        for addr, n in up.items():
            self.assertTrue(n.get("dynamic"), addr)
            self.assertEqual(n.get("group"), "fabric")
            self.assertEqual(n.get("listen_range"), "10.77.0.0/24")
            self.assertEqual(n.get("description"), "spine")
            self.assertEqual(n.get("remote_as"), PEER_AS)
        self.assertIn("listen_limit 32", bagd.log())
        table = bagd.ctl("show", "neighbors").stdout
        self.assertIn("Group", table.splitlines()[0])
        self.assertIn("* - dynamic neighbor", table)
        some = sorted(up)[0]
        self.assertIn(f"*{some}", table)
        self.assertIn("Dynamic neighbor of group fabric (listen range 10.77.0.0/24)",
                      bagd.ctl("show", "neighbors", some).stdout)

        # One prefix from all 32: one weighted group, the link bandwidth of each peer kept.
        gobgp.cli("global", "rib", "add", PREFIX, "-a", "ipv4")

        def paths():
            r = json.loads(bagd.ctl("show", "routes", PREFIX, "--json").stdout).get("routes", [])
            return r[0]["paths"] if r else []
        got = wait_until(lambda: len(paths()) == LIMIT and paths(), 30, f"{LIMIT} paths for {PREFIX}")
        self.assertTrue(all(p["multipath"] for p in got))
        groups = json.loads(bagd.ctl("show", "nexthop-groups", "--json").stdout)["groups"]
        g32 = [x for x in groups if len(x["members"]) == LIMIT]
        self.assertEqual(len(g32), 1, groups)
        self.assertEqual({round(m["bandwidth_bps"] / 1e9) for m in g32[0]["members"]}, {25})

        # A reload of the group applies to each member in place: no session restarts.
        since = {a: n["state_since_unix_ms"] for a, n in up.items()}
        reload(lab, bagd, bagd_config("spine-v2", LIMIT))
        wait_until(lambda: all(n.get("description") == "spine-v2" for n in bagd.neighbors().values()), 10,
                   "the group's new description on every member")
        now = bagd.neighbors()
        self.assertEqual({a: n["state_since_unix_ms"] for a, n in now.items()}, since, "no session restarted")

        # A lower limit: the members beyond it are removed (Peer De-configured).
        reload(lab, bagd, bagd_config("spine-v2", 16))
        wait_until(lambda: len(bagd.neighbors()) == 16, 10, "16 dynamic neighbors left")
        self.assertIn("Peer De-configured", bagd.log())

        # A session that ends takes its dynamic neighbor with it (the peers reconnect: stop GoBGP).
        lab.stop(gobgp.proc)
        wait_until(lambda: len(bagd.neighbors()) == 0, 20, "every dynamic neighbor gone with its session")
        self.assertIn("removed: its session ended", bagd.log())
        gone = bagd.ctl("show", "routes", PREFIX, "--json", check=False)  # not found: exit 1
        self.assertTrue(gone.returncode != 0 or not json.loads(gone.stdout).get("routes"), gone.stdout)


if __name__ == "__main__":
    if os.geteuid() != 0:
        print("skipped: needs root (network namespaces)")
        sys.exit(77)
    unittest.main()
