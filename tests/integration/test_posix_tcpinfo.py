"""TCP_INFO and TCP_CONGESTION under `slipstream run`, beside Linux.

An unmodified client (python) sends 1 MiB to a Linux sink in peer1, waits
for the sink's answer (so everything is acknowledged), then reads
getsockopt(TCP_INFO) with Linux's full layout up to tcpi_bytes_received,
and TCP_CONGESTION.  The same program runs on Linux (from peer2) in the
same run; both must report what a TCP stack that did this transfer knows:
ESTABLISHED, an RTT, an RTO of at least 200 ms, the MSS, a window, the
options negotiated and every byte acknowledged.  Under Slipstream the
figures come from the service's engine (struct ss_shm_conn_info, published
at control intervals, at most every 10 ms and when the flow goes idle),
and the algorithm is the service's, not the
application's choice.
"""

import json
import subprocess
import time

import pytest

from harness import CLI, bed_with_service
from harness import testbed as tbmod

PORT = 7411
NBYTES = 1 << 20

SINK = r"""
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2])))
s.listen(4)
for _ in range(int(sys.argv[3])):
    c, _ = s.accept()
    c.settimeout(20)
    got = 0
    while got < %d:
        b = c.recv(65536)
        if not b:
            break
        got += len(b)
    c.sendall(b"%%d\n" %% got)
    c.recv(1)
    c.close()
""" % NBYTES

CLIENT = r"""
import json, socket, struct, sys, time
s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=20)
s.sendall(bytes(range(256)) * (%d // 256))
reply = s.makefile().readline()
time.sleep(0.2)  # an idle flow's last control interval has ended by now
raw = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 136)
names = ("state ca_state retransmits probes backoff options wscale pad "
         "rto ato snd_mss rcv_mss unacked sacked lost retrans fackets "
         "last_data_sent last_ack_sent last_data_recv last_ack_recv "
         "pmtu rcv_ssthresh rtt rttvar snd_ssthresh snd_cwnd advmss reordering "
         "rcv_rtt rcv_space total_retrans pacing_rate max_pacing_rate "
         "bytes_acked bytes_received").split()
vals = struct.unpack("8B24I4Q", raw[:136])
info = dict(zip(names, vals))
info["len"] = len(raw)
info["reply"] = reply.strip()
info["cc"] = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, 16).split(b"\0")[0].decode()
s.sendall(b"x")
print(json.dumps(info))
""" % NBYTES


@pytest.fixture(scope="module")
def bed(prefix_new_fn):
    yield from bed_with_service(tbmod.Testbed(prefix_new_fn(), peers=2))


def _run(tb, svc, side):
    sink = tb.ns_popen(tb.peer(1).ns, ["/usr/bin/python3", "-c", SINK, tb.peer(1).ip, str(PORT),
                                        "1"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        time.sleep(0.5)
        argv = ["/usr/bin/python3", "-c", CLIENT, tb.peer(1).ip, str(PORT)]
        if side == "slipstream":
            r = subprocess.run([str(CLI), "run", "--sock", svc.ctl_path, "--strict", "--"] + argv,
                               capture_output=True, text=True, timeout=60)
        else:
            r = tb.ns_exec(tb.peer(2).ns, argv, timeout=60)
        assert r.returncode == 0, (side, r.stdout, r.stderr)
        return json.loads(r.stdout.strip().splitlines()[-1])
    finally:
        sink.kill()
        sink.wait()


@pytest.mark.parametrize("side", ["linux", "slipstream"])
def test_tcp_info_after_transfer(bed, side):
    tb, svc = bed
    i = _run(tb, svc, side)
    assert i["reply"] == str(NBYTES), i
    assert i["len"] == 136, i
    assert i["state"] == 1, i                       # TCP_ESTABLISHED
    assert i["ca_state"] == 0, i                    # open: no recovery in progress
    assert i["retransmits"] == 0 and i["backoff"] == 0, i
    assert i["options"] & 0x3 == 0x3, i            # timestamps and SACK
    assert 200000 <= i["rto"] <= 1200000, i         # at least rto_min, microseconds
    assert 0 < i["rtt"] < 200000, i
    assert 500 <= i["snd_mss"] <= 1460, i
    assert i["snd_cwnd"] >= 1, i
    assert i["unacked"] == 0, i
    # The sink answered after reading everything: all NBYTES are acknowledged.
    assert i["bytes_acked"] >= NBYTES, i
    assert i["bytes_acked"] <= NBYTES + 1, i        # Linux counts the SYN
    assert i["pacing_rate"] > 0, i
    # Nothing lost on the bed: no loss figures; the path's MTU and MSS.
    assert i["lost"] == 0 and i["retrans"] == 0 and i["sacked"] == 0, i
    assert 576 <= i["pmtu"] <= 9000, i
    assert 500 <= i["rcv_mss"] <= 1460, i
    # Our data went out and was acknowledged some 200 ms ago at most
    # (the service's record: to within its last write, docs/compat.md).
    assert i["last_data_sent"] <= 5000 and i["last_ack_recv"] <= 5000, i
    if side == "slipstream":
        # The service's default ("auto"): cubic for a flow that lost
        # nothing, not paced: ~0 as Linux reports an unpaced socket.
        assert i["cc"] == "cubic", i
        assert i["pacing_rate"] == (1 << 64) - 1, i
    else:
        assert i["cc"] in ("cubic", "reno", "bbr"), i


STATE_SERVER = r"""
import socket, sys, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2])))
s.listen(4)
# 1: we close first (after one byte); the client closes after EOF.
c, _ = s.accept()
c.settimeout(20)
c.recv(1)
c.shutdown(socket.SHUT_WR)
while c.recv(4096):
    pass
c.close()
# 2: the client closes first; we close 0.6 s after its FIN.
c, _ = s.accept()
c.settimeout(20)
while c.recv(4096):
    pass
time.sleep(0.6)
c.close()
"""

STATE_CLIENT = r"""
import json, socket, sys, time
def st(s):
    return s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 8)[0]
out = {}
s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=20)
out["est"] = st(s)
s.sendall(b"a")
out["eof"] = s.recv(10)
out["close_wait"] = st(s)
s.shutdown(socket.SHUT_WR)
out["after_shut"] = st(s)
time.sleep(0.2)
out["acked"] = st(s)
s.close()
s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=20)
s.shutdown(socket.SHUT_WR)
out["fin_sent"] = st(s)
time.sleep(0.2)
out["fin_acked"] = st(s)
time.sleep(1.0)
out["peer_closed"] = st(s)
out["eof2"] = s.recv(10)
s.close()
out["eof"] = out["eof"].decode()
out["eof2"] = out["eof2"].decode()
print(json.dumps(out))
"""


@pytest.mark.parametrize("side", ["linux", "slipstream"])
def test_tcp_info_states(bed, side):
    """tcpi_state through both ways of closing, while the fd is open: the
    engine's own state (published by the service at every change) as
    Linux names it; TIME_WAIT is no longer the socket's (TCP_CLOSE)."""
    tb, svc = bed
    srv = tb.ns_popen(tb.peer(1).ns, ["/usr/bin/python3", "-c", STATE_SERVER, tb.peer(1).ip,
                                       str(PORT + 1)],
                      stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        time.sleep(0.5)
        argv = ["/usr/bin/python3", "-c", STATE_CLIENT, tb.peer(1).ip, str(PORT + 1)]
        if side == "slipstream":
            r = subprocess.run([str(CLI), "run", "--sock", svc.ctl_path, "--strict", "--"] + argv,
                               capture_output=True, text=True, timeout=60)
        else:
            r = tb.ns_exec(tb.peer(2).ns, argv, timeout=60)
        assert r.returncode == 0, (side, r.stdout, r.stderr)
        i = json.loads(r.stdout.strip().splitlines()[-1])
    finally:
        srv.kill()
        srv.wait()
    TCP_ESTABLISHED, TCP_FIN_WAIT1, TCP_FIN_WAIT2, TCP_CLOSE = 1, 4, 5, 7
    TCP_CLOSE_WAIT, TCP_LAST_ACK = 8, 9
    assert i["est"] == TCP_ESTABLISHED, i
    assert i["eof"] == "", i
    assert i["close_wait"] == TCP_CLOSE_WAIT, i
    # Our FIN's ACK may be back already (a round trip on the bed).
    assert i["after_shut"] in (TCP_LAST_ACK, TCP_CLOSE), i
    assert i["acked"] == TCP_CLOSE, i
    assert i["fin_sent"] in (TCP_FIN_WAIT1, TCP_FIN_WAIT2), i
    assert i["fin_acked"] == TCP_FIN_WAIT2, i
    # The peer's FIN: TIME_WAIT belongs to no socket; this one is closed.
    assert i["peer_closed"] == TCP_CLOSE, i
    assert i["eof2"] == "", i
