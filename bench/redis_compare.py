#!/usr/bin/python3
"""redis_compare.py - the main job: redis-server unmodified under `slipstream run`
against the same redis on Linux, driven by the same redis-benchmark, in one run.

Test bed: a switch joins the service (198.18.0.1, DPDK AF_XDP PMD on its
veth), peer1 (198.18.0.2, the client: redis-benchmark) and peer2
(198.18.0.3, redis-server on the Linux stack).  redis under Slipstream runs
in the root namespace with `slipstream run`; its TCP sockets go through the
service.  For each target: redis-benchmark -c CONNS -n REQUESTS over
SET, GET, INCR, LPUSH, LRANGE_100 (requests/s, p50 latency), CPU busy of the
whole machine from /proc/stat, and a check that redis answered every
request (no error replies, no rejected connections).  Prints the table with
Slipstream/Linux ratios; --json FILE writes the numbers.
"""

import argparse
import csv
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tools"))

from slipstream_tools import ctl, testbed  # noqa: E402

BUILD = Path(os.environ.get("SLIPSTREAM_BUILD") or REPO / "build")
SERVICE_BIN = BUILD / "src/service/slipstreamd"
CLI = REPO / "tools" / "slipstream"
PORT = 6379
TESTS = "set,get,incr,lpush,lrange_100"


def cpu_busy():
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return sum(v) - v[3] - v[4], sum(v)


def redis_argv(bind):
    return [shutil.which("redis-server"), "--port", str(PORT), "--bind", bind, "--save", "",
            "--appendonly", "no", "--protected-mode", "no", "--logfile", ""]


def wait_ping(tb, host, timeout=20.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        r = tb.ns_exec(tb.peer(1).ns, ["redis-cli", "-h", host, "-p", str(PORT), "ping"],
                       timeout=5)
        if r.stdout.strip() == "PONG":
            return
        time.sleep(0.2)
    raise RuntimeError("redis at %s does not answer PING" % host)


def info_stats(tb, host):
    r = tb.ns_exec(tb.peer(1).ns, ["redis-cli", "-h", host, "-p", str(PORT), "info", "stats"],
                   timeout=10)
    return {k: v for k, _, v in (l.strip().partition(":") for l in r.stdout.splitlines()) if v}


def bench(tb, host, conns, requests):
    before = info_stats(tb, host)
    b0, t0 = cpu_busy()
    w0 = time.monotonic()
    r = tb.ns_exec(tb.peer(1).ns, ["redis-benchmark", "-h", host, "-p", str(PORT), "-c",
                                   str(conns), "-n", str(requests), "-t", TESTS, "--csv"],
                   timeout=600)
    wall = time.monotonic() - w0
    b1, t1 = cpu_busy()
    if r.returncode != 0:
        raise RuntimeError("redis-benchmark against %s failed: %s" % (host, r.stderr))
    after = info_stats(tb, host)
    rows = list(csv.reader(io.StringIO(r.stdout)))
    header = rows[0] if rows and rows[0] and rows[0][0] == "test" else None
    res = {}
    for row in rows[1:] if header else rows:
        if len(row) < 2:
            continue
        name = row[0].split()[0]
        if name in res:
            continue  # LPUSH again, as LRANGE's fill
        d = {"rps": float(row[1])}
        if header and "p50_latency_ms" in header:
            d["p50_ms"] = float(row[header.index("p50_latency_ms")])
        res[name] = d
    errors = int(after.get("total_error_replies", 0)) - int(before.get("total_error_replies", 0))
    rejected = int(after.get("rejected_connections", 0)) - int(before.get("rejected_connections", 0))
    return {"tests": res, "error_replies": errors, "rejected_connections": rejected,
            "cpu_busy_cores": (b1 - b0) / max(1, t1 - t0) * (os.cpu_count() or 1),
            "seconds": round(wall, 2)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--conns", type=int, default=50)
    ap.add_argument("--requests", type=int, default=100000)
    ap.add_argument("--prefix", default="ssredis")
    ap.add_argument("--json", help="write results to this file")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("redis_compare.py: run as root (network namespaces)")
    for tool in ("redis-server", "redis-cli", "redis-benchmark"):
        if not shutil.which(tool):
            sys.exit("redis_compare.py: %s missing (scripts/setup.sh installs it)" % tool)

    tb = testbed.Testbed(args.prefix, peers=2)
    tmp = Path(tempfile.mkdtemp(prefix="ss-redis-"))
    ctl_path = str(tmp / "ctl.sock")
    procs = []
    try:
        testbed.down(args.prefix)
        tb.up()
        log = open(tmp / "slipstreamd.log", "w")
        svc = tb.ns_popen(tb.svc_ns, [str(SERVICE_BIN), "--ip", tb.service_cidr, "--gateway",
                                      tb.gateway, "--ctl", ctl_path, "--"]
                          + tb.dpdk_args("af_xdp") + ["-l", "0"], stdout=log,
                          stderr=subprocess.STDOUT)
        procs.append(svc)
        deadline = time.monotonic() + 30
        while True:
            try:
                ctl.ctl_query("stats", ctl_path)
                break
            except Exception:
                if svc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("slipstreamd did not start; see %s" % log.name)
                time.sleep(0.2)
        ss = subprocess.Popen([str(CLI), "run", "--sock", ctl_path, "--strict", "--"]
                              + redis_argv("0.0.0.0"), stdout=open(tmp / "redis-ss.log", "w"),
                              stderr=subprocess.STDOUT, start_new_session=True)
        procs.append(ss)
        lin = tb.ns_popen(tb.peer(2).ns, redis_argv(tb.peer(2).ip),
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                          start_new_session=True)
        procs.append(lin)
        wait_ping(tb, tb.service_ip)
        wait_ping(tb, tb.peer(2).ip)
        res = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
               "conns": args.conns, "requests": args.requests,
               "slipstream": bench(tb, tb.service_ip, args.conns, args.requests),
               "linux": bench(tb, tb.peer(2).ip, args.conns, args.requests)}
    finally:
        for p in reversed(procs):
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
        tb.down()

    s, l = res["slipstream"], res["linux"]
    print("\nredis-server under Slipstream vs on Linux: redis-benchmark -c %d -n %d from a "
          "Linux peer (%s)" % (args.conns, args.requests, res["date"]))
    print("%-12s %14s %14s %8s" % ("test", "Slipstream", "Linux", "ratio"))
    for t, d in s["tests"].items():
        ld = l["tests"].get(t)
        print("%-12s %12.0f/s %12s %8s" % (t, d["rps"], "%.0f/s" % ld["rps"] if ld else "-",
                                          "%.2f" % (d["rps"] / ld["rps"]) if ld else "-"))
    print("%-12s %14.2f %14.2f %8.2f" % ("CPU (cores)", s["cpu_busy_cores"],
                                          l["cpu_busy_cores"],
                                          s["cpu_busy_cores"] / max(l["cpu_busy_cores"], 1e-9)))
    print("errors: Slipstream %d error replies, %d rejected; Linux %d, %d" % (
        s["error_replies"], s["rejected_connections"], l["error_replies"],
        l["rejected_connections"]))
    print("layout: slipstreamd fast path pinned to CPU 0 (EAL -l 0); redis, redis-benchmark "
          "and the Linux redis float on both CPUs")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=1)
    if s["error_replies"] or s["rejected_connections"]:
        sys.exit(1)


if __name__ == "__main__":
    main()
