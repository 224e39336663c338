"""TCP segmentation offload on a port that has it: DPDK's tap PMD.

The veth ports of the other tests (AF_XDP, AF_PACKET) and memif have no
TSO.  The tap PMD has it (it cuts TSO segments in software, with
librte_gso, and computes their checksums) and both TX checksum offloads,
so the service on a tap device takes the same path as on a NIC with TSO.
The tap device's kernel side, in the test bed's service namespace, is the
Linux peer (198.18.1.2); the service is 198.18.1.1 on the tap.

Checked, once with TSO on (the default) and once with `--tso off`:
  * the port as `stats` reports it: net_tap, TX checksum offload on, TSO
    on exactly when asked for, and the start-up log says which;
  * 16 MiB from a program under `slipstream run` to a Linux receiver on
    the kernel side: SHA-256 at both ends and against the generator;
  * with TSO: segments of more than one MSS went out (tx_tso_frames), the
    port cut them (the wire count tx_tcp_segments is above the frame
    count tx_packets), none fell back for want of a frame; without: no
    TSO segment at all;
  * the kernel saw no bad checksum (TcpInCsumErrors, IpInHdrErrors) and
    no segment past its MTU arrived (the tap's rx_length_errors), and the
    service dropped nothing (its drop counters).
Every process is bounded by a timeout.
"""

import json
import time
from pathlib import Path

import pytest

from harness import PYTHON, ServiceError, counters_delta, service_start
from harness import testbed as tbmod
from test_loopback import Proc, accel, procs, wait_stream  # noqa: F401

PEER_PY = Path(__file__).resolve().parent / "tcp_peer.py"
MiB = 1 << 20
SVC_IP, KERNEL_IP = "198.18.1.1", "198.18.1.2"
DROPS_MUST_BE_ZERO = ("drop_tx_full", "drop_no_mbuf", "drop_tcp_seg_too_big", "drop_rx_chained",
                      "tx_tso_no_frame", "tcp_lost_rexmits")


def kernel_counters(tb, tap):
    res = tb.ns_exec(tb.svc_ns, ["nstat", "-az", "--json"])
    doc = json.loads(res.stdout or "{}")
    snmp = doc.get("kernel", doc)
    path = "/sys/class/net/%s/statistics/rx_length_errors" % tap
    res = tb.ns_exec(tb.svc_ns, ["cat", path])
    snmp["tap_rx_length_errors"] = int(res.stdout.strip() or 0)
    return snmp


@pytest.fixture(scope="module")
def bed(prefix_new_fn):
    tb = tbmod.Testbed(prefix_new_fn(), peers=1)
    tb.up()
    try:
        yield tb
    finally:
        tb.down()


def start_on_tap(tb, tso):
    """The service on a tap device in the service namespace, the kernel
    side addressed and its offloads off (as every kernel side facing the
    service)."""
    tap = tb.prefix + "-tap"
    eal = ["--no-huge", "--no-pci", "--no-shconf", "-l", "0", "-m", "256",
           "--vdev=net_tap0,iface=%s" % tap]
    svc = service_start(tb, ["--time-wait-ms", "1000", "--tso", tso], eal=eal,
                        cidr="%s/24" % SVC_IP, gateway=KERNEL_IP)
    tbmod.run(["ip", "-n", tb.svc_ns, "addr", "add", "%s/24" % KERNEL_IP, "dev", tap])
    tbmod.run(["ip", "-n", tb.svc_ns, "link", "set", tap, "up"])
    tb.ns_exec(tb.svc_ns, ["ethtool", "-K", tap, "tx", "off", "tso", "off", "gso", "off"])
    return svc, tap


@pytest.mark.parametrize("tso", ["on", "off"])
def test_tso_bulk_to_linux(bed, procs, tso):
    tb = bed
    svc, tap = start_on_tap(tb, tso)
    try:
        port = svc.query("stats")["service"]["port"]
        assert port["driver"] == "net_tap" and port["tx_csum_offload"] is True, port
        assert port["tso"] is (tso == "on"), port
        log = svc.stdout_path.read_text() + svc.stderr_path.read_text()
        assert ("TSO offloaded" if tso == "on" else "TSO software (offload unused)") in log, log

        nbytes, seed, lport = 16 * MiB, 5, 7300
        k0, before = kernel_counters(tb, tap), svc.stats()
        server = Proc(["ip", "netns", "exec", tb.svc_ns, PYTHON, PEER_PY, "recv",
                       "--listen", lport, "--timeout", 60], None)
        procs.append(server)
        server.wait_stderr('"listening"', 15)
        client = accel(procs, svc, [PYTHON, PEER_PY, "send", "--dst",
                                    "%s:%d" % (KERNEL_IP, lport), "--bytes", nbytes,
                                    "--seed", seed, "--timeout", 60])
        _, doc_s = wait_stream(client, server, nbytes, seed)

        time.sleep(0.3)
        d = counters_delta(before, svc.stats())
        k1 = kernel_counters(tb, tap)
        moved = {k: d[k] for k in DROPS_MUST_BE_ZERO if d.get(k)}
        assert not moved, (moved, d)
        for k in ("TcpInCsumErrors", "IpInHdrErrors", "tap_rx_length_errors"):
            assert k1.get(k, 0) == k0.get(k, 0), (k, k0.get(k), k1.get(k))
        assert d.get("tx_tcp_payload_bytes", 0) >= nbytes, d
        if tso == "on":
            assert d.get("tx_tso_frames", 0) > 0, d
            # Cut by the port: more segments on the wire than frames sent.
            assert d.get("tx_tcp_segments", 0) > d.get("tx_packets", 0), d
            assert d.get("tx_tcp_segments", 0) >= nbytes // 1448, d
        else:
            assert d.get("tx_tso_frames", 0) == 0, d
            assert d.get("tx_tcp_segments", 0) <= d.get("tx_packets", 0), d
        print("\ntso %s: 16 MiB in %.2f s, %d frames for %d segments (%d TSO)"
              % (tso, doc_s.get("seconds", 0), d.get("tx_packets", 0),
                 d.get("tx_tcp_segments", 0), d.get("tx_tso_frames", 0)))
    finally:
        try:
            rc, _ = svc.stop()
        except ServiceError as e:
            rc = str(e)
        logs = svc.logs()
        svc.kill()
        svc.cleanup()
    assert rc == 0, logs
