"""Bulk send over DPDK's tap PMD with `--tso on` and `off`, alternating:
throughput and the service's CPU-seconds per GB (docs/benchmarks.md,
"TCP segmentation offload").  The set-up is tests/integration/test_tso.py's: the
service on a tap device in a test bed's service namespace, a program under
`slipstream run` sending to a Linux receiver (pinned to CPU 1) on the tap's
kernel side; every run's stream is hashed at both ends.

    flock /tmp/ss-bed.lock /usr/bin/python3 bench/tso_tap.py [BYTES] [on,off,...]
"""
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "integration"))
from harness import PYTHON, counters_delta
from harness import testbed as tbmod
from test_loopback import Proc
import test_tso as T

def cpu_s(pid):
    f = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")

nbytes = int(sys.argv[1]) if len(sys.argv) > 1 else 512 << 20
order = sys.argv[2].split(",") if len(sys.argv) > 2 else ["on", "off", "on", "off"]
tb = tbmod.Testbed("tsob", peers=1)
tb.up()
try:
    for tso in order:
        svc, tap = T.start_on_tap(tb, tso)
        procs = []
        try:
            server = Proc(["ip", "netns", "exec", tb.svc_ns, "taskset", "-c", "1", PYTHON, str(T.PEER_PY), "recv", "--listen", 7300, "--timeout", 120], None)
            procs.append(server); server.wait_stderr('"listening"', 15)
            b = svc.stats(); c0 = cpu_s(svc.pid); t0 = time.monotonic()
            client = T.accel(procs, svc, [PYTHON, T.PEER_PY, "send", "--dst", "%s:7300" % T.KERNEL_IP, "--bytes", nbytes, "--seed", 3, "--timeout", 120])
            rc, doc = client.wait_json(200); rs, ds = server.wait_json(30)
            dt = time.monotonic() - t0; c1 = cpu_s(svc.pid)
            d = counters_delta(b, svc.stats())
            ok = ds["bytes"] == nbytes and ds["sha256"] == doc["sha256"]
            print("tso %s: %.2f Gbit/s, service CPU %.2f s = %.2f s/GB, frames %d, wire segs %d, tso frames %d, ok %s"
                  % (tso, nbytes * 8 / dt / 1e9, c1 - c0, (c1 - c0) / (nbytes / 1e9), d.get("tx_packets", 0),
                     d.get("tx_tcp_segments", 0), d.get("tx_tso_frames", 0), ok), flush=True)
        finally:
            for p in procs: p.kill()
            svc.stop(); svc.kill(); svc.cleanup()
finally:
    tb.down()
