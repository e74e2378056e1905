#!/usr/bin/env python3
"""The Debian package, as Debian and an operator would take it (root; ~3-4 min):

1. `cpack -G DEB` from the build tree three times: the package (version V) and two older
   builds of it (V~pkgtest1, V~pkgtest2, `cpack -R`), for the upgrades.
2. The package itself: control fields (a real Maintainer, Depends from dpkg-shlibdeps plus
   adduser), contents (gzipped man pages, DEP-5 copyright, changelog.gz, bagd.conf 0640),
   conffiles; `lintian` reports no error and no warning.
3. A clean Debian 12 root (mmdebstrap: Essential, apt, systemd, man-db for the unit's
   Documentation=; no procps, so no /bin/kill)
   where `apt-get install` of the old build pulls what it declares. There: the bagd group,
   /etc/bagd/bagd.conf 0640 root:bagd, the unit enabled by the postinst, bagd --check.
4. The root booted as a container (systemd-nspawn) inside a network namespace, next to FRR in
   another (tests/interop/netlab.py): systemd starts the enabled bagd at boot,
   `systemd-analyze verify` accepts the unit, `systemctl reload` works, bagd and FRR exchange
   routes with graceful restart. An upgrade to V~pkgtest2 with a configuration the new bagd
   rejects leaves the running bagd alone (same process, the errors printed). Then, the file
   fixed, `dpkg -i` of V over the running bagd: the postinst restarts it (a new process), and
   FRR never loses bagd's route (it holds it as stale across the planned stop, RFC 8538) while
   polling it every 0.1 s.
5. `dpkg -P bagd` there: bagd stopped, and nothing left: no files, no enable symlink, no mask,
   no deb-systemd-helper state (the bagd group stays, as Debian leaves system groups).

Everything made (the root, the container, the namespaces, FRR) goes, also on failure.

    BAGD_BUILD=build python3 tests/package/deb_install.py
"""
import glob
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "interop"))
import netlab  # noqa: E402
from netlab import Lab, frr_conf, kernel_of, started, wait_until  # noqa: E402

BUILD = os.path.abspath(os.environ.get("BAGD_BUILD", "build"))
LOCAL_AS, FRR_AS = 65000, 65001
BAGD_NET = "203.0.113.0/24"  # bagd originates it; FRR must never lose it
FRR_NET = "10.70.0.0/24"     # FRR sends it; bagd installs it (its kernel routes: F bit on restart)


def run(cmd, **kw):
    print("+", " ".join(cmd) if isinstance(cmd, list) else cmd, flush=True)
    return subprocess.run(cmd, check=True, text=True, capture_output=True, **kw)


def host_sources():
    """The host's apt sources (the mirror CI may use), for the new root."""
    files = sorted(glob.glob("/etc/apt/sources.list.d/*.sources"))
    if os.path.exists("/etc/apt/sources.list") and os.path.getsize("/etc/apt/sources.list") > 0:
        files.insert(0, "/etc/apt/sources.list")
    return files


def build_deb(out_dir, version=None):
    os.makedirs(out_dir)
    cmd = ["cpack", "-G", "DEB", "--config", os.path.join(BUILD, "CPackConfig.cmake"), "-B", out_dir]
    if version:
        cmd += ["-R", version]
    run(cmd)
    debs = glob.glob(os.path.join(out_dir, "bagd_*.deb"))
    assert len(debs) == 1, f"expected one bagd_*.deb in {out_dir}, found {debs}"
    return debs[0]


def check_package(deb, work):
    info = run(["dpkg-deb", "--info", deb]).stdout
    print(info)
    fields = dict(re.findall(r"^ (\w[\w-]*): (.*)$", info, re.M))
    depends = fields.get("Depends", "")
    for lib in ("libprotobuf", "libgrpc++", "libabsl", "libre2", "adduser"):
        assert lib in depends, f"Depends does not name {lib}: {depends!r}"
    maintainer = fields.get("Maintainer", "")
    assert re.fullmatch(r"[^<>]+ <[^@<>\s]+@[^@<>\s]+\.[a-z]+>", maintainer) and "localhost" not in maintainer, maintainer

    contents = run(["dpkg-deb", "--contents", deb]).stdout
    entries = {line.split()[-1]: line.split()[0] for line in contents.splitlines()}
    for path in ("./usr/sbin/bagd", "./usr/bin/bagctl", "./etc/bagd/bagd.conf", "./etc/default/bagd",
                 "./usr/lib/systemd/system/bagd.service", "./usr/share/man/man8/bagd.8.gz",
                 "./usr/share/man/man8/bagctl.8.gz", "./usr/share/man/man5/bagd.conf.5.gz",
                 "./usr/share/doc/bagd/copyright", "./usr/share/doc/bagd/changelog.gz",
                 "./usr/share/doc/bagd/docs/operations.md"):
        assert path in entries, f"{path} not in the package"
    assert entries["./etc/bagd/bagd.conf"] == "-rw-r-----", f"bagd.conf is {entries['./etc/bagd/bagd.conf']} in the package"
    assert not [p for p in entries if re.search(r"/man/man\d/[^/]+\.\d$", p)], "an uncompressed man page"

    ctrl = os.path.join(work, "control")
    run(["dpkg-deb", "--control", deb, ctrl])
    with open(os.path.join(ctrl, "conffiles")) as f:
        assert "/etc/bagd/bagd.conf" in f.read().split(), "bagd.conf is not a conffile"
    for script in ("postinst", "prerm", "postrm"):
        with open(os.path.join(ctrl, script)) as f:
            text = f.read()
        # systemctl only for daemon-reload; start/stop/restart through deb-systemd-invoke.
        for line in text.splitlines():
            if re.search(r"^\s*(?:if\s+|!\s*)?systemctl\b|(?:&&|\|\||;|then|do)\s*systemctl\b", line):
                assert "daemon-reload" in line, f"{script} calls systemctl directly: {line.strip()}"

    # lintian as Debian runs it on an upload: no error, no warning (info tags are allowed).
    lint = subprocess.run(["lintian", "--fail-on", "none", deb], text=True, capture_output=True)
    print("lintian:", lint.stdout or "(nothing)", lint.stderr)
    bad = [l for l in lint.stdout.splitlines() if re.match(r"[EW]: ", l)]
    assert lint.returncode == 0 and not bad, f"lintian: {bad or lint.stderr}"


class Container:
    """The root booted with systemd-nspawn in network namespace `ns`; `sh()` runs in it."""

    def __init__(self, root, ns, log_path):
        self.root, self.ns, self.leader, self.log_path, self.proc = root, ns, None, log_path, None

    def boot(self):
        with open(self.log_path, "w") as log:
            self.proc = started(subprocess.Popen(
                ["systemd-nspawn", "--quiet", "--register=no", "--keep-unit", "-D", self.root, "-b",
                 "--machine=bagdpkg", f"--network-namespace-path=/run/netns/{self.ns}", "--capability=CAP_NET_ADMIN"],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True))

        def leader():
            if self.proc.poll() is not None:
                raise AssertionError(f"systemd-nspawn exited: {self.log()}")
            # nspawn's child that runs systemd (not a short-lived helper it forks meanwhile).
            for kid in subprocess.run(["pgrep", "-P", str(self.proc.pid)], capture_output=True, text=True).stdout.split():
                try:
                    with open(f"/proc/{kid}/comm") as f:
                        if f.read().strip() == "systemd":
                            return int(kid)
                except FileNotFoundError:
                    pass
            return None

        self.leader = wait_until(leader, 20, "the container's init")
        def up():
            r = self.sh("systemctl", "is-system-running", check=False, quiet=True)
            state = r.stdout.strip()
            if state in ("running", "degraded"):
                return state
            raise RuntimeError(state or r.stderr.strip())  # wait_until shows the last one

        try:
            state = wait_until(up, 90, "systemd up in the container", interval=0.5)
        except AssertionError:
            print(self.sh("systemctl", "list-jobs", "--no-pager", check=False).stdout)
            raise
        if state == "degraded":
            print(self.sh("systemctl", "--failed", "--no-pager", check=False).stdout)

    def log(self):
        with open(self.log_path, errors="replace") as f:
            return f.read()[-4000:]

    def sh(self, *cmd, check=True, quiet=False):
        full = ["nsenter", "-t", str(self.leader), "-m", "-u", "-i", "-n", "-p", "--",
                "/usr/bin/env", "-i", "PATH=/usr/sbin:/usr/bin:/sbin:/bin", "DEBIAN_FRONTEND=noninteractive", *cmd]
        if not quiet:
            print("+ [container]", " ".join(cmd), flush=True)
        return subprocess.run(full, check=check, text=True, capture_output=True, timeout=120)

    def stop(self):
        if self.proc is None:
            return
        # SIGKILL to the container's init ends every process in its PID namespace at once.
        if self.leader:
            try:
                os.kill(self.leader, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)


def write_config(root, text):
    """Replaces /etc/bagd/bagd.conf in place (an admin's edit: owner and mode stay)."""
    with open(os.path.join(root, "etc/bagd/bagd.conf"), "w") as f:
        f.write(text)


def file_group(root, gid):
    with open(os.path.join(root, "etc/group")) as f:
        for line in f:
            name, _, g, *_ = line.split(":")
            if int(g) == gid:
                return name
    return str(gid)


def remove_tree(path):
    """rm -rf that never follows a mount point out of `path`: an interrupted mmdebstrap can
    leave the root's /proc, /sys or /dev mounted, and deleting through those would reach the
    host's. Unmounted first (deepest first); anything still mounted keeps the tree."""
    with open("/proc/self/mounts") as f:
        points = [line.split()[1] for line in f]
    inside = sorted((m for m in points if m == path or m.startswith(path + "/")), key=len, reverse=True)
    for m in inside:
        subprocess.run(["umount", "-l", m], capture_output=True)
    with open("/proc/self/mounts") as f:
        if any(line.split()[1].startswith(path + "/") for line in f):
            print(f"kept {path}: something in it is still mounted")
            return
    shutil.rmtree(path, ignore_errors=True)


def main():
    if os.geteuid() != 0:
        print("SKIP: needs root (mmdebstrap --mode=root, network namespaces, systemd-nspawn)")
        return 0
    prefix = os.environ.get("BAGD_INSTALL_PREFIX", "/usr")
    if prefix != "/usr":
        print(f"SKIP: the build tree installs to {prefix}; a system package needs -DCMAKE_INSTALL_PREFIX=/usr")
        return 0
    for tool in ("cpack", "mmdebstrap", "dpkg-deb", "lintian", "systemd-nspawn", "nsenter", netlab.FRR_BGPD):
        if shutil.which(tool) is None:
            print(f"FAIL: {tool} is missing (make deps installs it)")
            return 1
    work = tempfile.mkdtemp(prefix="bagd-deb-")
    lab = container = None
    try:
        deb = build_deb(os.path.join(work, "new"))
        version = run(["dpkg-deb", "--field", deb, "Version"]).stdout.strip()
        old_deb = build_deb(os.path.join(work, "old"), f"{version}~pkgtest1")
        mid_deb = build_deb(os.path.join(work, "mid"), f"{version}~pkgtest2")
        run(["dpkg", "--compare-versions", f"{version}~pkgtest1", "lt", f"{version}~pkgtest2"])
        run(["dpkg", "--compare-versions", f"{version}~pkgtest2", "lt", version])
        check_package(deb, work)

        # -- a clean root with the old build installed --------------------------------------
        root = os.path.join(work, "root")
        mirrors = host_sources() or ["http://deb.debian.org/debian"]
        run(["mmdebstrap", "--variant=apt", "--mode=root", "--quiet", "--include=systemd,dbus,man-db", "bookworm", root,
             *mirrors, f"--customize-hook=copy-in {old_deb} {mid_deb} {deb} /root",
             f"--customize-hook=chroot \"$1\" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "
             f"/root/{os.path.basename(old_deb)}"])

        def in_root(*cmd):
            return run(["chroot", root, *cmd])

        v = in_root("/usr/sbin/bagd", "--version").stdout
        assert v.startswith("bagd 0."), v
        assert in_root("/usr/bin/bagctl", "--version").stdout.startswith("bagctl 0.")
        assert "--config FILE" in in_root("/usr/sbin/bagd", "--help").stdout
        check = in_root("/usr/sbin/bagd", "--config", "/etc/bagd/bagd.conf", "--check")
        assert "configuration OK (0 neighbors)" in check.stdout and "warning" not in check.stdout, check.stdout
        assert not any(os.path.exists(os.path.join(root, p)) for p in ("bin/kill", "usr/bin/kill")), \
            "the root has /bin/kill: it no longer shows that the unit works without procps"
        conf = os.stat(os.path.join(root, "etc/bagd/bagd.conf"))
        assert stat.S_IMODE(conf.st_mode) == 0o640 and conf.st_uid == 0, oct(conf.st_mode)
        assert file_group(root, conf.st_gid) == "bagd", f"bagd.conf group {file_group(root, conf.st_gid)}"
        for path, mode in (("usr/sbin/bagd", 0o755), ("usr/bin/bagctl", 0o755), ("etc/default/bagd", 0o644),
                           ("usr/lib/systemd/system/bagd.service", 0o644), ("usr/share/doc/bagd/copyright", 0o644)):
            got = stat.S_IMODE(os.stat(os.path.join(root, path)).st_mode)
            assert got == mode, f"/{path} is {oct(got)}, not {oct(mode)}"
        wants = os.path.join(root, "etc/systemd/system/multi-user.target.wants/bagd.service")
        assert os.path.islink(wants), "the postinst did not enable bagd.service"
        unit = open(os.path.join(root, "usr/lib/systemd/system/bagd.service")).read()
        assert "ExecStartPre=/usr/sbin/bagd --config /etc/bagd/bagd.conf --check" in unit
        assert "ExecReload=/usr/bin/bagctl --socket /run/bagd/bagd.sock reload" in unit
        status = in_root("dpkg-query", "-W", "-f=${Status} ${Version}", "bagd").stdout
        assert status == f"install ok installed {version}~pkgtest1", status

        # -- booted next to FRR --------------------------------------------------------------
        lab = Lab("deb")
        b, f = lab.netns("b"), lab.netns("f")
        b_addr, f_addr, *_ = lab.link(b, f)
        write_config(root, f"""# the test's: one eBGP neighbor, FRR (graceful restart both ways)
router {{ asn: {LOCAL_AS} router_id: "10.255.0.1" ebgp_requires_policy: false }}
neighbors {{ address: "{f_addr}" remote_as: {FRR_AS} timers {{ connect_retry: 1 }} }}
networks {{ prefix: "{BAGD_NET}" }}
""")
        frr = lab.start_frr(f, frr_conf(b_addr, LOCAL_AS, FRR_AS, "10.255.0.2", hostname="frr-deb",
                                        router=["bgp graceful-restart", "bgp graceful-restart preserve-fw-state",
                                                "bgp graceful-restart notification"],
                                        networks=[FRR_NET]), f_addr)
        container = c = Container(root, b, os.path.join(work, "container.log"))
        c.boot()
        verify = c.sh("systemd-analyze", "verify", "bagd.service", check=False)
        assert verify.returncode == 0 and "bagd" not in verify.stdout + verify.stderr, \
            f"systemd-analyze verify: {verify.stdout}{verify.stderr}"
        # Enabled by the postinst, so started at boot.
        wait_until(lambda: c.sh("systemctl", "is-active", "bagd", check=False).stdout.strip() == "active", 30,
                   "bagd started at boot", interval=0.5)
        reload = c.sh("systemctl", "reload", "bagd", check=False)
        assert reload.returncode == 0, f"systemctl reload: {reload.stderr}"

        def at_frr():
            return frr.json(f"show bgp ipv4 unicast {BAGD_NET} json").get("paths") or None

        wait_until(at_frr, 40, f"{BAGD_NET} from bagd at FRR")
        wait_until(lambda: any(r.get("dst") == FRR_NET for r in kernel_of(b)[1]), 20, f"{FRR_NET} in bagd's kernel")
        pid_before = c.sh("systemctl", "show", "-p", "MainPID", "--value", "bagd").stdout.strip()
        peer = frr.neighbor(b_addr)
        assert peer.get("gracefulRestartInfo", {}).get("remoteGrMode") == "Restart", peer.get("gracefulRestartInfo")
        drops_before = peer.get("connectionsDropped", 0)

        # -- an upgrade the new version's --check refuses: bagd keeps running ------------------
        config = open(os.path.join(root, "etc/bagd/bagd.conf")).read()
        write_config(root, config + "neighbors { address: \"not-an-address\" }\n")
        refused = c.sh("dpkg", "-i", f"/root/{os.path.basename(mid_deb)}", check=False)
        print(refused.stdout, refused.stderr)
        assert refused.returncode == 0, f"dpkg -i: {refused.stderr}"
        assert "rejects /etc/bagd/bagd.conf, so the running bagd was not restarted" in refused.stderr, refused.stderr
        assert "bagd.conf:5:" in refused.stderr, "the postinst does not show the error's file:line"
        assert c.sh("systemctl", "show", "-p", "MainPID", "--value", "bagd").stdout.strip() == pid_before, \
            "bagd was restarted with a configuration its new version rejects"
        assert c.sh("dpkg-query", "-W", "-f=${Version}", "bagd").stdout == f"{version}~pkgtest2"
        write_config(root, config)

        # -- the upgrade, watched from FRR ----------------------------------------------------
        seen = {"polls": 0, "missing": [], "stale": 0}
        done = threading.Event()

        def watch():
            while not done.is_set():
                try:
                    paths = at_frr()
                except Exception as e:  # noqa: BLE001: vtysh busy; the next poll tells
                    print("watch:", e)
                    continue
                seen["polls"] += 1
                if not paths:
                    seen["missing"].append(time.monotonic())
                elif any(p.get("stale") for p in paths):
                    seen["stale"] += 1
                time.sleep(0.1)

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        time.sleep(1)
        upgrade = c.sh("dpkg", "-i", f"/root/{os.path.basename(deb)}", check=False)
        print(upgrade.stdout, upgrade.stderr)
        assert upgrade.returncode == 0, f"dpkg -i of the new version: {upgrade.stderr}"
        assert c.sh("dpkg-query", "-W", "-f=${Version}", "bagd").stdout == version
        pid_after = c.sh("systemctl", "show", "-p", "MainPID", "--value", "bagd").stdout.strip()
        assert pid_after not in ("", "0", pid_before), f"bagd was not restarted: MainPID {pid_before} -> {pid_after}"
        wait_until(lambda: frr.neighbor(b_addr).get("bgpState") == "Established" and
                   frr.neighbor(b_addr).get("connectionsDropped", 0) > drops_before, 40, "the session back at FRR")
        wait_until(lambda: (lambda ps: ps and not any(p.get("stale") for p in ps))(at_frr()), 40,
                   f"{BAGD_NET} fresh again at FRR")
        time.sleep(1)
        done.set()
        watcher.join(10)
        print(f"FRR polled {seen['polls']} times during the upgrade: {seen['stale']} with the route stale, "
              f"{len(seen['missing'])} without it")
        assert not seen["missing"], f"FRR lost {BAGD_NET} during the upgrade ({len(seen['missing'])} polls)"
        assert seen["stale"] > 0, "FRR never held the route as stale: the restart was not a graceful one"
        # The planned stop: Cease / Administrative Shutdown (RFC 8538: not a Hard Reset).
        journal = c.sh("journalctl", "-u", "bagd", "--no-pager").stdout
        assert "Cease / Administrative Shutdown (6/2)" in journal, journal[-3000:]
        assert any(r.get("dst") == FRR_NET for r in kernel_of(b)[1]), f"{FRR_NET} left bagd's kernel"
        conf = os.stat(os.path.join(root, "etc/bagd/bagd.conf"))  # the admin's file: kept, mode too
        assert (stat.S_IMODE(conf.st_mode), file_group(root, conf.st_gid)) == (0o640, "bagd"), oct(conf.st_mode)
        assert open(os.path.join(root, "etc/bagd/bagd.conf")).read() == config

        # -- purge ----------------------------------------------------------------------------
        # An admin's own `systemctl enable` (docs/operations.md), after a disable: the link is
        # systemctl's now, not the postinst's; the purge must take it all the same.
        c.sh("systemctl", "disable", "bagd")
        assert not os.path.lexists(wants)
        c.sh("systemctl", "enable", "bagd")
        assert os.path.islink(wants)
        purge = c.sh("dpkg", "-P", "bagd", check=False)
        print(purge.stdout, purge.stderr)
        assert purge.returncode == 0, f"dpkg -P: {purge.stderr}"
        assert c.sh("systemctl", "is-active", "bagd", check=False).stdout.strip() != "active", "bagd still runs"
        left = [p for p in ("etc/bagd", "etc/default/bagd", "usr/lib/systemd/system/bagd.service", "usr/sbin/bagd",
                            "usr/bin/bagctl", "usr/share/doc/bagd", "etc/systemd/system/bagd.service",
                            "etc/systemd/system/multi-user.target.wants/bagd.service")
                if os.path.lexists(os.path.join(root, p))]
        left += [p for p in glob.glob(os.path.join(root, "var/lib/systemd/deb-systemd-helper-*/**"), recursive=True)
                 if "bagd" in os.path.basename(p)]
        left += [l for l in c.sh("find", "/etc", "-xtype", "l").stdout.splitlines()
                 if "bagd" in l]  # a dangling symlink to the unit
        assert not left, f"dpkg -P left {left}"
        gone = c.sh("dpkg-query", "-W", "bagd", check=False)
        assert gone.returncode != 0, f"dpkg still knows bagd: {gone.stdout}"
        print(f"PASS: lintian clean; {version}~pkgtest1 installed in a clean bookworm root, booted, a refused "
              f"upgrade kept bagd running, upgraded to {version} with FRR keeping {BAGD_NET} ({seen['polls']} polls), purged clean")
        return 0
    except subprocess.CalledProcessError as e:
        print(f"FAIL: {e.cmd} exited {e.returncode}\nstdout: {e.stdout}\nstderr: {e.stderr}")
        return 1
    except AssertionError as e:
        print(f"FAIL: {e}")
        if container and container.leader:
            print(container.sh("journalctl", "-u", "bagd", "--no-pager", "-n", "60", check=False).stdout)
            print("container console:", container.log())
        return 1
    finally:
        if container:
            container.stop()
        if lab:
            lab.close()
        remove_tree(work)


if __name__ == "__main__":
    sys.exit(main())
