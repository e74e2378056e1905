"""Builds a Topology in network namespaces and runs one bagd per router, with the netlink
FIB in every namespace. Everything created is named `fab<pid>-...` and removed by close(),
also on Ctrl-C, SIGTERM or an exception (use Fabric as a context manager).

The kernel this runs on may lack the bonding driver, so a LAG is emulated as one veth pair
that carries the addresses and the BGP session (the LAG's routed interface) and one veth pair
per member lane next to it, which only carry carrier: bagd's capacity sources (members +
member_speed) count the lanes that are up. Taking a lane's far end down takes the carrier
from the near end, as a failed optic does; both ends then see the member down."""
import json
import os
from concurrent.futures import ThreadPoolExecutor
import shutil
import signal
import subprocess
import tempfile
import time

from kernel import KernelMonitor, KernelView

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run(cmd, check=True, input=None):
    return subprocess.run(cmd, check=check, capture_output=True, text=True, input=input)


def wait_until(fn, timeout, what, interval=0.2):
    """Polls fn until it returns something true; the value, or AssertionError after timeout."""
    deadline = time.monotonic() + timeout
    last = None
    while True:
        try:
            last = fn()
            if last:
                return last
        except Exception as e:  # a daemon not ready yet
            last = e
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what} (last: {last!r})")
        time.sleep(interval)


def binaries(build=None):
    build = build or os.environ.get("BAGD_BUILD", os.path.join(ROOT, "build"))
    if not os.path.isabs(build):
        build = os.path.join(ROOT, build)
    return os.path.join(build, "bgpd", "bagd"), os.path.join(build, "tools", "bagctl")


def accepts_local_capacity(bagd):
    """Does this bagd know Neighbor.local_capacity_source (issue 17 part 1)? `bagd --check` on
    a tiny config that uses it."""
    d = tempfile.mkdtemp(prefix="fab-probe-")
    try:
        conf = os.path.join(d, "probe.textproto")
        with open(conf, "w") as f:
            f.write('router { asn: 65000 router_id: "10.0.0.1" }\n'
                    'capacity_sources { name: "l" members: ["x"] member_speed: "1G" }\n'
                    'neighbors { address: "10.0.0.2" remote_as: 65001 local_capacity_source: "l" }\n')
        return run([bagd, "--config", conf, "--check"], check=False).returncode == 0
    finally:
        shutil.rmtree(d, ignore_errors=True)


class Fabric:
    def __init__(self, topo, damping="on", build=None, local_capacity=None, log=print):
        self.topo = topo
        self.damping_mode = damping
        self.bagd, self.bagctl = binaries(build)
        if not os.path.exists(self.bagd):
            raise SystemExit(f"no bagd at {self.bagd}: build first (make build) or set BAGD_BUILD")
        self.local_capacity = accepts_local_capacity(self.bagd) if local_capacity is None else local_capacity
        self.log = log
        self.tag = f"fab{os.getpid()}-"
        self.dir = tempfile.mkdtemp(prefix=f"fabric-{topo.name}-")
        self.ns = {name: f"{self.tag}{name}" for name in topo.routers}
        self.created = []
        self.procs = {}
        self.views = {}
        self.monitor = None
        self.lane_state = {}  # (spine, bag, member, lane) -> up
        self.killed = set()
        self._old_handlers = {}

    # -- life cycle ----------------------------------------------------------------------
    def __enter__(self):
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            self._old_handlers[sig] = signal.signal(sig, self._on_signal)
        return self

    def __exit__(self, *exc):
        self.close()
        for sig, h in self._old_handlers.items():
            signal.signal(sig, h)

    def _on_signal(self, signum, _frame):
        raise KeyboardInterrupt(f"signal {signum}")

    def up(self, timeout=60):
        t0 = time.monotonic()
        topo = self.topo
        for name in topo.routers:
            run(["ip", "netns", "add", self.ns[name]])
            self.created.append(self.ns[name])
        root = []
        per_ns = {name: ["link set lo up"] for name in topo.routers}
        for ln in topo.links:
            s_ns, a_ns = self.ns[ln.spine], self.ns[ln.bag]
            # the LAG's routed interface, named after the router at its other end
            root.append(f"link add {ln.bag} netns {s_ns} type veth peer name {ln.spine} netns {a_ns}")
            per_ns[ln.spine] += [f"addr add {ln.spine_addr}/30 dev {ln.bag}", f"link set {ln.bag} up"]
            per_ns[ln.bag] += [f"addr add {ln.bag_addr}/30 dev {ln.spine}", f"link set {ln.spine} up"]
            for mi, m in enumerate(ln.members, 1):
                for x, (s_if, a_if) in enumerate(m.lanes):
                    root.append(f"link add {s_if} netns {s_ns} type veth peer name {a_if} netns {a_ns}")
                    per_ns[ln.spine].append(f"link set {s_if} up")
                    per_ns[ln.bag].append(f"link set {a_if} up")
                    self.lane_state[(ln.spine, ln.bag, mi, x)] = True
        run(["ip", "-batch", "-"], input="\n".join(root) + "\n")
        for name, cmds in per_ns.items():
            run(["ip", "-n", self.ns[name], "-batch", "-"], input="\n".join(cmds) + "\n")
        damping = topo.damping if self.damping_mode == "on" else topo.damping_off
        self.damping = damping
        for name in topo.routers:
            self.start_bagd(name, damping)
        wait_until(lambda: all(os.path.exists(self.sock(n)) or self.procs[n].poll() is not None for n in topo.routers),
                   20, "every bagd's control socket")
        for n, p in self.procs.items():
            if p.poll() is not None:
                raise AssertionError(f"bagd {n} exited: {self.read_log(n)[-2000:]}")
        for name in topo.routers:
            self.views[name] = KernelView(self.ns[name])
        self.monitor = KernelMonitor(self.ns)
        self.wait_sessions(timeout - (time.monotonic() - t0))
        self.wait_routes(timeout - (time.monotonic() - t0))
        return time.monotonic() - t0

    def start_bagd(self, name, damping):
        conf = os.path.join(self.dir, f"{name}.textproto")
        with open(conf, "w") as f:
            f.write(self.topo.config(name, damping, self.local_capacity))
        out = open(os.path.join(self.dir, f"{name}.log"), "a")
        self.procs[name] = subprocess.Popen(
            ["ip", "netns", "exec", self.ns[name], self.bagd, "--config", conf, "--socket", self.sock(name)],
            stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        out.close()

    def close(self):
        if self.monitor:
            self.monitor.close()
            self.monitor = None
        for v in self.views.values():
            v.close()
        self.views = {}
        for p in self.procs.values():
            if p.poll() is None:
                p.terminate()
        for p in self.procs.values():
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        for ns in self.created:
            for pid in run(["ip", "netns", "pids", ns], check=False).stdout.split():
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except (ProcessLookupError, ValueError):
                    pass
            run(["ip", "netns", "del", ns], check=False)
        self.created = []
        if os.environ.get("FABRIC_KEEP_LOGS"):
            self.log(f"fabric logs kept in {self.dir}")
        else:
            shutil.rmtree(self.dir, ignore_errors=True)

    def leftovers(self):
        """Namespaces of this run still present (should be none after close())."""
        return [ns for ns in run(["ip", "netns", "list"]).stdout.split() if ns.startswith(self.tag)]

    # -- bagd ------------------------------------------------------------------------------
    def sock(self, name):
        return os.path.join(self.dir, f"{name}.sock")

    def read_log(self, name):
        with open(os.path.join(self.dir, f"{name}.log")) as f:
            return f.read()

    def ctl_json(self, name, *args):
        out = run([self.bagctl, "--socket", self.sock(name), *args, "--json"]).stdout
        return json.loads(out)

    def neighbors(self, name):
        return self.ctl_json(name, "show", "neighbors").get("neighbors", [])

    def groups(self, name):
        return self.ctl_json(name, "show", "nexthop-groups")

    def each(self, fn):
        """fn(router) for every alive router, in parallel (each is a bagctl call or two):
        {router: result}."""
        names = self.alive()
        with ThreadPoolExecutor(8) as pool:
            return dict(zip(names, pool.map(fn, names)))

    def alive(self):
        return [n for n in self.topo.routers if n not in self.killed]

    def wait_sessions(self, timeout):
        def established():
            for n in self.alive():
                for nb in self.neighbors(n):
                    if nb["description"] not in self.killed and nb["state"] != "Established":
                        return False
            return True
        wait_until(established, max(timeout, 5), "every session Established", interval=0.5)

    def wait_routes(self, timeout):
        """Every alive router has a bagd route for every prefix of every other building."""
        def complete():
            for n in self.alive():
                r = self.topo.routers[n]
                want = {p for b in range(1, self.topo.buildings + 1) if b != r.building
                        for p in self.topo.building_prefixes(b)}
                if not want <= set(self.views[n].routes()):
                    return False
            return True
        wait_until(complete, max(timeout, 5), "every building's prefixes in every kernel", interval=0.5)

    def rss_mib(self):
        """Resident memory of every bagd, summed (MiB)."""
        total = 0
        for n in self.alive():
            try:
                with open(f"/proc/{self.procs[n].pid}/status") as f:
                    total += next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
            except (OSError, StopIteration):
                pass
        return total / 1024

    def kill(self, name):
        """A router is lost (power): bagd dies (SIGKILL, its sockets close, so its neighbors
        see the sessions end), then every interface of its LAGs goes down, so the routers at
        the other ends lose those members' carrier too."""
        p = self.procs[name]
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
        self.killed.add(name)
        cmds = []
        for ln in self.topo.routers[name].links:
            side = "spine" if ln.spine == name else "bag"
            peer = ln.bag if side == "spine" else ln.spine
            cmds += [f"link set {x} down" for x in ln.lanes(side) + [peer]]
        run(["ip", "-n", self.ns[name], "-batch", "-"], input="\n".join(cmds) + "\n")

    def restart(self, name, timeout=60):
        """bagd of `name` restarts: SIGKILL (its sessions close: graceful restart is off, so
        its neighbors drop its paths), then started again with the same config; its links stay
        up and its kernel keeps its routes (docs/fib.md). Returns when it has every session
        Established again and every router every session and every prefix."""
        p = self.procs[name]
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
        t0 = time.monotonic()
        if os.path.exists(self.sock(name)):
            os.unlink(self.sock(name))
        self.start_bagd(name, self.damping)
        wait_until(lambda: os.path.exists(self.sock(name)) or self.procs[name].poll() is not None, 20,
                   f"{name}'s control socket")
        if self.procs[name].poll() is not None:
            raise AssertionError(f"bagd {name} exited: {self.read_log(name)[-2000:]}")
        wait_until(lambda: all(nb["state"] == "Established" for nb in self.neighbors(name)) and self.neighbors(name),
                   timeout, f"{name}'s sessions Established", interval=0.1)
        self.wait_sessions(timeout - (time.monotonic() - t0))
        self.wait_routes(timeout - (time.monotonic() - t0))
        return time.monotonic() - t0

    # -- links -------------------------------------------------------------------------------
    def set_lane(self, spine, bag, member, lane, up):
        """Carrier of one lane of one member of the LAG spine-bag: its BAG-side end admin
        down/up, so the spine-side end loses/gets carrier (and the BAG side is down too)."""
        ln = self.topo.link(spine, bag)
        a_if = ln.members[member - 1].lanes[lane][1]
        run(["ip", "-n", self.ns[bag], "link", "set", a_if, "up" if up else "down"])
        self.lane_state[(spine, bag, member, lane)] = up

    def set_member(self, spine, bag, member, up):
        ln = self.topo.link(spine, bag)
        for x in range(len(ln.members[member - 1].lanes)):
            self.set_lane(spine, bag, member, x, up)

    def link_capacity(self, spine, bag):
        """The real capacity of a LAG now: the lanes up times the lane speed; 0 when either
        router is lost."""
        if spine in self.killed or bag in self.killed:
            return 0.0
        ln = self.topo.link(spine, bag)
        up = sum(1 for mi, m in enumerate(ln.members, 1) for x in range(len(m.lanes))
                 if self.lane_state[(spine, bag, mi, x)])
        return up * self.topo.lane_speed

    # -- state -------------------------------------------------------------------------------
    def kernel_weights(self):
        return {n: self.views[n].weights() for n in self.alive()}

    def counters(self):
        """Per router: UPDATEs sent and received (every session), and bagd's own counts of
        applied/held/suppressed bandwidth changes and FIB group/route operations."""
        def one(n):
            nbs = self.neighbors(n)
            per = {nb["description"]: (int(nb["messages_out"]["update"]), int(nb["messages_in"]["update"])) for nb in nbs}
            c = self.groups(n).get("counters", {})
            return {"sent": sum(v[0] for v in per.values()), "received": sum(v[1] for v in per.values()),
                    "per_neighbor": per, **{k: int(c.get(k, 0)) for k in ("applied", "held", "suppressed",
                                                                            "group_updates", "route_updates")}}
        return self.each(one)

    def uplink_capacity(self, spine):
        """What a spine's `uplinks` capacity source should count now: every lane up."""
        return sum(self.link_capacity(spine, ln.bag) for ln in self.topo.routers[spine].links)

    def pending(self, min_change=0.0):
        """What is not settled yet, as reasons: a member waiting for a hold-down, a spine
        whose advertised bandwidth (as its BAG routers see it) is not its live capacity (its
        capacity stage holds a recovery: bagctl does not show that one), or a local capacity
        that is not the link's (issue 17 part 1). Differences within `min_change` (a
        fraction; damping never applies those) count as settled."""
        owner = self.topo.address_owner()
        busy = []

        def off(seen, real):
            return abs(seen - real) > max(min_change, 1e-4) * max(seen, real, 1.0)  # LB is a float32
        for n, gs in self.each(self.groups).items():
            for g in gs.get("groups", []):
                for m in g.get("members", []):
                    peer = owner.get(m.get("next_hop"))
                    if m.get("damping_state", "stable") != "stable":
                        busy.append(f"{n}: {peer} {m['damping_state']}")
                    elif peer and self.topo.routers[peer].role == "spine" and off(float(m.get("bandwidth_bps", 0)),
                                                                                 self.uplink_capacity(peer)):
                        busy.append(f"{n}: {peer} advertises {m.get('bandwidth_bps')}, has {self.uplink_capacity(peer)}")
                    elif m.get("local_capacity_source") and peer:
                        link = (n, peer) if self.topo.routers[n].role == "spine" else (peer, n)
                        if off(float(m.get("local_capacity_bps", 0)), self.link_capacity(*link)):
                            busy.append(f"{n}: local capacity toward {peer} {m.get('local_capacity_bps')}")
        return busy
