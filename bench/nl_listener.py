#!/usr/bin/env python3
"""Netlink listener for bench/reweight_bench.py: run inside the FIB's network namespace, it
subscribes to RTNLGRP_NEXTHOP and RTNLGRP_IPV4_ROUTE and writes JSON lines to stdout, each
stamped with CLOCK_MONOTONIC at receipt (time.monotonic(), the clock update_blaster uses):

  {"kind":"nh","t":T,"op":"new"|"del","id":N,"gw":"10.0.1.2"}            a single next hop
  {"kind":"nh","t":T,"op":"new"|"del","id":N,"group":[[member_id,weight],...]}
  {"kind":"state","t":T,"routes":R,"by_nh":{"id":count},"route_msgs":M,"last_route_t":T2}

Routes (protocol --protocol, default 186) are not printed one by one: the listener keeps
prefix -> nexthop id and prints a state line whenever --every seconds passed since the last
one and something changed (and at exit, SIGTERM). Exits with 3 if the kernel reported that
messages were lost (ENOBUFS), after printing {"kind":"overrun","t":T}.

usage: nl_listener.py [--protocol 186] [--every 0.1]
"""
import argparse
import errno
import json
import signal
import socket
import struct
import sys
import time

NETLINK_ROUTE = 0
SOL_NETLINK = 270
NETLINK_ADD_MEMBERSHIP = 1
RTNLGRP_IPV4_ROUTE = 7
RTNLGRP_NEXTHOP = 32
RTM_NEWROUTE, RTM_DELROUTE = 24, 25
RTM_NEWNEXTHOP, RTM_DELNEXTHOP = 104, 105
NHA_ID, NHA_GROUP, NHA_GATEWAY = 1, 2, 6
RTA_DST, RTA_NH_ID = 1, 30


def attrs(buf, off, end):
    while off + 4 <= end:
        alen, atype = struct.unpack_from("=HH", buf, off)
        if alen < 4:
            return
        yield atype & 0x3FFF, off + 4, off + alen
        off += (alen + 3) & ~3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--protocol", type=int, default=186)
    ap.add_argument("--every", type=float, default=0.1)
    args = ap.parse_args()
    s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_ROUTE)
    try:
        s.setsockopt(socket.SOL_SOCKET, 33, 512 << 20)  # SO_RCVBUFFORCE (root)
    except OSError:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 512 << 20)
    s.bind((0, 1 << (RTNLGRP_IPV4_ROUTE - 1)))
    s.setsockopt(SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, RTNLGRP_NEXTHOP)
    routes = {}  # (dst, len) -> nh id
    by_nh = {}
    state = {"msgs": 0, "last": 0.0, "printed_msgs": -1, "printed_t": 0.0}
    out = sys.stdout

    def emit_state(now):
        out.write(json.dumps({"kind": "state", "t": now, "routes": len(routes),
                              "by_nh": {str(k): v for k, v in by_nh.items() if v},
                              "route_msgs": state["msgs"], "last_route_t": state["last"]}) + "\n")
        out.flush()
        state["printed_msgs"], state["printed_t"] = state["msgs"], now

    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    print(json.dumps({"kind": "ready", "t": time.monotonic()}), flush=True)
    s.settimeout(args.every)
    buf = bytearray(1 << 20)
    while not stop:
        try:
            n = s.recv_into(buf)
        except socket.timeout:
            n = 0
        except InterruptedError:
            continue
        except OSError as e:
            if e.errno == errno.ENOBUFS:
                print(json.dumps({"kind": "overrun", "t": time.monotonic()}), flush=True)
                sys.exit(3)
            raise
        now = time.monotonic()
        off = 0
        while off + 16 <= n:
            mlen, mtype = struct.unpack_from("=IH", buf, off)
            if mlen < 16:
                break
            body, end = off + 16, off + mlen
            if mtype in (RTM_NEWROUTE, RTM_DELROUTE):
                family, dst_len = buf[body], buf[body + 1]
                if family == socket.AF_INET and buf[body + 5] == args.protocol:
                    dst, nh = 0, 0
                    for t, a, b in attrs(buf, body + 12, end):
                        if t == RTA_DST:
                            dst = struct.unpack_from(">I", buf, a)[0]
                        elif t == RTA_NH_ID:
                            nh = struct.unpack_from("=I", buf, a)[0]
                    key = (dst << 8) | dst_len
                    old = routes.get(key)
                    if old is not None:
                        by_nh[old] -= 1
                    if mtype == RTM_NEWROUTE:
                        routes[key] = nh
                        by_nh[nh] = by_nh.get(nh, 0) + 1
                    elif old is not None:
                        del routes[key]
                    state["msgs"] += 1
                    state["last"] = now
            elif mtype in (RTM_NEWNEXTHOP, RTM_DELNEXTHOP):
                ev = {"kind": "nh", "t": now, "op": "new" if mtype == RTM_NEWNEXTHOP else "del"}
                for t, a, b in attrs(buf, body + 8, end):
                    if t == NHA_ID:
                        ev["id"] = struct.unpack_from("=I", buf, a)[0]
                    elif t == NHA_GROUP:
                        g = []
                        for k in range(a, b - 7, 8):
                            mid, w, wh = struct.unpack_from("=IBB", buf, k)
                            g.append([mid, ((wh << 8) | w) + 1])
                        ev["group"] = g
                    elif t == NHA_GATEWAY and b - a == 4:
                        ev["gw"] = socket.inet_ntoa(bytes(buf[a:b]))
                out.write(json.dumps(ev) + "\n")
                out.flush()
            off += (mlen + 3) & ~3
        if state["msgs"] != state["printed_msgs"] and now - state["printed_t"] >= args.every:
            emit_state(now)
    emit_state(time.monotonic())


if __name__ == "__main__":
    main()
