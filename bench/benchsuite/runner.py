"""One point on one stack: run the client, measure CPU over exactly its
measured window, check the result, and say plainly what went wrong if
anything did.  A failed point is recorded with its reason and no numbers.
"""

import json
import os
import signal
import time

from . import cpu
from . import procs as procmod
from .points import STREAM_WORKLOADS

ECHO_PORT = 7000
PIPE_PORT = 7100        # + the point's index: a fresh port for each pipe_server
KV_PORT = 11211
MEMCACHED = "/usr/bin/memcached"
KV_STALL_S = 5          # kv_load: replies owed and none for this long is an error


class Settings:
    """Times of one run (seconds): measured, warm-up, connection limit."""

    def __init__(self, seconds, warmup, connect_seconds):
        self.seconds, self.warmup, self.connect_seconds = seconds, warmup, connect_seconds

    def as_dict(self):
        return {"seconds": self.seconds, "warmup": self.warmup,
                "connect_seconds": self.connect_seconds}


def last_json(text):
    """The last line of text that parses as a JSON object, or None."""
    for line in reversed(text.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                return json.loads(line)
            except ValueError:
                return None
    return None


def client_argv(build, bench, params, settings, server_ip, port):
    """The client command line of a point: linux_rpc (rpc, short) or
    pipe_client (pipe, loss, interop: it sends to a receive-only server,
    receives from a send-only one)."""
    common = ["--connect", "%s:%d" % (server_ip, port), "--conns", params["conns"],
              "--seconds", settings.seconds, "--warmup", settings.warmup,
              "--connect-seconds", settings.connect_seconds, "--phases"]
    if bench.workload == "kv":
        argv = [os.path.join(build, "bench", "kv_load"), "--keys", params["keys"],
                "--zipf", params["zipf"], "--get-ratio", params["get_ratio"],
                "--stall", KV_STALL_S] + common
        if params.get("rate"):
            argv += ["--rate", "%.0f" % params["rate"]]
            if params.get("pace") == "spin":
                argv += ["--spin"]
        return [str(a) for a in argv]
    if bench.workload in STREAM_WORKLOADS:
        mode = "send" if params["mode"] == "recv" else "recv"
        return [str(a) for a in [os.path.join(build, "bench", "pipe_client"), "--mode", mode]
                + common]
    argv = [os.path.join(build, "bench", "linux_rpc"), "--size", params["size"]] + common
    if bench.workload == "short":
        argv += ["--rpcs-per-conn", params["rpcs_per_conn"]]
    return [str(a) for a in argv]


def server_argv(build, bench, params, port):
    """The server of a point: linux_echo for rpc and short (one for all
    points), pipe_server with the point's mode, size and work for pipe,
    loss and interop."""
    if bench.workload in STREAM_WORKLOADS:
        return [os.path.join(build, "bench", "pipe_server"), "--port", str(port),
                "--mode", params["mode"], "--size", str(params["size"]),
                "--work", str(params["work"])]
    return [os.path.join(build, "bench", "linux_echo"), "--port", str(port)]


def memcached_argv(port):
    """memcached for the key-value benchmark: one worker thread (-t 1; its
    other threads, LRU maintainer, crawler, logger, mostly sleep), TCP only
    (-U 0), on every address, memory for 100,000 items many times over (no
    eviction: a miss is an error), room for every connection."""
    return [MEMCACHED, "-u", "root", "-t", "1", "-U", "0", "-l", "0.0.0.0", "-p", str(port),
            "-m", "1024", "-c", "4096"]


def server_lines(server, n, timeout=5.0):
    """Wait until pipe_server has printed n counter lines (it prints them
    between two batches of work), at most timeout s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.log_tail(1 << 16).count('{"msgs"') >= n:
            return True
        time.sleep(0.05)
    return False


def pipe_rate(params, client, server_log):
    """Messages/s of a pipelined point, counted where the data arrives: by
    pipe_server for a receive-only server (its counter lines at the start
    and end of the window, printed on SIGUSR1), by the client for a
    send-only one.  Returns (messages/s, how it was counted) or (None, why)."""
    if params["mode"] == "send":
        if not client.get("seconds"):
            return None, "no measured time"
        return client["bytes"] / params["size"] / client["seconds"], "client received"
    lines = [last_json(l) for l in server_log.splitlines() if l.startswith('{"msgs"')]
    if len(lines) < 2:
        return None, "pipe_server printed %d counter lines, not 2" % len(lines)
    a, b = lines[0], lines[1]
    # The receiver's own verdict: every connection open when the window
    # starts (at its end the client may already be closing them: its
    # "phase end" line and its close()s race with the signal), and none
    # closed on a pattern mismatch or a socket error by the window's end.
    if params.get("conns") and a.get("conns") != params["conns"]:
        return None, "pipe_server had %s connections open at the window's start, not %d" % (
            a.get("conns"), params["conns"])
    if b.get("errors"):
        return None, "pipe_server closed %d connections on a pattern mismatch or a " \
            "socket error" % b["errors"]
    secs = (b["t_ns"] - a["t_ns"]) / 1e9
    if secs <= 0:
        return None, "server counter lines out of order"
    return (b["msgs"] - a["msgs"]) / secs, "server received"


def counter_delta(before, after):
    """Per service: the counters (and the port's "nic" counters) that
    changed, after - before, from two Bed.counters()."""
    out = {}
    for name, b1 in after.items():
        b0 = before.get(name, {})
        out[name] = {k: v - b0.get(k, 0) for k, v in b1.items()
                     if isinstance(v, int) and v - b0.get(k, 0)}
    return out


def derive(res, setup):
    """Figures computed from the raw result: CPU per request (or message),
    the server CPU's share where the server side has a CPU of its own."""
    c = res.get("cpu")
    rps = res.get("rps") or 0
    if c and res.get("gbps"):
        # Bulk flows: CPU seconds (whole machine) per GB (1e9 bytes) moved.
        res["cpu_s_per_gb"] = c["busy_cores"] / (res["gbps"] / 8)
    if not c or not rps:
        return
    res["cpu_us_per_req"] = 1e6 * c["busy_cores"] / rps
    if setup == "server" and "cpu1" in c:
        # Server-side: CPU 1 is the whole server side (program + kernel or
        # program + service), CPU 0 the client.
        res["server_cpu_busy"] = c["cpu1"]["busy"]
        res["server_cpu_us_per_req"] = 1e6 * c["cpu1"]["busy"] / rps
    if res.get("cps"):
        res["cpu_us_per_conn"] = 1e6 * c["busy_cores"] / res["cps"]


def run_point(bed, bench, params, settings, procs, build, alive, server, port):
    """Run one point on one bed against its server (a Proc listening on
    port); returns the result dict.  It has "error" (a string) when the
    point failed; then no figure in it is to be used.  alive() says what of
    the server side has died, or None."""
    ns, argv, cpus, env = bed.client_argv(client_argv(build, bench, params, settings,
                                                      bed.server_ip, port))
    timeout = settings.connect_seconds + settings.warmup + settings.seconds + 30
    res = {"stack": bed.stack, "params": params,
           "client_argv": " ".join(procmod.wrap(ns, argv, cpus)),
           "server_argv": " ".join(str(a) for a in server.p.args)}
    dead = alive()
    if dead:
        res["error"] = dead
        return res
    marks = {}
    signal_server = bench.workload in STREAM_WORKLOADS and params["mode"] == "recv"

    def on_phase(word):
        if word in marks:
            return
        marks[word] = (cpu.snapshot(), cpu.softnet())
        if signal_server:
            os.kill(server.pid, signal.SIGUSR1)     # pipe_server prints its counters

    k0, l0 = bed.counters(), bed.link_stats()
    f0 = cpu.process_ticks(procs.pids() | {os.getpid()})
    t0 = time.monotonic()
    rc, out, err = procmod.run_client(ns, argv, cpus, env, timeout, on_phase=on_phase)
    res["wall_s"] = time.monotonic() - t0
    f1 = cpu.process_ticks(procs.pids() | {os.getpid()})
    res["foreign_cpu_s"], res["foreign_top"] = cpu.foreign_cpu(f0, f1)
    if bed.stack == "slipstream":
        res["service_counters"] = counter_delta(k0, bed.counters())
    res["veth"] = counter_delta(l0, bed.link_stats())
    got = last_json(out)
    if got:
        res.update(got)
        res.pop("error", None)          # the client's own error: below, worded
    if "measure" in marks and "end" in marks:
        res["cpu"] = cpu.delta(marks["measure"][0], marks["end"][0])
        res["softnet"] = cpu.softnet_delta(marks["measure"][1], marks["end"][1])
    rate_error = None
    if got and bench.workload in STREAM_WORKLOADS and not got.get("error"):
        if signal_server:
            server_lines(server, 2)                 # the end line, once printed
        rate, how = pipe_rate(params, got, server.log_tail(1 << 16))
        if rate is not None:
            res["rps"], res["counted_by"] = rate, how
            res["gbps"] = rate * params["size"] * 8 / 1e9
            res["requests"] = int(rate * got.get("seconds", 0))
        else:
            rate_error = "pipelined rate: %s" % how
    # What went wrong, most specific first.
    if rc == "timeout":
        res["error"] = "client did not finish within %d s" % timeout
    elif got is None:
        res["error"] = "client printed no result (exit %s): %s" % (rc, err.strip()[-300:])
    elif got.get("error"):
        res["error"] = "client: %s" % got["error"]
        if got["error"] == "ETIMEDOUT" and got.get("connected") is not None:
            res["error"] += " (%d of %d connections up after %d s)" % (
                got["connected"], params["conns"], settings.connect_seconds)
        elif got["error"] == "EADDRNOTAVAIL":
            res["error"] += " (connect() found no free local port: the client's " \
                            "ephemeral ports ran out)"
    elif rc != 0:
        res["error"] = "client exit %s: %s" % (rc, err.strip()[-300:])
    elif rate_error:
        res["error"] = rate_error
    elif "cpu" not in res:
        res["error"] = "no CPU window (the client printed no phase lines)"
    elif not res.get("requests"):
        res["error"] = "nothing answered in the measured time"
    if res.get("error"):
        res["client_stderr"] = err.strip()[-1000:]
        dead = alive()
        if dead:
            res["error"] += "; " + dead
    derive(res, bench.setup)
    t = time.monotonic()
    left = bed.settle()
    res["settle_s"] = time.monotonic() - t
    if left:
        res["settle_left"] = left       # connections the next point will find
    return res
