"""A raw BMP station for the interop tests: `python3 bmp_raw.py PORT FILE` accepts connections
on 127.0.0.1:PORT and appends what it reads to FILE (one connection at a time). `parse(FILE)`
splits the stream into messages and decodes what the BMP test checks independently of
pmbmpd: the per-peer header and, in Route Monitoring, the UPDATE's prefixes and link-bandwidth
extended communities (RFC 7854 §4; the BGP parts after RFC 4271 §4.3, RFC 4360)."""
import socket
import struct
import sys

TYPES = {0: "route_monitor", 1: "stats", 2: "peer_down", 3: "peer_up", 4: "init", 5: "term"}


def serve(port, path):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", port))
    s.listen(4)
    n = 0
    while True:
        c, _ = s.accept()
        # One file per connection (a connection cut mid-message leaves a partial one at its end).
        with open(path if n == 0 else f"{path}.{n}", "ab") as out:
            n += 1
            while True:
                data = c.recv(65536)
                if not data:
                    break
                out.write(data)
                out.flush()
        c.close()


def _prefixes(data, add_path):
    out, i = [], 0
    while i < len(data):
        path_id = None
        if add_path:
            path_id = struct.unpack("!I", data[i:i + 4])[0]
            i += 4
        length = data[i]
        n = (length + 7) // 8
        addr = bytes(data[i + 1:i + 1 + n]) + bytes(4 - n)
        out.append(("%d.%d.%d.%d/%d" % (*addr, length), path_id))
        i += 1 + n
    return out


def _update(pdu, add_path):
    """(announced [(prefix, path_id)], withdrawn, [link bandwidth (type, asn, bytes/s)], next hop)."""
    body = pdu[19:]
    wlen = struct.unpack("!H", body[0:2])[0]
    withdrawn = _prefixes(body[2:2 + wlen], add_path)
    alen = struct.unpack("!H", body[2 + wlen:4 + wlen])[0]
    attrs = body[4 + wlen:4 + wlen + alen]
    nlri = _prefixes(body[4 + wlen + alen:], add_path)
    lbs, next_hop, i = [], None, 0
    while i < len(attrs):
        flags, code = attrs[i], attrs[i + 1]
        if flags & 0x10:
            length = struct.unpack("!H", attrs[i + 2:i + 4])[0]
            value = attrs[i + 4:i + 4 + length]
            i += 4 + length
        else:
            length = attrs[i + 2]
            value = attrs[i + 3:i + 3 + length]
            i += 3 + length
        if code == 3:
            next_hop = "%d.%d.%d.%d" % tuple(value[:4])
        if code == 16:
            for j in range(0, len(value), 8):
                t, sub = value[j], value[j + 1]
                if sub == 0x04 and t in (0x00, 0x40):
                    asn = struct.unpack("!H", value[j + 2:j + 4])[0]
                    bw = struct.unpack("!f", value[j + 4:j + 8])[0]
                    lbs.append((t, asn, round(bw)))
    return nlri, withdrawn, lbs, next_hop


def parse(path):
    with open(path, "rb") as f:
        data = f.read()
    out, i = [], 0
    while i + 6 <= len(data):
        version, length, mtype = struct.unpack("!BIB", data[i:i + 6])
        if version != 3 or i + length > len(data):
            break
        body = data[i + 6:i + length]
        m = {"type": TYPES.get(mtype, mtype)}
        if mtype in (0, 1, 2, 3):
            ptype, flags = body[0], body[1]
            m.update(peer_type=ptype, flags=flags, peer_ip="%d.%d.%d.%d" % tuple(body[22:26]),
                     peer_as=struct.unpack("!I", body[26:30])[0])
            rest = body[42:]
            if mtype == 0:
                m["nlri"], m["withdrawn"], m["lb"], m["next_hop"] = _update(rest, add_path=ptype == 3)
            if mtype == 2:
                m["reason"] = rest[0]
                m["data"] = bytes(rest[1:])
        out.append(m)
        i += length
    return out


if __name__ == "__main__":
    serve(int(sys.argv[1]), sys.argv[2])
