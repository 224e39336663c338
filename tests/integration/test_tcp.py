"""TCP through slipstreamd against Linux peers: echo with 1..1000 concurrent
connections, active opens toward Linux servers, bulk transfers (clean, 1 %
loss, reordering), resets from either side, every close order, an
application SIGKILLed mid-transfer, and an idle service that sleeps.

Every transferred byte is checked: echo payloads byte by byte, bulk
transfers by SHA-256 at both ends.  Applications run in the root namespace
and reach the service through SLIPSTREAM_SOCK; the Linux side is
tcp_peer.py inside peer1's namespace.

Sizes: 1 GiB each way, clean, under 1 % loss and under 1 % reordering
(SLIPSTREAM_QUICK=1 uses 256 MiB for the impaired test beds).  Measured on
the 2-vCPU test machine, per 256 MiB: clean 1-3 s; under loss 1.5-3 s
(Linux -> Slipstream) and 6-8 s (Slipstream -> Linux, at 1 %
random loss both ways); under reordering about 2 s each way (the receiver
keeps out-of-order intervals and reports them in SACK blocks).
"""

import hashlib
import json
import os
import re
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

import tcp_peer
import harness
from harness import BUILD, PYTHON, counters_delta, service_finish
from harness import testbed as tbmod

APPS = BUILD / "tools" / "apps"
SS_ECHO = APPS / "ss-echo"
SS_BULK = APPS / "ss-bulk"
PEER_PY = Path(__file__).resolve().parent / "tcp_peer.py"

QUICK = os.environ.get("SLIPSTREAM_QUICK") == "1"
MiB = 1 << 20
GiB = 1 << 30
BULK_CLEAN = GiB
BULK_IMPAIRED = 256 * MiB if QUICK else GiB
BUF = str(MiB)                       # ss-bulk --buf: 1 MiB rings

TIME_WAIT_MS = 1000                  # short TIME_WAIT so flows drain in tests
# These are the TCP engine's tests (states, recovery, data integrity), not
# congestion control's (test_congestion.py, test_tcp_ecn.py): the service
# runs its default congestion control ("auto": cubic, and bbr for the bulk
# flows that lose segments, on these unmarked paths).
SERVICE_ARGS = ["--time-wait-ms", str(TIME_WAIT_MS)]

_ports = iter(range(20000, 30000))


def port_new():
    """A port no earlier test in this run used (no TIME_WAIT clashes)."""
    return next(_ports)


# ---- processes ----------------------------------------------------------

class Proc:
    """A child with stdout/stderr in files; wait_json() returns (rc, doc)."""

    def __init__(self, argv, name, **kw):
        self.name = name
        self.argv = [str(a) for a in argv]
        self.out = tempfile.TemporaryFile()
        self.err = tempfile.NamedTemporaryFile(prefix="sst-%s-" % name)
        self.proc = subprocess.Popen(self.argv, stdout=self.out, stderr=self.err,
                                     stdin=subprocess.DEVNULL, **kw)

    @property
    def pid(self):
        return self.proc.pid

    def alive(self):
        return self.proc.poll() is None

    def stderr(self):
        with open(self.err.name, "rb") as f:
            return f.read().decode(errors="replace")

    def stdout(self):
        self.out.seek(0)
        return self.out.read().decode(errors="replace")

    def describe(self):
        return "%s (%s): exit %s\nstdout: %s\nstderr: %s" % (
            self.name, " ".join(self.argv), self.proc.poll(), self.stdout()[-2000:],
            self.stderr()[-3000:])

    def wait_stderr(self, text, timeout=10.0):
        """Wait until text appears on stderr (e.g. tcp_peer's "listening")."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if text in self.stderr():
                return
            if not self.alive():
                break
            time.sleep(0.02)
        raise AssertionError("no %r from %s" % (text, self.describe()))

    def wait(self, timeout):
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError("%s did not finish within %.0f s\n%s"
                                 % (self.name, timeout, self.describe())) from None

    def wait_json(self, timeout):
        rc = self.wait(timeout)
        lines = [l for l in self.stdout().splitlines() if l.startswith("{")]
        assert lines, "no JSON line from %s" % self.describe()
        return rc, json.loads(lines[-1])

    def signal(self, sig):
        if self.alive():
            self.proc.send_signal(sig)

    def kill(self):
        if self.alive():
            self.proc.kill()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            pass

    def close(self):
        self.kill()
        self.out.close()
        self.err.close()


class Procs:
    """Starts applications and Linux workloads; kills what is left at teardown."""

    def __init__(self):
        self.all = []

    def app(self, service, binary, *args, name=None):
        env = dict(os.environ, SLIPSTREAM_SOCK=service.ctl_path)
        p = Proc([binary] + list(args), name or Path(binary).name, env=env)
        self.all.append(p)
        return p

    def peer(self, tb, mode, *args, peer=1):
        ns = tb.peer(peer).ns
        p = Proc(tbmod.ns_cmd(ns, [PYTHON, str(PEER_PY), mode] + list(args)),
                 "tcp_peer-%s" % mode)
        self.all.append(p)
        return p

    def cleanup(self):
        for p in self.all:
            p.close()


@pytest.fixture
def procs():
    p = Procs()
    yield p
    p.cleanup()


# ---- the service --------------------------------------------------------

def service_start(tb, extra_args=SERVICE_ARGS):
    """The harness's, with this file's 1 s TIME_WAIT."""
    return harness.service_start(tb, extra_args)


@pytest.fixture(scope="module")
def service(testbed):
    """slipstreamd with a 1 s TIME_WAIT in the module's one-peer test bed."""
    if not SS_ECHO.exists() or not SS_BULK.exists():
        pytest.skip("ss-echo/ss-bulk not built in %s" % APPS)
    svc = service_start(testbed)
    yield svc
    service_finish(svc)


class Bed:
    """An impaired test bed with its own service."""

    def __init__(self, tb, svc, name):
        self.tb, self.svc, self.name = tb, svc, name


def _impaired_bed(prefix_new_fn, name, extra_args=None, **kw):
    if not SS_ECHO.exists() or not SS_BULK.exists():
        pytest.skip("ss-echo/ss-bulk not built in %s" % APPS)
    tb = tbmod.Testbed(prefix_new_fn(), **kw)
    try:
        tb.up()
    except tbmod.TestbedError as e:
        tb.down()
        if "reorder" in kw and re.search(r"htb|qdisc|Unknown|not supported", str(e), re.I):
            pytest.skip("the kernel cannot build the reorder test bed (HTB + nftables "
                        "priority): %s" % e)
        raise
    with harness.service_running(tb, SERVICE_ARGS + list(extra_args or [])) as svc:
        yield Bed(tb, svc, name)


@pytest.fixture(scope="module")
def lossy(prefix_new_fn):
    """1 % loss each way (nftables in peer1's namespace)."""
    yield from _impaired_bed(prefix_new_fn, "loss", loss=1)


@pytest.fixture(scope="module")
def reordered(prefix_new_fn):
    """1 % of packets each way held back in the switch (peer2 is there for a
    Linux-to-Linux check that the impairment really reorders)."""
    yield from _impaired_bed(prefix_new_fn, "reorder", peers=2, reorder=1)


@pytest.fixture(scope="module")
def cookies_always(prefix_new_fn):
    """A clean bed whose service answers every SYN with a SYN cookie."""
    yield from _impaired_bed(prefix_new_fn, "cookies", extra_args=["--syn-cookies", "always"])


@pytest.fixture
def bed(request, testbed, service):
    """The clean bed (the module's) or an impaired one, by parameter."""
    if request.param == "clean":
        return Bed(testbed, service, "clean")
    return request.getfixturevalue(request.param)


# ---- service queries ----------------------------------------------------

def gauges(svc):
    return svc.query("stats")["gauges"]


def wait_until(fn, timeout, interval=0.05):
    """Poll fn() until it returns something true or timeout; returns the last value."""
    deadline = time.monotonic() + timeout
    while True:
        v = fn()
        if v or time.monotonic() >= deadline:
            return v
        time.sleep(interval)


def wait_gauges(svc, want, timeout):
    """Wait until every gauge in want has its value; returns the last gauges."""
    last = {}

    def check():
        last.update(gauges(svc))
        return all(last.get(k) == v for k, v in want.items())
    wait_until(check, timeout)
    return last


IDLE = {"flows": 0, "app_conns": 0, "apps": 0, "listeners": 0, "app_memory_bytes": 0}


def assert_idle(svc, timeout=5.0):
    """No flows, no applications left (apps are gone when the test starts
    and ends: every test cleans up after itself)."""
    g = wait_gauges(svc, IDLE, timeout)
    assert {k: g.get(k) for k in IDLE} == IDLE, "service not idle after %.0f s: %s" % (
        timeout, g)


def wait_listening(svc, listeners=1, timeout=10.0):
    g = wait_gauges(svc, {"listeners": listeners}, timeout)
    assert g.get("listeners") == listeners, "application never listened: %s" % g


def wait_conns_freed(svc, before, n, timeout):
    """Wait until n connections were created and n freed since before."""
    def check():
        d = counters_delta(before, svc.stats())
        return d if d.get("tcp_conn_created", 0) >= n and \
            d.get("tcp_conn_freed", 0) >= d.get("tcp_conn_created", 0) else None
    wait_until(check, timeout, 0.1)
    return counters_delta(before, svc.stats())


# ---- Linux side ---------------------------------------------------------

def linux_sockets(tb, port, peer=1):
    """[(state, local, remote)] of the peer's TCP sockets with port at either end."""
    res = tb.ns_exec(tb.peer(peer).ns, ["ss", "-tanH", "state", "all",
                                        "( sport = :%d or dport = :%d )" % (port, port)])
    assert res.returncode == 0, res.stderr
    socks = []
    for line in res.stdout.splitlines():
        f = line.split()
        if len(f) >= 5:
            socks.append((f[0], f[3], f[4]))
    return socks


def wait_linux_settled(tb, port, allowed, timeout=10.0):
    """Wait until the peer's sockets for port are all in allowed states
    (FIN-WAIT-1/2, CLOSE-WAIT, LAST-ACK, CLOSING, ESTAB ... never are);
    returns them."""
    deadline = time.monotonic() + timeout
    while True:
        socks = linux_sockets(tb, port)
        bad = [s for s in socks if s[0] not in allowed]
        if not bad or time.monotonic() >= deadline:
            break
        time.sleep(0.1)
    assert not bad, "Linux sockets still closing after %.0f s: %s" % (timeout, socks)
    return socks


def stream_sha256(seed, total):
    """SHA-256 of tcp_peer's payload stream (what `send` sends)."""
    h = hashlib.sha256()
    for c in tcp_peer.stream_chunks(seed, total):
        h.update(c)
    return h.hexdigest()


def xorshift_sha256(seed, total):
    """SHA-256 of ss-bulk's stream: xorshift64 (13, 7, 17) words, little-endian."""
    x = seed or 0x9e3779b97f4a7c15
    m = (1 << 64) - 1
    words = bytearray()
    for _ in range((total + 7) // 8):
        x ^= (x << 13) & m
        x ^= x >> 7
        x ^= (x << 17) & m
        words += x.to_bytes(8, "little")
    return hashlib.sha256(bytes(words[:total])).hexdigest()


# ---- transfers ----------------------------------------------------------

def _bulk_timeout(nbytes):
    """Seconds to allow a transfer: 60 plus 5 MiB/s (the reordered Linux ->
    Slipstream case runs at about 8 MiB/s)."""
    return 60 + nbytes / (5 * MiB)


def bulk_linux_to_slipstream(procs, tb, svc, nbytes, seed=7):
    """tcp_peer send -> ss-bulk recv --listen; returns (peer doc, app doc)."""
    timeout = _bulk_timeout(nbytes)
    port = port_new()
    app = procs.app(svc, SS_BULK, "recv", "--listen", port, "--buf", BUF, "--timeout", 30)
    wait_listening(svc)
    sender = procs.peer(tb, "send", "--dst", "%s:%d" % (tb.service_ip, port),
                        "--bytes", nbytes, "--seed", seed, "--timeout", 60)
    rc_s, doc_s = sender.wait_json(timeout)
    rc_a, doc_a = app.wait_json(30)
    assert rc_s == 0 and doc_s["error"] is None, sender.describe()
    assert rc_a == 0 and doc_a["error"] is None, app.describe()
    assert doc_s["bytes"] == nbytes and doc_a["bytes"] == nbytes, (doc_s, doc_a)
    assert doc_a["sha256"] == doc_s["sha256"], "stream corrupted: %s vs %s" % (doc_s, doc_a)
    return doc_s, doc_a


def bulk_slipstream_to_linux(procs, tb, svc, nbytes, seed=11):
    """ss-bulk send --connect -> tcp_peer recv; returns (peer doc, app doc)."""
    timeout = _bulk_timeout(nbytes)
    port = port_new()
    peer = tb.peer(1)
    recv = procs.peer(tb, "recv", "--listen", port, "--timeout", 60)
    recv.wait_stderr('"listening"')
    app = procs.app(svc, SS_BULK, "send", "--connect", "%s:%d" % (peer.ip, port),
                    "--bytes", nbytes, "--seed", seed, "--buf", BUF, "--timeout", 30)
    rc_a, doc_a = app.wait_json(timeout)
    rc_r, doc_r = recv.wait_json(30)
    assert rc_a == 0 and doc_a["error"] is None, app.describe()
    assert rc_r == 0 and doc_r["error"] is None, recv.describe()
    assert doc_a["bytes"] == nbytes and doc_r["bytes"] == nbytes, (doc_a, doc_r)
    assert doc_r["sha256"] == doc_a["sha256"], "stream corrupted: %s vs %s" % (doc_a, doc_r)
    return doc_r, doc_a


# ---- 1. echo: Linux clients -> ss-echo ----------------------------------

ECHO_BYTES = {1: 1000003, 100: 100000, 1000: 10000}


@pytest.mark.parametrize("conns", [1, 100, 1000])
def test_echo_concurrent(service, testbed, procs, conns):
    """N concurrent Linux connections to ss-echo, each echoed byte-exact
    (distinct payload per connection); afterwards every connection is freed
    (Linux closes first, so no TIME_WAIT on our side) and the app holds none."""
    assert_idle(service)
    port = port_new()
    before = service.stats()
    echo = procs.app(service, SS_ECHO, "--port", port)
    wait_listening(service)
    nbytes = ECHO_BYTES[conns]
    client = procs.peer(testbed, "echo-client", "--dst", "%s:%d" % (testbed.service_ip, port),
                        "--conns", conns, "--bytes", nbytes, "--seed", conns,
                        "--timeout", 60)
    rc, doc = client.wait_json(90)
    assert rc == 0 and doc["n_errors"] == 0, doc
    assert doc["done"] == conns and doc["conns"] == conns and doc["bytes"] == nbytes, doc
    delta = wait_conns_freed(service, before, conns, 10)
    assert delta.get("tcp_conn_created") == conns, delta
    assert delta.get("tcp_conn_freed") == conns, delta
    assert delta.get("tcp_passive_open") == conns, delta
    assert delta.get("tcp_conn_closed") == conns, delta
    assert not delta.get("tcp_rst_sent") and not delta.get("tcp_reset_rcvd"), delta
    g = wait_gauges(service, {"app_conns": 0, "flows": 0}, 5)
    assert g["app_conns"] == 0 and g["flows"] == 0, g
    assert g["apps"] == 1 and g["listeners"] == 1, g
    wait_linux_settled(testbed, port, {"TIME-WAIT"})
    echo.signal(signal.SIGTERM)
    assert echo.wait(10) == 0, echo.describe()
    assert_idle(service)


def test_echo_syn_cookies(cookies_always, procs):
    """1000 concurrent Linux connections, every one made from a SYN cookie
    (--syn-cookies always: the service keeps no half-open state), each
    echoed byte-exact with Linux's options (timestamps, window scale, SACK)
    carried in the cookie; no resets, no drops."""
    svc, tb, conns, nbytes = cookies_always.svc, cookies_always.tb, 1000, 10000
    port = port_new()
    before = svc.stats()
    echo = procs.app(svc, SS_ECHO, "--port", port)
    wait_listening(svc)
    client = procs.peer(tb, "echo-client", "--dst", "%s:%d" % (tb.service_ip, port),
                        "--conns", conns, "--bytes", nbytes, "--seed", 77, "--timeout", 60)
    rc, doc = client.wait_json(90)
    assert rc == 0 and doc["n_errors"] == 0, doc
    assert doc["done"] == conns and doc["bytes"] == nbytes, doc
    delta = wait_conns_freed(svc, before, conns, 10)
    assert delta.get("tcp_syn_cookies_ok") == conns, delta
    assert delta.get("tcp_syn_cookies_sent", 0) >= conns, delta
    assert delta.get("tcp_passive_open") == conns, delta
    assert not delta.get("tcp_syn_cookies_bad"), delta
    assert not delta.get("drop_tcp_backlog"), delta
    assert not delta.get("tcp_rst_sent") and not delta.get("tcp_reset_rcvd"), delta
    echo.signal(signal.SIGTERM)
    assert echo.wait(10) == 0, echo.describe()


# ---- 2. Slipstream client -> Linux server -------------------------------

def test_active_open_send_to_linux(service, testbed, procs):
    """ss-bulk connects to a Linux listener and sends 64 MiB; both SHA-256 equal."""
    assert_idle(service)
    before = service.stats()
    bulk_slipstream_to_linux(procs, testbed, service, 64 * MiB)
    delta = wait_conns_freed(service, before, 1, TIME_WAIT_MS / 1000 + 5)
    assert delta.get("tcp_active_open") == 1 and delta.get("tcp_conn_freed") == 1, delta
    assert_idle(service)


def test_active_open_receive_from_linux(service, testbed, procs):
    """ss-bulk connects to a Linux server that sends 64 MiB then FIN."""
    assert_idle(service)
    port = port_new()
    n = 64 * MiB
    server = procs.peer(testbed, "serve-send", "--listen", port, "--bytes", n, "--seed", 5)
    server.wait_stderr('"listening"')
    app = procs.app(service, SS_BULK, "recv", "--connect",
                    "%s:%d" % (testbed.peer(1).ip, port), "--buf", BUF, "--timeout", 30)
    rc_a, doc_a = app.wait_json(60)
    rc_s, doc_s = server.wait_json(30)
    assert rc_a == 0 and doc_a["error"] is None, app.describe()
    assert rc_s == 0 and doc_s["error"] is None and doc_s["received"] == 0, server.describe()
    assert doc_a["bytes"] == n == doc_s["bytes"], (doc_a, doc_s)
    assert doc_a["sha256"] == doc_s["sha256"] == stream_sha256(5, n), (doc_a, doc_s)
    assert_idle(service)


def test_bulk_stream_checked_independently(service, testbed, procs):
    """The bytes Linux got from ss-bulk are ss-bulk's documented xorshift64
    stream (computed here), not merely whatever both ends agree on."""
    n = 3 * MiB + 12345
    doc_r, doc_a = bulk_slipstream_to_linux(procs, testbed, service, n, seed=42)
    assert doc_r["sha256"] == xorshift_sha256(42, n)
    assert_idle(service, TIME_WAIT_MS / 1000 + 5)


# ---- 3. bulk, clean and impaired ----------------------------------------

BEDS = ["clean", "lossy", "reordered"]


def _bulk_size(bed):
    return BULK_CLEAN if bed.name == "clean" else BULK_IMPAIRED


def _slow_class_packets(tb):
    """{switch port: packets that went through the reorder bed's slow class}."""
    res = tb.ns_exec(tb.sw_ns, ["tc", "-s", "-j", "qdisc", "show"])
    out = {}
    for q in json.loads(res.stdout or "[]"):
        if q.get("kind") == "pfifo" and q.get("parent") == tbmod.REORDER_CLASS:
            out[q["dev"]] = q.get("packets", 0)
    return out


@pytest.mark.parametrize("bed", BEDS, indirect=True)
def test_bulk_linux_to_slipstream(bed, procs):
    """Linux sends 1 GiB (256 MiB on impaired beds with SLIPSTREAM_QUICK=1)
    to ss-bulk recv; SHA-256 equal at both ends."""
    assert_idle(bed.svc, TIME_WAIT_MS / 1000 + 5)
    n = _bulk_size(bed)
    slow0 = _slow_class_packets(bed.tb) if bed.name == "reordered" else None
    before = bed.svc.stats()
    doc_s, doc_a = bulk_linux_to_slipstream(procs, bed.tb, bed.svc, n)
    delta = counters_delta(before, bed.svc.stats())
    print("%s: Linux -> Slipstream %d bytes in %.2f s (%.2f Gbit/s); %s" % (
        bed.name, n, doc_a["seconds"], doc_a["gbps"],
        {k: v for k, v in delta.items() if k.startswith(("tcp_", "drop_"))}))
    # It started on the 4 KiB receive ring and moved to the large one
    # once (shm/abi.h "Small rings that grow").
    assert delta.get("app_rx_grown") == 1 and not delta.get("app_tx_grown"), delta
    if bed.name == "reordered":
        slow = _slow_class_packets(bed.tb)
        moved = {d: slow[d] - slow0.get(d, 0) for d in slow}
        assert moved.get(tbmod.sw_port_name(bed.tb.prefix, 0), 0) > 0, \
            "no data segment was held back toward the service: %s" % moved
    assert_idle(bed.svc, TIME_WAIT_MS / 1000 + 5)


@pytest.mark.parametrize("bed", BEDS, indirect=True)
def test_bulk_slipstream_to_linux(bed, procs):
    """ss-bulk sends 1 GiB (256 MiB on impaired beds with SLIPSTREAM_QUICK=1)
    to Linux; SHA-256 equal at both ends.  Under loss the service must have
    retransmitted."""
    assert_idle(bed.svc, TIME_WAIT_MS / 1000 + 5)
    n = _bulk_size(bed)
    slow0 = _slow_class_packets(bed.tb) if bed.name == "reordered" else None
    before = bed.svc.stats()
    doc_r, doc_a = bulk_slipstream_to_linux(procs, bed.tb, bed.svc, n)
    delta = counters_delta(before, bed.svc.stats())
    print("%s: Slipstream -> Linux %d bytes in %.2f s (%.2f Gbit/s); %s" % (
        bed.name, n, doc_a["seconds"], doc_a["gbps"],
        {k: v for k, v in delta.items() if k.startswith(("tcp_", "drop_"))}))
    # The transmit ring moved from 4 KiB to the large one once.
    assert delta.get("app_tx_grown") == 1 and not delta.get("app_rx_grown"), delta
    if bed.name == "lossy":
        assert delta.get("tcp_retrans_segs", 0) > 0, delta
    if bed.name == "reordered":
        slow = _slow_class_packets(bed.tb)
        moved = {d: slow[d] - slow0.get(d, 0) for d in slow}
        assert moved.get(tbmod.sw_port_name(bed.tb.prefix, 1), 0) > 0, \
            "no data segment was held back toward Linux: %s" % moved
    assert_idle(bed.svc, TIME_WAIT_MS / 1000 + 5)


def _nstat(tb, ns):
    res = tb.ns_exec(ns, ["nstat", "-az", "--json"])
    doc = json.loads(res.stdout or "{}")
    return doc.get("kernel", doc)


def test_reorder_testbed_reorders(reordered, procs):
    """Linux peer1 -> Linux peer2 across the reorder bed's switch: the
    receiver queues out-of-order segments and the sender sees reordering."""
    tb = reordered.tb
    p1, p2 = tb.peer(1), tb.peer(2)
    rcv0, snd0 = _nstat(tb, p2.ns), _nstat(tb, p1.ns)
    port = port_new()
    n = 64 * MiB
    recv = procs.peer(tb, "recv", "--listen", port, "--timeout", 60, peer=2)
    recv.wait_stderr('"listening"')
    send = procs.peer(tb, "send", "--dst", "%s:%d" % (p2.ip, port), "--bytes", n)
    rc_s, doc_s = send.wait_json(60)
    rc_r, doc_r = recv.wait_json(30)
    assert rc_s == 0 and rc_r == 0 and doc_r["sha256"] == doc_s["sha256"], (doc_s, doc_r)
    rcv, snd = _nstat(tb, p2.ns), _nstat(tb, p1.ns)

    def d(a, b, k):
        return a.get(k, 0) - b.get(k, 0)
    ofo = d(rcv, rcv0, "TcpExtTCPOFOQueue")
    reorder = sum(d(snd, snd0, k) for k in ("TcpExtTCPSACKReorder", "TcpExtTCPTSReorder",
                                            "TcpExtTCPDSACKRecv"))
    assert ofo > 0, "receiver saw no out-of-order segment (TCPOFOQueue)"
    assert reorder > 0, "sender saw no reordering (TCPSACKReorder/TSReorder/DSACKRecv)"


# ---- 4. resets ----------------------------------------------------------

def test_peer_reset_while_we_receive(service, testbed, procs):
    """Linux sends 4 MiB, then closes with SO_LINGER 0 (RST): ss-bulk recv
    reports ECONNRESET, exits 1, and had received every byte before it."""
    assert_idle(service)
    port = port_new()
    n = 4 * MiB
    before = service.stats()
    app = procs.app(service, SS_BULK, "recv", "--listen", port, "--buf", BUF,
                    "--timeout", 20)
    wait_listening(service)
    peer = procs.peer(testbed, "send-rst", "--dst", "%s:%d" % (testbed.service_ip, port),
                      "--bytes", n, "--seed", 3, "--seconds", 0.5)
    rc_p, doc_p = peer.wait_json(30)
    assert rc_p == 0 and doc_p["bytes"] == n, peer.describe()
    rc_a, doc_a = app.wait_json(20)
    assert rc_a == 1 and doc_a["error"] == "ECONNRESET", app.describe()
    assert doc_a["bytes"] == n and doc_a["sha256"] == stream_sha256(3, n), doc_a
    delta = wait_conns_freed(service, before, 1, 5)
    assert delta.get("tcp_rst_rcvd", 0) + delta.get("tcp_reset_rcvd", 0) >= 1, delta
    assert delta.get("tcp_conn_freed") == 1, delta
    assert_idle(service)
    assert linux_sockets(testbed, port) == []


def test_peer_reset_while_we_send(service, testbed, procs):
    """Linux reads 1 MiB of a 256 MiB stream, then closes with SO_LINGER 0:
    ss-bulk send reports ECONNRESET (or EPIPE: when its next TX command is
    taken in the same round as the RST, the service rejects it with EPIPE
    before it posts the reset event, and ss-bulk reports its first error)
    and exits 1."""
    assert_idle(service)
    port = port_new()
    before = service.stats()
    peer = procs.peer(testbed, "recv-rst", "--listen", port, "--bytes", MiB)
    peer.wait_stderr('"listening"')
    app = procs.app(service, SS_BULK, "send", "--connect",
                    "%s:%d" % (testbed.peer(1).ip, port), "--bytes", 256 * MiB,
                    "--buf", BUF, "--timeout", 20)
    rc_p, doc_p = peer.wait_json(30)
    assert rc_p == 0 and doc_p["bytes"] == MiB, peer.describe()
    rc_a, doc_a = app.wait_json(20)
    assert rc_a == 1 and doc_a["error"] in ("ECONNRESET", "EPIPE"), app.describe()
    assert MiB <= doc_a["bytes"] < 256 * MiB, doc_a
    delta = wait_conns_freed(service, before, 1, 5)
    assert delta.get("tcp_conn_freed") == 1, delta
    assert_idle(service)


# ---- 5. close orders ----------------------------------------------------

def test_close_peer_first(service, testbed, procs):
    """Linux closes first (echo-client closes once its 100 kB came back),
    ss-echo closes after the FIN: Linux ends in TIME-WAIT only, our side goes
    LAST_ACK -> CLOSED at once (freed without waiting for TIME_WAIT)."""
    assert_idle(service)
    port = port_new()
    before = service.stats()
    echo = procs.app(service, SS_ECHO, "--port", port)
    wait_listening(service)
    client = procs.peer(testbed, "echo-client", "--dst",
                        "%s:%d" % (testbed.service_ip, port), "--bytes", 100000)
    rc, doc = client.wait_json(30)
    assert rc == 0 and doc["n_errors"] == 0, doc
    delta = wait_conns_freed(service, before, 1, 3)
    assert delta.get("tcp_conn_freed") == 1 and delta.get("tcp_conn_closed") == 1, delta
    socks = wait_linux_settled(testbed, port, {"TIME-WAIT"})
    assert [s[0] for s in socks] == ["TIME-WAIT"], socks
    g = gauges(service)
    assert g["flows"] == 0 and g["app_conns"] == 0, g
    echo.signal(signal.SIGTERM)
    assert echo.wait(10) == 0, echo.describe()
    assert_idle(service)


def test_close_we_first(service, testbed, procs):
    """ss-bulk sends 1 MiB and closes first; Linux reads to EOF and closes:
    nothing of it is left on Linux (LAST-ACK answered), and our flow sits in
    TIME_WAIT for --time-wait-ms, then is freed."""
    assert_idle(service)
    port = port_new()
    before = service.stats()
    recv = procs.peer(testbed, "recv", "--listen", port)
    recv.wait_stderr('"listening"')
    app = procs.app(service, SS_BULK, "send", "--connect",
                    "%s:%d" % (testbed.peer(1).ip, port), "--bytes", MiB, "--seed", 9)
    rc_a, doc_a = app.wait_json(30)
    t_done = time.monotonic()
    rc_r, doc_r = recv.wait_json(30)
    assert rc_a == 0 and rc_r == 0 and doc_a["sha256"] == doc_r["sha256"], (doc_a, doc_r)
    g = gauges(service)
    if time.monotonic() - t_done < TIME_WAIT_MS / 1000 * 0.8:
        assert g["flows"] == 1, "expected our flow in TIME_WAIT: %s" % g
    wait_linux_settled(testbed, port, set())
    assert linux_sockets(testbed, port) == []
    delta = wait_conns_freed(service, before, 1, TIME_WAIT_MS / 1000 + 5)
    assert delta.get("tcp_conn_freed") == 1 and delta.get("tcp_active_open") == 1, delta
    assert_idle(service)


def _nft_peer(tb, script):
    res = tb.ns_exec(tb.peer(1).ns, ["nft", "-f", "-"], input=script)
    assert res.returncode == 0, res.stderr


def test_close_simultaneous(service, testbed, procs):
    """Both FINs in flight at once.  The peer's namespace drops every segment
    from the service carrying FIN, so ss-bulk's FIN (after 64 kB: all of it
    must fit in the receive buffer of a peer that reads nothing for 1 s,
    which Linux sizes by the memory its packets take) stays
    unacknowledged (our side FIN_WAIT_1); then Linux shuts down: its FIN
    reaches us in FIN_WAIT_1 -> CLOSING, we ACK it (Linux: FIN-WAIT-2).  The
    drop is lifted; our FIN retransmission completes both closes: Linux
    TIME-WAIT, ours TIME_WAIT then freed.  Data verified by SHA-256."""
    assert_idle(service)
    port = port_new()
    n = 64 * 1024
    table = "%s_tcpclose" % testbed.prefix
    _nft_peer(testbed, "table inet %s {\n chain input {\n  type filter hook input "
              "priority -10; policy accept;\n  ip saddr %s tcp sport %d "
              "tcp flags & fin == fin counter drop\n }\n}\n"
              % (table, testbed.service_ip, port))
    try:
        before = service.stats()
        app = procs.app(service, SS_BULK, "send", "--listen", port, "--bytes", n,
                        "--seed", 13, "--timeout", 30)
        wait_listening(service)
        peer = procs.peer(testbed, "fin-late", "--dst", "%s:%d" % (testbed.service_ip, port),
                          "--seconds", 1.0, "--timeout", 30)
        peer.wait_stderr('"shutdown"', 10)
        socks = wait_until(lambda: [s for s in linux_sockets(testbed, port)
                                    if s[0] == "FIN-WAIT-2"], 5)
        assert socks, "Linux FIN not acknowledged while ours was held: %s" % (
            linux_sockets(testbed, port),)
        res = testbed.ns_exec(testbed.peer(1).ns, ["nft", "-j", "list", "table", "inet", table])
        drops = [r["rule"]["expr"] for r in json.loads(res.stdout)["nftables"] if "rule" in r]
        dropped = [e["counter"]["packets"] for ex in drops for e in ex if "counter" in e]
        assert dropped and dropped[0] >= 1, "our FIN was never sent: %s" % res.stdout
    finally:
        testbed.ns_exec(testbed.peer(1).ns, ["nft", "delete", "table", "inet", table])
    rc_p, doc_p = peer.wait_json(30)
    rc_a, doc_a = app.wait_json(30)
    assert rc_p == 0 and doc_p["error"] is None, peer.describe()
    assert rc_a == 0 and doc_a["error"] is None, app.describe()
    assert doc_p["bytes"] == n == doc_a["bytes"] and doc_p["sha256"] == doc_a["sha256"]
    socks = wait_linux_settled(testbed, port, {"TIME-WAIT"})
    assert [s[0] for s in socks] == ["TIME-WAIT"], socks
    delta = wait_conns_freed(service, before, 1, TIME_WAIT_MS / 1000 + 5)
    assert delta.get("tcp_conn_freed") == 1, delta
    assert delta.get("tcp_retrans_segs", 0) >= 1, delta
    assert_idle(service)


# ---- 6. the application dies --------------------------------------------

def test_app_sigkill_mid_transfer(service, testbed, procs):
    """SIGKILL ss-bulk recv while Linux sends 1 GiB: Linux sees a reset (or
    EPIPE), the service frees the flow, the app's connections, its memory and
    the app itself (app_detached + 1); a new ss-echo then serves an echo."""
    assert_idle(service)
    port = port_new()
    before = service.stats()
    app = procs.app(service, SS_BULK, "recv", "--listen", port, "--buf", BUF, "--timeout", 30)
    wait_listening(service)
    sender = procs.peer(testbed, "send", "--dst", "%s:%d" % (testbed.service_ip, port),
                        "--bytes", GiB, "--timeout", 30)
    moving = wait_until(lambda: counters_delta(before, service.stats()).get("rx_bytes", 0)
                        > 32 * MiB, 10)
    assert moving, "the transfer did not start"
    g = gauges(service)
    assert g["flows"] == 1 and g["app_conns"] == 1 and g["apps"] == 1, g
    app.signal(signal.SIGKILL)
    app.wait(5)
    rc_s, doc_s = sender.wait_json(20)
    assert rc_s == 1 and doc_s["error"] in ("ECONNRESET", "EPIPE"), sender.describe()
    assert doc_s["bytes"] < GiB, doc_s
    g = wait_gauges(service, IDLE, 5)
    assert {k: g[k] for k in IDLE} == IDLE, g
    delta = counters_delta(before, service.stats())
    assert delta.get("app_detached") == 1, delta
    assert delta.get("tcp_reset_app_gone", 0) + delta.get("tcp_rst_sent", 0) >= 1, delta
    assert delta.get("tcp_conn_freed") == 1, delta
    # The service still serves a new application.
    port2 = port_new()
    echo = procs.app(service, SS_ECHO, "--port", port2)
    wait_listening(service)
    client = procs.peer(testbed, "echo-client", "--dst", "%s:%d" % (testbed.service_ip, port2),
                        "--conns", 3, "--bytes", 50000)
    rc, doc = client.wait_json(30)
    assert rc == 0 and doc["n_errors"] == 0 and doc["done"] == 3, doc
    echo.signal(signal.SIGTERM)
    assert echo.wait(10) == 0, echo.describe()
    assert_idle(service)


# ---- 7. idle ------------------------------------------------------------

def _cpu_ticks(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])     # utime + stime (fields 14, 15)


def test_idle_service_uses_no_cpu(service, testbed, procs):
    """With ss-echo attached and one idle established connection, slipstreamd
    uses at most 2 clock ticks of CPU in 5 s and wakes at most 20 times."""
    assert_idle(service)
    port = port_new()
    echo = procs.app(service, SS_ECHO, "--port", port)
    wait_listening(service)
    hold = procs.peer(testbed, "hold", "--dst", "%s:%d" % (testbed.service_ip, port),
                      "--seconds", 60)
    g = wait_gauges(service, {"flows": 1, "app_conns": 1}, 5)
    assert g["flows"] == 1 and g["app_conns"] == 1, g
    time.sleep(1.0)              # delayed ACKs, the app's first wait, ARP settle
    c0, t0 = service.stats(), _cpu_ticks(service.pid)
    time.sleep(5.0)
    c1, t1 = service.stats(), _cpu_ticks(service.pid)
    ticks = t1 - t0
    wakeups = c1["fp_wakeups"] - c0["fp_wakeups"]
    hz = os.sysconf("SC_CLK_TCK")
    assert ticks <= 2, "slipstreamd used %d ticks (1/%d s) in 5 idle seconds" % (ticks, hz)
    assert wakeups <= 20, "fast path woke %d times in 5 idle seconds" % wakeups
    assert hold.alive(), hold.describe()
    hold.kill()
    echo.signal(signal.SIGTERM)
    assert echo.wait(10) == 0, echo.describe()
    assert_idle(service, 5)
