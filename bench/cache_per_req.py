#!/usr/bin/env python3
"""cache_per_req.py - the service's cache misses per 64-byte echo request, simulated by callgrind.

Runs build/bench/insn_echo (the service's TCP stack in one process, as
bench/insn_per_req.py does) under `valgrind --tool=callgrind --cache-sim=yes`
and prints, per connection count, the misses per request in the service's
entry points (ss_proto_input, ss_stack_round): level-1 data reads and
writes, and the last level's, which is simulated as this machine's per-core
L2 (from sysfs: 1 MiB, 8-way here) instead of valgrind's default, so that a
"last-level" miss is one that leaves the core's own caches.  The peers and
the echo application run in the same process and use the same simulated
caches (they are not counted), as the client and the program share a real
server's caches.

    bench/cache_per_req.py                       # 64, 1024, 4096 connections
    bench/cache_per_req.py --conns 4096 --cc-share flow
    bench/cache_per_req.py --build /path/to/other/build   # an A/B

Counts are exact and repeatable for one binary and its arguments.  They
measure how many distinct cache lines a request touches once other
connections' work has evicted them (docs/benchmarks.md, "Cache lines per
request"), not time.  Needs valgrind.
"""

import argparse
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EVENTS = ("Ir", "D1mr", "D1mw", "DLmr", "DLmw")


def sysfs_cache(index, default):
    """(size, ways, line) of cpu0's cache index, or @default."""
    base = "/sys/devices/system/cpu/cpu0/cache/index%d/" % index
    try:
        with open(base + "size") as f:
            size = f.read().strip()
        with open(base + "ways_of_associativity") as f:
            ways = int(f.read())
        with open(base + "coherency_line_size") as f:
            line = int(f.read())
        mult = {"K": 1024, "M": 1 << 20}.get(size[-1], 1)
        return int(size.rstrip("KM")) * mult, ways, line
    except (OSError, ValueError):
        return default


def totals(path):
    """{event: count} from the callgrind file's totals line."""
    events, summary = None, None
    with open(path) as f:
        for line in f:
            if line.startswith("events:"):
                events = line.split()[1:]
            elif line.startswith("summary:") or line.startswith("totals:"):
                summary = [int(x) for x in line.split()[1:]]
    if not events or not summary:
        raise SystemExit("cache_per_req: no totals in %s" % path)
    return dict(zip(events, summary))


def measure(binary, conns, requests, extra, d1, ll):
    fd, out = tempfile.mkstemp(prefix="callgrind.cache.")
    os.close(fd)
    cmd = ["nice", "-n", "19", "valgrind", "--tool=callgrind", "--cache-sim=yes",
           "--D1=%d,%d,%d" % d1, "--LL=%d,%d,%d" % ll,
           "--callgrind-out-file=" + out, "--collect-atstart=no",
           "--toggle-collect=insn_svc_rx", "--toggle-collect=insn_svc_round", binary,
           "--conns", str(conns), "--requests", str(requests), "--idle-rounds", "0"] + extra
    p = subprocess.run(cmd, capture_output=True, text=True)
    info = [l for l in p.stdout.splitlines() if l.startswith("insn_echo ")]
    if p.returncode != 0 or not info:
        sys.stderr.write(p.stdout + p.stderr)
        raise SystemExit("cache_per_req: %s failed (exit %d)" % (" ".join(cmd), p.returncode))
    fields = dict(kv.split("=", 1) for kv in info[0].split()[1:])
    t = totals(out)
    os.unlink(out)
    n = int(fields["requests"])
    return {"conns": conns, "requests": n, **{e: t.get(e, 0) / n for e in EVENTS}}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"), help="meson build dir")
    ap.add_argument("--conns", default="64,1024,4096", help="connection counts, comma-separated")
    ap.add_argument("--requests", type=int, help="requests per connection (default: 81920 in all, "
                    "at least 20 per connection)")
    ap.add_argument("--cc-share", choices=("host", "flow"),
                    help="the service's congestion-control sharing (default: its default)")
    a = ap.parse_args()

    binary = os.path.join(a.build, "bench", "insn_echo")
    if not os.access(binary, os.X_OK):
        raise SystemExit("cache_per_req: %s not built (ninja -C %s)" % (binary, a.build))
    extra = ["--cc-share", a.cc_share] if a.cc_share else []
    d1 = sysfs_cache(0, (32768, 8, 64))
    ll = sysfs_cache(2, (1 << 20, 8, 64))
    rows = []
    for conns in [int(c) for c in a.conns.split(",")]:
        req = a.requests or max(20, 81920 // conns)
        rows.append(measure(binary, conns, req, extra, d1, ll))
    print("Service cache misses per 64-byte echo request (callgrind --cache-sim; L1d %d KiB "
          "%d-way, last level = L2 %d KiB %d-way)%s\n" %
          (d1[0] // 1024, d1[1], ll[0] // 1024, ll[1],
           ", cc-share " + a.cc_share if a.cc_share else ""))
    print("| connections | requests | instructions | L1d read misses | L1d write misses "
          "| L2 read misses | L2 write misses |")
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print("| %d | %d | %.0f | %.1f | %.1f | %.1f | %.1f |" % (
            r["conns"], r["requests"], r["Ir"], r["D1mr"], r["D1mw"], r["DLmr"], r["DLmw"]))


if __name__ == "__main__":
    main()
