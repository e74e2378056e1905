"""The BAG domain read from a TOML file (tools/fabric/default.toml, docs/fabric.md):
buildings of spines, BAG planes of BAG routers, LAGs between them, and the bagd config of
every router. Pure: no namespaces, no processes (lab.py builds what this describes)."""
import ipaddress
import tomllib
from dataclasses import dataclass, field

RATE_UNITS = {"K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}


def parse_rate(text):
    """'400G' -> 4e11 bits per second (the units of bagd's config, docs/config.md)."""
    t = str(text).strip()
    if t and t[-1].upper() in RATE_UNITS:
        return float(t[:-1]) * RATE_UNITS[t[-1].upper()]
    return float(t)


def format_rate(bps):
    for unit, scale in (("T", 1e12), ("G", 1e9), ("M", 1e6)):
        if bps >= scale:
            v = bps / scale
            return f"{v:.0f}{unit}" if abs(v - round(v)) < 1e-9 else f"{v:g}{unit}"
    return f"{bps:g}"


@dataclass
class Member:
    """One LAG member: `lanes` veth pairs of the lane speed (an 800G member is two 400G lanes,
    so a speed drop to 400G is one lane losing carrier)."""
    speed: float
    lanes: list  # [(spine-side ifname, bag-side ifname)]


@dataclass
class Link:
    index: int
    spine: str
    bag: str
    members: list
    spine_addr: str
    bag_addr: str

    def lanes(self, side):
        i = 0 if side == "spine" else 1
        return [lane[i] for m in self.members for lane in m.lanes]


@dataclass
class Router:
    name: str
    role: str  # "spine" or "bag"
    asn: int
    router_id: str
    building: int = 0
    plane: int = 0
    prefixes: list = field(default_factory=list)  # originated (spines)
    links: list = field(default_factory=list)      # Link objects


class Topology:
    def __init__(self, data, path="<dict>"):
        self.path = path
        self.name = data.get("name", "fabric")
        self.lane_speed = parse_rate(data.get("lane_speed", "400G"))
        self.hold_time = int(data.get("hold_time", 9))
        b, g, ln = data["buildings"], data["bag"], data["links"]
        self.buildings = int(b["count"])
        self.spines_per_building = int(b["spines"])
        self.prefixes_per_building = int(b.get("prefixes", 1))
        self.planes = int(g["planes"])
        self.bag_per_plane = int(g["routers"])
        self.damping = dict(data.get("damping", {}))
        self.damping_off = dict(data.get("damping_off", {"increase_hold_down": 0, "min_change_percent": 0,
                                                         "readvertise_threshold_percent": 0}))
        self.scenarios = list(data.get("scenario", []))
        if self.buildings < 2 or self.spines_per_building < 1 or self.planes < 1 or self.bag_per_plane < 1:
            raise ValueError(f"{path}: need at least 2 buildings, 1 spine, 1 plane and 1 BAG router")
        self.routers = {}
        for bi in range(1, self.buildings + 1):
            for si in range(1, self.spines_per_building + 1):
                name = f"b{bi}s{si}"
                r = Router(name, "spine", 65000 + bi, f"10.255.{bi}.{si}", building=bi,
                           plane=(si - 1) % self.planes + 1)
                r.prefixes = [f"10.{100 + bi}.{k}.0/24" for k in range(self.prefixes_per_building)]
                self.routers[name] = r
        for p in range(1, self.planes + 1):
            for ri in range(1, self.bag_per_plane + 1):
                name = f"p{p}r{ri}"
                self.routers[name] = Router(name, "bag", 65100 + p, f"10.254.{p}.{ri}", plane=p)
        overrides = {(o["spine"], o["bag"]): o["members"] for o in ln.get("override", [])}
        for key in overrides:
            if key[0] not in self.routers or key[1] not in self.routers:
                raise ValueError(f"{path}: links.override names an unknown router: {key}")
        self.links = []
        for s in [r for r in self.routers.values() if r.role == "spine"]:
            for a in [r for r in self.routers.values() if r.role == "bag" and r.plane == s.plane]:
                k = len(self.links)
                net = ipaddress.ip_network("172.16.0.0/16").network_address + 4 * k
                members = []
                for mi, speed in enumerate(overrides.get((s.name, a.name), ln["members"]), 1):
                    bps = parse_rate(speed)
                    n = round(bps / self.lane_speed)
                    if n < 1 or abs(n * self.lane_speed - bps) > 1:
                        raise ValueError(f"{path}: member speed {speed} is not a multiple of lane_speed")
                    members.append(Member(bps, [(f"{a.name}m{mi}x{x}", f"{s.name}m{mi}x{x}") for x in range(n)]))
                link = Link(k, s.name, a.name, members, str(net + 1), str(net + 2))
                self.links.append(link)
                s.links.append(link)
                a.links.append(link)
        for sc in self.scenarios:
            for key in ("spine", "bag"):
                if key in sc and sc[key] not in self.routers:
                    raise ValueError(f"{path}: scenario {sc.get('name')}: unknown router {sc[key]}")

    @classmethod
    def load(cls, path):
        with open(path, "rb") as f:
            return cls(tomllib.load(f), path)

    # -- lookups -----------------------------------------------------------------------
    def link(self, spine, bag):
        for ln in self.links:
            if ln.spine == spine and ln.bag == bag:
                return ln
        raise KeyError(f"no LAG between {spine} and {bag}")

    def spines(self, building=None):
        return [r for r in self.routers.values() if r.role == "spine" and building in (None, r.building)]

    def bags(self):
        return [r for r in self.routers.values() if r.role == "bag"]

    def building_prefixes(self, building):
        return [f"10.{100 + building}.{k}.0/24" for k in range(self.prefixes_per_building)]

    def address_owner(self):
        """next-hop address -> router name (every link end)."""
        out = {}
        for ln in self.links:
            out[ln.spine_addr] = ln.spine
            out[ln.bag_addr] = ln.bag
        return out

    @staticmethod
    def bond_name(peer):
        return peer  # the bond toward a peer is named after it: "p1r1" in b2s1, "b2s1" in p1r1

    # -- bagd configs --------------------------------------------------------------------
    def config(self, name, damping, local_capacity=False):
        """The bagd text config of router `name`. damping: the [damping] or [damping_off]
        table; local_capacity: set local_capacity_source on every neighbor (issue 17 part 1,
        when the binary accepts it)."""
        r = self.routers[name]
        lane = format_rate(self.lane_speed)
        dmp = {k: v for k, v in damping.items() if k in ("decrease_delay", "increase_hold_down", "min_change_percent",
                                                         "max_hold_down", "half_life")}
        if "increase_hold_down" in dmp and "max_hold_down" not in dmp:
            dmp["max_hold_down"] = max(int(dmp["increase_hold_down"]), int(self.damping.get("max_hold_down", 30)))
        readv = {k: v for k, v in damping.items() if k.startswith("readvertise_")}
        for k, v in self.damping.items():  # [damping_off] inherits what it does not switch off
            if k.startswith("readvertise_"):
                readv.setdefault(k, v)
        lines = [f"# {self.name}: {name} ({r.role}), generated by tools/fabric from {self.path}",
                 f'router {{ asn: {r.asn} router_id: "{r.router_id}" hold_time: {self.hold_time} connect_retry: 1 '
                 f"ebgp_requires_policy: false graceful_restart {{ enabled: false }} }}",
                 "multipath { maximum_paths_ebgp: 64 as_path_relax: true }",
                 "damping { " + " ".join(f"{k}: {int(v)}" for k, v in sorted(dmp.items())) + " }"]
        for ln in r.links:
            peer = ln.bag if r.role == "spine" else ln.spine
            lanes = ln.lanes(r.role)
            lines.append(f'capacity_sources {{ name: "{peer}" members: [{", ".join(chr(34) + x + chr(34) for x in lanes)}] '
                         f'member_speed: "{lane}" }}')
        if r.role == "spine":
            # The spine's capacity toward the BAG layer: every lane of every LAG it has.
            lanes = [x for ln in r.links for x in ln.lanes("spine")]
            lines.append(f'capacity_sources {{ name: "uplinks" members: [{", ".join(chr(34) + x + chr(34) for x in lanes)}] '
                         f'member_speed: "{lane}" }}')
            for p in r.prefixes:
                lines.append(f'networks {{ prefix: "{p}" capacity_source: "uplinks" }}')
            lines.append('policies { name: "own" statements { name: "local" conditions { sources: ROUTE_SOURCE_LOCAL } '
                         "actions { disposition: DISPOSITION_ACCEPT } } }")
        else:
            sets = " ".join(f'prefix_sets {{ name: "b{b}" prefixes {{ prefix: "10.{100 + b}.0.0/16" le: 24 }} }}'
                            for b in range(1, self.buildings + 1))
            lines.append(f"defined_sets {{ {sets} }}")
            for b in range(1, self.buildings + 1):
                # A building's own prefixes never go back to it (its spines would drop them as
                # AS-path loops, after counting the UPDATE).
                lines.append(f'policies {{ name: "to-b{b}" statements {{ name: "own" conditions {{ prefix_set {{ set: "b{b}" }} }} '
                             "actions { disposition: DISPOSITION_REJECT } } }")
        for ln in r.links:
            if r.role == "spine":
                peer, addr, local = self.routers[ln.bag], ln.bag_addr, ln.spine_addr
                pol = 'export_policies: ["own"] default_export: DEFAULT_ACTION_REJECT'
            else:
                peer, addr, local = self.routers[ln.spine], ln.spine_addr, ln.bag_addr
                pol = f'export_policies: ["to-b{peer.building}"]'
            lb = " ".join(f"{k}: {int(v)}" for k, v in sorted(readv.items()))
            extra = f' local_capacity_source: "{peer.name}"' if local_capacity else ""
            lines.append(f'neighbors {{ address: "{addr}" remote_as: {peer.asn} description: "{peer.name}" '
                         f'local_address: "{local}" {pol} link_bandwidth {{ {lb} }}{extra} }}')
        return "\n".join(lines) + "\n"
