"""Congestion control on the test bed: the shared code of
bench/cc_bottleneck.py and tests/integration/test_congestion.py.

Test bed (one prefix, a switch, two peers; testbed.py rate_dir "to-peer"):

    service  198.18.0.1   slipstreamd (AF_XDP on its veth, EAL -l 0); the
                          Slipstream senders are `slipstream run --strict
                          --buf 1048576 -- iperf3 -c ...` in the root
                          namespace (as in apps_lib.py), so their data leaves
                          through the service
    peer1    198.18.0.2   the receivers: `iperf3 -s -1 -J -i I -B 198.18.0.2`
    peer2    198.18.0.3   the Linux senders: `iperf3 -c ... -C cubic`, with
                          net.ipv4.tcp_ecn=1 in its namespace (the namespaces'
                          default algorithm is the host's, bbr here, and a
                          non-initial namespace may not change it: -C sets
                          CUBIC per socket)

    switch port <prefix>-s1 (toward peer1) is the bottleneck for everything
    toward peer1: TBF RATE_MBIT Mbit/s + pfifo of QUEUE_PKTS packets;
    with ECN, ECT packets are CE-marked when the queue they join holds more
    than MARK_BYTES (ecn_marker "bpf": the real TBF backlog, a DCTCP-style
    step marker; see testbed.py for why not the nftables token bucket).
    A QdiscSampler reads that queue (backlog, drops, bytes) every 10 ms.

Scenarios (each returns a JSON-able dict; nothing here asserts, the callers
compare with the CRITERIA):

  flows    N flows through the ECN bottleneck, from Slipstream (one iperf3
           -P N) or from Linux (the same from peer2); per-stream bytes from
           the receiver's 100 ms intervals: Jain's index per window (after
           the first WARMUP_S), aggregate throughput, drops, queue.
  compete  one Slipstream flow and one Linux CUBIC flow at once through the
           drop-tail bottleneck (no marking): each side's share.
  cap      no bottleneck, the service caps application "iperf3" at CAP_MBIT:
           iperf3 -P 1, -P 8, and two iperf3 processes at once (-P 2 each);
           aggregate over the run and per 1 s interval.

Every process runs with a timeout and in its own process group; Bed.down()
ends all of them and removes the test bed.
"""

import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness  # noqa: E402
from harness import CLI, BUILD  # noqa: E402
from harness import testbed as tbmod  # noqa: E402

IPERF3 = shutil.which("iperf3")

# ---- the bottleneck and the criteria -----------------------------------

RATE_MBIT = 100                 # TBF rate (Ethernet frames, 1514 bytes each)
QUEUE_PKTS = 100                # pfifo limit: 151 400 bytes of full frames
MARK_BYTES = 30000              # CE above this backlog (~20 full frames, 2.4 ms)
FRAME = tbmod.MTU_FRAME
MSS = 1448                      # payload of a full frame (TCP timestamps on)
GOODPUT_MAX_MBIT = RATE_MBIT * MSS / FRAME   # 95.6: what iperf3 can see at most
WARMUP_S = 1.0                  # windows before this (receiver's clock) are skipped
WINDOW_S = 0.1                  # receiver interval for fairness
CAP_MBIT = 50
# `slipstream run --buf 1048576 --conns 64`: 1 MiB rings per connection
# rather than the 64 KiB default, which would cap one Slipstream flow at
# 64 KiB per RTT (42 Mbit/s at the 12 ms a full drop-tail queue adds) and
# make the contest with Linux (autotuned buffers, up to 4 MiB) a contest of
# buffers; --conns bounds the mapped rings (conns x 2 x buf) under the
# service's max-app-mem.
SS_BUF = 1 << 20
SS_CONNS = 64
SERVICE_BASE_ARGS = ["--time-wait-ms", "1000"]
LINUX_CC = "cubic"

CRITERIA = {
    # flows (Slipstream, ECN bottleneck): mean over the 100 ms windows after
    # the first second of Jain's index of the per-stream receiver bytes, and
    # the worst window, both >= 0.95.
    "jain_min": 0.95,
    # no packet dropped at the bottleneck during the whole run (start-up too)
    "drops_ecn": 0,
    # the queue stays near the marking threshold: p99 of the backlog sampled
    # every 10 ms after the first second <= MARK_BYTES + 10 full frames
    # (30 000 + 15 140 = 45 140 bytes, 30 % of the pfifo)
    "queue_slack_frames": 10,
    # sanity, so that "no drops" cannot pass by not sending: the aggregate
    # after the first second fills at least 80 % of the link's goodput
    "util_min": 0.80,
    # compete: "within 2x of fair": with 2 flows each side's share of the
    # total bytes (whole run, receivers' counts) is between fair/2 and
    # 2 x fair, i.e. 25 % .. 100 %; both >= 25 % means each is in 25..75 %.
    "fair_factor": 2.0,
    # cap: the application's aggregate within 5 % of the cap over the run and
    # in every full 1 s receiver interval
    "cap_tolerance": 0.05,
}


# Service options per scenario (slipstreamd --help).  NewReno goes through
# the per-application override on top of the dctcp-rate default, so the
# counters also show that --cc-app took effect (window updates, no rate
# updates).
# Host sharing for the flows through one bottleneck: the configuration that
# meets the fairness criteria (docs/congestion.md); it is the
# default, named here so that the runs say what they measured.
FLOWS_SERVICE_ARGS = ["--cc", "dctcp-rate", "--cc-step-mbit", "1", "--cc-share", "host"]
COMPETE_CONFIGS = [("CUBIC (--cc cubic)", ["--cc", "cubic"]),
                   ("NewReno (--cc-app iperf3=newreno)", ["--cc-app", "iperf3=newreno"])]
CAP_SERVICE_ARGS = ["--app-rate-cap", "iperf3=%d" % CAP_MBIT]


def counters_verdict(counters, rate_based, capped):
    """{name: (ok, text)}: the service's congestion-control counters moved as
    the configuration says they must: the loop ran (cc_intervals); a rate
    algorithm wrote rates and was paced, a window algorithm wrote windows
    and was not paced (rate_based None: the default "auto", whose flows
    start on windows); only a capped application waited for its cap."""
    want = {"cc_intervals": "> 0",
            "cc_rate_updates": "> 0" if rate_based else "== 0",
            "cc_window_updates": "== 0" if rate_based else "> 0",
            "cc_paced_waits": "> 0" if rate_based else "== 0",
            "cc_cap_waits": "> 0" if capped else "== 0"}
    if rate_based is None:
        # "auto": flows start on windows (cubic); one its window holds back
        # moves to rates (bbr), one a cap holds back may never be.
        want["cc_window_updates"] = "> 0"
        del want["cc_rate_updates"], want["cc_paced_waits"]
    out = {}
    for name, cond in want.items():
        v = (counters or {}).get(name)
        ok = v is not None and (v > 0 if cond == "> 0" else v == 0)
        out[name] = (ok, "%s: %s (want %s)" % (name, "missing" if v is None else v, cond))
    return out


def end_verdict(r):
    """The receivers ended their tests without an error (an error at the end
    of a complete test means the sender's last control bytes were lost)."""
    errs = r.get("server_errors") or []
    return {"iperf3_end": (not errs, "iperf3 receivers' errors at the end of the test: %s"
                           % ("; ".join(errs) if errs else "none"))}


def queue_bound():
    return MARK_BYTES + CRITERIA["queue_slack_frames"] * FRAME


class CCError(AssertionError):
    """A run did not produce a measurement (a program failed or hung)."""


def missing_tools():
    out = [] if IPERF3 else ["iperf3"]
    if not shutil.which("clang"):
        out.append("clang (testbed ecn_marker bpf)")
    if not harness.SERVICE_BIN.exists():
        out.append("slipstreamd (%s)" % harness.SERVICE_BIN)
    return out


def service_has_cc():
    """True when the built slipstreamd knows --cc (the integration is in)."""
    try:
        r = subprocess.run([str(harness.SERVICE_BIN), "--help"], capture_output=True,
                           text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return "--cc " in (r.stdout + r.stderr)


# ---- arithmetic ---------------------------------------------------------

def jain(xs):
    """Jain's fairness index of xs (1 = equal shares, 1/n = one takes all)."""
    n, s, sq = len(xs), float(sum(xs)), float(sum(x * x for x in xs))
    return (s * s) / (n * sq) if n and sq else None


def pct(sorted_xs, q):
    if not sorted_xs:
        return None
    i = min(len(sorted_xs) - 1, max(0, int(math.ceil(q * len(sorted_xs))) - 1))
    return sorted_xs[i]


def mbit(nbytes, seconds):
    return nbytes * 8 / seconds / 1e6 if seconds > 0 else 0.0


def iperf_windows(doc, warmup=WARMUP_S, min_len=None):
    """[(start, end, [bytes per stream])] from an iperf3 JSON document's
    intervals (the receiver's, for a server), skipping those that start
    before warmup and a last one shorter than 90 % of the interval."""
    ivs = doc.get("intervals") or []
    if min_len is None:
        lens = sorted(iv["sum"]["end"] - iv["sum"]["start"] for iv in ivs) or [0]
        min_len = 0.9 * lens[len(lens) // 2]
    out = []
    for iv in ivs:
        st, en = iv["sum"]["start"], iv["sum"]["end"]
        if st + 1e-6 < warmup or en - st < min_len:
            continue
        out.append((st, en, [s["bytes"] for s in iv["streams"]]))
    return out


def backlog_summary(samples, t_from_ns, t_to_ns):
    """Queue statistics (bytes) of the samples within [t_from, t_to]."""
    bl = sorted(s["backlog"] for s in samples if t_from_ns <= s["t_ns"] <= t_to_ns)
    if not bl:
        return {"n": 0, "mean": None, "p50": None, "p99": None, "max": None}
    return {"n": len(bl), "mean": round(sum(bl) / len(bl)), "p50": pct(bl, 0.50),
            "p99": pct(bl, 0.99), "max": bl[-1]}


def counter_delta(before, after, names=("cc_intervals", "cc_rate_updates",
                                        "cc_window_updates", "cc_paced_waits",
                                        "cc_cap_waits", "cc_auto_bbr")):
    """{name: after - before} for the congestion-control counters (None when
    the service does not report the counter)."""
    return {n: (after[n] - before.get(n, 0)) if n in after else None for n in names}


# ---- processes ----------------------------------------------------------

class Proc:
    """A program we started in its own process group, output in files."""

    def __init__(self, argv, name, out_path, popen):
        self.argv, self.name, self.out_path, self.p = list(argv), name, out_path, popen
        self.started = time.monotonic()

    def alive(self):
        return self.p.poll() is None

    def wait(self, timeout):
        """Exit status; CCError (after killing it) if it runs past timeout."""
        try:
            return self.p.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise CCError("%s did not finish within %.0f s: %s\n%s" % (
                self.name, timeout, " ".join(self.argv), self.output()[-2000:])) from None

    def kill(self):
        if self.p.poll() is None:
            for sig in (signal.SIGTERM, signal.SIGKILL):
                try:
                    os.killpg(self.p.pid, sig)
                except ProcessLookupError:
                    break
                try:
                    self.p.wait(3)
                    break
                except subprocess.TimeoutExpired:
                    continue

    def output(self):
        try:
            return Path(self.out_path).read_text(errors="replace")
        except OSError:
            return ""

    def json(self):
        text = self.output()
        try:
            return json.loads(text[text.index("{"):])
        except ValueError:
            raise CCError("%s: no JSON (exit %s): %s" % (self.name, self.p.returncode,
                                                        text[-2000:])) from None


def cmdline(argv):
    return " ".join(str(a) for a in argv)


# ---- the bed ------------------------------------------------------------

class Bed:
    """Test bed + service for one scenario.

    bottleneck: "ecn" (RATE_MBIT, QUEUE_PKTS, CE above MARK_BYTES), "droptail"
    (the same without marking) or None (no shaping).  service_args: extra
    slipstreamd options (e.g. ["--cc", "cubic"])."""

    def __init__(self, prefix, bottleneck="ecn", service_args=()):
        self.prefix, self.bottleneck = prefix, bottleneck
        self.service_args = list(service_args)
        kw = {}
        if bottleneck is not None:
            kw = {"rate": RATE_MBIT, "queue": QUEUE_PKTS}
            if bottleneck == "ecn":
                kw.update(ecn_mark_above=MARK_BYTES, ecn_marker="bpf")
        self.tb = tbmod.Testbed(prefix, peers=2, rate_dir="to-peer", **kw)
        self.svc = None
        self.dir = Path(tempfile.mkdtemp(prefix="sscc-"))
        self.procs = []
        self.ports = iter(range(5301, 6300))
        self.seq = iter(range(1 << 30))
        self.env = dict(os.environ, SLIPSTREAM_BUILD=str(BUILD))

    @property
    def receiver(self):
        return self.tb.peer(1)

    @property
    def linux_sender(self):
        return self.tb.peer(2)

    def up(self):
        self.tb.up()
        for peer in (self.receiver, self.linux_sender):
            r = self.tb.ns_exec(peer.ns, ["sysctl", "-qw", "net.ipv4.tcp_ecn=1"])
            if r.returncode != 0:
                raise CCError("sysctl tcp_ecn in %s: %s" % (peer.ns, r.stderr))
        self.service_start(self.service_args)
        return self

    def service_start(self, args):
        """(Re)start slipstreamd with SERVICE_BASE_ARGS + args."""
        self.service_stop()
        self.service_args = list(args)
        self.svc = harness.Service(self.tb, extra_args=SERVICE_BASE_ARGS + self.service_args)
        try:
            self.svc.start()
        except harness.ServiceError:
            self.svc.kill()
            raise
        return self.svc

    def service_stop(self):
        """Stop the service; returns a list of problems (exit status, logs)."""
        problems = []
        if self.svc is None:
            return problems
        if self.svc.proc is None:           # never started
            self.svc.cleanup()
            self.svc = None
            return problems
        problems = harness.service_stop_problems(self.svc)
        self.svc = None
        return problems

    def kill_all(self):
        """End every program this bed started (after a run, failed or not)."""
        for p in reversed(self.procs):
            p.kill()
        self.procs = []

    def down(self):
        problems = []
        self.kill_all()
        try:
            problems = self.service_stop()
        finally:
            try:
                self.tb.down()
            finally:
                shutil.rmtree(self.dir, ignore_errors=True)
        return problems

    def __enter__(self):
        try:
            return self.up()
        except BaseException:
            self.down()
            raise

    def __exit__(self, *exc):
        self.down()
        return False

    # -- the service

    def stats(self):
        return self.svc.stats()

    def service_alive(self):
        if self.svc is None or not self.svc.alive():
            raise CCError("slipstreamd is not running\n%s" % (self.svc.logs() if self.svc
                                                               else ""))

    def layout(self):
        """Which CPUs the service's threads may run on ({tid name: list})."""
        out = {}
        if self.svc is None or not self.svc.alive():
            return out
        for task in sorted(Path("/proc/%d/task" % self.svc.pid).iterdir()):
            try:
                name = (task / "comm").read_text().strip()
                allowed = [l.split(":", 1)[1].strip() for l in
                           (task / "status").read_text().splitlines()
                           if l.startswith("Cpus_allowed_list")][0]
            except (OSError, IndexError):
                continue
            out["%s %s" % (task.name, name)] = allowed
        return out

    # -- programs

    def _start(self, name, argv, ns=None):
        out_path = self.dir / ("%s-%d.out" % (name, next(self.seq)))
        with open(out_path, "wb") as out:
            if ns is None:
                p = subprocess.Popen(argv, env=self.env, stdout=out, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True)
            else:
                p = self.tb.ns_popen(ns, argv, stdout=out, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True)
        proc = Proc(argv if ns is None else tbmod.ns_cmd(ns, argv), name, out_path, p)
        self.procs.append(proc)
        return proc

    def server(self, interval):
        """A one-shot iperf3 server in peer1 (JSON, receiver intervals of
        `interval` s); returns (proc, port) once it listens."""
        port = next(self.ports)
        argv = [IPERF3, "-s", "-1", "-J", "-i", str(interval), "-B", self.receiver.ip,
                "-p", str(port)]
        proc = self._start("iperf3-server", argv, ns=self.receiver.ns)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            r = self.tb.ns_exec(self.receiver.ns, ["ss", "-Hltn", "sport", "=",
                                                   ":%d" % port], timeout=10)
            if str(port) in r.stdout:
                return proc, port
            if not proc.alive():
                break
            time.sleep(0.05)
        raise CCError("iperf3 server on port %d not listening: %s" % (port, proc.output()))

    def ss_argv(self, argv):
        """argv under `slipstream run` (root namespace, this bed's service)."""
        return [str(CLI), "run", "--sock", self.svc.ctl_path, "--strict", "--conns",
                str(SS_CONNS), "--buf", str(SS_BUF), "--"] + list(argv)

    def client_argv(self, port, n, seconds):
        return [IPERF3, "-c", self.receiver.ip, "-p", str(port), "-P", str(n), "-t",
                str(seconds), "-J", "--connect-timeout", "5000"]

    def ss_client(self, port, n, seconds):
        """iperf3 -c under Slipstream: its data goes service -> peer1."""
        return self._start("iperf3-ss", self.ss_argv(self.client_argv(port, n, seconds)))

    def linux_client(self, port, n, seconds):
        """iperf3 -c on Linux in peer2 (CUBIC): peer2 -> peer1."""
        return self._start("iperf3-linux", self.client_argv(port, n, seconds) +
                           ["-C", LINUX_CC], ns=self.linux_sender.ns)

    def sampler(self):
        return self.tb.bottleneck_sampler(self.dir / ("qdisc-%d.jsonl" % next(self.seq)))


def _finish(bed, clients, servers, seconds):
    """Wait for the clients (then the servers); returns the servers' JSON.
    CCError if a client failed or a server reported an error."""
    for c in clients:
        rc = c.wait(seconds + 60)
        err = None
        try:
            err = c.json().get("error")
        except CCError as e:
            err = str(e)
        if rc != 0 or err:
            for s in servers:
                s.kill()
            raise CCError("%s exited %s (%s): %s\n%s" % (c.name, rc, err, cmdline(c.argv),
                                                        c.output()[-3000:]))
    docs = []
    for s in servers:
        s.wait(30)
        doc = s.json()
        # A server whose control connection ended early still has every
        # interval and its totals: keep the measurement, report the error.
        if doc.get("error") and not (doc.get("intervals") and
                                     doc.get("end", {}).get("sum_received")):
            raise CCError("iperf3 server: %s" % doc["error"])
        docs.append(doc)
    return docs


def server_errors(docs):
    """The errors the receivers reported at the end of otherwise complete tests
    (e.g. "unable to receive control message": the client's last control
    byte, IPERF_DONE, never arrived)."""
    return [d["error"] for d in docs if d.get("error")]


def _sampled_queue(samples, t0_ns, seconds):
    """Drops over the whole sampler span and after the warm-up; the queue
    after the warm-up until the end of the run."""
    if not samples:
        return {"drops_run": None, "drops_after_warmup": None, "backlog": backlog_summary(
            [], 0, 0), "samples": 0}
    warm = t0_ns + int(WARMUP_S * 1e9)
    end = t0_ns + int(seconds * 1e9)
    after = [s for s in samples if s["t_ns"] >= warm]
    return {
        "drops_run": samples[-1]["drops"] - samples[0]["drops"],
        "drops_after_warmup": (after[-1]["drops"] - after[0]["drops"]) if after else None,
        "backlog": backlog_summary(samples, warm, end),
        "samples": len(samples),
        "sample_interval_ms": round((samples[-1]["t_ns"] - samples[0]["t_ns"]) / 1e6 /
                                    max(1, len(samples) - 1), 2),
        "link_mbit": round(mbit(samples[-1]["bytes"] - samples[0]["bytes"],
                                (samples[-1]["t_ns"] - samples[0]["t_ns"]) / 1e9), 1),
    }


# ---- scenario 1: N flows through the ECN bottleneck --------------------

def run_flows(bed, side, n, seconds):
    """N flows from `side` ("slipstream" or "linux") to peer1 through the
    bottleneck, receiver intervals of WINDOW_S."""
    srv, port = bed.server(WINDOW_S)
    before = bed.stats() if bed.svc is not None else {}
    with bed.sampler() as smp:
        t0 = time.monotonic_ns()
        cl = (bed.ss_client if side == "slipstream" else bed.linux_client)(port, n, seconds)
        try:
            (doc,) = _finish(bed, [cl], [srv], seconds)
        finally:
            samples = smp.stop()
    after = bed.stats() if bed.svc is not None else {}
    wins = iperf_windows(doc)
    idx = [jain(b) for _, _, b in wins if sum(b) > 0]
    empty = sum(1 for _, _, b in wins if sum(b) == 0)
    nstreams = max((len(b) for _, _, b in wins), default=0)
    total = sum(sum(b) for _, _, b in wins)
    span = sum(en - st for st, en, _ in wins)
    per_stream = [sum(b[i] for _, _, b in wins if i < len(b)) for i in range(nstreams)]
    agg = mbit(total, span)
    res = {
        "scenario": "flows", "side": side, "flows": n, "seconds": seconds,
        "command": cmdline(cl.argv), "server": cmdline(srv.argv),
        "streams_seen": nstreams, "windows": len(wins), "empty_windows": empty,
        "jain_min": round(min(idx), 4) if idx else None,
        "jain_mean": round(sum(idx) / len(idx), 4) if idx else None,
        "jain_p10": round(pct(sorted(idx), 0.10), 4) if idx else None,
        "jain_whole_run": round(jain(per_stream), 4) if per_stream and total else None,
        "agg_mbit": round(agg, 2), "util": round(agg / GOODPUT_MAX_MBIT, 3),
        "stream_mbit_min": round(mbit(min(per_stream), span), 2) if per_stream else None,
        "stream_mbit_max": round(mbit(max(per_stream), span), 2) if per_stream else None,
        "mark_bytes": MARK_BYTES, "queue_bound": queue_bound(),
        "server_errors": server_errors([doc]),
    }
    res.update(_sampled_queue(samples, t0, seconds))
    res["counters"] = counter_delta(before, after) if side == "slipstream" else None
    res["retransmits_sender"] = _retransmits(cl)
    return res


def _retransmits(client):
    """Retransmitted segments as the iperf3 client reports them (TCP_INFO)."""
    try:
        return client.json()["end"]["sum_sent"].get("retransmits")
    except (CCError, KeyError, TypeError):
        return None


def flows_verdict(r):
    """{criterion: (ok, text)} for a Slipstream flows result."""
    b = r["backlog"]
    jmin, jmean = r["jain_min"], r["jain_mean"]
    return {
        "jain": (jmin is not None and jmin >= CRITERIA["jain_min"] and
                 jmean >= CRITERIA["jain_min"] and not r["empty_windows"] and
                 r["streams_seen"] == r["flows"],
                 "Jain over 100 ms windows: min %s mean %s (want both >= %.2f; %d "
                 "streams of %d, %d empty windows)" % (jmin, jmean, CRITERIA["jain_min"],
                                                      r["streams_seen"], r["flows"],
                                                      r["empty_windows"])),
        "drops": (r["drops_run"] == CRITERIA["drops_ecn"],
                  "drops at the bottleneck over the run: %s (want 0)" % r["drops_run"]),
        "queue": (b["p99"] is not None and b["p99"] <= queue_bound(),
                  "backlog p99 %s B (mean %s, max %s; want p99 <= %d = %d + %d frames)"
                  % (b["p99"], b["mean"], b["max"], queue_bound(), MARK_BYTES,
                     CRITERIA["queue_slack_frames"])),
        "util": (r["util"] >= CRITERIA["util_min"],
                 "aggregate %.1f Mbit/s = %.0f %% of the %.1f Mbit/s goodput ceiling "
                 "(want >= %.0f %%)" % (r["agg_mbit"], 100 * r["util"], GOODPUT_MAX_MBIT,
                                        100 * CRITERIA["util_min"])),
    }


# ---- scenario 2: one Slipstream flow against one Linux CUBIC flow ------

def run_compete(bed, seconds, label):
    """One Slipstream flow (service -> peer1) and one Linux CUBIC flow
    (peer2 -> peer1) started together through the bottleneck."""
    srv_ss, port_ss = bed.server(1)
    srv_lx, port_lx = bed.server(1)
    before = bed.stats()
    with bed.sampler() as smp:
        t0 = time.monotonic_ns()
        c_ss = bed.ss_client(port_ss, 1, seconds)
        c_lx = bed.linux_client(port_lx, 1, seconds)
        try:
            d_ss, d_lx = _finish(bed, [c_ss, c_lx], [srv_ss, srv_lx], seconds)
        finally:
            samples = smp.stop()
    after = bed.stats()
    b_ss = d_ss["end"]["sum_received"]["bytes"]
    b_lx = d_lx["end"]["sum_received"]["bytes"]
    t_ss = d_ss["end"]["sum_received"]["seconds"]
    t_lx = d_lx["end"]["sum_received"]["seconds"]
    total = b_ss + b_lx
    share_ss = b_ss / total if total else 0.0
    per_s = []
    for a, b in zip(d_ss.get("intervals", []), d_lx.get("intervals", [])):
        x, y = a["sum"]["bytes"], b["sum"]["bytes"]
        per_s.append(round(x / (x + y), 3) if x + y else None)
    res = {
        "scenario": "compete", "label": label, "seconds": seconds,
        "service_args": bed.service_args,
        "command_slipstream": cmdline(c_ss.argv), "command_linux": cmdline(c_lx.argv),
        "slipstream_mbit": round(mbit(b_ss, t_ss), 2), "linux_mbit": round(mbit(b_lx, t_lx), 2),
        "share_slipstream": round(share_ss, 3), "share_linux": round(1 - share_ss, 3),
        "ratio_to_fair_slipstream": round(share_ss * 2, 3),
        "ratio_to_fair_linux": round((1 - share_ss) * 2, 3),
        "share_slipstream_per_s": per_s,
        "retransmits_linux": _retransmits(c_lx),
        "retransmits_slipstream": _retransmits(c_ss),
        "server_errors": server_errors([d_ss, d_lx]),
        "counters": counter_delta(before, after),
    }
    res.update(_sampled_queue(samples, t0, seconds))
    return res


def compete_verdict(r):
    f = CRITERIA["fair_factor"]
    lo, hi = 1 / f, f
    ok = all(lo <= r[k] <= hi for k in ("ratio_to_fair_slipstream", "ratio_to_fair_linux"))
    return {"fair": (ok, "%s: Slipstream %.1f Mbit/s (%.0f %%), Linux CUBIC %.1f Mbit/s "
                     "(%.0f %%); ratio to fair %.2f / %.2f (want each in [%.2f, %.2f])"
                     % (r["label"], r["slipstream_mbit"], 100 * r["share_slipstream"],
                        r["linux_mbit"], 100 * r["share_linux"],
                        r["ratio_to_fair_slipstream"], r["ratio_to_fair_linux"], lo, hi))}


# ---- scenario 3: an application capped at CAP_MBIT ---------------------

CAP_MODES = {"P1": (1, 1), "P8": (1, 8), "2procs": (2, 2)}   # (processes, -P each)


def run_cap(bed, mode, seconds):
    """iperf3 under Slipstream with the service capping "iperf3" at CAP_MBIT;
    mode: "P1", "P8" or "2procs" (two iperf3 processes at once, -P 2 each)."""
    nproc, par = CAP_MODES[mode]
    servers = [bed.server(1) for _ in range(nproc)]
    before = bed.stats()
    clients = [bed.ss_client(port, par, seconds) for _, port in servers]
    docs = _finish(bed, clients, [s for s, _ in servers], seconds)
    after = bed.stats()
    total_b = sum(d["end"]["sum_received"]["bytes"] for d in docs)
    span = max(d["end"]["sum_received"]["seconds"] for d in docs)
    # Per 1 s: the i-th full interval of every receiver, summed (the clients
    # start within a few ms of each other).
    per = []
    series = [iperf_windows(d, warmup=0.0) for d in docs]
    for i in range(min(len(s) for s in series)):
        nb = sum(sum(s[i][2]) for s in series)
        dur = max(s[i][1] - s[i][0] for s in series)
        per.append(round(mbit(nb, dur), 2))
    tot = mbit(total_b, span)
    tol = CRITERIA["cap_tolerance"]
    return {
        "scenario": "cap", "mode": mode, "seconds": seconds, "cap_mbit": CAP_MBIT,
        "service_args": bed.service_args,
        "commands": [cmdline(c.argv) for c in clients],
        "start_skew_ms": round(1000 * (max(c.started for c in clients) -
                                       min(c.started for c in clients)), 1),
        "total_mbit": round(tot, 2), "per_s_mbit": per,
        "worst_dev": round(max([abs(tot / CAP_MBIT - 1)] +
                               [abs(x / CAP_MBIT - 1) for x in per]), 4),
        "tolerance": tol,
        "counters": counter_delta(before, after),
        "server_errors": server_errors(docs),
    }


def cap_verdict(r):
    tol = CRITERIA["cap_tolerance"]
    lo, hi = CAP_MBIT * (1 - tol), CAP_MBIT * (1 + tol)
    bad = [x for x in r["per_s_mbit"] if not lo <= x <= hi]
    ok = lo <= r["total_mbit"] <= hi and not bad and r["per_s_mbit"]
    return {"cap": (bool(ok), "%s: %.2f Mbit/s over the run, per 1 s %s (want all in "
                    "[%.1f, %.1f])" % (r["mode"], r["total_mbit"], r["per_s_mbit"], lo, hi))}


# ---- tables -------------------------------------------------------------

def _f(v, fmt="%s"):
    return "-" if v is None else fmt % v


def md_flows(results):
    head = ("| sender | flows | Jain min | Jain mean | Mbit/s (of %.1f) | drops | "
            "backlog mean / p99 / max (B) | cc_intervals | cc_rate_updates | "
            "cc_paced_waits |" % GOODPUT_MAX_MBIT)
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in results:
        c = r.get("counters") or {}
        b = r["backlog"]
        lines.append("| %s | %d | %s | %s | %s (%s %%) | %s | %s / %s / %s | %s | %s | %s |" % (
            r["side"], r["flows"], _f(r["jain_min"], "%.3f"), _f(r["jain_mean"], "%.3f"),
            _f(r["agg_mbit"], "%.1f"), _f(r["util"] and 100 * r["util"], "%.0f"),
            _f(r["drops_run"]), _f(b["mean"]), _f(b["p99"]), _f(b["max"]),
            _f(c.get("cc_intervals")), _f(c.get("cc_rate_updates")),
            _f(c.get("cc_paced_waits"))))
    return "\n".join(lines)


def md_compete(results):
    head = ("| Slipstream CC | Slipstream Mbit/s | Linux CUBIC Mbit/s | share SS / Linux | "
            "ratio to fair SS / Linux | drops | backlog mean / p99 (B) | "
            "cc_window_updates | cc_rate_updates |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in results:
        c = r.get("counters") or {}
        lines.append("| %s | %.1f | %.1f | %.0f %% / %.0f %% | %.2f / %.2f | %s | %s / %s | "
                     "%s | %s |" % (
                         r["label"], r["slipstream_mbit"], r["linux_mbit"],
                         100 * r["share_slipstream"], 100 * r["share_linux"],
                         r["ratio_to_fair_slipstream"], r["ratio_to_fair_linux"],
                         _f(r["drops_run"]), _f(r["backlog"]["mean"]), _f(r["backlog"]["p99"]),
                         _f(c.get("cc_window_updates")), _f(c.get("cc_rate_updates"))))
    return "\n".join(lines)


def md_cap(results):
    head = ("| case | Mbit/s over the run (cap %d) | per 1 s | worst deviation | "
            "cc_cap_waits |" % CAP_MBIT)
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in results:
        c = r.get("counters") or {}
        lines.append("| %s | %.2f | %s | %.1f %% | %s |" % (
            r["mode"], r["total_mbit"], " ".join("%.1f" % x for x in r["per_s_mbit"]),
            100 * r["worst_dev"], _f(c.get("cc_cap_waits"))))
    return "\n".join(lines)
