#!/usr/bin/python3
"""tcp_compare.py - TCP servers on Slipstream's low-level API against Linux sockets, in one run.

Test bed: a switch namespace joins the service (198.18.0.1, DPDK PMD on its
veth), peer1 (198.18.0.2, the client for both) and peer2 (198.18.0.3, the
Linux kernel serving the same workloads).  Only the server side differs:

  server      Slipstream: slipstreamd (svc namespace) + ss-echo / ss-stream
              attached to it;  Linux: linux_echo / linux_bulk in peer2.
  client      Linux, in peer1: linux_rpc / linux_bulk, the same binary for both.

Workloads (each on Slipstream, then on Linux):
  rpc1, rpc64   64-byte request/echo, 1 and 64 connections, one request in
                flight per connection (requests/s, p50/p99 latency);
  bulk_in       one stream client -> server for --bulk-seconds (Gbit/s);
  bulk_out      one stream server -> client.
For each: CPU busy time of the whole machine from /proc/stat during the
client's run (all CPUs and per CPU; client, server and softirq together,
since they share the machine).  Prints a table with Slipstream/Linux ratios;
--json FILE writes everything.  --quick runs it all in under two minutes.
"""

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tools"))

from slipstream_tools import ctl, testbed  # noqa: E402

BUILD = Path(os.environ.get("SLIPSTREAM_BUILD") or REPO / "build")
SERVICE_BIN = BUILD / "src/service/slipstreamd"
SS_ECHO = BUILD / "tools/apps/ss-echo"
SS_STREAM = BUILD / "bench/ss-stream"
LINUX_ECHO = BUILD / "bench/linux_echo"
LINUX_RPC = BUILD / "bench/linux_rpc"
LINUX_BULK = BUILD / "bench/linux_bulk"
LINUX_IP = "198.18.0.3"
ECHO_PORT = 7000
BULK_PORT = 7100
RPC_SIZE = 64
CPU_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")


# ---- CPU accounting --------------------------------------------------------

def cpu_snapshot():
    """{"cpu": [jiffies...], "cpu0": [...], ...} from /proc/stat."""
    snap = {}
    with open("/proc/stat") as f:
        for line in f:
            if not line.startswith("cpu"):
                break
            parts = line.split()
            snap[parts[0]] = [int(x) for x in parts[1:1 + len(CPU_FIELDS)]]
    return snap


def cpu_delta(a, b):
    """Per CPU line: busy fraction (of one CPU) and the breakdown, a -> b."""
    out = {}
    for name in b:
        d = [y - x for x, y in zip(a[name], b[name])]
        total = max(1, sum(d))
        idle = d[3] + d[4]
        ent = {"busy": (total - idle) / total}
        ent.update({k: v / total for k, v in zip(CPU_FIELDS, d)
                    if k not in ("idle", "iowait", "nice")})
        out[name] = ent
    ncpu = len(out) - 1
    # Whole machine in cores: fraction of all CPUs times their number.
    out["busy_cores"] = out["cpu"]["busy"] * ncpu
    return out


# ---- processes ---------------------------------------------------------------

def last_json(text, what):
    for line in reversed(text.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            return json.loads(line)
    raise RuntimeError("%s printed no JSON line: %r" % (what, text[-500:]))


class Procs:
    """Every process started here, for the finally block."""

    def __init__(self):
        self.procs = []

    def pids(self):
        return {p.pid for p in self.procs} | {os.getpid()}

    def start(self, tb, ns, argv, log, env=None):
        f = open(log, "w")
        p = tb.ns_popen(ns, [str(a) for a in argv], stdout=f, stderr=subprocess.STDOUT,
                        env=env)
        p.log = log
        self.procs.append(p)
        return p

    def stop(self, p, grace=5.0):
        if p.poll() is None:
            p.terminate()
            try:
                p.wait(grace)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        return p.returncode

    def stop_all(self):
        for p in reversed(self.procs):
            try:
                self.stop(p, 3.0)
            except OSError:
                pass


def wait_log(p, needle, timeout=15.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if needle in Path(p.log).read_text(errors="replace"):
            return
        if p.poll() is not None:
            break
        time.sleep(0.05)
    raise RuntimeError("%s not ready (%r): %s" % (p.args, needle,
                                                  Path(p.log).read_text()[-500:]))


def wait_port(tb, ns, ip, port, timeout=15.0):
    """Until a TCP connect from ns to ip:port succeeds."""
    probe = ("import socket,sys,time\n"
             "d=time.monotonic()+%f\n"
             "while True:\n"
             " try:\n  socket.create_connection(('%s',%d),1).close();break\n"
             " except OSError:\n"
             "  if time.monotonic()>d: sys.exit(1)\n"
             "  time.sleep(0.1)\n" % (timeout, ip, port))
    r = tb.ns_exec(ns, [sys.executable, "-c", probe], timeout=timeout + 5)
    if r.returncode:
        raise RuntimeError("nothing listening on %s:%d" % (ip, port))


def start_service(tb, procs, pmd, ctl_path):
    argv = [SERVICE_BIN, "--ip", tb.service_cidr, "--gateway", tb.gateway,
            "--ctl", ctl_path, "--"] + tb.dpdk_args(pmd) + ["-l", "0"]
    p = procs.start(tb, tb.svc_ns, argv, "/tmp/tcp-compare-%s-svc.log" % tb.prefix)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if p.poll() is not None:
            raise RuntimeError("slipstreamd exited (%s); see %s" % (p.returncode, p.log))
        try:
            ctl.ctl_query("stats", ctl_path)
            return p
        except Exception:
            time.sleep(0.2)
    raise RuntimeError("slipstreamd not ready after 30 s; see %s" % p.log)


def thread_affinity(pid):
    """{thread name: allowed CPU list} of every thread of pid."""
    out = {}
    for task in sorted(Path("/proc/%d/task" % pid).iterdir()):
        try:
            name = (task / "comm").read_text().strip()
            for line in (task / "status").read_text().splitlines():
                if line.startswith("Cpus_allowed_list:"):
                    out["%s[%s]" % (name, task.name)] = line.split(":", 1)[1].strip()
        except OSError:
            pass
    return out


def foreign_load(ours):
    """{pid: (name, CPU ticks so far)} of other slipstreamd / pytest / ss-*
    processes on the machine (someone else's tests), so a run can say how
    much CPU they took while it ran."""
    found = {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit() or int(d.name) in ours:
            continue
        try:
            argv = (d / "cmdline").read_bytes().split(b"\0")
            stat = (d / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        text = b" ".join(argv).decode(errors="replace")
        name = os.path.basename(argv[0].decode(errors="replace"))
        if ("slipstreamd" in text or "pytest" in text or name.startswith("ss-")) \
                and "tcp_compare" not in text:
            found[int(d.name)] = (name, int(stat[11]) + int(stat[12]))  # utime + stime
    return found


def foreign_cpu(f0, f1):
    """CPU seconds the foreign processes used between two foreign_load()s."""
    hz = os.sysconf("SC_CLK_TCK")
    return sum(t - f0.get(pid, (None, 0))[1] for pid, (_, t) in f1.items()) / hz


def counters(ctl_path):
    try:
        return ctl.ctl_query("stats", ctl_path)["counters"]
    except Exception:
        return {}


# ---- one measurement ---------------------------------------------------------

def run_client(tb, client_ns, argv, timeout, procs):
    """Run the client in peer1, with CPU accounting around it."""
    f0 = foreign_load(procs.pids())
    c0, w0 = cpu_snapshot(), time.monotonic()
    r = tb.ns_exec(client_ns, [str(a) for a in argv], timeout=timeout)
    wall = time.monotonic() - w0
    cpu = cpu_delta(c0, cpu_snapshot())
    f1 = foreign_load(procs.pids())
    foreign = sorted("%d:%s" % (pid, name) for pid, (name, _) in {**f0, **f1}.items())
    res = last_json(r.stdout, argv[0])
    res["exit"] = r.returncode
    if r.returncode:
        res.setdefault("error", "exit %d" % r.returncode)
        res["stderr"] = r.stderr[-500:]
    res["wall_s"] = wall
    res["cpu"] = cpu
    res["contended_by"] = foreign
    # CPU seconds other people's processes took during the run; their
    # kernel-side work (softirq for their veths) is not in it.
    res["foreign_cpu_s"] = foreign_cpu(f0, f1)
    return res


def rpc(tb, procs, a, client_ns, ip, conns):
    return run_client(tb, client_ns, [LINUX_RPC, "--connect", "%s:%d" % (ip, ECHO_PORT),
                                      "--conns", conns, "--size", RPC_SIZE,
                                      "--seconds", a.seconds, "--warmup", a.warmup],
                      a.seconds + a.warmup + 40, procs)


def bulk(tb, procs, a, client_ns, side, direction, port):
    """direction "in": client sends to the server; "out": the server sends."""
    server_mode = "recv" if direction == "in" else "send"
    limit = ["--seconds", a.bulk_seconds]
    if side == "slipstream":
        argv = [SS_STREAM, server_mode, "--port", port, "--buf", a.buf]
        argv += limit if server_mode == "send" else []
        srv = procs.start(tb, tb.svc_ns, argv, "/tmp/tcp-compare-%s-ss-stream.log" % tb.prefix,
                          env=dict(os.environ, SLIPSTREAM_SOCK=a.ctl_path))
        wait_log(srv, "listening")
        ip = tb.service_ip
    else:
        argv = [LINUX_BULK, server_mode, "--listen", port]
        argv += limit if server_mode == "send" else []
        srv = procs.start(tb, tb.peer(2).ns, argv,
                          "/tmp/tcp-compare-%s-linux-bulk.log" % tb.prefix)
        wait_log(srv, "listening")
        ip = LINUX_IP
    client_mode = "send" if direction == "in" else "recv"
    argv = [LINUX_BULK, client_mode, "--connect", "%s:%d" % (ip, port)]
    argv += limit if client_mode == "send" else []
    res = run_client(tb, client_ns, argv, a.bulk_seconds + 60, procs)
    try:
        srv.wait(30)
    except subprocess.TimeoutExpired:
        procs.stop(srv)
    res["server"] = last_json(Path(srv.log).read_text(errors="replace"), str(argv[0]))
    if res["server"].get("error"):
        res["error"] = res.get("error") or "server: %s" % res["server"]["error"]
    elif res["server"]["bytes"] != res["bytes"]:
        res["error"] = "byte count: client %d, server %d" % (res["bytes"],
                                                            res["server"]["bytes"])
    return res


def metric(key, r):
    return r["rps"] if key.startswith("rpc") else r["gbps"]


def summary(key, r):
    if key.startswith("rpc"):
        return "%.0f req/s p50 %.1f us p99 %.1f us" % (r["rps"], r["p50_us"], r["p99_us"])
    return "%.2f Gbit/s" % r["gbps"]


def median_run(key, runs):
    """The run with the median throughput (the lower middle one for an even
    count), all runs' summaries attached."""
    ranked = sorted(runs, key=lambda r: metric(key, r))
    med = dict(ranked[(len(ranked) - 1) // 2])
    med["runs"] = [{"metric": metric(key, r), "busy_cores": r["cpu"]["busy_cores"],
                    "p50_us": r.get("p50_us"), "p99_us": r.get("p99_us"),
                    "contended_by": r["contended_by"], "foreign_cpu_s": r["foreign_cpu_s"],
                    "error": r.get("error")}
                   for r in runs]
    med["all_runs"] = runs
    return med


# ---- output ------------------------------------------------------------------

WORKLOADS = [
    ("rpc1", "RPC 64 B, 1 conn"),
    ("rpc64", "RPC 64 B, 64 conns"),
    ("bulk_in", "bulk client -> server"),
    ("bulk_out", "bulk server -> client"),
]


def ratio(s, l):
    return s / l if l else float("nan")


def table(res):
    rows = []
    for key, title in WORKLOADS:
        s, l = res["slipstream"][key], res["linux"][key]
        if key.startswith("rpc"):
            rows.append((title + ": req/s", s["rps"], l["rps"], "%.0f"))
            rows.append(("  p50 latency (us)", s["p50_us"], l["p50_us"], "%.1f"))
            rows.append(("  p99 latency (us)", s["p99_us"], l["p99_us"], "%.1f"))
        else:
            rows.append((title + ": Gbit/s", s["gbps"], l["gbps"], "%.2f"))
        rows.append(("  CPU busy (cores of %d)" % res["ncpu"],
                     s["cpu"]["busy_cores"], l["cpu"]["busy_cores"], "%.2f"))
        for c in range(res["ncpu"]):
            n = "cpu%d" % c
            sc, lc = s["cpu"][n], l["cpu"][n]
            rows.append(("    cpu%d busy (usr/sys/si %%)" % c, sc["busy"], lc["busy"],
                         "%.2f", "%2.0f/%2.0f/%2.0f" % tuple(100 * sc[k] for k in
                                                        ("user", "system", "softirq")),
                         "%2.0f/%2.0f/%2.0f" % tuple(100 * lc[k] for k in
                                                    ("user", "system", "softirq"))))
        if key.startswith("rpc"):
            per_s, per_l = s["rps"], l["rps"]
            rows.append(("  CPU us per request", 1e6 * s["cpu"]["busy_cores"] / per_s
                         if per_s else float("nan"),
                         1e6 * l["cpu"]["busy_cores"] / per_l if per_l else float("nan"),
                         "%.1f"))
        else:
            rows.append(("  CPU s per GB", s["cpu"]["busy_cores"] * 8 / s["gbps"]
                         if s["gbps"] else float("nan"),
                         l["cpu"]["busy_cores"] * 8 / l["gbps"] if l["gbps"] else float("nan"),
                         "%.2f"))
    lines = ["%-34s %17s %17s %7s" % ("", "Slipstream", "Linux", "ratio")]
    for row in rows:
        name, sv, lv, fmt = row[:4]
        sv_s, lv_s = fmt % sv, fmt % lv
        if len(row) > 4:
            sv_s, lv_s = "%s %s" % (row[4], sv_s), "%s %s" % (row[5], lv_s)
        lines.append("%-34s %17s %17s %7.2f" % (name, sv_s, lv_s, ratio(sv, lv)))
    return "\n".join(lines)


LAYOUT = (
    "core layout: Slipstream = slipstreamd with EAL -l 0 (main lcore = fast path, "
    "pinned to CPU 0; its control/EAL helper threads: see 'affinity'), ss-echo / "
    "ss-stream: one context, one unpinned thread; Linux = linux_echo / linux_bulk: "
    "one unpinned thread + kernel softirq wherever the veth delivers; client "
    "(linux_rpc / linux_bulk in peer1): one unpinned thread. Nothing else pinned.")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pmd", default="af_xdp", choices=["af_xdp", "af_packet"])
    ap.add_argument("--seconds", type=int, default=10, help="measured seconds per RPC run")
    ap.add_argument("--warmup", type=int, default=2, help="RPC warm-up seconds (not counted)")
    ap.add_argument("--bulk-seconds", type=int, default=10, help="seconds per bulk run")
    ap.add_argument("--buf", type=int, default=1 << 20,
                    help="Slipstream per-connection ring for bulk (power of two)")
    ap.add_argument("--idle-seconds", type=float, default=3.0,
                    help="CPU baseline with everything idle")
    ap.add_argument("--quick", action="store_true",
                    help="3 s per run, 1 s warm-up (under two minutes in all)")
    ap.add_argument("--repeat", type=int,
                    help="runs per workload and side, the median run is reported "
                         "(default 3, 1 with --quick)")
    ap.add_argument("--prefix", default="sstcp")
    ap.add_argument("--json", help="write results to this file")
    a = ap.parse_args()
    if a.quick:
        a.seconds, a.warmup, a.bulk_seconds, a.idle_seconds = 3, 1, 3, 1.0
    a.repeat = a.repeat or (1 if a.quick else 3)
    if os.geteuid() != 0:
        sys.exit("tcp_compare.py: run as root (namespaces)")
    for b in (SERVICE_BIN, SS_ECHO, SS_STREAM, LINUX_ECHO, LINUX_RPC, LINUX_BULK):
        if not b.exists():
            sys.exit("tcp_compare.py: %s missing (build bench/ with meson, or set "
                     "SLIPSTREAM_BUILD to a build directory that has it)" % b)

    tb = testbed.Testbed(prefix=a.prefix, peers=2, switch=True)
    a.ctl_path = "/run/slipstream/%s.sock" % a.prefix
    os.makedirs("/run/slipstream", exist_ok=True)
    procs = Procs()
    res = {"pmd": a.pmd, "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
           "ncpu": os.cpu_count(), "argv": sys.argv,
           "loadavg_before": Path("/proc/loadavg").read_text().split()[:3],
           "settings": {"seconds": a.seconds, "warmup": a.warmup,
                        "bulk_seconds": a.bulk_seconds, "buf": a.buf, "rpc_size": RPC_SIZE,
                        "repeat": a.repeat},
           "layout": LAYOUT, "slipstream": {}, "linux": {}}
    failed = []
    t_begin = time.monotonic()
    try:
        tb.up()
        p2 = tb.peer(2)
        assert p2.ip == LINUX_IP, p2
        client = tb.peer(1).ns
        svc = start_service(tb, procs, a.pmd, a.ctl_path)
        ss_env = dict(os.environ, SLIPSTREAM_SOCK=a.ctl_path)
        echo_ss = procs.start(tb, tb.svc_ns, [SS_ECHO, "--port", ECHO_PORT],
                              "/tmp/tcp-compare-%s-ss-echo.log" % a.prefix, env=ss_env)
        echo_lx = procs.start(tb, p2.ns, [LINUX_ECHO, "--port", ECHO_PORT],
                              "/tmp/tcp-compare-%s-linux-echo.log" % a.prefix)
        wait_port(tb, client, tb.service_ip, ECHO_PORT)
        wait_port(tb, client, LINUX_IP, ECHO_PORT)
        res["affinity"] = {"slipstreamd": thread_affinity(svc.pid),
                           "ss-echo": thread_affinity(echo_ss.pid),
                           "linux_echo": thread_affinity(echo_lx.pid)}
        # Everything started and idle: what does that cost?
        c0 = cpu_snapshot()
        time.sleep(a.idle_seconds)
        res["idle_cpu"] = cpu_delta(c0, cpu_snapshot())

        port = BULK_PORT
        for key, _ in WORKLOADS:
            # Slipstream then Linux, back to back, --repeat times per
            # workload, so outside load disturbs both sides of a ratio alike.
            runs = {"slipstream": [], "linux": []}
            for rep in range(a.repeat):
                for side, ip in (("slipstream", tb.service_ip), ("linux", LINUX_IP)):
                    k0 = counters(a.ctl_path) if side == "slipstream" else None
                    if key.startswith("rpc"):
                        r = rpc(tb, procs, a, client, ip, 1 if key == "rpc1" else 64)
                    else:
                        port += 1
                        r = bulk(tb, procs, a, client, side, key[5:], port)
                    if k0 is not None:
                        k1 = counters(a.ctl_path)
                        r["service_counters"] = {k: v - k0.get(k, 0) for k, v in k1.items()
                                                 if v - k0.get(k, 0)}
                    runs[side].append(r)
                    print("%-9s %-10s #%d %s, CPU %.2f cores%s%s" % (
                        key, side, rep + 1, summary(key, r), r["cpu"]["busy_cores"],
                        ", ERROR %s" % r["error"] if r.get("error") else "",
                        ", contended: %d other processes took %.1f CPU-s"
                        % (len(r["contended_by"]), r["foreign_cpu_s"])
                        if r["contended_by"] else ""), flush=True)
                    if r.get("error"):
                        failed.append("%s/%s: %s" % (side, key, r["error"]))
            for side in runs:
                res[side][key] = median_run(key, runs[side])
    finally:
        procs.stop_all()
        tb.down()
    res["loadavg_after"] = Path("/proc/loadavg").read_text().split()[:3]
    res["elapsed_s"] = time.monotonic() - t_begin

    print("\nTCP servers: Slipstream (%s PMD, low-level API) vs Linux sockets; "
          "client = Linux in peer1 for both" % a.pmd)
    print("%d s per RPC run (+%d s warm-up), %d s per bulk run, median of %d; %s"
          % (a.seconds, a.warmup, a.bulk_seconds, a.repeat, res["date"]))
    print(table(res))
    for key, title in WORKLOADS:
        f = "%.0f" if key.startswith("rpc") else "%.2f"
        print("runs, %-22s Slipstream %s; Linux %s" % (title + ":", *(
            " ".join(f % r["metric"] + ("*" if r["foreign_cpu_s"] >= 0.5 else "")
                     for r in res[side][key]["runs"]) for side in ("slipstream", "linux"))))
    if any(r["foreign_cpu_s"] >= 0.5 for side in ("slipstream", "linux")
           for key, _ in WORKLOADS for r in res[side][key]["runs"]):
        print("* = other slipstreamd/pytest/ss-* processes took >= 0.5 CPU-s during "
              "the run (see --json)")
    idle = res["idle_cpu"]
    print("idle (service + servers started, no load): %.2f cores busy (%s)"
          % (idle["busy_cores"], ", ".join("cpu%d %.0f%%" % (c, 100 * idle["cpu%d" % c]["busy"])
                                           for c in range(res["ncpu"]))))
    print(LAYOUT)
    print("affinity: %s" % json.dumps(res["affinity"]))
    print("load average before %s, after %s; %.0f s in all"
          % (" ".join(res["loadavg_before"]), " ".join(res["loadavg_after"]), res["elapsed_s"]))
    if a.json:
        Path(a.json).write_text(json.dumps(res, indent=2) + "\n")
    if failed:
        print("FAILED: %s" % "; ".join(failed))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
