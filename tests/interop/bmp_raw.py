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


def to_pcap(raw_path, pcap_path, port, chunk=1400, strip_peer_up_tlvs=False):
    """The octets a station read, as a pcap of one TCP connection to 127.0.0.1:port (a SYN
    handshake, then segments of `chunk` octets): what tshark's BMP dissector reads. The stream
    is cut at the last whole BMP message (a connection killed mid-message leaves a part).

    `strip_peer_up_tlvs`: the Information TLVs after the two OPENs of each Peer Up (RFC 7854
    §4.10; the Loc-RIB instance's VRF/Table Name, RFC 9069 §5.1) are left out of the pcap and
    returned as [(type, value)]: tshark 4.0 (Debian 12) hands everything after the OPENs to
    its BGP dissector, which reports the TLV as a malformed BGP message."""
    with open(raw_path, "rb") as f:
        raw = f.read()
    data, stripped, i = bytearray(), [], 0
    while i + 6 <= len(raw):
        length = struct.unpack("!I", raw[i + 1:i + 5])[0]
        if length < 6 or i + length > len(raw):
            break
        m = raw[i:i + length]
        if strip_peer_up_tlvs and m[5] == 3:
            at = 6 + 42 + 20  # common header, per-peer header, local address and ports
            for _ in range(2):  # the OPEN sent and the OPEN received
                at += struct.unpack("!H", m[at + 16:at + 18])[0]
            j = at
            while j + 4 <= len(m):
                t, n = struct.unpack("!HH", m[j:j + 4])
                stripped.append((t, bytes(m[j + 4:j + 4 + n])))
                j += 4 + n
            m = m[:5] + m[5:at]
            m = m[:1] + struct.pack("!I", len(m)) + m[5:]
        data += m
        i += length
    data = bytes(data)

    def checksum(b):
        if len(b) % 2:
            b += b"\0"
        s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
        while s >> 16:
            s = (s & 0xFFFF) + (s >> 16)
        return ~s & 0xFFFF

    src, dst = bytes([127, 0, 0, 1]), bytes([127, 0, 0, 1])

    def packet(sport, dport, seq, ack, flags, payload):
        tcp = struct.pack("!HHIIBBHHH", sport, dport, seq, ack, 5 << 4, flags, 65535, 0, 0) + payload
        pseudo = src + dst + struct.pack("!BBH", 0, 6, len(tcp))
        tcp = tcp[:16] + struct.pack("!H", checksum(pseudo + tcp)) + tcp[18:]
        ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp), 0, 0x4000, 64, 6, 0, src, dst)
        ip = ip[:10] + struct.pack("!H", checksum(ip)) + ip[12:]
        return ip + tcp

    client, seq, ack = 40000, 1000, 5000
    frames = [packet(client, port, seq, 0, 0x02, b""), packet(port, client, ack, seq + 1, 0x12, b""),
              packet(client, port, seq + 1, ack + 1, 0x10, b"")]
    seq += 1
    for i in range(0, len(data), chunk):
        part = data[i:i + chunk]
        frames.append(packet(client, port, seq, ack + 1, 0x18, part))
        seq += len(part)
    with open(pcap_path, "wb") as out:
        out.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 101))  # LINKTYPE_RAW (IPv4)
        for n, frame in enumerate(frames):
            out.write(struct.pack("<IIII", 1700000000, n, len(frame), len(frame)))
            out.write(frame)
    return stripped


if __name__ == "__main__":
    serve(int(sys.argv[1]), sys.argv[2])
