#!/usr/bin/python3
"""cc_bottleneck.py - congestion control through a bottleneck in the switch
namespace: Slipstream senders against Linux senders, in one run.

Test bed: `Testbed(prefix, peers=2, rate_dir="to-peer", ...)`: a TBF of
100 Mbit/s + pfifo of 100 packets on the switch port toward peer1
(198.18.0.2), so service -> peer1 and peer2 -> peer1 both cross it; with ECN,
CE above a 30 000-byte backlog (ecn_marker "bpf": the real queue).  The
receivers are `iperf3 -s -1 -J -i I -B 198.18.0.2` in peer1.  Slipstream
senders: `slipstream run --sock CTL --strict --conns 64 --buf 1048576 --
iperf3 -c 198.18.0.2 ...` in the root namespace; Linux senders: `iperf3 -c
198.18.0.2 ... -C cubic` in peer2 (tcp_ecn=1).  tests/integration/cc_lib.py
has the details and the criteria.

Scenarios:
  flows    N = 2, 8, 32 flows through the ECN bottleneck, first from
           Slipstream (service: --cc dctcp-rate), then from Linux CUBIC:
           Jain's index per 100 ms receiver window after the first second
           (min, mean), aggregate throughput, drops at the bottleneck, queue
           (mean / p99 / max, sampled every 10 ms) against the threshold.
  compete  one Slipstream flow + one Linux CUBIC flow at once through the
           drop-tail bottleneck (no marking): Slipstream CUBIC (--cc cubic),
           then Slipstream NewReno (--cc-app iperf3=newreno: the per-app
           override over the dctcp-rate default); each side's share.
  cap      no bottleneck, --app-rate-cap iperf3=50: iperf3 -P 1, -P 8, and
           two iperf3 processes (-P 2 each) at once; the aggregate over the
           run and per 1 s receiver interval against the 50 Mbit/s cap.

Thread/core layout (2 vCPUs): slipstreamd runs its fast path, which also
runs the congestion-control loop and the pacer, on CPU 0 (EAL -l 0; its EAL
helper threads may use CPU 1); nothing else is pinned: iperf3 processes,
softirq work of the veths, bridge and TBF run wherever Linux puts them.  The
service's per-thread CPU masks are printed.

Run as root:  /usr/bin/python3 bench/cc_bottleneck.py [--quick] [--only S,S]
              [--json FILE] [--prefix P] [--cc-trace FILE]
Prints markdown tables, then the JSON document, on stdout.  Bounded: every
run has a timeout, and a run that would pass --budget seconds is skipped.
Exit status 1 if a run failed or a criterion was missed (--no-fail: 0).
"""

import argparse
import json
import os
import sys
import time
import traceback
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "integration"))
sys.dont_write_bytecode = True

import cc_lib  # noqa: E402

SCENARIOS = ("flows", "compete", "cap")
FLOWS_ARGS = list(cc_lib.FLOWS_SERVICE_ARGS)
COMPETE = cc_lib.COMPETE_CONFIGS
CAP_ARGS = cc_lib.CAP_SERVICE_ARGS
SETUP_S = 15          # allowance per run for set-up, connects and teardown


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="shorter runs (about 2 min)")
    ap.add_argument("--only", help="comma-separated scenarios (%s)" % ", ".join(SCENARIOS))
    ap.add_argument("--flows", default="2,8,32", help="flow counts (default 2,8,32)")
    ap.add_argument("--json", help="also write the JSON document to this file")
    ap.add_argument("--prefix", default="sccb%d" % (os.getpid() % 1000))
    ap.add_argument("--budget", type=float, default=540.0,
                    help="seconds; runs that would end later are skipped (default 540)")
    ap.add_argument("--no-fail", action="store_true", help="exit 0 even if a criterion fails")
    ap.add_argument("--flows-cc", metavar="ALG",
                    help="flows scenario: the service's algorithm (default %s)"
                         % FLOWS_ARGS[FLOWS_ARGS.index("--cc") + 1])
    ap.add_argument("--flows-share", metavar="MODE", choices=("flow", "host"),
                    help="flows scenario: the service's --cc-share (default host, as "
                         "tests/integration/cc_lib.py's FLOWS_SERVICE_ARGS)")
    ap.add_argument("--senders", default="slipstream,linux",
                    help="flows scenario: which senders to run (default slipstream,linux)")
    ap.add_argument("--cc-trace", metavar="FILE",
                    help="the service writes one line per control interval to FILE "
                         "(FILE.SCENARIO when several scenarios run; slipstreamd "
                         "--cc-trace, docs/congestion.md)")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("cc_bottleneck.py: run as root (network namespaces)")
    scen = list(SCENARIOS)
    if args.only:
        scen = [s.strip() for s in args.only.split(",") if s.strip()]
        bad = [s for s in scen if s not in SCENARIOS]
        if bad:
            sys.exit("cc_bottleneck.py: unknown scenario %s" % ", ".join(bad))
    missing = cc_lib.missing_tools()
    if missing:
        sys.exit("cc_bottleneck.py: missing %s" % ", ".join(missing))
    if not cc_lib.service_has_cc():
        sys.exit("cc_bottleneck.py: %s has no --cc (congestion control not integrated "
                 "yet; set SLIPSTREAM_BUILD)" % cc_lib.harness.SERVICE_BIN)
    if args.flows_cc:
        FLOWS_ARGS[:] = ["--cc", args.flows_cc]
    if args.flows_share:
        FLOWS_ARGS.extend(["--cc-share", args.flows_share])
    flows_n = [int(x) for x in args.flows.split(",") if x.strip()]
    t_flows, t_compete, t_cap = (4, 10, 4) if args.quick else (10, 30, 10)

    t_start = time.monotonic()
    doc = {"bench": "cc_bottleneck", "quick": args.quick, "prefix": args.prefix[:10],
           "service": str(cc_lib.harness.SERVICE_BIN),
           "bottleneck": {"rate_mbit": cc_lib.RATE_MBIT, "queue_pkts": cc_lib.QUEUE_PKTS,
                          "mark_bytes": cc_lib.MARK_BYTES, "marker": "bpf (real backlog)",
                          "goodput_max_mbit": round(cc_lib.GOODPUT_MAX_MBIT, 2)},
           "criteria": dict(cc_lib.CRITERIA, queue_bound_bytes=cc_lib.queue_bound()),
           "flows": [], "compete": [], "cap": [], "errors": [], "skipped": [],
           "layout": {}}
    failed = []

    def fits(seconds):
        return time.monotonic() - t_start + seconds + SETUP_S <= args.budget

    def attempt(kind, what, seconds, fn):
        if not fits(seconds):
            doc["skipped"].append("%s %s (time budget)" % (kind, what))
            log("skip %s %s: time budget" % (kind, what))
            return None
        log("run  %s %s (%d s)" % (kind, what, seconds))
        try:
            return fn()
        except Exception as e:   # noqa: BLE001 - record and go on
            doc["errors"].append({"scenario": kind, "what": what, "error": str(e)[-4000:]})
            failed.append("%s %s: %s" % (kind, what, str(e).splitlines()[0][:200]))
            log(traceback.format_exc())
            return None

    def traced(kind, service_args):
        """service_args plus --cc-trace: FILE, or FILE.KIND when the run has
        more than one scenario (each bed's service starts the file anew)."""
        if not args.cc_trace:
            return list(service_args)
        path = os.path.abspath(args.cc_trace) + ("." + kind if len(scen) > 1 else "")
        return list(service_args) + ["--cc-trace", path]

    def judge(r, what, *verdicts):
        """Attach the verdict to result r; list each missed criterion."""
        r["verdict"] = verdict(*verdicts, cc_lib.end_verdict(r))
        failed.extend("%s %s: %s" % (what, k, v["text"])
                      for k, v in r["verdict"].items() if not v["ok"])

    def bed_run(kind, bottleneck, service_args, body):
        bed = cc_lib.Bed(args.prefix[:10], bottleneck, traced(kind, service_args))
        try:
            bed.up()
            doc["layout"][kind] = bed.layout()
            body(bed)
        except Exception as e:   # noqa: BLE001
            doc["errors"].append({"scenario": kind, "what": "set-up", "error": str(e)[-4000:]})
            failed.append("%s set-up: %s" % (kind, str(e).splitlines()[0][:200]))
            log(traceback.format_exc())
        finally:
            problems = bed.down()
            if problems:
                doc["errors"].append({"scenario": kind, "what": "service exit",
                                      "error": "\n".join(problems)[-4000:]})
                failed.append("%s: service problems: %s" % (kind, problems[0][:200]))

    if "flows" in scen:
        def flows(bed):
            for side in [x for x in ("slipstream", "linux") if x in args.senders.split(",")]:
                for n in flows_n:
                    r = attempt("flows", "%s N=%d" % (side, n), t_flows,
                                lambda: cc_lib.run_flows(bed, side, n, t_flows))
                    bed.kill_all()
                    if r is None:
                        continue
                    r["service_args"] = FLOWS_ARGS if side == "slipstream" else None
                    if side == "slipstream":
                        judge(r, "flows N=%d" % n, cc_lib.flows_verdict(r),
                              cc_lib.counters_verdict(r["counters"], True, False))
                    doc["flows"].append(r)
        bed_run("flows", "ecn", FLOWS_ARGS, flows)

    if "compete" in scen:
        def compete(bed):
            for i, (label, sargs) in enumerate(COMPETE):
                if i:
                    bed.service_start(traced("compete", sargs))
                r = attempt("compete", label, t_compete,
                            lambda: cc_lib.run_compete(bed, t_compete, label))
                bed.kill_all()
                if r is None:
                    continue
                judge(r, "compete " + label, cc_lib.compete_verdict(r),
                      cc_lib.counters_verdict(r["counters"], False, False))
                doc["compete"].append(r)
        bed_run("compete", "droptail", COMPETE[0][1], compete)

    if "cap" in scen:
        def cap(bed):
            for mode in cc_lib.CAP_MODES:
                r = attempt("cap", mode, t_cap, lambda: cc_lib.run_cap(bed, mode, t_cap))
                bed.kill_all()
                if r is None:
                    continue
                judge(r, "cap " + mode, cc_lib.cap_verdict(r),
                      cc_lib.counters_verdict(r["counters"], True, True))
                doc["cap"].append(r)
        bed_run("cap", None, CAP_ARGS, cap)

    doc["seconds"] = round(time.monotonic() - t_start, 1)
    doc["failed"] = failed
    print(report(doc, scen, t_flows, t_compete, t_cap))
    print()
    print(json.dumps(doc, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps(doc, indent=1) + "\n")
    sys.exit(1 if failed and not args.no_fail else 0)


def verdict(*parts):
    """{criterion: {"ok", "text"}} from cc_lib's (ok, text) verdicts; a
    receiver that reported an error at the end of its test counts too."""
    out = {}
    for part in parts:
        out.update({k: {"ok": ok, "text": t} for k, (ok, t) in part.items()})
    return out


def report(doc, scen, t_flows, t_compete, t_cap):
    b = doc["bottleneck"]
    out = ["# cc_bottleneck (%s, %.0f s)" % ("quick" if doc["quick"] else "full",
                                            doc["seconds"]), "",
           "Bottleneck: switch port toward peer1, TBF %d Mbit/s + pfifo %d packets; "
           "goodput ceiling %.1f Mbit/s." % (b["rate_mbit"], b["queue_pkts"],
                                             b["goodput_max_mbit"]),
           "Service: %s" % doc["service"], ""]
    for kind, lay in doc["layout"].items():
        out.append("Service threads (%s bed), allowed CPUs: %s" % (
            kind, ", ".join("%s: %s" % kv for kv in lay.items())))
    if "flows" in scen:
        out += ["", "## N flows through the ECN bottleneck (CE above %d B), %d s each"
                % (b["mark_bytes"], t_flows), "",
                "Slipstream: `slipstreamd %s`, `%s`" % (
                    " ".join(FLOWS_ARGS), _cmd(doc["flows"], "slipstream")),
                "Linux: `%s`" % _cmd(doc["flows"], "linux"),
                "Receiver: `iperf3 -s -1 -J -i 0.1 -B 198.18.0.2 -p PORT` in peer1.", "",
                cc_lib.md_flows(doc["flows"]), "",
                "Criteria (Slipstream rows): Jain min and mean >= %.2f, 0 drops, backlog "
                "p99 <= %d B, aggregate >= %.0f %% of the goodput ceiling."
                % (cc_lib.CRITERIA["jain_min"], cc_lib.queue_bound(),
                   100 * cc_lib.CRITERIA["util_min"])]
    if "compete" in scen:
        out += ["", "## One Slipstream flow vs one Linux CUBIC flow, drop-tail, %d s"
                % t_compete, ""]
        for r in doc["compete"]:
            out.append("%s: `slipstreamd %s`, `%s` and `%s`" % (
                r["label"], " ".join(r["service_args"]), r["command_slipstream"],
                r["command_linux"]))
        out += ["", cc_lib.md_compete(doc["compete"]), "",
                "Criterion: each side's share of the bytes received in [25 %, 75 %], i.e. "
                "within 2x of the fair share (0.5 .. 2.0)."]
    if "cap" in scen:
        out += ["", "## Application cap %d Mbit/s, no bottleneck, %d s" % (cc_lib.CAP_MBIT,
                                                                         t_cap), ""]
        for r in doc["cap"]:
            out.append("%s: `slipstreamd %s`, %s" % (r["mode"], " ".join(r["service_args"]),
                                                      " + ".join("`%s`" % c for c in
                                                                 r["commands"])))
        out += ["", cc_lib.md_cap(doc["cap"]), "",
                "Criterion: within 5 %% of %d Mbit/s over the run and in every full 1 s "
                "interval." % cc_lib.CAP_MBIT]
    if doc["skipped"]:
        out += ["", "Skipped: " + "; ".join(doc["skipped"])]
    out += ["", "## Verdict", ""]
    out += ["- FAIL " + f for f in doc["failed"]] or ["- all criteria met"]
    return "\n".join(out)


def _cmd(results, side):
    for r in results:
        if r["side"] == side:
            return r["command"]
    return "-"


if __name__ == "__main__":
    main()
