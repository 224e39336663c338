"""redis-server unmodified under `slipstream run`, its real clients in a
Linux peer namespace, and the same redis on Linux in the same run.

Test bed: two peers and a switch.  slipstreamd serves 198.18.0.1; redis
under `slipstream run` runs in the root namespace (its AF_INET TCP sockets
go through the service); the Linux reference redis runs in peer2
(198.18.0.3); redis-cli and redis-benchmark run in peer1 against both.
Checked: a data round trip byte for byte, redis-benchmark (-c 50, SET,
GET, INCR, LPUSH, LRANGE_100) with every request answered and redis
reporting no error replies and no rejected connections, a clean shutdown
(exit 0), and the service back to no applications afterwards.  Both
results are printed side by side (pytest -s shows them).
"""

import csv
import io
import os
import shutil
import subprocess
import time

import pytest

from harness import CLI, bed_with_service
from harness import testbed as tbmod

REDIS = shutil.which("redis-server")
REDIS_CLI = shutil.which("redis-cli")
REDIS_BENCH = shutil.which("redis-benchmark")
PORT = 6379
TESTS = "set,get,incr,lpush,lrange_100"
REQUESTS = 20000

pytestmark = pytest.mark.skipif(
    not (REDIS and REDIS_CLI and REDIS_BENCH),
    reason="redis-server / redis-tools not installed (scripts/setup.sh installs them)")


@pytest.fixture(scope="module")
def bed(prefix_new_fn):
    yield from bed_with_service(tbmod.Testbed(prefix_new_fn(), peers=2))


def redis_argv(bind):
    return [REDIS, "--port", str(PORT), "--bind", bind, "--save", "", "--appendonly", "no",
            "--protected-mode", "no", "--daemonize", "no", "--logfile", ""]


def cli(tb, host, *args, timeout=20):
    r = tb.ns_exec(tb.peer(1).ns, [REDIS_CLI, "-h", host, "-p", str(PORT)] + list(args),
                   timeout=timeout)
    assert r.returncode == 0, (args, r.stdout, r.stderr)
    return r.stdout.strip()


def wait_ping(tb, host, timeout=15.0):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        r = tb.ns_exec(tb.peer(1).ns, [REDIS_CLI, "-h", host, "-p", str(PORT), "ping"],
                       timeout=5)
        if r.stdout.strip() == "PONG":
            return
        last = (r.stdout, r.stderr)
        time.sleep(0.2)
    pytest.fail("redis at %s did not answer PING within %.0f s: %s" % (host, timeout, last))


def info_stats(tb, host):
    out = cli(tb, host, "info", "stats")
    return {k: v for k, _, v in (l.partition(":") for l in out.splitlines()) if v}


def benchmark(tb, host):
    """redis-benchmark from peer1; returns {test: requests/s}."""
    r = tb.ns_exec(tb.peer(1).ns, [REDIS_BENCH, "-h", host, "-p", str(PORT), "-c", "50",
                                   "-n", str(REQUESTS), "-t", TESTS, "--csv"], timeout=240)
    assert r.returncode == 0, (r.stdout, r.stderr)
    rows = list(csv.reader(io.StringIO(r.stdout)))
    got = {}
    for row in rows[1:] if rows and rows[0] and rows[0][0] == "test" else rows:
        if len(row) >= 2:
            got[row[0]] = float(row[1])
    want = {"SET", "GET", "INCR", "LPUSH (needed to benchmark LRANGE)", "LRANGE_100 (first 100 elements)"}
    missing = {w.split()[0] for w in want} - {g.split()[0] for g in got}
    assert not missing, "redis-benchmark did not report %s:\n%s" % (missing, r.stdout)
    return got


def run_checks(tb, host):
    value = os.urandom(3000).hex()  # 6000 printable bytes
    assert cli(tb, host, "set", "slipstream:key", value) == "OK"
    assert cli(tb, host, "get", "slipstream:key") == value
    before = info_stats(tb, host)
    results = benchmark(tb, host)
    after = info_stats(tb, host)
    assert after.get("total_error_replies", "0") == "0", after
    assert after.get("rejected_connections", "0") == "0", after
    done = int(after["total_commands_processed"]) - int(before["total_commands_processed"])
    # Every request of every test was answered (LRANGE also runs its LPUSH fill).
    assert done >= 5 * REQUESTS, (done, after)
    return results


def test_redis_under_slipstream_vs_linux(bed):
    tb, svc = bed
    env = dict(os.environ, SLIPSTREAM_SOCK=svc.ctl_path)
    logf = open(os.path.join(svc.dir, "redis-slipstream.log"), "wb")
    ss_redis = subprocess.Popen([str(CLI), "run", "--sock", svc.ctl_path, "--strict", "--"]
                                + redis_argv("0.0.0.0"), env=env, stdout=logf,
                                stderr=subprocess.STDOUT, start_new_session=True)
    lin_redis = tb.ns_popen(tb.peer(2).ns, redis_argv(tb.peer(2).ip),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        wait_ping(tb, tb.service_ip)
        wait_ping(tb, tb.peer(2).ip)
        gauges = svc.query("stats")["gauges"]
        assert gauges["apps"] == 1 and gauges["listeners"] == 1, gauges
        ss = run_checks(tb, tb.service_ip)
        lin = run_checks(tb, tb.peer(2).ip)
        print("\nredis-benchmark -c 50 -n %d (requests/s)" % REQUESTS)
        print("%-40s %12s %12s %7s" % ("test", "Slipstream", "Linux", "ratio"))
        for t in ss:
            lt = next((v for k, v in lin.items() if k.split()[0] == t.split()[0]), None)
            print("%-40s %12.0f %12s %7s" % (t, ss[t], "%.0f" % lt if lt else "-",
                                            "%.2f" % (ss[t] / lt) if lt else "-"))
        # Clean shutdown through the accelerated connection.
        tb.ns_exec(tb.peer(1).ns, [REDIS_CLI, "-h", tb.service_ip, "-p", str(PORT),
                                   "shutdown", "nosave"], timeout=10)
        assert ss_redis.wait(15) == 0
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            g = svc.query("stats")["gauges"]
            if g["apps"] == 0 and g["app_conns"] == 0:
                break
            time.sleep(0.1)
        assert g["apps"] == 0 and g["app_conns"] == 0 and g["listeners"] == 0, g
    finally:
        for p in (ss_redis, lin_redis):
            if p.poll() is None:
                try:
                    os.killpg(p.pid, 9)
                except ProcessLookupError:
                    pass
                p.wait(5)
        logf.close()
