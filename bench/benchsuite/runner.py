"""One point on one stack: run the client, measure CPU over exactly its
measured window, check the result, and say plainly what went wrong if
anything did.  A failed point is recorded with its reason and no numbers.
"""

import json
import os
import subprocess
import time

from . import cpu
from . import procs as procmod

ECHO_PORT = 7000


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


def client_argv(build, bench, params, settings, server_ip):
    """The linux_rpc command line of a point (rpc and short workloads)."""
    argv = [os.path.join(build, "bench", "linux_rpc"),
            "--connect", "%s:%d" % (server_ip, ECHO_PORT),
            "--conns", params["conns"], "--size", params["size"],
            "--seconds", settings.seconds, "--warmup", settings.warmup,
            "--connect-seconds", settings.connect_seconds, "--phases"]
    if bench.workload == "short":
        argv += ["--rpcs-per-conn", params["rpcs_per_conn"]]
    return [str(a) for a in argv]


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
    """Figures computed from the raw result: CPU per request, the server
    CPU's share where the server side has a CPU of its own."""
    c = res.get("cpu")
    rps = res.get("rps") or 0
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


def run_point(bed, bench, params, settings, procs, build, servers_alive):
    """Run one point on one bed; returns the result dict.  It has "error"
    (a string) when the point failed; then no figure in it is to be used."""
    ns, argv, cpus, env = bed.client_argv(client_argv(build, bench, params, settings,
                                                      bed.server_ip))
    timeout = settings.connect_seconds + settings.warmup + settings.seconds + 30
    res = {"stack": bed.stack, "params": params,
           "client_argv": " ".join(procmod.wrap(ns, argv, cpus))}
    dead = servers_alive()
    if dead:
        res["error"] = dead
        return res
    marks = {}
    k0, l0 = bed.counters(), bed.link_stats()
    f0 = cpu.process_ticks(procs.pids() | {os.getpid()})
    t0 = time.monotonic()
    rc, out, err = procmod.run_client(ns, argv, cpus, env, timeout,
                                      on_phase=lambda w: marks.setdefault(w, (cpu.snapshot(),
                                                                               cpu.softnet())))
    res["wall_s"] = time.monotonic() - t0
    f1 = cpu.process_ticks(procs.pids() | {os.getpid()})
    res["foreign_cpu_s"], res["foreign_top"] = cpu.foreign_cpu(f0, f1)
    if bed.stack == "slipstream":
        res["service_counters"] = counter_delta(k0, bed.counters())
    res["veth"] = counter_delta(l0, bed.link_stats())
    got = last_json(out)
    if got:
        res.update(got)
    if "measure" in marks and "end" in marks:
        res["cpu"] = cpu.delta(marks["measure"][0], marks["end"][0])
        res["softnet"] = cpu.softnet_delta(marks["measure"][1], marks["end"][1])
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
    elif rc != 0:
        res["error"] = "client exit %s: %s" % (rc, err.strip()[-300:])
    elif "cpu" not in res:
        res["error"] = "no CPU window (the client printed no phase lines)"
    elif not got.get("requests"):
        res["error"] = "no request answered in the measured time"
    if res.get("error"):
        res["client_stderr"] = err.strip()[-1000:]
        dead = servers_alive()
        if dead:
            res["error"] += "; " + dead
    derive(res, bench.setup)
    t = time.monotonic()
    left = bed.settle()
    res["settle_s"] = time.monotonic() - t
    if left:
        res["settle_left"] = left       # connections the next point will find
    return res
