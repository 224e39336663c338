#!/usr/bin/python3
"""loss_goodput.py - bulk goodput through random loss, Slipstream (defaults)
against Linux on one bed in one run: iperf3, one stream and 8 streams, each
way, at 0, 0.5, 1, 2, 5 and 10 % random loss of IPv4 packets in both
directions.

Bed (tests/integration/apps_lib.py): a switch; the service with no tuning
flags on its veth (AF_XDP), `iperf3 -s` under `slipstream run` at
198.18.0.1; the same `iperf3 -s` on Linux in peer2 (198.18.0.3), unpinned
and pinned to one CPU, the better of the two reported; the client,
`iperf3 -c ... -J`, in peer1 for both.  The loss is set on the server's
switch port only (testbed.Testbed.impair_live), so both servers see the
same path.  Goodput is what the receiver got (iperf3's sum_received).

Run as root:  /usr/bin/python3 bench/loss_goodput.py [--quick] [--json FILE]
              [--md FILE] [--seconds S] [--prefix P]
"""

import argparse
import json
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "integration"))
sys.dont_write_bytecode = True

import apps_lib  # noqa: E402

LOSS = [0, 0.5, 1, 2, 5, 10]
STREAMS = [1, 8]
PORT = 5231
LINUX_CPU = "1"             # the pinned Linux layout: its server on this CPU


def iperf(bed, ip, seconds, reverse, streams):
    argv = ["iperf3", "-c", ip, "-p", str(PORT), "-t", str(seconds), "-J",
            "-P", str(streams)] + (["-R"] if reverse else [])
    r = bed.run(bed.client_ns, argv, timeout=seconds + 60)
    try:
        doc = json.loads(r.stdout)
    except ValueError:
        return None, "no JSON (exit %s): %s" % (r.returncode, r.stderr[-300:])
    if doc.get("error"):
        return None, doc["error"]
    return doc["end"]["sum_received"]["bits_per_second"] / 1e9, None


def server(bed, layout):
    ip = bed.server_ip("slipstream" if layout == "slipstream" else "linux")
    argv = ["iperf3", "-s", "-B", ip, "-p", str(PORT)]
    if layout == "linux-pinned":
        argv = ["taskset", "-c", LINUX_CPU] + argv
    side = "slipstream" if layout == "slipstream" else "linux"
    proc = bed.start("iperf3-" + layout, side, argv)
    bed.wait_listen(ip, PORT, proc)
    return proc, ip


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="2 s per point")
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--json")
    ap.add_argument("--md")
    ap.add_argument("--prefix", default="sslg%d" % (os.getpid() % 1000))
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("loss_goodput.py: run as root (network namespaces)")
    secs = 2 if a.quick else a.seconds
    rows = []
    with apps_lib.bed_up(a.prefix) as bed:
        for layout in ("slipstream", "linux", "linux-pinned"):
            proc, ip = server(bed, layout)
            port = 0 if layout == "slipstream" else 2
            try:
                for loss in LOSS:
                    bed.tb.impair_live(to_service=loss, to_peers=loss, port=port)
                    for reverse in (False, True):
                        for n in STREAMS:
                            gbps, err = iperf(bed, ip, secs, reverse, n)
                            rows.append({"layout": layout, "loss_pct": loss,
                                         "way": "server sends" if reverse else "server receives",
                                         "streams": n, "gbps": gbps, "error": err})
                            print("%-13s loss %4s%% %-15s P%-2d %s" % (
                                layout, loss, rows[-1]["way"], n,
                                "%.3f Gbit/s" % gbps if gbps is not None else err),
                                flush=True)
                            time.sleep(0.5)
                bed.tb.impair_live(port=port)
            finally:
                bed.stop(proc)
    table = []
    for loss in LOSS:
        for way in ("server receives", "server sends"):
            for n in STREAMS:
                pick = {r["layout"]: r for r in rows
                        if r["loss_pct"] == loss and r["way"] == way and r["streams"] == n}
                ss = pick["slipstream"]["gbps"]
                lx = [(pick[k]["gbps"], k) for k in ("linux", "linux-pinned")
                      if pick[k]["gbps"] is not None]
                best = max(lx) if lx else (None, None)
                table.append({"loss_pct": loss, "way": way, "streams": n, "slipstream": ss,
                              "linux": best[0], "linux_layout": best[1],
                              "ratio": (ss / best[0]) if ss is not None and best[0] else None})
    md = ["| loss | Slipstream server | streams | Slipstream Gbit/s | Linux Gbit/s (best layout) | ratio |",
          "|---|---|---|---|---|---|"]
    for t in table:
        f = lambda v: "%.3f" % v if v is not None else "failed"  # noqa: E731
        md.append("| %g %% | %s | %d | %s | %s (%s) | %s |" % (
            t["loss_pct"], t["way"], t["streams"], f(t["slipstream"]), f(t["linux"]),
            t["linux_layout"] or "-", "%.2f" % t["ratio"] if t["ratio"] is not None else "-"))
    print("\n".join(md))
    doc = {"seconds": secs, "command": "bench/loss_goodput.py" + (" --quick" if a.quick else ""),
           "rows": rows, "table": table}
    if a.json:
        Path(a.json).write_text(json.dumps(doc, indent=1) + "\n")
    if a.md:
        Path(a.md).write_text(
            "Bulk goodput through random loss (both directions), iperf3, `%s`; "
            "Slipstream with its defaults, Linux the better of unpinned and pinned "
            "(%d s per point).\n\n%s\n" % (doc["command"], secs, "\n".join(md)))
    failed = [r for r in rows if r["gbps"] is None]
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
