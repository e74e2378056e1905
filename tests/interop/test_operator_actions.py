"""Operator actions must not block or kill bagd's event thread (issue 11, defect 4).

- SIGHUP with a configuration path that is now a FIFO nobody writes to: the reload is refused
  at once with the reason in the log, the running configuration stays, and the control
  socket (answered by the event thread) still answers within 1 s. (Before: open() of the
  FIFO on the event thread, nothing answered, no KEEPALIVE went out.)
- bagd started with a FIFO as its configuration refuses it at once (exit 1, the reason).
- SIGHUP while bagd adopts a large kernel FIB at start-up (before it is ready) does not kill
  it (before: exit by SIGHUP, status 129); the reload is applied once bagd runs.
  Needs root (a network namespace with 200k kernel routes); skipped otherwise.
Loopback only for the first two."""
import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from netlab import BAGCTL, BAGD, Lab, free_port, run, wait_until, started  # noqa: E402


def unblock_fifo(path):
    """A reader stuck in open() of the FIFO gets EOF (keeps a failing old bagd from hanging)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
        os.close(fd)
    except OSError:
        pass


class FifoConfig(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="bagd-opact-")
        self.conf = os.path.join(self.dir, "bagd.textproto")
        self.sock = os.path.join(self.dir, "bagd.sock")
        self.port = free_port()
        self.text = (f'router {{ asn: 65000 router_id: "10.255.0.1" '
                     f'listen {{ address: "127.0.0.1" port: {self.port} }} ebgp_requires_policy: false }}\n'
                     'fib { backend: BACKEND_NONE }\n'
                     'neighbors { address: "127.0.0.2" remote_as: 65001 passive: true }\n')

    def tearDown(self):
        subprocess.run(["rm", "-rf", self.dir])

    def start(self):
        with open(self.conf, "w") as f:
            f.write(self.text)
        self.log_path = os.path.join(self.dir, "bagd.log")
        log = open(self.log_path, "w")
        p = started(subprocess.Popen([BAGD, "--config", self.conf, "--socket", self.sock], stdout=log,
                             stderr=subprocess.STDOUT))
        log.close()
        self.addCleanup(self.stop, p)
        wait_until(lambda: os.path.exists(self.sock) or p.poll() is not None, 10, "bagd control socket")
        self.assertIsNone(p.poll(), self.log())
        return p

    def stop(self, p):
        if p.poll() is None:
            unblock_fifo(self.conf)
            p.terminate()
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()

    def log(self):
        with open(self.log_path) as f:
            return f.read()

    def show_neighbors_seconds(self):
        t0 = time.monotonic()
        r = run([BAGCTL, "--socket", self.sock, "show", "neighbors", "--json"], check=False, timeout=30)
        elapsed = time.monotonic() - t0
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("127.0.0.2", r.stdout, "the running configuration's neighbor is gone")
        return elapsed

    def test_sighup_with_a_fifo_is_refused_without_blocking(self):
        p = self.start()
        self.show_neighbors_seconds()
        os.remove(self.conf)
        os.mkfifo(self.conf)  # nobody ever writes to it
        p.send_signal(signal.SIGHUP)
        time.sleep(0.2)  # let the signal reach the event loop
        elapsed = self.show_neighbors_seconds()
        self.assertLess(elapsed, 1.0, f"the control socket took {elapsed:.2f} s after SIGHUP:\n{self.log()}")
        wait_until(lambda: "it is a FIFO" in self.log(), 5, "the reason in the log")
        self.assertIn("keeping the running configuration", self.log())
        self.assertIsNone(p.poll())
        # A regular file again: the next SIGHUP reloads it.
        os.remove(self.conf)
        with open(self.conf, "w") as f:
            f.write(self.text)
        p.send_signal(signal.SIGHUP)
        wait_until(lambda: f"SIGHUP: {self.conf} reloaded" in self.log(), 5, "the reload")
        self.assertLess(self.show_neighbors_seconds(), 1.0)

    def test_start_with_a_fifo_is_refused_at_once(self):
        os.mkfifo(self.conf)
        try:
            r = run([BAGD, "--config", self.conf, "--socket", self.sock], check=False, timeout=5)
        except subprocess.TimeoutExpired:
            self.fail("bagd waited for a writer on the FIFO instead of refusing it")
        finally:
            unblock_fifo(self.conf)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn(f"{self.conf}: cannot read configuration: it is a FIFO", r.stderr)

    def test_check_reads_a_pipe(self):
        r = subprocess.run([BAGD, "--check", "--config", "/dev/stdin"], input=self.text, capture_output=True,
                           text=True, timeout=10)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("configuration OK (1 neighbor)", r.stdout)


class SighupDuringStartup(unittest.TestCase):
    ROUTES = 200_000

    def test_sighup_while_adopting_the_kernel_fib(self):
        if os.geteuid() != 0:
            self.skipTest("needs root (a network namespace)")
        lab = Lab("hupst")
        self.addCleanup(lab.close)
        ns, other = lab.netns("b"), lab.netns("p")
        _, gateway, _, _, ifname, _ = lab.link(ns, other)
        # A previous run's state: one nexthop and 200k routes of bagd's protocol (186).
        run(["ip", "-n", ns, "nexthop", "add", "id", "1", "via", gateway, "dev", ifname, "proto", "186"])
        batch = os.path.join(lab.dir, "routes.batch")
        with open(batch, "w") as f:
            for i in range(self.ROUTES):
                f.write(f"route add 20.{i >> 16}.{(i >> 8) & 255}.{i & 255}/32 nhid 1 proto 186\n")
        run(["ip", "-n", ns, "-batch", batch])
        config = 'router { asn: 65000 router_id: "10.255.0.1" }\n'
        conf = os.path.join(lab.dir, "bagd.textproto")
        with open(conf, "w") as f:
            f.write(config)
        sock = os.path.join(lab.dir, "bagd.sock")
        p = lab.spawn("bagd", ns, [BAGD, "--config", conf, "--socket", sock], "bagd.log")
        # The kernel backend is open: next comes the dump of the previous run's 200k routes.
        wait_until(lambda: "fib: kernel backend" in lab.log("bagd.log") or p.poll() is not None, 10,
                   "the kernel backend", interval=0.002)
        p.send_signal(signal.SIGHUP)
        sent_before_ready = "bagd started" not in lab.log("bagd.log")
        wait_until(lambda: os.path.exists(sock) or p.poll() is not None, 30, "bagd control socket")
        self.assertIsNone(p.poll(), f"bagd died (status {p.returncode}):\n{lab.log('bagd.log')}")
        wait_until(lambda: f"SIGHUP: {conf} reloaded" in lab.log("bagd.log"), 10, "the reload, once started")
        log = lab.log("bagd.log")
        self.assertTrue(sent_before_ready, f"the SIGHUP came too late to test anything:\n{log}")
        self.assertIn("(the signal arrived during start-up)", log)
        self.assertLess(log.index("bagd started"), log.index("SIGHUP: reading"))
        self.assertIn("200000 routes of a previous run", log)
        r = run([BAGCTL, "--socket", sock, "show", "neighbors"], check=False)
        self.assertEqual(r.returncode, 0, r.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
