#!/usr/bin/env python3
"""Passive BGP speaker that records what a peer sends (test-vector capture).

Listens on ADDR:PORT (IPv4 or IPv6), accepts one peer (a TCP connection
that closes before sending its OPEN is skipped and the next one accepted),
reads the peer's OPEN, answers with its own OPEN and a KEEPALIVE, then
records every BGP message the peer sends (its OPEN included), answering
KEEPALIVEs, until

  --until eor           End-of-RIB was seen for every negotiated family
  --until notification  the peer sent a NOTIFICATION (or closed the session)

or the timeout expires.  The messages are then written to --out, one per line
as lowercase hex including the 16-byte marker, after '#' comment lines
(--comment lines first, then what the recorder negotiated and a
'# context: ...' line giving what a decoder needs).

The recorder's OPEN: version 4, --local-as (AS_TRANS 23456 in the 2-octet
field when it is above 65535), hold time 90, --router-id, capabilities
MP IPv4/unicast, MP IPv6/unicast, route refresh, 4-octet AS, Graceful
Restart without families (FRR 8.4 sends End-of-RIB only to peers that
advertise it; --no-graceful-restart drops it), and on request Extended Next
Hop IPv4/unicast over IPv6 (--ext-nexthop) and ADD-PATH receive
(--add-path ipv4,ipv6).  Negotiated families are the intersection of the MP
capabilities.  The '# context:' line says what a decoder of the recorded
messages needs: four-octet-as (both sides sent capability 65), add-path
(families where the peer may send and the recorder receives) and
ext-nexthop (both sides advertised IPv4/unicast over IPv6).

The TCP stream is split on the BGP length field only: the recorder never
reads past the end of the message it is parsing.

Standard library only.  Exit status: 0 = file written (a timeout still
writes the file and exits 0 unless --strict is given, then 3), 2 = no peer /
protocol error, nothing written.
"""

import argparse
import ipaddress
import os
import select
import socket
import struct
import sys
import time

MARKER = b"\xff" * 16
MSG_OPEN, MSG_UPDATE, MSG_NOTIFICATION, MSG_KEEPALIVE, MSG_ROUTE_REFRESH = 1, 2, 3, 4, 5
MSG_NAMES = {1: "OPEN", 2: "UPDATE", 3: "NOTIFICATION", 4: "KEEPALIVE", 5: "ROUTE-REFRESH"}
AS_TRANS = 23456
MAX_LEN = 4096  # we never advertise the Extended Message capability

CAP_MP, CAP_RR, CAP_EXT_NH, CAP_GR, CAP_AS4, CAP_ADDPATH = 1, 2, 5, 64, 65, 69
FAMILY_NAMES = {(1, 1): "ipv4", (2, 1): "ipv6"}


def fam_name(afi, safi):
    return FAMILY_NAMES.get((afi, safi), "afi%d-safi%d" % (afi, safi))


class ProtocolError(Exception):
    pass


class Timeout(Exception):
    pass


def log(msg):
    sys.stderr.write("bgp_recorder: %s\n" % msg)
    sys.stderr.flush()


# --------------------------------------------------------------------------
# framing

class Conn:
    def __init__(self, sock, deadline):
        self.sock = sock
        self.deadline = deadline
        self.closed = False

    def recv_exact(self, n):
        """Read exactly n bytes (never more).  Returns None on EOF at a
        message boundary; raises on EOF inside a message or on timeout."""
        buf = bytearray()
        while len(buf) < n:
            left = self.deadline - time.monotonic()
            if left <= 0:
                raise Timeout()
            r, _, _ = select.select([self.sock], [], [], min(left, 1.0))
            if not r:
                continue
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                self.closed = True
                if not buf:
                    return None
                raise ProtocolError("connection closed inside a message (%d of %d bytes)" % (len(buf), n))
            buf += chunk
        return bytes(buf)

    def read_message(self):
        """Return one whole BGP message (header included) or None on EOF."""
        hdr = self.recv_exact(19)
        if hdr is None:
            return None
        if hdr[:16] != MARKER:
            raise ProtocolError("bad marker: %s" % hdr[:16].hex())
        length, mtype = struct.unpack("!HB", hdr[16:19])
        if length < 19 or length > MAX_LEN:
            raise ProtocolError("bad length %d" % length)
        body = b""
        if length > 19:
            body = self.recv_exact(length - 19)
            if body is None:
                raise ProtocolError("connection closed after header")
        return hdr + body

    def send(self, data):
        self.sock.sendall(data)


def bgp_message(mtype, body=b""):
    return MARKER + struct.pack("!HB", 19 + len(body), mtype) + body


# --------------------------------------------------------------------------
# OPEN

def build_open(local_as, router_id, hold_time, ext_nexthop, add_path_families, graceful_restart):
    caps = []

    def cap(code, value=b""):
        caps.append(struct.pack("!BB", code, len(value)) + value)

    cap(CAP_MP, struct.pack("!HBB", 1, 0, 1))   # IPv4 unicast
    cap(CAP_MP, struct.pack("!HBB", 2, 0, 1))   # IPv6 unicast
    cap(CAP_RR)                                 # route refresh (RFC 2918)
    cap(CAP_AS4, struct.pack("!I", local_as))   # 4-octet AS (RFC 6793)
    if ext_nexthop:                             # RFC 8950: IPv4/unicast over IPv6 NH
        cap(CAP_EXT_NH, struct.pack("!HHH", 1, 1, 2))
    if graceful_restart:
        # RFC 4724 with no <AFI,SAFI>: "I understand End-of-RIB", no state kept.
        # FRR 8.4 sends End-of-RIB only to peers that advertised this.
        cap(CAP_GR, struct.pack("!H", 120))
    if add_path_families:                       # RFC 7911, receive only (1)
        cap(CAP_ADDPATH, b"".join(struct.pack("!HBB", afi, safi, 1)
                                  for afi, safi in add_path_families))
    # one capability per optional parameter (RFC 5492 allows either form)
    params = b"".join(struct.pack("!BB", 2, len(c)) + c for c in caps)
    my_as2 = local_as if local_as <= 0xFFFF else AS_TRANS
    body = struct.pack("!BHH4sB", 4, my_as2, hold_time,
                       ipaddress.IPv4Address(router_id).packed, len(params)) + params
    return bgp_message(MSG_OPEN, body)


def parse_open(msg):
    body = msg[19:]
    if len(body) < 10:
        raise ProtocolError("OPEN too short")
    version, as2, hold, bgp_id, plen = struct.unpack("!BHH4sB", body[:10])
    params = body[10:10 + plen]
    if len(params) != plen:
        raise ProtocolError("OPEN optional parameters truncated")
    caps = []  # list of (code, value)
    i = 0
    while i < len(params):
        ptype, pl = params[i], params[i + 1]
        pval = params[i + 2:i + 2 + pl]
        i += 2 + pl
        if ptype != 2:
            continue
        j = 0
        while j < len(pval):
            code, cl = pval[j], pval[j + 1]
            caps.append((code, pval[j + 2:j + 2 + cl]))
            j += 2 + cl
    info = {
        "version": version, "as2": as2, "hold": hold,
        "bgp_id": str(ipaddress.IPv4Address(bgp_id)), "caps": caps,
        "mp": [], "as4": None, "ext_nh": [], "add_path": {}, "other": [],
    }
    for code, val in caps:
        if code == CAP_MP and len(val) == 4:
            afi, _res, safi = struct.unpack("!HBB", val)
            info["mp"].append((afi, safi))
        elif code == CAP_AS4 and len(val) == 4:
            info["as4"] = struct.unpack("!I", val)[0]
        elif code == CAP_EXT_NH:
            for k in range(0, len(val) - len(val) % 6, 6):
                info["ext_nh"].append(struct.unpack("!HHH", val[k:k + 6]))
        elif code == CAP_ADDPATH:
            for k in range(0, len(val) - len(val) % 4, 4):
                afi, safi, sr = struct.unpack("!HBB", val[k:k + 4])
                info["add_path"][(afi, safi)] = sr
        else:
            info["other"].append(code)
    return info


# --------------------------------------------------------------------------
# UPDATE inspection (only as much as needed to find End-of-RIB / withdraws)

def inspect_update(msg):
    """Return (eor_family or None, withdraw_count_estimate)."""
    body = msg[19:]
    if len(body) < 4:
        raise ProtocolError("UPDATE too short")
    wlen = struct.unpack("!H", body[:2])[0]
    alen = struct.unpack("!H", body[2 + wlen:4 + wlen])[0]
    attrs = body[4 + wlen:4 + wlen + alen]
    nlri = body[4 + wlen + alen:]
    if wlen == 0 and alen == 0 and not nlri:
        return (1, 1), 0
    withdraws = 1 if wlen else 0
    # walk attributes
    i = 0
    mp_unreach = None
    n_attrs = 0
    while i < len(attrs):
        flags, code = attrs[i], attrs[i + 1]
        if flags & 0x10:
            alen_ = struct.unpack("!H", attrs[i + 2:i + 4])[0]
            val = attrs[i + 4:i + 4 + alen_]
            i += 4 + alen_
        else:
            alen_ = attrs[i + 2]
            val = attrs[i + 3:i + 3 + alen_]
            i += 3 + alen_
        n_attrs += 1
        if code == 15:
            mp_unreach = val
    if mp_unreach is not None:
        afi, safi = struct.unpack("!HB", mp_unreach[:3])
        if len(mp_unreach) > 3:
            withdraws += 1
        elif wlen == 0 and n_attrs == 1 and not nlri:
            return (afi, safi), 0
    return None, withdraws


# --------------------------------------------------------------------------

def write_status(path, st):
    if not path:
        return
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(" ".join("%s=%s" % kv for kv in st.items()) + "\n")
    os.replace(tmp, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--listen", required=True, help="local address to listen on (IPv4 or IPv6)")
    ap.add_argument("--port", type=int, default=179)
    ap.add_argument("--local-as", type=int, required=True)
    ap.add_argument("--router-id", required=True)
    ap.add_argument("--hold-time", type=int, default=90)
    ap.add_argument("--ext-nexthop", action="store_true",
                    help="advertise Extended Next Hop for IPv4/unicast over IPv6 (RFC 8950)")
    ap.add_argument("--add-path", default="",
                    help="advertise ADD-PATH receive for these families, comma list of ipv4,ipv6")
    ap.add_argument("--no-graceful-restart", dest="graceful_restart", action="store_false",
                    help="do not advertise the Graceful Restart capability (restart time 120, "
                    "no families; advertised by default so that peers send End-of-RIB)")
    ap.add_argument("--until", choices=("eor", "notification"), default="eor")
    ap.add_argument("--timeout", type=float, default=60.0, help="overall seconds")
    ap.add_argument("--strict", action="store_true", help="exit 3 when stopped by the timeout")
    ap.add_argument("--out", required=True)
    ap.add_argument("--comment", action="append", default=[], help="header comment line (repeatable)")
    ap.add_argument("--comment-file", help="file whose lines become header comments; read when the "
                    "output is written, after the --comment lines")
    ap.add_argument("--status-file", help="rewritten after every message (for scripts to poll)")
    ap.add_argument("--ready-file", help="created once the socket listens")
    args = ap.parse_args()

    if not 1 <= args.local_as <= 0xFFFFFFFF:
        ap.error("bad --local-as")
    add_path_fams = []
    for name in filter(None, (s.strip() for s in args.add_path.split(","))):
        rev = {v: k for k, v in FAMILY_NAMES.items()}
        if name not in rev:
            ap.error("unknown add-path family %r" % name)
        add_path_fams.append(rev[name])

    deadline = time.monotonic() + args.timeout
    addr = ipaddress.ip_address(args.listen)
    fam = socket.AF_INET6 if addr.version == 6 else socket.AF_INET
    lsock = socket.socket(fam, socket.SOCK_STREAM)
    lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if fam == socket.AF_INET6:
        lsock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
    lsock.bind((args.listen, args.port))
    lsock.listen(1)
    log("listening on %s port %d" % (args.listen, args.port))
    if args.ready_file:
        open(args.ready_file, "w").close()

    # Accept until a connection delivers an OPEN: a peer may open a TCP
    # connection and drop it before its OPEN (e.g. while it is still
    # starting); that attempt is logged and the next one is taken.
    while True:
        r, _, _ = select.select([lsock], [], [], max(0.0, deadline - time.monotonic()))
        if not r:
            log("no usable connection before timeout")
            return 2
        sock, peer = lsock.accept()
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        log("connection from %s" % (peer[0],))
        conn = Conn(sock, deadline)
        try:
            first = conn.read_message()
        except (ProtocolError, OSError, Timeout) as e:
            log("connection dropped before OPEN: %s" % e)
            sock.close()
            continue
        if first is None:
            log("connection closed before OPEN, waiting for another")
            sock.close()
            continue
        break
    lsock.close()

    messages = []
    status = {"state": "connected", "messages": 0, "updates": 0, "withdraws": 0,
              "eor": 0, "notification": 0, "keepalives": 0}
    stop_reason = None
    try:
        if first[18] != MSG_OPEN:
            raise ProtocolError("first message is not an OPEN")
        messages.append(first)
        peer_open = parse_open(first)
        conn.send(build_open(args.local_as, args.router_id, args.hold_time,
                             args.ext_nexthop, add_path_fams, args.graceful_restart))
        conn.send(bgp_message(MSG_KEEPALIVE))
        last_ka = time.monotonic()
        hold = min(args.hold_time, peer_open["hold"])
        ka_interval = hold / 3.0 if hold else None

        # negotiated families: intersection of MP capabilities
        ours = {(1, 1), (2, 1)}
        families = [f for f in peer_open["mp"] if f in ours] if peer_open["mp"] else [(1, 1)]
        families = sorted(set(families))
        four_octet = peer_open["as4"] is not None
        # ADD-PATH that applies to what WE receive: peer can send (2|3), we receive
        add_path_rx = [f for f in add_path_fams
                       if f in families and peer_open["add_path"].get(f, 0) & 2]
        ext_nh = args.ext_nexthop and (1, 1, 2) in peer_open["ext_nh"]
        pending_eor = set(families)
        status["state"] = "opensent"
        write_status(args.status_file, dict(status, messages=len(messages)))

        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise Timeout()
            if ka_interval and time.monotonic() - last_ka >= ka_interval:
                conn.send(bgp_message(MSG_KEEPALIVE))
                last_ka = time.monotonic()
            r, _, _ = select.select([sock], [], [], min(left, 1.0))
            if not r:
                continue
            msg = conn.read_message()
            if msg is None:
                stop_reason = "peer closed the connection"
                break
            messages.append(msg)
            mtype = msg[18]
            if mtype == MSG_KEEPALIVE:
                status["keepalives"] += 1
                if status["state"] == "opensent":
                    status["state"] = "established"
                conn.send(bgp_message(MSG_KEEPALIVE))
                last_ka = time.monotonic()
            elif mtype == MSG_UPDATE:
                status["updates"] += 1
                eor, wd = inspect_update(msg)
                status["withdraws"] += wd
                if eor is not None and eor in pending_eor:
                    pending_eor.discard(eor)
                    log("End-of-RIB for %s" % fam_name(*eor))
            elif mtype == MSG_NOTIFICATION:
                status["notification"] = 1
                stop_reason = "NOTIFICATION received (code %d subcode %d)" % (msg[19], msg[20])
            elif mtype not in MSG_NAMES:
                raise ProtocolError("unknown message type %d" % mtype)
            status["eor"] = int(not pending_eor)
            write_status(args.status_file, dict(status, messages=len(messages)))
            if stop_reason:
                break
            if args.until == "eor" and not pending_eor:
                stop_reason = "End-of-RIB seen for all negotiated families"
                break
    except Timeout:
        stop_reason = "TIMEOUT"
    except (ProtocolError, OSError) as e:
        log("error: %s" % e)
        if len(messages) < 1:
            return 2
        stop_reason = "error: %s" % e

    log("stopping: %s; %d messages" % (stop_reason, len(messages)))
    if stop_reason not in ("TIMEOUT",) and not conn.closed and status["notification"] == 0:
        # polite close: Cease / Administrative Shutdown (RFC 4486)
        try:
            conn.send(bgp_message(MSG_NOTIFICATION, b"\x06\x02"))
        except OSError:
            pass
    sock.close()

    if len(messages) < 1:
        return 2
    counts = {}
    for m in messages:
        counts[MSG_NAMES.get(m[18], str(m[18]))] = counts.get(MSG_NAMES.get(m[18], str(m[18])), 0) + 1
    comments = list(args.comment)
    if args.comment_file:
        with open(args.comment_file) as f:
            comments.extend(line.rstrip("\n") for line in f)
    lines = [("# " + c).rstrip() for c in comments]
    lines.append("# recorder: bgp_recorder.py local-as %d router-id %s hold-time %d caps: mp ipv4/unicast, "
                 "mp ipv6/unicast, route-refresh, 4-octet-as%s%s%s"
                 % (args.local_as, args.router_id, args.hold_time,
                    ", graceful-restart (time 120, no families)" if args.graceful_restart else "",
                    ", ext-nexthop ipv4/unicast/ipv6" if args.ext_nexthop else "",
                    (", add-path receive " + ",".join(fam_name(*f) for f in add_path_fams))
                    if add_path_fams else ""))
    lines.append("# peer OPEN: my-as %d hold-time %d bgp-id %s 4-octet-as %s capability codes %s"
                 % (peer_open["as2"], peer_open["hold"], peer_open["bgp_id"],
                    peer_open["as4"] if four_octet else "none",
                    ",".join(str(c) for c, _ in peer_open["caps"])))
    lines.append("# negotiated families: %s" % ",".join(fam_name(*f) for f in families))
    lines.append("# stopped: %s; messages: %s" % (
        stop_reason, ", ".join("%s=%d" % kv for kv in sorted(counts.items()))))
    lines.append("# context: four-octet-as=%d add-path=%s ext-nexthop=%d"
                 % (int(four_octet), ",".join(fam_name(*f) for f in add_path_rx), int(ext_nh)))
    lines.extend(m.hex() for m in messages)
    tmp = args.out + ".tmp"
    with open(tmp, "w") as f:
        f.write("\n".join(lines) + "\n")
    os.replace(tmp, args.out)
    status["state"] = "done"
    write_status(args.status_file, dict(status, messages=len(messages)))
    log("wrote %s" % args.out)
    if stop_reason == "TIMEOUT":
        log("warning: stopped by the timeout")
        return 3 if args.strict else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
