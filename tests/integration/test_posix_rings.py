"""Small rings that grow (src/shm/abi.h, docs/api.md) under `slipstream run`.

An unmodified program (python) talks to a Linux server in peer1.  Bulk: it
sends 4 MiB of random bytes, shuts down its side, and reads back what the
server echoes after it has read everything; the SHA-256 of both must be
equal.  By default (and with SLIPSTREAM_SMALL_RINGS=0) every connection
has its full rings from the start and neither moves.  With
SLIPSTREAM_SMALL_RINGS=1 such a connection starts on 4 KiB rings and moves
to the large ones once each way: the service's counters `app_rx_grown`
and `app_tx_grown` go up by exactly one each.  Request/response: 300
requests of 100 bytes, each answered before the next, keep to the small
rings (no move either way).
"""

import json
import os
import subprocess
import time

import pytest

from harness import CLI, bed_with_service, counters_delta
from harness import testbed as tbmod

PORT = 7415
NBYTES = 4 << 20

# Bulk: read to EOF, then send it all back.  RPC: answer each 100-byte
# request with its bytes reversed.
SERVER = r"""
import socket, sys
mode = sys.argv[3]
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2])))
s.listen(4)
c, _ = s.accept()
c.settimeout(30)
if mode == "bulk":
    parts = []
    while True:
        b = c.recv(65536)
        if not b:
            break
        parts.append(b)
    c.sendall(b"".join(parts))
else:
    while True:
        req = b""
        while len(req) < 100:
            b = c.recv(100 - len(req))
            if not b:
                break
            req += b
        if len(req) < 100:
            break
        c.sendall(req[::-1])
c.close()
"""

CLIENT = r"""
import hashlib, json, os, socket, sys
s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=30)
out = {}
if sys.argv[3] == "bulk":
    data = os.urandom(%d)
    s.sendall(data)
    s.shutdown(socket.SHUT_WR)
    h, got = hashlib.sha256(), 0
    while True:
        b = s.recv(65536)
        if not b:
            break
        h.update(b)
        got += len(b)
    out = {"sent": hashlib.sha256(data).hexdigest(), "got": h.hexdigest(), "bytes": got}
else:
    bad = 0
    for i in range(300):
        req = os.urandom(100)
        s.sendall(req)
        rep = b""
        while len(rep) < 100:
            b = s.recv(100 - len(rep))
            if not b:
                break
            rep += b
        bad += rep != req[::-1]
    out = {"bad": bad}
s.close()
print(json.dumps(out))
""" % NBYTES


@pytest.fixture(scope="module")
def bed(prefix_new_fn):
    yield from bed_with_service(tbmod.Testbed(prefix_new_fn(), peers=1))


def _run(tb, svc, mode, small_env):
    server = tb.ns_popen(tb.peer(1).ns, ["/usr/bin/python3", "-c", SERVER, tb.peer(1).ip,
                                         str(PORT), mode],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        time.sleep(0.5)
        env = None
        if small_env is not None:
            env = dict(os.environ, SLIPSTREAM_SMALL_RINGS=small_env)
        before = svc.stats()
        r = subprocess.run([str(CLI), "run", "--sock", svc.ctl_path, "--strict", "--",
                            "/usr/bin/python3", "-c", CLIENT, tb.peer(1).ip, str(PORT), mode],
                           capture_output=True, text=True, timeout=120, env=env)
        assert r.returncode == 0, (r.stdout, r.stderr)
        assert server.wait(30) == 0, server.stderr.read()
        return json.loads(r.stdout.strip().splitlines()[-1]), counters_delta(before, svc.stats())
    finally:
        if server.poll() is None:
            server.kill()
        server.wait()


@pytest.mark.parametrize("small_env,moves", [(None, 0), ("0", 0), ("1", 1)],
                         ids=["default", "fixed", "small"])
def test_bulk_both_ways(bed, small_env, moves):
    tb, svc = bed
    doc, delta = _run(tb, svc, "bulk", small_env)
    assert doc["bytes"] == NBYTES, doc
    assert doc["got"] == doc["sent"], doc
    assert delta.get("app_rx_grown", 0) == moves, delta
    assert delta.get("app_tx_grown", 0) == moves, delta
    assert delta.get("app_cmd_errors", 0) == 0, delta


def test_rpc_stays_small(bed):
    tb, svc = bed
    doc, delta = _run(tb, svc, "rpc", "1")
    assert doc["bad"] == 0, doc
    assert delta.get("app_rx_grown", 0) == 0, delta
    assert delta.get("app_tx_grown", 0) == 0, delta
    assert delta.get("app_cmd_errors", 0) == 0, delta
