"""A small lab of network namespaces for interop tests: bagd in one namespace, real FRR
(bgpd) or GoBGP (gobgpd) in another, joined by a veth pair. Everything a test creates is
removed by Lab.close(), also when the test fails (use it as a context manager).

Addresses (only inside the namespaces): 10.0.<n>.1/24 + fd00:<n>::1/64 on the bagd side,
10.0.<n>.2/24 + fd00:<n>::2/64 on the peer side, for link n."""
import atexit
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("BAGD_BUILD", os.path.join(ROOT, "build"))
BAGD = os.path.join(BUILD, "bgpd", "bagd")
BAGCTL = os.path.join(BUILD, "tools", "bagctl")
FRR_BGPD = "/usr/lib/frr/bgpd"


# Every daemon a test starts, by its Popen: stopped at exit even when the test does not get to
# its own cleanup (ctest's timeout or a Ctrl-C sends SIGTERM/SIGINT to the test, which would
# otherwise leave bagd, FRR or GoBGP running, orphaned).
_STARTED = []
_OPEN_LABS = []  # Labs not closed yet: their namespaces go at exit too


def _stop_started():
    for lab in reversed(list(_OPEN_LABS)):
        lab.close()
    for p in reversed(_STARTED):
        if p.poll() is None:
            try:
                if os.getpgid(p.pid) == p.pid:
                    os.killpg(p.pid, signal.SIGKILL)  # its own session (netns exec): all of it
                else:
                    p.kill()
            except (ProcessLookupError, PermissionError):
                pass
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                pass


def _exit_on_signal(signum, _frame):
    # SystemExit unwinds through unittest's cleanups (Lab.close, tearDownClass), then atexit.
    raise SystemExit(128 + signum)


atexit.register(_stop_started)
signal.signal(signal.SIGTERM, _exit_on_signal)


def started(p):
    """Registers a daemon's Popen for _stop_started; returns it."""
    _STARTED.append(p)
    return p


def run(cmd, check=True, **kw):
    return subprocess.run(cmd, check=check, capture_output=True, text=True, **kw)


def free_port():
    """A TCP port free on 127.0.0.1 right now (for daemons tested on loopback)."""
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_until(fn, timeout, what, interval=0.1):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            last = fn()
            if last:
                return last
        except Exception as e:  # the daemon may not be ready yet
            last = e
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what} (last: {last!r})")


class Lab:
    def __init__(self, name):
        self.tag = f"bg{os.getpid() % 100000}{name[:6]}"
        self.dir = tempfile.mkdtemp(prefix=f"bagd-{name}-")
        os.chmod(self.dir, 0o755)
        self.namespaces = []
        self.procs = []  # (name, Popen)
        _OPEN_LABS.append(self)
        self.links = 0

    # -- topology -----------------------------------------------------------------
    def netns(self, role):
        ns = f"{self.tag}{role}"
        run(["ip", "netns", "add", ns])
        self.namespaces.append(ns)
        run(["ip", "-n", ns, "link", "set", "lo", "up"])
        return ns

    def link(self, ns_a, ns_b):
        """veth between two namespaces; returns (a_v4, b_v4, a_v6, b_v6, a_if, b_if)."""
        self.links += 1
        n = self.links
        a_if, b_if = f"va{n}", f"vb{n}"
        tmp_a, tmp_b = f"{self.tag}a{n}"[:15], f"{self.tag}b{n}"[:15]
        run(["ip", "link", "add", tmp_a, "type", "veth", "peer", "name", tmp_b])
        run(["ip", "link", "set", tmp_a, "netns", ns_a, "name", a_if])
        run(["ip", "link", "set", tmp_b, "netns", ns_b, "name", b_if])
        a4, b4, a6, b6 = f"10.0.{n}.1", f"10.0.{n}.2", f"fd00:{n}::1", f"fd00:{n}::2"
        for ns, ifn, v4, v6 in ((ns_a, a_if, a4, a6), (ns_b, b_if, b4, b6)):
            run(["ip", "-n", ns, "addr", "add", f"{v4}/24", "dev", ifn])
            run(["ip", "-n", ns, "addr", "add", f"{v6}/64", "dev", ifn, "nodad"])
            run(["ip", "-n", ns, "link", "set", ifn, "up"])
        return a4, b4, a6, b6, a_if, b_if

    # -- processes ----------------------------------------------------------------
    def spawn(self, name, ns, cmd, log):
        out = open(os.path.join(self.dir, log), "a")
        p = started(subprocess.Popen(["ip", "netns", "exec", ns] + cmd, stdout=out, stderr=subprocess.STDOUT,
                                     start_new_session=True))
        out.close()  # the child has its own copy
        self.procs.append((name, p))
        return p

    def stop(self, p, sig=signal.SIGTERM, timeout=10):
        if p.poll() is None:
            p.send_signal(sig)
            try:
                p.wait(timeout)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()

    def close(self):
        if self in _OPEN_LABS:
            _OPEN_LABS.remove(self)
        for _, p in reversed(self.procs):
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGCONT)
                except ProcessLookupError:
                    pass
                self.stop(p, signal.SIGTERM, timeout=5)
        for ns in self.namespaces:
            run(["ip", "netns", "pids", ns], check=False)
            pids = run(["ip", "netns", "pids", ns], check=False).stdout.split()
            for pid in pids:
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except (ProcessLookupError, ValueError):
                    pass
            run(["ip", "netns", "del", ns], check=False)
        if os.environ.get("BAGD_KEEP_LAB"):
            print(f"lab files kept in {self.dir}")
        else:
            shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def log(self, name):
        path = os.path.join(self.dir, name)
        if not os.path.exists(path):
            return ""
        with open(path) as f:
            return f.read()

    # -- bagd ---------------------------------------------------------------------
    def start_bagd(self, ns, config, name="bagd", extra=()):
        conf = os.path.join(self.dir, f"{name}.textproto")
        with open(conf, "w") as f:
            f.write(config)
        sock = os.path.join(self.dir, f"{name}.sock")
        p = self.spawn(name, ns, [BAGD, "--config", conf, "--socket", sock, *extra], f"{name}.log")
        wait_until(lambda: os.path.exists(sock) or p.poll() is not None, 10, "bagd control socket")
        if p.poll() is not None:
            raise AssertionError(f"bagd exited: {self.log(name + '.log')}")
        return Bagd(self, ns, sock, p, name)

    # -- FRR ----------------------------------------------------------------------
    def start_frr(self, ns, config, listen_addr, name="frr"):
        d = os.path.join(self.dir, name)
        os.makedirs(d, exist_ok=True)
        shutil.chown(d, "frr", "frr")
        conf = os.path.join(d, "bgpd.conf")
        with open(conf, "w") as f:
            f.write(config)
        cmd = [FRR_BGPD, "-S", "-Z", "-f", conf, "-i", os.path.join(d, "bgpd.pid"), "--vty_socket", d,
               "-z", os.path.join(d, "zserv.api"), "-P", "0", "-l", listen_addr,
               "--log", f"file:{d}/bgpd.log", "--log-level", "informational"]
        p = self.spawn(name, ns, cmd, f"{name}.out")
        frr = Frr(self, ns, d, p)
        wait_until(lambda: os.path.exists(os.path.join(d, "bgpd.vty")) or p.poll() is not None, 10, "FRR vty")
        return frr

    # -- GoBGP --------------------------------------------------------------------
    def start_gobgp(self, ns, toml, name="gobgp"):
        d = os.path.join(self.dir, name)
        os.makedirs(d, exist_ok=True)
        conf = os.path.join(d, "gobgpd.toml")
        with open(conf, "w") as f:
            f.write(toml)
        sock = f"unix://{d}/gobgp.sock"
        p = self.spawn(name, ns, ["gobgpd", "-f", conf, "--api-hosts", sock, "--pprof-disable", "-p"], f"{name}.log")
        wait_until(lambda: os.path.exists(f"{d}/gobgp.sock") or p.poll() is not None, 10, "gobgpd socket")
        return Gobgp(self, ns, sock, p)


class Bagd:
    def __init__(self, lab, ns, sock, proc, name):
        self.lab, self.ns, self.sock, self.proc, self.name = lab, ns, sock, proc, name

    def ctl(self, *args, check=True):
        return run([BAGCTL, "--socket", self.sock, *args], check=check)

    def neighbors(self):
        out = self.ctl("show", "neighbors", "--json").stdout
        return {n["address"]: n for n in json.loads(out).get("neighbors", [])}

    def neighbor(self, addr):
        return self.neighbors().get(addr, {})

    def wait_state(self, addr, state, timeout=30):
        return wait_until(lambda: self.neighbor(addr).get("state") == state and self.neighbor(addr), timeout,
                          f"bagd neighbor {addr} {state}")

    def log(self):
        return self.lab.log(f"{self.name}.log")


class LoopbackBagd(Bagd):
    """bagd in this (the root) namespace for raw peers (rawbgp.RawPeer) on 127.0.0.x: it
    listens on 127.0.0.1 at a free port, installs nothing and opts out of RFC 8212
    (ebgp_requires_policy: false: its users test sessions, not policy). `config` is the config after
    the router line (neighbors, networks, ...). No root needed. stop() when done."""

    def __init__(self, config, name="bagd", asn=65000, router_id="10.255.0.1", extra=()):
        self.dir = tempfile.mkdtemp(prefix=f"bagd-{name}-")
        self.port = free_port()
        conf = os.path.join(self.dir, f"{name}.textproto")
        with open(conf, "w") as f:
            f.write(f'router {{ asn: {asn} router_id: "{router_id}" '
                    f'listen {{ address: "127.0.0.1" port: {self.port} }} ebgp_requires_policy: false }}\n'
                    "fib { backend: BACKEND_NONE }  # the root namespace: install nothing\n" + config)
        self.log_path = os.path.join(self.dir, f"{name}.log")
        sock = os.path.join(self.dir, f"{name}.sock")
        with open(self.log_path, "w") as out:
            proc = started(subprocess.Popen([BAGD, "--config", conf, "--socket", sock, *extra], stdout=out,
                                            stderr=subprocess.STDOUT))
        super().__init__(None, None, sock, proc, name)
        wait_until(lambda: os.path.exists(sock) or proc.poll() is not None, 10, "bagd control socket")
        if proc.poll() is not None:
            raise AssertionError(f"bagd exited: {self.log()}")

    def log(self):
        with open(self.log_path) as f:
            return f.read()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)
        if os.environ.get("BAGD_KEEP_LAB"):
            print(f"bagd files kept in {self.dir}")
        else:
            shutil.rmtree(self.dir, ignore_errors=True)


class Frr:
    def __init__(self, lab, ns, d, proc):
        self.lab, self.ns, self.dir, self.proc = lab, ns, d, proc

    def vtysh(self, *cmds):
        args = ["ip", "netns", "exec", self.ns, "vtysh", "--vty_socket", self.dir, "-d", "bgpd"]
        for c in cmds:
            args += ["-c", c]
        return run(args).stdout

    def json(self, cmd):
        return json.loads(self.vtysh(cmd))

    def neighbor(self, addr):
        return self.json(f"show bgp neighbors {addr} json").get(addr, {})

    def wait_established(self, addr, timeout=30):
        return wait_until(lambda: self.neighbor(addr).get("bgpState") == "Established", timeout,
                          f"FRR neighbor {addr} Established")


class Gobgp:
    def __init__(self, lab, ns, sock, proc):
        self.lab, self.ns, self.sock, self.proc = lab, ns, sock, proc

    def cli(self, *args):
        return run(["ip", "netns", "exec", self.ns, "gobgp", "--target", self.sock, *args]).stdout

    def neighbor_state(self, addr):
        out = json.loads(self.cli("neighbor", addr, "-j"))
        return out.get("state", {}).get("session_state")


# -- peer configs shared by the tests and the demo ---------------------------------

def frr_conf(bagd_addr, bagd_as, asn, router_id, hostname="frr", before="", address_family=(), networks=(),
             router=()):
    """An FRR bgpd.conf with bagd as its one neighbor, in IPv4 unicast: no policy required, no
    import check for `networks`, a reconnect after 1 s. `before`: lines ahead of `router bgp`
    (prefix lists, route maps); `router`: lines right under `router bgp` ("bgp graceful-restart");
    `address_family`: more lines for the neighbor's address family ("neighbor ... route-map IN
    in"); `networks`: prefixes, each optionally followed by " route-map NAME"."""
    af = "".join(f"  {line}\n" for line in address_family) + "".join(f"  network {p}\n" for p in networks)
    rl = "".join(f" {line}\n" for line in router)
    return f"""hostname {hostname}
{before}router bgp {asn}
 bgp router-id {router_id}
{rl} no bgp ebgp-requires-policy
 no bgp network import-check
 no bgp default ipv4-unicast
 neighbor {bagd_addr} remote-as {bagd_as}
 neighbor {bagd_addr} timers connect 1
 address-family ipv4 unicast
  neighbor {bagd_addr} activate
{af} exit-address-family
"""


def kernel_of(ns):
    """The kernel's next-hop objects and BGP routes in namespace `ns`, as iproute2's JSON."""
    nh = json.loads(run(["ip", "-n", ns, "-j", "nexthop", "show"]).stdout or "[]")
    routes = json.loads(run(["ip", "-n", ns, "-j", "route", "show", "proto", "bgp"]).stdout or "[]")
    return nh, routes


def frr_receiver_conf(bagd_addr, bagd_as=65000, asn=65003, router_id="10.255.0.4"):
    """An FRR that only listens: it shows what bagd advertises (`show bgp ipv4 unicast P json`)."""
    return frr_conf(bagd_addr, bagd_as, asn, router_id, hostname="frr-rx")


def gobgp_lb_toml(asn, router_id, local_addr, bagd_addr, bytes_per_second, bagd_as=65000, sessions=None):
    """A GoBGP whose global export policy adds link bandwidth `lb:ASN:BYTES` to every route
    (GoBGP always sends the non-transitive type 0x40). Routes are added with the CLI.
    `sessions`: instead of one session to `bagd_addr`, one per (bagd address, source address)
    pair (GoBGP keys neighbors by address, so each goes to its own address of bagd's)."""
    head = f"""
[global.config]
  as = {asn}
  router-id = "{router_id}"
  local-address-list = ["{local_addr}"]
[global.apply-policy.config]
  export-policy-list = ["lb"]
  default-export-policy = "accept-route"
[[policy-definitions]]
  name = "lb"
  [[policy-definitions.statements]]
    name = "set-lb"
    [policy-definitions.statements.actions]
      route-disposition = "accept-route"
    [policy-definitions.statements.actions.bgp-actions.set-ext-community]
      options = "add"
      [policy-definitions.statements.actions.bgp-actions.set-ext-community.set-ext-community-method]
        communities-list = ["lb:{asn}:{bytes_per_second}"]
"""
    neighbors = []
    for to, source in (sessions if sessions is not None else [(bagd_addr, None)]):
        transport = f"""  [neighbors.transport.config]
    local-address = "{source}"
""" if source else ""
        neighbors.append(f"""[[neighbors]]
  [neighbors.config]
    neighbor-address = "{to}"
    peer-as = {bagd_as}
{transport}  [neighbors.timers.config]
    connect-retry = 1
  [[neighbors.afi-safis]]
    [neighbors.afi-safis.config]
      afi-safi-name = "ipv4-unicast"
""")
    return head + "".join(neighbors)
