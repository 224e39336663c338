"""Hostile and malformed frames from a real peer: each lands on exactly its
named drop counter (5 sent, delta exactly 5, no other drop counter moves, no
reply), TCP to a closed port gets the RFC 9293 3.10.7.1 reset, and the
service still answers ping afterwards.

Frames are injected on peer1's veth through an AF_PACKET socket (what scapy's
sendp does) by peer_agent.py running in the peer's namespace; replies are
captured there too and decoded with scapy.

Ethernet truncation is not tested here: the kernel pads or rejects AF_PACKET
frames shorter than the 14-byte Ethernet header, so such a frame cannot cross a
veth.  The unit tests cover it.  The shortest frame that can cross (a bare
header with ethertype ARP) is tested as drop_arp_truncated.
"""

import random
import struct

import pytest

import frames as fr
from frames import ACK, FIN, PSH, RST, SYN
from harness import counters_wait, ping

N = 5
CLOSED_PORT = 7777
OTHER_MAC = "02:00:5e:00:00:99"
OTHER_IP = "198.18.0.99"


class Ctx:
    """Addresses a case builder needs."""

    def __init__(self, tb, svc_mac):
        peer = tb.peer(1)
        self.svc_mac, self.peer_mac = svc_mac, peer.mac
        self.svc_ip, self.peer_ip = tb.service_ip, peer.ip

    def eth(self, ethertype, payload, dst=None):
        return fr.eth(dst or self.svc_mac, self.peer_mac, ethertype, payload)

    def ip(self, proto, payload, src=None, dst=None, **kw):
        return self.eth(fr.ETH_IPV4, fr.ipv4(src or self.peer_ip, dst or self.svc_ip,
                                             proto, payload, **kw))

    def echo(self, **kw):
        return self.ip(fr.PROTO_ICMP, fr.icmp(8, 0, 0x4242, 1, b"slipstream" * 3), **kw)

    def tcp_seg(self, src=None, dst=None, **kw):
        kw.setdefault("flags", ACK)
        kw.setdefault("seq", 1000)
        kw.setdefault("ack", 2000)
        return fr.tcp(src or self.peer_ip, dst or self.svc_ip, 40000, CLOSED_PORT, **kw)

    def tcp(self, **kw):
        return self.ip(fr.PROTO_TCP, self.tcp_seg(**kw))

    def arp(self, op=1, tpa=None, dst=fr.BROADCAST, **kw):
        return self.eth(fr.ETH_ARP, fr.arp(op, self.peer_mac, self.peer_ip,
                                           "00:00:00:00:00:00", tpa or self.svc_ip, **kw),
                        dst=dst)


def _ip_mangle(frame, offset, value_bytes, fix_csum=True):
    """Overwrite bytes of the IPv4 header (offset from its start) and, unless
    told not to, recompute the header checksum over the 20 fixed bytes."""
    b = bytearray(frame)
    b[14 + offset:14 + offset + len(value_bytes)] = value_bytes
    if fix_csum:
        b[24:26] = b"\0\0"
        b[24:26] = struct.pack("!H", fr.csum(bytes(b[14:34])))
    return bytes(b)


def _ip_trailing_truncate(frame, ip_len):
    """Keep only ip_len bytes of the IP packet (header fields unchanged)."""
    return frame[:14 + ip_len]


def _tcp_opts(c, opts, flags=ACK):
    return c.tcp(flags=flags, options=bytes(opts))


def _icmp_short(c):
    # 4 bytes of ICMP: type, code, checksum (valid over those 4 bytes)
    body = struct.pack("!BBH", 8, 0, 0)
    body = body[:2] + struct.pack("!H", fr.csum(body))
    return c.ip(fr.PROTO_ICMP, body)


def _tcp_short(c):
    seg = c.tcp_seg()[:10]
    return c.ip(fr.PROTO_TCP, seg)


def _vlan(c):
    inner = fr.ipv4(c.peer_ip, c.svc_ip, fr.PROTO_ICMP, fr.icmp(8, 0, 1, 1, b"x" * 16))
    return c.eth(fr.ETH_VLAN, struct.pack("!HH", 5, fr.ETH_IPV4) + inner)


def _ipv6(c):
    # IPv6 header (ICMPv6 echo, no body worth parsing): the ethertype alone decides.
    hdr = struct.pack("!IHBB", 6 << 28, 8, 58, 64) + bytes(16) + bytes(15) + b"\x01"
    return c.eth(fr.ETH_IPV6, hdr + struct.pack("!BBHHH", 128, 0, 0, 1, 1))


# case id -> (builder(ctx) -> frame, expected counter)
CASES = {
    # Ethernet
    "eth_dst_other_unicast": (lambda c: fr.eth(OTHER_MAC, c.peer_mac, fr.ETH_IPV4,
                                               c.echo()[14:]), "drop_eth_not_for_us"),
    "eth_ipv6": (_ipv6, "drop_eth_unsupported_type"),
    "eth_vlan": (_vlan, "drop_eth_unsupported_type"),
    "eth_unknown_type": (lambda c: c.eth(0x88B5, b"\0" * 46), "drop_eth_unsupported_type"),
    # ARP
    "arp_header_only": (lambda c: c.eth(fr.ETH_ARP, b"", dst=fr.BROADCAST),
                        "drop_arp_truncated"),
    "arp_truncated": (lambda c: c.arp()[:14 + 20], "drop_arp_truncated"),
    "arp_bad_htype": (lambda c: c.arp(htype=6), "drop_arp_unsupported"),
    "arp_bad_ptype": (lambda c: c.arp(ptype=fr.ETH_IPV6), "drop_arp_unsupported"),
    "arp_bad_op": (lambda c: c.arp(op=3, dst=c.svc_mac), "drop_arp_bad_op"),
    "arp_other_ip": (lambda c: c.arp(tpa=OTHER_IP), "drop_arp_not_for_us"),
    # IPv4 header
    "ip_truncated": (lambda c: _ip_trailing_truncate(c.echo(), 12), "drop_ipv4_truncated"),
    "ip_bad_version": (lambda c: _ip_mangle(c.echo(), 0, b"\x65"), "drop_ipv4_bad_version"),
    "ip_ihl_below_5": (lambda c: _ip_mangle(c.echo(), 0, b"\x44"), "drop_ipv4_bad_ihl"),
    "ip_ihl_beyond_packet": (lambda c: _ip_mangle(
        _ip_trailing_truncate(c.echo(), 28), 0, b"\x4f" + bytes(1) + struct.pack("!H", 28)),
        "drop_ipv4_bad_ihl"),
    "ip_total_len_too_big": (lambda c: _ip_mangle(c.echo(), 2, struct.pack("!H", 1000)),
                             "drop_ipv4_bad_total_len"),
    "ip_total_len_below_header": (lambda c: _ip_mangle(c.echo(), 2, struct.pack("!H", 19)),
                                  "drop_ipv4_bad_total_len"),
    "ip_bad_checksum": (lambda c: _ip_mangle(c.echo(), 10, b"\xde\xad", fix_csum=False),
                        "drop_ipv4_bad_checksum"),
    "ip_not_for_us": (lambda c: c.echo(dst=OTHER_IP), "drop_ipv4_not_for_us"),
    "ip_options": (lambda c: c.ip(fr.PROTO_ICMP, fr.icmp(8, 0, 7, 7, b"opt"), ihl=6,
                                  options=b"\x01\x01\x01\x00"), "drop_ipv4_options"),
    "ip_fragment_mf": (lambda c: c.echo(flags_frag=0x2000, ident=0xf001),
                       "drop_ipv4_fragment"),
    "ip_fragment_offset": (lambda c: c.echo(flags_frag=0x0004, ident=0xf002),
                           "drop_ipv4_fragment"),
    "ip_src_zero": (lambda c: c.echo(src="0.0.0.0"), "drop_ipv4_bad_src"),
    "ip_src_broadcast": (lambda c: c.echo(src="255.255.255.255"), "drop_ipv4_bad_src"),
    "ip_src_multicast": (lambda c: c.echo(src="224.0.0.1"), "drop_ipv4_bad_src"),
    "ip_udp": (lambda c: c.ip(fr.PROTO_UDP, fr.udp(c.peer_ip, c.svc_ip, 5353, 9, b"hi")),
               "drop_ipv4_unsupported_proto"),
    "ip_proto_gre": (lambda c: c.ip(47, b"\0" * 8), "drop_ipv4_unsupported_proto"),
    # ICMP
    "icmp_truncated": (_icmp_short, "drop_icmp_truncated"),
    "icmp_bad_checksum": (lambda c: c.ip(fr.PROTO_ICMP, fr.icmp(8, 0, 1, 1, b"abcd",
                                                                checksum=0x1234)),
                          "drop_icmp_bad_checksum"),
    "icmp_echo_reply": (lambda c: c.ip(fr.PROTO_ICMP, fr.icmp(0, 0, 1, 1, b"abcd")),
                        "drop_icmp_unsupported_type"),
    "icmp_timestamp": (lambda c: c.ip(fr.PROTO_ICMP, fr.icmp(13, 0, 1, 1, bytes(12))),
                       "drop_icmp_unsupported_type"),
    # TCP
    "tcp_truncated": (_tcp_short, "drop_tcp_truncated"),
    "tcp_offset_below_5": (lambda c: c.tcp(data_offset=4), "drop_tcp_bad_offset"),
    "tcp_offset_beyond_segment": (lambda c: c.tcp(data_offset=15), "drop_tcp_bad_offset"),
    "tcp_bad_checksum": (lambda c: c.tcp(checksum=0xbeef), "drop_tcp_bad_checksum"),
    "tcp_opt_len_0": (lambda c: _tcp_opts(c, [254, 0, 0, 0]), "drop_tcp_bad_option"),
    "tcp_opt_len_1": (lambda c: _tcp_opts(c, [254, 1, 0, 0]), "drop_tcp_bad_option"),
    "tcp_opt_past_header": (lambda c: _tcp_opts(c, [1, 254, 10, 0]), "drop_tcp_bad_option"),
    "tcp_opt_kind_only_at_end": (lambda c: _tcp_opts(c, [1, 1, 1, 2]), "drop_tcp_bad_option"),
    "tcp_opt_mss_len_5": (lambda c: _tcp_opts(c, [2, 5, 5, 180, 0, 0, 0, 0], flags=SYN),
                          "drop_tcp_bad_option"),
    "tcp_opt_wscale_len_4": (lambda c: _tcp_opts(c, [3, 4, 7, 0], flags=SYN),
                             "drop_tcp_bad_option"),
    "tcp_opt_sackperm_len_3": (lambda c: _tcp_opts(c, [4, 3, 0, 0], flags=SYN),
                               "drop_tcp_bad_option"),
    "tcp_opt_ts_len_8": (lambda c: _tcp_opts(c, [8, 8] + [0] * 6), "drop_tcp_bad_option"),
    "tcp_opt_sack_len_2": (lambda c: _tcp_opts(c, [5, 2, 1, 1]), "drop_tcp_bad_option"),
    "tcp_opt_sack_len_11": (lambda c: _tcp_opts(c, [5, 11] + [0] * 9 + [0]),
                            "drop_tcp_bad_option"),
}

# Valid frames that must still be accepted, as controls for the builders:
# (builder, {counter: expected delta}); drops other than those listed must
# stay at zero.
CONTROLS = {
    "echo_request": (lambda c: c.echo(), {"rx_icmp_echo_request": N,
                                          "tx_icmp_echo_reply": N}),
    # RST to a closed port: valid, no flow, and never answered (RFC 9293 3.10.7.1)
    "tcp_rst_no_flow": (lambda c: c.tcp(flags=RST), {"drop_tcp_no_flow": N,
                                                     "tx_tcp_rst": 0}),
    # Ethernet padding after the IP datagram (a real NIC pads to 60 bytes): the
    # datagram ends at total length; the padding is not part of the segment.
    "tcp_rst_eth_padding": (lambda c: c.tcp(flags=RST | ACK) + b"\xaa" * 6,
                            {"drop_tcp_no_flow": N, "tx_tcp_rst": 0}),
    "tcp_valid_options_rst": (lambda c: _tcp_opts(c, [1, 1, 8, 10] + [0] * 8 + [0] * 4,
                                                  flags=RST),
                              {"drop_tcp_no_flow": N, "tx_tcp_rst": 0}),
}


@pytest.fixture(scope="module")
def ctx(testbed, service):
    return Ctx(testbed, service.info()["mac"])


def _drops(delta):
    return {k: v for k, v in delta.items() if k.startswith("drop_")}


@pytest.mark.parametrize("case", list(CASES))
def test_malformed_counted(case, ctx, service, agent, testbed):
    build, counter = CASES[case]
    if counter == "drop_ipv4_fragment" and service.pmd == "af_packet":
        pytest.skip("the af_packet PMD joins a fanout group with "
                    "PACKET_FANOUT_FLAG_DEFRAG: the kernel holds and reassembles "
                    "fragments before the service sees them")
    frame = build(ctx)
    before = service.stats()
    replies = agent.xchg(frame, {"ip_src": testbed.service_ip}, timeout=0.3, count=N)
    delta = counters_wait(service, before, {counter: N})
    assert delta.get(counter, 0) == N, \
        "%s: %s delta %d, want %d; all changes: %s (frame %s)" % (
            case, counter, delta.get(counter, 0), N, delta, frame.hex())
    others = {k: v for k, v in _drops(delta).items() if k != counter}
    assert not others, "%s: other drop counters moved: %s" % (case, others)
    assert not any(delta.get(k) for k in ("tx_icmp_echo_reply", "tx_tcp_rst",
                                          "tx_arp_reply")), \
        "%s: a dropped frame was answered: %s" % (case, delta)
    assert replies == [], "%s: got IPv4 frames back: %s" % (case, [r.hex() for r in replies])
    assert delta.get("rx_packets", 0) >= N, delta


@pytest.mark.parametrize("case", list(CONTROLS))
def test_valid_controls(case, ctx, service, agent):
    build, want = CONTROLS[case]
    before = service.stats()
    agent.send(build(ctx), count=N)
    delta = counters_wait(service, before, {k: v for k, v in want.items() if v})
    for k, v in want.items():
        assert delta.get(k, 0) == v, "%s: %s delta %d, want %d; all: %s" % (
            case, k, delta.get(k, 0), v, delta)
    unexpected = {k: v for k, v in _drops(delta).items() if k not in want}
    assert not unexpected, "%s: drops %s" % (case, unexpected)


# ---- resets for segments to a closed port (RFC 9293 3.10.7.1) ------------

def _rst_exchange(ctx, service, agent, testbed, flags, seq, ack=0, payload=b"", sport=None):
    sport = sport or random.randrange(32768, 60999)
    seg = fr.tcp(ctx.peer_ip, ctx.svc_ip, sport, CLOSED_PORT, seq=seq, ack=ack,
                 flags=flags, payload=payload,
                 options=bytes([2, 4, 5, 180]) if flags & SYN else b"")
    frame = ctx.eth(fr.ETH_IPV4, fr.ipv4(ctx.peer_ip, ctx.svc_ip, fr.PROTO_TCP, seg))
    before = service.stats()
    # Wait the full second: a second reply must show up here too.
    replies = agent.xchg(frame, {"ip_src": testbed.service_ip, "ip_proto": fr.PROTO_TCP},
                         timeout=1.0)
    delta = counters_wait(service, before, {"drop_tcp_no_flow": 1})
    return sport, replies, delta


def _check_rst(raw, ctx, sport):
    p = fr.frame_parse(raw)
    assert p.dst.lower() == ctx.peer_mac.lower() and p.src.lower() == ctx.svc_mac.lower()
    assert (p["IP"].src, p["IP"].dst) == (ctx.svc_ip, ctx.peer_ip)
    t = p["TCP"]
    assert (t.sport, t.dport) == (CLOSED_PORT, sport)
    ip_ok, tcp_ok = fr.checksums_valid(raw)
    assert ip_ok and tcp_ok, "bad checksum in RST: %s" % raw.hex()
    assert len(bytes(t.payload)) == 0 or set(bytes(t.payload)) == {0}, "RST carries data"
    return t


def test_syn_to_closed_port_gets_one_rst_ack(ctx, service, agent, testbed):
    isn = random.randrange(1 << 32)
    sport, replies, delta = _rst_exchange(ctx, service, agent, testbed, SYN, isn)
    assert len(replies) == 1, "want exactly one reply, got %d" % len(replies)
    t = _check_rst(replies[0], ctx, sport)
    assert int(t.flags) == RST | ACK, t.flags
    assert t.seq == 0 and t.ack == (isn + 1) & 0xFFFFFFFF, (t.seq, t.ack, isn)
    assert delta.get("drop_tcp_no_flow") == 1 and delta.get("tx_tcp_rst") == 1, delta
    assert not {k for k in _drops(delta) if k != "drop_tcp_no_flow"}, delta


def test_syn_with_data_and_fin(ctx, service, agent, testbed):
    """SEG.LEN counts data, SYN and FIN: ack = seq + 10 + 1 + 1."""
    isn = random.randrange(1 << 32)
    sport, replies, delta = _rst_exchange(ctx, service, agent, testbed, SYN | FIN, isn,
                                          payload=b"0123456789")
    assert len(replies) == 1, replies
    t = _check_rst(replies[0], ctx, sport)
    assert int(t.flags) == RST | ACK and t.seq == 0
    assert t.ack == (isn + 12) & 0xFFFFFFFF, (t.ack, isn)


def test_ack_segment_gets_rst_with_seq_of_ack(ctx, service, agent, testbed):
    seq, ack = random.randrange(1 << 32), random.randrange(1 << 32)
    sport, replies, delta = _rst_exchange(ctx, service, agent, testbed, ACK | PSH, seq,
                                          ack=ack, payload=b"hello")
    assert len(replies) == 1, replies
    t = _check_rst(replies[0], ctx, sport)
    assert int(t.flags) == RST, t.flags
    assert t.seq == ack, (t.seq, ack)
    assert delta.get("tx_tcp_rst") == 1, delta


def test_fin_without_ack(ctx, service, agent, testbed):
    seq = 0xFFFFFFFF                      # wraps: ack = seq + 1 = 0
    sport, replies, _ = _rst_exchange(ctx, service, agent, testbed, FIN, seq)
    assert len(replies) == 1, replies
    t = _check_rst(replies[0], ctx, sport)
    assert int(t.flags) == RST | ACK and t.seq == 0 and t.ack == 0, (t.flags, t.ack)


def test_rst_gets_no_reply(ctx, service, agent, testbed):
    sport, replies, delta = _rst_exchange(ctx, service, agent, testbed, RST | ACK,
                                          12345, ack=678)
    assert replies == []
    assert delta.get("drop_tcp_no_flow") == 1 and delta.get("tx_tcp_rst", 0) == 0, delta


def test_ping_still_works_after_all_that(service, testbed):
    assert service.alive()
    tx, rx, out = ping(testbed, testbed.peer(1).ns, testbed.service_ip, 5, interval=0.1,
                       wait=1)
    assert (tx, rx) == (5, 5), out
