"""`bagd --metrics-listen`: a bare port binds 127.0.0.1 only (not every address, as civetweb
would), ADDR:PORT binds exactly that, and a value that is not an endpoint stops bagd with a
message saying what to write. Loopback only, no root needed."""
import os
import socket
import subprocess
import sys
import tempfile
import unittest
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from netlab import BAGD, free_port, wait_until, started  # noqa: E402


def ipv6_loopback():
    try:
        s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
        s.bind(("::1", 0))
        s.close()
        return True
    except OSError:
        return False


class MetricsListen(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="bagd-metrics-listen-")
        self.conf = os.path.join(self.dir, "bagd.textproto")
        with open(self.conf, "w") as f:
            f.write(f'router {{ asn: 65000 router_id: "10.255.0.1" listen {{ address: "127.0.0.1" port: {free_port()} }} ebgp_requires_policy: false }}\n'
                    'fib { backend: BACKEND_NONE }\n'
                    'neighbors { address: "127.0.0.2" remote_as: 65002 passive: true }\n')
        self.procs = []

    def tearDown(self):
        for p, log in self.procs:
            if p.poll() is None:
                p.terminate()
                p.wait(10)
            log.close()

    def start(self, listen):
        log_path = os.path.join(self.dir, f"bagd-{len(self.procs)}.log")
        log = open(log_path, "w")
        p = started(subprocess.Popen([BAGD, "--config", self.conf, "--socket", os.path.join(self.dir, f"s{len(self.procs)}"),
                              "--metrics-listen", listen], stdout=log, stderr=subprocess.STDOUT))
        self.procs.append((p, log))
        return p, log_path

    @staticmethod
    def serves(host, port):
        url_host = f"[{host}]" if ":" in host else host
        try:
            body = urllib.request.urlopen(f"http://{url_host}:{port}/metrics", timeout=2).read().decode()
            return 'bagd_neighbor_state{neighbor="127.0.0.2"}' in body
        except OSError:
            return False

    @staticmethod
    def accepts(host, port):
        try:
            socket.create_connection((host, port), timeout=2).close()
            return True
        except OSError:
            return False

    def test_bare_port_binds_loopback_only(self):
        port = free_port()
        p, log_path = self.start(str(port))
        wait_until(lambda: self.serves("127.0.0.1", port), 10, "metrics on 127.0.0.1")
        # 127.0.0.2 is this host too: bound to 0.0.0.0 it would answer.
        self.assertFalse(self.accepts("127.0.0.2", port), "a bare port serves every address")
        with open(log_path) as f:
            self.assertIn(f"metrics on http://127.0.0.1:{port}/metrics (loopback only: --metrics-listen {port} is a bare "
                          f"port; write 0.0.0.0:{port} or [::]:{port} to serve other hosts)", f.read())
        self.assertIsNone(p.poll())

    def test_explicit_every_address(self):
        port = free_port()
        self.start(f"0.0.0.0:{port}")
        wait_until(lambda: self.serves("127.0.0.2", port), 10, "metrics on every address")

    def test_explicit_address(self):
        port = free_port()
        self.start(f"127.0.0.1:{port}")
        wait_until(lambda: self.serves("127.0.0.1", port), 10, "metrics on 127.0.0.1")
        self.assertFalse(self.accepts("127.0.0.2", port))

    @unittest.skipUnless(ipv6_loopback(), "no IPv6 loopback")
    def test_ipv6_in_brackets(self):
        # Served, or refused at start when the HTTP server has no IPv6 (Debian 12's civetweb).
        port = free_port()
        p, log_path = self.start(f"[::1]:{port}")
        wait_until(lambda: p.poll() is not None or self.serves("::1", port), 10, "metrics on [::1] or an exit")
        if p.poll() is not None:
            self.assertEqual(p.returncode, 1)
            with open(log_path) as f:
                self.assertIn(f"--metrics-listen [::1]:{port}: the HTTP server this bagd is built with (civetweb) has no "
                              f"IPv6 support; use an IPv4 address, e.g. 127.0.0.1:{port}", f.read())

    def test_not_an_endpoint_stops_bagd(self):
        for bad, says in (("::1:9180", "an IPv6 address must be written in brackets"),
                          ("localhost:9180", '"localhost" is not an IPv4 or IPv6 address'),
                          ("70000", 'port "70000" is not a port number 1..65535')):
            p, log_path = self.start(bad)
            self.assertEqual(p.wait(10), 1, bad)
            with open(log_path) as f:
                self.assertIn(says, f.read())


if __name__ == "__main__":
    unittest.main(verbosity=2)
