"""A raw BGP speaker for tests: builds messages byte by byte so it can send anything."""
import socket
import struct

MARKER = b"\xff" * 16


def message(mtype, body=b"", length=None, marker=MARKER):
    n = 19 + len(body) if length is None else length
    return marker + struct.pack("!HB", n, mtype) + body


def capability(code, value=b""):
    return bytes([code, len(value)]) + value


def open_message(asn, router_id, hold=90, version=4, families=((1, 1),), extra_caps=b""):
    caps = b"".join(capability(1, struct.pack("!HBB", afi, 0, safi)) for afi, safi in families)
    caps += capability(65, struct.pack("!I", asn)) + extra_caps
    params = bytes([2, len(caps)]) + caps
    my_as = asn if asn <= 0xFFFF else 23456
    rid = socket.inet_aton(router_id)
    return message(1, struct.pack("!BHH", version, my_as, hold) + rid + bytes([len(params)]) + params)


KEEPALIVE = message(4)

# Capabilities (RFC 5492) a raw peer may add to its OPEN.
CAP_ROUTE_REFRESH = capability(2)            # RFC 2918
CAP_ENHANCED_ROUTE_REFRESH = capability(70)  # RFC 7313


def route_refresh(afi=1, safi=1, subtype=0, extra=b""):
    """ROUTE-REFRESH (RFC 2918); subtype 1 = BoRR, 2 = EoRR (RFC 7313)."""
    return message(5, struct.pack("!HBB", afi, subtype, safi) + extra)


def parse_route_refresh(body):
    """(afi, subtype, safi) of a ROUTE-REFRESH body."""
    return struct.unpack("!HBB", body[:4])


def nlri(*prefixes):
    """IPv4 prefixes ("10.1.1.0/24") as an NLRI (or withdrawn routes) field."""
    out = b""
    for p in prefixes:
        addr, ln = p.split("/")
        ln = int(ln)
        out += bytes([ln]) + socket.inet_aton(addr)[:(ln + 7) // 8]
    return out


def update(withdrawn=b"", attrs=b"", nlri=b""):
    return message(2, struct.pack("!H", len(withdrawn)) + withdrawn + struct.pack("!H", len(attrs)) + attrs + nlri)


class RawPeer:
    def __init__(self, local_ip, server, timeout=10):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        self.sock.bind((local_ip, 0))
        self.sock.connect(server)
        self.buf = b""

    def send(self, data):
        self.sock.sendall(data)

    def recv(self):
        """The next whole message as (type, body), or None when the connection closes."""
        while True:
            if len(self.buf) >= 19:
                length = struct.unpack("!H", self.buf[16:18])[0]
                if len(self.buf) >= length:
                    m, self.buf = self.buf[:length], self.buf[length:]
                    return m[18], m[19:]
            chunk = self.sock.recv(65536)
            if not chunk:
                return None
            self.buf += chunk

    def until(self, mtype):
        while True:
            m = self.recv()
            if m is None or m[0] == mtype:
                return m

    def notification(self):
        """(code, subcode, data) of the NOTIFICATION that ends the session, or None."""
        m = self.until(3)
        return None if m is None else (m[1][0], m[1][1], m[1][2:])

    def establish(self, asn, router_id="10.9.9.9", hold=90, extra_caps=b""):
        self.send(open_message(asn, router_id, hold, extra_caps=extra_caps))
        m = self.until(1)
        assert m is not None, "no OPEN from bagd"
        self.send(KEEPALIVE)
        m = self.until(4)
        assert m is not None, "no KEEPALIVE from bagd"

    def closed_without_data(self):
        try:
            return self.sock.recv(1) == b""
        except (ConnectionResetError, socket.timeout):
            return False

    def close(self):
        self.sock.close()


def parse_update(body):
    """(withdrawn prefixes, {type: value bytes}, announced prefixes) of an UPDATE body (IPv4)."""
    def prefixes(data):
        out, i = [], 0
        while i < len(data):
            n = data[i]
            nb = (n + 7) // 8
            addr = data[i + 1:i + 1 + nb] + b"\x00" * (4 - nb)
            out.append(f"{socket.inet_ntoa(addr)}/{n}")
            i += 1 + nb
        return out
    wlen = struct.unpack("!H", body[:2])[0]
    withdrawn = prefixes(body[2:2 + wlen])
    alen = struct.unpack("!H", body[2 + wlen:4 + wlen])[0]
    attrs_raw = body[4 + wlen:4 + wlen + alen]
    attrs, i = {}, 0
    while i < len(attrs_raw):
        flags, t = attrs_raw[i], attrs_raw[i + 1]
        if flags & 0x10:
            ln = struct.unpack("!H", attrs_raw[i + 2:i + 4])[0]
            i += 4
        else:
            ln = attrs_raw[i + 2]
            i += 3
        attrs[t] = attrs_raw[i:i + ln]
        i += ln
    return withdrawn, attrs, prefixes(body[4 + wlen + alen:])


def as_path(value):
    """ASNs of a 4-octet AS_PATH attribute value (segments flattened)."""
    out, i = [], 0
    while i < len(value):
        n = value[i + 1]
        out += list(struct.unpack(f"!{n}I", value[i + 2:i + 2 + 4 * n]))
        i += 2 + 4 * n
    return out
