"""The kernel FIB of every router, read over rtnetlink directly (iproute2 6.1 prints nexthop
weights above 256 wrongly): one NETLINK_ROUTE socket per namespace, opened inside it with
setns(2) and kept, for dumps (nexthops, routes) and for the notifications that count the
kernel operations and time the last change."""
import ctypes
import os
import select
import socket
import struct
import threading
import time

NETLINK_ADD_MEMBERSHIP, SOL_NETLINK = 1, 270
RTNLGRP_IPV4_ROUTE, RTNLGRP_NEXTHOP = 7, 32
RTM_NEWROUTE, RTM_DELROUTE, RTM_GETROUTE = 24, 25, 26
RTM_NEWNEXTHOP, RTM_DELNEXTHOP, RTM_GETNEXTHOP = 104, 105, 106
NLM_F_REQUEST, NLM_F_DUMP = 0x1, 0x300
NLMSG_ERROR, NLMSG_DONE = 2, 3
NHA_ID, NHA_GROUP, NHA_GATEWAY = 1, 2, 6
RTA_DST, RTA_TABLE, RTA_NH_ID = 1, 15, 30
BAGD_PROTOCOL = 186


def _attrs(buf, off, end):
    while off + 4 <= end:
        ln, typ = struct.unpack_from("HH", buf, off)
        if ln < 4:
            break
        yield typ & 0x3FFF, buf[off + 4:off + ln]
        off += (ln + 3) & ~3


def parse_nexthop(payload):
    """nhmsg + attributes -> (id, protocol, {"group": [(id, weight)]} or {"gateway": addr})."""
    family, _scope, proto, _r, _flags = struct.unpack_from("BBBBI", payload, 0)
    nh_id, info = None, {}
    for typ, val in _attrs(payload, 8, len(payload)):
        if typ == NHA_ID:
            nh_id = struct.unpack("I", val[:4])[0]
        elif typ == NHA_GROUP:
            grp = []
            for i in range(0, len(val) - 7, 8):
                mid, w_lo, w_hi, _ = struct.unpack_from("IBBH", val, i)
                grp.append((mid, ((w_hi << 8) | w_lo) + 1))  # Linux 6.12+: 16-bit weights
            info["group"] = grp
        elif typ == NHA_GATEWAY:
            info["gateway"] = socket.inet_ntop(socket.AF_INET if len(val) == 4 else socket.AF_INET6, val)
    return nh_id, proto, info


def parse_route(payload):
    """rtmsg + attributes -> (prefix, protocol, table, nh_id)."""
    family, dst_len, _src, _tos, table, proto, _scope, _type, _flags = struct.unpack_from("BBBBBBBBI", payload, 0)
    dst, nh_id = None, None
    for typ, val in _attrs(payload, 12, len(payload)):
        if typ == RTA_DST:
            dst = socket.inet_ntop(socket.AF_INET if family == socket.AF_INET else socket.AF_INET6, val)
        elif typ == RTA_TABLE:
            table = struct.unpack("I", val[:4])[0]
        elif typ == RTA_NH_ID:
            nh_id = struct.unpack("I", val[:4])[0]
    prefix = f"{dst}/{dst_len}" if dst else f"0.0.0.0/{dst_len}"
    return prefix, proto, table, nh_id


def _messages(buf):
    off = 0
    while off + 16 <= len(buf):
        ln, typ, _flags, _seq, _pid = struct.unpack_from("IHHII", buf, off)
        if ln < 16:
            break
        yield typ, buf[off + 16:off + ln]
        off += (ln + 3) & ~3


CLONE_NEWNET = 0x40000000
_libc = ctypes.CDLL(None, use_errno=True)


def _setns(fd):
    # os.setns is Python 3.12; Debian 12 has 3.11
    if _libc.setns(fd, CLONE_NEWNET) != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))


def open_in_netns(ns, groups=()):
    """A NETLINK_ROUTE socket created inside namespace `ns` (it stays there)."""
    own = os.open("/proc/self/ns/net", os.O_RDONLY)
    target = os.open(f"/run/netns/{ns}", os.O_RDONLY)
    try:
        _setns(target)
        try:
            s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
            s.bind((0, 0))
            for g in groups:
                s.setsockopt(SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, g)
        finally:
            _setns(own)
    finally:
        os.close(own)
        os.close(target)
    return s


class KernelView:
    """Dumps of one namespace's nexthops and bagd's routes."""

    def __init__(self, ns):
        self.ns = ns
        self.sock = open_in_netns(ns)
        self.seq = 0

    def _dump(self, msg_type, body):
        self.seq += 1
        hdr = struct.pack("IHHII", 16 + len(body), msg_type, NLM_F_REQUEST | NLM_F_DUMP, self.seq, 0)
        self.sock.send(hdr + body)
        out = []
        while True:
            data = self.sock.recv(1 << 20)
            for typ, payload in _messages(data):
                if typ == NLMSG_DONE:
                    return out
                if typ == NLMSG_ERROR:
                    err = struct.unpack_from("i", payload, 0)[0]
                    if err:
                        raise OSError(-err, f"netlink dump in {self.ns}")
                    return out
                out.append((typ, payload))

    def nexthops(self):
        res = {}
        for _typ, payload in self._dump(RTM_GETNEXTHOP, struct.pack("BBBBI", 0, 0, 0, 0, 0)):
            nh_id, _proto, info = parse_nexthop(payload)
            res[nh_id] = info
        return res

    def routes(self):
        res = {}
        for _typ, payload in self._dump(RTM_GETROUTE, struct.pack("BBBBBBBBI", socket.AF_INET, 0, 0, 0, 0, 0, 0, 0, 0)):
            prefix, proto, table, nh_id = parse_route(payload)
            if proto == BAGD_PROTOCOL and table == 254:
                res[prefix] = nh_id
        return res

    def weights(self):
        """prefix -> {gateway: weight} of every bagd route (a route over one next hop: weight 1)."""
        nhs = self.nexthops()
        out = {}
        for prefix, nh_id in self.routes().items():
            info = nhs.get(nh_id, {})
            if "group" in info:
                out[prefix] = {nhs.get(m, {}).get("gateway", f"nh{m}"): w for m, w in info["group"]}
            elif "gateway" in info:
                out[prefix] = {info["gateway"]: 1}
        return out

    def close(self):
        self.sock.close()


class KernelMonitor:
    """Every kernel change of bagd's objects in every namespace, timestamped: nexthop group
    and single-nexthop operations (RTM_NEWNEXTHOP/RTM_DELNEXTHOP) and route operations
    (RTM_NEWROUTE/RTM_DELROUTE of protocol bgp). A thread reads the sockets."""

    def __init__(self, namespaces):
        self.socks = {open_in_netns(ns, (RTNLGRP_NEXTHOP, RTNLGRP_IPV4_ROUTE)): router
                      for router, ns in namespaces.items()}
        self.events = []  # (monotonic time, router, kind, op, detail)
        self.lock = threading.Lock()
        self.stop_r, self.stop_w = os.pipe()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        socks = list(self.socks)
        while True:
            ready, _, _ = select.select(socks + [self.stop_r], [], [])
            now = time.monotonic()
            for s in ready:
                if s == self.stop_r:
                    return
                try:
                    data = s.recv(1 << 20)
                except OSError:  # ENOBUFS: counted as lost; the dumps stay authoritative
                    with self.lock:
                        self.events.append((now, self.socks[s], "lost", "lost", None))
                    continue
                router = self.socks[s]
                for typ, payload in _messages(data):
                    ev = None
                    if typ in (RTM_NEWNEXTHOP, RTM_DELNEXTHOP):
                        nh_id, proto, info = parse_nexthop(payload)
                        if proto == BAGD_PROTOCOL:
                            kind = "group" if "group" in info else "nexthop"
                            ev = (now, router, kind, "new" if typ == RTM_NEWNEXTHOP else "del", (nh_id, info))
                    elif typ in (RTM_NEWROUTE, RTM_DELROUTE):
                        prefix, proto, table, nh_id = parse_route(payload)
                        if proto == BAGD_PROTOCOL:
                            ev = (now, router, "route", "new" if typ == RTM_NEWROUTE else "del", (prefix, nh_id))
                    if ev:
                        with self.lock:
                            self.events.append(ev)

    def since(self, t0):
        with self.lock:
            return [e for e in self.events if e[0] >= t0]

    def last_time(self):
        with self.lock:
            return self.events[-1][0] if self.events else 0.0

    def close(self):
        os.write(self.stop_w, b"x")
        self.thread.join(5)
        for s in self.socks:
            s.close()
        os.close(self.stop_r)
        os.close(self.stop_w)
