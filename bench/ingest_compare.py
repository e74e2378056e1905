#!/usr/bin/env python3
"""Ingest benchmark (issue 4): how fast and how lean bagd takes in routes, next to BIRD 2,
FRR 8.4 bgpd and GoBGP 3.10 on the same machine. Run as root from the repository root after
building bagd/bagctl (build/) and the blaster (build-bench/bench/update_blaster).

For every daemon and workload, one daemon at a time: a namespace lab (daemon namespace +
blaster namespace, one veth per peer, peer i = 10.0.i.2, daemon side 10.0.i.1), the daemon
with a minimal config (MRAI 0, no FIB/kernel, no debug logging, passive sessions), then
bench/update_blaster per peer. The blasters pre-encode their UPDATEs, establish, and wait for
SIGUSR1; all get it together. Measured:

  seconds   first UPDATE byte written (earliest blaster) -> the daemon's own counter shows every
            path (the end of the poll that saw it: an upper bound, resolution = poll interval)
  CPU s     utime+stime of the daemon process (/proc/PID/stat) over the same window; "settled"
            also counts the work done after the counter was full, until the daemon goes idle
  peak RSS  VmHWM at the end
  B/path    (VmHWM at the end - VmRSS just before the first UPDATE, sessions up) / paths

Workloads: W1 1 peer x 1M /24 packed (~1000 per 4096-octet UPDATE); W1b 1 peer x 1M, one prefix
per UPDATE; W2 4 peers with distinct ASNs x the same 250k prefixes (1M paths), 4-way multipath
where the daemon has it, no daemon exporting (bagd `default_export: DEFAULT_ACTION_REJECT`, BIRD `export none`,
FRR a deny route-map out); W2x the same with every daemon advertising its best paths to the other peers.

--kernel: bagd (netlink FIB) and BIRD (kernel protocol, ECMP merged) install into the daemon
namespace's kernel FIB; "kernel full s" is first UPDATE byte -> the IPv4 main table holds every
prefix, "kernel flush s" the blasters' stop -> it holds none of them again (read from
/proc/net/fib_triestat by a watcher in the namespace every 5 ms). FRR and GoBGP are skipped.

The machine may be shared: before each run the script waits (--quiet-wait, default 120 s) for
the CPUs to go idle, and records the CPU-1 time not spent in the daemon during the run.

BMP and MRT cost (issue 44): daemon "bagd+bmp" is bagd with a BMP station attached (a sink in
the daemon's namespace that reads and discards, --bmp-views which tables), "bagd+mrt" with the
MRT updates log on (every received message to a file), "bagd+bmp+mrt" both; compare them with
"bagd" in one interleaved run: --daemons bagd,bagd+bmp,bagd+mrt --interleave. The rows add
the octets the station read (bmp_bytes) and the MRT files written (mrt_bytes).

usage: python3 bench/ingest_compare.py [--daemons bagd,bird,frr,gobgp] [--workloads W1,W1b,W2,W2x]
                                       [--runs 3] [--scale 1.0] [--json OUT] [--no-pin] [--no-lb]
                                       [--bagd-also LABEL=PATH --daemons bagd,bagd:LABEL,...] [--kernel] [--interleave]
"""
import argparse
import hashlib
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "interop"))
from netlab import Lab, run, wait_until  # noqa: E402

DAEMON_AS = 65000
WORKLOADS = {
    "W1": dict(peers=1, prefixes=1_000_000, mode="packed", what="1 peer x 1M /24 packed"),
    "W1b": dict(peers=1, prefixes=1_000_000, mode="1", what="1 peer x 1M /24, one per UPDATE"),
    "W2": dict(peers=4, prefixes=250_000, mode="packed", what="4 peers x same 250k /24 (1M paths)"),
    # W2 with every daemon advertising its best paths to the other peers: the export cost that
    # W2 leaves out.
    "W2x": dict(peers=4, prefixes=250_000, mode="packed", export=True,
                what="W2, every daemon exporting to the other peers"),
    # A BAG router's shape (issue 42): each fabric's prefixes heard from every spine of every
    # plane, many paths per prefix, 8-way multipath, link bandwidth differing per peer.
    # Hold time 9 s (keepalive 3 s, FRR's datacenter profile): the run checks that no
    # keepalive is late by more than 1 s (max_rx_gap_s - keepalive) and no session drops.
    "W3": dict(peers=32, prefixes=31_250, mode="packed", multipath=8, hold=9,
               what="32 peers x same 31,250 /24 (1M paths), 8-way multipath"),
    "W4": dict(peers=128, prefixes=7_813, mode="packed", multipath=8, hold=9,
               what="128 peers x same 7,813 /24 (1M paths), 8-way multipath"),
    "W3x": dict(peers=32, prefixes=31_250, mode="packed", multipath=8, export=True, hold=9,
                what="W3, every daemon exporting to the other peers"),
}
FRR_BGPD = "/usr/lib/frr/bgpd"
# Link bandwidth per peer (Gbit/s), peers 1..4, unless --no-lb: BAG peers advertise their
# capacity, and bagd's weights follow it.
LB_GBPS = [100, 40, 25, 10]

# --policy: the import chain of issue 13's speed goal, evaluated on every route: a 1,000-entry
# prefix set with ranges (bogons and customer aggregates; no workload prefix is in it, so
# every route goes through every statement), an AS-path regex and a community match, then
# accept. None of its conditions tests something that differs per prefix but the prefix set,
# so bagd evaluates it once per prefix (the set makes the chain prefix-dependent).
POLICY = False
def _import_policy():
    entries = []
    for i in range(1000):
        a, b = divmod(i, 250)
        entries.append(f'prefixes {{ prefix: "{100 + a}.{64 + b % 64}.{b}.0/24" le: 32 }}')
    return ("defined_sets {\n"
            f'  prefix_sets {{ name: "filter" {" ".join(entries)} }}\n'
            '  as_path_sets { name: "bad-paths" regexes: "_6666[0-9]_" regexes: "^65535_" }\n'
            '  community_sets { name: "drain" communities: "65000:666" }\n'
            "}\n"
            'policies { name: "import"\n'
            '  statements { name: "filter" conditions { prefix_set { set: "filter" } } actions { disposition: DISPOSITION_REJECT } }\n'
            '  statements { name: "bad-paths" conditions { as_path_set { set: "bad-paths" } } actions { disposition: DISPOSITION_REJECT } }\n'
            '  statements { name: "drain" conditions { community_set { set: "drain" } } '
            'actions { link_bandwidth { op: OP_DRAIN } disposition: DISPOSITION_ACCEPT } }\n'
            '  statements { name: "accept" actions { disposition: DISPOSITION_ACCEPT } }\n'
            "}")
IMPORT_POLICY = _import_policy()


# --- /proc ------------------------------------------------------------------------------
def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    tck = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / tck  # utime, stime (fields 14, 15)


def wait_idle(pid, max_wait=60):
    """Until the process stops burning CPU (< 2 % over 1 s), at most max_wait seconds."""
    prev, deadline = cpu_seconds(pid), time.monotonic() + max_wait
    while time.monotonic() < deadline:
        time.sleep(1.0)
        now = cpu_seconds(pid)
        if now - prev < 0.02:
            return
        prev = now


def cpu_busy(cpu):
    """Busy (non-idle, non-iowait) seconds of one CPU from /proc/stat."""
    with open("/proc/stat") as f:
        for line in f:
            if line.startswith(f"cpu{cpu} "):
                v = [int(x) for x in line.split()[1:]]
                return (sum(v[:8]) - v[3] - v[4]) / os.sysconf("SC_CLK_TCK")
    return 0.0


def wait_quiet(max_wait, threshold=0.15):
    """The machine is shared: wait (at most max_wait s) until every CPU together was busy for
    less than `threshold` s over one second (the idle daemon included). Returns the last figure."""
    deadline = time.monotonic() + max_wait
    while True:
        b0 = sum(cpu_busy(c) for c in range(os.cpu_count()))
        time.sleep(1.0)
        busy = sum(cpu_busy(c) for c in range(os.cpu_count())) - b0
        if busy < threshold or time.monotonic() > deadline:
            return busy


def status_kib(pid, key):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


# --- daemons ----------------------------------------------------------------------------
class Daemon:
    """Started in namespace ns with one passive eBGP neighbor per link."""
    name = "?"
    poll_interval = 0.05

    def __init__(self, lab, ns, links, pin, multipath, export=False):
        self.lab, self.ns, self.links, self.pin, self.multipath = lab, ns, links, pin, multipath
        self.export = export
        self.dir = os.path.join(lab.dir, self.name)
        os.makedirs(self.dir, exist_ok=True)
        os.chmod(self.dir, 0o777)
        self.proc = None

    def prefix(self):
        return ["taskset", "-c", "1"] if self.pin else []

    @property
    def pid(self):
        return self.proc.pid

    def neighbors(self):
        return [(a4, b4, DAEMON_AS + 1 + i) for i, (a4, b4, *_rest) in enumerate(self.links)]

    def counts(self):
        """{peer address: (established?, paths received)}"""
        raise NotImplementedError

    def alive(self):
        return self.proc.poll() is None

    def watch_cmd(self, target):
        """A command run inside the daemon's namespace that polls a cheaper counter than the
        CLI and prints "MONOTONIC TOTAL" lines until TOTAL >= target; None to poll counts()."""
        return None


class Bagd(Daemon):
    name = "bagd"

    def __init__(self, *a, bagd, bagctl, extras=(), **kw):
        super().__init__(*a, **kw)
        self.bagd, self.bagctl = bagd, bagctl
        self.extras = set(extras)  # "bmp": a BMP station attached; "mrt": the MRT updates log on

    def start(self):
        listen = "".join(f' listen {{ address: "{a4}" }}' for a4, _b, _as in self.neighbors())
        # Without --policy: no policy at all (RFC 8212 off, every route accepted and exported
        # as before bagd had policy); with it, a realistic import chain (IMPORT_POLICY).
        conf = [f'router {{ asn: {DAEMON_AS} router_id: "10.255.0.1"{listen} hold_time: 180 '
                f'log_level: LOG_LEVEL_WARNING ebgp_requires_policy: false }}']
        attach = ' import_policies: "import"' if POLICY else ""
        # W2 (no export): nothing to the other peers, as BIRD's `export none` and FRR's deny
        # route-map; W2x: everything (the default without a policy).
        if not self.export:
            attach += " default_export: DEFAULT_ACTION_REJECT"
        if POLICY:
            conf.append(IMPORT_POLICY)
        for _a4, b4, asn in self.neighbors():
            conf.append(f'neighbors {{ address: "{b4}" remote_as: {asn} passive: true{attach} }}')
        if self.multipath:
            conf.append(f"multipath {{ maximum_paths_ebgp: {self.multipath} as_path_relax: true }}")
        conf.append("fib { backend: BACKEND_NETLINK }" if KERNEL else "fib { backend: BACKEND_NONE }")
        if "bmp" in self.extras:
            # The station: reads and discards on 127.0.0.1 in the daemon's namespace (CPU 0,
            # with the blasters), counting octets into a file.
            self.bmp_count = os.path.join(self.dir, "bmp_bytes")
            self.lab.spawn("bmp_sink", self.ns, (["taskset", "-c", "0"] if self.pin else []) + [
                sys.executable, "-u", "-c", BMP_SINK, str(BMP_SINK_PORT), self.bmp_count], "bmp_sink.log")
            views = ", ".join(v.strip() for v in BMP_VIEWS.split(",") if v.strip())
            conf.append(f'bmp {{ station {{ address: "127.0.0.1" port: {BMP_SINK_PORT} views: [{views}] }} }}')
        if "mrt" in self.extras:
            self.mrt_dir = os.path.join(self.dir, "mrt")
            os.makedirs(self.mrt_dir, exist_ok=True)
            conf.append(f'mrt {{ updates_interval: 3600 updates_path: "{self.mrt_dir}/updates.%Y%m%d.%H%M%S" }}')
        path = os.path.join(self.dir, "bagd.textproto")
        with open(path, "w") as f:
            f.write("\n".join(conf) + "\n")
        self.sock = os.path.join(self.dir, "bagd.sock")
        self.metrics = (self.neighbors()[0][0], 9179)
        self.proc = self.lab.spawn("bagd", self.ns, self.prefix() + [
            self.bagd, "--config", path, "--socket", self.sock, "--log-level", "warning",
            "--metrics-listen", "%s:%d" % self.metrics], "bagd.log")
        wait_until(lambda: os.path.exists(self.sock) or not self.alive(), 10, "bagd control socket")
        if not self.alive():
            raise RuntimeError("bagd exited: " + self.lab.log("bagd.log"))

    def extra_stats(self):
        """What the BMP station read and the MRT files hold so far (the updates file is
        written as NAME.tmp until its interval ends)."""
        out = {}
        if "bmp" in self.extras:
            try:
                out["bmp_bytes"] = int(open(self.bmp_count).read().strip() or 0)
            except (OSError, ValueError):
                out["bmp_bytes"] = None
        if "mrt" in self.extras:
            out["mrt_bytes"] = sum(os.path.getsize(os.path.join(self.mrt_dir, f)) for f in os.listdir(self.mrt_dir))
        return out

    def counts(self):
        out = json.loads(run([self.bagctl, "--socket", self.sock, "show", "neighbors", "--json"]).stdout)
        res = {}
        for n in out.get("neighbors", []):
            addr = n.get("address")
            est = n.get("state") in ("Established", "ESTABLISHED", "STATE_ESTABLISHED")
            res[addr] = (est, int(n.get("prefixes_received", n.get("prefixesReceived", 0)) or 0))
        return res

    def watch_cmd(self, target):
        # bagctl costs ~50 ms of process start per call; bagd_prefixes_received follows the
        # RIB within 2 ms, and an HTTP scrape of it takes about a millisecond.
        return [sys.executable, "-u", "-c", PROM_WATCH, self.metrics[0], str(self.metrics[1]), str(target)]


BMP_SINK_PORT = 11790
BMP_VIEWS = "BMP_PRE_POLICY, BMP_POST_POLICY, BMP_LOC_RIB"  # --bmp-views
# A BMP station that reads and discards (one connection at a time), writing the octets read
# so far to a file at most every 0.2 s while data comes, and whenever the stream pauses.
BMP_SINK = r"""
import os, socket, sys, time
port, path = int(sys.argv[1]), sys.argv[2]
srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", port))
srv.listen(4)
total, written, last = 0, -1, 0.0
def save():
    global written, last
    last = time.monotonic()
    if written != total:
        written = total
        with open(path + ".tmp", "w") as f:
            f.write(str(total))
        os.replace(path + ".tmp", path)
while True:
    c, _ = srv.accept()
    c.settimeout(0.2)
    while True:
        try:
            data = c.recv(1 << 20)
        except socket.timeout:
            save()
            continue
        if not data:
            break
        total += len(data)
        if time.monotonic() - last > 0.2:
            save()
    save()
    c.close()
"""

PROM_WATCH = r"""
import re, socket, sys, time
host, port, target = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
pat = re.compile(rb'^bagd_prefixes_received\{([^}]*)\} (\S+)', re.M)
last = None
while True:
    try:
        s = socket.create_connection((host, port), timeout=5)
        s.sendall(b"GET /metrics HTTP/1.0\r\nHost: bench\r\n\r\n")
        data = b""
        while True:
            chunk = s.recv(1 << 16)
            if not chunk:
                break
            data += chunk
        s.close()
        samples = pat.findall(data)
        # Per family, or one family="all" sample per neighbor (older builds): never both.
        alls = [v for labels, v in samples if b'family="all"' in labels]
        total = int(sum(float(v) for v in (alls or [v for _l, v in samples])))
    except OSError:
        total = last or 0
    t = time.monotonic()
    if total != last:
        print("%.6f %d" % (t, total), flush=True)
        last = total
    if total >= target:
        break
    time.sleep(0.01)
"""


class Bird(Daemon):
    name = "bird"
    poll_interval = 0.02  # birdc costs ~10 ms

    def start(self):
        conf = [f'log "{self.dir}/bird.log" {{ error, fatal, bug }};', "router id 10.255.0.1;",
                "protocol device { scan time 60; }"]
        if KERNEL:  # BIRD's kernel protocol, the like-for-like of bagd's netlink FIB (ECMP merged)
            conf.append("protocol kernel { ipv4 { export all; }; merge paths on limit %d; }" % max(self.multipath, 1))
        for i, (a4, b4, asn) in enumerate(self.neighbors()):
            conf.append(f"""protocol bgp p{i + 1} {{
  local {a4} as {DAEMON_AS};
  neighbor {b4} as {asn};
  passive on;
  hold time 180;
  ipv4 {{ import all; export {"all" if self.export else "none"}; }};
}}""")
        path = os.path.join(self.dir, "bird.conf")
        with open(path, "w") as f:
            f.write("\n".join(conf) + "\n")
        self.sock = os.path.join(self.dir, "bird.ctl")
        self.proc = self.lab.spawn("bird", self.ns, self.prefix() + [
            "bird", "-f", "-c", path, "-s", self.sock, "-P", os.path.join(self.dir, "bird.pid")], "bird.out")
        wait_until(lambda: os.path.exists(self.sock) or not self.alive(), 10, "BIRD control socket")
        if not self.alive():
            raise RuntimeError("bird exited: " + self.lab.log("bird.out"))

    def counts(self):
        out = run(["birdc", "-s", self.sock, "show", "protocols", "all"]).stdout
        res, cur = {}, None
        names = {f"p{i + 1}": b4 for i, (_a, b4, _as) in enumerate(self.neighbors())}
        est = {}
        for line in out.splitlines():
            m = re.match(r"^(\S+)\s+BGP\s", line)
            if m:
                cur = names.get(m.group(1))
                est[cur] = False
                res[cur] = (False, 0)
                continue
            if cur is None:
                continue
            if "BGP state:" in line:
                est[cur] = "Established" in line
            m = re.search(r"Routes:\s+(\d+) imported", line)
            if m:
                res[cur] = (est[cur], int(m.group(1)))
            elif cur in res:
                res[cur] = (est[cur], res[cur][1])
        return res


class Frr(Daemon):
    name = "frr"

    def start(self):
        shutil.chown(self.dir, "frr", "frr")
        conf = ["hostname bench-frr", "log file %s/bgpd.log critical" % self.dir, f"router bgp {DAEMON_AS}",
                " bgp router-id 10.255.0.1", " no bgp ebgp-requires-policy", " no bgp default ipv4-unicast",
                " no bgp network import-check"]
        if self.multipath:
            conf.append(" bgp bestpath as-path multipath-relax")
        for _a4, b4, asn in self.neighbors():
            conf += [f" neighbor {b4} remote-as {asn}", f" neighbor {b4} passive",
                     f" neighbor {b4} timers 60 180", f" neighbor {b4} advertisement-interval 0"]
        conf.append(" address-family ipv4 unicast")
        if self.multipath:
            conf.append(f"  maximum-paths {self.multipath}")
        for _a4, b4, _asn in self.neighbors():
            conf.append(f"  neighbor {b4} activate")
            if not self.export:
                conf.append(f"  neighbor {b4} route-map NONE out")
        conf += [" exit-address-family", "route-map NONE deny 10", ""]
        path = os.path.join(self.dir, "bgpd.conf")
        with open(path, "w") as f:
            f.write("\n".join(conf) + "\n")
        shutil.chown(path, "frr", "frr")
        cmd = [FRR_BGPD, "-S", "-Z", "-n", "-f", path, "-i", os.path.join(self.dir, "bgpd.pid"),
               "--vty_socket", self.dir, "-z", os.path.join(self.dir, "zserv.api"), "-P", "0",
               "--log", f"file:{self.dir}/bgpd.log", "--log-level", "critical"]
        for a4, _b, _as in self.neighbors():
            cmd += ["-l", a4]
        self.proc = self.lab.spawn("frr", self.ns, self.prefix() + cmd, "frr.out")
        vty = os.path.join(self.dir, "bgpd.vty")
        wait_until(lambda: os.path.exists(vty) or not self.alive(), 10, "FRR vty")
        if not self.alive():
            raise RuntimeError("bgpd exited: " + self.lab.log("frr.out"))

    def counts(self):
        out = run(["vtysh", "--vty_socket", self.dir, "-d", "bgpd", "-c",
                   "show bgp ipv4 unicast summary json"]).stdout
        j = json.loads(out)
        peers = j.get("peers") or j.get("ipv4Unicast", {}).get("peers", {})
        return {a: (p.get("state") == "Established", int(p.get("pfxRcd", 0))) for a, p in peers.items()}


class Gobgp(Daemon):
    name = "gobgp"
    poll_interval = 1.0  # the neighbor query takes the server's exclusive lock

    def start(self):
        addrs = ", ".join(f'"{a4}"' for a4, _b, _as in self.neighbors())
        conf = [f"""[global.config]
  as = {DAEMON_AS}
  router-id = "10.255.0.1"
  port = 179
  local-address-list = [{addrs}]
[global.apply-policy.config]
  default-import-policy = "accept-route"
  default-export-policy = "{"accept-route" if self.export else "reject-route"}"
"""]
        if self.multipath:
            conf.append("[global.use-multiple-paths.config]\n  enabled = true\n")
        for a4, b4, asn in self.neighbors():
            conf.append(f"""[[neighbors]]
  [neighbors.config]
    neighbor-address = "{b4}"
    peer-as = {asn}
  [neighbors.transport.config]
    passive-mode = true
    local-address = "{a4}"
  [neighbors.timers.config]
    hold-time = 180
    keepalive-interval = 60
    minimum-advertisement-interval = 0
  [neighbors.apply-policy.config]
    default-export-policy = "{"accept-route" if self.export else "reject-route"}"
  [[neighbors.afi-safis]]
    [neighbors.afi-safis.config]
      afi-safi-name = "ipv4-unicast"
""")
        path = os.path.join(self.dir, "gobgpd.toml")
        with open(path, "w") as f:
            f.write("\n".join(conf))
        self.sock = f"unix://{self.dir}/gobgp.sock"
        self.proc = self.lab.spawn("gobgp", self.ns, self.prefix() + [
            "gobgpd", "-f", path, "--api-hosts", self.sock, "--pprof-disable", "-p", "-l", "warn"], "gobgp.log")
        wait_until(lambda: os.path.exists(f"{self.dir}/gobgp.sock") or not self.alive(), 10, "gobgpd socket")
        if not self.alive():
            raise RuntimeError("gobgpd exited: " + self.lab.log("gobgp.log"))

    def counts(self):
        out = json.loads(run(["gobgp", "--target", self.sock, "neighbor", "-j"]).stdout or "[]")
        res = {}
        for n in out:
            addr = n.get("conf", {}).get("neighbor_address") or n.get("state", {}).get("neighbor_address")
            st = n.get("state", {})
            est = st.get("session_state") in (6, "established", "ESTABLISHED")
            recv = 0
            for af in n.get("afi_safis", []) or []:
                t = af.get("state", {})
                recv += int(t.get("accepted", 0) or 0)
            if not n.get("afi_safis"):
                recv = int(st.get("adj_table", {}).get("accepted", 0) or 0)
            res[addr] = (est, recv)
        return res


DAEMONS = {"bagd": Bagd, "bird": Bird, "frr": Frr, "gobgp": Gobgp}
# --kernel: bagd and BIRD install their routes into the daemon namespace's kernel FIB (bagd's
# netlink backend, BIRD's kernel protocol); the run also measures until the kernel holds every
# prefix and, after the session loss, until it holds none of them.
KERNEL = False
SPINE_LOST = False
KERNEL_DAEMONS = ("bagd", "bird")

# --spine-lost (with --kernel): after the full table is in the kernel, the first peer (the
# lowest router id: in every prefix's multipath set) goes away, as a spine lost would. Run in
# the daemon's namespace, SPINE_WATCH prints the time at which no kernel route or next-hop
# group reaches the lost peer's address any more: from `ip nexthop` (bagd's groups) every 2 ms
# while a group has it, then `ip route` (BIRD's multipath routes, and a check of bagd's).
SPINE_WATCH = r"""
import json, subprocess, sys, time
gw = sys.argv[1]
def groups_with_gw():
    nh = json.loads(subprocess.run(["ip", "-j", "nexthop", "show"], capture_output=True, text=True).stdout or "[]")
    ids = {n["id"] for n in nh if n.get("gateway") == gw}
    return sum(1 for n in nh if any(g["id"] in ids for g in n.get("group", [])))
def routes_with_gw():
    out = subprocess.run(["ip", "-4", "route", "show"], capture_output=True, text=True).stdout
    return out.count("via %s " % gw)
print("start %.6f" % time.monotonic(), flush=True)
while groups_with_gw() > 0:
    time.sleep(0.002)
t_groups = time.monotonic()
while routes_with_gw() > 0:
    time.sleep(0.002)
print("done %.6f %.6f" % (t_groups, time.monotonic()), flush=True)
"""

# Run inside the daemon's namespace (/proc/self/net is the reader's namespace): prints
# "MONOTONIC PREFIXES" of the IPv4 main table whenever the count changes, until killed.
KERNEL_WATCH = r"""
import sys, time
last = None
while True:
    n = None
    with open("/proc/self/net/fib_triestat") as f:
        main = False
        for line in f:
            if line.startswith("Main:"):
                main = True
            elif main and line.strip().startswith("Prefixes:"):
                n = int(line.split()[1])
                break
    t = time.monotonic()
    if n != last:
        print("%.6f %d" % (t, n), flush=True)
        last = n
    time.sleep(0.005)
"""


def kernel_watch_lines(lab):
    out = []
    for line in lab.log("kernel.log").splitlines():
        parts = line.split()
        if len(parts) == 2:
            out.append((float(parts[0]), int(parts[1])))
    return out


# --bagd-also LABEL=PATH: another bagd binary measured in the same run as daemon "bagd:LABEL"
# (a before/after comparison under the same load).
BAGD_ALSO = {}


def daemon_class(name):
    name = name.split("+")[0]  # bagd+bmp, bagd+mrt, bagd:LABEL+bmp: bagd with a station / the updates log
    return Bagd if name.startswith("bagd:") else DAEMONS[name]


def bagd_binary(name, args):
    name = name.split("+")[0]
    return BAGD_ALSO[name.split(":", 1)[1]] if name.startswith("bagd:") else args.bagd


def available(name, args):
    base = name.split("+")[0]
    if base == "bagd" and any(x not in ("bmp", "mrt") for x in name.split("+")[1:]):
        return "unknown bagd variant (bagd+bmp, bagd+mrt, bagd+bmp+mrt)"
    name = base
    if name == "bagd" or name.startswith("bagd:"):
        return all(os.access(p, os.X_OK) for p in (bagd_binary(name, args), args.bagctl)) or "bagd/bagctl not built"
    if name == "bird":
        return (shutil.which("bird") and shutil.which("birdc")) is not None or \
            "bird2 not installed (apt-get install -y --no-install-recommends bird2)"
    if name == "frr":
        return (os.access(FRR_BGPD, os.X_OK) and shutil.which("vtysh") is not None) or "frr not installed"
    if name == "gobgp":
        return (shutil.which("gobgpd") and shutil.which("gobgp")) is not None or "gobgpd/gobgp not installed"
    return "unknown daemon"


def versions(args):
    v = {}
    for name, path in [("bagd", args.bagd)] + [("bagd:" + k, p) for k, p in BAGD_ALSO.items()]:
        try:
            v[name] = "sha256 " + hashlib.sha256(open(path, "rb").read()).hexdigest()[:12]
        except OSError:
            pass
    for name, cmd in (("bird", ["bird", "--version"]), ("frr", [FRR_BGPD, "--version"]),
                      ("gobgp", ["gobgpd", "--version"])):
        try:
            r = run(cmd, check=False)
            v[name] = (r.stdout + r.stderr).strip().splitlines()[0]
        except (OSError, IndexError):
            pass
    return v


# --- one measurement --------------------------------------------------------------------
def blaster_events(lab, i):
    ev = {}
    for line in lab.log(f"blaster{i}.log").splitlines():
        try:
            e = json.loads(line)
        except ValueError:
            continue
        ev[e.get("event")] = e
    return ev


def measure(daemon_name, wl_name, args, run_no):
    wl = WORKLOADS[wl_name]
    peers, prefixes = wl["peers"], max(1, int(wl["prefixes"] * args.scale))
    paths = peers * prefixes
    with Lab(f"i{daemon_name[:2]}{wl_name}") as lab:
        dns, bns = lab.netns("d"), lab.netns("b")
        links = [lab.link(dns, bns) for _ in range(peers)]
        # The blasters and the poller run on CPU 0, the daemon on CPU 1.
        kw = dict(bagd=bagd_binary(daemon_name, args), bagctl=args.bagctl,
                  extras=daemon_name.split("+")[1:]) if daemon_name.startswith("bagd") else {}
        multipath = wl.get("multipath", 4) if peers > 1 else 0  # maximum paths; 0: no multipath
        d = daemon_class(daemon_name)(lab, dns, links, args.pin, multipath, export=wl.get("export", False), **kw)
        d.start()
        blasters = []
        for i, (a4, b4, *_r) in enumerate(links):
            cmd = (["taskset", "-c", "0"] if args.pin else []) + [
                args.blaster, "--local", b4, "--peer", a4, "--asn", str(DAEMON_AS + 1 + i),
                "--router-id", f"10.255.1.{i + 1}", "--prefixes", str(prefixes), "--offset", "0",
                "--per-message", wl["mode"], "--next-hop", b4, "--wait-signal"]
            if wl.get("hold"):
                cmd += ["--hold", str(wl["hold"])]
            if args.lb:  # as BAG peers send it: each peer its own capacity
                cmd += ["--link-bandwidth", str(LB_GBPS[i % len(LB_GBPS)])]
            blasters.append(lab.spawn(f"blaster{i}", bns, cmd, f"blaster{i}.log"))

        def all_up():
            for i, b in enumerate(blasters):
                if b.poll() is not None:
                    raise RuntimeError(f"blaster {i} exited: {lab.log(f'blaster{i}.log')}")
            if not d.alive():
                raise RuntimeError(f"{daemon_name} exited")
            if not all("established" in blaster_events(lab, i) for i in range(peers)):
                return False
            c = d.counts()
            return len(c) >= peers and all(est for est, _n in c.values())

        wait_until(all_up, 90, "every session Established", interval=0.2)
        time.sleep(1.0)  # let the daemon settle after session setup
        quiet_busy = wait_quiet(args.quiet_wait)
        rss0 = status_kib(d.pid, "VmRSS")
        cpu0 = cpu_seconds(d.pid)
        busy0, load0 = cpu_busy(1), os.getloadavg()[0]
        kbase = None
        if KERNEL:
            kw_proc = lab.spawn("kernelwatch", dns, [sys.executable, "-u", "-c", KERNEL_WATCH], "kernel.log")
            wait_until(lambda: kernel_watch_lines(lab) or kw_proc.poll() is not None, 10, "the kernel watcher")
            kbase = kernel_watch_lines(lab)[-1][1]
        watch = d.watch_cmd(paths)
        if watch:
            watcher = lab.spawn("watch", dns, watch, "watch.log")
            wait_until(lambda: lab.log("watch.log").strip() or watcher.poll() is not None, 10, "the counter watcher")
        for b in blasters:
            b.send_signal(signal.SIGUSR1)
        deadline = time.monotonic() + args.timeout
        last_total, polls = 0, 0
        while True:
            t_poll = time.monotonic()
            if watch:
                lines = lab.log("watch.log").split()
                t_done, total = (float(lines[-2]), int(lines[-1])) if len(lines) >= 2 else (t_poll, 0)
                polls = len(lines) // 2
            else:
                try:
                    c = d.counts()
                    total = sum(n for _e, n in c.values())
                except (subprocess.CalledProcessError, ValueError, KeyError):
                    total = last_total
                polls += 1
                t_done = time.monotonic()
            if total >= paths:
                break
            last_total = total
            if not d.alive():
                raise RuntimeError(f"{daemon_name} exited during ingest")
            if watch and watcher.poll() is not None:
                raise RuntimeError(f"counter watcher exited: {lab.log('watch.log')[-300:]}")
            if t_done > deadline:
                raise TimeoutError(f"{daemon_name} {wl_name}: {last_total}/{paths} paths after {args.timeout} s")
            time.sleep(0.02 if watch else max(0.0, d.poll_interval - (time.monotonic() - t_poll)))
        cpu_done = cpu_seconds(d.pid)
        busy_done = cpu_busy(1)
        ev = [blaster_events(lab, i) for i in range(peers)]
        firsts = [e["first_byte"]["t"] for e in ev if "first_byte" in e]
        lasts = [e["last_byte"]["t"] for e in ev if "last_byte" in e]
        t0 = min(firsts)
        wait_idle(d.pid)  # settle: the work done after the counter was full
        cpu_settled = cpu_seconds(d.pid)
        kernel_s = None
        if KERNEL:  # every prefix in the kernel (the RIB can be ahead of it)
            def kernel_full():
                lines = kernel_watch_lines(lab)
                return next((t for t, n in lines if n >= kbase + prefixes), None)
            try:
                wait_until(lambda: kernel_full() is not None, args.timeout, "every prefix in the kernel", interval=0.05)
                kernel_s = kernel_full() - t0
            except (TimeoutError, AssertionError, RuntimeError):
                kernel_s = None
        dropped = sum(1 for b in blasters if b.poll() is not None)  # a blaster exits when its session goes
        spine = spine_lost(lab, d, dns, links, blasters, prefixes, args) if KERNEL and SPINE_LOST and peers > 1 else {}
        hwm = status_kib(d.pid, "VmHWM")
        rss_end = status_kib(d.pid, "VmRSS")
        final_counts = d.counts()
        # Stop the blasters (Cease) and read what the daemon advertised to them. Then the
        # session-loss flush: until the daemon's counters show no path left (an upper bound:
        # it includes stopping the blasters one after the other and the poll), and the peak
        # RSS it reached on the way (a full table's withdrawal at once).
        t_stop = time.monotonic()
        for b in blasters:
            lab.stop(b, signal.SIGTERM, timeout=5)
        exits = [blaster_events(lab, i).get("exit", {}) for i in range(peers)]
        exported = sum(e.get("prefixes_received", 0) for e in exits)
        # The longest silence any peer saw from the daemon, against the keepalive interval.
        gaps = [e["max_rx_gap_s"] - e["keepalive_s"] for e in exits if "max_rx_gap_s" in e and e.get("keepalive_s")]
        keepalive_late_s = max(0.0, max(gaps)) if gaps else None
        flush_s = None
        flush_deadline = time.monotonic() + 120
        while time.monotonic() < flush_deadline and d.alive():
            try:
                left = sum(n for _e, n in d.counts().values())
            except (subprocess.CalledProcessError, ValueError, KeyError):
                left = -1
            if left == 0:
                flush_s = time.monotonic() - t_stop
                break
            time.sleep(0.05)
        hwm_flush = status_kib(d.pid, "VmHWM") if d.alive() else None
        kernel_flush_s = None
        if KERNEL:  # every prefix gone from the kernel again
            def kernel_empty():
                return next((t for t, n in kernel_watch_lines(lab) if t >= t_stop and n <= kbase), None)
            try:
                wait_until(lambda: kernel_empty() is not None, 120, "the kernel flushed", interval=0.05)
                kernel_flush_s = kernel_empty() - t_stop
            except (TimeoutError, AssertionError, RuntimeError):
                kernel_flush_s = None
        seconds = t_done - t0
        res = dict(daemon=daemon_name, workload=wl_name, run=run_no, paths=paths, seconds=seconds,
                   paths_per_s=paths / seconds, cpu_s=cpu_done - cpu0, cpu_settled_s=cpu_settled - cpu0,
                   rss_start_kib=rss0, hwm_kib=hwm, rss_end_kib=rss_end,
                   bytes_per_path=(hwm - rss0) * 1024 / paths,
                   write_s=max(lasts) - t0 if lasts else None, polls=polls, final_counts=final_counts,
                   prefixes_advertised_to_blasters=exported, flush_s=flush_s, hwm_after_flush_kib=hwm_flush,
                   kernel_s=kernel_s, kernel_flush_s=kernel_flush_s,
                   keepalive_late_s=keepalive_late_s, sessions_dropped=dropped, **spine,
                   load1=load0, busy_before_s_per_s=quiet_busy,
                   # CPU 1 busy time not spent in the daemon (other tenants, softirq): contention.
                   cpu1_other_s=(busy_done - busy0) - (cpu_done - cpu0) if args.pin else None)
        if hasattr(d, "extra_stats"):
            res.update(d.extra_stats())
        if args.verbose:
            print(json.dumps(res), flush=True)
        return res


def fib_operations(dns, d):
    """bagd's bagd_fib_operations_total by kind, scraped inside the daemon's namespace."""
    if not isinstance(d, Bagd):
        return {}
    code = ("import socket,sys; s=socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=5); "
            "s.sendall(b'GET /metrics HTTP/1.0\\r\\n\\r\\n'); b=b''\n"
            "while True:\n c=s.recv(65536)\n if not c: break\n b+=c\nprint(b.decode())")
    out = run(["ip", "netns", "exec", dns, sys.executable, "-c", code, d.metrics[0], str(d.metrics[1])]).stdout
    ops = {}
    for m in re.finditer(r'^bagd_fib_operations_total\{([^}]*)\} (\S+)', out, re.M):
        ops[m.group(1)] = float(m.group(2))
    return ops


def spine_lost(lab, d, dns, links, blasters, prefixes, args):
    """The first peer goes (SIGTERM: Cease); kernel operations and time until no route or
    group reaches it."""
    ops0 = fib_operations(dns, d)
    gw = links[0][1]
    watch = lab.spawn("spinewatch", dns, [sys.executable, "-u", "-c", SPINE_WATCH, gw], "spine.log")
    wait_until(lambda: "start" in lab.log("spine.log") or watch.poll() is not None, 10, "the spine watcher")
    t_cut = time.monotonic()
    lab.stop(blasters[0], signal.SIGTERM, timeout=5)
    wait_until(lambda: "done" in lab.log("spine.log") or watch.poll() is not None, args.timeout, "the lost spine gone from the kernel", interval=0.02)
    parts = [l.split() for l in lab.log("spine.log").splitlines() if l.startswith("done")]
    res = {}
    if parts:
        res["spine_groups_s"] = float(parts[0][1]) - t_cut
        res["spine_kernel_s"] = float(parts[0][2]) - t_cut
    wait_idle(d.pid)
    ops1 = fib_operations(dns, d)
    res["spine_fib_ops"] = {k: ops1.get(k, 0) - ops0.get(k, 0) for k in ops1 if ops1.get(k, 0) != ops0.get(k, 0)}
    print(f"  spine lost ({prefixes} prefixes): no next-hop group has it after {res.get('spine_groups_s', -1) * 1e3:.1f} ms, "
          f"no route dump shows it after {res.get('spine_kernel_s', -1) * 1e3:.1f} ms (upper bounds: they include the "
          f"blaster's stop and the poll, a route dump of the table taking hundreds of ms); FIB operations "
          f"{res['spine_fib_ops']}", flush=True)
    return res


# --- report -----------------------------------------------------------------------------
def median_row(rows):
    keys = ("seconds", "paths_per_s", "cpu_s", "cpu_settled_s", "hwm_kib", "bytes_per_path", "write_s", "flush_s",
            "hwm_after_flush_kib", "kernel_s", "kernel_flush_s")
    m = {k: statistics.median([r[k] for r in rows if r.get(k) is not None]) for k in keys
         if any(r.get(k) is not None for r in rows)}
    m["runs"] = len(rows)
    # Timers: the worst over the runs, not the median.
    late = [r["keepalive_late_s"] for r in rows if r.get("keepalive_late_s") is not None]
    m["keepalive_late_max_s"] = max(late) if late else None
    m["sessions_dropped"] = sum(r.get("sessions_dropped", 0) for r in rows)
    m["seconds_range"] = (min(r["seconds"] for r in rows), max(r["seconds"] for r in rows))
    return m


def table(results, daemons, workloads):
    lines = ["| daemon | workload | seconds (min-max) | paths/s | CPU s (settled) | peak RSS MiB | bytes/path | "
             "flush s | peak after flush MiB | " + ("kernel full s | kernel flush s | " if KERNEL else "")
             + "keepalive late s (max) | sessions dropped | runs |",
             "|---|---|---|---|---|---|---|---|---|" + ("---|---|" if KERNEL else "") + "---|---|---|"]
    for dn in daemons:
        for wn in workloads:
            r = results.get((dn, wn))
            if r is None:
                continue
            if "error" in r:
                lines.append(f"| {dn} | {wn} | failed: {r['error']} | | | | | | | |")
                continue
            lo, hi = r["seconds_range"]
            lines.append(f"| {dn} | {wn} | {r['seconds']:.2f} ({lo:.2f}-{hi:.2f}) | {r['paths_per_s'] / 1e3:,.0f}k | "
                         f"{r['cpu_s']:.2f} ({r['cpu_settled_s']:.2f}) | {r['hwm_kib'] / 1024:.0f} | "
                         f"{r['bytes_per_path']:.0f} | "
                         f"{'%.2f' % r['flush_s'] if r.get('flush_s') is not None else '-'} | "
                         f"{'%.0f' % (r['hwm_after_flush_kib'] / 1024) if r.get('hwm_after_flush_kib') else '-'} | "
                         + ("".join(f"{'%.2f' % r[k] if r.get(k) is not None else '-'} | "
                                    for k in ("kernel_s", "kernel_flush_s")) if KERNEL else "")
                         + (f"{r['keepalive_late_max_s']:.2f} | " if r.get("keepalive_late_max_s") is not None else "- | ")
                         + f"{r['sessions_dropped']} | {r['runs']} |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--daemons", default="bagd,bird,frr,gobgp")
    ap.add_argument("--workloads", default="W1,W1b,W2,W2x")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--scale", type=float, default=1.0, help="fraction of the prefixes (smoke tests)")
    ap.add_argument("--timeout", type=float, default=300, help="seconds per ingest before giving up")
    ap.add_argument("--bagd", default=os.path.join(ROOT, "build", "bgpd", "bagd"))
    ap.add_argument("--bagctl", default=os.path.join(ROOT, "build", "tools", "bagctl"))
    ap.add_argument("--blaster", default=os.path.join(ROOT, "build-bench", "bench", "update_blaster"))
    ap.add_argument("--no-pin", dest="pin", action="store_false", help="do not pin daemon/blasters to CPUs")
    ap.add_argument("--json", help="write every run and the medians here")
    ap.add_argument("--quiet-wait", type=float, default=120,
                    help="before each run, wait up to this long for the (shared) machine to go idle")
    ap.add_argument("--no-lb", dest="lb", action="store_false",
                    help="the blasters send no link bandwidth (by default peer i sends LB_GBPS[i])")
    ap.add_argument("--policy", action="store_true",
                    help="bagd with a realistic import policy (IMPORT_POLICY) instead of none")
    ap.add_argument("--kernel", action="store_true",
                    help="bagd and BIRD install into the kernel FIB (time until the kernel holds every prefix, "
                         "and until the session loss has removed them)")
    ap.add_argument("--spine-lost", action="store_true",
                    help="with --kernel: after the full table, the first peer goes; kernel operations and time "
                         "until no route or group reaches it")
    ap.add_argument("--bagd-also", action="append", default=[], metavar="LABEL=PATH",
                    help="another bagd binary, measured in the same run as daemon bagd:LABEL (add it to --daemons)")
    ap.add_argument("--interleave", action="store_true",
                    help="run r of every daemon before run r + 1 (a shared machine's load drift falls on all alike)")
    ap.add_argument("--bmp-views", default="BMP_PRE_POLICY, BMP_POST_POLICY, BMP_LOC_RIB",
                    help="the tables the BMP station of daemon bagd+bmp gets (config BmpView names, comma-separated)")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()
    globals()["BMP_VIEWS"] = args.bmp_views
    for spec in args.bagd_also:
        label, _eq, path = spec.partition("=")
        if not label or not path:
            sys.exit(f"--bagd-also {spec}: LABEL=PATH")
        BAGD_ALSO[label] = os.path.abspath(path)
    global POLICY, KERNEL, SPINE_LOST
    POLICY = args.policy
    KERNEL = args.kernel
    SPINE_LOST = args.spine_lost
    if os.geteuid() != 0:
        sys.exit("run as root (network namespaces)")
    if not os.access(args.blaster, os.X_OK):
        sys.exit(f"{args.blaster} missing: cmake --build build-bench --target update_blaster")
    daemons = [d for d in args.daemons.split(",") if d]
    workloads = [w for w in args.workloads.split(",") if w]
    for w in workloads:
        if w not in WORKLOADS:
            sys.exit(f"unknown workload {w}")
    if args.pin:
        os.sched_setaffinity(0, {0})  # the poller and its children on CPU 0
    # A private copy of bagd/bagctl, so a rebuild during the benchmark changes nothing.
    private = None
    if any(d.startswith("bagd") for d in daemons) and available("bagd", args) is True:
        import tempfile
        private = tempfile.mkdtemp(prefix="bagd-ingest-bin-")
        for attr in ("bagd", "bagctl"):
            dst = os.path.join(private, attr)
            shutil.copy2(getattr(args, attr), dst)
            setattr(args, attr, dst)
        for label, path in BAGD_ALSO.items():
            dst = os.path.join(private, "bagd-" + label)
            shutil.copy2(path, dst)
            BAGD_ALSO[label] = dst
    def on_term(*_):
        raise KeyboardInterrupt("SIGTERM")
    signal.signal(signal.SIGTERM, on_term)  # so every Lab is closed on the way out
    vers = versions(args)
    print("versions:", json.dumps(vers), flush=True)
    all_runs, results, notes = [], {}, []
    try:
        measured = []
        for dn in daemons:
            ok = available(dn, args)
            if ok is True and KERNEL and dn.split("+")[0].split(":")[0] not in KERNEL_DAEMONS:
                ok = "no kernel FIB in this benchmark (--kernel: bagd and bird only)"
            if ok is not True:
                notes.append(f"{dn}: skipped, {ok}")
                print(notes[-1], flush=True)
                continue
            measured.append(dn)
        # Daemon by daemon, each workload's runs in a row; or (--interleave) run r of every
        # daemon before run r + 1, so a shared machine's drifting load falls on all alike.
        if args.interleave:
            order = [(dn, wn, r) for wn in workloads for r in range(args.runs) for dn in measured]
        else:
            order = [(dn, wn, r) for dn in measured for wn in workloads for r in range(args.runs)]
        rows_of = {(dn, wn): [] for dn in measured for wn in workloads}
        for dn, wn, r in order:
            rows = rows_of[(dn, wn)]
            try:
                row = measure(dn, wn, args, r)
                rows.append(row)
                all_runs.append(row)
                print(f"{dn} {wn} run {r + 1}: {row['seconds']:.3f} s, {row['paths_per_s']:,.0f} paths/s, "
                      f"CPU {row['cpu_s']:.2f} s (settled {row['cpu_settled_s']:.2f}), HWM "
                      f"{row['hwm_kib'] / 1024:.0f} MiB, {row['bytes_per_path']:.0f} B/path; load {row['load1']:.1f}, "
                      f"busy before {row['busy_before_s_per_s']:.2f} CPU, "
                      f"CPU1 other {row['cpu1_other_s'] or 0:.2f} s; advertised to the blasters "
                      f"{row['prefixes_advertised_to_blasters']}; flush {row['flush_s'] or 0:.2f} s, HWM after "
                      f"{(row['hwm_after_flush_kib'] or 0) / 1024:.0f} MiB"
                      + (f"; keepalive late {row['keepalive_late_s']:.2f} s" if row.get("keepalive_late_s") is not None else "")
                      + f", {row['sessions_dropped']} sessions dropped"
                      + (f"; kernel full after {row['kernel_s'] or -1:.3f} s, kernel empty {row['kernel_flush_s'] or -1:.3f} s "
                         "after the stop" if KERNEL else ""), flush=True)
            except (RuntimeError, TimeoutError, AssertionError, subprocess.CalledProcessError) as e:
                msg = str(e).splitlines()[0][:200] if str(e) else type(e).__name__
                notes.append(f"{dn} {wn} run {r + 1}: {msg}")
                print("FAILED:", notes[-1], flush=True)
                all_runs.append(dict(daemon=dn, workload=wn, run=r, error=msg))
        for (dn, wn), rows in rows_of.items():
            if rows:
                results[(dn, wn)] = median_row(rows)
            else:
                errs = [n for n in notes if n.startswith(f"{dn} {wn} ")]
                results[(dn, wn)] = {"error": errs[-1] if errs else "no run"}
    finally:
        if private:
            shutil.rmtree(private, ignore_errors=True)
    print()
    print(table(results, daemons, workloads))
    for wn in workloads:
        o = results.get(("bird", wn))
        for dn in [d for d in daemons if d.startswith("bagd")]:
            b = results.get((dn, wn))
            if b and o and "error" not in b and "error" not in o:
                cpu = f"{o['cpu_s'] / b['cpu_s']:.2f}" if b["cpu_s"] > 0 else "-"
                print(f"{wn}: {dn} paths/s / BIRD paths/s = {b['paths_per_s'] / o['paths_per_s']:.2f}, "
                      f"BIRD CPU s / {dn} CPU s = {cpu}")
    for n in notes:
        print("note:", n)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(versions=vers, runs=all_runs, notes=notes,
                           medians={f"{d} {w}": v for (d, w), v in results.items()}), f, indent=1)


if __name__ == "__main__":
    main()
