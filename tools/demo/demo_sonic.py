#!/usr/bin/env python3
"""`make demo-sonic`: bagd as the routing daemon of a SONiC switch, writing APPL_DB.

No SONiC here: a real redis-server (its own unix socket) stands in for SONiC's database and
the test consumer `fake_orchagent` (tests/fib/sonic/) plays orchagent: it takes what bagd
writes by the ProducerStateTable protocol, checks it as RouteOrch/NhgOrch would and confirms
each route on APPL_DB_ROUTE_TABLE_RESPONSE_CHANNEL. Peers: FRR (1 Gbit/s) and GoBGP
(3 Gbit/s) advertise 10.60.0.0/24 with a link-bandwidth community. The demo shows, asserting
each claim:

1. APPL_DB: NEXTHOP_GROUP_TABLE:bagd-<id> with nexthop/ifname/weight 1,3 and the route
   naming it (protocol bagd, inline fields empty); bagctl shows the group's APPL_DB key and
   that orchagent confirmed it;
2. FRR's link drops to 500 Mbit/s: weights 1,6 in one group write, the route not rewritten;
3. redis-server is killed and comes back empty: bagd reconnects and writes it all again;
4. Prometheus' bagd_appldb_* lines, then everything is torn down.

With --zmq (`make demo-sonic ZMQ=1`) the switch runs SONiC's ZMQ route path: CONFIG_DB
SYSTEM_DEFAULTS|swss_zmq is enabled, the consumer binds orchagent's ZMQ socket
(`fake_orchagent --zmq`), and bagd sends ROUTE_TABLE there (groups still through Redis, the
routes also persisted in APPL_DB); bagctl and the metrics say which path is in use, and in
step 3 the consumer comes back empty and bagd sends everything again (docs/sonic.md, "Two
route paths").

Needs root and the binaries in build/. Takes about 20 seconds.
"""
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "interop"))
from netlab import BUILD, Lab, free_port, frr_conf, gobgp_lb_toml, run, wait_until  # noqa: E402

PREFIX = "10.60.0.0/24"
FAKE_ORCHAGENT = os.path.join(BUILD, "tests", "fib", "fake_orchagent")


def say(text):
    print(f"\n=== {text}", flush=True)


def check(cond, claim):
    if not cond:
        print(f"FAILED: {claim}")
        sys.exit(1)
    print(f"  ok: {claim}")


def main():
    zmq = "--zmq" in sys.argv[1:]
    if os.geteuid() != 0:
        print("make demo-sonic needs root (network namespaces)")
        return 1
    with Lab("demo-sonic") as lab:
        sock = os.path.join(lab.dir, "redis.sock")
        b, f, g = lab.netns("b"), lab.netns("f"), lab.netns("g")
        bf4, f4, _, _, bf_if, _ = lab.link(b, f)
        bg4, g4, _, _, bg_if, _ = lab.link(b, g)

        def start_redis():
            p = lab.spawn("redis", b, ["redis-server", "--port", "0", "--unixsocket", sock, "--save", "",
                                       "--appendonly", "no", "--dir", lab.dir], "redis.log")
            wait_until(lambda: run(["redis-cli", "-s", sock, "ping"], check=False).stdout.strip() == "PONG", 10,
                       "redis-server")
            return p

        zmq_endpoint = f"tcp://127.0.0.1:{free_port()}" if zmq else ""

        def start_orchagent():
            extra = ["--zmq", zmq_endpoint] if zmq else []
            return lab.spawn("orchagent", b, [FAKE_ORCHAGENT, "--socket", sock, "--respond", *extra], "orchagent.log")

        def redis_cli(*args):
            return run(["redis-cli", "-s", sock, *args]).stdout

        def hgetall(key):
            out = run(["redis-cli", "-s", sock, "--raw", "hgetall", key]).stdout
            lines = out[:-1].split("\n") if out else []
            return dict(zip(lines[0::2], lines[1::2]))

        def weights():
            route = hgetall(f"ROUTE_TABLE:{PREFIX}")
            grp = hgetall(f"NEXTHOP_GROUP_TABLE:{route.get('nexthop_group', '-')}")
            if not grp.get("weight"):
                return None
            return dict(zip(grp["nexthop"].split(","), (int(w) for w in grp["weight"].split(","))))

        redis = start_redis()
        if zmq:
            # What a switch with `swss_zmq` enabled has in CONFIG_DB: orchagent reads routes only from ZMQ.
            redis_cli("-n", "4", "hset", "SYSTEM_DEFAULTS|swss_zmq", "status", "enabled")
        orch = start_orchagent()
        port = free_port()
        config = f"""
router {{ asn: 65000 router_id: "10.255.0.1" ebgp_requires_policy: false }}
neighbors {{ address: "{f4}" remote_as: 65001 timers {{ connect_retry: 1 }} }}
neighbors {{ address: "{g4}" remote_as: 65002 timers {{ connect_retry: 1 }} }}
multipath {{ maximum_paths_ebgp: 4 as_path_relax: true }}
fib {{ backend: BACKEND_SONIC_APPLDB appldb_socket: "{sock}"
       {f'appldb_zmq_endpoint: "{zmq_endpoint}"' if zmq else "confirm: CONFIRM_RESPONSE_CHANNEL confirm_timeout: 2"} }}
"""
        bagd = lab.start_bagd(b, config, extra=("--metrics-listen", str(port)))
        def frr_source(mbps):
            return frr_conf(bf4, 65000, 65001, "10.255.0.2", hostname="frr-lb",
                            before=f"bgp route-map delay-timer 1\nroute-map LB permit 10\n set extcommunity bandwidth {mbps}\n",
                            networks=[f"{PREFIX} route-map LB"])
        frr = lab.start_frr(f, frr_source(1000), f4, name="frr")
        gobgp = lab.start_gobgp(g, gobgp_lb_toml(65002, "10.255.0.3", g4, bg4, 375000000, 65000))
        for a in (f4, g4):
            bagd.wait_state(a, "Established")
        gobgp.cli("global", "rib", "add", PREFIX, "origin", "igp", "-a", "ipv4")

        say("1. APPL_DB after convergence (FRR 1 Gbit/s, GoBGP 3 Gbit/s)")
        wait_until(lambda: weights() == {f4: 1, g4: 3}, 30, "weights 1:3 in APPL_DB")
        route = hgetall(f"ROUTE_TABLE:{PREFIX}")
        group_key = f"NEXTHOP_GROUP_TABLE:{route['nexthop_group']}"
        print(f"$ redis-cli hgetall ROUTE_TABLE:{PREFIX}\n  {route}")
        print(f"$ redis-cli hgetall {group_key}\n  {hgetall(group_key)}")
        check(route["protocol"] == "bagd" and route["nexthop"] == "" and route["ifname"] == "",
              "the route names bagd's group, protocol bagd, inline fields empty")
        grp = hgetall(group_key)
        check(dict(zip(grp["nexthop"].split(","), grp["ifname"].split(","))) == {f4: bf_if, g4: bg_if},
              "each next hop with the interface the kernel reaches it through")
        # The ZMQ path's test consumer publishes no responses: no confirmation asked there.
        wait_until(lambda: ("not asked" if zmq else "confirmed:") in bagd.ctl("show", "nexthop-groups", PREFIX).stdout,
                   15, "confirmed")
        out = bagd.ctl("show", "nexthop-groups", PREFIX).stdout
        print("$ bagctl show nexthop-groups " + PREFIX + "\n" + out)
        check(f"appldb {group_key}" in out, "bagctl shows the APPL_DB key and orchagent's confirmation")
        if zmq:
            check(f"routes over zmq {zmq_endpoint}" in out and "swss_zmq status=enabled" in out,
                  "bagctl says the routes go over ZMQ, and why")

            def zmq_route():
                # What the consumer running now holds (the log is appended to across restarts).
                log = lab.log("orchagent.log").split("zmq bound")[-1]
                lines = [l for l in log.splitlines() if l.startswith(f"zmq-route {PREFIX} ")]
                return lines[-1].split()[-1] if lines else None
            wait_until(lambda: zmq_route() == route["nexthop_group"], 10, "the route over ZMQ")
            check(redis_cli("scard", "ROUTE_TABLE_KEY_SET").strip() == "0",
                  f"the consumer took {PREFIX} -> {route['nexthop_group']} from its ZMQ socket; nothing staged in "
                  "Redis, the route persisted in APPL_DB's main hash")
        else:
            check("routes over redis" in out, "bagctl says the routes go through Redis")

        def metric(name):
            text = run(["ip", "netns", "exec", b, "curl", "-s", f"http://127.0.0.1:{port}/metrics"]).stdout
            return next((float(l.split()[-1]) for l in text.splitlines() if l.startswith(name + " ")), 0.0)

        route_writes = 'bagd_appldb_writes_total{op="set",table="route"}'
        group_writes = 'bagd_appldb_writes_total{op="set",table="group"}'
        say("2. FRR's link drops to 500 Mbit/s")
        time.sleep(1.2)  # metrics are exported each second
        routes0, groups0 = metric(route_writes), metric(group_writes)
        t0 = time.monotonic()
        frr.vtysh("configure terminal", "route-map LB permit 10", "set extcommunity bandwidth 500")
        wait_until(lambda: weights() == {f4: 1, g4: 6}, 20, "weights 1:6")
        print(f"  weights 1:6 in APPL_DB {time.monotonic() - t0:.1f} s after the change at FRR "
              "(FRR's route-map delay and the UPDATE included)")
        time.sleep(1.2)
        check(hgetall(f"ROUTE_TABLE:{PREFIX}")["nexthop_group"] == route["nexthop_group"]
              and metric(route_writes) == routes0 and metric(group_writes) == groups0 + 1,
              "one group write (bagd_appldb_writes_total), the route untouched")

        say("3. redis-server is killed and restarted empty")
        lab.stop(orch)
        redis.kill()
        redis.wait()
        redis = start_redis()
        orch = start_orchagent()
        t0 = time.monotonic()
        wait_until(lambda: weights() == {f4: 1, g4: 6}, 30, "APPL_DB rewritten")
        check(True, f"bagd reconnected and wrote its state again ({time.monotonic() - t0:.1f} s)")
        if zmq:
            say("3b. orchagent alone restarts (its ZMQ socket goes away and comes back empty)")
            lab.stop(orch)
            orch = start_orchagent()
            wait_until(lambda: metric('bagd_appldb_zmq_events_total{event="resend"}') >= 1, 20,
                       "bagd saw the reconnect and sent everything again")
            wait_until(lambda: zmq_route() == hgetall(f"ROUTE_TABLE:{PREFIX}")["nexthop_group"], 10, "route resent")
            check(True, "the new consumer holds the route again (bagd_appldb_zmq_events_total{event=\"resend\"})")

        say("4. Prometheus")
        time.sleep(1.2)
        text = run(["ip", "netns", "exec", b, "curl", "-s", f"http://127.0.0.1:{port}/metrics"]).stdout
        for line in text.splitlines():
            if line.startswith("bagd_appldb_") and not line.startswith("bagd_appldb_zmq_bytes"):
                print("  " + line)
        check("violation:" not in lab.log("orchagent.log"), "the consumer saw no ordering violation")
    print("\ndemo-sonic: every claim held; namespaces, daemons and redis-server removed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
