#!/usr/bin/python3
"""first_segment.py - how long after the call the first segment leaves an
idle stack: connect() to its SYN on the wire, and send() after an idle
spell to its data segment on the wire, Slipstream (defaults) against Linux
on one bed in one run.

Bed (tests/integration/apps_lib.py): the client program (python, plain
sockets) under `slipstream run` in the root namespace (its segments leave
through the service's veth) or on Linux in peer1; a Linux sink server in
peer2, where tcpdump timestamps every SYN and data segment as it arrives.
Each round: idle for --idle seconds (the service sleeps), take the time,
connect(); idle again, take the time, send 100 bytes.  The client's
timestamps (CLOCK_REALTIME before the call) and tcpdump's (the same clock:
one kernel) give the delay, which includes the switch hop and tcpdump's
own path on both stacks alike.

Run as root:  /usr/bin/python3 bench/first_segment.py [--rounds N] [--idle S]
              [--json FILE] [--prefix P]
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "integration"))
sys.dont_write_bytecode = True

import apps_lib  # noqa: E402

PORT = 7241

CLIENT = r"""
import socket, sys, time
ip, port, rounds, idle = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
for i in range(rounds):
    time.sleep(idle)
    s = socket.socket()
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    t0 = time.time()
    s.connect((ip, port))
    time.sleep(idle)
    t1 = time.time()
    s.send(b"d" * 100)
    print("%d %.6f %.6f %d" % (i, t0, t1, s.getsockname()[1]), flush=True)
    time.sleep(0.05)
    s.close()
"""

SINK = r"""
import socket, threading
ls = socket.socket(); ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind(("0.0.0.0", %d)); ls.listen(64)
def drain(c):
    while c.recv(65536):
        pass
    c.close()
while True:
    c, _ = ls.accept()
    threading.Thread(target=drain, args=(c,), daemon=True).start()
""" % PORT

LINE = re.compile(r"^(\d+\.\d+) IP [\d.]+\.(\d+) > [\d.]+\.%d: Flags \[([^\]]*)\].*length (\d+)" % PORT)


def run_side(bed, side, rounds, idle):
    peer2 = bed.tb.peer(2)
    dump = bed.tb.ns_popen(peer2.ns, ["tcpdump", "-i", peer2.iface, "-tt", "-n", "-l", "-Q",
                                      "in", "tcp dst port %d" % PORT],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    time.sleep(1.0)
    argv = ["/usr/bin/python3", "-c", CLIENT, peer2.ip, str(PORT), str(rounds), str(idle)]
    r = bed.run(bed.client_ns, argv, timeout=rounds * (2 * idle + 1) + 30,
                slipstream=(side == "slipstream"))
    time.sleep(0.5)
    dump.terminate()
    out, _ = dump.communicate(timeout=10)
    if r.returncode != 0:
        raise apps_lib.CheckError("client failed on %s: %s" % (side, r.stderr[-500:]))
    syn, data = {}, {}
    for line in out.splitlines():
        m = LINE.match(line)
        if not m:
            continue
        t, sport, flags, length = float(m.group(1)), int(m.group(2)), m.group(3), int(m.group(4))
        if "S" in flags and "." not in flags and sport not in syn:
            syn[sport] = t
        elif length > 0 and sport not in data:
            data[sport] = t
    c_us, s_us = [], []
    for line in r.stdout.splitlines():
        _, t0, t1, sport = line.split()
        sport = int(sport)
        if sport in syn:
            c_us.append((syn[sport] - float(t0)) * 1e6)
        if sport in data:
            s_us.append((data[sport] - float(t1)) * 1e6)
    return c_us, s_us


def summary(v):
    if not v:
        return None
    w = sorted(v)
    return {"n": len(w), "p50_us": round(statistics.median(w), 1),
            "max_us": round(w[-1], 1), "min_us": round(w[0], 1),
            "rounds_us": [round(x, 1) for x in v]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--idle", type=float, default=0.5)
    ap.add_argument("--json")
    ap.add_argument("--prefix", default="ssfs%d" % (os.getpid() % 1000))
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("first_segment.py: run as root (network namespaces)")
    res = {}
    with apps_lib.bed_up(a.prefix) as bed:
        sink = bed.start("sink", "linux", ["/usr/bin/python3", "-c", SINK])
        bed.wait_listen(bed.tb.peer(2).ip, PORT, sink)
        for side in ("slipstream", "linux"):
            c, s = run_side(bed, side, a.rounds, a.idle)
            res[side] = {"connect_to_syn": summary(c), "send_to_data": summary(s)}
        bed.stop(sink)
    for what in ("connect_to_syn", "send_to_data"):
        ss, lx = res["slipstream"][what], res["linux"][what]
        print("%-15s Slipstream p50 %s us (max %s), Linux p50 %s us (max %s)" % (
            what, ss and ss["p50_us"], ss and ss["max_us"], lx and lx["p50_us"],
            lx and lx["max_us"]))
    doc = {"command": "bench/first_segment.py --rounds %d --idle %g" % (a.rounds, a.idle),
           "results": res}
    if a.json:
        Path(a.json).write_text(json.dumps(doc, indent=1) + "\n")
    bad = [s for s in res.values() for v in s.values() if v is None or v["n"] < a.rounds]
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
