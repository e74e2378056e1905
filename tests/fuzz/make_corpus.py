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
