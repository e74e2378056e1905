"""The SONiC APPL_DB backend end to end: FRR (route-map `set extcommunity bandwidth`) and GoBGP
(policy `lb:AS:bytes`) advertise one prefix with 1 and 3 Gbit/s; bagd writes the weighted group
and the route into a real redis-server (its own unix socket in the lab dir) through the
ProducerStateTable protocol, and the test's fake orchagent (tests/fib/sonic/) consumes it and
confirms the route on the response channel. Asserted on APPL_DB's main hashes (what orchagent
took): nexthop/ifname/weight 1:3, the route naming bagd's group; `bagctl show nexthop-groups`
shows the group's APPL_DB key and "confirmed". A lower bandwidth is one group write (no route
write, bagd_appldb_writes_total); redis-server killed and restarted empty: bagd reconnects and
writes everything again."""
import json
import os
import shutil
import sys
import time
import unittest
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from netlab import BUILD, Lab, free_port, frr_conf, gobgp_lb_toml, run, wait_until  # noqa: E402

LOCAL_AS = 65000
PREFIX = "10.60.0.0/24"
FAKE_ORCHAGENT = os.path.join(BUILD, "tests", "fib", "fake_orchagent")
REDIS = "/usr/bin/redis-server"


def frr_source(bagd_addr, mbps):
    return frr_conf(bagd_addr, LOCAL_AS, 65001, "10.255.0.2", hostname="frr-lb",
                    before=f"bgp route-map delay-timer 1\nroute-map LB permit 10\n set extcommunity bandwidth {mbps}\n",
                    networks=[f"{PREFIX} route-map LB"])


def bagd_config(f4, g4, socket):
    return f"""
router {{ asn: {LOCAL_AS} router_id: "10.255.0.1" ebgp_requires_policy: false }}
neighbors {{ address: "{f4}" remote_as: 65001 timers {{ connect_retry: 1 }} }}
neighbors {{ address: "{g4}" remote_as: 65002 timers {{ connect_retry: 1 }} }}
multipath {{ maximum_paths_ebgp: 4 as_path_relax: true }}
fib {{
  backend: BACKEND_SONIC_APPLDB
  appldb_socket: "{socket}"
  confirm: CONFIRM_RESPONSE_CHANNEL
  confirm_timeout: 2
}}
"""


class SonicAppldb(unittest.TestCase):
    def test_link_bandwidth_to_appldb(self):
        if os.geteuid() != 0:
            raise unittest.SkipTest("needs root (network namespaces)")
        if not os.path.exists(REDIS) or not os.path.exists(FAKE_ORCHAGENT):
            raise unittest.SkipTest("needs redis-server and the fake_orchagent build")
        lab = Lab("sonic")
        self.addCleanup(lab.close)
        sock = os.path.join(lab.dir, "redis.sock")

        def start_redis():
            p = lab.spawn("redis", lab.namespaces[0], [
                REDIS, "--port", "0", "--unixsocket", sock, "--save", "", "--appendonly", "no", "--dir", lab.dir],
                "redis.log")
            wait_until(lambda: run(["redis-cli", "-s", sock, "ping"], check=False).stdout.strip() == "PONG", 10,
                       "redis-server up")
            return p

        def start_orchagent():
            return lab.spawn("orchagent", lab.namespaces[0], [FAKE_ORCHAGENT, "--socket", sock, "--respond"],
                             "orchagent.log")

        def cli(*args):
            return run(["redis-cli", "-s", sock, *args]).stdout

        def hgetall(key):
            # --raw: one line per field and per value ("" values are empty lines).
            out = run(["redis-cli", "-s", sock, "--raw", "hgetall", key]).stdout
            lines = out[:-1].split("\n") if out else []
            return dict(zip(lines[0::2], lines[1::2]))

        b, f, g = lab.netns("b"), lab.netns("f"), lab.netns("g")
        bf4, f4, _, _, bf_if, _ = lab.link(b, f)
        bg4, g4, _, _, bg_if, _ = lab.link(b, g)
        redis = start_redis()
        orch = start_orchagent()
        metrics_port = free_port()
        bagd = lab.start_bagd(b, bagd_config(f4, g4, sock), extra=("--metrics-listen", str(metrics_port)))
        frr = lab.start_frr(f, frr_source(bf4, 1000), f4, name="frr-src")  # 1 Gbit/s
        gobgp = lab.start_gobgp(g, gobgp_lb_toml(65002, "10.255.0.3", g4, bg4, 375000000, LOCAL_AS))  # 3 Gbit/s
        for addr in (f4, g4):
            bagd.wait_state(addr, "Established")
        gobgp.cli("global", "rib", "add", PREFIX, "origin", "igp", "-a", "ipv4")

        def group():
            out = bagd.ctl("show", "nexthop-groups", PREFIX, "--json", check=False)
            if out.returncode != 0:
                return None
            groups = json.loads(out.stdout).get("groups", [])
            return groups[0] if groups else None

        def appldb_group():
            route = hgetall(f"ROUTE_TABLE:{PREFIX}")
            if not route.get("nexthop_group"):
                return None
            return route, hgetall(f"NEXTHOP_GROUP_TABLE:{route['nexthop_group']}")

        def weights_in_appldb():
            got = appldb_group()
            if not got or not got[1]:
                return None
            _, grp = got
            return dict(zip(grp["nexthop"].split(","), (int(w) for w in grp["weight"].split(","))))

        wait_until(lambda: weights_in_appldb() == {f4: 1, g4: 3}, 30, "APPL_DB weights 1:3")
        route, grp = appldb_group()
        self.assertEqual(route["protocol"], "bagd")
        self.assertEqual(route["nexthop"], "")
        self.assertEqual(route["ifname"], "")
        self.assertTrue(route["nexthop_group"].startswith("bagd-"))
        ifnames = dict(zip(grp["nexthop"].split(","), grp["ifname"].split(",")))
        self.assertEqual(ifnames, {f4: bf_if, g4: bg_if})
        # Everything taken by the consumer; the group named after bagd's FIB object.
        self.assertEqual(cli("scard", "ROUTE_TABLE_KEY_SET").strip(), "0")
        wait_until(lambda: (group() or {}).get("fib_confirmation") == "confirmed", 15, "group confirmed")
        g0 = group()
        self.assertEqual(g0["fib_key"], f"NEXTHOP_GROUP_TABLE:bagd-{g0['fib_object']}")
        self.assertEqual(route["nexthop_group"], f"bagd-{g0['fib_object']}")
        self.assertIn("appldb NEXTHOP_GROUP_TABLE:bagd-", bagd.ctl("show", "nexthop-groups", PREFIX).stdout)

        def metric(name, labels=""):
            url = f"http://127.0.0.1:{metrics_port}/metrics"
            text = run(["ip", "netns", "exec", b, "curl", "-s", url]).stdout
            for line in text.splitlines():
                if line.startswith(name + labels + " ") or (not labels and line.startswith(name + " ")):
                    return float(line.split()[-1])
            return 0.0

        route_sets = 'bagd_appldb_writes_total{op="set",table="route"}'
        wait_until(lambda: metric("bagd_appldb_confirmed_total") >= 1, 10, "confirmed counted")
        routes_before = metric(route_sets.split("{")[0], "{" + route_sets.split("{")[1])

        # FRR's link drops to 500 Mbit/s: 1:6, one group write, the route untouched.
        frr.vtysh("configure terminal", "route-map LB permit 10", "set extcommunity bandwidth 500")
        wait_until(lambda: weights_in_appldb() == {f4: 1, g4: 6}, 20, "APPL_DB weights 1:6")
        time.sleep(1.5)  # the metrics are exported each second
        self.assertEqual(metric(route_sets.split("{")[0], "{" + route_sets.split("{")[1]), routes_before)
        self.assertEqual(appldb_group()[0]["nexthop_group"], route["nexthop_group"])

        # redis-server dies and comes back empty; so does the consumer: bagd writes it all again.
        lab.stop(orch)
        redis.kill()
        redis.wait()
        time.sleep(1)
        redis = start_redis()
        orch = start_orchagent()
        wait_until(lambda: weights_in_appldb() == {f4: 1, g4: 6}, 30, "APPL_DB rewritten after the restart")
        wait_until(lambda: metric("bagd_appldb_reconnects_total") >= 1, 10, "reconnect counted")
        self.assertEqual(metric("bagd_appldb_connected"), 1.0)
        self.assertNotIn("violation:", lab.log("orchagent.log"))
        self.assertIsNone(bagd.proc.poll(), "bagd is still running")


if __name__ == "__main__":
    if os.geteuid() != 0:
        print("skipped: needs root")
        sys.exit(77)
    unittest.main()
