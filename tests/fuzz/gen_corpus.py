#!/usr/bin/env python3
"""Write the fuzz seed corpora from the real frames in tests/unit/packets.h.

Run from anywhere: python3 tests/fuzz/gen_corpus.py.  Output goes to
tests/fuzz/corpus/<harness>/; the files are committed, so this only needs
rerunning when packets.h changes.
"""
import os
import re
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
PACKETS_H = os.path.join(HERE, "..", "unit", "packets.h")
OUT = os.path.join(HERE, "corpus")


def load_frames():
    text = open(PACKETS_H).read()
    frames = {}
    for name, body in re.findall(
            r"static const uint8_t pkt_(\w+)\[\d+\] = \{(.*?)\};", text, re.S):
        frames[name] = bytes(int(x, 16) for x in re.findall(r"0x([0-9a-f]{2})", body))
    return frames


def csum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def with_ip_csum(hdr):
    hdr = bytearray(hdr)
    hdr[10:12] = b"\0\0"
    hdr[10:12] = struct.pack("!H", csum(bytes(hdr)))
    return bytes(hdr)


def write(harness, name, data):
    d = os.path.join(OUT, harness)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def main():
    frames = load_frames()
    for name, f in frames.items():
        write("fuzz_eth", name, f[:14])
        write("fuzz_frame", name, f)
        if name.startswith("arp"):
            write("fuzz_arp", name, f[14:])
            write("fuzz_arp", name + "_padded", f[14:] + bytes(18))
            continue
        ip = f[14:]
        write("fuzz_ipv4", name, ip)
        if name.startswith("icmp"):
            write("fuzz_icmp", name, ip[20:])
        else:
            write("fuzz_tcp", name, ip[12:20] + ip[20:])  # src, dst, segment

    syn_ip = frames["tcp_syn"][14:]
    # IPv4 with a 4-byte option (NOP x3, EOL) and an MF fragment
    opt = bytearray(syn_ip[:20]) + b"\x01\x01\x01\x00" + syn_ip[20:]
    opt[0] = 0x46
    opt[2:4] = struct.pack("!H", len(opt))
    opt[:24] = with_ip_csum(opt[:24])
    write("fuzz_ipv4", "options", bytes(opt))
    write("fuzz_frame", "ipv4_options", frames["tcp_syn"][:14] + bytes(opt))
    frag = bytearray(syn_ip)
    frag[6:8] = b"\x20\x00"
    frag[:20] = with_ip_csum(frag[:20])
    write("fuzz_ipv4", "fragment", bytes(frag))
    # padded to the 60-byte Ethernet minimum
    write("fuzz_frame", "icmp_padded", frames["icmp_echo_reply"] + bytes(10))
    # TCP options: SACK with 3 blocks behind TS (a Linux dup-ACK shape)
    write("fuzz_tcp", "opts_ts_sack3",
          b"\xc6\x12\x00\x01\xc6\x12\x00\x02"
          + bytes.fromhex("13899c409d9f769e8c75acc3f0100200000000000101080a"
                          "e12ed682e2e8d3cb0101051a") + bytes(range(24)))


if __name__ == "__main__":
    main()
