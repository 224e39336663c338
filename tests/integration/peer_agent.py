#!/usr/bin/python3
"""Frame injector/capturer that runs inside a peer namespace (stdlib only).

Started as `ip netns exec NS /usr/bin/python3 peer_agent.py IFACE`; reads one
JSON request per line on stdin and answers one JSON line on stdout:

  {"op": "send", "frames": [HEX, ...], "count": N, "gap_ms": G}
      send every frame N times (frame order kept within a round) on IFACE
      through an AF_PACKET socket, as scapy's sendp does.
      -> {"ok": true, "sent": K}
  {"op": "xchg", "frames": [HEX, ...], "count": N, "timeout": S, "max": M,
   "match": {"ethertype": 2048, "ip_src": "198.18.0.1", "ip_proto": 6}}
      open a capture first, send as above, then collect received (not
      outgoing) frames that match until S seconds have passed or M frames
      were collected (max 0: always wait the full S, to catch extra replies).
      -> {"ok": true, "sent": K, "frames": [HEX, ...]}
  {"op": "quit"}

Every request is bounded: count <= 1000, timeout <= 10 s, max <= 1000.
"""

import json
import select
import socket
import sys
import time

ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4
MAX_COUNT, MAX_TIMEOUT, MAX_FRAMES = 1000, 10.0, 1000


def frame_matches(frame, match):
    if len(frame) < 14:
        return False
    ethertype = int.from_bytes(frame[12:14], "big")
    if "ethertype" in match and ethertype != match["ethertype"]:
        return False
    if "ip_src" in match or "ip_proto" in match:
        if ethertype != 0x0800 or len(frame) < 34:
            return False
        if "ip_src" in match and socket.inet_ntoa(frame[26:30]) != match["ip_src"]:
            return False
        if "ip_proto" in match and frame[23] != match["ip_proto"]:
            return False
    return True


def frames_send(sock, frames, count, gap_ms):
    sent = 0
    for _ in range(count):
        for f in frames:
            sock.send(f)
            sent += 1
            if gap_ms:
                time.sleep(gap_ms / 1000.0)
    return sent


def request_handle(iface, tx, req):
    op = req.get("op")
    frames = [bytes.fromhex(h) for h in req.get("frames", [])]
    count = min(int(req.get("count", 1)), MAX_COUNT)
    gap_ms = min(float(req.get("gap_ms", 0)), 100.0)
    if op == "send":
        return {"ok": True, "sent": frames_send(tx, frames, count, gap_ms)}
    if op == "xchg":
        timeout = min(float(req.get("timeout", 1.0)), MAX_TIMEOUT)
        want = min(int(req.get("max", 0)), MAX_FRAMES)
        match = req.get("match", {})
        rx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        try:
            rx.bind((iface, 0))
            sent = frames_send(tx, frames, count, gap_ms)
            got = []
            deadline = time.monotonic() + timeout
            while len(got) < (want or MAX_FRAMES):
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                ready, _, _ = select.select([rx], [], [], left)
                if not ready:
                    break
                data, addr = rx.recvfrom(65535)
                if addr[2] != PACKET_OUTGOING and frame_matches(data, match):
                    got.append(data.hex())
            return {"ok": True, "sent": sent, "frames": got}
        finally:
            rx.close()
    return {"ok": False, "error": "unknown op %r" % op}


def main():
    iface = sys.argv[1]
    tx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    tx.bind((iface, 0))
    print(json.dumps({"ok": True, "ready": iface}), flush=True)
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            req = json.loads(line)
            if req.get("op") == "quit":
                break
            reply = request_handle(iface, tx, req)
        except Exception as e:  # report, keep serving
            reply = {"ok": False, "error": "%s: %s" % (type(e).__name__, e)}
        print(json.dumps(reply), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
