"""bench/kv_load (the key-value benchmark's memcached client) without a test
bed or root: its Zipf table and generator against the formulas, and its
checks against a small in-process memcached that can be told to lie (a
wrong byte in one value, a miss, an error reply), then against a real
memcached on 127.0.0.1.  The checks must fail when the server is wrong, and
pass when it is right."""

import json
import os
import resource
import socket
import socketserver
import subprocess
import threading
import time

import pytest

from harness import BUILD

pytestmark = pytest.mark.no_root

KV_LOAD = BUILD / "bench" / "kv_load"
MEMCACHED = "/usr/bin/memcached"


@pytest.fixture(scope="module")
def kv_load():
    if not KV_LOAD.exists():
        pytest.skip("%s not built (ninja -C %s)" % (KV_LOAD, BUILD))
    return str(KV_LOAD)


def run(argv, timeout=60):
    r = subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=timeout)
    lines = [l for l in r.stdout.splitlines() if l.startswith("{")]
    assert len(lines) == 1, (r.stdout, r.stderr)
    return r.returncode, json.loads(lines[0]), r.stderr


def zipf_cdf(n, s):
    w = [(i + 1) ** -s for i in range(n)]
    total = sum(w)
    out, acc = [], 0.0
    for x in w:
        acc += x
        out.append(acc / total)
    return out


def test_zipf_table(kv_load):
    rc, d, _ = run([kv_load, "--print-cdf"])
    assert rc == 0 and d["keys"] == 100000 and d["zipf"] == 0.9
    cdf = zipf_cdf(100000, 0.9)
    for key, i in (("cdf0", 0), ("cdf9", 9), ("cdf99", 99), ("cdf_half", 49999)):
        assert d[key] == pytest.approx(cdf[i], rel=1e-9), key
    rc, d, _ = run([kv_load, "--print-cdf", "--keys", "4", "--zipf", "1"])
    h = 1 + 1 / 2 + 1 / 3 + 1 / 4
    assert d["cdf0"] == pytest.approx(1 / h, rel=1e-12)
    assert d["cdf_half"] == pytest.approx(1.5 / h, rel=1e-12)     # keys 0 and 1


def test_generator_draws(kv_load):
    """A million draws: the GET share and the key popularity match the
    distribution (5 standard deviations), and the same seed draws the same
    sequence."""
    n = 1000000
    rc, d, _ = run([kv_load, "--sample", n])
    assert rc == 0 and d["draws"] == n
    cdf = zipf_cdf(100000, 0.9)

    def near(count, p):
        sd = (n * p * (1 - p)) ** 0.5
        return abs(count - n * p) <= 5 * sd

    assert near(d["gets"], 0.9)
    assert near(d["key0"], cdf[0])
    assert near(d["key1"], cdf[1] - cdf[0])
    for key, i in (("below10", 9), ("below100", 99), ("below1000", 999), ("below10000", 9999)):
        assert near(d[key], cdf[i]), key
    assert run([kv_load, "--sample", n])[1] == d
    other = run([kv_load, "--sample", n, "--seed", 2])[1]
    assert other != d and near(other["gets"], 0.9)


class FakeMemcached(socketserver.ThreadingTCPServer):
    """get/set of the text protocol over a dict; lie(op, key, reply) may
    change a reply (op "get"/"set", key bytes, reply bytes)."""
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, lie=None, delay=0.0):
        self.items, self.lock, self.lie, self.delay = {}, threading.Lock(), lie, delay
        self.gets = self.sets = 0
        super().__init__(("127.0.0.1", 0), _Handler)
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def addr(self):
        return "127.0.0.1:%d" % self.server_address[1]


class _Handler(socketserver.StreamRequestHandler):
    def handle(self):
        srv = self.server
        while True:
            line = self.rfile.readline()
            if not line:
                return
            parts = line.split()
            if parts[0] == b"set":
                key, n = parts[1], int(parts[4])
                data = self.rfile.read(n + 2)[:n]
                with srv.lock:
                    srv.items[key] = (parts[2], data)
                    srv.sets += 1
                reply = b"STORED\r\n"
                op = "set"
            elif parts[0] == b"get":
                key = parts[1]
                with srv.lock:
                    it = srv.items.get(key)
                    srv.gets += 1
                reply = b"END\r\n" if it is None else b"VALUE %s %s %d\r\n%s\r\nEND\r\n" % (
                    key, it[0], len(it[1]), it[1])
                op = "get"
            else:
                reply, op, key = b"ERROR\r\n", "?", b""
            if srv.lie:
                reply = srv.lie(op, key, reply)
            if srv.delay and op == "get":
                time.sleep(srv.delay)
            self.wfile.write(reply)
            self.wfile.flush()


HOT = b"kvbench:" + b"0" * 24          # key 0, the most popular


def load(kv_load, addr, *extra):
    return run([kv_load, "--connect", addr, "--keys", 2000, "--conns", 4, "--seconds", 1,
                "--warmup", 0, "--stall", 3] + list(extra))


def test_passes_against_a_correct_server(kv_load):
    srv = FakeMemcached()
    try:
        rc, d, err = load(kv_load, srv.addr)
    finally:
        srv.shutdown()
    assert rc == 0 and d["error"] is None, d
    assert d["preloaded"] == 2000 and d["misses"] == 0 and d["mismatches"] == 0
    assert d["requests"] == d["gets"] + d["sets"] > 100 and d["gets"] > d["sets"]
    assert d["hits"] >= d["gets"]
    # Every key preloaded once, then every request of the run answered.
    assert srv.sets + srv.gets == d["all_ops"] and len(srv.items) == 2000
    assert err.count("phase ") == 0       # --phases not given


def _flip_hot_value(op, key, reply):
    if op == "get" and key == HOT and reply.startswith(b"VALUE"):
        i = len(b"VALUE %s 0 64\r\n" % HOT) + 17
        reply = reply[:i] + bytes([reply[i] ^ 0x01]) + reply[i + 1:]
    return reply


def test_detects_a_wrong_value(kv_load):
    srv = FakeMemcached(_flip_hot_value)
    try:
        rc, d, _ = load(kv_load, srv.addr, "--phases")
    finally:
        srv.shutdown()
    assert rc == 1 and d["mismatches"] == 1 and d["misses"] == 0
    assert "GET of key 0: wrong reply from byte %d of 116 (value" % (45 + 17) in d["error"]


def test_detects_a_wrong_key_and_flags(kv_load):
    def other_key(op, key, reply):
        if op == "get" and key == HOT and reply.startswith(b"VALUE"):
            return reply.replace(HOT, HOT[:-1] + b"1", 1)
        return reply

    def flags(op, key, reply):
        return reply.replace(b" 0 64\r\n", b" 1 64\r\n", 1) if op == "get" else reply

    for lie, byte in ((other_key, 6 + 31), (flags, 6 + 32 + 1)):
        srv = FakeMemcached(lie)
        try:
            rc, d, _ = load(kv_load, srv.addr)
        finally:
            srv.shutdown()
        assert rc == 1 and d["mismatches"] == 1, d
        assert "wrong reply from byte %d of 116 (header" % byte in d["error"]


def test_detects_a_miss_and_an_error_reply(kv_load):
    def forget(op, key, reply):
        return b"END\r\n" if op == "get" and key == HOT else reply

    srv = FakeMemcached(forget)
    try:
        rc, d, _ = load(kv_load, srv.addr)
    finally:
        srv.shutdown()
    assert rc == 1 and d["misses"] == 1 and d["mismatches"] == 0
    assert d["error"].endswith("GET of key 0 missed (END without VALUE)")

    state = {"n": 0}

    def refuse(op, key, reply):
        if op == "set":
            state["n"] += 1
            if state["n"] == 2010:              # during the run, after the preload
                return b"SERVER_ERROR out of memory storing object\r\n"
        return reply

    srv = FakeMemcached(refuse)
    try:
        rc, d, _ = load(kv_load, srv.addr)
    finally:
        srv.shutdown()
    assert rc == 1 and d["bad_replies"] == 1
    assert 'answered "SERVER_ERROR out of memory' in d["error"]


def test_detects_a_stall(kv_load):
    def hang(op, key, reply):
        if op == "get" and key == HOT:
            time.sleep(4)
        return reply

    srv = FakeMemcached(hang)
    try:
        t0 = time.monotonic()
        rc, d, _ = run([kv_load, "--connect", srv.addr, "--keys", 2000, "--conns", 1,
                        "--seconds", 10, "--warmup", 0, "--stall", 1])
        took = time.monotonic() - t0
    finally:
        srv.shutdown()
    assert rc == 1 and d["error"].startswith("stall: replies owed and none for 1 s")
    assert took < 4


def test_open_loop_rate_and_phases(kv_load):
    srv = FakeMemcached()
    try:
        rc, d, err = load(kv_load, srv.addr, "--rate", 2000, "--phases", "--seconds", 2)
    finally:
        srv.shutdown()
    assert rc == 0 and d["mode"] == "open" and d["rate_target"] == 2000
    # Requests due in the 2 s window: 2000/s, give or take the first due time.
    assert abs(d["requests"] - 2000 * d["seconds"]) <= 2
    assert d["seconds"] == pytest.approx(2.0, abs=0.1)
    assert [l for l in err.splitlines() if l.startswith("phase")] == \
        ["phase measure", "phase end"]
    assert 0 < d["p50_us"] <= d["p90_us"] <= d["p99_us"] <= d["max_us"] * 1.07
    # Each request's latency from due is its lateness plus its round trip
    # from the send, so neither part's percentile exceeds the whole's (up
    # to the histogram's 6.25 % buckets).
    assert 0 <= d["late_p50_us"] <= d["late_p99_us"] <= d["late_max_us"] * 1.07
    assert 0 < d["rtt_p50_us"] <= d["rtt_p99_us"] <= d["max_us"] * 1.07
    assert d["rtt_p50_us"] <= d["p50_us"] * 1.07 and d["late_p50_us"] <= d["p50_us"] * 1.07
    assert d["rtt_p99_us"] <= d["p99_us"] * 1.07 and d["late_p99_us"] <= d["p99_us"] * 1.07


def children_nvcsw():
    """Voluntary context switches of this process's reaped children."""
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_nvcsw


@pytest.mark.parametrize("spin", [False, True], ids=["sleep", "spin"])
def test_open_loop_spin_never_blocks(kv_load, spin):
    """--spin: from the warm-up on, the client polls instead of blocking
    until its next due time or reply, so the measured window holds no
    voluntary context switch (only the connect and preload phases block);
    without it, each of the 4,000 due times is a wake-up.  The run checks
    every value and keeps the rate either way."""
    srv = FakeMemcached()
    try:
        before = children_nvcsw()
        rc, d, _ = run([kv_load, "--connect", srv.addr, "--keys", 2000, "--conns", 4,
                        "--seconds", 2, "--warmup", 0, "--stall", 3, "--rate", 2000]
                       + (["--spin"] if spin else []))
        switches = children_nvcsw() - before
    finally:
        srv.shutdown()
    assert rc == 0 and d["error"] is None and d["mode"] == "open", d
    assert d["misses"] == 0 and d["mismatches"] == 0 and d["hits"] >= d["gets"] > 0
    assert abs(d["requests"] - 2000 * d["seconds"]) <= 2
    if spin:
        assert switches < 400, switches
    else:
        assert switches > 2000, switches


def test_open_loop_round_trip_apart_from_lateness(kv_load):
    """A server that answers each GET 3 ms late (90 % of the requests): the
    round trip from the send holds the 3 ms, the client's lateness does
    not (its requests still go on time)."""
    srv = FakeMemcached(delay=0.003)
    try:
        rc, d, err = load(kv_load, srv.addr, "--rate", 200)
    finally:
        srv.shutdown()
    assert rc == 0 and d["mode"] == "open", d
    assert d["rtt_p50_us"] >= 3000 / 1.07
    assert d["p50_us"] >= d["rtt_p50_us"] / 1.07
    assert d["late_p50_us"] < 1000


@pytest.mark.skipif(not os.path.exists(MEMCACHED), reason="memcached not installed")
def test_real_memcached_and_an_overwritten_key(kv_load):
    """memcached on 127.0.0.1: a clean run passes; one key overwritten with
    a wrong value (same length) is caught by the next run's GETs."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    mc = subprocess.Popen([MEMCACHED, "-u", "root", "-t", "1", "-U", "0", "-l", "127.0.0.1",
                           "-p", str(port), "-m", "64"], stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL)
    try:
        addr = "127.0.0.1:%d" % port
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), 0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        rc, d, _ = run([kv_load, "--connect", addr, "--conns", 8, "--seconds", 1,
                        "--warmup", 0])
        assert rc == 0 and d["error"] is None and d["preloaded"] == 100000
        assert d["hits"] >= d["gets"] > 0 and d["misses"] == 0 and d["mismatches"] == 0
        # Key 0 rewritten with 64 other bytes by a second client, every
        # millisecond (the next run's preload stores the right value
        # first); the run only GETs (--get-ratio 1), and key 0 is its
        # most popular key.
        stop = threading.Event()

        def overwrite():
            with socket.create_connection(("127.0.0.1", port)) as c:
                f = c.makefile("rwb")
                while not stop.is_set():
                    f.write(b"set %s 0 0 64\r\n%s\r\n" % (HOT, b"x" * 64))
                    f.flush()
                    assert f.readline() == b"STORED\r\n"
                    time.sleep(0.001)

        t = threading.Thread(target=overwrite, daemon=True)
        t.start()
        try:
            rc, d, _ = run([kv_load, "--connect", addr, "--conns", 8, "--seconds", 2,
                            "--warmup", 0, "--get-ratio", 1])
        finally:
            stop.set()
            t.join(5)
        assert rc == 1 and d["mismatches"] == 1
        assert "GET of key 0: wrong reply from byte 45 of 116 (value" in d["error"]
    finally:
        mc.kill()
        mc.wait(5)


def test_no_memcached_listening(kv_load):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    rc, d, _ = run([kv_load, "--connect", "127.0.0.1:%d" % port, "--conns", 2, "--seconds", 1])
    assert rc == 1 and d["error"] == "connect: ECONNREFUSED" and d["requests"] == 0
