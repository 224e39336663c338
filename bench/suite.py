#!/usr/bin/python3
"""suite.py - the benchmark suite: Slipstream against Linux, every
point measured on both stacks in the same run and reported as a ratio too.

    /usr/bin/python3 bench/suite.py                  # everything, <= 20 min
    /usr/bin/python3 bench/suite.py --quick          # a reduced set, <= 2 min
    /usr/bin/python3 bench/suite.py --only rpc-server,short   # a selection

Run as root (network namespaces), under the shared test-bed lock when
others use the machine: flock /tmp/ss-bed.lock /usr/bin/python3 bench/suite.py

Benchmarks (bench/benchsuite/points.py), each in two set-ups
(bench/benchsuite/beds.py: "server" = server-side, a Linux client on CPU 0
against a server side pinned to CPU 1; "both" = both ends on the stack
under test):
  rpc-*    RPC echo, 64-byte messages, one request in flight per
           connection, 1 / 64 / 1024 / 4096 / 16384 connections
  short-*  short-lived connections, 1024 at a time, 1 / 4 / 16 / 64 / 256
           RPCs per connection, each closed by the client
  kv-server  key-value store (server-side only): memcached -t 1, unmodified,
           bench/kv_load: 100,000 32-byte keys, 64-byte values, Zipf 0.9,
           90% GET; peak (closed loop) at 16 / 64 / 256 connections, then
           latency p50/p90/p99/max in open loop at 15% of the lower peak
           (the client polls on CPU 0 instead of sleeping: --kv-pace)
  pipe-*   pipelined RPC (server-side only), 100 connections: a receive-only
           (pipe-recv*) or send-only (pipe-send*) server, 32 / 64 / 256 /
           1024 / 2048-byte messages, 250 or 1000 cycles of work per message
  loss-server  100 bulk flows from the server side (the stack under test)
           to a Linux client, 0 / 0.1 / 0.5 / 1 / 2 / 5 % of the data
           segments dropped at random (nftables in the client's namespace):
           goodput, penalty against 0 %, retransmissions
  interop-server, interop-both  100 bulk flows, each end sending in turn:
           Slipstream -> Linux, Linux -> Slipstream (server-side), Slipstream
           -> Slipstream (both ends), each beside Linux -> Linux
The servers are plain epoll programs on Linux sockets, unmodified: on Linux
as they are, on Slipstream under `slipstream run`: bench/linux_echo (rpc,
short) and bench/pipe_server (pipe, loss, interop; 64 KiB send()s, no work
for the bulk flows).  The clients check every byte: bench/linux_rpc (every
echo) and bench/pipe_client (the patterned stream; pipe_server checks what
it receives),
on Linux, or under `slipstream run` for both ends.

Output (--out; default docs/benchmarks/ for a full run, else
/tmp/slipstream-bench/): results.json (everything, raw), results.md (the
tables and the layout of each stack), one PNG per benchmark (if matplotlib
imports; else a warning).  A point that fails is reported as failed, with
its reason, in all three.  Exit status 1 if any point failed.
"""

import argparse
import json
import os
import shutil
import signal
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
sys.dont_write_bytecode = True

from benchsuite import beds, bulk, cpu, machine, paths, plots, points, report, runner  # noqa: E402
from benchsuite import procs as procmod  # noqa: E402

BUILD = Path(os.environ.get("SLIPSTREAM_BUILD") or REPO / "build")
FULL = {"seconds": 8, "warmup": 2, "connect_seconds": 20, "budget_s": 20 * 60}
QUICK = {"seconds": 2, "warmup": 1, "connect_seconds": 10, "budget_s": 2 * 60}
# Room a point needs beyond its measured and warm-up time (connecting,
# starting, settling), for the budget check.
POINT_OVERHEAD_S = 2.0


def check_build():
    need = [BUILD / "src/service/slipstreamd", BUILD / "src/preload/libslipstream-preload.so"]
    need += [BUILD / "bench" / p for p in ("linux_echo", "linux_rpc", "pipe_server",
                                            "pipe_client", "kv_load")]
    missing = [str(p) for p in need if not p.exists()]
    if missing:
        sys.exit("suite.py: not built: %s (run scripts/setup.sh, or set SLIPSTREAM_BUILD)"
                 % ", ".join(missing))


def summary(res):
    if res.get("error"):
        return "FAILED: %s" % res["error"]
    if res.get("gbps") is not None and res.get("p50_us") is None:      # pipelined
        line = "%s msgs/s, %.2f Gbit/s" % (report.fmt_num(res.get("rps")), res["gbps"])
    else:
        line = "%s %s/s" % (report.fmt_num(res.get("rps")),
                            "ops" if res.get("p90_us") is not None else "req")
        if res.get("cps"):
            line += ", %s conns/s" % report.fmt_num(res["cps"])
        if res.get("p90_us") is not None:       # kv_load
            line += ", p50 %s p90 %s p99 %s max %s µs" % tuple(
                report.fmt_num(res.get(k)) for k in ("p50_us", "p90_us", "p99_us", "max_us"))
        else:
            line += ", p50 %s p99 %s µs" % (report.fmt_num(res.get("p50_us")),
                                           report.fmt_num(res.get("p99_us")))
    if res.get("retrans") is not None:
        line += ", retransmitted %s segs" % report.fmt_num(res["retrans"], 0)
    if res.get("loss_applied"):
        la = res["loss_applied"]
        line += " (dropped %d of %d: %.2f%%)" % (la["dropped"], la["offered"],
                                                100 * (la["rate"] or 0))
    line += ", CPU %.2f cores (%s)" % (res["cpu"]["busy_cores"], " + ".join(
        "%.2f" % b for b in cpu.per_cpu_busy(res["cpu"])))
    if report.contended(res):
        line += " [contended: %.1f CPU-s of others: %s]" % (
            res["foreign_cpu_s"], ", ".join(res["foreign_top"][:3]))
    return line


class Run:
    """One invocation: the plan, the beds of the current set-up, the document."""

    def __init__(self, args):
        self.args = args
        self.settings = QUICK if args.quick else FULL
        self.rs = runner.Settings(args.seconds or self.settings["seconds"],
                                  args.warmup if args.warmup is not None
                                  else self.settings["warmup"],
                                  self.settings["connect_seconds"])
        self.values = points.parse_values(args.values)
        self.benches = points.select(args.only.split(",") if args.only else None, args.quick,
                                     self.values)
        self.pipe_port = runner.PIPE_PORT
        self.logdir = Path("/tmp/slipstream-bench-logs")
        shutil.rmtree(self.logdir, ignore_errors=True)
        self.procs = procmod.ProcSet(self.logdir)
        self.t0 = time.monotonic()
        self.doc = {
            "suite": "bench/suite.py", "argv": sys.argv,
            "command": "/usr/bin/python3 bench/suite.py" + "".join(" " + a for a in sys.argv[1:]),
            "mode": "quick" if args.quick else "full" if not args.only else "selection",
            "machine": machine.facts(REPO), "loadavg_before": machine.loadavg(),
            "nofile": list(procmod.nofile_limit()),
            "settings": dict(self.rs.as_dict(), budget_s=self.settings["budget_s"],
                             napi=args.napi, service_args=args.service_args,
                             client_qdisc=args.client_qdisc, veth_sysfs=args.veth_sysfs,
                             vdev_args=args.vdev_args, rx_backlog=args.rx_backlog,
                             both_link=args.both_link, kv_pace=args.kv_pace),
            "setups": {}, "benchmarks": [], "failed": [], "warnings": [],
        }

    # -- the plan

    def over_budget(self, settings):
        """True when one more run would not fit in the time budget."""
        per_run = settings.seconds + settings.warmup + POINT_OVERHEAD_S
        left = self.settings["budget_s"] - (time.monotonic() - self.t0)
        return per_run > left

    # -- one set-up

    def setup_up(self, setup):
        """The beds of a set-up, each with its echo server; a bed that fails
        to come up is recorded with its error."""
        rec = {"title": beds.SETUP_TITLES[setup]}
        self.doc["setups"][setup] = rec
        up = {}
        for stack in beds.STACKS:
            bed = beds.Bed(stack, setup, "%s%s%s" % (self.args.prefix, setup[0], stack[0]), BUILD,
                           napi=self.args.napi,
                           service_args=(self.args.service_args or "").split(),
                           veth_sysfs=dict(kv.split("=", 1)
                                           for kv in (self.args.veth_sysfs or "").split()),
                           client_qdisc=None if self.args.client_qdisc == "none"
                           else self.args.client_qdisc,
                           vdev_args=self.args.vdev_args, both_link=self.args.both_link)
            try:
                bed.up(self.procs)
                echo = bed.start_server(self.procs, "%s-%s-echo" % (setup, stack),
                                        [BUILD / "bench/linux_echo", "--port", runner.ECHO_PORT])
                if not bed.wait_listening(runner.ECHO_PORT, echo, 1):
                    raise beds.BedError("echo server not listening: %s" % echo.log_tail())
                bed.echo = echo
                rec[stack] = bed.record([echo])
                up[stack] = bed
            except Exception as e:          # noqa: BLE001 - recorded, then reported
                rec[stack] = {"layout": bed.layout(), "error": "%s: %s" % (type(e).__name__, e)}
                self.doc["failed"].append("%s/%s set-up: %s" % (stack, setup, e))
                print("%s/%s: set-up FAILED: %s" % (stack, setup, e), flush=True)
                try:
                    bed.down()
                except Exception:           # noqa: BLE001
                    pass
        return up

    def alive_check(self, bed, servers):
        """A function telling what of bed's server side (its services and
        the given server programs) has died, or None."""
        def check():
            dead = [p for p in [s.proc for s in bed.services] + servers if not p.alive()]
            if dead:
                return "exited: %s" % "; ".join("%s (status %s): %s" % (
                    p.name, p.p.returncode, p.log_tail(300)) for p in dead)
            return None
        return check

    def bench_settings(self, bench):
        """Measured and warm-up seconds for bench's points: the command
        line's, else the quick ones, else the bench's own or the full run's."""
        if self.args.seconds or self.args.warmup is not None or self.args.quick:
            return self.rs
        return runner.Settings(bench.seconds or self.rs.seconds,
                               bench.warmup if bench.warmup is not None else self.rs.warmup,
                               self.rs.connect_seconds)

    def kv_server(self, bed):
        """The bed's memcached (kv), started on its first point and kept for
        the set-up's other points (each point's client preloads every key
        again); (Proc, None) or (None, why)."""
        if getattr(bed, "kv", None) is not None:
            return bed.kv, None
        if not os.path.exists(runner.MEMCACHED):
            return None, "%s not installed (scripts/setup.sh installs it)" % runner.MEMCACHED
        before = bed.listeners()
        server = bed.start_server(self.procs, "%s-%s-memcached" % (bed.setup, bed.stack),
                                  runner.memcached_argv(runner.KV_PORT))
        if not bed.wait_listening(runner.KV_PORT, server, before + 1):
            why = "memcached not listening: %s" % server.log_tail(300)
            self.procs.stop(server)
            return None, why
        bed.kv = server
        self.doc["setups"][bed.setup][bed.stack]["threads"][server.name] = \
            beds.affinity(server.pid)
        return server, None

    def run_one(self, bed, bench, params):
        """One point on one bed: against the bed's echo server, its
        memcached (kv), or (pipe) a pipe_server started for this point alone."""
        settings = self.bench_settings(bench)
        if bench.workload == "kv":
            server, why = self.kv_server(bed)
            if server is None:
                return {"error": why}
            return runner.run_point(bed, bench, params, settings, self.procs, str(BUILD),
                                    self.alive_check(bed, [bed.echo, server]), server,
                                    runner.KV_PORT)
        if bench.workload not in points.STREAM_WORKLOADS:
            return runner.run_point(bed, bench, params, settings, self.procs, str(BUILD),
                                    self.alive_check(bed, [bed.echo]), bed.echo,
                                    runner.ECHO_PORT)
        self.pipe_port += 1
        before = bed.listeners()
        server = bed.start_server(self.procs, "%s-%s-%s" % (bed.setup, bed.stack, bench.workload),
                                  runner.server_argv(str(BUILD), bench, params, self.pipe_port))
        bulk_flows = bench.workload in ("loss", "interop")
        loss = params.get("loss_pct")
        try:
            if not bed.wait_listening(self.pipe_port, server, before + 1):
                return {"error": "pipe_server not listening: %s" % server.log_tail(300)}
            if loss:
                bed.loss_on(self.pipe_port, loss)
            k0 = bed.kernel_tcp() if bulk_flows else None
            res = runner.run_point(bed, bench, params, settings, self.procs, str(BUILD),
                                   self.alive_check(bed, [bed.echo, server]), server,
                                   self.pipe_port)
            if bulk_flows:
                self.bulk_counters(bed, res, k0, params, loss)
            return res
        finally:
            if loss:
                bed.loss_off()
            self.procs.stop(server)

    @staticmethod
    def bulk_counters(bed, res, k0, params, loss):
        """A bulk point's retransmissions (the sender's: the service's for a
        Slipstream sender, its namespace's kernel's for Linux) and, with
        loss, what the nft rule dropped.  Over the whole client run
        (connect, warm-up, window, close), not only the window."""
        k1 = bed.kernel_tcp()
        res["kernel_tcp"] = {side: bulk.snmp_delta(k0[side], k1[side]) for side in k1}
        if bed.stack == "slipstream":
            res["service_retrans"] = bulk.service_retrans(res.get("service_counters", {}))
        snd, _ = points.interop_pair(bed.setup, bed.stack,
                                     "server" if params["mode"] == "send" else "client")
        if snd == "slipstream":
            res["retrans"] = res.get("service_retrans", {}).get("tcp_retrans_segs", 0)
        else:
            side = "server" if params["mode"] == "send" else "client"
            res["retrans"] = res["kernel_tcp"][side].get("Tcp.RetransSegs", 0)
        if loss:
            res["loss_applied"] = bed.loss_counters()
            if not res["loss_applied"] and not res.get("error"):
                res["error"] = "the loss rule's counters could not be read"

    def run_bench(self, setup, b, entry, bs, up):
        """The points of one benchmark on the set-up's beds; bulk flows
        with the receive backlog raised (backlog_raise)."""
        saved = self.backlog_raise(entry) if b.workload in ("loss", "interop") else None
        try:
            for v in points.values(b, self.args.quick, self.values):
                params = points.point_params(b, v)
                pt = {"value": v, "params": params}
                entry["points"].append(pt)
                for stack in beds.STACKS:
                    bed = up.get(stack)
                    if bed is None:
                        res = {"error": "set-up failed: %s"
                               % self.doc["setups"][setup][stack].get("error")}
                    elif self.over_budget(bs):
                        res = {"error": "not run: the %d s time budget is spent"
                               % self.settings["budget_s"]}
                    else:
                        res = self.run_one(bed, b, params)
                    pt[stack] = res
                    if res.get("error"):
                        self.doc["failed"].append("%s %s=%s %s: %s" % (
                            b.name, b.param, v, stack, res["error"]))
                    print("%-12s %s=%-6s %-10s %s" % (b.name, b.param, v, stack,
                                                      summary(res)), flush=True)
                pt["ratios"] = report.point_ratios(pt.get("slipstream"), pt.get("linux"))
                if b.workload == "loss":
                    bulk.loss_penalties(entry["points"])
                    entry["target"] = bulk.loss_target(entry["points"])
                self.write(partial=True)
        finally:
            if saved is not None:
                beds.write_sysctl("net.core.netdev_max_backlog", saved)

    def backlog_raise(self, entry):
        """net.core.netdev_max_backlog (global: not per namespace) up to
        --rx-backlog for the bulk points; returns the old value to put back
        (None: left alone).  With the default 1000 the receiving kernel's
        per-CPU input queue (veth delivers there, RPS picks the CPU)
        overflows under 100 bulk flows from a Linux sender: 18 % of the
        segments dropped at "0 % loss" in a trial run."""
        want = self.args.rx_backlog
        if not want:
            entry["netdev_max_backlog"] = {"left": beds.read_sysctl("net.core.netdev_max_backlog")}
            return None
        was = beds.read_sysctl("net.core.netdev_max_backlog")
        beds.write_sysctl("net.core.netdev_max_backlog", want)
        entry["netdev_max_backlog"] = {"was": was, "set": want}
        return was

    def run_setup(self, setup, benches):
        up = self.setup_up(setup)
        try:
            for b in benches:
                entry = {"name": b.name, "workload": b.workload, "setup": b.setup,
                         "setup_title": beds.SETUP_TITLES[b.setup], "title": b.title,
                         "param": b.param, "param_title": b.param_title, "points": []}
                self.doc["benchmarks"].append(entry)
                bs = self.bench_settings(b)
                entry["settings"] = bs.as_dict()
                self.run_bench(setup, b, entry, bs, up)
                if b.workload == "kv":
                    self.kv_latency(entry, b, up, bs)
        finally:
            for bed in up.values():
                self.doc["setups"][setup][bed.stack]["service_log_tail"] = [
                    s.proc.log_tail(800) for s in bed.services if s.proc]
            self.procs.stop_all()
            for bed in up.values():
                try:
                    bed.down()
                except Exception as e:      # noqa: BLE001
                    self.doc["warnings"].append("test bed %s down: %s" % (bed.name, e))

    def kv_latency(self, entry, bench, up, bs):
        """The key-value latency point: open loop at KV_LAT_FRACTION of the
        lower of the two stacks' peaks (the closed-loop points just run),
        the same offered load on both stacks."""
        rate, basis = points.kv_latency_rate(entry["points"])
        params = dict(bench.fixed, conns=points.KV_LAT_CONNS, rate=rate,
                      pace=self.args.kv_pace)
        lat = {"fraction": points.KV_LAT_FRACTION, "rate": rate, "params": params,
               "peaks": basis if rate else None}
        entry["latency"] = lat
        for stack in beds.STACKS:
            bed = up.get(stack)
            if rate is None:
                res = {"error": "no latency point: %s" % basis}
            elif bed is None:
                res = {"error": "set-up failed"}
            elif self.over_budget(bs):
                res = {"error": "not run: the %d s time budget is spent"
                       % self.settings["budget_s"]}
            else:
                res = self.run_one(bed, bench, params)
            lat[stack] = res
            if res.get("error"):
                self.doc["failed"].append("%s latency at %s ops/s %s: %s" % (
                    bench.name, report.fmt_num(rate), stack, res["error"]))
            print("%-12s %-13s %-10s %s" % (bench.name, "@%s/s" % report.fmt_num(rate), stack,
                                            summary(res)), flush=True)
        lat["ratios"] = report.point_ratios(lat.get("slipstream"), lat.get("linux"))
        self.write(partial=True)

    def run(self):
        by_setup = {}
        for b in self.benches:
            by_setup.setdefault(b.setup, []).append(b)
        for setup, benches in by_setup.items():
            self.run_setup(setup, benches)

    # -- output

    def write(self, partial=False):
        out = Path(self.args.out)
        out.mkdir(parents=True, exist_ok=True)
        self.doc["elapsed_s"] = time.monotonic() - self.t0
        self.doc["partial"] = partial
        (out / "results.json").write_text(json.dumps(self.portable(), indent=1) + "\n")
        if partial:
            return
        self.doc["loadavg_after"] = machine.loadavg()
        why = None if self.args.no_plots else plots.available()
        if self.args.no_plots:
            self.doc["warnings"].append("plots not drawn (--no-plots)")
        elif why:
            self.doc["warnings"].append("plots not drawn: matplotlib does not import (%s); "
                                        "install python3-matplotlib" % why)
            print("suite.py: WARNING: no plots: matplotlib does not import (%s)" % why,
                  file=sys.stderr)
        else:
            for b in self.doc["benchmarks"]:
                try:
                    plots.bench_figure(b, out / ("%s.png" % b["name"]))
                except Exception as e:      # noqa: BLE001 - a figure must not lose the data
                    self.doc["warnings"].append("plot %s: %s" % (b["name"], e))
        doc = self.portable()
        (out / "results.json").write_text(json.dumps(doc, indent=1) + "\n")
        (out / "results.md").write_text(report.markdown(doc) + "\n")

    def portable(self):
        """The results with repository-relative paths (they get committed)."""
        return paths.relative(self.doc, REPO, BUILD, Path(self.args.out).resolve())


def render(path, out, no_plots):
    """--render: the markdown and the figures of an earlier run, from its JSON."""
    doc = paths.relative(json.loads(Path(path).read_text()), REPO, BUILD)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    why = "--no-plots" if no_plots else plots.available()
    if why:
        print("suite.py: WARNING: no plots (%s)" % why, file=sys.stderr)
    else:
        for b in doc["benchmarks"]:
            plots.bench_figure(b, out / ("%s.png" % b["name"]))
    (out / "results.md").write_text(report.markdown(doc) + "\n")
    print("suite.py: wrote %s/results.md%s from %s" % (out, "" if why else " and PNGs", path))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n".join(__doc__.split("\n")[2:]))
    ap.add_argument("--quick", action="store_true",
                    help="the reduced set, %d s per point (at most 2 minutes)" % QUICK["seconds"])
    ap.add_argument("--only", help="comma-separated benchmarks (%s), workloads (rpc, short, "
                    "pipe, kv, loss, interop) "
                    "or set-ups (server, both)" % ", ".join(b.name for b in points.BENCHES))
    ap.add_argument("--values", help="comma-separated points: only these values of each "
                    "selected benchmark's parameter (e.g. --only rpc-server --values 64,4096)")
    ap.add_argument("--out", help="output directory (default: docs/benchmarks for a full "
                    "run, else /tmp/slipstream-bench)")
    ap.add_argument("--seconds", type=int, help="measured seconds per point")
    ap.add_argument("--warmup", type=int, help="warm-up seconds per point")
    ap.add_argument("--prefix", default="ssb", help="test-bed name prefix (<= 7 characters)")
    ap.add_argument("--no-plots", action="store_true", help="JSON and markdown only")
    ap.add_argument("--render", metavar="JSON",
                    help="run nothing: write results.md and the PNGs again from a "
                    "results.json (to --out, default the JSON's directory)")
    ap.add_argument("--service-args", metavar="ARGS",
                    help="more slipstreamd options for every service, one string "
                    "(e.g. \"--rx-desc 4096\"); recorded in the JSON")
    ap.add_argument("--veth-sysfs", metavar="KEY=VALUE ...",
                    help="sysfs settings for a service's veth end, one string (e.g. "
                    "\"napi_defer_hard_irqs=2 gro_flush_timeout=50000\"); recorded in the JSON")
    ap.add_argument("--client-qdisc", metavar="QDISC", default=beds.CLIENT_QDISC,
                    help="root qdisc of the client's veth end in server-side set-ups, both "
                    "stacks (default \"%(default)s\": the veth holds packets back instead "
                    "of dropping them when the service's XDP ring is full; \"none\": the "
                    "veth's noqueue); recorded in the JSON")
    ap.add_argument("--rx-backlog", metavar="N", type=int, default=65536,
                    help="net.core.netdev_max_backlog during the loss and interop points "
                    "(global; put back after each benchmark; 0: leave it; default "
                    "%(default)s); recorded in the JSON")
    ap.add_argument("--vdev-args", metavar="K=V,...", default="",
                    help="more devargs for the AF_XDP PMD (e.g. \"busy_budget=0\")")
    ap.add_argument("--both-link", choices=beds.BOTH_LINKS, default="memif",
                    help="what joins the two services of Slipstream both-ends set-ups: "
                    "memif shared-memory rings (default) or the veth with AF_XDP on each "
                    "end; Linux both ends stays on the veth; recorded in the JSON")
    ap.add_argument("--napi", choices=beds.NAPI_MODES, default="thread",
                    help="where the kernel receives for a service's veth (XDP + AF_XDP "
                    "copy): a NAPI thread pinned to the service's CPU (default), or "
                    "softirq on the sending CPU")
    ap.add_argument("--kv-pace", choices=("spin", "sleep"), default="spin",
                    help="how kv_load waits for the latency point's next due time and "
                    "replies, both stacks: poll without blocking on the client's own CPU "
                    "(default), or block in epoll_pwait2 with a timer")
    args = ap.parse_args()
    if args.render:
        return render(args.render, args.out or str(Path(args.render).parent), args.no_plots)
    if os.geteuid() != 0:
        sys.exit("suite.py: run as root (network namespaces)")
    if len(args.prefix) > 7:
        sys.exit("suite.py: --prefix: at most 7 characters")
    try:
        if not points.select(args.only.split(",") if args.only else None, args.quick,
                             points.parse_values(args.values)):
            raise points.SelectError("no point selected (--only, --values, --quick)")
    except points.SelectError as e:
        sys.exit("suite.py: %s" % e)
    check_build()
    if args.out is None:
        full = not args.quick and not args.only
        args.out = str(REPO / "docs/benchmarks") if full else "/tmp/slipstream-bench"
    run = Run(args)
    print("suite.py: %s, %d s per point (+%d s warm-up); results to %s; logs in %s"
          % (run.doc["mode"], run.rs.seconds, run.rs.warmup, args.out, run.logdir), flush=True)
    # SIGTERM and SIGHUP (a timeout, a closed session) end the run as ^C
    # does, through the finally blocks that stop the programs and delete the
    # test beds' namespaces; by default they would kill Python and leave them.
    def on_signal(signum, frame):
        raise KeyboardInterrupt(signal.Signals(signum).name)
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, on_signal)
    interrupted = False
    try:
        run.run()
    except KeyboardInterrupt as e:
        interrupted = True
        run.doc["failed"].append("interrupted (%s): the run stopped early; points not "
                                 "listed were not run" % (e.args[0] if e.args else "SIGINT"))
    finally:
        run.write()
    if interrupted:
        print("suite.py: interrupted; partial results in %s" % args.out, file=sys.stderr)
        return 130
    print("\n" + report.markdown(run.doc))
    print("suite.py: %.0f s; wrote %s/results.{json,md}%s" % (
        run.doc["elapsed_s"], args.out,
        "" if any("plots" in w for w in run.doc["warnings"]) else " and PNGs"))
    return 1 if run.doc["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
