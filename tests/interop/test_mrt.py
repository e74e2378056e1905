"""MRT files read by a real reader (issue 44, docs/mrt.md): FRR (IPv4 and IPv6 sessions, link
bandwidth 1 Gbit/s, transitive) and GoBGP (IPv4, 3 Gbit/s, non-transitive) send routes to bagd;
`bagctl dump mrt` writes the RIB as TABLE_DUMP_V2 and the updates log records what the peers
sent as BGP4MP_ET. Debian's bgpdump 1.6.2 reads both:
- `bgpdump -m`: the prefix and path counts equal `bagctl show rib-summary`; every path's peer,
  AS path and next hop equal `bagctl show routes PREFIX --json`;
- bgpdump 1.6 does not decode extended communities: its verbose output prints the attribute
  as `UNKNOWN_ATTR(flags, 16, length): octets`; the test decodes the link-bandwidth community
  from those octets and compares it with bagctl's `link_bandwidth_bps` and `LB:AS:` text.
A relative FILE is refused by bagctl; the updates file is closed and renamed when a reload
changes the updates template, and read the same way."""
import json
import os
import re
import signal
import struct
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from netlab import Lab, gobgp_lb_toml, wait_until  # noqa: E402

LOCAL_AS = 65000
FRR_V4 = [f"10.61.{i}.0/24" for i in range(6)]
FRR_V6 = ["2001:db8:61::/48", "2001:db8:62::/48"]
GOBGP_V4 = FRR_V4[:3] + ["10.62.0.0/24"]


def frr_config(b4, b6):
    nets4 = "".join(f"  network {p} route-map LB\n" for p in FRR_V4)
    nets6 = "".join(f"  network {p} route-map LB\n" for p in FRR_V6)
    return f"""hostname frr-mrt
route-map LB permit 10
 set extcommunity bandwidth 1000
router bgp 65001
 bgp router-id 10.255.0.2
 no bgp ebgp-requires-policy
 no bgp network import-check
 no bgp default ipv4-unicast
 neighbor {b4} remote-as {LOCAL_AS}
 neighbor {b4} timers connect 1
 neighbor {b6} remote-as {LOCAL_AS}
 neighbor {b6} timers connect 1
 address-family ipv4 unicast
  neighbor {b4} activate
{nets4} exit-address-family
 address-family ipv6 unicast
  neighbor {b6} activate
{nets6} exit-address-family
"""


def bagd_config(f4, f6, g4, updates_path):
    return f"""
router {{ asn: {LOCAL_AS} router_id: "10.255.0.1" ebgp_requires_policy: false }}
neighbors {{ address: "{f4}" remote_as: 65001 timers {{ connect_retry: 1 }} }}
neighbors {{ address: "{f6}" remote_as: 65001 timers {{ connect_retry: 1 }} address_families: IPV6_UNICAST }}
neighbors {{ address: "{g4}" remote_as: 65002 timers {{ connect_retry: 1 }} }}
multipath {{ maximum_paths_ebgp: 4 as_path_relax: true }}
fib {{ backend: BACKEND_NONE }}
mrt {{ updates_interval: 3600 updates_path: "{updates_path}" keep: 5 }}
"""


def bgpdump(*args):
    return subprocess.run(["bgpdump", *args], capture_output=True, text=True, check=True).stdout


def dump_lines(path):
    """`bgpdump -m`: one list of fields per path or message."""
    return [line.split("|") for line in bgpdump("-m", path).splitlines() if line]


def lb_from_verbose(path):
    """{(prefix, peer): (asn, bytes/s float, transitive)} from bgpdump's verbose output, where
    the extended communities are an unknown attribute's octets."""
    out, prefix, peer = {}, None, None
    for line in bgpdump(path).splitlines():
        line = line.strip()
        if line.startswith("PREFIX:"):
            prefix = line.split()[1]
        elif line.startswith("FROM:"):
            peer = line.split()[1]
        m = re.match(r"UNKNOWN_ATTR\(\d+, 16, \d+\):\s*(.*)", line)
        if m and prefix and peer:
            octets = bytes(int(x, 16) for x in m.group(1).split())
            for i in range(0, len(octets) - 7, 8):
                t, sub, asn = octets[i], octets[i + 1], struct.unpack(">H", octets[i + 2:i + 4])[0]
                if sub == 0x04 and t in (0x00, 0x40):
                    value = struct.unpack(">f", octets[i + 4:i + 8])[0]
                    out[(prefix, peer)] = (asn, value, t == 0x00)
    return out


class Mrt(unittest.TestCase):
    def test_dump_and_updates_read_by_bgpdump(self):
        lab = Lab("mrt")
        self.addCleanup(lab.close)
        b, f, g = lab.netns("b"), lab.netns("f"), lab.netns("g")
        bf4, f4, bf6, f6, *_ = lab.link(b, f)
        bg4, g4, *_ = lab.link(b, g)
        updates1 = os.path.join(lab.dir, "updates.%Y%m%d.%H%M%S")
        bagd = lab.start_bagd(b, bagd_config(f4, f6, g4, updates1))
        lab.start_frr(f, frr_config(bf4, bf6), f4, name="frr-mrt")
        gobgp = lab.start_gobgp(g, gobgp_lb_toml(65002, "10.255.0.3", g4, bg4, 375000000))
        for a in (f4, f6, g4):
            bagd.wait_state(a, "Established")
        for p in GOBGP_V4:
            gobgp.cli("global", "rib", "add", p, "origin", "igp", "-a", "ipv4")

        def summary():
            s = json.loads(bagd.ctl("show", "rib-summary", "--json").stdout)
            fam = {x["family"]: x for x in s.get("families", [])}
            return {k: (int(v.get("prefixes", 0)), int(v.get("paths", 0))) for k, v in fam.items()}

        want = {"ipv4-unicast": (len(set(FRR_V4) | set(GOBGP_V4)), len(FRR_V4) + len(GOBGP_V4)),
                "ipv6-unicast": (len(FRR_V6), len(FRR_V6))}
        wait_until(lambda: summary() == want, 30, f"the RIB holds {want}")

        # A relative path is refused by bagctl, before anything reaches bagd.
        rel = bagd.ctl("dump", "mrt", "rib.mrt", check=False)
        self.assertNotEqual(rel.returncode, 0)
        self.assertIn("not an absolute path", rel.stderr)

        rib_path = os.path.join(lab.dir, "rib.mrt")
        answer = json.loads(bagd.ctl("dump", "mrt", rib_path, "--json").stdout)
        self.assertTrue(os.path.exists(rib_path))
        self.assertFalse(os.path.exists(rib_path + ".tmp"))
        self.assertEqual(answer["paths"], sum(p for _, p in want.values()))
        self.assertEqual(answer["prefixes"], sum(n for n, _ in want.values()))
        self.assertEqual(answer["bytes"], os.path.getsize(rib_path))

        lines = dump_lines(rib_path)
        self.assertTrue(all(x[0] == "TABLE_DUMP2" and x[2] == "B" for x in lines), lines[:3])
        by_family = {"ipv4-unicast": [x for x in lines if ":" not in x[5]],
                     "ipv6-unicast": [x for x in lines if ":" in x[5]]}
        got = {fam: (len({x[5] for x in xs}), len(xs)) for fam, xs in by_family.items()}
        self.assertEqual(got, summary())

        lb = lb_from_verbose(rib_path)
        for prefix in sorted({x[5] for x in lines}):
            route = json.loads(bagd.ctl("show", "routes", prefix, "--json").stdout)["routes"][0]
            ours = sorted((p["peer"], p["as_path"], p["next_hop"]) for p in route["paths"])
            theirs = sorted((x[3], x[6], x[8]) for x in lines if x[5] == prefix)
            self.assertEqual(theirs, ours, prefix)
            for p in route["paths"]:
                asn, value, transitive = lb[(prefix, p["peer"])]
                self.assertAlmostEqual(value * 8, p["link_bandwidth_bps"], delta=1e3, msg=prefix)
                text = " ".join(p.get("extended_communities", []))
                self.assertIn(f"LB:{asn}:", text, prefix)
                self.assertEqual(transitive, p["peer"] != g4, prefix)  # FRR 0x00, GoBGP 0x40

        # The updates log: a reload that changes the template closes the file and renames it.
        updates2 = os.path.join(lab.dir, "later.%Y%m%d.%H%M%S")
        with open(os.path.join(lab.dir, "bagd.textproto"), "w") as out:
            out.write(bagd_config(f4, f6, g4, updates2))
        bagd.proc.send_signal(signal.SIGHUP)
        wait_until(lambda: "reloaded" in bagd.log(), 10, "reload logged")

        def first_file():
            names = [n for n in os.listdir(lab.dir) if n.startswith("updates.") and not n.endswith(".tmp")]
            return names[0] if names else None

        name = wait_until(first_file, 10, "the first updates file renamed into place")
        updates = dump_lines(os.path.join(lab.dir, name))
        announced = [x for x in updates if x[0] == "BGP4MP_ET" and x[2] == "A"]
        # Every path of the RIB was announced, with the same peer AS, AS path and next hop (the
        # last announcement of each); the log has more: what the RIB refused, e.g. FRR sending
        # back GoBGP's routes with our AS in the path (loop detection, after the tap).
        last = {(x[3], x[5]): x for x in announced}
        in_rib = {(y[3], y[5]): y for y in lines}
        self.assertLessEqual(set(in_rib), set(last))
        for key, y in in_rib.items():
            self.assertEqual((last[key][4], last[key][6], last[key][8]), (y[4], y[6], y[8]), key)
        for key in set(last) - set(in_rib):
            self.assertIn(str(LOCAL_AS), last[key][6].split(), key)
        # Microsecond timestamps (BGP4MP_ET): "seconds.micros".
        self.assertRegex(announced[0][1], r"^\d+\.\d{6}$")
        # State changes (BGP4MP_STATE_CHANGE_AS4): each neighbor's session reaching
        # Established (6) from OpenConfirm (5), as bgpdump prints them ("STATE|peer|AS|old|new").
        states = [x for x in updates if len(x) >= 7 and x[2] == "STATE"]
        established = {x[3] for x in states if x[5:7] == ["5", "6"]}
        self.assertEqual(established, {f4, f6, g4}, states)

        bagd.proc.send_signal(signal.SIGTERM)
        bagd.proc.wait(15)
        later = [n for n in os.listdir(lab.dir) if n.startswith("later.")]
        self.assertEqual(len(later), 1, os.listdir(lab.dir))
        self.assertFalse(later[0].endswith(".tmp"))
        self.assertIn("mrt: updates file", bagd.log())


if __name__ == "__main__":
    if os.geteuid() != 0:
        print("interop tests need root (network namespaces); skipped")
        sys.exit(77)
    unittest.main(verbosity=2)
