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
    if side == "slipstream":
        # The service's default ("auto"): cubic for a flow that lost
        # nothing, not paced: ~0 as Linux reports an unpaced socket.
        assert i["cc"] == "cubic", i
        assert i["pacing_rate"] == (1 << 64) - 1, i
    else:
        assert i["cc"] in ("cubic", "reno", "bbr"), i
