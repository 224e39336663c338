"""Two accelerated programs on one host, connected through the service's
loopback path: both attach to the same slipstreamd and meet at its own
address (198.18.0.1), so their segments never reach the NIC.

Checked, each with the data verified end to end:
  * ss-bulk (low-level API) to ss-bulk, both directions (the connecting
    side sends, then the listening side sends): 64 MiB, SHA-256 at both
    ends and against the generator's stream computed here;
  * tcp_peer.py under `slipstream run` (the POSIX layer): send -> recv with
    SHA-256 at both ends and against the stream, and echo-client with 20
    concurrent connections against echo-server, every byte compared;
  * redis-server and redis-cli / redis-benchmark, all under `slipstream
    run`: a 6000-byte value round trip and every benchmark request answered;
  * 127.0.0.1 stays the kernel's: the same pair over 127.0.0.1 moves no
    loopback segment through the service.
And the counters: every TCP segment of these flows went round the
loopback queue (tx_tcp_segments = tx_loopback = rx_loopback), none to the
wire; afterwards the service is back to no applications, flows or
listeners.  Every process is bounded by a timeout.
"""

import csv
import hashlib
import io
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

import tcp_peer
from harness import BUILD, CLI, PYTHON, bed_with_service, counters_delta
from harness import testbed as tbmod

SS_BULK = BUILD / "tools" / "apps" / "ss-bulk"
PEER_PY = Path(__file__).resolve().parent / "tcp_peer.py"
REDIS = shutil.which("redis-server")
REDIS_CLI = shutil.which("redis-cli")
REDIS_BENCH = shutil.which("redis-benchmark")

MiB = 1 << 20
BULK = 64 * MiB
TIME_WAIT_MS = 1000
_ports = iter(range(31000, 32000))

IDLE = {"flows": 0, "app_conns": 0, "apps": 0, "listeners": 0}


@pytest.fixture(scope="module")
def bed(prefix_new_fn):
    if not SS_BULK.exists():
        pytest.skip("ss-bulk not built in %s" % SS_BULK.parent)
    yield from bed_with_service(tbmod.Testbed(prefix_new_fn(), peers=1),
                                extra_args=["--time-wait-ms", str(TIME_WAIT_MS)])


# ---- processes ----------------------------------------------------------

class Proc:
    """A child with stdout/stderr in files, killed at the end of the test."""

    def __init__(self, argv, env):
        self.argv = [str(a) for a in argv]
        self.out = tempfile.TemporaryFile()
        self.err = tempfile.TemporaryFile()
        self.p = subprocess.Popen(self.argv, stdout=self.out, stderr=self.err,
                                  stdin=subprocess.DEVNULL, env=env, start_new_session=True)

    def text(self, f):
        f.seek(0)
        return f.read().decode(errors="replace")

    def describe(self):
        return "%s: exit %s\nstdout: %s\nstderr: %s" % (
            " ".join(self.argv), self.p.poll(), self.text(self.out)[-2000:],
            self.text(self.err)[-3000:])

    def wait(self, timeout):
        try:
            return self.p.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError("did not finish within %.0f s: %s"
                                 % (timeout, self.describe())) from None

    def wait_json(self, timeout):
        rc = self.wait(timeout)
        lines = [l for l in self.text(self.out).splitlines() if l.startswith("{")]
        assert lines, "no JSON line from %s" % self.describe()
        return rc, json.loads(lines[-1])

    def wait_stderr(self, text, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if text in self.text(self.err):
                return
            if self.p.poll() is not None:
                break
            time.sleep(0.02)
        raise AssertionError("no %r from %s" % (text, self.describe()))

    def kill(self):
        if self.p.poll() is None:
            try:
                os.killpg(self.p.pid, 9)
            except ProcessLookupError:
                pass
            try:
                self.p.wait(5)
            except subprocess.TimeoutExpired:
                pass


@pytest.fixture
def procs():
    started = []
    yield started
    for p in started:
        p.kill()
        p.out.close()
        p.err.close()


def app(procs, svc, argv):
    """A program on the low-level API, attached to @svc."""
    p = Proc(argv, dict(os.environ, SLIPSTREAM_SOCK=svc.ctl_path))
    procs.append(p)
    return p


def accel(procs, svc, argv):
    """An unmodified program under `slipstream run --strict` (its AF_INET
    TCP sockets go through @svc; failing instead of falling back)."""
    p = Proc([CLI, "run", "--sock", svc.ctl_path, "--strict", "--"] + list(argv),
             dict(os.environ, SLIPSTREAM_BUILD=str(BUILD)))
    procs.append(p)
    return p


# ---- checks -------------------------------------------------------------

def gauges(svc):
    return svc.query("stats")["gauges"]


def wait_gauges(svc, want, timeout):
    deadline = time.monotonic() + timeout
    while True:
        g = gauges(svc)
        if all(g.get(k) == v for k, v in want.items()) or time.monotonic() >= deadline:
            return g
        time.sleep(0.05)


def assert_idle(svc, timeout=5.0):
    g = wait_gauges(svc, IDLE, timeout)
    assert {k: g.get(k) for k in IDLE} == IDLE, "service not idle: %s" % g


def assert_looped(svc, before, min_segments):
    """Every TCP segment since @before went round the loopback queue, none
    to the wire, and none met a closed port; returns the counter delta."""
    delta = {}
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        delta = counters_delta(before, svc.stats())
        if delta.get("tx_loopback", 0) == delta.get("rx_loopback", 0):
            break
        time.sleep(0.05)
    print("\nloopback counters: %s" % {k: v for k, v in delta.items()
                                        if "loop" in k or "retrans" in k or "tcp_seg" in k})
    assert delta.get("tx_loopback", 0) >= min_segments, delta
    assert delta.get("rx_loopback") == delta.get("tx_loopback"), delta
    assert not delta.get("tx_tcp_rst") and not delta.get("drop_tcp_no_flow"), delta
    assert delta.get("tx_tcp_segments") == delta.get("tx_loopback"), delta
    assert delta.get("rx_tcp") == delta.get("rx_loopback"), delta
    return delta


def xorshift_sha256(seed, total):
    """SHA-256 of ss-bulk's stream: xorshift64 (13, 7, 17) words, little-endian."""
    x = seed or 0x9e3779b97f4a7c15
    m = (1 << 64) - 1
    h = hashlib.sha256()
    left = total
    while left:
        words = bytearray()
        for _ in range(min(65536, (left + 7) // 8)):
            x ^= (x << 13) & m
            x ^= x >> 7
            x ^= (x << 17) & m
            words += x.to_bytes(8, "little")
        chunk = bytes(words[:left])
        h.update(chunk)
        left -= len(chunk)
    return h.hexdigest()


def wait_bulk(client, server, nbytes, seed):
    """Waits for an ss-bulk pair: both end without error, each counted
    @nbytes, and both streams hash to the pattern of @seed.  Returns the
    seconds waited."""
    t0 = time.monotonic()
    rc_c, doc_c = client.wait_json(120)
    rc_s, doc_s = server.wait_json(30)
    secs = time.monotonic() - t0
    assert rc_c == 0 and doc_c["error"] is None, client.describe()
    assert rc_s == 0 and doc_s["error"] is None, server.describe()
    assert doc_c["bytes"] == nbytes and doc_s["bytes"] == nbytes, (doc_c, doc_s)
    assert doc_c["sha256"] == doc_s["sha256"], "stream corrupted: %s vs %s" % (doc_c, doc_s)
    assert doc_c["sha256"] == xorshift_sha256(seed, nbytes), (doc_c, seed)
    return secs


def stream_sha256(seed, total):
    """SHA-256 of tcp_peer's payload stream (what `send` sends)."""
    h = hashlib.sha256()
    for c in tcp_peer.stream_chunks(seed, total):
        h.update(c)
    return h.hexdigest()


def wait_stream(client, server, nbytes, seed):
    """Waits for a tcp_peer.py send/recv pair: both end without error, each
    counted @nbytes, and both streams hash to the pattern of @seed.
    Returns their JSON lines."""
    rc_c, doc_c = client.wait_json(90)
    rc_s, doc_s = server.wait_json(30)
    assert rc_c == 0 and doc_c.get("error") is None, client.describe()
    assert rc_s == 0 and doc_s.get("error") is None, server.describe()
    assert doc_c["bytes"] == nbytes and doc_s["bytes"] == nbytes, (doc_c, doc_s)
    assert doc_s["sha256"] == doc_c["sha256"] == stream_sha256(seed, nbytes), (doc_c, doc_s)
    return doc_c, doc_s


# ---- tests --------------------------------------------------------------

@pytest.mark.parametrize("sender", ["connector", "listener"])
def test_loopback_ss_bulk(bed, procs, sender):
    """ss-bulk to ss-bulk over the service's own address, 64 MiB."""
    tb, svc = bed
    assert_idle(svc)
    port = next(_ports)
    seed = 3 if sender == "connector" else 5
    before = svc.stats()
    common = ["--bytes", BULK, "--seed", seed, "--timeout", 60]
    if sender == "connector":
        server = app(procs, svc, [SS_BULK, "recv", "--listen", port] + common)
    else:
        server = app(procs, svc, [SS_BULK, "send", "--listen", port] + common)
    assert wait_gauges(svc, {"listeners": 1}, 10).get("listeners") == 1, server.describe()
    dst = "%s:%d" % (tb.service_ip, port)
    client = app(procs, svc, [SS_BULK, "recv" if sender == "listener" else "send",
                              "--connect", dst] + common)
    secs = wait_bulk(client, server, BULK, seed)
    print("\nss-bulk %s sends %d MiB over loopback: %.2f s" % (sender, BULK // MiB, secs))
    assert_looped(svc, before, BULK // 1448)
    # Both ends close: the service lets go of everything (TIME_WAIT 1 s).
    assert_idle(svc, 5 + TIME_WAIT_MS / 1000)


def test_loopback_posix_send_recv(bed, procs):
    """tcp_peer.py recv (server) and send (client), both under `slipstream
    run`, over the service's address: 32 MiB, SHA-256 both ends."""
    tb, svc = bed
    assert_idle(svc)
    port = next(_ports)
    nbytes, seed = 32 * MiB, 11
    before = svc.stats()
    server = accel(procs, svc, [PYTHON, PEER_PY, "recv", "--listen", port, "--timeout", 60])
    server.wait_stderr('"listening"', 15)
    client = accel(procs, svc, [PYTHON, PEER_PY, "send", "--dst",
                                "%s:%d" % (tb.service_ip, port), "--bytes", nbytes,
                                "--seed", seed, "--timeout", 60])
    wait_stream(client, server, nbytes, seed)
    assert_looped(svc, before, nbytes // 1448)
    assert_idle(svc, 5 + TIME_WAIT_MS / 1000)


def test_loopback_posix_echo(bed, procs):
    """tcp_peer.py echo-server and echo-client (20 concurrent connections,
    every byte compared), both under `slipstream run`."""
    tb, svc = bed
    assert_idle(svc)
    port = next(_ports)
    conns, nbytes = 20, 200000
    before = svc.stats()
    server = accel(procs, svc, [PYTHON, PEER_PY, "echo-server", "--listen", port,
                                "--count", conns])
    server.wait_stderr('"listening"', 15)
    client = accel(procs, svc, [PYTHON, PEER_PY, "echo-client", "--dst",
                                "%s:%d" % (tb.service_ip, port), "--conns", conns,
                                "--bytes", nbytes, "--seed", 4, "--timeout", 60])
    rc, doc = client.wait_json(90)
    assert rc == 0 and doc["n_errors"] == 0, client.describe()
    assert doc["done"] == conns and doc["bytes"] == nbytes, doc
    server.wait(30)
    assert_looped(svc, before, conns * nbytes // 1448)
    delta = counters_delta(before, svc.stats())
    assert delta.get("tcp_active_open") == conns and delta.get("tcp_passive_open") == conns, \
        delta
    assert_idle(svc, 5 + TIME_WAIT_MS / 1000)


@pytest.mark.skipif(not (REDIS and REDIS_CLI and REDIS_BENCH),
                    reason="redis-server / redis-tools not installed (scripts/setup.sh)")
def test_loopback_redis(bed, procs):
    """redis-server, redis-cli and redis-benchmark, all under `slipstream run`."""
    tb, svc = bed
    assert_idle(svc)
    port = next(_ports)
    before = svc.stats()
    server = accel(procs, svc, [REDIS, "--port", port, "--bind", "0.0.0.0", "--save", "",
                                "--appendonly", "no", "--protected-mode", "no",
                                "--daemonize", "no", "--logfile", ""])

    def redis_cli(*args, timeout=20):
        p = accel(procs, svc, [REDIS_CLI, "-h", tb.service_ip, "-p", port] + list(args))
        rc = p.wait(timeout)
        assert rc == 0, p.describe()
        return p.text(p.out).strip()

    g = wait_gauges(svc, {"listeners": 1}, 15)
    assert g.get("listeners") == 1, server.describe()
    assert redis_cli("ping") == "PONG"
    value = os.urandom(3000).hex()  # 6000 printable bytes
    assert redis_cli("set", "loop:key", value) == "OK"
    assert redis_cli("get", "loop:key") == value
    n = 20000
    bench = accel(procs, svc, [REDIS_BENCH, "-h", tb.service_ip, "-p", port, "-c", 20,
                               "-n", n, "-t", "set,get", "--csv"])
    assert bench.wait(120) == 0, bench.describe()
    rows = list(csv.reader(io.StringIO(bench.text(bench.out))))
    tests = {r[0] for r in rows if r and r[0] in ("SET", "GET")}
    assert tests == {"SET", "GET"}, bench.describe()
    info = redis_cli("info", "stats")
    stats = {k: v for k, _, v in (l.partition(":") for l in info.splitlines()) if v}
    assert stats.get("total_error_replies", "0") == "0", stats
    assert stats.get("rejected_connections", "0") == "0", stats
    assert int(stats["total_commands_processed"]) >= 2 * n, stats
    p = accel(procs, svc, [REDIS_CLI, "-h", tb.service_ip, "-p", port, "shutdown", "nosave"])
    p.wait(15)
    assert server.wait(15) == 0, server.describe()
    assert_looped(svc, before, 2 * n)
    assert_idle(svc, 5 + TIME_WAIT_MS / 1000)


# One process, a listener and a client on 127.0.0.1 (both demoted to the
# kernel by the POSIX layer): prints the SHA-256 of what it sent and got.
LOCAL_PAIR = r"""
import hashlib, json, socket, sys, threading
port, n = int(sys.argv[1]), int(sys.argv[2])
data = bytes(range(256)) * (n // 256)
ls = socket.socket()
ls.bind(("127.0.0.1", port))
ls.listen(1)
got = hashlib.sha256()
def serve():
    s, _ = ls.accept()
    while True:
        b = s.recv(65536)
        if not b:
            break
        got.update(b)
    s.close()
t = threading.Thread(target=serve)
t.start()
c = socket.create_connection(("127.0.0.1", port), timeout=20)
c.sendall(data)
c.close()
t.join(20)
print(json.dumps({"sent": hashlib.sha256(data).hexdigest(), "got": got.hexdigest()}))
"""


def test_loopback_127_stays_kernel(bed, procs):
    """A listener and a client on 127.0.0.1 under `slipstream run`: the
    kernel carries them, the service's loopback queue sees nothing."""
    tb, svc = bed
    assert_idle(svc)
    port = next(_ports)
    before = svc.stats()
    pair = accel(procs, svc, [PYTHON, "-c", LOCAL_PAIR, port, MiB])
    rc, doc = pair.wait_json(60)
    assert rc == 0 and doc["sent"] == doc["got"], pair.describe()
    delta = counters_delta(before, svc.stats())
    assert not delta.get("tx_loopback") and not delta.get("rx_loopback"), delta
    assert not delta.get("tx_tcp_segments"), delta
    assert_idle(svc)
