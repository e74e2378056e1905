#!/usr/bin/env python3
"""Seeds both fuzz corpora from the captured vectors in tests/data/wire/*.hex.

decode_message inputs are one context octet (bit 0 four-octet AS, 1 extended message,
2 ADD-PATH IPv4, 3 ADD-PATH IPv6, 4 eBGP) followed by a message stream; bagctl_decode
inputs are hex text as an engineer would paste it. Run from the repository root."""
import glob, os, re

root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
wire = os.path.join(root, "tests/data/wire")
out_dm = os.path.join(root, "tests/fuzz/corpus/decode_message")
out_bd = os.path.join(root, "tests/fuzz/corpus/bagctl_decode")
os.makedirs(out_dm, exist_ok=True)
os.makedirs(out_bd, exist_ok=True)

for path in sorted(glob.glob(os.path.join(wire, "*.hex"))):
    name = os.path.basename(path)[:-4]
    ctx = 0
    msgs = []
    for line in open(path):
        line = line.strip()
        if line.startswith("# context:"):
            if "four-octet-as=1" in line: ctx |= 1
            m = re.search(r"add-path=(\S*)", line)
            if m and "ipv4" in m.group(1): ctx |= 4
            if m and "ipv6" in m.group(1): ctx |= 8
        elif line and not line.startswith("#"):
            msgs.append(bytes.fromhex(line))
    with open(os.path.join(out_dm, name + ".stream"), "wb") as f:
        f.write(bytes([ctx]) + b"".join(msgs))
    for i, m in enumerate(msgs[:6]):
        with open(os.path.join(out_dm, f"{name}.{i}"), "wb") as f:
            f.write(bytes([ctx]) + m)
    # bagctl inputs: with marker, without marker, colon-separated.
    with open(os.path.join(out_bd, name + ".hex"), "w") as f:
        f.write("\n".join(m.hex() for m in msgs) + "\n")
    with open(os.path.join(out_bd, name + ".nomarker"), "w") as f:
        f.write(" ".join(m[16:].hex() for m in msgs[:4]))
    with open(os.path.join(out_bd, name + ".colons"), "w") as f:
        f.write(":".join(f"{b:02x}" for b in msgs[-1]))

# session inputs are scripts for tests/fuzz/session_fuzz.cc: a setup octet, then ops, each
# an octet (bit 0 the neighbor, bits 1.. the op modulo 12) and its arguments. The first op
# for a neighbor that has no connection connects it.
out_s = os.path.join(root, "tests/fuzz/corpus/session")
os.makedirs(out_s, exist_ok=True)
OPEN, KEEPALIVE, UPDATE_RAW, UPDATE, REFRESH, NOTIFICATION, RAW, ANY, ADVANCE, RESET, FIN, READ = range(12)


def op(code, nb=0, *args):
    return bytes([(code << 1) | nb]) + bytes(args)


def establish(nb, caps=0x03):
    return op(KEEPALIVE, nb) + op(OPEN, nb, caps) + op(KEEPALIVE, nb)


def lb_update(nb, n, lb=(0x4e, 0xee, 0x6b, 0x28)):
    # n prefixes 10.1.k.0/24, link bandwidth (transitive) `lb`, no extra attributes, no withdrawals
    return op(UPDATE, nb, n, *sum(([1, k] for k in range(n)), []), 1, *lb, 0, 0)


seeds = {
    "established_then_hold_expiry": bytes([0]) + establish(0) + lb_update(0, 3) + op(ADVANCE, 0) + bytes([200]) +
    bytes([(ADVANCE << 1) | 0x80, 20]),
    "two_peers_multipath_then_reset": bytes([0x20]) + establish(0) + establish(1) + lb_update(0, 4) +
    lb_update(1, 4, (0x4f, 0x3a, 0x43, 0xb7)) + op(READ, 1) + op(RESET, 0) + op(READ, 1),
    "route_refresh_and_notification": bytes([1]) + establish(0, 0x03) + op(REFRESH, 0, 4, 0, 1, 0, 1) +
    op(REFRESH, 0, 4, 0, 1, 1, 1) + op(NOTIFICATION, 0, 2, 6, 2),
    "garbage_after_open": bytes([0]) + op(KEEPALIVE, 0) + op(OPEN, 0, 0) + op(RAW, 0, 21) + b"\xff" * 16 + b"\x00\x13\x09\x00\x00",
    "mrai_and_prefix_limit": bytes([0x0c]) + establish(0) + establish(1) + lb_update(0, 7) + lb_update(0, 7) +
    lb_update(0, 7) + bytes([(ADVANCE << 1) | 0x80, 3]) + op(FIN, 1),
    "ibgp_addpath_graceful": bytes([1]) + op(KEEPALIVE, 1) + op(OPEN, 1, 0x18, 3, 0x40) + op(KEEPALIVE, 1) +
    lb_update(1, 2) + op(UPDATE_RAW, 1, 1, 0, 0, 0, 0),
}
for name, data in seeds.items():
    with open(os.path.join(out_s, name), "wb") as f:
        f.write(data)
