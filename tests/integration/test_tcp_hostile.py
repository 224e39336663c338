"""A hostile application next to a well-behaved one, and malformed attach
requests: slipstreamd stays up, keeps serving the other application, hangs
up on the hostile one and reclaims everything.

hostile_app.py speaks the attach protocol itself (no libslipstream), then
publishes hostile commands through a correctly advanced ring, then random
command slots and impossible ring indices (see its docstring).
"""

import json
import os
import random
import socket
import threading
import time
from pathlib import Path

import pytest

import frames as fr
import hostile_app
from frames import ACK, FIN, PSH, RST, SYN, URG
from harness import PYTHON, counters_delta, counters_wait
from test_tcp import (BUF, MiB, SS_BULK, SS_ECHO, Proc, assert_idle, gauges,  # noqa: F401
                      port_new, procs, service, wait_listening)

HOSTILE = Path(__file__).resolve().parent / "hostile_app.py"
GOOD = b"attach 1 contexts=1 conns=64 rxbuf=65536 txbuf=65536\n"


def test_hostile_app_does_not_hurt_a_transfer(service, testbed, procs):
    """Linux sends 256 MiB to ss-bulk recv while hostile_app.py attaches,
    abuses its rings and gets disconnected, again and again for 5 s.  The
    transfer completes with the right SHA-256; every hostile session was hung
    up on (app_bad_ring = sessions), its commands rejected (app_cmd_errors),
    and in the end no application, flow or memory is left."""
    assert_idle(service)
    peer = testbed.peer(1)
    port, echo_port = port_new(), port_new()
    n = 256 * MiB
    before = service.stats()
    echo = procs.peer(testbed, "echo-server", "--listen", echo_port, "--count", 100000,
                      "--timeout", 60)
    echo.wait_stderr('"listening"')
    app = procs.app(service, SS_BULK, "recv", "--listen", port, "--buf", BUF, "--timeout", 30)
    wait_listening(service)
    hostile = Proc([PYTHON, HOSTILE, "--sock", service.ctl_path, "--seconds", 5,
                    "--seed", os.getpid(), "--echo", "%s:%d" % (peer.ip, echo_port),
                    "--avoid-port", port], "hostile_app")
    procs.all.append(hostile)
    time.sleep(0.5)                       # the hostile app is at work
    assert hostile.alive(), hostile.describe()
    sender = procs.peer(testbed, "send", "--dst", "%s:%d" % (testbed.service_ip, port),
                        "--bytes", n, "--seed", 21, "--timeout", 60)
    rc_s, doc_s = sender.wait_json(120)
    hostile_during = hostile.alive()
    rc_a, doc_a = app.wait_json(30)
    rc_h, doc_h = hostile.wait_json(60)
    assert rc_s == 0 and doc_s["error"] is None, sender.describe()
    assert rc_a == 0 and doc_a["error"] is None, app.describe()
    assert doc_a["bytes"] == n == doc_s["bytes"] and doc_a["sha256"] == doc_s["sha256"], \
        (doc_s, doc_a)
    assert hostile_during or doc_h["sessions"] >= 2, "no overlap with the transfer"
    assert rc_h == 0, hostile.describe()
    assert doc_h["sessions"] >= 3 and doc_h["disconnected"] == doc_h["sessions"], doc_h
    assert doc_h["not_disconnected"] == 0 and doc_h["commands"] > 0, doc_h
    assert service.alive(), service.logs()
    echo.kill()
    assert_idle(service, 10)
    delta = counters_delta(before, service.stats())
    print("hostile: %s; transfer %.2f s; service: %s" % (
        doc_h, doc_a["seconds"], {k: v for k, v in delta.items() if k.startswith("app_")}))
    assert delta.get("app_bad_ring") == doc_h["sessions"], (delta, doc_h)
    assert delta.get("app_cmd_errors", 0) > 0, delta
    assert delta.get("app_detached") == doc_h["sessions"] + 1, (delta, doc_h)
    # Still serving: a fresh application works.
    _echo_check(service, testbed, procs)


def _echo_check(service, testbed, procs):
    port = port_new()
    echo = procs.app(service, SS_ECHO, "--port", port)
    wait_listening(service)
    client = procs.peer(testbed, "echo-client", "--dst", "%s:%d" % (testbed.service_ip, port),
                        "--conns", 4, "--bytes", 30000)
    rc, doc = client.wait_json(30)
    assert rc == 0 and doc["n_errors"] == 0 and doc["done"] == 4, doc
    echo.signal(15)
    assert echo.wait(10) == 0, echo.describe()
    assert_idle(service)


def _ask(path, data, half_close=True, timeout=5.0):
    """Sends data on a fresh control connection; returns (reply bytes, fds)."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(path)
        try:
            s.sendall(data)
            if half_close:
                s.shutdown(socket.SHUT_WR)
        except (BrokenPipeError, ConnectionResetError):
            pass              # it may hang up before reading everything
        return hostile_app.recv_line_fds(s, timeout)
    finally:
        s.close()


rnd = random.Random(1234)
MALFORMED = {
    "bare": b"attach\n",
    "version2": b"attach 2 contexts=1 conns=64 rxbuf=65536 txbuf=65536\n",
    "version0": b"attach 0 contexts=1 conns=64 rxbuf=65536 txbuf=65536\n",
    "contexts0": b"attach 1 contexts=0 conns=64 rxbuf=65536 txbuf=65536\n",
    "contexts_huge": b"attach 1 contexts=100000 conns=64 rxbuf=65536 txbuf=65536\n",
    "contexts_neg": b"attach 1 contexts=-1 conns=64 rxbuf=65536 txbuf=65536\n",
    "conns0": b"attach 1 contexts=1 conns=0 rxbuf=65536 txbuf=65536\n",
    "conns_huge": b"attach 1 contexts=1 conns=1000000000 rxbuf=65536 txbuf=65536\n",
    "conns_overflow": b"attach 1 contexts=1 conns=99999999999999999999999 rxbuf=65536 "
                      b"txbuf=65536\n",
    "rxbuf_not_pow2": b"attach 1 contexts=1 conns=64 rxbuf=65535 txbuf=65536\n",
    "txbuf_not_pow2": b"attach 1 contexts=1 conns=64 rxbuf=65536 txbuf=3000\n",
    "rxbuf_huge": b"attach 1 contexts=1 conns=64 rxbuf=1099511627776 txbuf=65536\n",
    "txbuf_2g": b"attach 1 contexts=1 conns=64 rxbuf=65536 txbuf=2147483648\n",
    "bufs0": b"attach 1 contexts=1 conns=64 rxbuf=0 txbuf=0\n",
    "bufs1": b"attach 1 contexts=1 conns=64 rxbuf=1 txbuf=1\n",
    "missing_txbuf": b"attach 1 contexts=1 conns=64 rxbuf=65536\n",
    "unknown_key": b"attach 1 contexts=1 conns=64 rxbuf=65536 txbuf=65536 bogus=1\n",
    "bad_number": b"attach 1 contexts=1x conns=64 rxbuf=65536 txbuf=65536\n",
    "empty_number": b"attach 1 contexts= conns=64 rxbuf=65536 txbuf=65536\n",
    "no_equals": b"attach 1 contexts conns=64 rxbuf=65536 txbuf=65536\n",
    "empty_key": b"attach 1 =1 conns=64 rxbuf=65536 txbuf=65536\n",
    "nul_inside": b"attach 1 contexts=1\x00 conns=64 rxbuf=65536 txbuf=65536\n",
    "too_long": b"attach 1 " + b"contexts=1 " * 40 + b"conns=64 rxbuf=65536 txbuf=65536\n",
    "attachx": b"attachx 1 contexts=1 conns=64 rxbuf=65536 txbuf=65536\n",
    "empty_line": b"\n",
    "garbage_10k": rnd.randbytes(10240) + b"\n",
    "text_10k_no_newline": b"attach 1 " + b"A" * 10240,
}


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_malformed_attach(service, name):
    """Each malformed attach request gets {"ok": false, "error": ...} (or an
    {"error": ...} tool answer when it is not an attach at all, or a closed
    socket), never any fd, never an attached application, never a crash."""
    before = service.stats()
    data, fds = _ask(service.ctl_path, MALFORMED[name])
    for fd in fds:
        os.close(fd)
    assert fds == [], "fds handed out for %r: %r" % (name, data)
    if data:
        doc = json.loads(data)
        assert doc.get("ok") is not True and isinstance(doc.get("error"), str) \
            and doc["error"], doc
        if MALFORMED[name].startswith(b"attach ") or MALFORMED[name] == b"attach\n":
            assert doc.get("ok") is False, doc
    assert service.alive(), service.logs()
    g = gauges(service)
    assert g["apps"] == 0 and g["app_memory_bytes"] == 0, g
    delta = counters_delta(before, service.stats())
    assert not delta.get("app_detached"), delta


def test_attach_after_malformed_still_works(service, testbed, procs):
    """After all that, a well-formed attach by hand and a real app both work."""
    data, fds = _ask(service.ctl_path, GOOD, half_close=False)
    try:
        doc = json.loads(data)
        assert doc["ok"] is True and len(fds) == 4, (doc, fds)
    finally:
        for fd in fds:
            os.close(fd)
    assert_idle(service)
    _echo_check(service, testbed, procs)


def _attach_once(service, line):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(service.ctl_path)
    try:
        s.sendall(line)
        data, fds = hostile_app.recv_line_fds(s, 10)
        for fd in fds:
            os.close(fd)
        return json.loads(data), len(fds)
    finally:
        s.close()


def test_attach_memory_limit(service):
    """--max-app-mem (default 4 GiB) bounds conns * (rxbuf + txbuf): exactly
    the limit is served (a sparse region, reclaimed when the socket closes),
    one ring size more is refused with a message naming the limit, and the
    largest sizes the other limits allow (16384 connections with 4 MiB rings,
    128 GiB) are refused the same way."""
    doc, nfds = _attach_once(
        service, b"attach 1 contexts=1 conns=1024 rxbuf=2097152 txbuf=2097152\n")
    assert doc.get("ok") is True and nfds == 4, doc
    assert_idle(service, 5)
    for line in (b"attach 1 contexts=1 conns=1024 rxbuf=4194304 txbuf=2097152\n",
                 b"attach 1 contexts=64 conns=16384 rxbuf=4194304 txbuf=4194304\n"):
        doc, nfds = _attach_once(service, line)
        assert doc.get("ok") is False and nfds == 0, doc
        assert "max-app-mem" in doc.get("error", ""), doc
    assert_idle(service, 5)


def test_slow_control_client_does_not_stall_others(service):
    """A local client that trickles an attach line one byte every 0.3 s must
    not keep `stats` (or attaches, or reclaiming hung-up apps, all on the
    same thread) waiting: stats answers within 1 s."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(service.ctl_path)
    stop = threading.Event()

    def trickle():
        for b in b"attach 1 contexts=1 conns=64 rxbuf=65536 txbuf=65536"[:14]:
            if stop.wait(0.3):
                return
            try:
                s.sendall(bytes([b]))
            except OSError:
                return
    th = threading.Thread(target=trickle)
    th.start()
    try:
        time.sleep(0.5)
        t0 = time.monotonic()
        try:
            service.query("stats", timeout=10)
        finally:
            took = time.monotonic() - t0
    finally:
        stop.set()
        th.join(5)
        s.close()
    assert took < 1.0, "stats took %.1f s behind a slow control client" % took


# ---- raw segments at a listener and at a connection in TIME-WAIT --------
#
# Segments come from peer1's MAC, through peer_agent.py; those of a
# connection use an address no host of the bed has (SPOOF_IP, in the
# service's subnet): the service answers to the SYN's MAC, and peer1's
# kernel ignores what comes back (not its address) instead of resetting
# a connection it does not know.

SPOOF_IP = "198.18.0.200"
N_RAW = 5


def _raw(service, testbed, src, sport, dport, **kw):
    seg = fr.tcp(src, testbed.service_ip, sport, dport, **kw)
    return fr.eth(service.info()["mac"], testbed.peer(1).mac, fr.ETH_IPV4,
                  fr.ipv4(src, testbed.service_ip, fr.PROTO_TCP, seg))


def _segs(replies):
    return [fr.frame_parse(r)["TCP"] for r in replies]


def test_listen_drops_segment_without_syn_ack_rst(service, testbed, procs, agent):
    """RFC 9293 3.10.7.2 LISTEN, fourth: a segment with none of SYN, ACK,
    RST to a listening port is dropped without a reply (and counted in
    drop_tcp_listen_no_ack); an ACK still gets <SEQ=SEG.ACK><CTL=RST>."""
    assert_idle(service)
    port = port_new()
    echo = procs.app(service, SS_ECHO, "--port", port)
    wait_listening(service)
    peer_ip = testbed.peer(1).ip
    match = {"ip_src": testbed.service_ip, "ip_proto": fr.PROTO_TCP}
    cases = [0, FIN, PSH, URG, FIN | PSH | URG]
    before = service.stats()
    for i, flags in enumerate(cases):
        frame = _raw(service, testbed, peer_ip, 41000 + i, port, seq=1000 + i, flags=flags,
                     payload=b"x" * i)
        replies = agent.xchg(frame, match, timeout=0.3, count=N_RAW)
        assert replies == [], "flags %#x: %s" % (flags, [r.hex() for r in replies])
    want = N_RAW * len(cases)
    delta = counters_wait(service, before, {"drop_tcp_listen_no_ack": want})
    assert delta.get("drop_tcp_listen_no_ack") == want, delta
    assert not delta.get("tx_tcp_rst") and not delta.get("drop_tcp_no_flow"), delta
    frame = _raw(service, testbed, peer_ip, 41100, port, seq=5000, ack=0x12345678,
                 flags=ACK | FIN)
    segs = _segs(agent.xchg(frame, match, timeout=0.5))
    assert len(segs) == 1 and int(segs[0].flags) == RST, segs
    assert segs[0].seq == 0x12345678 and (segs[0].sport, segs[0].dport) == (port, 41100)
    echo.signal(15)
    assert echo.wait(10) == 0, echo.describe()
    assert_idle(service)


def test_time_wait_acknowledges(service, testbed, procs, agent):
    """A connection of the service's in TIME-WAIT (its application sent
    and closed first) answers with one ACK of RCV.NXT, SEQ = SND.NXT: a
    retransmitted FIN (out of the window), and the acceptable FIN, bare
    ACK and text at RCV.NXT (RFC 9293 3.10.7.4 fifth, TIME-WAIT:
    acknowledge it and restart the 2 MSL timeout).  This module's service
    waits 1 s in TIME-WAIT: the probes take longer than that, each one
    restarting it."""
    assert_idle(service)
    port = port_new()
    app = procs.app(service, SS_BULK, "send", "--listen", port, "--bytes", 10,
                    "--timeout", 20)
    wait_listening(service)
    sport, isn = random.randrange(32768, 60999), random.randrange(1 << 32)
    match = {"ip_src": testbed.service_ip, "ip_proto": fr.PROTO_TCP}

    def raw(**kw):
        return _raw(service, testbed, SPOOF_IP, sport, port, **kw)

    segs = _segs(agent.xchg(raw(seq=isn, flags=SYN, options=bytes([2, 4, 5, 180])), match,
                            timeout=2.0, max_frames=1))
    assert len(segs) == 1 and int(segs[0].flags) == SYN | ACK, segs
    assert segs[0].ack == (isn + 1) & 0xFFFFFFFF
    iss = segs[0].seq
    # The handshake's ACK: 10 bytes and the FIN come back.
    got = _segs(agent.xchg(raw(seq=isn + 1, ack=iss + 1, flags=ACK), match, timeout=1.5))
    fins = [t for t in got if int(t.flags) & FIN]
    assert fins, got
    snd_nxt = (fins[0].seq + len(bytes(fins[0].payload)) + 1) & 0xFFFFFFFF
    assert snd_nxt == (iss + 12) & 0xFFFFFFFF, (iss, [(t.seq, t.flags) for t in got])
    rcv_nxt = (isn + 2) & 0xFFFFFFFF
    # Everything acknowledged, and our FIN: TIME-WAIT, its ACK.
    segs = _segs(agent.xchg(raw(seq=isn + 1, ack=snd_nxt, flags=FIN | ACK), match,
                            timeout=0.5))
    assert [(int(t.flags), t.seq, t.ack) for t in segs] == [(ACK, snd_nxt, rcv_nxt)], segs
    probes = [("retransmitted FIN", dict(seq=isn + 1, ack=snd_nxt, flags=FIN | ACK)),
              ("FIN at RCV.NXT", dict(seq=rcv_nxt, ack=snd_nxt, flags=FIN | ACK)),
              ("bare ACK at RCV.NXT", dict(seq=rcv_nxt, ack=snd_nxt, flags=ACK)),
              ("text at RCV.NXT", dict(seq=rcv_nxt, ack=snd_nxt, flags=PSH | ACK,
                                       payload=b"late")),
              ("retransmitted FIN again", dict(seq=isn + 1, ack=snd_nxt, flags=FIN | ACK))]
    for what, kw in probes:
        segs = _segs(agent.xchg(raw(**kw), match, timeout=0.3))
        # (a frame shorter than 60 bytes may come padded with zeros)
        assert [(int(t.flags), t.seq, t.ack, bytes(t.payload).strip(b"\0")) for t in segs] == \
            [(ACK, snd_nxt, rcv_nxt, b"")], (what, segs)
    rc, doc = app.wait_json(10)
    assert rc == 0 and doc["error"] is None, app.describe()
    assert_idle(service, 5)
