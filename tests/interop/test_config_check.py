"""`bagd --config FILE --check` on every broken config in tests/data/config prints the
expected file:line:col messages and exits 1; every example in conf/examples passes."""
import glob
import os
import re
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from netlab import BAGD, ROOT, run  # noqa: E402


class ConfigCheck(unittest.TestCase):
    def test_broken_configs(self):
        files = sorted(glob.glob(os.path.join(ROOT, "tests/data/config/*.textproto")))
        self.assertGreaterEqual(len(files), 10)
        for path in files:
            with self.subTest(config=os.path.basename(path)):
                expects = re.findall(r"^# expect: (\d+):(\d+): (.*)$", open(path).read(), re.M)
                self.assertTrue(expects, "no '# expect:' line")
                r = run([BAGD, "--config", path, "--check"], check=False)
                self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
                # Paths inside messages are resolved against the config's folder; compare without it.
                out = (r.stdout + r.stderr).replace(os.path.dirname(path) + "/", "")
                lines = out.splitlines()
                name = os.path.basename(path)
                for line, col, text in expects:
                    where = f"{name}:" if line == "0" else f"{name}:{line}:{col}:"
                    self.assertTrue(any(l.startswith(where) and text in l for l in lines),
                                    f"no line '{where} ...{text}...' in:\n{out}")

    def test_examples_pass(self):
        for path in sorted(glob.glob(os.path.join(ROOT, "conf/examples/*"))):
            with self.subTest(config=os.path.basename(path)):
                r = run([BAGD, "--config", path, "--check"], check=False)
                self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
                self.assertIn("configuration OK", r.stdout)

    def test_daemon_refuses_a_broken_config(self):
        path = os.path.join(ROOT, "tests/data/config/hold_time.textproto")
        r = run([BAGD, "--config", path], check=False)
        self.assertEqual(r.returncode, 1)
        self.assertIn(f"{path}:", r.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
