"""Byte-exact frame builders for the integration tests.

Every field can be set to a wrong value on purpose; checksums are computed
over whatever was built unless given explicitly, so a frame has exactly the
one fault a test wants.  Replies are decoded with scapy (frame_parse) and
their checksums checked by recomputing (checksums_valid).
"""

import socket
import struct

ETH_IPV4, ETH_ARP, ETH_IPV6, ETH_VLAN = 0x0800, 0x0806, 0x86DD, 0x8100
PROTO_ICMP, PROTO_TCP, PROTO_UDP = 1, 6, 17
BROADCAST = "ff:ff:ff:ff:ff:ff"

# TCP flag bits (RFC 9293 3.1)
FIN, SYN, RST, PSH, ACK, URG = 0x01, 0x02, 0x04, 0x08, 0x10, 0x20


def mac_bytes(mac):
    return bytes(int(x, 16) for x in mac.split(":"))


def ip_bytes(ip):
    return socket.inet_aton(ip)


def csum(data):
    """RFC 1071 Internet checksum of data (odd length padded with a zero)."""
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def eth(dst, src, ethertype, payload=b""):
    return mac_bytes(dst) + mac_bytes(src) + struct.pack("!H", ethertype) + payload


def ipv4(src, dst, proto, payload=b"", ihl=5, options=b"", total_len=None,
         version=4, tos=0, ident=0x1234, flags_frag=0, ttl=64, checksum=None):
    """IPv4 header + payload.  flags_frag is the 16-bit flags/fragment-offset
    field (0x2000 = MF, low 13 bits = offset in 8-byte units)."""
    hdr_len = 20 + len(options)
    if total_len is None:
        total_len = hdr_len + len(payload)
    hdr = struct.pack("!BBHHHBBH4s4s", (version << 4) | ihl, tos, total_len & 0xFFFF,
                      ident, flags_frag, ttl, proto, 0, ip_bytes(src), ip_bytes(dst))
    hdr += options
    if checksum is None:
        checksum = csum(hdr)
    hdr = hdr[:10] + struct.pack("!H", checksum) + hdr[12:]
    return hdr + payload


def icmp(icmp_type, code=0, ident=0, seq=0, payload=b"", checksum=None):
    msg = struct.pack("!BBHHH", icmp_type, code, 0, ident, seq) + payload
    if checksum is None:
        checksum = csum(msg)
    return msg[:2] + struct.pack("!H", checksum) + msg[4:]


def _pseudo(src, dst, proto, length):
    return ip_bytes(src) + ip_bytes(dst) + struct.pack("!BBH", 0, proto, length)


def tcp(src, dst, sport, dport, seq=0, ack=0, flags=SYN, window=65535,
        options=b"", payload=b"", data_offset=None, checksum=None, urg=0):
    """TCP segment; data_offset (32-bit words) defaults to cover the options."""
    if data_offset is None:
        data_offset = (20 + len(options) + 3) // 4
    seg = struct.pack("!HHIIBBHHH", sport, dport, seq & 0xFFFFFFFF, ack & 0xFFFFFFFF,
                      (data_offset & 0xF) << 4, flags, window, 0, urg)
    seg += options + payload
    if checksum is None:
        checksum = csum(_pseudo(src, dst, PROTO_TCP, len(seg)) + seg)
    return seg[:16] + struct.pack("!H", checksum) + seg[18:]


def udp(src, dst, sport, dport, payload=b""):
    length = 8 + len(payload)
    dgram = struct.pack("!HHHH", sport, dport, length, 0) + payload
    c = csum(_pseudo(src, dst, PROTO_UDP, length) + dgram) or 0xFFFF
    return dgram[:6] + struct.pack("!H", c) + dgram[8:]


def arp(op, sha, spa, tha, tpa, htype=1, ptype=ETH_IPV4, hlen=6, plen=4):
    return struct.pack("!HHBBH", htype, ptype, hlen, plen, op) + \
        mac_bytes(sha) + ip_bytes(spa) + mac_bytes(tha) + ip_bytes(tpa)


# ---- decoding replies ---------------------------------------------------

def frame_parse(frame):
    """scapy Ether of a raw frame (scapy imported lazily: it is slow to load)."""
    import scapy.layers.inet  # noqa: F401  binds IP/ICMP/TCP/UDP under Ether
    from scapy.layers.l2 import Ether
    return Ether(frame)


def checksums_valid(frame):
    """(ip_ok, l4_ok) for an IPv4 frame with an ICMP or TCP payload, by
    recomputing over the bytes received (not by trusting a parser)."""
    ip = frame[14:]
    ihl = (ip[0] & 0xF) * 4
    total = struct.unpack("!H", ip[2:4])[0]
    ip_ok = csum(ip[:ihl]) == 0
    l4 = ip[ihl:total]
    proto = ip[9]
    if proto == PROTO_ICMP:
        l4_ok = csum(l4) == 0
    elif proto == PROTO_TCP:
        l4_ok = csum(ip[12:16] + ip[16:20] + struct.pack("!BBH", 0, proto, len(l4)) + l4) == 0
    else:
        l4_ok = None
    return ip_ok, l4_ok
