#!/usr/bin/env python3
"""Decode and sanity-check the captured BGP test vectors (stdlib only).

Usage: check_vectors.py [-v] [FILE.hex ...]   (default: ../*.hex)

For every file: the '# context:' line is present; every message line is
lowercase hex with the 16-byte ff marker, a length field equal to the line's
byte count, a known type; OPENs, UPDATEs (attributes, NLRI, MP_REACH /
MP_UNREACH, ADD-PATH path ids per the context) and NOTIFICATIONs decode
without leftover bytes.  Link-bandwidth extended communities (type 0x00 or
0x40, sub-type 0x04) are listed and compared with EXPECT below.
Exit status 0 when every file passes.
"""

import glob
import ipaddress
import os
import re
import struct
import sys

TYPES = {1: "OPEN", 2: "UPDATE", 3: "NOTIFICATION", 4: "KEEPALIVE", 5: "ROUTE-REFRESH"}
FAM = {"ipv4": (1, 1), "ipv6": (2, 1)}

# file -> what must be in it: set of LB community type octets, notification, path ids
EXPECT = {
    "frr_ebgp_ipv4_lb_transitive.hex": {"lb_types": {0x00}},
    "frr_ibgp_ipv4_lb_nontransitive.hex": {"lb_types": {0x40}, "local_pref": True},
    "frr_ebgp_ipv6_linklocal.hex": {"lb_types": {0x00}, "nh_len": {32}},
    "frr_ebgp_ipv4_extnexthop.hex": {"lb_types": {0x00}, "ipv4_mp_reach": True},
    "frr_withdraw_and_notification.hex": {"lb_types": {0x00}, "notification": (6, 2), "withdraw": True},
    "gobgp_ebgp_ipv4_lb_4octet.hex": {"lb_types": {0x40}},
    "gobgp_ebgp_ipv6_addpath.hex": {"lb_types": {0x40}, "path_ids": True},
}


class Bad(Exception):
    pass


def prefixes(data, afi, addpath):
    out = []
    i = 0
    while i < len(data):
        pid = None
        if addpath:
            if i + 4 > len(data):
                raise Bad("truncated path id")
            pid = struct.unpack("!I", data[i:i + 4])[0]
            i += 4
        plen = data[i]
        i += 1
        maxlen = 32 if afi == 1 else 128
        if plen > maxlen:
            raise Bad("prefix length %d > %d" % (plen, maxlen))
        nb = (plen + 7) // 8
        if i + nb > len(data):
            raise Bad("truncated prefix")
        raw = data[i:i + nb] + b"\0" * ((4 if afi == 1 else 16) - nb)
        i += nb
        net = ipaddress.ip_network((raw, plen), strict=False)
        out.append(("%s" % net) + ("#%d" % pid if pid is not None else ""))
    return out


def decode_update(body, ctx, info):
    addpath = ctx["add-path"]
    ext_nh = ctx["ext-nexthop"]
    as4 = ctx["four-octet-as"]
    wlen = struct.unpack("!H", body[:2])[0]
    withdrawn = prefixes(body[2:2 + wlen], 1, (1, 1) in addpath)
    alen = struct.unpack("!H", body[2 + wlen:4 + wlen])[0]
    attrs = body[4 + wlen:4 + wlen + alen]
    if 4 + wlen + alen > len(body):
        raise Bad("attribute length overruns message")
    nlri = prefixes(body[4 + wlen + alen:], 1, (1, 1) in addpath)
    desc = []
    if withdrawn:
        desc.append("withdraw %s" % ",".join(withdrawn))
        info["withdraw"] = True
    i = 0
    seen = set()
    while i < len(attrs):
        flags, code = attrs[i], attrs[i + 1]
        if flags & 0x10:
            ln = struct.unpack("!H", attrs[i + 2:i + 4])[0]
            v = attrs[i + 4:i + 4 + ln]
            i += 4 + ln
        else:
            ln = attrs[i + 2]
            v = attrs[i + 3:i + 3 + ln]
            i += 3 + ln
        if len(v) != ln:
            raise Bad("attribute %d truncated" % code)
        if code in seen:
            raise Bad("attribute %d twice" % code)
        seen.add(code)
        if code == 1:
            desc.append("origin=%d" % v[0])
        elif code == 2:
            j, segs = 0, []
            w = 4 if as4 else 2
            while j < len(v):
                st, n = v[j], v[j + 1]
                asns = [int.from_bytes(v[j + 2 + w * k:j + 2 + w * (k + 1)], "big") for k in range(n)]
                if j + 2 + w * n > len(v):
                    raise Bad("AS_PATH segment truncated")
                segs.append(("{%s}" if st == 1 else "%s") % " ".join(map(str, asns)))
                j += 2 + w * n
            desc.append("as_path=[%s]" % " ".join(segs))
        elif code == 3:
            desc.append("next_hop=%s" % ipaddress.IPv4Address(v))
        elif code == 4:
            desc.append("med=%d" % struct.unpack("!I", v)[0])
        elif code == 5:
            desc.append("local_pref=%d" % struct.unpack("!I", v)[0])
            info["local_pref"] = True
        elif code == 8:
            if len(v) % 4:
                raise Bad("COMMUNITIES length")
            desc.append("communities=%s" % ",".join(
                "%d:%d" % struct.unpack("!HH", v[k:k + 4]) for k in range(0, len(v), 4)))
        elif code == 16:
            if len(v) % 8 or flags & 0xC0 != 0xC0:
                raise Bad("EXTENDED_COMMUNITIES length/flags")
            ecs = []
            for k in range(0, len(v), 8):
                ec = v[k:k + 8]
                if ec[1] == 0x04 and ec[0] in (0x00, 0x40):
                    asn = struct.unpack("!H", ec[2:4])[0]
                    bw = struct.unpack("!f", ec[4:8])[0]
                    ecs.append("LB(type=0x%02x,as=%d,%.0fB/s=%.1fMbit/s)" % (ec[0], asn, bw, bw * 8 / 1e6))
                    info["lb"].append(ec.hex())
                    info["lb_types"].add(ec[0])
                else:
                    ecs.append(ec.hex())
            desc.append("ext_communities=%s" % ",".join(ecs))
        elif code == 32:
            if len(v) % 12:
                raise Bad("LARGE_COMMUNITIES length")
            desc.append("large_communities=%s" % ",".join(
                "%d:%d:%d" % struct.unpack("!III", v[k:k + 12]) for k in range(0, len(v), 12)))
        elif code == 14:
            afi, safi, nhl = struct.unpack("!HBB", v[:4])
            nh = v[4:4 + nhl]
            if afi == 2 or (afi == 1 and nhl in (16, 32)):
                nhs = [str(ipaddress.IPv6Address(nh[k:k + 16])) for k in range(0, nhl, 16)]
                if afi == 1:
                    info["ipv4_mp_reach"] = True
                    if not ext_nh:
                        info["notes"].add("IPv4 NLRI with an IPv6 next hop although extended "
                                          "next hop was not negotiated")
            else:
                nhs = [str(ipaddress.IPv4Address(nh[k:k + 4])) for k in range(0, nhl, 4)]
            if nhl not in (4, 16, 32):
                raise Bad("MP_REACH next hop length %d" % nhl)
            info["nh_len"].add(nhl)
            if v[4 + nhl] != 0:
                raise Bad("MP_REACH reserved octet not 0")
            pfx = prefixes(v[5 + nhl:], afi, (afi, safi) in addpath)
            desc.append("mp_reach(afi=%d,safi=%d,nh=%s,nlri=%s)" % (afi, safi, "|".join(nhs), ",".join(pfx)))
        elif code == 15:
            afi, safi = struct.unpack("!HB", v[:3])
            pfx = prefixes(v[3:], afi, (afi, safi) in addpath)
            if pfx:
                info["withdraw"] = True
            desc.append("mp_unreach(afi=%d,safi=%d,%s)" % (afi, safi, ",".join(pfx) or "End-of-RIB"))
        else:
            desc.append("attr%d(flags=0x%02x,%s)" % (code, flags, v.hex()))
    if i != len(attrs):
        raise Bad("attributes overrun")
    if nlri:
        desc.append("nlri=%s" % ",".join(nlri))
        if any("#" in p for p in nlri):
            info["path_ids"] = True
    if any("#" in d for d in desc if d.startswith("mp_")):
        info["path_ids"] = True
    if not desc:
        desc.append("End-of-RIB ipv4/unicast")
    return " ".join(desc)


def decode_open(body):
    ver, as2, hold, bid, plen = struct.unpack("!BHH4sB", body[:10])
    if ver != 4 or 10 + plen != len(body):
        raise Bad("OPEN version/parameter length")
    caps, i = [], 10
    while i < len(body):
        t, ln = body[i], body[i + 1]
        if t == 2:
            j = i + 2
            while j < i + 2 + ln:
                caps.append("%d(%s)" % (body[j], body[j + 2:j + 2 + body[j + 1]].hex()))
                j += 2 + body[j + 1]
            if j != i + 2 + ln:
                raise Bad("capability overruns parameter")
        i += 2 + ln
    if i != len(body):
        raise Bad("OPEN parameters overrun")
    return "as=%d hold=%d id=%s caps=%s" % (as2, hold, ipaddress.IPv4Address(bid), " ".join(caps))


def check(path, verbose):
    info = {"lb": [], "lb_types": set(), "nh_len": set(), "notes": set(), "notification": None,
            "withdraw": False, "local_pref": False, "path_ids": False, "ipv4_mp_reach": False}
    ctx = None
    counts = {}
    msgs = 0
    head_done = False
    with open(path) as f:
        for lineno, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if line.startswith("#"):
                if head_done:
                    raise Bad("%d: comment after the messages" % lineno)
                m = re.match(r"# context: four-octet-as=([01]) add-path=(\S*) ext-nexthop=([01])$", line)
                if m:
                    ctx = {"four-octet-as": m.group(1) == "1",
                           "add-path": {FAM[x] for x in m.group(2).split(",") if x},
                           "ext-nexthop": m.group(3) == "1"}
                continue
            head_done = True
            if ctx is None:
                raise Bad("no '# context:' line before the messages")
            if not re.fullmatch(r"[0-9a-f]+", line) or len(line) % 2:
                raise Bad("%d: not lowercase hex" % lineno)
            raw = bytes.fromhex(line)
            if raw[:16] != b"\xff" * 16:
                raise Bad("%d: bad marker" % lineno)
            ln, t = struct.unpack("!HB", raw[16:19])
            if ln != len(raw) or not 19 <= ln <= 4096:
                raise Bad("%d: length field %d, line has %d bytes" % (lineno, ln, len(raw)))
            if t not in TYPES:
                raise Bad("%d: type %d" % (lineno, t))
            body = raw[19:]
            try:
                if t == 1:
                    d = decode_open(body)
                    if msgs != 0:
                        raise Bad("OPEN not first")
                elif t == 2:
                    d = decode_update(body, ctx, info)
                elif t == 3:
                    info["notification"] = (body[0], body[1])
                    d = "code=%d subcode=%d data=%s" % (body[0], body[1], body[2:].hex())
                    if body[0] == 6 and body[1] in (2, 4) and len(body) > 2:
                        d += " message=%r" % body[3:3 + body[2]].decode()
                elif t == 4:
                    if body:
                        raise Bad("KEEPALIVE with body")
                    d = ""
                else:
                    d = body.hex()
            except (IndexError, struct.error, ValueError) as e:
                raise Bad("%d: decode error %s" % (lineno, e))
            msgs += 1
            counts[TYPES[t]] = counts.get(TYPES[t], 0) + 1
            if verbose:
                print("  %2d %-12s %s" % (msgs, TYPES[t], d))
    if msgs == 0:
        raise Bad("no messages")
    exp = EXPECT.get(os.path.basename(path), {})
    if "lb_types" in exp and info["lb_types"] != exp["lb_types"]:
        raise Bad("LB types %s, expected %s" % (sorted(info["lb_types"]), sorted(exp["lb_types"])))
    if "nh_len" in exp and not exp["nh_len"] <= info["nh_len"]:
        raise Bad("MP_REACH next hop lengths %s" % sorted(info["nh_len"]))
    for key in ("notification", "withdraw", "local_pref", "path_ids", "ipv4_mp_reach"):
        if key in exp and (info[key] != exp[key] if key == "notification" else not info[key]):
            raise Bad("expected %s" % key)
    print("%s: ok  %s; context %s; LB %s%s" % (
        os.path.basename(path), " ".join("%s=%d" % kv for kv in sorted(counts.items())),
        "four-octet-as=%d add-path=%s ext-nexthop=%d" % (
            ctx["four-octet-as"], ",".join(k for k, v in FAM.items() if v in ctx["add-path"]),
            ctx["ext-nexthop"]),
        ",".join(sorted(set(info["lb"]))) or "none",
        "".join("; note: " + n for n in sorted(info["notes"]))))


def main():
    args = sys.argv[1:]
    verbose = "-v" in args
    files = [a for a in args if a != "-v"]
    if not files:
        files = sorted(glob.glob(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "*.hex")))
    bad = 0
    for p in files:
        if verbose:
            print("%s:" % p)
        try:
            check(p, verbose)
        except Bad as e:
            bad += 1
            print("%s: FAIL %s" % (os.path.basename(p), e))
    print("%d passed, %d failed" % (len(files) - bad, bad))
    return 1 if bad or not files else 0


if __name__ == "__main__":
    sys.exit(main())
