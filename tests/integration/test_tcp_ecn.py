"""ECN (RFC 3168) between slipstreamd and Linux peers, on a test bed whose
peer namespace sets CE on every ECT packet (`testbed --ecn-all`).

* Linux offers ECN (net.ipv4.tcp_ecn=1 in its namespace): the handshake
  negotiates it, every data segment arrives CE-marked, the service counts
  them (tcp_ce_segs) and echoes ECE; the other way, Linux echoes our CE
  marks, the service answers with CWR (tcp_ecn_echoes) and its control
  loop cuts the flow's rate (cc_reductions).  Both
  transfers are byte-exact.
* Linux declines (tcp_ecn=0): nothing is ECT, nothing is marked, no
  reductions; the transfers are exact all the same.
"""

import pytest

from harness import counters_delta
from test_tcp import (  # noqa: F401  (procs is a fixture)
    _impaired_bed, bulk_linux_to_slipstream, bulk_slipstream_to_linux, procs)

MiB = 1 << 20


@pytest.fixture(scope="module")
def ecn_bed(prefix_new_fn):
    # Every packet marked is no queue a DCTCP sender could drain: dctcp-rate
    # (the default) rightly goes down to its 1 Mbit/s floor, too slow for
    # 64 MiB.  ss-bulk gets NewReno, whose RFC 3168 reaction halves at most
    # once per window; dctcp-rate's reaction to marks is covered by
    # test_stack_cc and test_congestion.
    for bed in _impaired_bed(prefix_new_fn, "ecn", extra_args=["--cc-app", "ss-bulk=newreno"],
                             ecn_all=True):
        yield bed.tb, bed.svc


def _peer_ecn(tb, value):
    tb.ns_exec(tb.peer(1).ns, ["sysctl", "-qw", "net.ipv4.tcp_ecn=%d" % value])


def _nstat(tb, name):
    out = tb.ns_exec(tb.peer(1).ns, ["nstat", "-az", name]).stdout
    for line in out.splitlines():
        parts = line.split()
        if parts and parts[0] == name:
            return int(parts[1])
    return 0


def test_ecn_negotiated_ce_echoed(ecn_bed, procs):
    tb, svc = ecn_bed
    _peer_ecn(tb, 1)
    ce0 = _nstat(tb, "TcpExtTCPDeliveredCE")
    before = svc.stats()
    bulk_linux_to_slipstream(procs, tb, svc, 64 * MiB)
    mid = svc.stats()
    d_in = counters_delta(before, mid)
    # Every data segment Linux sent was ECT and got CE in the test bed; the
    # service saw them all and Linux's sender got them echoed as ECE.
    assert d_in.get("tcp_ce_segs", 0) >= 64 * MiB // 1448 - 10, d_in
    assert _nstat(tb, "TcpExtTCPDeliveredCE") > ce0
    bulk_slipstream_to_linux(procs, tb, svc, 64 * MiB)
    d_out = counters_delta(mid, svc.stats())
    # Linux receives our ECT(0) data as CE and sets ECE: the engine answers
    # with CWR, and the control loop (NewReno for ss-bulk) cuts the window.
    assert d_out.get("tcp_ecn_echoes", 0) > 0, d_out
    assert d_out.get("cc_reductions", 0) > 0, d_out
    assert d_out.get("cc_window_updates", 0) > 0, d_out
    # The engine's own window halving is off while the loop runs.
    assert d_out.get("tcp_ecn_reductions", 0) == 0, d_out


def test_ecn_declined_by_linux(ecn_bed, procs):
    tb, svc = ecn_bed
    _peer_ecn(tb, 0)
    try:
        before = svc.stats()
        bulk_linux_to_slipstream(procs, tb, svc, 16 * MiB)
        bulk_slipstream_to_linux(procs, tb, svc, 16 * MiB)
        d = counters_delta(before, svc.stats())
        assert d.get("tcp_ce_segs", 0) == 0, d
        assert d.get("tcp_ecn_reductions", 0) == 0, d
        assert d.get("tcp_ecn_echoes", 0) == 0, d
    finally:
        _peer_ecn(tb, 2)
