"""Loss, reordering and duplication never break a transfer: the service with
its defaults (no tuning flags), an unmodified program under `slipstream run`
at one end and Linux at the other, through a switch that drops, reorders or
duplicates IPv4 packets at random.

Impairments (testbed.Testbed.impair_live, changed between tests without
rebuilding the bed): random loss of 0.5, 1, 2, 5 and 10 % toward the
service, toward the peer, and both ways; 1 % of packets held back in a slow
class (reordering, both ways); 1 % of packets sent twice (both ways).

Transfers (tests/integration/stream_peer.py at both ends), each way
(Linux -> Slipstream and Slipstream -> Linux): one flow of 4 MiB, and 100
flows of 128 KiB at once.  Every stream is compared byte for byte with
what was sent, every flow must finish within TIMEOUT, and no connection
may be reset or time out.  Goodput is printed, not checked: speed belongs
to the benchmarks (bench/workloads.py).
"""

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from harness import CLI, bed_with_service, counters_delta
from harness import testbed as tbmod

PEER = Path(__file__).resolve().parent / "stream_peer.py"
PY = "/usr/bin/python3"
TIMEOUT = 45                      # seconds per transfer, whatever the impairment
FLOWS = {1: 4 << 20, 100: 128 << 10}  # flows: bytes per flow

LOSS = [0.5, 1, 2, 5, 10]
SCENARIOS = ([("loss-%s-%g" % (d, p), {d: p}) for p in LOSS
              for d in ("to_service", "to_peers")] +
             [("loss-both-%g" % p, {"to_service": p, "to_peers": p}) for p in LOSS] +
             [("reorder-1", {"reorder": 1}), ("duplicate-1", {"duplicate": 1})])

_ports = iter(range(31000, 32000))


@pytest.fixture(scope="module")
def bed(prefix_new_fn):
    yield from bed_with_service(tbmod.Testbed(prefix_new_fn(), peers=1, switch=True))


def _transfer(tb, svc, way, flows, nbytes):
    """One transfer; returns (sender doc, receiver doc, seconds)."""
    port = next(_ports)
    peer = tb.peer(1)
    ss = [str(CLI), "run", "--sock", svc.ctl_path, "--strict", "--", PY, str(PEER)]
    common = ["--conns", str(flows), "--bytes", str(nbytes), "--seed", str(port),
              "--timeout", str(TIMEOUT)]
    if way == "linux-to-slipstream":
        recv = subprocess.Popen(ss + ["recv", "--listen", str(port)] + common,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        dst = tb.service_ip
        send_argv = tbmod.ns_cmd(peer.ns, [PY, str(PEER), "send", "--dst",
                                           "%s:%d" % (dst, port)] + common)
    else:
        recv = tb.ns_popen(peer.ns, [PY, str(PEER), "recv", "--listen", str(port)] + common,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        send_argv = ss + ["send", "--dst", "%s:%d" % (peer.ip, port)] + common
    try:
        deadline = time.monotonic() + 15
        line = ""
        while '"listening"' not in line and time.monotonic() < deadline:
            if recv.poll() is not None:
                break
            line = recv.stderr.readline()
        assert '"listening"' in line, "receiver did not listen: %r %s" % (
            line, recv.stderr.read() if recv.poll() is not None else "")
        t0 = time.monotonic()
        snd = subprocess.run(send_argv, capture_output=True, text=True, timeout=TIMEOUT + 30)
        out, err = recv.communicate(timeout=TIMEOUT + 30)
        dt = time.monotonic() - t0
    finally:
        if recv.poll() is None:
            recv.kill()
            recv.wait()
    docs = []
    for name, text, rc, errtext in (("sender", snd.stdout, snd.returncode, snd.stderr),
                                    ("receiver", out, recv.returncode, err)):
        lines = [l for l in text.splitlines() if l.startswith("{")]
        assert lines, "%s printed nothing (exit %s): %s" % (name, rc, errtext[-2000:])
        doc = json.loads(lines[-1])
        assert rc == 0 and doc["error"] is None, "%s: %s %s" % (name, doc, errtext[-2000:])
        docs.append(doc)
    return docs[0], docs[1], dt


@pytest.mark.parametrize("flows", sorted(FLOWS))
@pytest.mark.parametrize("way", ["linux-to-slipstream", "slipstream-to-linux"])
@pytest.mark.parametrize("name,impair", SCENARIOS, ids=[s[0] for s in SCENARIOS])
def test_transfer_whole(bed, name, impair, way, flows):
    tb, svc = bed
    tb.impair_live(**impair)
    try:
        nbytes = FLOWS[flows]
        before = svc.stats()
        snd, rcv, dt = _transfer(tb, svc, way, flows, nbytes)
        delta = counters_delta(before, svc.stats())
    finally:
        tb.impair_live()
    total = flows * nbytes
    assert snd["conns"] == flows and rcv["conns"] == flows, (snd, rcv)
    assert snd["bad"] == 0 and rcv["bad"] == 0, (snd, rcv)
    assert snd["bytes"] == total and rcv["bytes"] == total, (snd, rcv)
    assert delta.get("tcp_reset_rcvd", 0) == 0 and delta.get("tcp_timeout", 0) == 0, delta
    print("%s %s %d flow(s): %.1f Mbit/s over %.2f s; %s" % (
        name, way, flows, total * 8 / dt / 1e6, dt,
        {k: v for k, v in sorted(delta.items())
         if k.startswith(("tcp_retrans", "tcp_fast", "tcp_rto", "drop_tcp", "tcp_sack",
                          "tcp_lost", "tcp_dup", "cc_auto"))}))
