#!/usr/bin/env python3
"""insn_per_req.py - service instructions per 64-byte echo request, counted by callgrind.

Runs build/bench/insn_echo (the service's TCP stack in one process: peer
engines stand in for Linux clients, an echo application works on the raw
shared memory) under `valgrind --tool=callgrind`, collecting only inside the
service's entry points (the burst's look-ahead, ss_proto_input per received
frame, ss_stack_round per round: insn_svc_ahead, insn_svc_rx and
insn_svc_round in insn_echo.c), and prints instructions per request for
each connection count, split into receive (the look-ahead and
ss_proto_input: the request segment and the ACK it carries) and rounds
(commands, output of the response, events, timers, congestion control),
the cost of one empty round, and the top functions by their own
instructions per request.

    bench/insn_per_req.py                       # 1, 64, 1024 connections
    bench/insn_per_req.py --conns 64 --top 25
    bench/insn_per_req.py --json out.json --keep /tmp/cg   # raw callgrind files kept
    bench/insn_per_req.py --csum-offload        # a port with RX and TX checksum offload
    bench/insn_per_req.py --two-cmds            # TX and RX_DONE as two commands (old library)

Instruction counts are exact and repeatable (same binary, same arguments:
same count); they do not depend on the machine's load.  Needs valgrind.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Requests per connection: enough virtual time after the warm-up for the
# congestion-control intervals and timers to come as often as they do.
DEFAULT_REQUESTS = {1: 2000, 64: 200, 1024: 20}
CLONE = re.compile(r"(\.(isra|constprop|part|lto_priv|cold)\.\d+)+$")
LINE = re.compile(r"^\s*([\d,]+)\s+(?:\(\s*[\d.]+%\)\s+)?(.*?):(\S+) \[(.*)\]\s*$")


def annotate(path, inclusive):
    """{function: Ir} from callgrind_annotate (inclusive or self cost)."""
    out = subprocess.run(
        ["callgrind_annotate", "--inclusive=" + ("yes" if inclusive else "no"),
         "--threshold=100", path],
        check=True, capture_output=True, text=True).stdout
    costs, total = {}, None
    for line in out.splitlines():
        if "PROGRAM TOTALS" in line:
            total = int(line.split()[0].replace(",", ""))
            continue
        m = LINE.match(line)
        if not m:
            continue
        ir, fn = int(m.group(1).replace(",", "")), m.group(3)
        # gcc's clones (LTO, IPA) keep the name: foo.isra.0, foo.constprop.0.isra.0
        fn = CLONE.sub("", fn)
        costs[fn] = costs.get(fn, 0) + ir
    return total, costs


def run(binary, args, toggles, keep, tag):
    fd, out = tempfile.mkstemp(prefix="callgrind.%s." % tag, dir=keep)
    os.close(fd)
    cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out,
           "--collect-atstart=no"] + ["--toggle-collect=" + t for t in toggles]
    cmd += [binary] + args
    p = subprocess.run(["nice", "-n", "19"] + cmd, capture_output=True, text=True)
    info = [l for l in p.stdout.splitlines() if l.startswith("insn_echo ")]
    if p.returncode != 0 or not info:
        sys.stderr.write(p.stdout + p.stderr)
        raise SystemExit("insn_per_req: %s failed (exit %d)" % (" ".join(cmd), p.returncode))
    fields = dict(kv.split("=", 1) for kv in info[0].split()[1:])
    return out, {k: int(v) for k, v in fields.items()}


def measure(binary, conns, requests, extra, keep, top):
    args = ["--conns", str(conns), "--requests", str(requests), "--idle-rounds", "0"] + extra
    measured = ("insn_svc_ahead", "insn_svc_rx", "insn_svc_round")
    path, info = run(binary, args, list(measured), keep, "c%d" % conns)
    total, incl = annotate(path, True)
    _, self_cost = annotate(path, False)
    n = info["requests"]
    rx = incl.get("insn_svc_ahead", 0) + incl.get("insn_svc_rx", 0)
    rnd = incl.get("insn_svc_round", 0)
    tops = sorted(((c, f) for f, c in self_cost.items() if f not in measured),
                  reverse=True)[:top]
    if not keep:
        os.unlink(path)
    return {
        "conns": conns, "requests": n, "total_ir": total,
        "per_request": total / n, "rx_per_request": rx / n, "round_per_request": rnd / n,
        "info": info,
        "top": [{"function": f, "ir": c, "per_request": c / n} for c, f in tops],
    }


def measure_idle(binary, rounds, keep):
    args = ["--conns", "64", "--requests", "0", "--idle-rounds", str(rounds)]
    path, _ = run(binary, args, ["insn_svc_idle"], keep, "idle")
    total, _ = annotate(path, False)
    if not keep:
        os.unlink(path)
    return total / rounds


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"), help="meson build dir")
    ap.add_argument("--conns", default="1,64,1024", help="connection counts, comma-separated")
    ap.add_argument("--requests", type=int, help="requests per connection (default by count)")
    ap.add_argument("--top", type=int, default=15, help="functions listed per count")
    ap.add_argument("--rx-csum-good", action="store_true",
                    help="as if the NIC verified checksums (RX offload)")
    ap.add_argument("--csum-offload", action="store_true",
                    help="as on a port with both checksum offloads: RX verified by the "
                    "NIC, TX checksums left to it (SS_TX_CSUM)")
    ap.add_argument("--two-cmds", action="store_true",
                    help="the application posts SS_CMD_TX and SS_CMD_RX_DONE apart (a "
                    "library before SS_SHM_VERSION 4) instead of one TX with SS_CMDF_RX_DONE")
    ap.add_argument("--cc-share", choices=("host", "flow"),
                    help="the service's congestion-control sharing (default: its default)")
    ap.add_argument("--us-per-req", type=int, help="virtual time per request (default 10)")
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--keep", help="keep the callgrind files in this directory")
    a = ap.parse_args()

    binary = os.path.join(a.build, "bench", "insn_echo")
    if not os.access(binary, os.X_OK):
        raise SystemExit("insn_per_req: %s not built (ninja -C %s)" % (binary, a.build))
    extra = ["--rx-csum-good"] if a.rx_csum_good else []
    if a.csum_offload:
        extra = ["--csum-offload"]
    if a.two_cmds:
        extra += ["--two-cmds"]
    if a.cc_share:
        extra += ["--cc-share", a.cc_share]
    if a.us_per_req:
        extra += ["--us-per-req", str(a.us_per_req)]
    if a.keep:
        os.makedirs(a.keep, exist_ok=True)

    results = []
    for conns in [int(c) for c in a.conns.split(",")]:
        req = a.requests or DEFAULT_REQUESTS.get(conns, max(20, 20000 // conns))
        results.append(measure(binary, conns, req, extra, a.keep, a.top))
    idle = measure_idle(binary, 1000, a.keep)

    print("Service instructions per 64-byte echo request (callgrind Ir; receive = "
          "look-ahead + ss_proto_input, rounds = ss_stack_round)%s\n" %
          ((", RX and TX checksum offload" if a.csum_offload else
            ", RX checksum offload" if a.rx_csum_good else "") +
           (", cc-share " + a.cc_share if a.cc_share else "")))
    print("| connections | requests | per request | receive | rounds | segments in/out "
          "| event slots | command slots | cc intervals |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in results:
        i, n = r["info"], r["requests"]
        print("| %d | %d | **%.0f** | %.0f | %.0f | %.2f / %.2f | %.2f | %.2f | %.3f |" % (
            r["conns"], n, r["per_request"], r["rx_per_request"], r["round_per_request"],
            i["rx_tcp"] / n, i["tx_segments"] / n, i["events"] / n, i["app_commands"] / n,
            i["cc_intervals"] / n))
    print("\nAn empty round (nothing received, no commands): %.0f instructions." % idle)
    for r in results:
        print("\nTop functions, %d connection%s (own instructions per request):\n" %
              (r["conns"], "" if r["conns"] == 1 else "s"))
        print("| function | per request |")
        print("|---|---:|")
        for t in r["top"]:
            print("| %s | %.0f |" % (t["function"], t["per_request"]))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"results": results, "idle_round": idle,
                       "rx_csum_good": a.rx_csum_good or a.csum_offload,
                       "tx_csum_offload": a.csum_offload}, f, indent=1)


if __name__ == "__main__":
    main()
