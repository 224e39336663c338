"""A program that writes and exits at once loses nothing, as on Linux.

The sender writes 3 MiB to a Linux receiver that starts reading only after
1.5 s, then exits straight away: after close(), or without closing (the
process's exit closes its sockets).  Much of the data has not even been sent
when the process is gone (under Slipstream its 4 MiB ring takes all 3 MiB at
once).  Linux sends it, then a FIN; so must Slipstream
(the service keeps a copy of the unacknowledged bytes: docs/compat.md).
Checked: the receiver's sha256 and byte count equal the sender's, on Linux
and under Slipstream, and the service ends with no applications and no
orphaned data (gauge orphan_bytes 0, counter tcp_orphaned counted).
"""

import hashlib
import json
import subprocess

import pytest

import apps_lib
from apps_lib import PYTHON

BYTES = 3 << 20
PORT = 7401

RECEIVER = r"""
import hashlib, json, socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2]))); s.listen(4)
s.settimeout(30)
for _ in range(int(sys.argv[3])):
    c, _ = s.accept(); c.settimeout(30)
    time.sleep(1.5)
    h = hashlib.sha256(); n = 0
    while True:
        b = c.recv(1 << 16)
        if not b:
            break
        h.update(b); n += len(b)
    c.close()
    print(json.dumps({"bytes": n, "sha256": h.hexdigest()}), flush=True)
"""

SENDER = r"""
import hashlib, os, random, socket, sys
data = random.Random(int(sys.argv[3])).randbytes(%d)
s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=30)
s.sendall(data)
print(hashlib.sha256(data).hexdigest(), flush=True)
if sys.argv[4] == "close":
    s.close()
os._exit(0)
""" % BYTES

MODES = ("close", "exit")


@pytest.fixture(scope="module")
def bed(prefix_new_fn):
    if not apps_lib.harness.SERVICE_BIN.exists():
        pytest.skip("slipstreamd not built at %s" % apps_lib.harness.SERVICE_BIN)
    with apps_lib.bed_up(prefix_new_fn()) as b:
        yield b


@pytest.mark.parametrize("side", ["linux", "slipstream"])
def test_exit_right_after_writing(bed, side):
    rx_ip = bed.tb.peer(1).ip
    before = bed.svc.query("stats")["counters"]
    receiver = bed.start("receiver", "linux", [PYTHON, "-c", RECEIVER, rx_ip, str(PORT),
                                               str(1 + len(MODES))], ns=bed.client_ns)
    bed.wait_listen(rx_ip, PORT, receiver)
    # wait_listen's probe was the first connection: it sent nothing.
    sent = []
    for seed, mode in enumerate(MODES, start=1):
        argv = [PYTHON, "-c", SENDER, rx_ip, str(PORT), str(seed), mode]
        if side == "slipstream":
            argv = bed.ss_argv(argv)
            argv[argv.index("--"):argv.index("--")] = ["--conns", "16", "--buf", str(4 << 20)]
            r = subprocess.run(argv, env=bed.env, capture_output=True, text=True, timeout=60,
                               stdin=subprocess.DEVNULL)
        else:
            r = bed.run(bed.linux_ns(), argv, timeout=60)
        assert r.returncode == 0, (mode, r.stdout, r.stderr)
        sent.append(r.stdout.strip())
    receiver.p.wait(timeout=60)
    lines = [json.loads(x) for x in receiver.log.read_text().split("\n") if x.startswith("{")]
    bed.procs.remove(receiver)
    assert len(lines) == 1 + len(MODES), lines
    assert lines[0] == {"bytes": 0, "sha256": hashlib.sha256(b"").hexdigest()}
    for mode, want, got in zip(MODES, sent, lines[1:]):
        assert got == {"bytes": BYTES, "sha256": want}, (side, mode, got)
    if side == "slipstream":
        g = bed.wait_service_idle("after the senders exited")
        assert g["orphan_bytes"] == 0, g
        after = bed.svc.query("stats")["counters"]
        assert after["tcp_orphaned"] - before["tcp_orphaned"] == len(MODES), after
        assert after["tcp_reset_orphan_mem"] == before["tcp_reset_orphan_mem"]
