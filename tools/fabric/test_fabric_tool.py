#!/usr/bin/env python3
"""Unit tests of the fabric tool's pure parts (no root, no namespaces): the topology file,
the generated bagd configs (checked by the real `bagd --check` when it is built), the
rtnetlink decoders and the ideal/measured share arithmetic. ctest: fabric.tool_unit."""
import os
import socket
import struct
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import experiments as ex  # noqa: E402
import kernel  # noqa: E402
from lab import binaries  # noqa: E402
from topology import Topology, format_rate, parse_rate  # noqa: E402

SMALL = {
    "name": "small", "lane_speed": "400G",
    "buildings": {"count": 2, "spines": 2, "prefixes": 2},
    "bag": {"planes": 1, "routers": 2},
    "links": {"members": ["400G", "400G"], "override": [{"spine": "b2s1", "bag": "p1r1", "members": ["800G"]}]},
    "damping": {"increase_hold_down": 5, "min_change_percent": 5, "readvertise_interval": 1},
}


class FakeFabric:
    """What the share arithmetic reads from a Fabric: the topology, link capacities, the lost."""

    def __init__(self, topo, weights=None):
        self.topo = topo
        self.cap = {(ln.spine, ln.bag): sum(m.speed for m in ln.members) for ln in topo.links}
        self.killed = set()
        self.weights = weights or {}

    def alive(self):
        return [n for n in self.topo.routers if n not in self.killed]

    def link_capacity(self, spine, bag):
        return 0.0 if spine in self.killed or bag in self.killed else self.cap[(spine, bag)]

    def kernel_weights(self):
        return self.weights


class TopologyTest(unittest.TestCase):
    def test_rates(self):
        self.assertEqual(parse_rate("400G"), 4e11)
        self.assertEqual(parse_rate("1.6T"), 1.6e12)
        self.assertEqual(format_rate(6.4e12), "6.4T")
        self.assertEqual(format_rate(8e11), "800G")

    def test_default_topology(self):
        t = Topology.load(os.path.join(HERE, "default.toml"))
        self.assertGreaterEqual(len(t.routers), 16)
        self.assertEqual(len(t.links), 32)
        # every spine has one LAG to each BAG router of its plane, and an 800G member is 2 lanes
        for s in t.spines():
            self.assertEqual(sorted(ln.bag for ln in s.links), sorted(a.name for a in t.bags() if a.plane == s.plane))
        ln = t.link("b2s2", "p2r1")
        self.assertEqual([len(m.lanes) for m in ln.members], [2, 2])
        self.assertEqual(len({ln.spine_addr for ln in t.links}), 32)
        names = [x for ln in t.links for x in ln.lanes("spine") + ln.lanes("bag")]
        self.assertTrue(all(len(n) <= 15 for n in names), "interface names fit IFNAMSIZ")
        self.assertEqual([s["name"] for s in t.scenarios],
                         ["member-down", "half-lag", "speed-800-400", "flap", "router-lost"])

    def test_bad_member_speed(self):
        bad = dict(SMALL, links={"members": ["500G"]})
        with self.assertRaisesRegex(ValueError, "multiple of lane_speed"):
            Topology(bad)

    def test_unknown_router_in_override(self):
        bad = dict(SMALL, links={"members": ["400G"], "override": [{"spine": "b9s9", "bag": "p1r1", "members": []}]})
        with self.assertRaisesRegex(ValueError, "unknown router"):
            Topology(bad)

    def test_configs(self):
        t = Topology(SMALL)
        spine = t.config("b1s1", t.damping)
        self.assertIn('networks { prefix: "10.101.0.0/24" capacity_source: "uplinks" }', spine)
        self.assertIn('capacity_sources { name: "uplinks" members: ["p1r1m1x0", "p1r1m2x0", "p1r2m1x0", "p1r2m2x0"]', spine)
        self.assertIn("readvertise_interval: 1", spine)
        off = t.config("p1r1", t.damping_off)
        self.assertIn("increase_hold_down: 0", off)
        self.assertIn("min_change_percent: 0", off)
        self.assertIn("readvertise_threshold_percent: 0", off)
        self.assertIn("readvertise_interval: 1", off, "damping off keeps the re-advertisement interval")
        self.assertIn('export_policies: ["to-b2"]', off)
        self.assertNotIn("local_capacity_source", off)
        self.assertIn('local_capacity_source: "b1s1"', t.config("p1r1", t.damping, local_capacity=True))

    def test_configs_pass_bagd_check(self):
        bagd, _ = binaries()
        if not os.path.exists(bagd):
            self.skipTest(f"no bagd at {bagd}")
        t = Topology.load(os.path.join(HERE, "default.toml"))
        with tempfile.TemporaryDirectory() as d:
            for name in ("b1s1", "p2r1"):
                for damping in (t.damping, t.damping_off):
                    path = os.path.join(d, f"{name}.textproto")
                    with open(path, "w") as f:
                        f.write(t.config(name, damping))
                    r = subprocess.run([bagd, "--config", path, "--check"], capture_output=True, text=True)
                    self.assertEqual(r.returncode, 0, r.stdout + r.stderr)


class NetlinkTest(unittest.TestCase):
    def test_group_with_16_bit_weights(self):
        def attr(typ, data):
            return struct.pack("HH", 4 + len(data), typ) + data + b"\0" * ((4 - len(data) % 4) % 4)
        grp = struct.pack("IBBH", 7, 0x2B, 0x01, 0) + struct.pack("IBBH", 8, 0, 0, 0)  # 300 and 1
        payload = struct.pack("BBBBI", socket.AF_UNSPEC, 0, 186, 0, 0) + attr(kernel.NHA_ID, struct.pack("I", 42)) + \
            attr(kernel.NHA_GROUP, grp)
        self.assertEqual(kernel.parse_nexthop(payload), (42, 186, {"group": [(7, 300), (8, 1)]}))

    def test_route(self):
        payload = struct.pack("BBBBBBBBI", socket.AF_INET, 24, 0, 0, 254, 186, 0, 1, 0) + \
            struct.pack("HH", 8, kernel.RTA_DST) + socket.inet_aton("10.102.3.0") + \
            struct.pack("HH", 8, kernel.RTA_NH_ID) + struct.pack("I", 42)
        self.assertEqual(kernel.parse_route(payload), ("10.102.3.0/24", 186, 254, 42))


class SharesTest(unittest.TestCase):
    def setUp(self):
        self.t = Topology(SMALL)
        self.f = FakeFabric(self.t)
        self.addr = {}
        for ln in self.t.links:
            self.addr[ln.spine] = ln.spine_addr
            self.addr[ln.bag] = ln.bag_addr

    def gw(self, spine, bag, side):
        ln = self.t.link(spine, bag)
        return ln.bag_addr if side == "bag" else ln.spine_addr

    def test_ideal_bottleneck(self):
        # b1s1 - p1r1 loses one of its two members: at b1s1, p1r1 gets min(400G, D) = 400G
        self.f.cap[("b1s1", "p1r1")] = 4e11
        ideal = ex.ideal_next_hop_shares(self.f)
        self.assertAlmostEqual(ideal[("b1s1", 2)]["p1r1"], 1 / 3)
        self.assertAlmostEqual(ideal[("p1r1", 2)]["b2s1"], 0.5)
        # the BAG router's own LAG toward a spine is the bottleneck there
        self.f.cap[("b2s1", "p1r1")] = 4e11
        ideal = ex.ideal_next_hop_shares(self.f)
        self.assertAlmostEqual(ideal[("p1r1", 2)]["b2s1"], 1 / 3)
        # a lost BAG router is no next hop
        self.f.killed.add("p1r2")
        ideal = ex.ideal_next_hop_shares(self.f)
        self.assertEqual(ideal[("b1s1", 2)], {"p1r1": 1.0})

    def test_measured_product_and_error(self):
        w = {}
        for s in self.t.spines(1):
            w[s.name] = {p: {self.gw(s.name, "p1r1", "bag"): 1, self.gw(s.name, "p1r2", "bag"): 1}
                         for p in self.t.building_prefixes(2)}
        for a in ("p1r1", "p1r2"):
            w[a] = {p: {self.gw("b2s1", a, "spine"): 3, self.gw("b2s2", a, "spine"): 1} for p in self.t.building_prefixes(2)}
        self.f.weights = w
        res = ex.proportionality(self.f)
        b12 = [r for r in res["rows"] if r["building"] == (1, 2)]
        self.assertEqual(len(b12), 2 * 2 * 2 * 2)  # source spines x BAG routers x destination spines x prefixes
        one = next(r for r in b12 if r["src"] == "b1s1" and r["bag"] == "p1r1" and r["dst"] == "b2s1")
        self.assertAlmostEqual(one["measured"], 0.5 * 0.75)
        self.assertAlmostEqual(one["ideal"], 0.5 * 0.5)
        self.assertAlmostEqual(res["pairs"][(1, 2)]["worst"]["error"], 0.125)

    def test_changed_routers(self):
        before = {("p1r1", 2): {"b2s1": 0.5, "b2s2": 0.5}, ("b1s1", 2): {"p1r1": 0.5, "p1r2": 0.5}}
        after = {("p1r1", 2): {"b2s1": 0.49, "b2s2": 0.51}, ("b1s1", 2): {"p1r1": 0.4, "p1r2": 0.6}}
        self.assertEqual(ex.changed_routers(before, after, 0.05), {"b1s1"})
        self.assertEqual(ex.changed_routers(before, after, 0.0), {"b1s1", "p1r1"})


class ComeupTest(unittest.TestCase):
    """The share error over time after coming up (issue 40 part 4): its pure helpers."""

    ROW = {"src": "b1s1", "bag": "p1r1", "dst": "b2s1", "prefix": "10.102.0.0/24", "measured": 0.25, "ideal": 0.5263}

    def series(self):
        return [(0.1, 0.27, self.ROW, 18), (0.6, 0.27, self.ROW, None), (1.1, 0.01, self.ROW, 0),
                (2.05, 0.03, self.ROW, 1), (3.0, 0.0, self.ROW, 0), (4.0, 0.015, self.ROW, 0)]

    def test_error_at_and_held_at(self):
        s = self.series()
        self.assertEqual(ex.error_at(s, 2)[1], 0.03)
        self.assertEqual(ex.error_at(s, 0)[0], 0.1)
        self.assertIsNone(ex.error_at(s, 5))
        self.assertEqual(ex.held_at(s, 0.5), 0)  # the first sample at or after with a count
        self.assertEqual(ex.held_at(s, 0), 18)

    def test_right_from_is_the_last_good_run(self):
        s = self.series()
        self.assertEqual(ex.right_from(s, 0.02), 3.0)  # good at 1.1, bad again at 2.05
        self.assertIsNone(ex.right_from(s + [(5.0, 0.1, self.ROW, 2)], 0.02))
        self.assertEqual(ex.right_from([(0.0, 0.0, None, 0)], 0.02), 0.0)

    def test_comeup_table(self):
        t = ex.comeup_table(self.series(), marks=(0, 2, 10))
        self.assertIn("| 0.1 | 27.00 % | b1s1 → p1r1 → b2s1 (10.102.0.0/24) | 25.00 % | 52.63 % | 18 |", t)
        self.assertIn("| 2.0 | 3.00 % |", t)
        self.assertNotIn("| 10", t)  # past the end of the series

    def test_comeup_topology(self):
        t = Topology.load(os.path.join(HERE, "comeup.toml"))
        self.assertEqual(len(t.routers), 10)
        self.assertEqual({len(ln.members) for ln in t.links}, {3, 5, 8})
        self.assertEqual(t.damping["increase_hold_down"], 30)


if __name__ == "__main__":
    unittest.main(verbosity=2)
