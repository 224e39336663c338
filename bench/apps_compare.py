#!/usr/bin/python3
"""apps_compare.py - real, unmodified programs under `slipstream run` and on Linux,
in one run, on one test bed, with their results checked; printed side by side.

Server programs (under Slipstream: root namespace, `slipstream run --strict`,
reached at 198.18.0.1; on Linux: peer2, 198.18.0.3; clients in peer1):
  memcached     memcached -t 2; bench/mc_load.c sets and gets, every value
                checked byte for byte (mixed sizes up to 100 kB, then small)
  nginx         master + 2 workers; wrk (every body checked by Lua), curl of a
                10 MB file (sha256)
  nginx_single  the same with master_process off
  nginx_sendfile  master_process off, sendfile on (as in Debian's nginx.conf)
  haproxy       mode http, Linux clients -> haproxy -> nginx on Linux (peer2);
                the Linux reference haproxy runs in peer3; wrk and curl (sha256)
  haproxy_nbthread1  the same with nbthread 1
  iperf3        iperf3 -s; iperf3 -c from peer1 (client -> server)
  iperf3_R      the same with -R (server -> client)
  sockperf      sockperf server --tcp; sockperf ping-pong --tcp, 64 bytes
  http_server   python3 -m http.server; curl (sha256), ab -c 10
Client programs (under Slipstream: root namespace; on Linux: peer1; the
servers on Linux in peer2):
  client_redis  redis-benchmark -c 50 SET/GET against redis-server
  client_wrk    wrk against nginx (master + 2 workers)
  client_curl   curl of the 10 MB file (sha256)
  client_iperf3 iperf3 -c against iperf3 -s (client -> server)
  client_iperf3_R  the same with -R (server -> client)
Every curl of the 10 MB file must match its sha256 and take at most 5 s.

Run as root:  /usr/bin/python3 bench/apps_compare.py [--quick] [--only NAME[,NAME]]
              [--json FILE] [--prefix P]
Exit status 1 if any check failed on either side.
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

import apps_lib  # noqa: E402
from apps_lib import CASES, SIDES, CheckError  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="2 s per measurement, fewer requests")
    ap.add_argument("--only", help="comma-separated case names (%s)" % ", ".join(CASES))
    ap.add_argument("--json", help="write the results to this file")
    ap.add_argument("--prefix", default="ssapps%d" % (os.getpid() % 1000))
    ap.add_argument("--sides", default="slipstream,linux")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("apps_compare.py: run as root (network namespaces)")
    cases = list(CASES)
    if args.only:
        cases = [c.strip() for c in args.only.split(",") if c.strip()]
        bad = [c for c in cases if c not in CASES]
        if bad:
            sys.exit("apps_compare.py: unknown case %s (have: %s)" % (", ".join(bad),
                                                                       ", ".join(CASES)))
    sides = [s for s in args.sides.split(",") if s in SIDES]
    if not apps_lib.harness.SERVICE_BIN.exists():
        sys.exit("apps_compare.py: %s not built (set SLIPSTREAM_BUILD)" %
                 apps_lib.harness.SERVICE_BIN)

    bed = apps_lib.Bed(args.prefix[:10])
    results = {}
    failed = 0
    t_start = time.monotonic()
    problems = []
    try:
        bed.up()
        for c in cases:
            results[c] = {}
            for side in sides:
                t0 = time.monotonic()
                d = {}
                try:
                    d["metrics"] = apps_lib.run_case(bed, c, side, quick=args.quick)
                except CheckError as e:
                    d["error"] = str(e)
                    failed += 1
                except Exception as e:  # report it, go on with the next case
                    d["error"] = "%s: %s" % (type(e).__name__, e)
                    d["traceback"] = traceback.format_exc()
                    failed += 1
                d["seconds"] = round(time.monotonic() - t0, 1)
                results[c][side] = d
                status = "ok" if "error" not in d else "FAILED: " + d["error"][:2000]
                print("[%5.0fs] %-14s %-10s %s" % (time.monotonic() - t_start, c, side, status),
                      flush=True)
                # A case that broke the service ends the run: later numbers would be wrong.
                if bed.svc is not None and not bed.svc.alive():
                    raise RuntimeError("slipstreamd died during %s (%s)" % (c, side))
    finally:
        problems = bed.down()

    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    print("\nReal programs under Slipstream vs on Linux (%s, %s, %d CPUs; "
          "slipstreamd fast path on CPU 0)\n" % (when, "quick" if args.quick else "full",
                                                 os.cpu_count() or 0))
    print(apps_lib.table(results, cases))
    print("\nratio = Slipstream / Linux (higher is better for rates, lower for latency)")
    for p in problems:
        print("SERVICE: " + p)
    if args.json:
        out = {"date": when, "quick": args.quick, "cases": results,
               "service_problems": problems}
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    sys.exit(1 if failed or problems else 0)


if __name__ == "__main__":
    main()
