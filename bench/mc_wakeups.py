#!/usr/bin/python3
"""mc_wakeups.py - what memcached costs per request under Slipstream, in counts
that wall-clock noise on a shared 2-vCPU VM does not hide: system calls,
context switches and CPU time of the memcached process (perf stat, software
events and syscall tracepoints), per set+get, for one or more builds of the
library, run in turn on one test bed with the same load.

memcached -t T runs under `slipstream run --strict` in the root namespace;
bench/mc_load.c in peer1 sends a fixed number of requests (--ops) and checks
every value byte for byte.  Each round runs every build once, in order.

Run as root:
  /usr/bin/python3 bench/mc_wakeups.py --builds old=build-old,new=build \\
      [--rounds 3] [--ops 10000] [--conns 20] [--sizes 16,100,1000,4000,16000,100000]
      [--threads 2] [--per-thread] [--prefix mcw]
Prints one line per run and the mean per build.  Exit status 1 when a run
fails its checks.
"""

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "integration"))

import apps_lib  # noqa: E402

SYSCALLS = ("read", "write", "epoll_wait", "epoll_ctl", "futex")
EVENTS = ["task-clock", "context-switches", "raw_syscalls:sys_enter"] + \
    ["syscalls:sys_enter_" + s for s in SYSCALLS]
PORT = 11211


def short(name):
    return name.replace("raw_syscalls:sys_enter", "syscalls").replace("syscalls:sys_enter_", "")


def perf_start(pid, out, per_thread):
    argv = ["perf", "stat", "-x", ",", "-o", str(out), "-p", str(pid)]
    if per_thread:
        argv.append("--per-thread")
    for e in EVENTS:
        argv += ["-e", e]
    return subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def perf_stop(p, out):
    """{(thread or "", event): value} from perf's CSV output."""
    p.send_signal(signal.SIGINT)
    p.wait(10)
    res = {}
    for line in Path(out).read_text().splitlines():
        f = line.split(",")
        if line.startswith("#") or len(f) < 4:
            continue
        thread = ""
        if not f[0].replace(".", "").isdigit() and not f[0].startswith("<"):
            thread, f = f[0], f[1:]   # --per-thread: the thread comes first
        try:
            res[(thread, f[2])] = float(f[0])
        except ValueError:
            pass
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--builds", required=True, help="NAME=BUILDDIR,...")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--ops", type=int, default=10000)
    ap.add_argument("--conns", type=int, default=20)
    ap.add_argument("--sizes", default="16,100,1000,4000,16000,100000")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--per-thread", action="store_true", help="counts per memcached thread")
    ap.add_argument("--prefix", default="mcw")
    a = ap.parse_args()
    builds = [b.split("=", 1) for b in a.builds.split(",")]
    for _, d in builds:
        if not (Path(d) / "src" / "preload" / "libslipstream-preload.so").exists():
            sys.exit("no libslipstream-preload.so under %s" % d)
    bed = apps_lib.Bed(a.prefix).up()
    rows, failed = [], False
    try:
        mc = bed.build_mc_load()
        ip = bed.server_ip("slipstream")
        out = bed.dir / "perf.csv"
        for rnd in range(a.rounds):
            for name, bdir in builds:
                bed.env = dict(os.environ, SLIPSTREAM_BUILD=str(Path(bdir).resolve()))
                srv = bed.start("memcached", "slipstream",
                                [apps_lib.TOOLS["memcached"], "-u", "root", "-t", str(a.threads),
                                 "-p", str(PORT), "-U", "0", "-l", "0.0.0.0", "-m", "256",
                                 "-c", "1024"])
                try:
                    bed.wait_listen(ip, PORT, srv)
                    time.sleep(0.3)
                    pf = perf_start(srv.p.pid, out, a.per_thread)
                    time.sleep(0.3)
                    r = bed.client("slipstream", [str(mc), "--host", ip, "--port", str(PORT),
                                                  "--conns", str(a.conns), "--seconds", "60",
                                                  "--ops", str(a.ops), "--stall", "5",
                                                  "--sizes", a.sizes, "--keys", "32"],
                                   timeout=90)
                    m = perf_stop(pf, out)
                    d = json.loads(r.stdout)
                    if r.returncode or d["errors"] or d["mismatches"]:
                        failed = True
                        print("%s round %d: mc_load failed: %s" % (name, rnd, r.stdout.strip()))
                        continue
                    ops = d["sets"] + d["gets"]
                    row = {"build": name, "op/s": d["ops_per_s"], "p50_us": d["p50_us"],
                           "p99_us": d["p99_us"]}
                    for (thread, ev), v in sorted(m.items()):
                        key = short(ev) if not thread else "%s:%s" % (thread.rsplit("-", 1)[0],
                                                                       short(ev))
                        # task-clock is in ms: per request in us
                        row[key] = row.get(key, 0) + v * (1000 if ev == "task-clock" else 1) / ops
                    rows.append(row)
                    print("%s round %d: %s" % (name, rnd, " ".join(
                        "%s=%.2f" % (k, v) for k, v in row.items() if k != "build")), flush=True)
                finally:
                    bed.stop(srv)
    finally:
        problems = bed.down()
        if problems:
            print("service: %s" % problems)
            failed = True
    print("\nmean per build (counts per set or get; task-clock in us of CPU per request):")
    for name, _ in builds:
        mine = [r for r in rows if r["build"] == name]
        if not mine:
            continue
        keys = [k for k in mine[0] if k != "build"]
        print("%-8s %s" % (name, " ".join("%s=%.2f" % (k, sum(r.get(k, 0) for r in mine) /
                                                        len(mine)) for k in keys)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
