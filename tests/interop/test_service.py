"""bagd as a service, against the real daemon on loopback (no root, no systemd needed):

- the sd_notify protocol on a datagram socket the test binds, as systemd's: READY=1 only once
  the control socket exists and the BGP listener accepts; WATCHDOG=1 every half of
  WATCHDOG_USEC; RELOADING=1 then READY=1 around a SIGHUP (a rejected file says so in
  STATUS); STOPPING=1 at SIGTERM and exit 0; no watchdog when WATCHDOG_PID names another
  process;
- metrics present at start (a neighbor that never came up at 0, process_*, build info);
  --log-format json lines with fields;
- the write API through bagctl: reload (applied, needs-restart list, a rejected file with
  file:line:col), network add / delete (a run-time origination kept across a reload);
- --version and --help of both programs on stdout with exit 0, a bad argument exit 2;
- the unit file the build generates passes `systemd-analyze verify` (when it is installed)."""
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from netlab import BAGD, BAGCTL, BUILD, free_port, wait_until  # noqa: E402


class NotifySocket:
    def __init__(self, path):
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(path)

    def next(self, timeout=10):
        self.sock.settimeout(timeout)
        try:
            return self.sock.recv(4096).decode()
        except socket.timeout:
            return None

    def wait_for(self, prefix, timeout=10):
        """The first message starting with `prefix` (others, e.g. WATCHDOG=1, are skipped)."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            m = self.next(max(0.05, deadline - time.time()))
            if m is not None and m.startswith(prefix):
                return m
        raise AssertionError(f"no {prefix!r} from bagd within {timeout}s")

    def close(self):
        self.sock.close()


CONFIG = """router {{ asn: 65000 router_id: "10.255.0.1" listen {{ address: "127.0.0.1" port: {port} }}
         ebgp_requires_policy: false }}
fib {{ backend: BACKEND_NONE }}
neighbors {{ address: "127.0.0.2" remote_as: 65002 }}
"""


class ServiceTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="bagd-service-")
        self.port = free_port()
        self.conf = os.path.join(self.dir, "bagd.textproto")
        with open(self.conf, "w") as f:
            f.write(CONFIG.format(port=self.port))
        self.ctl = os.path.join(self.dir, "bagd.sock")
        self.notify = NotifySocket(os.path.join(self.dir, "notify"))
        self.proc = None

    def tearDown(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.notify.close()
        if getattr(self, "log", None):
            self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def start(self, **env):
        e = dict(os.environ, NOTIFY_SOCKET=self.notify.path, **env)
        self.log = open(os.path.join(self.dir, "bagd.log"), "w")
        self.proc = subprocess.Popen([BAGD, "--config", self.conf, "--socket", self.ctl], env=e, stdout=self.log,
                                     stderr=subprocess.STDOUT)

    def read_log(self):
        with open(os.path.join(self.dir, "bagd.log")) as f:
            return f.read()

    def test_ready_watchdog_reload_stop(self):
        self.start(WATCHDOG_USEC="400000")
        ready = self.notify.wait_for("READY=1")
        # READY=1 means served: the control socket is there and the listener accepts.
        self.assertTrue(os.path.exists(self.ctl), "READY=1 before the control socket")
        socket.create_connection(("127.0.0.1", self.port), timeout=2).close()
        self.assertIn("STATUS=AS 65000, 1 neighbors", ready)

        # WATCHDOG=1 every 200 ms (half of 400 ms): at least 4 in 1.5 s.
        t0, pings = time.time(), 0
        while time.time() - t0 < 1.5:
            if self.notify.next(0.5) == "WATCHDOG=1":
                pings += 1
        self.assertGreaterEqual(pings, 4, "watchdog pings")
        self.assertLessEqual(pings, 10, "watchdog pings")
        self.assertIn("watchdog every 200ms", self.read_log())

        # A reload: RELOADING=1 (with MONOTONIC_USEC), then READY=1.
        self.proc.send_signal(signal.SIGHUP)
        reloading = self.notify.wait_for("RELOADING=1")
        self.assertIn("MONOTONIC_USEC=", reloading)
        self.assertIn("STATUS=reloaded", self.notify.wait_for("READY=1"))

        # A broken file: rejected, READY=1 again, and STATUS says the old one runs.
        with open(self.conf, "a") as f:
            f.write("neighbors { address: \"not an address\" remote_as: 1 }\n")
        self.proc.send_signal(signal.SIGHUP)
        self.notify.wait_for("RELOADING=1")
        self.assertIn("rejected", self.notify.wait_for("READY=1"))
        self.assertIsNone(self.proc.poll(), "bagd exited on a rejected reload")

        self.proc.send_signal(signal.SIGTERM)
        self.notify.wait_for("STOPPING=1")
        self.assertEqual(self.proc.wait(10), 0, self.read_log())

    def test_metrics_present_at_start(self):
        import urllib.request
        mport = free_port()
        self.log = open(os.path.join(self.dir, "bagd.log"), "w")
        self.proc = subprocess.Popen([BAGD, "--config", self.conf, "--socket", self.ctl, "--metrics-listen",
                                      f"127.0.0.1:{mport}", "--log-format", "json"],
                                     env=dict(os.environ, NOTIFY_SOCKET=self.notify.path), stdout=self.log,
                                     stderr=subprocess.STDOUT)
        self.notify.wait_for("READY=1")
        text = urllib.request.urlopen(f"http://127.0.0.1:{mport}/metrics", timeout=5).read().decode()
        # Before any session came up: the neighbor's series at 0, the FIB and UPDATE
        # families, build info and the process series.
        for series in ('bagd_neighbor_state{neighbor="127.0.0.2"}', 'bagd_messages_received_total{neighbor="127.0.0.2",type="update"} 0',
                       'bagd_prefixes_received{family="ipv4-unicast",neighbor="127.0.0.2"} 0',
                       "bagd_fib_failures_total 0", "bagd_update_processing_seconds_count 0",
                       "bagd_end_of_rib_seconds_count 0", 'bagd_build_info{git="', "process_cpu_seconds_total ",
                       "process_resident_memory_bytes ", "process_open_fds ", "process_start_time_seconds "):
            self.assertIn(series, text)
        # --log-format json: one object per line, the first one names the build.
        self.proc.terminate()
        self.assertEqual(self.proc.wait(10), 0)
        import json
        lines = [json.loads(line) for line in self.read_log().splitlines() if line.strip()]
        self.assertTrue(lines[0]["msg"].startswith("bagd 0."), lines[0])
        self.assertEqual({"ts", "level", "msg"} - set(lines[0]), set())
        states = [l for l in lines if l.get("event") == "state"]
        self.assertTrue(states and states[0]["neighbor"] == "127.0.0.2", lines)

    def test_write_api_reload_and_networks(self):
        self.start()
        self.notify.wait_for("READY=1")

        def ctl(*args):
            return subprocess.run([BAGCTL, "--socket", self.ctl, *args], capture_output=True, text=True)

        # A prefix originated at run time, its link bandwidth replaced, then withdrawn.
        r = ctl("network", "add", "203.0.113.0/24", "--link-bandwidth", "40G")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("originated", r.stdout)
        shown = ctl("show", "routes", "203.0.113.0/24", "--json")
        self.assertEqual(shown.returncode, 0, shown.stderr)
        self.assertIn("203.0.113.0/24", shown.stdout)
        r = ctl("network", "add", "203.0.113.0/24", "--link-bandwidth", "10G")
        self.assertIn("replaced", r.stdout)
        bad = ctl("network", "add", "203.0.113.1/24")
        self.assertEqual(bad.returncode, 1)
        self.assertIn("host bits", bad.stderr)
        bad = ctl("network", "add", "198.51.100.0/24", "--link-bandwidth", "fast")
        self.assertEqual(bad.returncode, 1)
        self.assertIn("link_bandwidth", bad.stderr)

        # A reload keeps it; the file's new neighbor is there after it.
        with open(self.conf, "a") as f:
            f.write('neighbors { address: "127.0.0.3" remote_as: 65003 }\n')
        r = ctl("reload")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("reloaded", r.stdout)
        self.assertIn("STATUS=reloaded (control API)", self.notify.wait_for("READY=1"))
        self.assertIn("127.0.0.3", ctl("show", "neighbors").stdout)
        self.assertEqual(ctl("show", "routes", "203.0.113.0/24").returncode, 0)

        # What needs a restart is named.
        with open(self.conf) as f:
            text = f.read()
        with open(self.conf, "w") as f:
            f.write(text.replace("router {", "router { log_level: LOG_LEVEL_DEBUG", 1))
        r = ctl("reload")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("needs a restart of bagd: router.log_level", r.stdout)

        # A broken file: exit 1, the error with its place, and the running config stays.
        with open(self.conf, "a") as f:
            f.write("neighbors { address: \"not an address\" remote_as: 1 }\n")
        r = ctl("reload")
        self.assertEqual(r.returncode, 1)
        self.assertRegex(r.stderr, r"bagd\.textproto:\d+:\d+: ")
        self.assertIn("127.0.0.3", ctl("show", "neighbors").stdout)

        r = ctl("network", "delete", "203.0.113.0/24")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(ctl("show", "routes", "203.0.113.0/24").returncode, 1)
        r = ctl("network", "delete", "203.0.113.0/24")
        self.assertEqual(r.returncode, 1)
        self.assertIn("no network 203.0.113.0/24", r.stderr)
        self.proc.terminate()
        self.assertEqual(self.proc.wait(10), 0)

    def test_watchdog_of_another_process_is_not_ours(self):
        self.start(WATCHDOG_USEC="200000", WATCHDOG_PID="1")
        self.notify.wait_for("READY=1")
        t0 = time.time()
        while time.time() - t0 < 0.8:
            self.assertNotEqual(self.notify.next(0.2), "WATCHDOG=1")
        self.proc.terminate()
        self.assertEqual(self.proc.wait(10), 0)

    def test_bad_watchdog_value_is_a_clear_error(self):
        self.start(WATCHDOG_USEC="soon")
        self.assertEqual(self.proc.wait(10), 1)
        self.assertIn("WATCHDOG_USEC 'soon'", self.read_log())

    def test_version_and_help(self):
        for prog, name in ((BAGD, "bagd"), (BAGCTL, "bagctl")):
            v = subprocess.run([prog, "--version"], capture_output=True, text=True)
            self.assertEqual(v.returncode, 0, v.stderr)
            self.assertRegex(v.stdout, rf"^{name} \d+\.\d+\.\d+ \(git [^)]+\)\n$")
            h = subprocess.run([prog, "--help"], capture_output=True, text=True)
            self.assertEqual(h.returncode, 0, h.stderr)
            self.assertIn("usage:", h.stdout)
            self.assertEqual(h.stderr, "")
        bad = subprocess.run([BAGD, "--frobnicate"], capture_output=True, text=True)
        self.assertEqual(bad.returncode, 2)
        self.assertIn("bad argument '--frobnicate'", bad.stderr)

    def test_unit_file_verifies(self):
        unit = os.path.join(BUILD, "gen", "bagd.service")
        self.assertTrue(os.path.exists(unit), unit)
        text = open(unit).read()
        # Reload through the control socket: bagctl waits for the answer, and a minimal system
        # has no /bin/kill (procps).
        reload = next((l for l in text.splitlines() if l.startswith("ExecReload=")), "")
        self.assertTrue(reload.endswith("bagctl --socket /run/bagd/bagd.sock reload"), reload)
        for line in ("Type=notify", "WatchdogSec=", "ProtectSystem=strict",
                     "CapabilityBoundingSet=CAP_NET_ADMIN CAP_NET_BIND_SERVICE CAP_NET_RAW",
                     "RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX AF_NETLINK"):
            self.assertIn(line, text)
        if shutil.which("systemd-analyze") is None:
            self.skipTest("systemd-analyze is not installed")
        # The installed path of bagd does not exist here: verify a copy that names the build's.
        copy = os.path.join(self.dir, "bagd.service")
        with open(copy, "w") as f:
            f.write(text.replace(text.split("ExecStart=")[1].split()[0], os.path.abspath(BAGD))
                    .replace(reload.split("=", 1)[1].split()[0], os.path.abspath(BAGCTL)))
        r = subprocess.run(["systemd-analyze", "verify", "--man=no", copy], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
