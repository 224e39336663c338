#!/usr/bin/python3
"""rtt_floor.py - the round-trip floor of the server-side test bed at a given load.

The latency target (p99 at 15 % load at most a third of Linux's, the
kv-server point) compares whole request round trips, and part of every round
trip is not the server's: the Linux client's send and its wake-up for the
reply on CPU 0, the veth, and waking the server's vCPU.  This measures that
part: ICMP echo requests from the client namespace (ping, pinned to CPU 0),
at the kv-server latency point's rate, answered by the server side's kernel
in its softirq (RPS on CPU 1), with no server program at all: no server can
answer a request in less.  With --stack slipstream the service answers
instead (its fast path on CPU 1 replies to ICMP echo without any program).

Same beds as bench/suite.py's server-side set-up (bench/benchsuite/beds.py).
Prints p50/p90/p99/max and writes them with --json FILE.  As root:

    flock /tmp/ss-bed.lock /usr/bin/python3 bench/rtt_floor.py --rate 7500 --seconds 8
"""

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO / "tools"))

from benchsuite import beds  # noqa: E402
from benchsuite import procs as procmod  # noqa: E402

BUILD = Path(os.environ.get("SLIPSTREAM_BUILD") or REPO / "build")
TIME_RE = re.compile(r"time=([\d.]+) ms")


def percentile(sorted_us, q):
    """The q-quantile (0..1) by the nearest-rank rule."""
    if not sorted_us:
        return None
    k = max(0, min(len(sorted_us) - 1, int(round(q * len(sorted_us) + 0.5)) - 1))
    return sorted_us[k]


def ping_rtts(bed, rate, seconds):
    """RTTs in µs of rate*seconds echo requests at 1/rate intervals."""
    count = int(rate * seconds)
    argv = ["ip", "netns", "exec", bed.client_ns, "taskset", "-c", str(bed.client_cpu),
            "ping", "-n", "-W", "1", "-i", "%.6f" % (1.0 / rate), "-c", str(count),
            bed.server_ip]
    r = subprocess.run(argv, capture_output=True, text=True, timeout=seconds * 3 + 30)
    rtts = sorted(float(m.group(1)) * 1000.0 for m in TIME_RE.finditer(r.stdout))
    if len(rtts) < count * 0.95:
        raise RuntimeError("ping: %d of %d replies (rc %d): %s" % (len(rtts), count, r.returncode,
                                                                   r.stderr.strip()[-300:]))
    return count, rtts


def measure(stack, rate, seconds, logdir):
    bed = beds.Bed(stack, "server", "rttfl", BUILD)
    procs = procmod.ProcSet(logdir)
    try:
        bed.up(procs)
        ping_rtts(bed, 100, 1)                      # ARP, caches
        sent, rtts = ping_rtts(bed, rate, seconds)
    finally:
        procs.stop_all()
        bed.down()
    return {"stack": stack, "rate": rate, "seconds": seconds, "sent": sent,
            "received": len(rtts), "p50_us": percentile(rtts, 0.50),
            "p90_us": percentile(rtts, 0.90), "p99_us": percentile(rtts, 0.99),
            "max_us": rtts[-1]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rate", type=float, default=7500.0,
                    help="echo requests per second (default 7500: the kv-server latency point)")
    ap.add_argument("--seconds", type=float, default=8.0)
    ap.add_argument("--stack", default="linux", choices=["linux", "slipstream", "both"])
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("rtt_floor.py: needs root (namespaces)")
    stacks = ["linux", "slipstream"] if args.stack == "both" else [args.stack]
    res = [measure(s, args.rate, args.seconds, Path("/tmp/rtt-floor-logs")) for s in stacks]
    for r in res:
        print("%-10s %6.0f/s  %d of %d replies  p50 %.0f  p90 %.0f  p99 %.0f  max %.0f µs"
              % (r["stack"], r["rate"], r["received"], r["sent"], r["p50_us"], r["p90_us"],
                 r["p99_us"], r["max_us"]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"command": " ".join(sys.argv), "results": res}, f, indent=2)


if __name__ == "__main__":
    main()
