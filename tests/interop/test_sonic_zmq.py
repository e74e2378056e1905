"""SONiC's ZMQ route path end to end (docs/sonic.md, "Two route paths"): as test_sonic_appldb,
FRR (route-map `set extcommunity bandwidth`) and GoBGP (policy `lb:AS:bytes`) advertise one
prefix with 1 and 3 Gbit/s, but the switch has CONFIG_DB SYSTEM_DEFAULTS|swss_zmq enabled:
bagd sends ROUTE_TABLE to the test consumer's real ZMQ socket (`fake_orchagent --zmq`, which
decodes the format from its description and checks fields and order after every message),
groups still through Redis, and persists the route in APPL_DB's main hash. Asserted: the
consumer holds the route on bagd's group; the group's weights 1:3 in APPL_DB; nothing staged in
ROUTE_TABLE_KEY_SET; bagctl and the metrics say the path is ZMQ; a lower bandwidth is one
group write and no route message; the consumer restarted empty gets everything again (the
socket reconnects, bagd resends); no violation."""
import json
import os
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from netlab import BUILD, Lab, free_port, frr_conf, gobgp_lb_toml, run, wait_until  # noqa: E402

LOCAL_AS = 65000
PREFIX = "10.61.0.0/24"
FAKE_ORCHAGENT = os.path.join(BUILD, "tests", "fib", "fake_orchagent")
REDIS = "/usr/bin/redis-server"


def frr_source(bagd_addr, mbps):
    return frr_conf(bagd_addr, LOCAL_AS, 65001, "10.255.0.2", hostname="frr-lb",
                    before=f"bgp route-map delay-timer 1\nroute-map LB permit 10\n set extcommunity bandwidth {mbps}\n",
                    networks=[f"{PREFIX} route-map LB"])


def bagd_config(f4, g4, socket, endpoint):
    return f"""
router {{ asn: {LOCAL_AS} router_id: "10.255.0.1" ebgp_requires_policy: false }}
neighbors {{ address: "{f4}" remote_as: 65001 timers {{ connect_retry: 1 }} }}
neighbors {{ address: "{g4}" remote_as: 65002 timers {{ connect_retry: 1 }} }}
multipath {{ maximum_paths_ebgp: 4 as_path_relax: true }}
fib {{
  backend: BACKEND_SONIC_APPLDB
  appldb_socket: "{socket}"
  appldb_zmq_endpoint: "{endpoint}"
}}
"""


class SonicZmq(unittest.TestCase):
    def test_link_bandwidth_over_zmq(self):
        if os.geteuid() != 0:
            raise unittest.SkipTest("needs root (network namespaces)")
        if not os.path.exists(REDIS) or not os.path.exists(FAKE_ORCHAGENT):
            raise unittest.SkipTest("needs redis-server and the fake_orchagent build")
        lab = Lab("sonic-zmq")
        self.addCleanup(lab.close)
        sock = os.path.join(lab.dir, "redis.sock")
        endpoint = f"tcp://127.0.0.1:{free_port()}"
        b, f, g = lab.netns("b"), lab.netns("f"), lab.netns("g")
        bf4, f4, _, _, bf_if, _ = lab.link(b, f)
        bg4, g4, _, _, bg_if, _ = lab.link(b, g)

        lab.spawn("redis", b, [REDIS, "--port", "0", "--unixsocket", sock, "--save", "", "--appendonly", "no",
                               "--dir", lab.dir], "redis.log")
        wait_until(lambda: run(["redis-cli", "-s", sock, "ping"], check=False).stdout.strip() == "PONG", 10,
                   "redis-server up")

        def cli(*args):
            return run(["redis-cli", "-s", sock, *args]).stdout

        def hgetall(key):
            out = run(["redis-cli", "-s", sock, "--raw", "hgetall", key]).stdout
            lines = out[:-1].split("\n") if out else []
            return dict(zip(lines[0::2], lines[1::2]))

        # The switch runs the ZMQ route path: orchagent reads ROUTE_TABLE only from its socket.
        cli("-n", "4", "hset", "SYSTEM_DEFAULTS|swss_zmq", "status", "enabled")

        def start_orchagent():
            return lab.spawn("orchagent", b, [FAKE_ORCHAGENT, "--socket", sock, "--respond", "--zmq", endpoint],
                             "orchagent.log")

        def zmq_route():
            # What the consumer running now holds (its log is appended to across restarts).
            log = lab.log("orchagent.log").split("zmq bound")[-1]
            lines = [l for l in log.splitlines() if l.startswith(f"zmq-route {PREFIX} ")]
            return lines[-1].split()[-1] if lines else None

        orch = start_orchagent()
        wait_until(lambda: "zmq bound" in lab.log("orchagent.log"), 10, "the consumer bound its socket")
        metrics_port = free_port()
        bagd = lab.start_bagd(b, bagd_config(f4, g4, sock, endpoint), extra=("--metrics-listen", str(metrics_port)))
        frr = lab.start_frr(f, frr_source(bf4, 1000), f4, name="frr-src")  # 1 Gbit/s
        gobgp = lab.start_gobgp(g, gobgp_lb_toml(65002, "10.255.0.3", g4, bg4, 375000000, LOCAL_AS))  # 3 Gbit/s
        for addr in (f4, g4):
            bagd.wait_state(addr, "Established")
        gobgp.cli("global", "rib", "add", PREFIX, "origin", "igp", "-a", "ipv4")

        def weights_in_appldb():
            route = hgetall(f"ROUTE_TABLE:{PREFIX}")
            grp = hgetall(f"NEXTHOP_GROUP_TABLE:{route.get('nexthop_group', '-')}")
            if not grp.get("weight"):
                return None
            return dict(zip(grp["nexthop"].split(","), (int(w) for w in grp["weight"].split(","))))

        wait_until(lambda: weights_in_appldb() == {f4: 1, g4: 3}, 30, "APPL_DB weights 1:3")
        route = hgetall(f"ROUTE_TABLE:{PREFIX}")
        self.assertEqual(route["protocol"], "bagd")
        self.assertEqual(route["nexthop"], "")
        grp = hgetall(f"NEXTHOP_GROUP_TABLE:{route['nexthop_group']}")
        self.assertEqual(dict(zip(grp["nexthop"].split(","), grp["ifname"].split(","))), {f4: bf_if, g4: bg_if})
        # The route reached the consumer over ZMQ; nothing went through the Redis protocol.
        wait_until(lambda: zmq_route() == route["nexthop_group"], 10, "the route over ZMQ")
        self.assertEqual(cli("scard", "ROUTE_TABLE_KEY_SET").strip(), "0")
        self.assertEqual(cli("exists", f"_ROUTE_TABLE:{PREFIX}").strip(), "0")

        out = bagd.ctl("show", "nexthop-groups", PREFIX).stdout
        self.assertIn(f"routes over zmq {endpoint} (CONFIG_DB SYSTEM_DEFAULTS|swss_zmq status=enabled)", out)
        groups = json.loads(bagd.ctl("show", "nexthop-groups", PREFIX, "--json").stdout)["groups"]
        self.assertTrue(groups[0]["fib_route_path"].startswith("zmq "))

        def metric(name):
            url = f"http://127.0.0.1:{metrics_port}/metrics"
            text = run(["ip", "netns", "exec", b, "curl", "-s", url]).stdout
            for line in text.splitlines():
                if line.startswith(name + " "):
                    return float(line.split()[-1])
            return 0.0

        wait_until(lambda: metric('bagd_appldb_route_path{path="zmq"}') == 1.0, 10, "route path metric")
        wait_until(lambda: metric("bagd_appldb_zmq_messages_total") >= 1, 10, "messages counted")
        wait_until(lambda: metric("bagd_appldb_zmq_connected") == 1.0, 10, "socket connected")
        messages = metric("bagd_appldb_zmq_messages_total")

        # FRR's link drops to 500 Mbit/s: 1:6, one group write through Redis, no route message.
        frr.vtysh("configure terminal", "route-map LB permit 10", "set extcommunity bandwidth 500")
        wait_until(lambda: weights_in_appldb() == {f4: 1, g4: 6}, 20, "APPL_DB weights 1:6")
        time.sleep(1.5)  # the metrics are exported each second
        self.assertEqual(metric("bagd_appldb_zmq_messages_total"), messages)
        self.assertEqual(zmq_route(), route["nexthop_group"])

        # orchagent restarts: its socket goes away and comes back empty; bagd resends.
        lab.stop(orch)
        orch = start_orchagent()
        wait_until(lambda: metric('bagd_appldb_zmq_events_total{event="resend"}') >= 1, 20, "resend counted")
        wait_until(lambda: zmq_route() == route["nexthop_group"], 10, "the new consumer holds the route")
        self.assertGreaterEqual(metric('bagd_appldb_zmq_events_total{event="disconnect"}'), 1)
        self.assertNotIn("violation:", lab.log("orchagent.log"))
        self.assertIsNone(bagd.proc.poll(), "bagd is still running")


if __name__ == "__main__":
    if os.geteuid() != 0:
        print("skipped: needs root")
        sys.exit(77)
    unittest.main()
