#!/usr/bin/python3
"""workloads.py - standard workloads, each against a server under Slipstream
and the same server on Linux, on one plain test bed in one run; every result
checked; throughput, latency, CPU per request (or per GB) and the ratio
Slipstream / Linux in one table.

The bed is tests/integration/apps_lib.py's Bed (three peers on a switch):
  Slipstream  slipstreamd on the service veth (AF_XDP PMD, fast path on
              CPU 0) started with no tuning options (only --ip, --gateway,
              its control socket and the AF_XDP vdev); the server program
              under `slipstream run --strict` (no --conns/--buf), in the
              root namespace, reached at 198.18.0.1, not pinned
  Linux       the same server program in peer2 (198.18.0.3), run twice:
              not pinned ("linux") and pinned to CPU 1 ("linux-pinned":
              every thread of its process group, after it is up); the
              better of the two by the workload's primary figure is the
              one compared, and the table says which
  clients     in peer1 (198.18.0.2), on Linux, the same for both stacks

Workloads (--only takes these names, comma-separated):
  rr_mix_1, rr_mix_100, rr_mix_1000
      bench/rr_mix.c: closed-loop request/response at 1, 100, 1000
      connections, request and reply sizes log-uniform on 1 B..64 KiB,
      TCP_NODELAY both ends; every byte checked at both ends
  redis, redis_P16, redis_d4096
      redis-benchmark -c 50 against redis-server: SET, GET, INCR, LPUSH,
      LRANGE_100; SET and GET pipelined (-P 16); SET and GET of 4096-byte
      values (-d 4096).  INFO stats: no error replies, no rejected
      connections, every command processed
  nginx_small, nginx_1m
      nginx (master + 2 workers, sendfile on) and wrk -t2 -c50 on a 593-byte
      file and on a 1 MiB file; a Lua script checks every body byte for byte
  h2load
      the same nginx with HTTP/2 over cleartext (prior knowledge): h2load
      -c 50 -m 10 -t 2 on the 593-byte file; every request must succeed
      with status 2xx and h2load must count exactly the bodies' bytes
  curl_10m
      curl of a 10 MiB file from the same nginx, several times, each sha256
      checked (apps_lib.curl_sha)
  iperf3_in_P1, iperf3_in_P8, iperf3_out_P1, iperf3_out_P8
      iperf3 into the server (client -> server) and out of it (-R), one
      stream and 8 (-P 8)
  sockperf
      sockperf ping-pong --tcp, 64-byte messages (latencies are sockperf's:
      one way, half the round trip)
  memcached
      memcached -t 2 with bench/mc_load.c (apps_lib's memcached client):
      sets and gets of mixed sizes up to 100 kB and of small values, every
      value checked byte for byte

CPU: the whole machine's busy time from /proc/stat over the client's run
(rr_mix: over its measured window), less the CPU time other people's
processes took in it ("foreign_cpu_s", from their /proc/PID/stat), divided
by the requests (or GB) done: client, server, kernel and service together,
on every CPU.  A point where other processes took 0.5 CPU-s or more is
marked contended.

Run as root (network namespaces), with the test bed's lock:
    flock /tmp/ss-bed.lock /usr/bin/python3 bench/workloads.py --quick
    /usr/bin/python3 bench/workloads.py --lock /tmp/ss-bed.lock     # full run:
        takes the lock for each workload (all its layouts) and lets it go
        in between, so no single hold is long
Options: [--quick] [--only NAMES] [--json FILE] [--md FILE] [--prefix P]
Exit status 1 if any check failed.
"""

import argparse
import contextlib
import fcntl
import json
import math
import os
import platform
import re
import subprocess
import sys
import time
import traceback
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "integration"))
sys.path.insert(0, str(REPO / "bench"))
sys.dont_write_bytecode = True

import apps_lib  # noqa: E402
from apps_lib import TOOLS, CheckError  # noqa: E402
from benchsuite import cpu, procs as procmod  # noqa: E402

RR_MIX = apps_lib.BUILD / "bench" / "rr_mix"
LAYOUTS = ("slipstream", "linux", "linux-pinned")
PIN_CPU = 1
LAYOUT_TITLES = {"linux": "not pinned", "linux-pinned": "pinned to CPU %d" % PIN_CPU}
PORTS = {"rr_mix": 7100, "redis": 6390, "nginx": 8180, "iperf3": 5301, "sockperf": 11200,
         "memcached": 11300}
MIB = 1 << 20
CONTENDED_CPU_S = 0.5


def rel(path):
    """A path as the committed files may show it: relative to the repository,
    else its last component."""
    p = Path(path)
    try:
        return str(p.resolve().relative_to(REPO))
    except ValueError:
        return p.name


def argv_text(argv):
    return " ".join(rel(a) if str(a).startswith("/") else str(a) for a in argv)


class Run:
    """One bed; the layouts; the CPU windows."""

    def __init__(self, bed, quick):
        self.bed, self.quick = bed, quick

    @staticmethod
    def side(layout):
        return "slipstream" if layout == "slipstream" else "linux"

    def ip(self, layout):
        return self.bed.server_ip(self.side(layout))

    def bind(self, layout):
        return "0.0.0.0" if layout == "slipstream" else self.ip(layout)

    def secs(self, quick, full):
        return quick if self.quick else full

    def start(self, name, layout, argv, port, wait=None):
        """A server for @layout; returns its Proc once it accepts connections
        (and, pinned, once every thread of its process group is on PIN_CPU)."""
        proc = self.bed.start(name, self.side(layout), argv)
        self.ready(proc, layout, port, wait)
        return proc

    def ready(self, proc, layout, port, wait=None):
        self.bed.wait_listen(self.ip(layout), port, proc)
        if wait:
            wait(proc)
        if layout == "linux-pinned":
            n = pin_group(proc.p.pid, PIN_CPU)
            if not n:
                raise CheckError("no thread of %s to pin" % proc.name)

    def stop(self, proc):
        self.bed.require_alive(proc)
        self.bed.stop(proc)

    def window(self, fn):
        """fn() run inside a CPU window; returns (fn's result, cpu dict)."""
        s0, f0, t0 = cpu.snapshot(), cpu.process_ticks(our_pids()), time.monotonic()
        out = fn()
        s1, t1 = cpu.snapshot(), time.monotonic()
        f1 = cpu.process_ticks(our_pids())
        return out, cpu_dict(cpu.delta(s0, s1), t1 - t0, f0, f1)


def our_pids():
    """This process and every process under it (servers, clients, the service)."""
    parent = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                stat = (d / "stat").read_text()
                parent[int(d.name)] = int(stat.rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                pass
    ours = {os.getpid()}
    grew = True
    while grew:
        grew = False
        for pid, pp in parent.items():
            if pp in ours and pid not in ours:
                ours.add(pid)
                grew = True
    return ours


def pin_group(pgid, cpu_no):
    """Every thread of every process in process group @pgid onto @cpu_no;
    the number of threads pinned."""
    n = 0
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            if os.getpgid(int(d.name)) != pgid:
                continue
            for t in (d / "task").iterdir():
                os.sched_setaffinity(int(t.name), {cpu_no})
                n += 1
        except OSError:
            continue
    return n


def cpu_dict(d, wall, f0, f1):
    """The CPU of a window: the machine's busy CPU-seconds, other people's
    processes' share of them, and ours ("own_cpu_s": busy less foreign)."""
    foreign, top = cpu.foreign_cpu(f0, f1)
    busy = d["busy_cores"] * wall
    return {"wall_s": round(wall, 3), "busy_cores": round(d["busy_cores"], 3),
            "busy_cpu_s": round(busy, 3), "own_cpu_s": round(max(0.0, busy - foreign), 3),
            "per_cpu_busy": [round(x, 3) for x in cpu.per_cpu_busy(d)],
            "foreign_cpu_s": round(foreign, 2), "foreign_top": top}


def cpu_per(c, work, unit):
    """A CPU figure from our own busy time: CPU-microseconds per request
    (unit "req") or CPU-seconds per GB (unit "GB", work in bytes)."""
    if not work:
        return None
    if unit == "GB":
        return (c["own_cpu_s"] / (work / 1e9), "CPU-s/GB", "lower")
    return (1e6 * c["own_cpu_s"] / work, "CPU-us/%s" % unit, "lower")


# ---- the workloads ------------------------------------------------------------
# Each takes (run, layout) and returns {"metrics": {name: (value, unit, better)},
# "primary": name, "cpu": {label: cpu_dict}, ...}; CheckError when a result is wrong.

def last_json(text):
    for line in reversed(text.splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                return json.loads(line)
            except ValueError:
                continue
    return None


def wl_rr_mix(run, layout, conns):
    port = PORTS["rr_mix"]
    ip = run.ip(layout)
    if not RR_MIX.exists():
        raise CheckError("%s not built (ninja -C build)" % rel(RR_MIX))
    srv = run.start("rr_mix", layout, [str(RR_MIX), "server", "--listen",
                                       "%s:%d" % (run.bind(layout), port)], port)
    seconds, warmup = run.secs(3, 10), run.secs(1, 2)
    argv = [str(RR_MIX), "client", "--connect", "%s:%d" % (ip, port), "--conns", str(conns),
            "--seconds", str(seconds), "--warmup", str(warmup), "--seed", "1",
            "--connect-timeout", "15", "--stall", "5", "--phases"]
    marks = {}

    def on_phase(word):
        marks.setdefault(word, cpu.snapshot())

    try:
        f0 = cpu.process_ticks(our_pids())
        rc, out, err = procmod.run_client(run.bed.client_ns, argv, timeout=15 + warmup +
                                          seconds + 30, on_phase=on_phase)
        f1 = cpu.process_ticks(our_pids())
        got = last_json(out)
        if rc != 0 or not got or got.get("errors") or got.get("error") or \
                got.get("established") != conns or not got.get("msgs"):
            raise CheckError("rr_mix client (exit %s): %s %s" % (rc, out.strip()[-1500:],
                                                                 err.strip()[-500:]))
        if "measure" not in marks or "end" not in marks:
            raise CheckError("rr_mix printed no phase lines: %s" % err[-500:])
        c = cpu_dict(cpu.delta(marks["measure"], marks["end"]), got["seconds"], f0, f1)
    finally:
        run.bed.stop(srv)
    s = last_json(apps_lib._tail(srv.log, 20000))
    if not s or s.get("errors"):
        raise CheckError("rr_mix server: %s" % apps_lib._tail(srv.log, 1500))
    secs = got["seconds"]
    m = {"msgs/s": (got["msgs_per_s"], "msg/s", "higher"),
         "p50": (got["p50_us"], "us", "lower"),
         "p99": (got["p99_us"], "us", "lower"),
         "p99.9": (got["p999_us"], "us", "lower"),
         "payload, both ways": ((got["req_bytes"] + got["rep_bytes"]) * 8 / secs / 1e9,
                                "Gbit/s", "higher"),
         "CPU per msg": cpu_per(c, got["msgs"], "msg")}
    return {"metrics": m, "primary": "msgs/s", "cpu": {"run": c}, "client": got,
            "server": s, "client_argv": argv_text(argv)}


def redis_argv(run, layout, port):
    return [TOOLS["redis-server"], "--port", str(port), "--bind", run.bind(layout), "--save",
            "", "--appendonly", "no", "--protected-mode", "no", "--daemonize", "no",
            "--logfile", ""]


def redis_info(run, ip, port):
    r = run.bed.run(run.bed.client_ns, [TOOLS["redis-cli"], "-h", ip, "-p", str(port), "info",
                                        "stats"], timeout=10)
    if r.returncode != 0:
        raise CheckError("redis-cli info: %s %s" % (r.stdout, r.stderr))
    return {k: v for k, _, v in (l.strip().partition(":") for l in r.stdout.splitlines()) if v}


REDIS_TESTS = {"redis": ("set,get,incr,lpush,lrange_100", []),
               "redis_P16": ("set,get", ["-P", "16"]),
               "redis_d4096": ("set,get", ["-d", "4096"])}
# redis-benchmark's row names: test -> the row's name (up to the first space).
REDIS_ROWS = {"set": "SET", "get": "GET", "incr": "INCR", "lpush": "LPUSH",
              "lrange_100": "LRANGE_100"}


def wl_redis(run, layout, name):
    port = PORTS["redis"]
    ip = run.ip(layout)
    tests, extra = REDIS_TESTS[name]
    n = run.secs(50000, 200000) * (10 if "-P" in extra else 1)
    srv = run.start("redis-server", layout, redis_argv(run, layout, port), port)
    argv = [TOOLS["redis-benchmark"], "-h", ip, "-p", str(port), "-c", "50", "-n", str(n),
            "-t", tests, "--csv"] + extra
    try:
        before = redis_info(run, ip, port)
        r, c = run.window(lambda: run.bed.run(run.bed.client_ns, argv, timeout=240))
        after = redis_info(run, ip, port)
        run.stop(srv)
    finally:
        run.bed.stop(srv)
    if r.returncode != 0:
        raise CheckError("redis-benchmark exit %d: %s %s" % (r.returncode, r.stdout, r.stderr))
    rows = [l.replace('"', "").split(",") for l in r.stdout.splitlines()]
    header = next((row for row in rows if row and row[0] == "test"), None)
    got = {row[0].split()[0]: row for row in rows
           if row and row[0] != "test" and "needed" not in row[0]}
    want = [REDIS_ROWS[t] for t in tests.split(",")]
    if not header or any(w not in got for w in want):
        raise CheckError("redis-benchmark did not report %s:\n%s" % (want, r.stdout))
    # LRANGE_100 is preceded by an LPUSH run that fills the list.
    requests = n * (len(want) + (1 if "LRANGE_100" in want else 0))
    done = int(after.get("total_commands_processed", 0)) - \
        int(before.get("total_commands_processed", 0))
    errs = int(after.get("total_error_replies", 0)) - int(before.get("total_error_replies", 0))
    if errs or after.get("rejected_connections", "0") != "0" or done < requests:
        raise CheckError("redis: %d commands for %d requests, %d error replies, %s rejected"
                         % (done, requests, errs, after.get("rejected_connections")))
    m = {}
    rates = []
    for w in want:
        row = got[w]
        rates.append(float(row[1]))
        m["%s req/s" % w] = (float(row[1]), "req/s", "higher")
        for col, label in (("p50_latency_ms", "p50"), ("p99_latency_ms", "p99")):
            if col in header:
                m["%s %s" % (w, label)] = (float(row[header.index(col)]) * 1e3, "us", "lower")
    m["geomean req/s"] = (math.exp(sum(math.log(x) for x in rates) / len(rates)), "req/s",
                          "higher")
    m["CPU per req"] = cpu_per(c, requests, "req")
    return {"metrics": m, "primary": "geomean req/s", "cpu": {"run": c},
            "client_argv": argv_text(argv)}


def nginx_up(run, layout, name, http2=False):
    port = PORTS["nginx"]
    ip = run.ip(layout)
    listen = "0.0.0.0:%d" % port if layout == "slipstream" else "%s:%d" % (ip, port)
    if http2:
        listen += " http2"      # HTTP/2 over cleartext, prior knowledge (h2c)
    srv = apps_lib.nginx_start(run.bed, name, run.side(layout), listen, master=True,
                               workers=2, sendfile="on")

    def two_workers(proc):
        deadline = time.monotonic() + 10
        while len(apps_lib.nginx_workers(proc)) != 2:
            if time.monotonic() > deadline:
                raise CheckError("nginx has %d workers, want 2"
                                 % len(apps_lib.nginx_workers(proc)))
            time.sleep(0.1)
    try:
        run.ready(srv, layout, port, two_workers)
    except Exception:
        run.bed.stop(srv)
        raise
    return srv, "http://%s:%d" % (ip, port)


def wl_nginx(run, layout, body):
    srv, url = nginx_up(run, layout, "nginx")
    try:
        workers = sorted(apps_lib.nginx_workers(srv))
        seconds = run.secs(3, 10)
        w, c = run.window(lambda: apps_lib.wrk(run.bed, run.side(layout), url + "/" + body,
                                               seconds, conns=50, threads=2, body=body))
        if sorted(apps_lib.nginx_workers(srv)) != workers:
            raise CheckError("nginx workers changed during the run")
        run.stop(srv)
    finally:
        run.bed.stop(srv)
    size = (run.bed.www / body).stat().st_size
    m = {"req/s": (w["rps"], "req/s", "higher"), "p50": (w["p50_us"], "us", "lower"),
         "p99": (w["p99_us"], "us", "lower")}
    if size >= MIB:
        m["body Gbit/s"] = (w["rps"] * size * 8 / 1e9, "Gbit/s", "higher")
        m["CPU per GB"] = cpu_per(c, w["requests"] * size, "GB")
    else:
        m["CPU per req"] = cpu_per(c, w["requests"], "req")
    return {"metrics": m, "primary": "req/s", "cpu": {"run": c},
            "client_argv": "wrk -t2 -c50 -d%ds --timeout 5s -s <body check> URL/%s"
            % (seconds, body)}


def wl_h2load(run, layout):
    srv, url = nginx_up(run, layout, "nginx-h2", http2=True)
    n = run.secs(100000, 400000)
    size = (run.bed.www / "index.html").stat().st_size
    argv = [TOOLS["h2load"], "-c", "50", "-m", "10", "-t", "2", "-n", str(n),
            url + "/index.html"]
    try:
        r, c = run.window(lambda: run.bed.run(run.bed.client_ns, argv, timeout=240))
        run.stop(srv)
    finally:
        run.bed.stop(srv)
    out = r.stdout + r.stderr
    fin = re.search(r"finished in ([\d.]+)s, ([\d.]+) req/s", out)
    req = re.search(r"requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, "
                    r"(\d+) failed, (\d+) errored, (\d+) timeout", out)
    st = re.search(r"status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx", out)
    data = re.search(r"traffic: .*\((\d+)\) data", out)
    lat = re.search(r"time for request:\s+([\d.]+)(\w+)\s+([\d.]+)(\w+)\s+([\d.]+)(\w+)", out)
    if r.returncode != 0 or not (fin and req and st and data and lat):
        raise CheckError("h2load exit %d:\n%s" % (r.returncode, out[-2000:]))
    total, _, done, ok, failed, errored, timeout = (int(x) for x in req.groups())
    if not (total == done == ok == n) or failed or errored or timeout or \
            int(st.group(1)) != n or int(data.group(1)) != n * size:
        raise CheckError("h2load: not every request answered with the whole body:\n%s"
                         % out[-2000:])
    m = {"req/s": (float(fin.group(2)), "req/s", "higher"),
         "mean latency": (float(lat.group(5)) * apps_lib._UNITS[lat.group(6)], "us", "lower"),
         "CPU per req": cpu_per(c, n, "req")}
    return {"metrics": m, "primary": "req/s", "cpu": {"run": c},
            "client_argv": "h2load -c 50 -m 10 -t 2 -n %d URL/index.html" % n}


def wl_curl(run, layout):
    srv, url = nginx_up(run, layout, "nginx-curl")
    fetches = run.secs(3, 10)
    try:
        def fetch_all():
            return [apps_lib.curl_sha(run.bed, run.side(layout), url + "/big.bin",
                                      name="curl") for _ in range(fetches)]
        got, c = run.window(fetch_all)
        run.stop(srv)
    finally:
        run.bed.stop(srv)
    rates = sorted(g["mbyte_s"] for g in got)
    m = {"median MB/s": (rates[len(rates) // 2], "MB/s", "higher"),
         "CPU per GB": cpu_per(c, fetches * apps_lib.BIG_FILE_BYTES, "GB")}
    return {"metrics": m, "primary": "median MB/s", "cpu": {"run": c},
            "fetch_mbyte_s": rates, "client_argv": "curl -sS --fail URL/big.bin (x%d)" % fetches}


def wl_iperf3(run, layout, reverse, streams):
    port = PORTS["iperf3"]
    ip = run.ip(layout)
    srv = run.start("iperf3", layout, [TOOLS["iperf3"], "-s", "-p", str(port), "-B", ip], port)
    seconds = run.secs(3, 10)
    try:
        f, c = run.window(lambda: apps_lib.iperf3_client(run.bed, run.side(layout), ip, port,
                                                         seconds, reverse, streams=streams))
        run.stop(srv)
    finally:
        run.bed.stop(srv)
    m = {"Gbit/s": (f["gbit_s"], "Gbit/s", "higher"), "CPU per GB": cpu_per(c, f["bytes"], "GB")}
    return {"metrics": m, "primary": "Gbit/s", "cpu": {"run": c},
            "client_argv": "iperf3 -c ADDR -t %d%s%s" % (seconds, " -R" if reverse else "",
                                                          " -P %d" % streams if streams > 1
                                                          else "")}


def wl_sockperf(run, layout):
    port = PORTS["sockperf"]
    ip = run.ip(layout)
    srv = run.start("sockperf", layout, [TOOLS["sockperf"], "server", "--tcp", "-i",
                                         run.bind(layout), "-p", str(port)], port)
    seconds = run.secs(3, 10)
    try:
        p, c = run.window(lambda: apps_lib.sockperf_pingpong(run.bed, run.side(layout), ip,
                                                             port, seconds))
        run.stop(srv)
    finally:
        run.bed.stop(srv)
    m = {"p50 (1-way)": (p["p50_us"], "us", "lower"), "p99 (1-way)": (p["p99_us"], "us", "lower"),
         "round trips/s": (p["rt_s"], "rt/s", "higher"),
         "CPU per round trip": cpu_per(c, p["round_trips"], "rt")}
    return {"metrics": m, "primary": "p50 (1-way)", "cpu": {"run": c},
            "client_argv": "sockperf ping-pong --tcp -i ADDR -t %d -m 64" % seconds}


def wl_memcached(run, layout):
    port = PORTS["memcached"]
    ip = run.ip(layout)
    mc = run.bed.build_mc_load()
    srv = run.start("memcached", layout, [TOOLS["memcached"], "-u", "root", "-t", "2", "-p",
                                          str(port), "-U", "0", "-l", run.bind(layout), "-m",
                                          "256", "-c", "1024"], port)
    m, cpus, argvs = {}, {}, []
    secs = run.secs("2", "5")
    try:
        for label, sizes, conns in (("mixed", "16,100,1000,4000,16000,100000", 20),
                                    ("small", "32,100,400", 50)):
            argv = [str(mc), "--host", ip, "--port", str(port), "--conns", str(conns),
                    "--seconds", secs, "--stall", "5", "--sizes", sizes, "--keys", "32"]
            argvs.append(argv_text(argv))
            r, c = run.window(lambda: run.bed.run(run.bed.client_ns, argv, timeout=60))
            d = last_json(r.stdout)
            if r.returncode != 0 or not d or d["errors"] or d["mismatches"] or \
                    d["verified"] < 100:
                raise CheckError("mc_load (%s values): exit %d: %s %s" % (
                    label, r.returncode, r.stdout.strip(), r.stderr.strip()[-500:]))
            m["%s set+get/s" % label] = (d["ops_per_s"], "op/s", "higher")
            m["%s p50" % label] = (d["p50_us"], "us", "lower")
            m["%s p99" % label] = (d["p99_us"], "us", "lower")
            ops = d.get("ops") or d["ops_per_s"] * float(secs)
            m["%s CPU per op" % label] = cpu_per(c, ops, "op")
            cpus[label] = c
        run.stop(srv)
    finally:
        run.bed.stop(srv)
    return {"metrics": m, "primary": "small set+get/s", "cpu": cpus, "client_argv": argvs}


WORKLOADS = {
    "rr_mix_1": (lambda r, l: wl_rr_mix(r, l, 1), ()),
    "rr_mix_100": (lambda r, l: wl_rr_mix(r, l, 100), ()),
    "rr_mix_1000": (lambda r, l: wl_rr_mix(r, l, 1000), ()),
    "redis": (lambda r, l: wl_redis(r, l, "redis"), ("redis-server", "redis-cli",
                                                      "redis-benchmark")),
    "redis_P16": (lambda r, l: wl_redis(r, l, "redis_P16"), ("redis-server", "redis-cli",
                                                              "redis-benchmark")),
    "redis_d4096": (lambda r, l: wl_redis(r, l, "redis_d4096"), ("redis-server", "redis-cli",
                                                                  "redis-benchmark")),
    "nginx_small": (lambda r, l: wl_nginx(r, l, "index.html"), ("nginx", "wrk")),
    "nginx_1m": (lambda r, l: wl_nginx(r, l, "1m.bin"), ("nginx", "wrk")),
    "h2load": (wl_h2load, ("nginx", "h2load")),
    "curl_10m": (wl_curl, ("nginx", "curl")),
    "iperf3_in_P1": (lambda r, l: wl_iperf3(r, l, False, 1), ("iperf3",)),
    "iperf3_in_P8": (lambda r, l: wl_iperf3(r, l, False, 8), ("iperf3",)),
    "iperf3_out_P1": (lambda r, l: wl_iperf3(r, l, True, 1), ("iperf3",)),
    "iperf3_out_P8": (lambda r, l: wl_iperf3(r, l, True, 8), ("iperf3",)),
    "sockperf": (wl_sockperf, ("sockperf",)),
    "memcached": (wl_memcached, ("memcached",)),
}
TITLES = {
    "rr_mix_1": "rr_mix, 1 connection", "rr_mix_100": "rr_mix, 100 connections",
    "rr_mix_1000": "rr_mix, 1000 connections",
    "redis": "redis-benchmark -c 50", "redis_P16": "redis-benchmark -c 50 -P 16",
    "redis_d4096": "redis-benchmark -c 50 -d 4096",
    "nginx_small": "nginx, wrk -t2 -c50, 593 B file", "nginx_1m": "nginx, wrk -t2 -c50, 1 MiB file",
    "h2load": "nginx, h2load -c 50 -m 10 (HTTP/2), 593 B file",
    "curl_10m": "nginx, curl 10 MiB (sha256)",
    "iperf3_in_P1": "iperf3 into the server, -P 1", "iperf3_in_P8": "iperf3 into the server, -P 8",
    "iperf3_out_P1": "iperf3 out of the server (-R), -P 1",
    "iperf3_out_P8": "iperf3 out of the server (-R), -P 8",
    "sockperf": "sockperf ping-pong, 64 B", "memcached": "memcached -t 2, mc_load",
}


# ---- choosing Linux's layout, the table -------------------------------------------

def better(a, b, how):
    return a > b if how == "higher" else a < b


def best_linux(res):
    """The Linux layout to compare: the better primary figure of the two."""
    ok = [l for l in ("linux", "linux-pinned") if res.get(l) and not res[l].get("error")]
    if not ok:
        return None
    if len(ok) == 1:
        return ok[0]
    a, b = res["linux"], res["linux-pinned"]
    p = a["primary"]
    va, vb, how = a["metrics"][p][0], b["metrics"][p][0], a["metrics"][p][2]
    return "linux-pinned" if better(vb, va, how) else "linux"


def fmt(v, unit):
    if v is None:
        return "-"
    if unit == "Gbit/s":
        return "%.2f %s" % (v, unit)
    if unit.startswith("CPU-"):
        return ("%.1f %s" if v < 100 else "%.0f %s") % (v, unit)
    if unit == "us":
        return ("%.1f us" % v) if v < 100 else "{:,.0f} us".format(v)
    return "{:,.0f} {}".format(v, unit)


def contended(d):
    return any((c.get("foreign_cpu_s") or 0) >= CONTENDED_CPU_S
               for c in (d.get("cpu") or {}).values())


def markdown(doc):
    lines = ["| workload (Linux layout compared) | metric | Slipstream | Linux | Slipstream / Linux |",
             "|---|---|---:|---:|---:|"]
    notes = []
    for name, res in doc["workloads"].items():
        ss = res.get("slipstream") or {}
        lay = res.get("linux_best")
        lin = res.get(lay) if lay else {}
        title = "%s (%s)" % (TITLES[name], LAYOUT_TITLES[lay] if lay else "Linux failed")
        if ss.get("error"):
            lines.append("| %s | **Slipstream FAILED** | %s | | |" % (
                title, ss["error"].splitlines()[0][:160].replace("|", "/")))
        for l in ("linux", "linux-pinned"):
            if (res.get(l) or {}).get("error"):
                notes.append("%s, Linux %s failed: %s" % (
                    name, LAYOUT_TITLES[l], res[l]["error"].splitlines()[0][:160]))
        mets = list((ss.get("metrics") or {}).keys())
        mets += [k for k in (lin.get("metrics") or {}) if k not in mets]
        for k in mets:
            sv = (ss.get("metrics") or {}).get(k)
            lv = (lin.get("metrics") or {}).get(k)
            unit = (sv or lv)[1]
            ratio = "%.2f" % (sv[0] / lv[0]) if sv and lv and lv[0] else "-"
            mark = ""
            if k == (ss.get("primary") or lin.get("primary")):
                mark = "**"
            lines.append("| %s | %s%s%s | %s | %s | %s%s%s |" % (
                title, mark, k, mark, fmt(sv and sv[0], unit), fmt(lv and lv[0], unit),
                mark, ratio, mark))
            title = ""
        for side, d in (("Slipstream", ss), ("Linux", lin)):
            if d and contended(d):
                c = max((d.get("cpu") or {}).values(), key=lambda c: c.get("foreign_cpu_s") or 0)
                notes.append("%s, %s: contended, other processes took %.1f CPU-s (%s)" % (
                    name, side, c["foreign_cpu_s"], ", ".join(c.get("foreign_top", [])[:3])))
    layout_lines = ["| workload | primary figure | Linux not pinned | Linux pinned to CPU %d | "
                    "compared |" % PIN_CPU, "|---|---|---:|---:|---|"]
    for name, res in doc["workloads"].items():
        vals = []
        prim, unit = None, None
        for l in ("linux", "linux-pinned"):
            d = res.get(l) or {}
            if d.get("error") or not d.get("metrics"):
                vals.append("failed" if d.get("error") else "-")
                continue
            prim = d["primary"]
            unit = d["metrics"][prim][1]
            vals.append(fmt(d["metrics"][prim][0], unit))
        lay = res.get("linux_best")
        layout_lines.append("| %s | %s | %s | %s | %s |" % (
            name, prim or "-", vals[0], vals[1], LAYOUT_TITLES[lay] if lay else "-"))
    return lines, layout_lines, notes


def write_md(doc, path):
    lines, layout_lines, notes = markdown(doc)
    m = doc["machine"]
    text = ["# Standard workloads: Slipstream against Linux", "",
            "Generated by `%s` (%s run) on commit %s%s; %d CPUs (%s), kernel %s." % (
                doc["command"], "quick" if doc["quick"] else "full",
                (m.get("git_commit") or "?")[:12], " (with uncommitted changes)"
                if m.get("git_dirty") else "", m.get("cpus") or 0, m.get("cpu_model") or "?",
                m.get("kernel") or "?"), "",
            "Bed: tests/integration/apps_lib.py's Bed: service veth (AF_XDP), peers on a "
            "switch; clients in peer1 on Linux.  Slipstream: `%s` (no tuning options), the "
            "server under `slipstream run --strict` (no --conns/--buf), not pinned.  Linux: the "
            "same server in peer2, not pinned and pinned to CPU %d; the better of the two by "
            "the workload's primary figure (in bold) is compared.  CPU: the whole machine's "
            "busy time (/proc/stat, every CPU: client, server, kernel, service) over the "
            "client's run, less other processes' CPU time, per request or per GB.  Ratios are Slipstream / Linux: above 1 is "
            "better for Slipstream in rates, worse in latencies and CPU." % (
                doc["service_argv"], PIN_CPU), ""]
    text += lines
    text += ["", "Linux's two layouts (primary figure):", ""] + layout_lines
    if notes:
        text += ["", "Notes:", ""] + ["* " + n for n in notes]
    if doc.get("service_problems"):
        text += ["", "Service problems at exit:", ""] + ["* " + p for p in
                                                         doc["service_problems"]]
    Path(path).write_text("\n".join(text) + "\n")


def plain_table(doc):
    lines, layout_lines, notes = markdown(doc)
    return "\n".join(lines + [""] + layout_lines + [""] + notes)


# ---- main -------------------------------------------------------------------------

@contextlib.contextmanager
def bed_lock(path):
    """flock(2) on @path for the block (the same lock as flock(1)), or nothing."""
    if not path:
        yield
        return
    with open(path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def service_drops(bed, before):
    after = bed.svc.stats()
    return {k: v - before.get(k, 0) for k, v in after.items()
            if isinstance(v, int) and v - before.get(k, 0) and
            (k.startswith("drop_") or "retrans" in k or "rto" in k)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="3 s measurements, fewer requests")
    ap.add_argument("--only", help="comma-separated workloads (%s)" % ", ".join(WORKLOADS))
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--md", help="write the markdown table here")
    ap.add_argument("--prefix", default="swb%d" % (os.getpid() % 1000))
    ap.add_argument("--lock", help="flock this file for each workload (e.g. /tmp/ss-bed.lock)")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("workloads.py: run as root (network namespaces)")
    names = list(WORKLOADS)
    if args.only:
        names = [n.strip() for n in args.only.split(",") if n.strip()]
        bad = [n for n in names if n not in WORKLOADS]
        if bad:
            sys.exit("workloads.py: unknown workload %s (have: %s)" % (", ".join(bad),
                                                                        ", ".join(WORKLOADS)))
    if not apps_lib.harness.SERVICE_BIN.exists():
        sys.exit("workloads.py: %s not built" % rel(apps_lib.harness.SERVICE_BIN))
    command = "bench/workloads.py" + (" --quick" if args.quick else "") + \
        (" --only " + args.only if args.only else "")
    from benchsuite import machine
    doc = {"command": command, "quick": args.quick, "machine": machine.facts(REPO),
           "linux_pin_cpu": PIN_CPU, "workloads": {}}
    doc["machine"].pop("hostname", None)
    bed = apps_lib.Bed(args.prefix[:10])
    failed = 0
    t_start = time.monotonic()
    problems = []
    try:
        with bed_lock(args.lock):
            bed.up()
            (bed.www / "1m.bin").write_bytes(os.urandom(MIB))
            os.chmod(bed.www / "1m.bin", 0o644)
        svc_argv = [rel(bed.svc.argv[0])]
        skip = False
        for a in bed.svc.argv[1:]:
            if skip:
                skip = False
                continue
            if a == "--ctl":
                skip = True
                continue
            svc_argv.append(a)
        doc["service_argv"] = " ".join(svc_argv)
        run = Run(bed, args.quick)
        for name in names:
            fn, tools = WORKLOADS[name]
            res = {}
            doc["workloads"][name] = res
            missing = [t for t in tools if not TOOLS.get(t)]
            with bed_lock(args.lock):
                for layout in LAYOUTS:
                    t0 = time.monotonic()
                    k0 = bed.svc.stats() if layout == "slipstream" else None
                    try:
                        if missing:
                            raise CheckError("missing programs: %s" % ", ".join(missing))
                        d = fn(run, layout)
                        if layout == "slipstream":
                            bed.wait_service_idle("after %s" % name)
                    except CheckError as e:
                        d = {"error": str(e)}
                    except Exception as e:  # report it, go on
                        d = {"error": "%s: %s" % (type(e).__name__, e),
                             "traceback": traceback.format_exc()}
                    if k0 is not None and bed.svc.alive():
                        d["service_counters"] = service_drops(bed, k0)
                    d["seconds"] = round(time.monotonic() - t0, 1)
                    res[layout] = d
                    failed += "error" in d
                    prim = d.get("primary")
                    status = "FAILED: " + d["error"][:1500] if "error" in d else \
                        "%s %s" % (prim, fmt(*d["metrics"][prim][:2]))
                    print("[%5.0fs] %-14s %-13s %s" % (time.monotonic() - t_start, name,
                                                       layout, status), flush=True)
                    if not bed.svc.alive():
                        raise RuntimeError("slipstreamd died during %s (%s)" % (name, layout))
            res["linux_best"] = best_linux(res)
    finally:
        with bed_lock(args.lock):
            problems = bed.down()
    doc["service_problems"] = problems
    doc["wall_s"] = round(time.monotonic() - t_start, 1)
    doc["tools"] = tool_versions()
    print()
    print(plain_table(doc))
    for p in problems:
        print("SERVICE: " + p)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")
    if args.md:
        write_md(doc, args.md)
    sys.exit(1 if failed or problems else 0)


def tool_versions():
    out = {}
    for t, argv in (("redis-server", ["--version"]), ("nginx", ["-v"]), ("wrk", ["-v"]),
                    ("iperf3", ["--version"]), ("sockperf", ["--version"]),
                    ("memcached", ["-V"]), ("curl", ["--version"])):
        if TOOLS.get(t):
            try:
                r = subprocess.run([TOOLS[t]] + argv, capture_output=True, text=True, timeout=10)
                out[t] = ((r.stdout or r.stderr).strip().splitlines() or [""])[0][:120]
            except (OSError, subprocess.TimeoutExpired):
                pass
    out["platform"] = platform.platform()
    return out


if __name__ == "__main__":
    main()
